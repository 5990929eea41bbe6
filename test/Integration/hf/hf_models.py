#!/usr/bin/env python3
"""Real Hugging Face exports through te-mlir, per architecture (issue #19).

For every (architecture, block, dtype, form) of test/Integration/hf/hf_blocks.py:
  1. export the block with torch-mlir (x and every parameter are function arguments);
  2. `te-opt --te-import-torch` (the default, partial import): which te ops it raised
     (op, normalization, activation) and, for the ops it left, its remarks' reasons;
     `te-opt --te-import-torch=strict=true` decides the status: `full` (every op raised),
     `partial` (te ops raised, other ops left), `none` (nothing raised);
  3. full blocks (raw form always, the torch and raw_hl forms when they raised):
     `te-compile --train`, `te-run --step main` on seeded inputs and output gradients,
     forward outputs and EVERY parameter gradient compared with PyTorch autograd:
       f32   strict: |a - e| <= 1e-5 + 1e-5 |e| (and TE's f32 tolerances);
       bf16  TransformerEngine's bf16 tolerances (make_goldens.TOLS, test_numerics.py
             test_layernorm_{linear,mlp}_accuracy), against autograd of the bf16 block
             with F.layer_norm / F.rms_norm computed in fp32 and cast back to bf16
             (TE's TorchLayerNorm reference; make_goldens' norm_f32 goldens); every
             other op (and the hand-written HF norms, which upcast themselves) as the
             model's code runs it in bf16 on the CPU;
     (MLP blocks) `te-compile --train --checkpoint`: the recomputed backward must be
     bit-identical to the stored-activation one;
  4. partial blocks (every form): `te-compile --partition --train`; each library entry
     (`te-run --list`) run by `te-run --step NAME` against autograd of its PyTorch region
     (REGIONS: e.g. Gemma 2/3's pre_feedforward_layernorm + mlp; te.linear entries: the
     block's nn.Linear calls in order, F.linear on their captured inputs) under the same
     tolerances; MLP regions also under `--checkpoint` (bit-identical); the residual
     module must parse (`te-opt`) and pass utils/check_residual.py.
Negative blocks (near misses, hf_blocks.NEGATIVES, NEG_KIND) must be refused by
strict=true, and the default import must raise no te.layernorm_mlp (norm near misses: no
te.layernorm_linear either; activation near misses: the activation's torch ops stay).
The whole decoder layers of test/Conversion/TorchToTE/Inputs/layers (DECODER_LAYERS) are imported and
compiled with --partition; their residuals must verify.

Usage:
    test/Integration/hf/hf_models.py --json /tmp/hf.json --write-docs docs/models.md   # the full table
    test/Integration/hf/hf_models.py --only 'llama|gpt2' --no-numerics                  # import only
    test/Integration/hf/hf_models.py --write-cases test/Integration/Inputs              # the default set
    test/Integration/hf/hf_models.py --write-negatives test/Conversion/TorchToTE/Inputs/hf_negative
    test/Integration/hf/hf_models.py --status /work/hf-status.txt --failures DIR        # failing cases
    test/Integration/hf/hf_models.py --check      # exit 1 if a negative raised or a raised block
                                    # fails its numerics (the lit test's mode)

Binaries: --bin DIR (te-opt, te-compile, te-run), default $TE_BIN or build/bin.
Requirements: torch 2.14.1, torch-mlir 20261001, transformers 5.24.0, numpy, ml_dtypes.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
UTILS = os.path.join(REPO, "utils")  # compare_npy.py, check_residual.py
for _d in (UTILS, os.path.join(REPO, "test", "Integration", "golden"), HERE):
    if _d not in sys.path:
        sys.path.insert(0, _d)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

import compare_npy  # noqa: E402
import hf_blocks as hb  # noqa: E402
import make_goldens as mg  # noqa: E402

F32_STRICT = (1e-5, 1e-5)  # atol, rtol of the strict f32 check
DYN_SIZES = (3, 1)  # batch sizes of the dynamic cases' goldens (export at 3)
DYN_ARCHS = ("llama", "gpt2")  # dynamic-batch variants of their MLP blocks

# The checked-in golden cases (test/Integration/Inputs/hf_<arch>_<block>_<dtype>/).
DEFAULT_SET = [
    ("gpt2", "mlp", "f32", False), ("gpt2", "mlp", "bf16", False),
    ("gpt2", "linear", "bf16", False),
    ("llama", "mlp", "bf16", False), ("llama", "linear", "f32", False),
    ("llama", "mlp", "f32", True),
    ("gemma", "mlp", "bf16", False), ("gemma", "linear", "f32", False),
    ("qwen3", "mlp", "f32", False), ("qwen3", "linear", "bf16", False),
    ("t5_gated", "mlp", "bf16", False),
    ("bloom", "mlp", "f32", False), ("bloom", "linear", "bf16", False),
    ("phi3", "mlp", "bf16", False), ("phi3", "linear", "f32", False),
]

# What each architecture's blocks are, for the table and config.json (the importer's
# answer, when it raises, is recorded separately).
ARCH_DOC = {
    "gpt2": ("LayerNorm", "gelu (gelu_new, Conv1D)", "c_attn (Conv1D, fused QKV)"),
    "gpt_neox": ("LayerNorm", "gelu_erf", "query_key_value (fused QKV)"),
    "opt": ("LayerNorm", "relu", "q_proj"),
    "bloom": ("LayerNorm", "gelu (BloomGelu) + residual", "query_key_value (fused QKV)"),
    "llama": ("RMSNorm", "swiglu", "q_proj"),
    "mistral": ("RMSNorm", "swiglu", "q_proj"),
    "qwen2": ("RMSNorm", "swiglu", "q_proj (bias)"),
    "qwen3": ("RMSNorm", "swiglu", "q_proj"),
    "gemma": ("RMSNorm (1+w)", "geglu (gelu_pytorch_tanh)", "q_proj"),
    "gemma2": ("RMSNorm (1+w)", "geglu + post_feedforward_layernorm", "q_proj"),
    "gemma3": ("RMSNorm (1+w)", "geglu + post_feedforward_layernorm", "q_proj"),
    "phi3": ("RMSNorm", "swiglu (fused gate_up_proj)", "qkv_proj (fused QKV)"),
    "t5_relu": ("RMSNorm (T5LayerNorm)", "relu + residual", "q"),
    "t5_gated": ("RMSNorm (T5LayerNorm)", "geglu (gelu_new) + residual", "q"),
    "falcon": ("LayerNorm", "gelu_erf (no bias)", "query_key_value (fused QKV, MQA)"),
    "starcoder2": ("LayerNorm", "gelu (gelu_pytorch_tanh)", "q_proj (bias)"),
    "cohere": ("LayerNorm (no bias, hand-written)", "swiglu", "q_proj"),
    "olmo": ("LayerNorm (no weight/bias)", "swiglu", "q_proj"),
    "olmo2": ("RMSNorm after the MLP", "swiglu + post-norm", "q_proj + q_norm after"),
    "granite": ("RMSNorm", "swiglu * residual_multiplier", "q_proj"),
    "clip": ("LayerNorm", "qgelu (quick_gelu)", "q_proj (bias)"),
    "nemotron": ("LayerNorm (1+w)", "srelu (relu2)", "q_proj"),
}


# The TransformerEngine activation each MLP block computes (config.json "activation" of
# a checked-in case; what the importer should raise it to).
ACT_TE = {"gpt2": "gelu", "gpt_neox": "gelu_erf", "opt": "relu", "bloom": "gelu",
          "llama": "swiglu", "mistral": "swiglu", "qwen2": "swiglu", "qwen3": "swiglu",
          "gemma": "geglu", "gemma2": "geglu", "gemma3": "geglu", "phi3": "swiglu", "t5_relu": "relu",
          "t5_gated": "geglu", "falcon": "gelu_erf", "starcoder2": "gelu",
          "cohere": "swiglu", "olmo": "swiglu", "olmo2": "swiglu", "granite": "swiglu",
          "clip": "qgelu", "nemotron": "srelu"}


# --------------------------------------------------------------------------------------
# Goldens
# --------------------------------------------------------------------------------------

_NORM_FUNCS = {F.layer_norm, torch.layer_norm, F.rms_norm, torch.rms_norm}
try:
    _NORM_FUNCS.add(torch.native_layer_norm)
except AttributeError:  # pragma: no cover
    pass


class Fp32Norms(TorchFunctionMode):
    """F.layer_norm / F.rms_norm of a bf16 input computed in fp32 and cast back (TE's
    TorchLayerNorm reference, make_goldens' norm_f32)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _NORM_FUNCS and args and isinstance(args[0], torch.Tensor) \
                and args[0].dtype == torch.bfloat16:
            up = [a.float() if isinstance(a, torch.Tensor) else a for a in args]
            kw = {k: (v.float() if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
            out = func(*up, **kw)
            if isinstance(out, tuple):
                return tuple(o.to(torch.bfloat16) for o in out)
            return out.to(torch.bfloat16)
        return func(*args, **kwargs)


def golden(arch: str, block: str, dtype: str, size: int | None = None):
    """(model, names, args, grads_in, outs, grads): seeded params (independent of size),
    x [size or 2, 4, 32] and grads_in from a generator seeded SEED + 3 + size."""
    model = hb.build_block(arch, block, dtype)
    shape = hb.X_SHAPE if size is None else (size,) + hb.X_SHAPE[1:]
    names, args = hb.make_inputs(model, dtype, shape,
                                 seed=hb.SEED if size is None else hb.SEED + 1000 + size)
    gen = torch.Generator().manual_seed(hb.SEED + 3 + (size or 0))
    wrapper = mg.ArgsWrapper(model).eval()
    leaves = [a.clone().requires_grad_(True) for a in args]
    if dtype == "bf16":
        with Fp32Norms():
            out = wrapper(*leaves)
    else:
        out = wrapper(*leaves)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    grads_in = [torch.randn(o.shape, generator=gen, dtype=torch.float32).to(o.dtype)
                for o in outs]
    grads = torch.autograd.grad(outs, leaves, grads_in, allow_unused=True)
    grads = [torch.zeros_like(a) if g is None else g for a, g in zip(args, grads)]
    return model, names, args, grads_in, [o.detach() for o in outs], list(grads)


def save_data(d: str, args, grads_in, outs, grads) -> list:
    files = []
    for i, a in enumerate(args):
        files.append(mg.save(os.path.join(d, "args"), f"arg{i}", a))
    for i, g in enumerate(grads_in):
        files.append(mg.save(os.path.join(d, "grads_in"), f"result{i}", g))
    for i, o in enumerate(outs):
        files.append(mg.save(os.path.join(d, "expected", "fwd"), f"result{i}", o))
    for i, g in enumerate(grads):
        files.append(mg.save(os.path.join(d, "expected", "bwd"), f"grad_arg{i}", g))
    return files


# --------------------------------------------------------------------------------------
# te-opt / te-compile / te-run
# --------------------------------------------------------------------------------------

_MOD_RE = re.compile(r"\bte\.(layernorm_mlp|layernorm_linear|linear)\b(.*)")
_DIAG_RE = re.compile(r"(?:^|:\s)(error|remark|warning):\s*(.*)")


def _first_diag(stderr: str) -> str:
    for ln in stderr.splitlines():
        m = _DIAG_RE.search(ln)
        if m and m.group(1) in ("error", "remark"):
            return f"{m.group(1)}: {m.group(2).strip()}"
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    return lines[0].strip() if lines else ""


def _subprocess(cmd, timeout):
    """subprocess.run, retried while the binary is being replaced (a rebuild in progress
    makes it briefly unreadable or busy)."""
    for attempt in range(6):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except (PermissionError, FileNotFoundError, OSError) as e:
            if attempt == 5 or isinstance(e, subprocess.TimeoutExpired):
                raise
            time.sleep(5)


_REMARK_RE = re.compile(r"remark: te-import-torch: left '([\w.]+)' as is: (.*)")


def run_import(te_opt: str, path: str) -> dict:
    """The default (partial) import: te ops, torch ops left, the remarks' distinct reasons
    (first clause); then `strict=true`: whether every op is raised (status `full`), else
    its first error."""
    try:
        r = _subprocess([te_opt, path, "--te-import-torch"], 120)
        rs = _subprocess([te_opt, path, "--te-import-torch=strict=true", "-o", os.devnull], 120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"rc": -1, "ops": [], "diag": f"could not run te-opt: {e}", "torch_left": None,
                "tool_error": True, "status": "none"}
    ops = []
    body = "\n".join(ln for ln in r.stdout.splitlines() if not ln.lstrip().startswith("//"))
    for ln in body.splitlines():
        m = _MOD_RE.search(ln)
        if not m or "=" not in ln.split("te." + m.group(1))[0]:
            continue
        rest = m.group(2).rsplit(" : (", 1)[0]  # drop the function type, keep typed attrs
        norm = re.search(r"\bnorm (\w+)\(", rest)
        act = re.search(r"\bact (\w+)", rest)
        attrs = re.search(r"\{([^{}]*)\}\s*$", rest)
        ops.append({"op": m.group(1), "norm": norm.group(1) if norm else None,
                    "act": act.group(1) if act else None,
                    "attrs": attrs.group(1).strip() if attrs else ""})
    torch_ops = re.findall(r"torch\.(?:aten|prim|prims)\.[\w.]+", body) if r.returncode == 0 else []
    torch_left = len(torch_ops) if r.returncode == 0 else None
    left, reasons = [], []
    for ln in r.stderr.splitlines():
        m = _REMARK_RE.search(ln)
        if m:
            left.append(m.group(1))
            why = m.group(2).split("; supported:")[0].split(";")[0].strip()
            if why not in reasons:
                reasons.append(why)
    strict_ok = rs.returncode == 0
    if r.returncode != 0 or not ops:
        status = "none"
    elif strict_ok:
        status = "full"
    else:
        status = "partial"
    imported = None
    if r.returncode == 0 and ops:
        imported = path[:-len(".mlir")] + ".imported.mlir"
        with open(imported, "w") as f:
            f.write(r.stdout)
    return {"rc": r.returncode, "ops": ops, "torch_left": torch_left,
            "torch_ops": sorted(set(torch_ops)), "left": sorted(set(left)), "n_left": len(left),
            "reasons": reasons,
            "status": status, "strict_rc": rs.returncode,
            "strict_diag": "" if strict_ok else _first_diag(rs.stderr),
            "diag": _first_diag(r.stderr) if r.returncode != 0 or not ops or not strict_ok
            else "", "stderr": r.stderr[-4000:], "imported": imported}


def _run(cmd, log):
    r = _subprocess(cmd, 300)
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n" + r.stdout + r.stderr)
    return r


def compare_dirs(exp_dir: str, act_dir: str, atol: float, rtol: float) -> dict:
    """compare_npy's rule over every expected file: worst abs/rel errors, failing files."""
    worst_abs = worst_ratio = 0.0
    bad = []
    for rel in compare_npy.collect(exp_dir):
        a_path = os.path.join(act_dir, rel)
        try:
            e = compare_npy.load(os.path.join(exp_dir, rel))
            a = compare_npy.load(a_path)
        except compare_npy.BadFile as ex:
            bad.append(f"{rel}: {ex}")
            continue
        ok, msg = compare_npy.compare(rel, e, a, atol, rtol, False)
        if not ok:
            bad.append(msg)
        if e.shape == a.shape and e.size:
            d = np.abs(a - e)
            worst_abs = max(worst_abs, float(np.nanmax(d)))
            worst_ratio = max(worst_ratio, float(np.nanmax(d / (atol + rtol * np.abs(e)))))
    return {"max_abs": worst_abs, "max_ratio": worst_ratio, "bad": bad}


def run_numerics(bins: str, mlir: str, data: str, work: str, dtype: str, module: str,
                 checkpoint: bool, imported: str | None = None) -> dict:
    """te-compile --train, te-run --step, compare; then --checkpoint bit-identity.
    When te-compile refuses the export but te-opt raised it (`imported`, te-opt's output:
    te-compile's importer is older than te-opt's during a rebuild), the te IR is compiled
    instead and the result says so (via_te_opt)."""
    os.makedirs(work, exist_ok=True)
    res = {"compiled": False}
    lib = os.path.join(work, "lib.so")
    r = _run([os.path.join(bins, "te-compile"), mlir, "--train", "-o", lib],
             os.path.join(work, "compile.log"))
    if r.returncode != 0 and imported:
        res["why_direct"] = "te-compile: " + _first_diag(r.stderr)
        mlir = imported
        res["via_te_opt"] = True
        r = _run([os.path.join(bins, "te-compile"), mlir, "--train", "-o", lib],
                 os.path.join(work, "compile.log"))
    if r.returncode != 0:
        res["why"] = "te-compile: " + _first_diag(r.stderr)
        return res
    res["compiled"] = True
    out = os.path.join(work, "run")
    step = check_step(bins, lib, "main", data, out, work, dtype, module)
    res.update(step)
    if "why" in step:
        return res
    if checkpoint:
        lib2 = os.path.join(work, "ckpt.so")
        out2 = os.path.join(work, "ckpt")
        shutil.rmtree(out2, ignore_errors=True)
        r = _run([os.path.join(bins, "te-compile"), mlir, "--train", "--checkpoint", "-o", lib2],
                 os.path.join(work, "ckpt_compile.log"))
        if r.returncode != 0:
            res["checkpoint"] = "te-compile --checkpoint: " + _first_diag(r.stderr)
        else:
            r = _run([os.path.join(bins, "te-run"), lib2, "--step", "main", "--inputs",
                      os.path.join(data, "args"), "--grads", os.path.join(data, "grads_in"),
                      "--outputs", out2], os.path.join(work, "ckpt_run.log"))
            res["checkpoint"] = (same_bwd(out, out2) if r.returncode == 0 else
                                 "te-run (checkpoint): " + _first_diag(r.stderr))
    return res


def te_tols(module: str, dtype: str):
    """TransformerEngine's tolerances of a module (te.linear: its LayerNormLinear ones)."""
    key = (module if module != "linear" else "layernorm_linear", dtype)
    return mg.TOLS[key] if key in mg.TOLS else mg.TOLS[("layernorm_mlp", dtype)]


def check_step(bins, lib, entry, data, out, log_dir, dtype, module) -> dict:
    """`te-run LIB --step ENTRY` on data/{args,grads_in}; forward and every gradient
    against data/expected under TE's tolerances (f32 also F32_STRICT)."""
    res = {}
    shutil.rmtree(out, ignore_errors=True)
    r = _run([os.path.join(bins, "te-run"), lib, "--step", entry, "--inputs",
              os.path.join(data, "args"), "--grads", os.path.join(data, "grads_in"),
              "--outputs", out], os.path.join(log_dir, f"run.{entry}.log"))
    if r.returncode != 0:
        res["why"] = "te-run: " + (_first_diag(r.stderr) or r.stdout.strip()[:200])
        return res
    fa, fr, ba, br = te_tols(module, dtype)
    checks = {"fwd_te": compare_dirs(os.path.join(data, "expected", "fwd"),
                                     os.path.join(out, "fwd"), fa, fr),
              "bwd_te": compare_dirs(os.path.join(data, "expected", "bwd"),
                                     os.path.join(out, "bwd"), ba, br)}
    if dtype == "f32":
        for ph in ("fwd", "bwd"):
            checks[ph + "_strict"] = compare_dirs(os.path.join(data, "expected", ph),
                                                  os.path.join(out, ph), *F32_STRICT)
    res["checks"] = {k: {"max_abs": v["max_abs"], "max_ratio": v["max_ratio"],
                         "bad": v["bad"][:3]} for k, v in checks.items()}
    res["tols"] = {"fwd": [fa, fr], "bwd": [ba, br]}
    if dtype == "f32":
        res["tols"]["strict"] = list(F32_STRICT)
    res["numerics_ok"] = all(not v["bad"] for v in checks.values())
    res["n_grads"] = len(os.listdir(os.path.join(out, "bwd")))
    return res


def same_bwd(out: str, out2: str) -> str:
    diff = []
    for fn in sorted(os.listdir(os.path.join(out, "bwd"))):
        p = os.path.join(out2, "bwd", fn)
        if not os.path.exists(p):
            diff.append(fn)
            continue
        with open(os.path.join(out, "bwd", fn), "rb") as f1, open(p, "rb") as f2:
            if f1.read() != f2.read():
                diff.append(fn)
    return "bit-identical" if not diff else "differs: " + ", ".join(diff)


_ENTRY_RE = re.compile(r"^(\w+)$")
_ARG_RE = re.compile(r"^\s+arg(\d+)(?: \([^)]*\))?: (\w+) \[([\d,?]*)\]")


def list_entries(bins: str, lib: str) -> dict:
    """`te-run LIB --list`: {inference entry: [(dtype, shape), ...]} (no _fwd/_bwd)."""
    r = _subprocess([os.path.join(bins, "te-run"), lib, "--list"], 120)
    entries, cur = {}, None
    for ln in r.stdout.splitlines():
        m = _ENTRY_RE.match(ln)
        if m:
            cur = m.group(1)
            entries[cur] = []
            continue
        m = _ARG_RE.match(ln)
        if m and cur is not None:
            entries[cur].append((m.group(2), [int(d) for d in m.group(3).split(",") if d]))
    names = set(entries)
    return {n: a for n, a in entries.items()
            if not ((n.endswith("_fwd") or n.endswith("_bwd")) and n[:-4] in names)}


def entry_module(name: str) -> str:
    for k in ("layernorm_mlp", "layernorm_linear", "linear"):
        if re.search(rf"_{k}_\d+$", name):
            return k
    return "?"


# The raised regions of the blocks that are raised in part: te.layernorm_mlp /
# te.layernorm_linear entries by name -> the PyTorch region (a forward over the block's
# own submodules) and its parameters in the entry's argument order (after x, the block
# input).  te.linear entries need no table: each is the nn.Linear the block calls in that
# order (its input captured by a forward hook; F.linear).
REGIONS = {
    ("gemma2", "mlp"): {"main_layernorm_mlp_0": (
        "pre_feedforward_layernorm + mlp (post_feedforward_layernorm left)",
        lambda s, x: s.mlp(s.pre_feedforward_layernorm(x)),
        ["pre_feedforward_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
         "mlp.down_proj.weight"])},
    ("gemma3", "mlp"): {"main_layernorm_mlp_0": (
        "pre_feedforward_layernorm + mlp (post_feedforward_layernorm left)",
        lambda s, x: s.mlp(s.pre_feedforward_layernorm(x)),
        ["pre_feedforward_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
         "mlp.down_proj.weight"])},
    ("granite", "mlp"): {"main_layernorm_mlp_0": (
        "post_attention_layernorm + mlp (the residual_multiplier left)",
        lambda s, x: s.mlp(s.post_attention_layernorm(x)),
        ["post_attention_layernorm.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
         "mlp.down_proj.weight"])},
}


def _grad_and_save(fn, leaves, d, dtype, gen):
    if dtype == "bf16":
        with Fp32Norms():
            out = fn(*leaves)
    else:
        out = fn(*leaves)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    grads_in = [torch.randn(o.shape, generator=gen, dtype=torch.float32).to(o.dtype) for o in outs]
    grads = torch.autograd.grad(outs, leaves, grads_in, allow_unused=True)
    grads = [torch.zeros_like(a) if g is None else g for a, g in zip(leaves, grads)]
    save_data(d, [a.detach() for a in leaves], grads_in, [o.detach() for o in outs], list(grads))


def region_goldens(arch, block, dtype, model, x, entries: dict, root: str) -> dict:
    """{entry: {"data": dir, "module": op kind, "what": ...} or {"why": ...}}: the PyTorch
    reference of each raised region, on inputs in the entry's argument order."""
    from torch.func import functional_call

    params = dict(model.named_parameters())
    gen = torch.Generator().manual_seed(hb.SEED + 7)
    # the nn.Linear calls of the block, in order, with their inputs
    calls = []
    hooks = [m.register_forward_hook(lambda mod, inp, out, n=n: calls.append((n, mod, inp[0].detach())))
             for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    try:
        with torch.no_grad():
            if dtype == "bf16":
                with Fp32Norms():
                    model(x)
            else:
                model(x)
    finally:
        for h in hooks:
            h.remove()
    lin_i = 0
    res = {}
    for name, argtypes in entries.items():
        kind = entry_module(name)
        d = os.path.join(root, name)
        shapes = [s for _, s in argtypes]
        spec = REGIONS.get((arch, block), {}).get(name)
        if spec:
            what, fwd, pnames = spec
            sub = SubBlockView(model, fwd)
            leaves = [x.clone().requires_grad_(True)] + \
                [params[p].detach().clone().requires_grad_(True) for p in pnames]

            def fn(xx, *ps, sub=sub, pnames=pnames):
                return functional_call(sub, dict(zip(pnames, ps)), (xx,))
        elif kind == "linear" and lin_i < len(calls):
            n, mod, inp = calls[lin_i]
            lin_i += 1
            what = f"{n} (F.linear)"
            leaves = [inp.clone().requires_grad_(True), mod.weight.detach().clone().requires_grad_(True)]
            if mod.bias is not None:
                leaves.append(mod.bias.detach().clone().requires_grad_(True))
            fn = F.linear
        else:
            res[name] = {"why": f"no PyTorch reference for {name} ({kind})", "module": kind}
            continue
        got = [list(t.shape) for t in leaves]
        if got != shapes:
            res[name] = {"why": f"{what}: argument shapes {got} != the entry's {shapes}",
                         "module": kind}
            continue
        _grad_and_save(fn, leaves, d, dtype, gen)
        res[name] = {"data": d, "module": kind, "what": what}
    return res


class SubBlockView(torch.nn.Module):
    """A forward over an existing block's submodules (same parameter names)."""

    def __init__(self, model, fn):
        super().__init__()
        for k, m in model.named_children():
            setattr(self, k, m)
        self._fn = fn

    def forward(self, x):
        return self._fn(self, x)


def _torch_mlir_ok() -> bool:
    try:
        import torch_mlir.compiler_utils  # noqa: F401
        import torch_mlir.ir  # noqa: F401
        import torch_mlir.passmanager  # noqa: F401
        return True
    except Exception:
        return False


def run_partition_numerics(bins, mlir, form, work, dtype, arch, block, model, x) -> dict:
    """A block raised in part: `te-compile --partition --train`, then each library entry
    (`te-run --step NAME`, NAME_fwd / NAME_bwd) against autograd of its PyTorch region;
    MLP regions also under `--checkpoint` (bit-identical backward); the residual module
    must parse (te-opt) and pass utils/check_residual.py."""
    os.makedirs(work, exist_ok=True)
    res = {"compiled": False, "partition": True}
    lib = os.path.join(work, "lib.so")
    r = _run([os.path.join(bins, "te-compile"), mlir, "--partition", "--train", "-o", lib],
             os.path.join(work, "compile.log"))
    if r.returncode != 0:
        res["why"] = "te-compile --partition: " + _first_diag(r.stderr)
        return res
    res["compiled"] = True
    m = re.search(r"--partition: (.*)", r.stderr)
    res["summary"] = (m.group(1).strip().replace(os.path.dirname(lib) + os.sep, "")
                      if m else "")
    entries = list_entries(bins, lib)
    res["entries"] = list(entries)
    regions = region_goldens(arch, block, dtype, model, x, entries, os.path.join(work, "regions"))
    need_ckpt = [n for n, g in regions.items() if g.get("module") == "layernorm_mlp" and "data" in g]
    lib2 = None
    if need_ckpt:
        lib2 = os.path.join(work, "ckpt.so")
        r = _run([os.path.join(bins, "te-compile"), mlir, "--partition", "--train", "--checkpoint",
                  "-o", lib2], os.path.join(work, "ckpt_compile.log"))
        if r.returncode != 0:
            res["checkpoint_why"] = "te-compile --checkpoint: " + _first_diag(r.stderr)
            lib2 = None
    res["regions"] = {}
    for name, g in regions.items():
        if "data" not in g:
            res["regions"][name] = {"module": g["module"], "why": g["why"]}
            continue
        out = os.path.join(work, "run", name)
        rr = check_step(bins, lib, name, g["data"], out, work, dtype, g["module"])
        rr["module"], rr["what"] = g["module"], g["what"]
        if name in need_ckpt and "checks" in rr:
            if lib2 is None:
                rr["checkpoint"] = res.get("checkpoint_why", "not compiled")
            else:
                out2 = os.path.join(work, "ckpt", name)
                shutil.rmtree(out2, ignore_errors=True)
                r = _run([os.path.join(bins, "te-run"), lib2, "--step", name, "--inputs",
                          os.path.join(g["data"], "args"), "--grads",
                          os.path.join(g["data"], "grads_in"), "--outputs", out2],
                         os.path.join(work, f"ckpt_run.{name}.log"))
                rr["checkpoint"] = (same_bwd(out, out2) if r.returncode == 0 else
                                    "te-run (checkpoint): " + _first_diag(r.stderr))
        res["regions"][name] = rr
    residual = os.path.join(work, "lib.residual.mlir")
    r = _run([os.path.join(bins, "te-opt"), residual, "-o", os.devnull],
             os.path.join(work, "residual_parse.log"))
    res["residual_parses"] = r.returncode == 0
    if not res["residual_parses"]:
        res["residual_why"] = "te-opt: " + _first_diag(r.stderr)
    if _torch_mlir_ok():
        # the default stage (torchdynamo-export-to-torch-backend-pipeline first) for every
        # form: an output_type="torch" export still has torch.constant ops to fold
        r = _run([sys.executable, os.path.join(UTILS, "check_residual.py"), residual],
                 os.path.join(work, "check_residual.log"))
        res["check_residual"] = r.returncode == 0
        if r.returncode != 0:
            res.setdefault("residual_why", "check_residual: " +
                           ((r.stderr or r.stdout).strip().splitlines() or ["?"])[-1][:200])
    res["numerics_ok"] = bool(res["regions"]) and all(
        v.get("numerics_ok") and v.get("checkpoint", "bit-identical") == "bit-identical"
        for v in res["regions"].values()) and res["residual_parses"] and \
        res.get("check_residual", True)
    return res


# --------------------------------------------------------------------------------------
# One case (all forms)
# --------------------------------------------------------------------------------------


def case_list(only: str | None, negatives: bool = True):
    cases = []
    for arch in hb.ARCHS:
        for block in ("mlp", "linear"):
            for dtype in ("f32", "bf16"):
                cases.append((arch, block, dtype, False))
    for arch in DYN_ARCHS:
        for dtype in ("f32", "bf16"):
            cases.append((arch, "mlp", dtype, True))
    if negatives:
        for neg in hb.NEGATIVES:
            for dtype in ("f32", "bf16"):
                cases.append((neg, "neg", dtype, False))
    if only:
        rx = re.compile(only)
        cases = [c for c in cases if rx.search(hb.Case(*c).name)]
    return cases


# What each negative misses (hf_blocks.NEGATIVES): "norm" (the norm is no norm TE has:
# nothing may be raised on it, neither te.layernorm_mlp nor te.layernorm_linear) or "act"
# (the activation is no activation TE fuses: the norm + FC1 may be raised as a
# te.layernorm_linear, but no te.layernorm_mlp, and the activation's torch ops, one of
# these, must still be in the output).
NEG_KIND = {
    "gelu_tanh_0447": ("act", ("torch.aten.tanh",)),
    "rmsnorm_wrong_dim": ("norm", ()),
    "silu_sigmoid_2x": ("act", ("torch.aten.sigmoid",)),
    "rmsnorm_no_rsqrt": ("norm", ()),
    "quick_gelu_1p7": ("act", ("torch.aten.sigmoid",)),
}


def neg_wrong(arch: str, imp: dict) -> str | None:
    """Why a negative was wrongly raised, or None when it was left as it must be."""
    kind, act_ops = NEG_KIND[arch]
    if imp.get("strict_rc", 1) == 0:
        return "strict=true imported it"
    if imp["rc"] != 0:
        return None
    ops = [o["op"] for o in imp["ops"]]
    if "layernorm_mlp" in ops:
        return "te.layernorm_mlp raised"
    if kind == "norm" and "layernorm_linear" in ops:
        return "te.layernorm_linear raised on a norm near miss"
    if kind == "act" and not any(a in imp.get("torch_ops", []) for a in act_ops):
        return f"the activation ({' / '.join(act_ops)}) is gone"
    return None


def raised_ok(imp: dict, block: str) -> bool:
    want = hb.EXPECTED_OP.get(block)
    return imp["rc"] == 0 and any(o["op"] == want for o in imp["ops"])


def run_case(arch, block, dtype, dynamic, bins, work_root, forms, numerics, all_forms):
    torch.set_num_threads(1)
    case = hb.Case(arch, block, dtype, dynamic)
    work = os.path.join(work_root, case.name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    rows = []
    sizes = DYN_SIZES if dynamic else (None,)
    data_dirs = {}
    model = names = args = None
    try:
        for sz in sizes:
            model, names, a, gi, o, g = golden(arch, block, dtype, sz)
            dd = os.path.join(work, "data" if sz is None else f"size{sz}")
            save_data(dd, a, gi, o, g)
            data_dirs[sz] = dd
            if args is None:
                args = a
    except Exception as e:
        return [dict(name=case.name, arch=arch, block=block, dtype=dtype, dynamic=dynamic,
                     form=f, error=f"golden: {type(e).__name__}: {e}".splitlines()[0])
                for f in forms]
    module = hb.EXPECTED_OP.get(block)
    doc = (f"{arch} {block} block" if block != "neg" else hb.NEGATIVES[arch][1])
    for form in forms:
        row = dict(name=case.name, arch=arch, block=block, dtype=dtype, dynamic=dynamic,
                   form=form, params=names[1:])
        try:
            t0 = time.time()
            text, call = hb.export_block(model, args, form, dynamic)
            row["export_s"] = round(time.time() - t0, 2)
        except Exception as e:
            row["error"] = f"export: {type(e).__name__}: {e}".splitlines()[0]
            rows.append(row)
            continue
        path = os.path.join(work, f"{case.name}.{form}.mlir")
        with open(path, "w") as f:
            f.write(hb.header(f"{case.name} ({form})", doc, names, args, call) + text)
        row["mlir"] = path
        imp = run_import(os.path.join(bins, "te-opt"), path)
        row["import"] = {k: v for k, v in imp.items() if k != "stderr"}
        if imp.get("tool_error"):
            row["error"] = imp["diag"]
        row["raised"] = raised_ok(imp, block) if block != "neg" else False
        row["status"] = imp.get("status", "none") if block != "neg" else None
        if block == "neg":
            row["neg_why"] = neg_wrong(arch, imp)
            row["neg_raised"] = row["neg_why"] is not None
        if row["status"] == "partial":
            row["why"] = "; ".join(imp.get("reasons") or []) or imp.get("strict_diag", "")
        elif imp["rc"] == 0 and not row["raised"] and block != "neg":
            row["why"] = (f"no te.{module}: got " + (", ".join("te." + o["op"] for o in imp["ops"])
                                                      or "no te op") + (f"; {imp['diag']}" if imp["diag"] else ""))
        elif imp["rc"] != 0:
            row["why"] = imp["diag"] or f"te-opt rc {imp['rc']}"
        do_num = numerics and block != "neg" and (
            form == "raw" or (all_forms and (row["raised"] or row["status"] == "partial")))
        if do_num and row["status"] == "partial":
            row["numerics"] = {"static": run_partition_numerics(
                bins, path, form, os.path.join(work, f"{form}.partition"), dtype, arch, block,
                model, args[0])}
        elif do_num and row["status"] == "full":
            row["numerics"] = {}
            for sz, dd in data_dirs.items():
                key = "static" if sz is None else f"size{sz}"
                res = run_numerics(bins, path, dd, os.path.join(work, f"{form}.{key}"), dtype,
                                   module, checkpoint=(block == "mlp" and sz == sizes[0]),
                                   imported=imp.get("imported") if row["raised"] else None)
                row["numerics"][key] = res
            if not row["raised"] and any(r.get("compiled") for r in row["numerics"].values()):
                row["compiled_unraised"] = True
        rows.append(row)
    return rows


# --------------------------------------------------------------------------------------
# Outputs: status file, failures, docs, golden cases, negatives
# --------------------------------------------------------------------------------------


def summarize_numerics(row) -> tuple[str, str, bool | None]:
    """(compiled column, numerics column, ok)"""
    nums = row.get("numerics")
    if not nums:
        return "-", "-", None
    if nums.get("static", {}).get("partition"):
        return summarize_partition(nums["static"])
    comp = all(r.get("compiled") for r in nums.values())
    parts, ok = [], True
    for key, r in nums.items():
        if not r.get("compiled"):
            return "no", "-", False
        if "checks" not in r:
            return "yes", r.get("why", "?"), False
        ch = r["checks"]
        fwd, bwd = ch["fwd_te"], ch["bwd_te"]
        s = f"fwd {fwd['max_abs']:.2g} bwd {bwd['max_abs']:.2g}"
        ratio = max(fwd["max_ratio"], bwd["max_ratio"])
        s += f" ({ratio:.2f} of TE tol"
        if "fwd_strict" in ch:
            sr = max(ch["fwd_strict"]["max_ratio"], ch["bwd_strict"]["max_ratio"])
            s += f", {sr:.2f} of 1e-5"
        s += ")"
        if r.get("checkpoint"):
            s += ", ckpt " + ("bit-identical" if r["checkpoint"] == "bit-identical" else "DIFFERS")
            if r["checkpoint"] != "bit-identical":
                ok = False
        if r.get("via_te_opt"):
            s += " [te IR from te-opt: te-compile's own import refused]"
        if not r.get("numerics_ok"):
            ok = False
            s = "FAIL " + s
        parts.append((key + ": " if key != "static" else "") + s)
    return ("yes" if comp else "no"), "; ".join(parts), ok


def _num_str(ch: dict, r: dict) -> str:
    fwd, bwd = ch["fwd_te"], ch["bwd_te"]
    s = f"fwd {fwd['max_abs']:.2g} bwd {bwd['max_abs']:.2g}"
    s += f" ({max(fwd['max_ratio'], bwd['max_ratio']):.2f} of TE tol"
    if "fwd_strict" in ch:
        s += f", {max(ch['fwd_strict']['max_ratio'], ch['bwd_strict']['max_ratio']):.2f} of 1e-5"
    s += ")"
    if r.get("checkpoint"):
        s += ", ckpt " + ("bit-identical" if r["checkpoint"] == "bit-identical" else "DIFFERS")
    return s


def summarize_partition(r) -> tuple[str, str, bool | None]:
    """A block raised in part: per library entry its numerics; the residual's checks."""
    if not r.get("compiled"):
        return "no", r.get("why", "-"), False
    parts = []
    for name, v in r.get("regions", {}).items():
        if "checks" not in v:
            parts.append(f"{name}: FAIL {v.get('why', '?')}")
            continue
        s = _num_str(v["checks"], v)
        if not v.get("numerics_ok") or v.get("checkpoint", "bit-identical") != "bit-identical":
            s = "FAIL " + s
        parts.append(f"{name}: {s}")
    res = "residual " + ("parses" if r.get("residual_parses") else "DOES NOT PARSE")
    if "check_residual" in r:
        res += ", check_residual " + ("ok" if r["check_residual"] else "FAILS")
    parts.append(res)
    return "yes (--partition)", "; ".join(parts), bool(r.get("numerics_ok"))


def raised_str(row) -> str:
    imp = row.get("import")
    if not imp:
        return "export failed"
    if row["block"] == "neg":
        if row.get("neg_raised"):
            return f"RAISED (wrong!: {row.get('neg_why')})"
        ops = [o["op"] for o in imp["ops"]]
        return ("left (correct)" + (": te." + ", te.".join(ops) + " raised, the rest left"
                                    if ops else ": nothing raised"))
    if row.get("status") == "partial":
        ops = [o for o in imp["ops"]]
        names = []
        for o in ops:
            n = f"te.{o['op']}" + (f" {o['norm']}" if o["norm"] else "") + \
                (f" {o['act']}" if o["act"] else "")
            names.append(n)
        return f"partial: {', '.join(names)} (+{imp.get('n_left')} torch ops left: " \
               f"{', '.join(x[len('torch.'):] for x in imp.get('left', []))})"
    if row.get("raised"):
        o = next(o for o in imp["ops"] if o["op"] == hb.EXPECTED_OP[row["block"]])
        s = f"te.{o['op']} {o['norm'] or ''}" + (f" {o['act']}" if o["act"] else "")
        flags = [a.split("=")[0].strip() for a in o["attrs"].split(",") if a.strip()]
        flags = [a for a in flags if a != "eps"]  # eps is the model's, not news
        if flags:
            s += " {" + ", ".join(flags) + "}"
        if imp.get("torch_left"):
            s += f" (+{imp['torch_left']} torch ops left)"
        return s
    return "no"


def count_line(rows, dtype) -> str:
    rs = [r for r in rows if r["dtype"] == dtype and r["block"] != "neg"]
    st = {k: sum(1 for r in rs if r.get("status") == k) for k in ("full", "partial", "none")}
    ran = [r for r in rs if summarize_numerics(r)[0].startswith("yes")]
    n_ok = sum(1 for r in ran if summarize_numerics(r)[2])
    return (f"raised full {st['full']}, partial {st['partial']}, none {st['none']} of {len(rs)}; "
            f"compiled and run {len(ran)} (partial: {sum(1 for r in ran if r.get('status') == 'partial')}"
            f" with --partition), numerics ok {n_ok}/{len(ran)}")


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def bin_stamp(bins: str) -> str:
    out = []
    for t in ("te-opt", "te-compile", "te-run"):
        try:
            out.append(f"{t} {time.strftime('%Y-%m-%d %H:%M', time.gmtime(os.path.getmtime(os.path.join(bins, t))))}")
        except OSError:
            out.append(f"{t} missing")
    return ", ".join(out) + " UTC"


# Why a block is raised only in part: what TransformerEngine has no module for.
PARTIAL_WHY = {
    ("gemma2", "mlp"): "the post_feedforward_layernorm after FC2: TransformerEngine has no "
                       "module for a post-feedforward norm (its norms come before their GEMM)",
    ("gemma3", "mlp"): "the post_feedforward_layernorm after FC2: TransformerEngine has no "
                       "module for a post-feedforward norm (its norms come before their GEMM)",
    ("granite", "mlp"): "the residual_multiplier (a scalar times FC2's output): no "
                        "TransformerEngine module has a scalar multiplier",
    ("olmo2", "mlp"): "no norm precedes the MLP (OLMo 2 normalises after it): "
                      "TransformerEngine has no MLP module without a norm (LayerNormMLP "
                      "starts with it), so the three projections are te.linear and the SiLU "
                      "gate between them and the post-feedforward norm after them are left",
    ("olmo2", "linear"): "q_norm after q_proj (no norm before it): a norm of a linear's "
                         "output, which TransformerEngine has no module for; q_proj is a "
                         "te.linear",
}

DECODER_LAYERS = [("gpt2_block", "GPT2Block"), ("llama_layer", "LlamaDecoderLayer"),
                  ("qwen3_layer", "Qwen3DecoderLayer")]


def decoder_layers(bins: str, work: str) -> list:
    """The whole decoder layers of test/Conversion/TorchToTE/Inputs/layers (test/Integration/hf/export_decoder_layers.py):
    what the default import raises and leaves, te-compile --partition, the residual's checks."""
    out = []
    os.makedirs(work, exist_ok=True)
    for stem, cls in DECODER_LAYERS:
        for dtype in ("f32", "bf16"):
            path = os.path.join(REPO, "test", "Conversion", "TorchToTE", "Inputs", "layers", f"{stem}.{dtype}.mlir")
            if not os.path.exists(path):
                continue
            imp = run_import(os.path.join(bins, "te-opt"), path)
            row = {"layer": cls, "stem": stem, "dtype": dtype, "status": imp.get("status"),
                   "ops": [o["op"] for o in imp["ops"]], "torch_left": imp.get("n_left"),
                   "left": imp.get("left", []), "reasons": imp.get("reasons", [])}
            lib = os.path.join(work, f"{stem}.{dtype}.so")
            r = _run([os.path.join(bins, "te-compile"), path, "--partition", "-o", lib],
                     os.path.join(work, f"{stem}.{dtype}.compile.log"))
            m = re.search(r"--partition: (.*)", r.stderr)
            # Scratch paths out of the docs: the files by their names.
            row["summary"] = (m.group(1).strip().replace(work + os.sep, "")
                              if m else _first_diag(r.stderr))
            row["compiled"] = r.returncode == 0
            residual = lib[:-3] + ".residual.mlir"
            if r.returncode == 0:
                r = _run([os.path.join(bins, "te-opt"), residual, "-o", os.devnull],
                         os.path.join(work, f"{stem}.{dtype}.parse.log"))
                row["residual_parses"] = r.returncode == 0
                if _torch_mlir_ok():
                    r = _run([sys.executable, os.path.join(UTILS, "check_residual.py"), residual],
                             os.path.join(work, f"{stem}.{dtype}.check.log"))
                    row["check_residual"] = r.returncode == 0
            out.append(row)
    return out


def write_docs(rows, path, bins, stamp=None, layers=None):
    counts = [f"**{dtype}**: {count_line(rows, dtype)}" for dtype in ("f32", "bf16")]
    negs = [r for r in rows if r["block"] == "neg"]
    n_neg_ok = sum(1 for r in negs if not r.get("neg_raised") and r.get("import"))
    lines = [
        "# Hugging Face architectures through te-mlir",
        "",
        "Generated by `test/Integration/hf/hf_models.py` -- do not edit; regenerate with",
        "",
        "    /path/to/python test/Integration/hf/hf_models.py --bin build/bin --json hf-models.json \\",
        "        --write-docs docs/models.md",
        "",
        f"Versions: {hb.versions()}; binaries `{os.path.relpath(bins, REPO) if bins.startswith(REPO) else bins}`"
        f" ({stamp or bin_stamp(bins)}).",
        "",
        "Each architecture's own `transformers` layer code (random init, hidden 32, "
        "intermediate 64, 4 heads, constant-initialised parameters perturbed), two "
        "sub-blocks (test/Integration/hf/hf_blocks.py says exactly what each contains): **mlp** = the "
        "norm before the MLP, then the MLP as the layer runs it; **linear** = the "
        "attention input norm, then the first projection (q_proj or the fused QKV). "
        "x `[2, 4, 32]`; x and every parameter are function arguments. Forms: `raw` "
        "(`fx.export_and_import` default), `torch` (`output_type=\"torch\"`), `raw_hl` "
        "(the pre-2026-09 decomposition table, test/Conversion/TorchToTE/export_torch.py HL_DECOMPOSITIONS). "
        "`*_dyn` rows: `Dim('batch')` on x dim 0, numerics at batch 3 and 1.",
        "",
        "Columns: **status** = `full` (`te-opt --te-import-torch=strict=true` imports it: "
        "every op raised), `partial` (the default, partial import raises some modules and "
        "leaves the other ops, each with a remark; section *Partially raised blocks*), "
        "`none` (nothing raised); **raised** = what `te-opt --te-import-torch` produced (te op, "
        "normalization, activation; for partial blocks every te op and the torch ops left); "
        "**compiled** = `te-compile --train` (partial blocks: `te-compile --partition --train`, "
        "each library entry run by `te-run --step NAME` against autograd of its PyTorch "
        "region, MLP regions also under `--checkpoint`; the residual module parsed by te-opt "
        "and checked by utils/check_residual.py); **numerics** = "
        "`te-run --step main` vs PyTorch autograd, max |error| of the forward output and "
        "of all gradients, and the worst error as a fraction of the tolerance "
        "(TransformerEngine's test_numerics tolerances for the module and dtype; f32 also "
        "against |a-e| <= 1e-5 + 1e-5|e|); `ckpt` = the `--checkpoint` backward is "
        "bit-identical to the stored one. bf16 references: autograd of the bf16 block "
        "with F.layer_norm / F.rms_norm in fp32 cast back to bf16 (TE's TorchLayerNorm, "
        "make_goldens' norm_f32); everything else as the model code runs in bf16 on "
        "the CPU. Numerics run for the raw form always (even when the block did not "
        "raise: then te-compile compiles the torch ops it can) and for the other forms "
        "when they raised (full) or were raised in part. **why not / left** = the importer's "
        "first diagnostic (partial: the distinct reasons of its remarks).",
        "",
        "Summary: " + "; ".join(counts) + f"; negatives left alone {n_neg_ok}/{len(negs)}.",
        "",
        "## Overview",
        "",
        "Per architecture and block: which forms raised and passed their numerics "
        "(`raw torch raw_hl`; `+` fully raised with numerics within tolerance, `p` raised "
        "in part with the raised regions' numerics within tolerance, `r` raised but "
        "numerics not checked or failing, `-` not raised).",
        "",
        "| architecture | mlp f32 | mlp bf16 | linear f32 | linear bf16 |",
        "| --- | --- | --- | --- | --- |",
    ]
    forms_order = list(hb.FORMS)
    keyed = {}
    for r in rows:
        if r["block"] != "neg":
            keyed[(r["arch"] + ("_dyn" if r["dynamic"] else ""), r["block"], r["dtype"], r["form"])] = r
    for a in dict.fromkeys(k[0] for k in keyed):
        cells = []
        for blk, dt in (("mlp", "f32"), ("mlp", "bf16"), ("linear", "f32"), ("linear", "bf16")):
            cs = []
            for fm in forms_order:
                r = keyed.get((a, blk, dt, fm))
                if r is None:
                    continue
                ok = summarize_numerics(r)[2]
                st = r.get("status")
                good = ok in (True, None) and r.get("numerics")
                cs.append("-" if st not in ("full", "partial") else
                          ("r" if not good else ("+" if st == "full" else "p")))
            cells.append(" ".join(cs) if cs else "")
        lines.append(f"| {a} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## All cases",
        "",
        "| architecture | block | dtype | form | status | raised | compiled | numerics | why not / left |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        if r["block"] == "neg":
            continue
        comp, num, _ = summarize_numerics(r)
        why = (r.get("why") or r.get("error") or "").split("; supported:")[0]
        if not why and r.get("numerics"):
            for v in r["numerics"].values():
                if v.get("why"):
                    why = v["why"]
        blk = r["block"] + ("_dyn" if r["dynamic"] else "")
        lines.append(f"| {r['arch']} | {blk} | {r['dtype']} | {r['form']} | "
                     f"{r.get('status') or '-'} | "
                     f"{_md(raised_str(r))} | {comp} | {_md(num)} | {_md(why[:300])} |")
    partial = [r for r in rows if r["block"] != "neg" and r.get("status") == "partial"
               and r["form"] == "raw"]
    lines += ["", "## Partially raised blocks", "",
              "What the default import raised, what it left and why (TransformerEngine has "
              "no module for it), and the numerics of the raised regions: `te-compile "
              "--partition --train`, each library entry `<func>_<opkind>_<index>` run by "
              "`te-run --step` (`_fwd` / `_bwd`) on inputs in the entry's argument order "
              "(`te-run --list`), its forward output and every gradient against PyTorch "
              "autograd of the region alone, under the full blocks' tolerances (the raw "
              "form; the other forms in *All cases*).", "",
              "| block | dtype | raised (library entries: PyTorch region) | left | why | numerics of the raised regions |",
              "| --- | --- | --- | --- | --- | --- |"]
    for r in partial:
        imp = r.get("import") or {}
        nums = (r.get("numerics") or {}).get("static", {})
        regs = nums.get("regions", {})
        raised = "; ".join(f"{n} ({v.get('module')}): {v.get('what', v.get('why', ''))}"
                           for n, v in regs.items()) or ", ".join("te." + o["op"] for o in imp.get("ops", []))
        left = ", ".join(x[len("torch."):] for x in imp.get("left", []))
        why = PARTIAL_WHY.get((r["arch"], r["block"]), "") + \
            (" (remarks: " + "; ".join(imp.get("reasons", [])) + ")" if imp.get("reasons") else "")
        lines.append(f"| {r['arch']} {r['block']} | {r['dtype']} | {_md(raised)} | {_md(left)} | "
                     f"{_md(why)} | {_md(summarize_numerics(r)[1])} |")
    if layers:
        lines += ["", "## Whole decoder layers", "",
                  "test/Conversion/TorchToTE/Inputs/layers (test/Integration/hf/export_decoder_layers.py: a whole layer, "
                  "attention + norms + MLP, parameters as arguments): the modules the default "
                  "import raises, the ops it leaves (and the distinct reasons), and "
                  "`te-compile --partition`'s residual module: parsed by te-opt and checked by "
                  "utils/check_residual.py (torch-mlir's own lowering). The MLP entries' "
                  "numerics against PyTorch inside the layer are in "
                  "test/Tools/te-compile-partition.mlir.", "",
                  "| layer | dtype | status | modules raised | torch ops left | why left | te-compile --partition | residual verifies |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for L in layers:
            mods = ", ".join("te." + o for o in L["ops"])
            res = ("parses" if L.get("residual_parses") else "DOES NOT PARSE") if L.get("compiled") else "-"
            if "check_residual" in L:
                res += ", check_residual " + ("ok" if L["check_residual"] else "FAILS")
            lines.append(f"| {L['layer']} | {L['dtype']} | {L['status']} | {mods} | "
                         f"{L['torch_left']} ({_md(', '.join(x[len('torch.'):] for x in L['left']))}) | "
                         f"{_md('; '.join(L['reasons']))} | {_md(L['summary'])} | {res} |")
    lines += ["", "## Checked-in golden cases", "",
              "`test/Integration/hf/hf_models.py --write-cases test/Integration/Inputs` writes these in "
              "make_goldens' layout (test/Integration/Inputs/README.md), so "
              "Integration/golden/ (run_goldens.sh, one lit test per case) runs them without torch; "
              "Integration/hf-models.mlir regenerates them (REQUIRES: hf-wheels) and "
              "requires byte-identical goldens. Their state with these binaries (the raw "
              "row above):", "",
              "| case | raised | numerics |", "| --- | --- | --- |"]
    for c in DEFAULT_SET:
        arch, blk, dt, dyn = c
        r = keyed.get((arch + ("_dyn" if dyn else ""), blk, dt, "raw"))
        if r is None:
            continue
        _, num, ok = summarize_numerics(r)
        lines.append(f"| hf_{hb.Case(*c).name} | {_md(raised_str(r))} | "
                     f"{'ok' if ok else _md((r.get('why') or num).split('; supported:')[0][:160])} |")
    lines += ["", "## Negative blocks (near misses that must not raise)", "",
              "A negative is left correctly when `strict=true` refuses it and the default "
              "import raises no te.layernorm_mlp; for a norm near miss no te.layernorm_linear "
              "either; for an activation near miss the norm + FC1 may be a te.layernorm_linear "
              "(and FC2 a te.linear) but the activation's torch ops stay. **importer said** = "
              "the strict import's error.", "",
              "| block | what | dtype | form | raised | importer said |",
              "| --- | --- | --- | --- | --- | --- |"]
    for r in negs:
        imp = r.get("import") or {}
        said = imp.get("strict_diag") or imp.get("diag", "")
        lines.append(f"| {r['arch']} | {_md(hb.NEGATIVES[r['arch']][1])} | {r['dtype']} | "
                     f"{r['form']} | {_md(raised_str(r))} | {_md(said.split('; supported:')[0][:200])} |")
    lines += ["", "## Blocks", "", "| architecture | norm | MLP | first projection |",
              "| --- | --- | --- | --- |"]
    for a, (n, m, l) in ARCH_DOC.items():
        lines.append(f"| {a} | {_md(n)} | {_md(m)} | {_md(l)} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _fail_name(r) -> str:
    return f"{r['arch']}_{r['block']}{'_dyn' if r['dynamic'] else ''}_{r['dtype']}_{r['form']}.mlir"


def write_status(rows, path, fail_dir):
    out, causes, members = [], {}, {}
    for r in rows:
        key = f"{r['arch']} {r['block']}{'_dyn' if r['dynamic'] else ''} {r['dtype']} {r['form']}"
        if r["block"] == "neg":
            if r.get("neg_raised"):
                out.append(f"{key}: NEGATIVE RAISED (must not): {raised_str(r)}")
            continue
        msg = None
        if r.get("error"):
            msg = r["error"]
        elif not r.get("raised") and r.get("status") != "partial":
            msg = r.get("why", "not raised")
        else:
            _, num, ok = summarize_numerics(r)
            if ok is False:
                whys = [v["why"] for v in r["numerics"].values() if v.get("why")]
                msg = "raised, but " + (whys[0] if whys else "numerics: " + num)
        if msg is None:
            continue
        out.append(f"{key}: {msg}")
        # a cause: the diagnostic's first clause (the op it stopped at and why), per
        # block kind and dtype; the representative is the raw form where there is one
        cause = (msg.split(";")[0][:200], r["arch"])
        members.setdefault(cause, []).append(r)
        if r.get("mlir") and (cause not in causes or (r["form"] == "raw"
                                                      and causes[cause]["form"] != "raw")):
            causes[cause] = r
    with open(path, "w") as f:
        f.write(f"# test/Integration/hf/hf_models.py {time.strftime('%Y-%m-%d %H:%M')}: {len(out)} failing "
                f"(arch block dtype form: diagnostic); {len(causes)} distinct causes\n")
        f.write("\n".join(out) + "\n")
        f.write(f"\n# distinct causes: the diagnostic's first clause, then per architecture "
                f"the failing block/dtype/form and one representative export"
                f"{' in ' + fail_dir if fail_dir else ''}\n")
        by_clause = {}
        for (c, arch), r in causes.items():
            by_clause.setdefault(c, []).append((arch, r))
        for c, items in sorted(by_clause.items()):
            f.write(f"# {c}\n")
            for arch, r in sorted(items):
                ms = members[(c, arch)]
                what = sorted({f"{m['block']}{'_dyn' if m['dynamic'] else ''}/{m['dtype']}/{m['form']}"
                               for m in ms})
                f.write(f"#     {arch}: {' '.join(what)} -> {_fail_name(r)}\n")
    if fail_dir:
        os.makedirs(fail_dir, exist_ok=True)
        for r in causes.values():
            dst = os.path.join(fail_dir, _fail_name(r))
            shutil.copy(r["mlir"], dst)
    return len(out), len(causes)


def norm_eps(model) -> float | None:
    """The eps of the block's first norm module (HF spells it eps, variance_epsilon or
    epsilon)."""
    for m in model.modules():
        for attr in ("eps", "variance_epsilon", "epsilon"):
            v = getattr(m, attr, None)
            if isinstance(v, float):
                return v
    return None


def write_case(arch, block, dtype, dynamic, out_root, te_opt) -> tuple[str, int, str]:
    """One checked-in golden case in make_goldens' layout (run_goldens.sh)."""
    case = hb.Case(arch, block, dtype, dynamic)
    name = "hf_" + case.name
    d = os.path.join(out_root, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    files = []
    module = hb.EXPECTED_OP[block]
    sizes = DYN_SIZES if dynamic else (None,)
    datas = {sz: golden(arch, block, dtype, sz) for sz in sizes}
    model, names, args, gi, outs, grads = datas[sizes[0]]
    text, call = hb.export_block(model, args, "raw", dynamic)
    norm, act, ffn = ARCH_DOC[arch]
    doc = (f"transformers {arch} {block} block ({norm}; {act if block == 'mlp' else ffn}), "
           f"test/Integration/hf/hf_blocks.py")
    mlir = os.path.join(d, "model.mlir")
    with open(mlir, "w") as f:
        f.write(hb.header(name, doc, names, args, call) + text)
    files.append(mlir)
    for sz, (_, _, a, g_in, o, g) in datas.items():
        files += save_data(d if sz is None else os.path.join(d, f"size{sz}"), a, g_in, o, g)
    imp = run_import(te_opt, mlir) if te_opt else {"ops": [], "rc": None}
    op = next((o for o in imp["ops"] if o["op"] == module), None)
    fa, fr, ba, br = mg.TOLS[(module, dtype)]

    def shp(t, dyn):
        s = list(t.shape)
        return [None] + s[1:] if dyn else s

    conf = {
        "name": name,
        "description": doc,
        "dtype": dtype,
        "module": module,
        "activation": ACT_TE[arch] if block == "mlp" else None,
        "normalization": norm,
        "zero_centered_gamma": "(1+w)" in norm,
        "bias": any(n.endswith("bias") and not n.startswith(("ln", "input_layernorm",
                                                              "post_attention_layernorm"))
                    for n in names),
        "eps": norm_eps(model),
        "hidden": hb.HIDDEN,
        "ffn_hidden": (4 * hb.HIDDEN if arch == "bloom" else hb.INTER) if block == "mlp" else None,
        "out_features": int(outs[0].shape[-1]),
        "func": "main",
        "arg_names": names,
        "shapes": {"args": [shp(args[0], dynamic)] + [list(a.shape) for a in args[1:]],
                   "results": [shp(o, dynamic) for o in outs]},
        "file_suffix": ".bf16.npy" if dtype == "bf16" else ".npy",
        "atol": max(fa, ba), "rtol": max(fr, br),
        "fwd_atol": fa, "fwd_rtol": fr, "bwd_atol": ba, "bwd_rtol": br,
        "tolerance_source": ("TransformerEngine tests/pytorch/test_numerics.py "
                             f"test_{module}_accuracy, {dtype} "
                             "(reference/transformer-engine.md section 7.2)"),
        "seed": hb.SEED,
        "source": f"test/Integration/hf/hf_models.py --write-cases ({hb.versions()})",
    }
    today = (f"te.{op['op']} {op['norm']} {op['act'] or ''}".strip() if op
             else (imp.get("diag") or "not raised")[:300])
    if block == "mlp" and arch in ("bloom", "t5_gated", "t5_relu"):
        conf["residual"] = "included (the model's MLP module adds it)"
    if dtype == "bf16":
        conf["golden_norm"] = (
            "fp32: expected/ is torch.autograd of the bf16 block with F.layer_norm / "
            "F.rms_norm computed in fp32 and cast back (TransformerEngine's TorchLayerNorm "
            "reference); the HF norms that upcast themselves run as written")
    if dtype == "f32":
        conf["strict_atol"], conf["strict_rtol"] = F32_STRICT
    if dynamic:
        conf["dynamic"] = True
        conf["sizes"] = list(sizes)
        conf["dynamic_dims"] = {"x": {"0": {"name": "batch", "min": 1, "max": 1024}}}
        conf["export_size"] = sizes[0]
        conf["size_dirs"] = [f"size{n}" for n in sizes]
        conf["data_seeds"] = {str(n): hb.SEED + 1000 + n for n in sizes}
    cpath = os.path.join(d, "config.json")
    with open(cpath, "w") as f:
        f.write(mg.dump_json(conf))
    files.append(cpath)
    return name, sum(os.path.getsize(p) for p in files), today


def write_negatives(out_dir, te_opt):
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for neg, (_, doc) in hb.NEGATIVES.items():
        for dtype in ("f32", "bf16"):
            model = hb.build_block(neg, "neg", dtype)
            names, args = hb.make_inputs(model, dtype)
            text, call = hb.export_block(model, args, "raw")
            p = os.path.join(out_dir, f"{neg}_{dtype}.raw.mlir")
            with open(p, "w") as f:
                f.write(hb.header(f"negative {neg}_{dtype}", doc + " -- must NOT raise",
                                  names, args, call) + text)
            imp = run_import(te_opt, p) if te_opt else {"ops": [], "diag": ""}
            written.append((p, [o["op"] for o in imp["ops"]], imp.get("diag", "")))
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("TE_BIN", os.path.join(REPO, "build", "bin")))
    ap.add_argument("--work", default=None, help="work directory (default: a temp dir)")
    ap.add_argument("--only", default=None, help="regex on case names (arch_block[_dyn]_dtype)")
    ap.add_argument("--forms", default="raw,torch,raw_hl")
    ap.add_argument("--no-numerics", action="store_true")
    ap.add_argument("--raw-only-numerics", action="store_true",
                    help="numerics for the raw form only (default: also raised other forms)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default=None, help="write all results here")
    ap.add_argument("--write-docs", default=None, help="write the markdown table here")
    ap.add_argument("--status", default=None, help="one line per failing case")
    ap.add_argument("--failures", default=None, help="one export per distinct failure cause")
    ap.add_argument("--write-cases", default=None,
                    help="write the checked-in golden cases (DEFAULT_SET) under this dir")
    ap.add_argument("--write-negatives", default=None, help="write the negative exports here")
    ap.add_argument("--verify-cases", default=None,
                    help="regenerate the default set in a temp dir and require every .npy "
                         "file to be byte-identical to the one under this dir")
    ap.add_argument("--from-json", default=None,
                    help="do not run anything: re-render --write-docs / --status from a "
                         "--json file of an earlier run")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if a negative raised, a block that raised fails its "
                         "numerics or checkpoint, or an export failed")
    args = ap.parse_args(argv)

    torch.set_num_threads(1)
    bins = os.path.abspath(args.bin)
    te_opt = os.path.join(bins, "te-opt")
    if not os.access(te_opt, os.X_OK):
        print(f"error: no te-opt in {bins} (--bin)", file=sys.stderr)
        return 2
    print(f"hf_models: {hb.versions()}; binaries {bins}")
    status = 0
    if args.write_cases:
        for c in DEFAULT_SET:
            if args.only and not re.search(args.only, hb.Case(*c).name):
                continue
            name, size, today = write_case(*c, args.write_cases, te_opt)
            print(f"case {name:28s} {size:7d} bytes  importer today: {today}")
            if size > 150 * 1024:
                print(f"  warning: {name} is over 150 KB")
    if args.write_negatives:
        for p, ops, diag in write_negatives(args.write_negatives, te_opt):
            print(f"negative {os.path.basename(p)}: te ops {ops or 'none'}; {diag[:120]}")
    if args.verify_cases:
        import filecmp

        tmp = tempfile.mkdtemp(prefix="hf-cases-")
        bad, n = [], 0
        for c in DEFAULT_SET:
            name, _, _ = write_case(*c, tmp, None)
            for r, _, fs in os.walk(os.path.join(tmp, name)):
                for fn in fs:
                    if not fn.endswith(".npy"):
                        continue
                    rel = os.path.relpath(os.path.join(r, fn), tmp)
                    theirs = os.path.join(args.verify_cases, rel)
                    n += 1
                    if not os.path.exists(theirs) or not filecmp.cmp(os.path.join(r, fn), theirs,
                                                                     shallow=False):
                        bad.append(rel)
        shutil.rmtree(tmp, ignore_errors=True)
        for rel in bad:
            print(f"FAIL golden differs from the regenerated one: {rel}")
        print(f"verify-cases: {n - len(bad)}/{n} .npy files byte-identical")
        if bad:
            status = 1
        if not (args.json or args.write_docs or args.status or args.check):
            return status
    if args.write_cases or args.write_negatives:
        if not (args.json or args.write_docs or args.status or args.check):
            return 0

    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        rows = saved["rows"]
        if args.write_docs:
            write_docs(rows, args.write_docs, saved.get("bin", bins), saved.get("bin_stamp"),
                       saved.get("layers"))
        if args.status:
            n, c = write_status(rows, args.status, args.failures)
            print(f"status: {n} failing rows, {c} distinct causes -> {args.status}")
        return 0
    stamp = bin_stamp(bins)
    work = args.work or tempfile.mkdtemp(prefix="hf-models-")
    os.makedirs(work, exist_ok=True)
    forms = [f for f in args.forms.split(",") if f]
    cases = case_list(args.only)
    rows = []
    t0 = time.time()
    jobs = [(a, b, d, dyn, bins, work, forms, not args.no_numerics, not args.raw_only_numerics)
            for a, b, d, dyn in cases]
    if args.jobs > 1:
        with cf.ProcessPoolExecutor(args.jobs) as ex:
            futs = [ex.submit(run_case, *j) for j in jobs]
            for fu in futs:
                rs = fu.result()
                rows += rs
                for r in rs:
                    print(f"{r['name']:28s} {r['form']:7s} raised={raised_str(r):40s} "
                          f"{summarize_numerics(r)[1][:70]} {(r.get('why') or r.get('error') or '')[:100]}",
                          flush=True)
    else:
        for j in jobs:
            rs = run_case(*j)
            rows += rs
            for r in rs:
                print(f"{r['name']:28s} {r['form']:7s} raised={raised_str(r):40s} "
                      f"{summarize_numerics(r)[1][:70]} {(r.get('why') or r.get('error') or '')[:100]}",
                      flush=True)
    print(f"{len(rows)} rows in {time.time() - t0:.0f} s (work dir {work})")
    layers = decoder_layers(bins, os.path.join(work, "layers")) \
        if (args.json or args.write_docs) and not args.only else None
    for L in layers or []:
        print(f"layer {L['stem']}.{L['dtype']}: {L['status']}; te ops {', '.join(L['ops'])}; "
              f"{L['torch_left']} torch ops left; residual "
              f"{'parses' if L.get('residual_parses') else 'DOES NOT PARSE'}"
              + (f", check_residual {'ok' if L.get('check_residual') else 'FAILS'}"
                 if 'check_residual' in L else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"versions": hb.versions(), "bin": bins, "bin_stamp": stamp,
                       "rows": rows, "layers": layers}, f, indent=1)
    if args.write_docs:
        write_docs(rows, args.write_docs, bins, stamp, layers)
    if args.status:
        n, c = write_status(rows, args.status, args.failures)
        print(f"status: {n} failing rows, {c} distinct causes -> {args.status}")
    for dtype in ("f32", "bf16"):
        print(f"{dtype}: {count_line(rows, dtype)}")
    bad_neg = [r for r in rows if r["block"] == "neg" and r.get("neg_raised")]
    bad_num = [r for r in rows if r["block"] != "neg" and r.get("status") in ("full", "partial")
               and summarize_numerics(r)[2] is False]

    def why_num(r):
        whys = [v["why"] for v in (r.get("numerics") or {}).values() if v.get("why")]
        return whys[0].split("; supported:")[0] if whys else summarize_numerics(r)[1]
    errs = [r for r in rows if r.get("error")]
    bad_layers = [L for L in layers or [] if not L.get("compiled") or not L.get("residual_parses")
                  or L.get("check_residual") is False]
    for L in bad_layers:
        print(f"FAIL decoder layer {L['stem']}.{L['dtype']}: {L['summary']}")
    for r in bad_neg:
        print(f"FAIL negative raised: {r['name']} {r['form']}: {raised_str(r)}")
    for r in bad_num:
        print(f"FAIL numerics of a raised block: {r['name']} {r['form']}: {why_num(r)}")
    for r in errs:
        print(f"FAIL {r['name']} {r['form']}: {r['error']}")
    print(f"negatives left alone: {sum(1 for r in rows if r['block'] == 'neg' and not r.get('neg_raised'))}"
          f"/{sum(1 for r in rows if r['block'] == 'neg')}")
    if args.check and (bad_neg or bad_num or errs or bad_layers):
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
