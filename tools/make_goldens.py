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
    config.json                 name, dtype, module, activation, normalization, shapes,
                                tolerances (TransformerEngine's, see README.md)

Dynamic configurations (Config.dynamic set) export x with a dynamic leading dimension
(torch.export.Dim, `?` in @main's signature) and store one set of goldens per size in
Config.sizes, OUT/<config>/size<N>/{args,grads_in,expected/fwd,expected/bwd}/ (N = the
dynamic size); model.mlir and config.json ("dynamic": true, "sizes": [...]) stay at the
top.  The parameters are the same at every size.

bf16 tensors are stored as their raw bits in a uint16 array, in a file named
`<stem>.bf16.npy` (see test/Integration/Inputs/README.md); f32 tensors as float32 `.npy`.

Usage:
    python3 tools/make_goldens.py --out test/Integration/Inputs
    python3 tools/make_goldens.py --out /tmp/g --only ln_linear_f32
    python3 tools/make_goldens.py --list

Requirements (CPU is enough): torch==2.14.1 torch-mlir==20261001 numpy ml_dtypes.

Deterministic: fixed seeds and torch.set_num_threads(1), so a rerun gives byte-identical
.npy files (model.mlir embeds the tool versions in its header comment).

When a te-opt binary is found (--te-opt, default build/bin/te-opt), every model.mlir is
also run through `te-opt --te-import-torch` and must give exactly one te.layernorm_linear /
te.layernorm_mlp and no torch ops (--no-check skips this).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HIDDEN = 32
FFN = 64
LN_OUT = 64      # out_features of the LayerNormLinear configs
TOKENS = 8       # x[8, 32] (2-D configs)
BATCH, SEQ = 2, 4  # x[2, 4, 32] (3-D config)
EPS = 1e-5       # TransformerEngine's default eps for both norms
SEED = 1234      # TE's test_numerics seed; each config offsets it (see make_case)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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
}

# --------------------------------------------------------------------------------------
# Models (plain nn.Modules; their named_parameters() order is the argument order)
# --------------------------------------------------------------------------------------

ACTIVATIONS: dict[str, Callable] = {
    "gelu": lambda t: F.gelu(t, approximate="tanh"),  # TE's "gelu" is the tanh form
    "relu": F.relu,
    "silu": F.silu,
}
GATED = {"swiglu": F.silu}  # gated: fc1 has 2F outputs split [gate | up] -> act(gate) * up


class Norm(nn.Module):
    """LayerNorm or RMSNorm over the last dim; zero_centered_gamma stores gamma - 1."""

    def __init__(self, kind: str, hidden: int, zero_centered_gamma: bool = False):
        super().__init__()
        self.kind, self.hidden, self.zcg = kind, hidden, zero_centered_gamma
        self.weight = nn.Parameter(torch.empty(hidden))
        if kind == "LayerNorm":
            self.bias = nn.Parameter(torch.empty(hidden))

    def forward(self, x):
        w = self.weight + 1 if self.zcg else self.weight
        if self.kind == "LayerNorm":
            return F.layer_norm(x, (self.hidden,), weight=w, bias=self.bias, eps=EPS)
        return F.rms_norm(x, (self.hidden,), weight=w, eps=EPS)


class NormLinear(nn.Module):
    """TE LayerNormLinear: norm -> Linear."""

    def __init__(self, norm: str, zcg: bool, bias: bool, hidden=HIDDEN, out=LN_OUT):
        super().__init__()
        self.norm = Norm(norm, hidden, zcg)
        self.fc = nn.Linear(hidden, out, bias=bias)

    def forward(self, x):
        return self.fc(self.norm(x))


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
    module: str          # "layernorm_linear" | "layernorm_mlp"
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

    def shape_at(self, size: int) -> tuple:
        return (size,) + tuple(self.x_shape[1:])

    def export_size(self) -> int:
        """The example size for the export: the first size >= 2 (torch.export specializes
        example sizes 0 and 1)."""
        return next(s for s in self.sizes if s >= 2)

    def build(self) -> nn.Module:
        if self.module == "layernorm_linear":
            return NormLinear(self.normalization, self.zero_centered_gamma, self.bias)
        return NormMlp(self.normalization, self.activation, self.bias)


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
]

TORCH_DTYPE = {"f32": torch.float32, "bf16": torch.bfloat16}

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

    leaves = [a.clone().requires_grad_(True) for a in args]
    out = wrapper(*leaves)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    grads_in = [torch.randn(o.shape, generator=gen, dtype=torch.float32).to(o.dtype)
                for o in outs]
    grads = torch.autograd.grad(outs, leaves, grads_in, allow_unused=False)
    return wrapper, ["x"] + names, args, grads_in, [o.detach() for o in outs], list(grads)


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
        "// Generated by tools/make_goldens.py -- do not edit; regenerate instead.\n"
        f"// config {cfg.name}: {cfg.doc}\n"
        f"// @main({sig}) {cfg.dtype}\n"
        f"// fx.export_and_import(ArgsWrapper(model), x, *params, {call}){example}\n"
        f"// {versions()}\n"
    )
    return head + (text if text.endswith("\n") else text + "\n")


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
            f.write(export(cfg, wrapper, names, args))
        save_tensors(d, args, grads_in, outs, grads)
        shapes = {"args": [list(a.shape) for a in args],
                  "results": [list(o.shape) for o in outs]}

    fa, fr, ba, br = TOLS[(cfg.module, cfg.dtype)]
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
        "hidden": HIDDEN,
        "ffn_hidden": FFN if cfg.module == "layernorm_mlp" else None,
        "out_features": LN_OUT if cfg.module == "layernorm_linear" else HIDDEN,
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
                             f"test_{cfg.module}_accuracy, {cfg.dtype} "
                             "(reference/transformer-engine.md section 7.2)"),
        "seed": SEED + 100 * index,
    }
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

    problems = []
    if te_opt:
        msg = check_import(te_opt, mlir_path, cfg.module)
        if msg:
            problems.append(msg)
    size = sum(os.path.getsize(p) for p in files)
    return size, problems


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
            print(f"{c.name:22s} {c.doc}")
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
    for index, cfg in enumerate(CONFIGS):
        if args.only and cfg.name not in args.only:
            continue
        size, problems = write_case(cfg, index, args.out, te_opt)
        total += size
        status = "ok" if not problems else "IMPORT CHECK FAILED"
        checked = " (import checked)" if te_opt and not problems else ""
        print(f"{cfg.name:22s} {size:7d} bytes  {status}{checked}")
        for p in problems:
            print("    " + p.replace("\n", "\n    "))
            failures.append(cfg.name)
    print(f"{total} bytes total in {args.out} ({versions()})")
    if failures:
        print(f"FAILED import check: {', '.join(failures)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
