"""The te_mlir backend's region export: a candidate region (matcher.Region) cut out of
its Dynamo graph as a GraphModule f(x, *params), and written as torch-dialect text, the
source te-compile gets: by the backend's own FX writer (fx_to_torch, the default) or, with
options={"export": "torch-mlir"}, by torch_mlir.fx (cached in the process and on disk).
"""

from __future__ import annotations

import hashlib
import importlib
import math
import operator
import os
import pathlib
import threading

import torch
import torch.fx as fx

from .matcher import Region, _ev, _is_leaf


class Refused(Exception):
    """A region that stays in the graph; the message says why (the report's reason)."""


# --------------------------------------------------------------------------------------
# Cutting a region out: a GraphModule over (x, *params)
# --------------------------------------------------------------------------------------


def _concrete(v):
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return v.node.hint if v.node.hint is not None else v.node.require_hint()
    return v


def build_region_module(gm: fx.GraphModule, region: Region, example_inputs: list):
    """(module, inputs) where module(x, *params) computes the region's outputs, inputs are
    the outer nodes the call reads (x first), plus dynamic-dim info for the export."""
    inside = set(region.nodes)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    ph_index = {n: i for i, n in enumerate(placeholders)}
    x = region.root
    xv = _ev(x)
    if not isinstance(xv, torch.Tensor):
        raise Refused("the norm input has no tensor meta")
    # dims of x that are symbolic
    dyn = {d: s for d, s in enumerate(xv.shape) if isinstance(s, torch.SymInt) and s.node.expr.free_symbols}
    g = fx.Graph()
    env = {}
    ext: list = [x]
    env[x] = g.placeholder("x")
    size_nodes = {}

    def size_of(d):
        if d not in size_nodes:
            size_nodes[d] = g.call_method("size", (env[x], d))
        return size_nodes[d]

    def ext_value(a):
        """What an outer input becomes inside."""
        if a in env:
            return env[a]
        v = _ev(a)
        if isinstance(v, torch.Tensor):
            if not _is_leaf(a):
                raise Refused(f"reads {a.name} ({a.op} {a.target}), which is not a parameter")
            ext.append(a)
            env[a] = g.placeholder(f"p{len(ext) - 1}")
            return env[a]
        if isinstance(v, torch.SymInt):
            e = v.node.expr
            for d, s in dyn.items():
                if s.node.expr == e:
                    env[a] = size_of(d)
                    return env[a]
            if not e.free_symbols:
                env[a] = int(v)
                return env[a]
            raise Refused(f"uses the size {e}, which is not a dim of the norm input")
        if isinstance(v, (tuple, list)) and a.op == "call_function" and a.target in (torch.Size, tuple):
            # a shape built from sizes (GPT-2's Conv1D: torch.Size([s0, s1, n])): rebuilt inside
            for b in a.all_input_nodes:
                ext_value(b)
            env[a] = g.node_copy(a, lambda b: env[b])
            return env[a]
        if isinstance(v, torch.SymFloat) or (isinstance(v, (int, float)) and a.op != "placeholder"):
            # a scalar from .item() of a scalar-tensor input (Dynamo's dynamic floats), or
            # computed from such scalars and constants (GPT-2's gelu_new sqrt(2 / math.pi)
            # under dynamic=True): baked with its current value (HF norms' eps)
            val = _scalar_value(a, example_inputs, ph_index)
            if val is None:
                raise Refused(f"uses the scalar {a.name}, computed outside the region")
            env[a] = val
            return env[a]
        if a.op == "placeholder":
            val = example_inputs[ph_index[a]]
            if isinstance(val, (int, float)):
                raise Refused(f"uses the scalar input {a.name}")
        raise Refused(f"reads {a.name}, which has no usable meta")

    for n in region.nodes:
        for a in n.all_input_nodes:
            if a not in inside:
                ext_value(a)
        if _is_identity_index(n) or _is_identity_view(n):
            env[n] = env[n.args[0]]  # x[:, 0:, :] (HF's logits_to_keep=0 slice)
            continue
        env[n] = g.node_copy(n, lambda a: env[a])
    outs = region.outputs
    g.output(tuple(env[o] for o in outs) if len(outs) > 1 else env[outs[0]])
    mod = fx.GraphModule(torch.nn.Module(), g)
    return mod, ext, dyn


