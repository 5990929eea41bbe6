#!/usr/bin/env python3
"""Export small LayerNorm/RMSNorm + Linear/MLP PyTorch models to torch-mlir IR.

This produces *real* torch-mlir output (not hand-written approximations) for the
importer tests in test/Conversion/TorchToTE/.  Every model is built with a fixed seed and tiny
sizes (hidden 32, FFN 64, gated FFN 64 i.e. a fused FC1 of 2*64, tokens x[4,32] or
x[2,4,32]), so weights frozen into the IR as `dense_resource` blobs keep every file
well under 100 KB (the default set: 79 files, ~2.7 MB).

Usage:
    python3 test/Conversion/TorchToTE/export_torch.py --out test/Conversion/TorchToTE/Inputs            # default variants
    python3 test/Conversion/TorchToTE/export_torch.py --out test/Conversion/TorchToTE/Inputs --only ln_linear
    python3 test/Conversion/TorchToTE/export_torch.py --out /tmp/all --variants all       # all six variants
    python3 test/Conversion/TorchToTE/export_torch.py --list                              # model names

Requirements (PyPI, CPU is enough):
    pip install torch==2.14.1 torch-mlir==20261001 numpy ml_dtypes transformers==5.24.0
(`ml_dtypes` is needed by torch-mlir to freeze bf16 weights.)
(`transformers` is optional: without it gpt2_mlp / llama_mlp are skipped with a note.)

Files written, per model NAME (see VARIANTS below; the DEFAULT set -- what is checked
in -- is raw, torch, torch_legal_ops, raw_hl; `--variants` picks others, e.g.
`--variants torch_hl,torch_hl_legal_ops` or `--variants all`):
    NAME.raw.mlir                 fx.export_and_import(m, x)                       [output_type="raw"]
    NAME.torch.mlir               fx.export_and_import(m, x, output_type="torch")
    NAME.torch_legal_ops.mlir     ... output_type="torch", backend_legal_ops=LEGAL_OPS
    NAME.raw_hl.mlir              like .raw, but decomposition_table=HL_DECOMPOSITIONS
    NAME.torch_hl.mlir            like .torch, with HL_DECOMPOSITIONS
    NAME.torch_hl_legal_ops.mlir  like .torch_legal_ops, with HL_DECOMPOSITIONS
and for the aot_autograd models (parameters are function arguments, no weights):
    NAME.aot_fw.raw.mlir / NAME.aot_bw.raw.mlir   fx.stateless_fx_import(graph) of the
                                                  forward / backward graph aot_autograd hands
                                                  to a torch.compile backend.
A variant whose IR is byte-identical to an earlier variant of the same model (typically
NAME.torch_legal_ops == NAME.torch, since the default table has already decomposed the
legal ops before import) is not written; the summary names it.  --keep-duplicates
writes it anyway.

Why the "_hl" variants: since torch-mlir ~2026-09 (the 20261001 wheel),
`export_and_import`'s default decomposition table is PyTorch's
core_aten_decompositions() (minus a few exclusions, e.g. rms_norm), so aten.layer_norm,
aten.linear and aten.silu are already decomposed *in PyTorch* before import
(var_mean / permute+mm / sigmoid*x).  Older torch-mlir (<= 2026-08, e.g. snapshot
0029fc2e102c) used a short list (HL_DECOMPOSITIONS below) that leaves those high-level
ops intact, which is the form described in shared/reference/torch-mlir.md section 6.1.
Both forms are real torch-mlir output; an importer will meet both.

Dynamic-shape models pass `dynamic_shapes=` (torch.export.Dim) and
`import_symbolic_shape_expressions=True` (as torch-mlir's own e2e FX config does), so
the IR carries torch.symbolic_int / torch.bind_symbolic_shape.

Every file starts with a few `//` comment lines naming the model and the exact call;
the rest is exactly what torch-mlir printed (`str(module)`), resources included.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from dataclasses import dataclass, field
from typing import Callable, Optional

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# Sizes are kept tiny so the checked-in IR stays small (every file < 100 KB).  Within a
# model every dimension is distinct (batch 2, seq 4 or tokens 4, flattened tokens 8,
# hidden 32, LN_OUT / FFN / FFN_GATED 64, fused gated fc1 128), so a swapped operand or
# a transposed weight shows up as a shape error.
HIDDEN = 32
FFN = 64
FFN_GATED = 64  # gated MLPs: gate/up each [64,32], or one fused fc1 of 2*64
LN_OUT = 64  # out_features of the LayerNorm+Linear models
TOKENS = 4
BATCH, SEQ = 2, 4
SEED = 0

LEGAL_OPS = ["aten.layer_norm", "aten.linear", "aten.rms_norm", "aten.silu"]

# torch-mlir's DEFAULT_DECOMPOSITIONS as of llvm/torch-mlir 0029fc2e102c (2026-08-20),
# python/torch_mlir/extras/fx_decomp_util.py, used there as the whole table.
# Names are "op" or "op.overload"; ones missing in this PyTorch are skipped.
_HL_DECOMPOSITION_NAMES = [
    "embedding_dense_backward", "native_layer_norm_backward", "slice_backward",
    "select_backward", "norm.ScalarOpt_dim", "native_group_norm",
    "upsample_bilinear2d.vec", "native_layer_norm", "masked_fill.Tensor",
    "masked_fill.Scalar", "t", "addmm", "_native_batch_norm_legit_functional",
    "_native_batch_norm_legit_no_training", "_native_batch_norm_legit",
    "_native_batch_norm_legit.no_stats", "squeeze.dims", "soft_margin_loss", "im2col",
    "_euclidean_dist", "index_copy", "index_copy_", "grid_sampler_2d",
    "log_sigmoid_forward", "unsafe_split.Tensor", "binary_cross_entropy", "dot",
    "_adaptive_avg_pool2d", "_prelu_kernel", "full", "_log_softmax", "nll_loss_forward",
    "nll_loss_backward", "_to_copy", "_log_softmax_backward_data",
    "lift_fresh_copy.default", "_unsafe_index.Tensor", "linspace.default",
    "nan_to_num.default", "unbind", "diag", "xlogy",
    "_scaled_dot_product_flash_attention_for_cpu", "scaled_dot_product_attention",
]


def hl_decomposition_table():
    from torch._decomp import get_decompositions

    ops = []
    for name in _HL_DECOMPOSITION_NAMES:
        base, _, overload = name.partition(".")
        packet = getattr(torch.ops.aten, base, None)
        if packet is None:
            continue
        if overload:
            op = getattr(packet, overload, None)
            if op is None:
                continue
            ops.append(op)
        else:
            ops.append(packet)
    return get_decompositions(ops)


# --------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------


def _perturb_constant_params(model: nn.Module, gen: torch.Generator) -> None:
    """Make every parameter that PyTorch initialised to a constant (LayerNorm weight=1,
    bias=0, GPT-2 Conv1D bias=0, RMSNorm weight=1) non-uniform, so a test can tell
    weight from bias and catch swapped operands.  Deterministic via `gen`."""
    with torch.no_grad():
        for p in model.parameters():
            flat = p.detach().reshape(-1).float()
            if flat.numel() > 0 and bool((flat == flat[0]).all()):
                noise = torch.randn(p.shape, generator=gen, dtype=torch.float32) * 0.1
                p.add_(noise.to(p.dtype))


class LnLinear(nn.Module):
    def __init__(self, hidden=HIDDEN, out=LN_OUT, bias=True, return_norm=False):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=1e-5)
        self.fc = nn.Linear(hidden, out, bias=bias)
        self.return_norm = return_norm

    def forward(self, x):
        h = self.ln(x)
        y = self.fc(h)
        return (y, h) if self.return_norm else y


class LnLinearZeroCenteredGamma(nn.Module):
    """TransformerEngine `zero_centered_gamma=True`: the stored gamma is (weight - 1)."""

    def __init__(self, hidden=HIDDEN, out=LN_OUT):
        super().__init__()
        self.hidden = hidden
        self.gamma = nn.Parameter(torch.randn(hidden) * 0.1)
        self.beta = nn.Parameter(torch.randn(hidden) * 0.1)
        self.fc = nn.Linear(hidden, out)

    def forward(self, x):
        h = F.layer_norm(x, (self.hidden,), weight=1 + self.gamma, bias=self.beta, eps=1e-5)
        return self.fc(h)


def quick_gelu(x):
    return x * torch.sigmoid(1.702 * x)


def squared_relu(x):
    return torch.relu(x) ** 2


ACTIVATIONS: dict[str, Callable] = {
    "gelu": lambda x: F.gelu(x, approximate="none"),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
    "quick_gelu": quick_gelu,
    "srelu": squared_relu,
}


class LnMlp(nn.Module):
    """LayerNorm -> fc1 -> act -> fc2 (TE LayerNormMLP, non-gated)."""

    def __init__(self, act: str, hidden=HIDDEN, ffn=FFN, residual=False):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=1e-5)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.act = ACTIVATIONS[act]
        self.residual = residual

    def forward(self, x):
        y = self.fc2(self.act(self.fc1(self.ln(x))))
        return x + y if self.residual else y


class LnMlpGatedTwoLinears(nn.Module):
    """LayerNorm -> act(gate(h)) * up(h) -> fc2, gate and up as separate Linears."""

    def __init__(self, act: str, hidden=HIDDEN, ffn=FFN_GATED):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=1e-5)
        self.gate = nn.Linear(hidden, ffn)
        self.up = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.act = ACTIVATIONS[act]

    def forward(self, x):
        h = self.ln(x)
        return self.fc2(self.act(self.gate(h)) * self.up(h))


class LnMlpGatedChunk(nn.Module):
    """TE-style gated MLP: one fc1 of width 2*ffn, `a, b = chunk(2, -1)`, act(a) * b."""

    def __init__(self, act: str, hidden=HIDDEN, ffn=FFN_GATED):
        super().__init__()
        self.ln = nn.LayerNorm(hidden, eps=1e-5)
        self.fc1 = nn.Linear(hidden, 2 * ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.act = ACTIVATIONS[act]

    def forward(self, x):
        a, b = self.fc1(self.ln(x)).chunk(2, dim=-1)
        return self.fc2(self.act(a) * b)


class RmsNormSwiGLU(nn.Module):
    """LLaMA-style: torch.nn.RMSNorm + w2(silu(w1 h) * w3 h), no biases."""

    def __init__(self, hidden=HIDDEN, ffn=FFN_GATED):
        super().__init__()
        self.norm = nn.RMSNorm(hidden, eps=1e-6)
        self.w1 = nn.Linear(hidden, ffn, bias=False)  # gate
        self.w3 = nn.Linear(hidden, ffn, bias=False)  # up
        self.w2 = nn.Linear(ffn, hidden, bias=False)  # down

    def forward(self, x):
        h = self.norm(x)
        return self.w2(F.silu(self.w1(h)) * self.w3(h))


class NormThenMlp(nn.Module):
    def __init__(self, norm: nn.Module, mlp: nn.Module):
        super().__init__()
        self.norm = norm
        self.mlp = mlp

    def forward(self, x):
        return self.mlp(self.norm(x))


def build_gpt2_mlp():
    from transformers import GPT2Config
    from transformers.models.gpt2.modeling_gpt2 import GPT2MLP

    cfg = GPT2Config(n_embd=HIDDEN, n_inner=FFN, n_layer=1, n_head=4,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return NormThenMlp(nn.LayerNorm(HIDDEN, eps=cfg.layer_norm_epsilon), GPT2MLP(FFN, cfg))


def build_llama_mlp():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaMLP, LlamaRMSNorm

    cfg = LlamaConfig(hidden_size=HIDDEN, intermediate_size=FFN_GATED, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=4, hidden_act="silu",
                      mlp_bias=False, rms_norm_eps=1e-6)
    return NormThenMlp(LlamaRMSNorm(HIDDEN, eps=cfg.rms_norm_eps), LlamaMLP(cfg))


@dataclass
class Spec:
    name: str
    build: Callable[[], nn.Module]
    shape: tuple
    doc: str
    dtype: torch.dtype = torch.float32
    # {dim index: (Dim name, max)} for the single input "x"; None = static
    dynamic: Optional[dict] = None
    aot: bool = False  # export aot_autograd fw/bw via stateless_fx_import instead
    needs: Optional[str] = None  # optional python package


X2 = (TOKENS, HIDDEN)      # [tokens, hidden]
X3 = (BATCH, SEQ, HIDDEN)  # [batch, seq, hidden]
H, O, FF, FG = HIDDEN, LN_OUT, FFN, FFN_GATED  # for the doc strings

SPECS: list[Spec] = [
    Spec("linear", lambda: nn.Linear(HIDDEN, LN_OUT), X2,
         f"lone nn.Linear({H},{O}) with bias, x[{TOKENS},{H}]"),
    Spec("ln_linear", lambda: LnLinear(), X3,
         f"LayerNorm({H}) -> Linear({H},{O},bias), x[{BATCH},{SEQ},{H}]"),
    Spec("ln_linear_2d", lambda: LnLinear(), X2,
         f"LayerNorm({H}) -> Linear({H},{O},bias), x[{TOKENS},{H}]"),
    Spec("ln_linear_nobias", lambda: LnLinear(bias=False), X3,
         f"LayerNorm({H}) -> Linear({H},{O},bias=False)"),
    Spec("ln_linear_retnorm", lambda: LnLinear(return_norm=True), X3,
         "LayerNorm -> Linear, returns (linear_out, ln_out)"),
    Spec("ln_linear_bf16", lambda: LnLinear(), X3,
         "LayerNorm -> Linear, bf16 params and input", dtype=torch.bfloat16),
    Spec("ln_linear_zc_gamma", lambda: LnLinearZeroCenteredGamma(), X3,
         f"zero-centered gamma: F.layer_norm(x,({H},),weight=1+gamma,bias=beta) -> Linear"),
    *[Spec(f"ln_mlp_{act}", (lambda a=act: LnMlp(a)), X3,
           f"LayerNorm -> fc1({H},{FF}) -> {act} -> fc2({FF},{H}), biases")
      for act in ACTIVATIONS],
    Spec("ln_mlp_swiglu", lambda: LnMlpGatedTwoLinears("silu"), X3,
         f"LayerNorm -> fc2(silu(gate(h)) * up(h)), gate/up separate Linear({H},{FG}), "
         f"fc2({FG},{H})"),
    Spec("ln_mlp_swiglu_chunk", lambda: LnMlpGatedChunk("silu"), X3,
         f"LayerNorm -> fc1({H},{2 * FG}) -> a,b=chunk(2,-1) -> fc2(silu(a)*b), fc2({FG},{H})"),
    Spec("ln_mlp_geglu", lambda: LnMlpGatedChunk("gelu_tanh"), X3,
         f"LayerNorm -> fc1({H},{2 * FG}) -> a,b=chunk(2,-1) -> fc2(gelu_tanh(a)*b) (TE geglu)"),
    Spec("rmsnorm_swiglu", lambda: RmsNormSwiGLU(), X3,
         f"nn.RMSNorm({H},eps=1e-6) -> w2(silu(w1 h) * w3 h), no bias, ffn {FG}"),
    Spec("gpt2_mlp", build_gpt2_mlp, X3,
         f"nn.LayerNorm({H}) -> transformers GPT2MLP (Conv1D c_fc/c_proj, gelu_new), ffn {FF}",
         needs="transformers"),
    Spec("llama_mlp", build_llama_mlp, X3,
         f"transformers LlamaRMSNorm({H}) -> LlamaMLP(intermediate {FG}, silu, no bias)",
         needs="transformers"),
    Spec("residual_ln_mlp", lambda: LnMlp("gelu_tanh", residual=True), X3,
         "x + fc2(gelu_tanh(fc1(LayerNorm(x))))"),
    # dynamic shapes
    Spec("ln_linear_dynbatch", lambda: LnLinear(), X3,
         "ln_linear with dynamic batch: Dim('batch', max=1024) on x dim 0",
         dynamic={0: ("batch", 1024)}),
    Spec("ln_linear_2d_dyntokens", lambda: LnLinear(), X2,
         "ln_linear_2d with dynamic tokens: Dim('tokens', max=4096) on x dim 0",
         dynamic={0: ("tokens", 4096)}),
    Spec("ln_mlp_gelu_dynbatch", lambda: LnMlp("gelu"), X3,
         "ln_mlp_gelu with dynamic batch: Dim('batch', max=1024) on x dim 0",
         dynamic={0: ("batch", 1024)}),
    Spec("ln_mlp_gelu_dynbatchseq", lambda: LnMlp("gelu"), X3,
         "ln_mlp_gelu with dynamic batch and seq: Dim('batch',max=1024), Dim('seq',max=2048)",
         dynamic={0: ("batch", 1024), 1: ("seq", 2048)}),
    # aot_autograd forward/backward (stateless import; parameters are arguments)
    Spec("ln_linear_aot", lambda: LnLinear(), X3,
         "ln_linear forward/backward graphs from aot_autograd", aot=True),
    Spec("ln_mlp_gelu_tanh_aot", lambda: LnMlp("gelu_tanh"), X3,
         "ln_mlp_gelu_tanh forward/backward graphs from aot_autograd", aot=True),
    Spec("rmsnorm_swiglu_aot", lambda: RmsNormSwiGLU(), X3,
         "rmsnorm_swiglu forward/backward graphs from aot_autograd", aot=True),
]

# (suffix, output_type, use backend_legal_ops, use HL decomposition table)
VARIANTS = [
    ("raw", "raw", False, False),
    ("torch", "torch", False, False),
    ("torch_legal_ops", "torch", True, False),
    ("raw_hl", "raw", False, True),
    ("torch_hl", "torch", False, True),
    ("torch_hl_legal_ops", "torch", True, True),
]
# What is checked in under test/Conversion/TorchToTE/Inputs.  torch_legal_ops is only written where it
# differs from torch (in practice: models with rms_norm), see the de-duplication in main().
DEFAULT_VARIANTS = ["raw", "torch", "torch_legal_ops", "raw_hl"]


# --------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------


def build(spec: Spec):
    torch.manual_seed(SEED)
    model = spec.build()
    _perturb_constant_params(model, torch.Generator().manual_seed(SEED + 1))
    model = model.to(spec.dtype).eval()
    x = torch.randn(spec.shape, generator=torch.Generator().manual_seed(SEED + 2)).to(spec.dtype)
    return model, x


def _dyn_shapes(spec: Spec):
    if not spec.dynamic:
        return None
    from torch.export import Dim

    return {"x": {d: Dim(n, max=mx) for d, (n, mx) in spec.dynamic.items()}}


def _shape_str(spec: Spec) -> str:
    dims = [("?" if spec.dynamic and i in spec.dynamic else str(s)) for i, s in enumerate(spec.shape)]
    return "x[" + ",".join(dims) + "] " + str(spec.dtype).replace("torch.", "")


def export_variant(spec: Spec, variant, func_name: str) -> tuple[str, str]:
    """Returns (mlir text, one-line description of the call)."""
    from torch_mlir import fx

    suffix, output_type, legal, hl = variant
    model, x = build(spec)
    kwargs = dict(output_type=output_type, func_name=func_name)
    call = [f'output_type="{output_type}"', f'func_name="{func_name}"']
    if legal:
        kwargs["backend_legal_ops"] = list(LEGAL_OPS)
        call.append(f"backend_legal_ops={LEGAL_OPS}")
    if hl:
        kwargs["decomposition_table"] = hl_decomposition_table()
        call.append("decomposition_table=HL_DECOMPOSITIONS")
    if spec.dynamic:
        kwargs["dynamic_shapes"] = _dyn_shapes(spec)
        kwargs["import_symbolic_shape_expressions"] = True
        dims = ", ".join(f"{d}: Dim('{n}', max={mx})" for d, (n, mx) in spec.dynamic.items())
        call.append("dynamic_shapes={'x': {" + dims + "}}")
        call.append("import_symbolic_shape_expressions=True")
    with torch.no_grad():
        module = fx.export_and_import(model, x, **kwargs)
    return str(module), "fx.export_and_import(model, x, " + ", ".join(call) + ")"


def capture_aot(spec: Spec):
    """Run the model once through torch.compile with an aot_autograd backend that records
    the forward and backward FX graphs it is handed (what a torch-mlir dynamo backend
    would pass to stateless_fx_import)."""
    import torch._dynamo
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    graphs = {}

    def fw_compiler(gm, example_inputs):
        graphs["aot_fw"] = gm
        return make_boxed_func(gm.forward)

    def bw_compiler(gm, example_inputs):
        graphs["aot_bw"] = gm
        return make_boxed_func(gm.forward)

    model, x = build(spec)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=aot_autograd(fw_compiler=fw_compiler,
                                                         bw_compiler=bw_compiler),
                             dynamic=False, fullgraph=True)
    x = x.clone().requires_grad_(True)
    out = compiled(x)
    outs = out if isinstance(out, tuple) else (out,)
    sum(o.float().sum() for o in outs).backward()
    torch._dynamo.reset()
    return graphs


def export_aot(spec: Spec, func_name: str):
    from torch_mlir import fx

    results = []
    graphs = capture_aot(spec)
    for which in ("aot_fw", "aot_bw"):
        gm = graphs[which]
        module = fx.stateless_fx_import(gm, output_type="raw", model_name=func_name)
        call = (f'fx.stateless_fx_import(<aot_autograd {which[4:]} graph>, '
                f'output_type="raw", model_name="{func_name}")')
        results.append((f"{which}.raw", str(module), call))
    return results


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for pkg in ("torch", "torch-mlir", "transformers"):
        try:
            out.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            pass
    return ", ".join(out)


def header(spec: Spec, call: str) -> str:
    return (
        f"// Generated by test/Conversion/TorchToTE/export_torch.py -- do not edit; regenerate instead.\n"
        f"// model {spec.name}: {spec.doc}\n"
        f"// input: {_shape_str(spec)}; seed {SEED}\n"
        f"// {call}\n"
        f"// {versions()}\n"
    )


_OP_RE = re.compile(r"= (torch\.(?:aten|prim|prims)\.[A-Za-z0-9_.]+)|torch\.operator \"([^\"]+)\"")


def op_summary(text: str) -> str:
    ops = []
    for m in _OP_RE.finditer(text):
        op = m.group(1) or ("operator:" + m.group(2))
        op = op.replace("torch.aten.", "").replace("torch.", "")
        if op not in ops and not op.startswith("prim.ListConstruct"):
            ops.append(op)
    return " ".join(ops)


def check_parses(path: str) -> None:
    """Re-parse a written file with torch-mlir's own MLIR bindings (and verify it)."""
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_d

    with ir.Context() as ctx:
        torch_d.register_dialect(ctx)
        with open(path) as f:
            ir.Module.parse(f.read()).operation.verify()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="test/Conversion/TorchToTE/Inputs", help="output directory")
    ap.add_argument("--only", action="append", default=[],
                    help="export only this model (repeatable; also accepts a regex)")
    ap.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                    help="comma-separated subset of: " + ",".join(v[0] for v in VARIANTS)
                         + ', or "all" (default: %(default)s; the aot_autograd models '
                         "always give aot_fw.raw and aot_bw.raw)")
    ap.add_argument("--func-name", default="main",
                    help='function name in the module; "{name}" means the model name')
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    ap.add_argument("--keep-duplicates", action="store_true",
                    help="also write a variant whose IR is identical to an earlier variant "
                         "of the same model (by default it is skipped and reported)")
    ap.add_argument("--max-kb", type=int, default=100,
                    help="warn when a file is larger than this (KB)")
    ap.add_argument("--hf", action="store_true",
                    help="export the Hugging Face sub-blocks of test/Integration/hf/hf_blocks.py instead "
                         "(x and every parameter as function arguments; forms raw, torch, "
                         "raw_hl; --only filters case names such as llama_mlp_bf16)")
    args = ap.parse_args(argv)

    if args.hf:
        return export_hf(args)

    if args.list:
        for s in SPECS:
            print(f"{s.name:28s} {s.doc}")
        return 0

    torch.set_num_threads(1)
    names = [n.strip() for n in args.variants.split(",") if n.strip()]
    if "all" in names:
        names = [v[0] for v in VARIANTS]
    unknown = [n for n in names if n not in {v[0] for v in VARIANTS}]
    if unknown:
        print(f"unknown variant(s) {unknown}; choose from {[v[0] for v in VARIANTS]}",
              file=sys.stderr)
        return 2
    wanted = [v for v in VARIANTS if v[0] in names]
    specs = SPECS
    if args.only:
        specs = [s for s in SPECS if any(s.name == o or re.fullmatch(o, s.name) for o in args.only)]
        if not specs:
            print(f"no model matches {args.only}; see --list", file=sys.stderr)
            return 2
    os.makedirs(args.out, exist_ok=True)

    rows, failures, skipped, dups = [], [], [], []
    for spec in specs:
        if spec.needs:
            try:
                __import__(spec.needs)
            except ImportError:
                skipped.append(spec.name)
                print(f"note: skipping {spec.name}: python package '{spec.needs}' not installed")
                continue
        func_name = args.func_name.replace("{name}", spec.name)
        try:
            if spec.aot:
                outputs = export_aot(spec, func_name)
            else:
                outputs = []
                for v in wanted:
                    text, call = export_variant(spec, v, func_name)
                    outputs.append((v[0], text, call))
        except Exception as e:  # keep going; report at the end
            traceback.print_exc()
            failures.append((spec.name, f"{type(e).__name__}: {e}".splitlines()[0]))
            continue
        seen: dict[str, str] = {}
        for suffix, text, call in outputs:
            path = os.path.join(args.out, f"{spec.name}.{suffix}.mlir")
            if text in seen and not args.keep_duplicates:
                dups.append((f"{spec.name}.{suffix}.mlir", f"{spec.name}.{seen[text]}.mlir"))
                if os.path.exists(path):
                    os.remove(path)  # stale output of an earlier run
                continue
            seen.setdefault(text, suffix)
            with open(path, "w") as f:
                f.write(header(spec, call))
                f.write(text if text.endswith("\n") else text + "\n")
            check_parses(path)
            size = os.path.getsize(path)
            rows.append((os.path.basename(path), size, op_summary(text)))
            if size > args.max_kb * 1024:
                print(f"warning: {path} is {size // 1024} KB (> {args.max_kb} KB)")

    w = max([len(r[0]) for r in rows] + [4])
    print(f"\n{'file':{w}s} {'bytes':>8s}  ops")
    for name, size, ops in rows:
        print(f"{name:{w}s} {size:8d}  {ops}")
    total = sum(r[1] for r in rows)
    print(f"\n{len(rows)} files, {total} bytes total, in {args.out}  ({versions()})")
    for name, same in dups:
        print(f"not written: {name} (identical IR to {same}; --keep-duplicates writes it)")
    for name in skipped:
        print(f"skipped: {name} (needs an optional package)")
    for name, msg in failures:
        print(f"FAILED: {name}: {msg}")
    return 1 if failures else 0


