#!/usr/bin/env python3
"""Regenerate the end-to-end golden test cases in test/Integration/Inputs.

For every configuration (see CONFIGS below) this writes OUT/<config>/:

    model.mlir                  torch_mlir.fx.export_and_import(wrapper, x, *params)
                                (default output_type "raw", function @main).  x AND every
                                parameter are function arguments; nothing is frozen.
    args/arg<i>.npy             forward inputs: arg0 = x, then the parameters in the
                                module's named_parameters() order (config.json "arg_names")
    grads_in/result<i>.npy      incoming gradient for forward result i (seeded, ~N(0,1))
    expected/fwd/result<i>.npy  PyTorch's forward results
    expected/bwd/grad_arg<i>.npy  torch.autograd gradient of arg i given grads_in
                                (FP8 recipe configs: the FP8 emulation's values instead,
                                plus recipe-state files for fp8-delayed; see below)
    config.json                 name, dtype, module, activation, normalization, shapes,
                                tolerances (TransformerEngine's, see README.md)

Dynamic configurations (Config.dynamic set) export x with a dynamic leading dimension
(torch.export.Dim, `?` in @main's signature) and store one set of goldens per size in
Config.sizes, OUT/<config>/size<N>/{args,grads_in,expected/fwd,expected/bwd}/ (N = the
dynamic size); model.mlir and config.json ("dynamic": true, "sizes": [...]) stay at the
top.  The parameters are the same at every size.

bf16 tensors are stored as their raw bits in a uint16 array, in a file named
`<stem>.bf16.npy` (see test/Integration/Inputs/README.md); f32 tensors as float32 `.npy`.

The 128-sized configurations (ln_mlp_gelu_h128_bf16, ln_linear_h128_f32: tokens 128,
hidden 128, FFN / out_features 256; the bases of the fp8-block variants, whose GEMM
operand dimensions must all be multiples of 128, and of the mxfp8 variants) are ordinary
autograd cases.  A config with Config.norm_f32 set (ln_mlp_gelu_h128_bf16) takes its
goldens from autograd with the norm computed in fp32 and cast back to the model dtype
(TransformerEngine's TorchLayerNorm reference, reference section 7.3; config.json
"golden_norm"), its export being the plain model: PyTorch's bf16 CPU LayerNorm backward
loses accuracy over 128 tokens (its norm.bias gradient is off by up to 0.61 from float64,
fp32 norm math by 0.05), enough for a computation with fp32 norm math, TE's or te-mlir's,
to fall outside TE's bf16 tolerances of it.

Usage:
    python3 test/Integration/golden/make_goldens.py --out test/Integration/Inputs
    python3 test/Integration/golden/make_goldens.py --out /tmp/g --only ln_linear_f32
    python3 test/Integration/golden/make_goldens.py --list

Requirements (CPU is enough): torch==2.14.1 torch-mlir==20261001 numpy ml_dtypes.

Deterministic: fixed seeds and torch.set_num_threads(1), so a rerun gives byte-identical
.npy files (model.mlir embeds the tool versions in its header comment).

When a te-opt binary is found (--te-opt, default build/bin/te-opt), every model.mlir is
also run through `te-opt --te-import-torch` and must give exactly one te.layernorm_linear /
te.layernorm_mlp and no torch ops (--no-check skips this).  The "normalization" configs
(TE's standalone LayerNorm / RMSNorm) are the exception: te-import-torch does not raise a
lone norm, so their model.mlir is te IR (one te.normalization, te_ir), which te-opt must
parse and verify.

Recipe configurations (Config.recipe set; FP8_CONFIGS below)
-------------------------------------------------------------
Each is a variant of a static base configuration (Config.base) with the same module,
shapes, seed and data (named <base>_<recipe> unless fp8_variant is given a name):
model.mlir is the same torch-mlir export (the recipe is a te-compile option, config.json
"recipe", passed to `te-compile --recipe`, with `--arch sm_100a` where config.json "arch"
is "blackwell"), args/ and grads_in/ are the base case's, and expected/ holds what te-mlir
computes under the recipe, given by the PyTorch emulation of recipes.py (fp8_step), NOT by
autograd.  recipes.py's docstring says how each recipe is emulated, which config.json keys
each adds, its tolerances and the self-checks that guard the emulation (a failure fails
the run).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from recipes import (  # the PyTorch emulation of TE's recipes, beside this file
    ACTIVATIONS, AMAX_HISTORY_LEN, BLOCK_LEN, E4M3, E5M2, EPS, GATED, MX_BLOCK_LEN,
    NV_BLOCK_LEN, NVFP4_F32, NVFP4_RECIPES, TORCH_DTYPE, check_fp8_cast, check_nvfp4,
    check_qdq_block, check_qdq_mx, f32, fp8_cast, fp8_step, max_err, qdq_block, qdq_mx,
    qdq_nvfp4, quant_tols)

HIDDEN = 32
FFN = 64
LN_OUT = 64      # out_features of the LayerNormLinear configs
TOKENS = 8       # x[8, 32] (2-D configs)
TOKENS_128 = 128  # x[128, 128] (the 128-sized configs of the fp8-block variants)
BATCH, SEQ = 2, 4  # x[2, 4, 32] (3-D config)
SEED = 1234      # TE's test_numerics seed; each config offsets it (see make_case)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

# --------------------------------------------------------------------------------------
# Tolerances: reference/transformer-engine.md section 7.2 (tests/pytorch/test_numerics.py)
#   test_layernorm_linear_accuracy: out atol {fp32 2.5e-4, bf16 2e-2}, rtol {1e-3, 4e-2};
#                                   grads atol {1e-3, 5e-2}, rtol {1e-3, 4e-2}
#   test_layernorm_mlp_accuracy:    out atol {2e-2, 5e-2}, rtol {1e-3, 4e-2};
#                                   grads atol {2e-2, 2e-1}, rtol {1e-3, 4e-2}
# --------------------------------------------------------------------------------------
TOLS = {
    # (module, dtype): (fwd_atol, fwd_rtol, bwd_atol, bwd_rtol)
    ("layernorm_linear", "f32"): (2.5e-4, 1e-3, 1e-3, 1e-3),
    ("layernorm_linear", "bf16"): (2e-2, 4e-2, 5e-2, 4e-2),
    ("layernorm_mlp", "f32"): (2e-2, 1e-3, 2e-2, 1e-3),
    ("layernorm_mlp", "bf16"): (5e-2, 4e-2, 2e-1, 4e-2),
    # test_layernorm_accuracy / test_rmsnorm_accuracy: out atol {fp32 1e-7, bf16 2e-2}
    # with dtype_tols' rtol {1.3e-6, 1.6e-2}; grads atol {fp32 1e-4 (LayerNorm; RMSNorm
    # 2e-3, the tighter one taken), bf16 2e-2}, rtol {1.3e-6, 1.6e-2}
    ("normalization", "f32"): (1e-7, 1.3e-6, 1e-4, 1.3e-6),
    ("normalization", "bf16"): (2e-2, 1.6e-2, 2e-2, 1.6e-2),
}

# --------------------------------------------------------------------------------------
# Models (plain nn.Modules; their named_parameters() order is the argument order)
# --------------------------------------------------------------------------------------



class Norm(nn.Module):
    """LayerNorm or RMSNorm over the last dim; zero_centered_gamma stores gamma - 1.
    With `upcast` set (only while computing the goldens of a Config.norm_f32 config, never
    for an export) the norm runs in fp32 and its output is cast back, TransformerEngine's
    TorchLayerNorm reference (section 7.3)."""

    def __init__(self, kind: str, hidden: int, zero_centered_gamma: bool = False):
        super().__init__()
        self.kind, self.hidden, self.zcg = kind, hidden, zero_centered_gamma
        self.upcast = False
        self.weight = nn.Parameter(torch.empty(hidden))
        if kind == "LayerNorm":
            self.bias = nn.Parameter(torch.empty(hidden))

    def forward(self, x):
        if self.upcast:
            w = self.weight.float() + 1 if self.zcg else self.weight.float()
            if self.kind == "LayerNorm":
                z = F.layer_norm(x.float(), (self.hidden,), weight=w,
                                 bias=self.bias.float(), eps=EPS)
            else:
                z = F.rms_norm(x.float(), (self.hidden,), weight=w, eps=EPS)
            return z.to(x.dtype)
        w = self.weight + 1 if self.zcg else self.weight
        if self.kind == "LayerNorm":
            return F.layer_norm(x, (self.hidden,), weight=w, bias=self.bias, eps=EPS)
        return F.rms_norm(x, (self.hidden,), weight=w, eps=EPS)


class NormLinear(nn.Module):
    """TE LayerNormLinear: norm -> Linear; with return_norm also the norm output
    (TE's return_layernorm_output)."""

    def __init__(self, norm: str, zcg: bool, bias: bool, hidden=HIDDEN, out=LN_OUT,
                 return_norm: bool = False):
        super().__init__()
        self.norm = Norm(norm, hidden, zcg)
        self.fc = nn.Linear(hidden, out, bias=bias)
        self.return_norm = return_norm

    def forward(self, x):
        z = self.norm(x)
        y = self.fc(z)
        return (y, z) if self.return_norm else y


class NormMlp(nn.Module):
    """TE LayerNormMLP: norm -> fc1 -> act -> fc2; gated activations use one fused fc1 of
    2F outputs split [act input | linear input] (TE's layout)."""

    def __init__(self, norm: str, act: str, bias: bool, hidden=HIDDEN, ffn=FFN):
        super().__init__()
        self.norm = Norm(norm, hidden)
        self.gated = act in GATED
        self.act = GATED[act] if self.gated else ACTIVATIONS[act]
        self.fc1 = nn.Linear(hidden, 2 * ffn if self.gated else ffn, bias=bias)
        self.fc2 = nn.Linear(ffn, hidden, bias=bias)

    def forward(self, x):
        h = self.fc1(self.norm(x))
        if self.gated:
            gate, up = h.chunk(2, dim=-1)
            h = self.act(gate) * up
        else:
            h = self.act(h)
        return self.fc2(h)


class NormOnly(nn.Module):
    """TE's standalone LayerNorm / RMSNorm module (te.normalization)."""

    def __init__(self, norm: str, zcg: bool, hidden=HIDDEN):
        super().__init__()
        self.norm = Norm(norm, hidden, zcg)

    def forward(self, x):
        return self.norm(x)


class ArgsWrapper(nn.Module):
    """forward(x, *params) == model(x) with the given parameter values, so that an export
    has x and every parameter as function arguments.  The wrapped model is kept out of
    the module tree (no registered parameters, nothing to freeze)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        object.__setattr__(self, "_model", model)
        self._names = [n for n, _ in model.named_parameters()]

    def forward(self, x, *params):
        return torch.func.functional_call(self._model, dict(zip(self._names, params)), (x,))


# --------------------------------------------------------------------------------------
# Configurations
# --------------------------------------------------------------------------------------


@dataclass
class Config:
    name: str
    module: str          # "layernorm_linear" | "layernorm_mlp" | "normalization"
    normalization: str   # "LayerNorm" | "RMSNorm"
    activation: str | None
    dtype: str           # "f32" | "bf16"
    x_shape: tuple
    bias: bool = True
    zero_centered_gamma: bool = False
    doc: str = ""
    # Dynamic leading dimension: (name, max) of the torch.export.Dim on x dim 0, and the
    # sizes to write goldens for.  x_shape[0] is then ignored (the size is substituted).
    dynamic: tuple | None = None
    sizes: tuple = ()
    # FP8 recipe variants (module docstring): the te-compile --recipe value, and the
    # static config whose module, shapes, seed and data the variant reuses.
    recipe: str | None = None
    base: str | None = None
    # Feature sizes (x_shape[-1] must equal hidden): FFN hidden size of a LayerNormMLP,
    # out_features of a LayerNormLinear.
    hidden: int = HIDDEN
    ffn: int = FFN
    out: int = LN_OUT
    # Goldens (expected/) from autograd with the norm in fp32 (Norm.upcast), the export
    # unchanged: PyTorch's bf16 CPU norm backward loses accuracy at 128 tokens.
    norm_f32: bool = False
    # LayerNormLinear returning its norm output too (TE's return_layernorm_output).
    return_norm: bool = False
    # Magnitudes spread over the 32-column blocks of the hidden dim (spread_params): data
    # on which MXFP8's 1x32 blocks and Float8 block scaling's 1x128 ones differ.
    spread: bool = False

    def shape_at(self, size: int) -> tuple:
        return (size,) + tuple(self.x_shape[1:])

    def export_size(self) -> int:
        """The example size for the export: the first size >= 2 (torch.export specializes
        example sizes 0 and 1)."""
        return next(s for s in self.sizes if s >= 2)

    def build(self) -> nn.Module:
        assert self.x_shape[-1] == self.hidden, self.name
        if self.module == "normalization":
            return NormOnly(self.normalization, self.zero_centered_gamma, hidden=self.hidden)
        if self.module == "layernorm_linear":
            return NormLinear(self.normalization, self.zero_centered_gamma, self.bias,
                              hidden=self.hidden, out=self.out,
                              return_norm=self.return_norm)
        return NormMlp(self.normalization, self.activation, self.bias, hidden=self.hidden,
                       ffn=self.ffn)


X2 = (TOKENS, HIDDEN)
X3 = (BATCH, SEQ, HIDDEN)

CONFIGS = [
    Config("ln_linear_f32", "layernorm_linear", "LayerNorm", None, "f32", X2,
           doc="LayerNorm(32) -> Linear(32, 64, bias)"),
    Config("ln_linear_nobias_f32", "layernorm_linear", "LayerNorm", None, "f32", X2, bias=False,
           doc="LayerNorm(32) -> Linear(32, 64, bias=False)"),
    Config("rms_linear_zc_f32", "layernorm_linear", "RMSNorm", None, "f32", X2,
           zero_centered_gamma=True,
           doc="rms_norm(x, weight=gamma+1) (zero-centered gamma) -> Linear(32, 64, bias)"),
    Config("ln_mlp_gelu_f32", "layernorm_mlp", "LayerNorm", "gelu", "f32", X2,
           doc="LayerNorm -> fc1(32, 64, bias) -> gelu(tanh) -> fc2(64, 32, bias)"),
    Config("ln_mlp_gelu_bf16", "layernorm_mlp", "LayerNorm", "gelu", "bf16", X2,
           doc="ln_mlp_gelu in bf16 (input and parameters bf16, PyTorch CPU bf16)"),
    Config("ln_mlp_relu_f32", "layernorm_mlp", "LayerNorm", "relu", "f32", X2,
           doc="LayerNorm -> fc1(32, 64, bias) -> relu -> fc2(64, 32, bias)"),
    Config("rms_swiglu_f32", "layernorm_mlp", "RMSNorm", "swiglu", "f32", X2, bias=False,
           doc="RMSNorm -> fused fc1(32, 128) split [gate|up] -> silu(gate)*up -> fc2(64, 32); "
               "no biases"),
    Config("ln_mlp_gelu_3d_f32", "layernorm_mlp", "LayerNorm", "gelu", "f32", X3,
           doc="ln_mlp_gelu with x[2, 4, 32]"),
    # dynamic leading dimension (appended: a config's seed depends on its index)
    Config("ln_mlp_gelu_dyn_f32", "layernorm_mlp", "LayerNorm", "gelu", "f32", (None, HIDDEN),
           dynamic=("tokens", 4096), sizes=(5, 16),
           doc="ln_mlp_gelu with x[?, 32], tokens dynamic (Dim('tokens', min=1, max=4096))"),
    Config("ln_linear_dyn3d_f32", "layernorm_linear", "LayerNorm", None, "f32",
           (None, SEQ, HIDDEN), dynamic=("batch", 1024), sizes=(3, 1),
           doc="ln_linear with x[?, 4, 32], batch dynamic (Dim('batch', min=1, max=1024))"),
    # 128-sized shapes: Float8BlockScaling (fp8-block) needs every GEMM operand dimension
    # % 128; bases of the fp8-block and mxfp8 variants, and plain autograd cases of their
    # own.
    Config("ln_mlp_gelu_h128_bf16", "layernorm_mlp", "LayerNorm", "gelu", "bf16",
           (TOKENS_128, 128), hidden=128, ffn=256, norm_f32=True,
           doc="LayerNorm(128) -> fc1(128, 256, bias) -> gelu(tanh) -> fc2(256, 128, bias), "
               "x[128, 128], bf16"),
    Config("ln_linear_h128_f32", "layernorm_linear", "LayerNorm", None, "f32",
           (TOKENS_128, 128), hidden=128, out=256,
           doc="LayerNorm(128) -> Linear(128, 256, bias), x[128, 128]"),
]



# te-compile --recipe value -> (TransformerEngine recipe, its formats for a config's doc,
# config.json "fp8_format")
FP8_RECIPES = {
    "fp8-current": ("Float8CurrentScaling", "HYBRID: E4M3 forward, E5M2 gradients",
                    "HYBRID (E4M3 forward tensors, E5M2 gradients)"),
    "fp8-delayed": ("DelayedScaling", "HYBRID: E4M3 forward, E5M2 gradients",
                    "HYBRID (E4M3 forward tensors, E5M2 gradients)"),
    "fp8-block": ("Float8BlockScaling", "E4M3 for every tensor, power-of-2 scales per 1x128 "
                  "block of x, activations and gradients, per 128x128 block of weights",
                  "E4M3 (every tensor, gradients included)"),
    "mxfp8": ("MXFP8BlockScaling", "E4M3 for every tensor, one E8M0 scale per 32 consecutive "
              "elements, rowwise 1x32 and columnwise 32x1 blocks of every tensor, weights "
              "included", "E4M3 (every tensor, gradients included)"),
}
FP8_RECIPES["nvfp4"] = (
    "NVFP4BlockScaling", "E2M1 with E4M3 scales per 1x16 block and an fp32 global amax; "
    "16x16 blocks for weights, the random Hadamard transform on the wgrad copies of "
    "activations and gradients, stochastic rounding of gradients",
    "E2M1 (every tensor; E4M3 block scales)")
FP8_RECIPES[NVFP4_F32] = (
    "NVFP4BlockScaling without the Hadamard transform (TE's fp32 activations need that)",
    "E2M1 with E4M3 scales per 1x16 block and an fp32 global amax; 16x16 blocks for "
    "weights, stochastic rounding of gradients", "E2M1 (every tensor; E4M3 block scales)")
# The architecture class a recipe needs (config.json "arch"): MXFP8 and NVFP4 GEMMs are a
# Blackwell feature. te-compile spells it --arch sm_100a.
RECIPE_ARCH = {"mxfp8": "blackwell", "nvfp4": "blackwell", NVFP4_F32: "blackwell"}
TE_COMPILE_ARCH = {"blackwell": "sm_100a", "hopper": "sm_90a"}


def te_compile_flags(recipe: str) -> str:
    """The te-compile options of a recipe: --recipe R, and --arch SM where it needs one."""
    arch = RECIPE_ARCH.get(recipe)
    spelled = f"'{recipe}'" if recipe.startswith("#") else recipe
    return f"--recipe {spelled}" + (f" --arch {TE_COMPILE_ARCH[arch]}" if arch else "")


def fp8_variant(base_name: str, recipe: str, name: str | None = None) -> Config:
    """The FP8 recipe variant of a static config: same module, shapes, seed and data.
    Named <base>_<recipe> unless `name` is given."""
    base = next(c for c in CONFIGS if c.name == base_name)
    assert not base.dynamic and not base.recipe, base_name
    what, formats, _ = FP8_RECIPES[recipe]
    return dataclasses.replace(
        base, name=name or f"{base_name}_{recipe.replace('-', '_')}", recipe=recipe,
        base=base_name,
        doc=f"{base_name} under te-compile {te_compile_flags(recipe)} ({what}, {formats}); expected "
            "values from the FP8 emulation")


# Appended after the plain configs; a variant's seed is its base's (seed_index).
FP8_CONFIGS = [
    fp8_variant("ln_mlp_gelu_bf16", "fp8-current"),
    fp8_variant("ln_mlp_gelu_bf16", "fp8-delayed"),
    fp8_variant("ln_linear_f32", "fp8-current"),
    fp8_variant("rms_swiglu_f32", "fp8-current"),
    fp8_variant("ln_mlp_gelu_h128_bf16", "fp8-block", name="ln_mlp_gelu_bf16_fp8_block"),
    fp8_variant("ln_linear_h128_f32", "fp8-block", name="ln_linear_f32_fp8_block"),
    fp8_variant("ln_mlp_gelu_h128_bf16", "mxfp8", name="ln_mlp_gelu_bf16_mxfp8"),
    fp8_variant("ln_linear_h128_f32", "mxfp8", name="ln_linear_f32_mxfp8"),
    dataclasses.replace(
        fp8_variant("ln_linear_h128_f32", "mxfp8", name="ln_linear_f32_mxfp8_spread"),
        spread=True,
        doc="ln_linear_h128_f32 with magnitudes spread over 32-column blocks (gamma and "
            "beta times 2^-8k in the k-th block of each 128, the weight's columns divided "
            "by it) under te-compile --recipe mxfp8 --arch sm_100a: data on which MXFP8's "
            "1x32 blocks and Float8 block scaling's 1x128 blocks give O(1) different "
            "results; expected values from the MXFP8 emulation"),
    fp8_variant("ln_mlp_gelu_h128_bf16", "nvfp4", name="ln_mlp_gelu_bf16_nvfp4"),
    fp8_variant("ln_linear_h128_f32", NVFP4_F32, name="ln_linear_f32_nvfp4"),
    fp8_variant("rms_swiglu_f32", "fp8-delayed"),
]
CONFIGS += FP8_CONFIGS

# The other activations te-import-torch raises from an export, one LayerNorm-MLP each
# (appended last: earlier configs keep their seeds).
CONFIGS += [
    Config(f"ln_mlp_{act}_f32", "layernorm_mlp", "LayerNorm", act, "f32", X2,
           doc=f"LayerNorm -> fc1(32, {128 if act in GATED else 64}, bias) -> {what} -> "
               "fc2(64, 32, bias)")
    for act, what in (("gelu_erf", "gelu (erf, torch's default)"),
                      ("qgelu", "x * sigmoid(1.702 x) (quick GELU)"),
                      ("srelu", "relu(x)^2 (squared ReLU)"),
                      ("silu", "silu"),
                      ("geglu", "split [gate|up] -> gelu_tanh(gate) * up"),
                      ("glu", "split [gate|up] -> sigmoid(gate) * up"),
                      ("reglu", "split [gate|up] -> relu(gate) * up"),
                      ("sreglu", "split [gate|up] -> relu(gate)^2 * up"),
                      ("qgeglu", "split [gate|up] -> quick_gelu(gate) * up"))
] + [
    Config("ln_linear_retnorm_f32", "layernorm_linear", "LayerNorm", None, "f32", X2,
           return_norm=True,
           doc="LayerNorm -> Linear(32, 64, bias), returning (linear out, norm out): TE's "
               "return_layernorm_output; both outputs get a gradient"),
]


# The gated erf GELU (a te activation TE does not have; appended last, seeds kept).
CONFIGS += [
    Config("ln_mlp_geglu_erf_f32", "layernorm_mlp", "LayerNorm", "geglu_erf", "f32", X2,
           doc="LayerNorm -> fc1(32, 128, bias) -> split [gate|up] -> gelu_erf(gate) * up -> "
               "fc2(64, 32, bias)"),
]


# TE's standalone LayerNorm / RMSNorm modules (te.normalization; appended last, seeds
# kept). te-import-torch does not raise a lone norm, so model.mlir is te IR written
# here (te_ir), not a torch-mlir export.
CONFIGS += [
    Config("norm_ln_zc_3d_f32", "normalization", "LayerNorm", None, "f32", X3,
           zero_centered_gamma=True,
           doc="te.LayerNorm(32, zero_centered_gamma=True): layer_norm(x, gamma + 1, beta), "
               "x[2, 4, 32]"),
    Config("norm_rms_zc_f32", "normalization", "RMSNorm", None, "f32", X2,
           zero_centered_gamma=True,
           doc="te.RMSNorm(32, zero_centered_gamma=True): rms_norm(x, gamma + 1)"),
    Config("norm_ln_bf16", "normalization", "LayerNorm", None, "bf16", X2, norm_f32=True,
           doc="te.LayerNorm(32) in bf16 (goldens: TE's TorchLayerNorm, fp32 math cast "
               "back)"),
]


def seed_index(cfg: Config) -> int:
    """The index that seeds a config's values: its position in CONFIGS, or for an FP8
    variant its base's position (so it has exactly the base's data)."""
    name = cfg.base or cfg.name
    return next(i for i, c in enumerate(CONFIGS) if c.name == name)



# --------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------


def init_params(model: nn.Module, gen: torch.Generator, zcg: bool) -> None:
    """Deterministic, non-uniform values (a swapped weight/bias shows up):
    norm weight 1 + 0.1 N (zero-centered: 0.1 N), norm bias 0.1 N,
    linear weight N / sqrt(fan_in) (keeps activations ~1), linear bias 0.1 N."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            n = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if name.startswith("norm."):
                v = 0.1 * n + (1.0 if name.endswith("weight") and not zcg else 0.0)
            elif name.endswith("weight"):
                v = n / (p.shape[1] ** 0.5)
            else:
                v = 0.1 * n
            p.copy_(v)