_SCALAR_FNS = {operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
               operator.neg, math.sqrt, math.exp, math.log, math.tanh, float} | {
    f for f in (getattr(torch, "sym_float", None), getattr(torch, "sym_sqrt", None),
                getattr(torch, "_sym_sqrt", None)) if f is not None}


def _scalar_value(a, example_inputs: list, ph_index: dict, depth: int = 0):
    """The value of a scalar node computed from constants only: .item() of a scalar
    tensor input (what Dynamo lifts Python floats such as math.pi or a module's eps to
    under dynamic=True), Python numbers, and arithmetic / math functions of them. None
    when it depends on anything else (a size, a tensor's data)."""
    if not isinstance(a, fx.Node):
        return a if isinstance(a, (int, float)) and not isinstance(a, bool) else None
    if depth > 32:
        return None
    if a.op == "call_method" and a.target == "item" and a.args[0].op == "placeholder":
        val = example_inputs[ph_index[a.args[0]]]
        if isinstance(val, torch.Tensor):
            return float(val.item()) if val.dtype.is_floating_point else None
        return float(val) if isinstance(val, float) else None
    if a.op == "call_function" and a.target in _SCALAR_FNS and not a.kwargs:
        args = [_scalar_value(b, example_inputs, ph_index, depth + 1) for b in a.args]
        if any(x is None for x in args):
            return None
        try:
            r = a.target(*args)
        except (ArithmeticError, ValueError, TypeError):
            return None
        return float(r) if isinstance(r, (int, float)) and not isinstance(r, bool) else None
    return None


def _is_identity_index(n: fx.Node) -> bool:
    if not (n.op == "call_function" and n.target is operator.getitem):
        return False
    idx = n.args[1]
    idx = idx if isinstance(idx, tuple) else (idx,)

    def full(i):
        return i is Ellipsis or (isinstance(i, slice) and i.start in (None, 0) and i.stop is None
                                 and i.step in (None, 1))
    return all(full(i) for i in idx)


def _shape_key(v):
    return tuple(str(s.node.expr) if isinstance(s, torch.SymInt) else int(s) for s in v.shape)


def _is_identity_view(n: fx.Node) -> bool:
    """x.view(...) / x.reshape(...) to the shape x has (HF's view(-1, seq, hidden))."""
    if not (n.op == "call_method" and n.target in ("view", "reshape")):
        return False
    a, b = _ev(n.args[0]), _ev(n)
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and _shape_key(a) == _shape_key(b)


def _sample(v: torch.Tensor, dyn: dict, sizes=(3, 5, 7)) -> torch.Tensor:
    """A tensor like v, its dynamic dims given distinct sizes >= 2 (0 and 1 specialize)."""
    shape = []
    k = 0
    for d, s in enumerate(v.shape):
        if d in dyn:
            shape.append(sizes[k % len(sizes)])
            k += 1
        else:
            shape.append(int(_concrete(s)))
    gen = torch.Generator().manual_seed(0)
    if v.dtype.is_floating_point:
        return torch.randn(shape, generator=gen).to(v.dtype)
    return torch.zeros(shape, dtype=v.dtype)


def check_outputs(mod: fx.GraphModule, ext: list, dyn: dict, outputs) -> None:
    """Run the region module on samples: each result's dtype and rank must be the
    graph's (an autocast region, whose dtypes come from the autocast state, is refused)."""
    args = [_sample(_ev(ext[0]), dyn)] + [_sample(_ev(p), {}) for p in ext[1:]]
    with torch.no_grad():
        try:
            got = mod(*args)
        except Exception as e:  # noqa: BLE001
            raise Refused(f"the region does not run on its own: {type(e).__name__}: {e}")
    got = got if isinstance(got, tuple) else (got,)
    for o, t in zip(outputs, got):
        v = _ev(o)
        if isinstance(v, torch.Tensor) and (v.dtype != t.dtype or v.dim() != t.dim()):
            raise Refused(f"{o.name}: the graph has {v.dtype} rank {v.dim()}, the region alone "
                          f"gives {t.dtype} rank {t.dim()} (autocast?)")