def export_hf(args) -> int:
    """--hf: the norm + MLP / norm + linear sub-blocks of test/Integration/hf/hf_blocks.py (and its
    near-miss negatives), every form of hf_blocks.FORMS that --variants names."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "Integration", "hf"))
    import hf_blocks as hb

    cases = [hb.Case(a, b, d) for a in hb.ARCHS for b in ("mlp", "linear") for d in hb.DTYPES]
    cases += [hb.Case(a, "mlp", d, dynamic=True) for a in ("llama", "gpt2") for d in hb.DTYPES]
    cases += [hb.Case(n, "neg", d) for n in hb.NEGATIVES for d in hb.DTYPES]
    if args.list:
        for c in cases:
            print(c.name)
        return 0
    if args.only:
        cases = [c for c in cases if any(c.name == o or re.fullmatch(o, c.name) for o in args.only)]
    forms = [f for f in args.variants.split(",") if f in hb.FORMS] or list(hb.FORMS)
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    failures = 0
    for c in cases:
        model = hb.build_block(c.arch, c.block, c.dtype)
        names, xs = hb.make_inputs(model, c.dtype)
        for form in forms:
            try:
                text, call = hb.export_block(model, xs, form, c.dynamic)
            except Exception as e:  # keep going
                failures += 1
                print(f"FAILED: {c.name}.{form}: {type(e).__name__}: {e}".splitlines()[0])
                continue
            path = os.path.join(args.out, f"{c.name}.{form}.mlir")
            with open(path, "w") as f:
                f.write(hb.header(f"{c.name} ({form})", f"{c.arch} {c.block}", names, xs, call) + text)
            print(f"{os.path.basename(path):40s} {os.path.getsize(path):8d}  {op_summary(text)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