SPREAD_BITS = 8  # spread_params: each 32-column block 2^-8 of the one before


def spread_params(model: nn.Module) -> None:
    """Spreads magnitudes over the hidden dim in 32-column blocks: column j of the norm's
    gamma and beta times f_j = 2^(-8 * ((j // 32) % 4)), column j of the first linear
    layer's weight divided by f_j.  The module computes the same function of x up to
    rounding (each block's contribution to the GEMM stays O(1)), but within every 128
    columns the norm output spans 2^24 and the weight 2^24 the other way: 1x32 blocks
    (MXFP8) quantize each part well, a 1x128 or 128x128 block (Float8 block scaling)
    flushes the small parts to zero, so the two recipes' goldens differ by O(1)."""
    with torch.no_grad():
        hidden = model.norm.weight.shape[0]
        f = torch.tensor([2.0 ** (-SPREAD_BITS * ((j // 32) % 4)) for j in range(hidden)])
        model.norm.weight.mul_(f)
        if getattr(model.norm, "bias", None) is not None:
            model.norm.bias.mul_(f)
        first = model.fc if hasattr(model, "fc") else model.fc1
        first.weight.div_(f)


def to_numpy_file(t: torch.Tensor) -> tuple[np.ndarray, str]:
    """(array, suffix): float32 -> .npy; bf16 -> raw bits as uint16, .bf16.npy."""
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16).copy(), ".bf16.npy"
    if t.dtype == torch.float32:
        return t.numpy().copy(), ".npy"
    raise TypeError(f"unexpected dtype {t.dtype}")


def save(dirpath: str, stem: str, t: torch.Tensor) -> str:
    os.makedirs(dirpath, exist_ok=True)
    arr, suffix = to_numpy_file(t)
    path = os.path.join(dirpath, stem + suffix)
    np.save(path, arr, allow_pickle=False)
    return path


def data_seed(cfg: Config, index: int, size: int | None) -> int:
    """Seed of x and grads_in: the config's seed (continuing after the parameters) for a
    static config; a fresh generator seeded config seed + size for a dynamic one."""
    return SEED + 100 * index + (size if size is not None else 0)


def make_case(cfg: Config, index: int, size: int | None = None):
    """Returns (wrapper, arg names, args, grads_in, outputs, grads).  size: the dynamic
    dimension's value (dynamic configs only); the parameters do not depend on it."""
    dt = TORCH_DTYPE[cfg.dtype]
    gen = torch.Generator().manual_seed(SEED + 100 * index)
    model = cfg.build()
    init_params(model, gen, cfg.zero_centered_gamma)
    if cfg.spread:
        spread_params(model)
    model = model.to(dt)
    names = [n for n, _ in model.named_parameters()]
    x_shape = cfg.x_shape
    if cfg.dynamic:
        x_shape = cfg.shape_at(size)
        gen = torch.Generator().manual_seed(data_seed(cfg, index, size))
    x = torch.randn(x_shape, generator=gen, dtype=torch.float32).to(dt)
    params = [p.detach().clone() for p in model.parameters()]
    args = [x] + params
    wrapper = ArgsWrapper(model).eval()

    model.norm.upcast = cfg.norm_f32
    leaves = [a.clone().requires_grad_(True) for a in args]
    out = wrapper(*leaves)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    grads_in = [torch.randn(o.shape, generator=gen, dtype=torch.float32).to(o.dtype)
                for o in outs]
    grads = torch.autograd.grad(outs, leaves, grads_in, allow_unused=False)
    model.norm.upcast = False  # the export is the plain model
    return wrapper, ["x"] + names, args, grads_in, [o.detach() for o in outs], list(grads)


def fp8_tols(cfg: Config) -> tuple:
    fa, fr, ba, br = TOLS[(cfg.module, cfg.dtype)]
    qa, qr = quant_tols(cfg)
    return (max(fa, qa), max(fr, qr), max(ba, qa), max(br, qr))


# --------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for pkg in ("torch", "torch-mlir"):
        try:
            out.append(f"{pkg} {version(pkg)}")
        except PackageNotFoundError:
            pass
    return ", ".join(out)


def export(cfg: Config, wrapper: nn.Module, names, args) -> str:
    from torch_mlir import fx

    kwargs = {}
    call = 'output_type="raw", func_name="main"'
    shapes = [list(a.shape) for a in args]
    if cfg.dynamic:
        from torch.export import Dim

        dname, dmax = cfg.dynamic
        # forward(x, *params): one spec for x, one tuple for the varargs
        kwargs["dynamic_shapes"] = ({0: Dim(dname, min=1, max=dmax)}, (None,) * (len(args) - 1))
        kwargs["import_symbolic_shape_expressions"] = True
        call += (f", dynamic_shapes=({{0: Dim('{dname}', min=1, max={dmax})}}, (None,)*"
                 f"{len(args) - 1}), import_symbolic_shape_expressions=True")
        shapes[0][0] = "?"
    with torch.no_grad():
        module = fx.export_and_import(wrapper, *args, output_type="raw", func_name="main",
                                      **kwargs)
    text = str(module)
    sig = ", ".join(f"{n}[{', '.join(map(str, s))}]" for n, s in zip(names, shapes))
    example = (f" (example x{list(args[0].shape)})" if cfg.dynamic else "")
    head = (
        "// Generated by test/Integration/golden/make_goldens.py -- do not edit; regenerate instead.\n"
        f"// config {cfg.name}: {cfg.doc}\n"
        f"// @main({sig}) {cfg.dtype}\n"
        f"// fx.export_and_import(ArgsWrapper(model), x, *params, {call}){example}\n"
        f"// {versions()}\n"
    )
    if cfg.recipe:
        head += (f"// recipe {cfg.recipe}: te-compile {te_compile_flags(cfg.recipe)}; the export is "
                 f"the same as {cfg.base}'s\n")
    return head + (text if text.endswith("\n") else text + "\n")


def te_ir(cfg: Config, names, args) -> str:
    """model.mlir of a "normalization" config: @main(x, gamma[, beta]) -> the norm, one
    te.normalization (the argument order of the export: x, then named_parameters())."""
    dt = cfg.dtype
    ty = lambda t: "tensor<" + "x".join(map(str, t.shape)) + f"x{dt}>"  # noqa: E731
    ids = ["x"] + [n.split(".")[-1] for n in names[1:]]
    sig = ", ".join(f"%{i}: {ty(a)}" for i, a in zip(ids, args))
    types = ", ".join(ty(a) for a in args)
    norm = "layer_norm" if cfg.normalization == "LayerNorm" else "rms_norm"
    attrs = [f"eps = {EPS:.17e} : f64"] + (["zero_centered_gamma"]
                                           if cfg.zero_centered_gamma else [])
    params = ", ".join("%" + i for i in ids[1:])
    shapes = ", ".join(f"{n}[{', '.join(map(str, a.shape))}]" for n, a in zip(names, args))
    return (
        "// Generated by test/Integration/golden/make_goldens.py -- do not edit; regenerate instead.\n"
        f"// config {cfg.name}: {cfg.doc}\n"
        f"// @main({shapes}) {dt}\n"
        "// te IR (make_goldens.py te_ir): te-import-torch does not raise a standalone norm\n"
        f"func.func @main({sig}) -> {ty(args[0])} {{\n"
        f"  %y = te.normalization %x norm {norm}({params}) {{{', '.join(attrs)}}} : "
        f"({types}) -> {ty(args[0])}\n"
        f"  return %y : {ty(args[0])}\n"
        "}\n")


def check_te_ir(te_opt: str, path: str) -> str | None:
    """None if `te-opt` parses and verifies a te IR model.mlir with one te.normalization."""
    try:
        r = subprocess.run([te_opt, path], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"could not run {te_opt}: {e}"
    if r.returncode != 0:
        return f"te-opt failed (rc {r.returncode}):\n{r.stderr.strip()}"
    if r.stdout.count("te.normalization ") != 1:
        return "expected exactly one te.normalization"
    return None


_TE_OP_RE = re.compile(r"\bte\.([a-z_]+)\b")


def check_import(te_opt: str, path: str, module: str) -> str | None:
    """None if `te-opt --te-import-torch` gives exactly one te.<module> and no torch ops,
    else a message."""
    try:
        r = subprocess.run([te_opt, path, "--te-import-torch"], capture_output=True,
                           text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"could not run {te_opt}: {e}"
    if r.returncode != 0:
        return f"te-opt --te-import-torch failed (rc {r.returncode}):\n{r.stderr.strip()}"
    body = [ln for ln in r.stdout.splitlines() if not ln.lstrip().startswith("//")]
    text = "\n".join(body)
    te_ops = [m for m in _TE_OP_RE.findall(text)]
    if "torch." in text:
        return "torch ops/types left after --te-import-torch"
    mods = [o for o in te_ops if o in ("layernorm_linear", "layernorm_mlp", "linear")]
    if mods != [module]:
        return f"expected exactly one te.{module}, got {['te.' + o for o in mods]}"
    return None


# --------------------------------------------------------------------------------------


def dump_json(obj) -> str:
    """json.dumps(indent=2), with lists of numbers kept on one line ([8, 32])."""
    text = json.dumps(obj, indent=2)
    return re.sub(r"\[(?:[\s\d,.eE+-]|null)*\]",
                  lambda m: "[" + ", ".join(v.strip() for v in m.group(0)[1:-1].split(",")
                                            if v.strip()) + "]", text) + "\n"


def tol_test(cfg: Config) -> str:
    """The TE accuracy test whose tolerances a config takes (test_<this>_accuracy)."""
    if cfg.module == "normalization":
        return "layernorm" if cfg.normalization == "LayerNorm" else "rmsnorm"
    return cfg.module


def write_case(cfg: Config, index: int, out_root: str, te_opt: str | None) -> tuple[int, list]:
    d = os.path.join(out_root, cfg.name)
    if os.path.isdir(d):
        shutil.rmtree(d)  # stale files from an earlier layout
    os.makedirs(d)

    def save_tensors(sd, args, grads_in, outs, grads):
        for i, a in enumerate(args):
            files.append(save(os.path.join(sd, "args"), f"arg{i}", a))
        for i, g in enumerate(grads_in):
            files.append(save(os.path.join(sd, "grads_in"), f"result{i}", g))
        for i, o in enumerate(outs):
            files.append(save(os.path.join(sd, "expected", "fwd"), f"result{i}", o))
        for i, g in enumerate(grads):
            files.append(save(os.path.join(sd, "expected", "bwd"), f"grad_arg{i}", g))

    mlir_path = os.path.join(d, "model.mlir")
    files = [mlir_path]
    if cfg.dynamic:
        cases = {n: make_case(cfg, index, n) for n in cfg.sizes}
        wrapper, names, args, grads_in, outs, grads = cases[cfg.export_size()]
        with open(mlir_path, "w") as f:
            f.write(export(cfg, wrapper, names, args))
        for n, (_, _, a, gi, o, g) in cases.items():
            save_tensors(os.path.join(d, f"size{n}"), a, gi, o, g)

        def sym(shape):  # the dynamic dim as null
            return [None] + list(shape[1:])

        shapes = {"args": [sym(args[0].shape)] + [list(a.shape) for a in args[1:]],
                  "results": [sym(o.shape) for o in outs]}
    else:
        wrapper, names, args, grads_in, outs, grads = make_case(cfg, index)
        with open(mlir_path, "w") as f:
            f.write(te_ir(cfg, names, args) if cfg.module == "normalization"
                    else export(cfg, wrapper, names, args))
        if cfg.recipe:
            # expected/ from the FP8 emulation; outs/grads (autograd) only check it
            ref_outs, ref_grads = outs, grads
            outs, grads, state = fp8_step(cfg, names, args, grads_in)
            for rel, t in state.items():
                sub, stem = rel.split("/")
                files.append(save(os.path.join(d, "expected", sub), stem, t))
        save_tensors(d, args, grads_in, outs, grads)
        shapes = {"args": [list(a.shape) for a in args],
                  "results": [list(o.shape) for o in outs]}

    problems, notes = [], []
    fa, fr, ba, br = TOLS[(cfg.module, cfg.dtype)]
    if cfg.recipe:
        # The same dataflow without quantization must reproduce autograd within the
        # module dtype's tolerances (checks the emulation's plumbing: transposes, norm
        # and activation backward, bias gradients) ...
        plain_outs, plain_grads, _ = fp8_step(cfg, names, args, grads_in, quantize=False)
        ef, nf, _ = max_err(plain_outs, ref_outs, fa, fr)
        eb, nb, _ = max_err(plain_grads, ref_grads, ba, br)
        notes.append(f"unquantized emulation vs autograd: fwd max|err| {ef:.3e}, "
                     f"bwd {eb:.3e} ({cfg.dtype} tolerances: {'ok' if nf + nb == 0 else 'FAILED'})")
        if nf + nb:
            problems.append(f"the unquantized emulation is not within the {cfg.dtype} "
                            f"tolerances of autograd ({nf} + {nb} elements)")
        # ... and the FP8 forward must be close to the unquantized one (normwise; the
        # elementwise count is information only, see the module docstring).
        fa, fr, ba, br = fp8_tols(cfg)
        ef, nf, rf = max_err(outs, ref_outs, fa, fr)
        eb, nb, rb = max_err(grads, ref_grads, ba, br)
        n_out = sum(o.numel() for o in outs)
        n_grad = sum(g.numel() for g in grads)
        q_rtol = quant_tols(cfg)[1]
        notes.append(f"quantized emulation vs unquantized PyTorch: fwd max|err| {ef:.3e}, "
                     f"||err||/||y|| {rf:.3f} (<= {q_rtol:g}: {'ok' if rf <= q_rtol else 'FAILED'}), "
                     f"{nf}/{n_out} elements outside atol {fa:g} + rtol {fr:g}")
        notes.append(f"    (bwd, not checked: max|err| {eb:.3e}, ||err||/||grad|| {rb:.3f}, "
                     f"{nb}/{n_grad} elements outside atol {ba:g} + rtol {br:g})")
        if not rf <= q_rtol:
            problems.append(f"quantized forward too far from the unquantized forward: "
                            f"||err||/||y|| {rf:.3f} > {q_rtol:g} (max |err| {ef:.3e})")
        if cfg.spread:
            # The point of the spread data: Float8 block scaling's emulation must differ
            # from this recipe's by far more than the 1e-2 norm check allows.
            alt_outs, alt_grads, _ = fp8_step(dataclasses.replace(cfg, recipe="fp8-block"),
                                              names, args, grads_in)
            # per file, as run_goldens.sh compares: the output and the input gradient
            _, _, df = max_err(alt_outs, outs, fa, fr)
            per = [max_err([a], [g], ba, br)[2] for a, g in zip(alt_grads, grads)]
            notes.append(f"fp8-block emulation vs this one, ||diff||/||expected|| per file: "
                         f"fwd {df:.3f}, grads " + " ".join(f"{d:.3f}" for d in per) +
                         f" (output and input gradient must be >= 0.1: "
                         f"{'ok' if min(df, per[0]) >= 0.1 else 'FAILED'})")
            if min(df, per[0]) < 0.1:
                problems.append("the spread data does not separate the recipe from fp8-block")
    suffix = ".bf16.npy" if cfg.dtype == "bf16" else ".npy"
    conf = {
        "name": cfg.name,
        "description": cfg.doc,
        "dtype": cfg.dtype,
        "module": cfg.module,
        "activation": cfg.activation,
        "normalization": cfg.normalization,
        "zero_centered_gamma": cfg.zero_centered_gamma,
        "bias": cfg.bias,
        "eps": EPS,
        "hidden": cfg.hidden,
        "ffn_hidden": cfg.ffn if cfg.module == "layernorm_mlp" else None,
        "out_features": cfg.out if cfg.module == "layernorm_linear" else cfg.hidden,
        "func": "main",
        "arg_names": names,
        "shapes": shapes,
        "file_suffix": suffix,
        # atol/rtol: the envelope of the forward and backward tolerances (one pair that is
        # safe for every file); fwd_*/bwd_*: TE's per-direction tolerances.
        "atol": max(fa, ba),
        "rtol": max(fr, br),
        "fwd_atol": fa,
        "fwd_rtol": fr,
        "bwd_atol": ba,
        "bwd_rtol": br,
        "tolerance_source": ("TransformerEngine tests/pytorch/test_numerics.py "
                             f"test_{tol_test(cfg)}_accuracy, {cfg.dtype} "
                             "(reference/transformer-engine.md section 7.2)"),
        "seed": SEED + 100 * index,
    }
    if cfg.norm_f32 and not cfg.recipe:
        conf["golden_norm"] = (
            "fp32: expected/ is torch.autograd of the model with its norm computed in fp32 "
            "and cast back (TransformerEngine's TorchLayerNorm reference, "
            "reference/transformer-engine.md section 7.3); model.mlir is the plain "
            + ("te IR" if cfg.module == "normalization" else "export"))
    if cfg.recipe:
        # after "dtype": the recipe and where the expected values come from
        items = list(conf.items())
        at = [k for k, _ in items].index("dtype") + 1
        conf = dict(items[:at] + [("recipe", cfg.recipe)] + (
            [("arch", RECIPE_ARCH[cfg.recipe])] if cfg.recipe in RECIPE_ARCH else []) + [
            ("fp8_format", FP8_RECIPES[cfg.recipe][2]),
            ("base_config", cfg.base),
            ("expected_source", "FP8 emulation of te-mlir's computation (PyTorch "
                                "quantize-dequantize, fp32 math; test/Integration/golden/make_goldens.py "
                                "fp8_step), not autograd"),
        ] + items[at:])
        qa, qr = quant_tols(cfg)
        qfmt = "e2m1" if cfg.recipe in NVFP4_RECIPES else "e4m3"
        conf["tolerance_source"] = (
            "max(TransformerEngine tests/pytorch/test_numerics.py "
            f"test_{cfg.module}_accuracy {cfg.dtype}, quantization_tols = "
            f"dtype_tols({qfmt}) atol {qa:g} rtol {qr:g}) per direction "
            "(reference/transformer-engine.md section 7.2)")
        if cfg.spread:
            conf["data_spread"] = (
                f"norm gamma/beta column j times 2^-{SPREAD_BITS}*((j // 32) % 4), the first "
                "linear weight's column j divided by it (test/Integration/golden/make_goldens.py spread_params)")
        if cfg.recipe in NVFP4_RECIPES:
            # NVFP4BlockScaling (reference section 4.5); the seeds are te-decompose's
            # numbering of the stochastically rounded quantizations, the context seed
            # te-run's default
            rht, sr, w2d = NVFP4_RECIPES[cfg.recipe]
            conf["block_len"] = NV_BLOCK_LEN
            conf["weight_block_2d"] = w2d
            conf["rht"] = rht
            conf["stochastic_rounding"] = sr
            conf["stochastic_rounding_seeds"] = (
                {"dy": 0, "dfc1": 1} if cfg.module == "layernorm_mlp" else {"dy": 0})
            conf["context_seed"] = 0
            conf["scale_format"] = "E4M3 per block, fp32 global amax"
        if cfg.recipe == "fp8-block":
            # Float8BlockScaling's defaults (reference section 4.4)
            conf["block_len"] = BLOCK_LEN
            conf["block_scaling_dim"] = {"x": 1, "weight": 2, "grad": 1}
            conf["power_2_scales"] = True
        if cfg.recipe == "mxfp8":
            # MXFP8BlockScaling's defaults (reference section 4.3): 1x32 / 32x1 blocks of
            # every tensor, weights included (no 2-D blocks), E8M0 (power-of-2) scales
            conf["block_len"] = MX_BLOCK_LEN
            conf["block_scaling_dim"] = {"x": 1, "weight": 1, "grad": 1}
            conf["power_2_scales"] = True
            conf["scale_format"] = "E8M0"
        if cfg.recipe == "fp8-delayed":
            conf["amax_history_len"] = AMAX_HISTORY_LEN
            conf["state_files"] = sorted(
                os.path.join("expected", *rel.split("/")) + ".npy" for rel in state)
    if cfg.dynamic:
        dname, dmax = cfg.dynamic
        conf["dynamic"] = True
        conf["sizes"] = list(cfg.sizes)
        conf["dynamic_dims"] = {"x": {"0": {"name": dname, "min": 1, "max": dmax}}}
        conf["export_size"] = cfg.export_size()
        conf["size_dirs"] = [f"size{n}" for n in cfg.sizes]
        conf["data_seeds"] = {str(n): data_seed(cfg, index, n) for n in cfg.sizes}
    cpath = os.path.join(d, "config.json")
    with open(cpath, "w") as f:
        f.write(dump_json(conf))
    files.append(cpath)

    if te_opt:
        msg = (check_te_ir(te_opt, mlir_path) if cfg.module == "normalization"
               else check_import(te_opt, mlir_path, cfg.module))
        if msg:
            problems.append(msg)
    size = sum(os.path.getsize(p) for p in files)
    return size, problems, notes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(REPO, "test", "Integration", "Inputs"),
                    help="output directory (default: %(default)s)")
    ap.add_argument("--only", action="append", default=[],
                    help="generate only this config (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the configs and exit")
    ap.add_argument("--te-opt", default=os.path.join(REPO, "build", "bin", "te-opt"),
                    help="te-opt used to check the import (default: %(default)s)")
    ap.add_argument("--no-check", action="store_true",
                    help="do not run te-opt --te-import-torch on the exports")
    args = ap.parse_args(argv)

    if args.list:
        for c in CONFIGS:
            print(f"{c.name:30s} {c.doc}")
        return 0

    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    known = {c.name for c in CONFIGS}
    bad = [o for o in args.only if o not in known]
    if bad:
        print(f"unknown config(s) {bad}; see --list", file=sys.stderr)
        return 2
    te_opt = None
    if not args.no_check:
        if os.access(args.te_opt, os.X_OK):
            te_opt = args.te_opt
        else:
            print(f"note: {args.te_opt} not found; skipping the te-opt import check")
    os.makedirs(args.out, exist_ok=True)

    failures = []
    total = 0
    selected = [c for c in CONFIGS if not args.only or c.name in args.only]
    if any(c.recipe for c in selected):
        msg = check_fp8_cast()
        print("fp8_cast vs ml_dtypes: " + (msg or "bit-identical"))
        if msg:
            failures.append("fp8_cast")
    if any(c.recipe == "fp8-block" for c in selected):
        msg = check_qdq_block()
        print("qdq_block vs a per-block loop: " + (msg or "bit-identical"))
        if msg:
            failures.append("qdq_block")
    if any(c.recipe == "mxfp8" for c in selected):
        msg = check_qdq_mx()
        print("qdq_mx vs a per-block loop: " + (msg or "bit-identical"))
        if msg:
            failures.append("qdq_mx")
    if any(c.recipe in NVFP4_RECIPES for c in selected):
        msg = check_nvfp4()
        print("NVFP4 (E2M1 vs ml_dtypes, RHT, stochastic rounding, qdq_nvfp4 vs a loop): "
              + (msg or "ok"))
        if msg:
            failures.append("nvfp4")
    for cfg in CONFIGS:
        if args.only and cfg.name not in args.only:
            continue
        size, problems, notes = write_case(cfg, seed_index(cfg), args.out, te_opt)
        total += size
        status = "ok" if not problems else "CHECK FAILED"
        checked = " (import checked)" if te_opt and not problems else ""
        print(f"{cfg.name:30s} {size:7d} bytes  {status}{checked}")
        for n in notes:
            print("    " + n)
        for p in problems:
            print("    " + p.replace("\n", "\n    "))
        if problems:
            failures.append(cfg.name)
    print(f"{total} bytes total in {args.out} ({versions()})")
    if failures:
        print(f"FAILED checks: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