def export_region(mod: fx.GraphModule, ext: list, dyn: dict, name: str, outputs=None) -> str:
    """torch-mlir's text of the region (func @name, x and the parameters as arguments),
    the backend's export with options={"export": "torch-mlir"}. With `outputs` (the
    region's output nodes), check_outputs first."""
    try:
        from torch_mlir import fx as tmfx
    except ImportError as e:  # checked earlier; kept for direct callers
        raise Refused(f"torch_mlir is not installed ({e})")
    from torch.export import Dim

    args = [_sample(_ev(ext[0]), dyn)] + [_sample(_ev(p), {}) for p in ext[1:]]
    if outputs is not None:
        check_outputs(mod, ext, dyn, outputs)
    kw = dict(output_type="raw", func_name=name)
    if dyn:
        kw["dynamic_shapes"] = ({d: Dim(f"d{d}", min=1, max=1 << 20) for d in dyn},) + (None,) * (len(args) - 1)
        kw["import_symbolic_shape_expressions"] = True
    box = {}

    def work():
        try:
            with torch.no_grad():
                box["text"] = str(tmfx.export_and_import(mod, *args, **kw))
        except Exception as e:  # noqa: BLE001
            box["error"] = e

    # A thread of its own: torch.export must not see the tracing state of the Dynamo
    # compilation that called the backend.
    t = threading.Thread(target=work)
    t.start()
    t.join()
    if "error" in box:
        e = box["error"]
        raise Refused(f"torch-mlir export failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return box["text"]


def _canonical(mod: fx.GraphModule) -> str:
    """The region graph with its nodes numbered: identical layers give one string."""
    idx, parts = {}, []
    for i, n in enumerate(mod.graph.nodes):
        idx[n] = i
        t = n.target
        if callable(t):
            t = f"{getattr(t, '__module__', '')}.{getattr(t, '__qualname__', repr(t))}"
        args = fx.node.map_arg(n.args, lambda a: f"%{idx[a]}")
        kwargs = fx.node.map_arg(n.kwargs, lambda a: f"%{idx[a]}")
        parts.append(f"{n.op}|{t}|{args!r}|{sorted(kwargs.items())!r}")
    return "\n".join(parts)


_exports: dict = {}  # export key -> torch-mlir text


EXPORTERS = ("fx", "torch-mlir")


def _export_cached(mod, ext, dyn, name, outputs, opts) -> str:
    """The region's torch-dialect text, written by fx_to_torch (opts["export"] "fx", the
    default: no torch-mlir needed) or exported by torch-mlir ("torch-mlir":
    export_region), cached in this process and on disk (<te_mlir cache>/exports/),
    keyed by the writer, the region graph (its ops and their arguments, casts' dtypes
    included: what the region computes), the argument shapes and dtypes and the dynamic
    dims, not by the torch version: an export of the same computation is a valid library
    source under any torch. With "torch-mlir" but no torch_mlir, a region exported
    before (say on another machine with the same cache) still compiles."""
    how = opts.get("export", "fx")
    if how not in EXPORTERS:
        raise ValueError(f"te_mlir backend: export={how!r}; known: {', '.join(EXPORTERS)}")
    spec = [(str(_ev(a).dtype), _shape_key(_ev(a)) if i else tuple(
        "?" if d in dyn else int(_concrete(s)) for d, s in enumerate(_ev(a).shape)))
        for i, a in enumerate(ext)]
    # torch-mlir's key is the one exports had before the FX writer: caches stay valid
    what = (_canonical(mod), spec, sorted(dyn), name) + (("fx-writer", 1) if how == "fx" else ())
    key = hashlib.sha256(repr(what).encode()).hexdigest()
    if key in _exports:
        return _exports[key]
    d = pathlib.Path(importlib.import_module("te_mlir.compile").cache_dir(opts["cache_dir"])) / "exports"
    f = d / (f"{name}-{key[:24]}.mlir" if how == "torch-mlir" else f"{name}-fx-{key[:24]}.mlir")
    if f.exists():
        _exports[key] = f.read_text()
        return _exports[key]
    if how == "fx":
        from .fx_to_torch import region_text

        if outputs is not None:
            check_outputs(mod, ext, dyn, outputs)
        text = region_text(mod, ext, dyn, name)
    else:
        if opts.get("_no_torch_mlir"):
            raise Refused(opts["_no_torch_mlir"] + "; no cached export of this region")
        text = export_region(mod, ext, dyn, name, outputs)
    try:
        d.mkdir(parents=True, exist_ok=True)
        tmp = f.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(text)
        os.replace(tmp, f)
    except OSError:
        pass
    _exports[key] = text
    return text
