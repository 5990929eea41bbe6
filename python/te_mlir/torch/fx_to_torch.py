"""The te_mlir backend's own region export: torch-dialect MLIR text written from a
region's FX graph (region_export.build_region_module's f(x, *params)) and the fake-tensor
metadata of its nodes, without torch-mlir.

The text is what te-compile's strict importer reads (lib/Dialect/Torch,
lib/Conversion/TorchToTE, docs/import.md): `torch.aten.*` ops in torch-mlir's generic
syntax over `!torch.vtensor<[dims],dtype>` values, the dynamic dims of the norm input as
`?`. Where the importer recognizes a composite op directly (aten.layer_norm, rms_norm,
linear, silu, gelu) the op is written as is; the rest is written op by op in the forms
torch-mlir's `raw` output has (casts as prims.convert_element_type, addmm as mm + bias
add, views with their sizes computed from the input's). Anything else is refused by
name (region_export.Refused): the region stays in the graph.
"""

from __future__ import annotations

import math
import operator

import torch
import torch.fx as fx
import torch.nn.functional as F

_DTYPES = {torch.float32: ("f32", 6), torch.bfloat16: ("bf16", 15), torch.float16: ("f16", 5),
           torch.float64: ("f64", 7)}

# elementwise ops of one tensor: FX targets -> the aten op
_UNARY = {"rsqrt": "rsqrt", "sqrt": "sqrt", "tanh": "tanh", "sigmoid": "sigmoid", "exp": "exp",
          "erf": "erf", "relu": "relu", "neg": "neg", "reciprocal": "reciprocal",
          "square": "square", "silu": "silu"}
_UNARY_FNS = {torch.rsqrt: "rsqrt", torch.sqrt: "sqrt", torch.tanh: "tanh", torch.sigmoid: "sigmoid",
              torch.exp: "exp", torch.erf: "erf", torch.relu: "relu", torch.neg: "neg",
              torch.reciprocal: "reciprocal", torch.square: "square", operator.neg: "neg",
              F.silu: "silu", F.relu: "relu", F.sigmoid: "sigmoid", F.tanh: "tanh"}
_BINARY_FNS = {operator.add: "add", torch.add: "add", operator.sub: "sub", torch.sub: "sub",
               operator.mul: "mul", torch.mul: "mul", operator.truediv: "div", torch.div: "div"}
_CASTS = {"to", "float", "half", "bfloat16", "type_as", "type"}
_LINEARS = {torch._C._nn.linear, F.linear}
_NORMS = {F.layer_norm: "layer_norm", torch.layer_norm: "layer_norm"}
for _fn in (getattr(F, "rms_norm", None), getattr(torch, "rms_norm", None)):
    if _fn is not None:
        _NORMS[_fn] = "rms_norm"


def _refused(msg: str) -> Exception:
    from .region_export import Refused

    return Refused(f"the FX export {msg}")


def _op_name(n: fx.Node) -> str:
    t = n.target
    if n.op == "call_method":
        return f"Tensor.{t}"
    return getattr(t, "__qualname__", None) or getattr(t, "__name__", None) or str(t)


def _float_literal(v: float) -> str:
    if not math.isfinite(v):
        raise _refused(f"cannot write the non-finite constant {v}")
    s = repr(float(v))
    mant, e, exp = s.partition("e")
    if "." not in mant:
        mant += ".0"
    return mant + (e + exp if e else "")


class _Writer:
    def __init__(self, dyn_syms: dict):
        self.lines: list = []
        self.k = 0
        self.consts: dict = {}
        self.dyn_syms = dyn_syms  # sympy symbol -> SSA of its size.int
        self.sym_cache: dict = {}
        self.types: dict = {}     # SSA name -> its type

    def fresh(self) -> str:
        self.k += 1
        return f"%v{self.k}"

    def emit(self, text: str) -> None:
        self.lines.append("    " + text)

    def const(self, v) -> str:
        """A torch.constant of a Python value (emitted once)."""
        key = (type(v).__name__, repr(v))
        if key in self.consts:
            return self.consts[key]
        r = self.fresh()
        if v is None:
            self.emit(f"{r} = torch.constant.none")
        elif isinstance(v, bool):
            self.emit(f"{r} = torch.constant.bool {'true' if v else 'false'}")
        elif isinstance(v, int):
            self.emit(f"{r} = torch.constant.int {v}")
        elif isinstance(v, float):
            self.emit(f"{r} = torch.constant.float {_float_literal(v)}")
        elif isinstance(v, str):
            self.emit(f'{r} = torch.constant.str "{v}"')
        else:
            raise _refused(f"cannot write the constant {v!r}")
        self.types[r] = {"NoneType": "!torch.none", "bool": "!torch.bool", "int": "!torch.int",
                         "float": "!torch.float", "str": "!torch.str"}[key[0]]
        self.consts[key] = r
        return r

    def int_list(self, vals) -> str:
        """A !torch.list<int> of Python ints and SSA !torch.int values."""
        ops = [v if isinstance(v, str) else self.const(int(v)) for v in vals]
        r = self.fresh()
        types = ", ".join("!torch.int" for _ in ops)
        self.emit(f"{r} = torch.prim.ListConstruct {', '.join(ops)} : ({types}) -> !torch.list<int>")
        self.types[r] = "!torch.list<int>"
        return r

    def size(self, s) -> object:
        """A dim: an int, or the SSA value computing a symbolic one from the input's sizes."""
        if not isinstance(s, torch.SymInt):
            return int(s)
        e = s.node.expr
        if not e.free_symbols:
            return int(e)
        return self.sym_expr(e)

    def sym_expr(self, e) -> str:
        if e in self.sym_cache:
            return self.sym_cache[e]
        if e in self.dyn_syms:
            return self.dyn_syms[e]
        if e.is_Mul:
            vals = []
            for f in e.args:
                if f.is_Integer:
                    vals.append(self.const(int(f)))
                elif f.is_Symbol or f.is_Mul:
                    vals.append(self.sym_expr(f))
                else:
                    raise _refused(f"cannot write the size {e}")
            r = vals[0]
            for v in vals[1:]:
                nr = self.fresh()
                self.emit(f"{nr} = torch.aten.mul.int {r}, {v} : !torch.int, !torch.int -> !torch.int")
                self.types[nr] = "!torch.int"
                r = nr
            self.sym_cache[e] = r
            return r
        raise _refused(f"cannot write the size {e}, which is not a product of the input's dims")


def tensor_type(v, dyn_dims=None) -> str:
    """!torch.vtensor<[d0,?,...],dtype> of a (fake) tensor; symbolic dims are `?`."""
    if not isinstance(v, torch.Tensor):
        raise _refused(f"needs a tensor, got {type(v).__name__}")
    if v.dtype not in _DTYPES:
        raise _refused(f"does not write dtype {v.dtype}")
    dims = []
    for d, s in enumerate(v.shape):
        if dyn_dims is not None:
            dims.append("?" if d in dyn_dims else str(int(s)))
        elif isinstance(s, torch.SymInt) and s.node.expr.free_symbols:
            dims.append("?")
        else:
            dims.append(str(int(s)))
    return f"!torch.vtensor<[{','.join(dims)}],{_DTYPES[v.dtype][0]}>"


def _ev(n):
    return n.meta.get("example_value", n.meta.get("val")) if isinstance(n, fx.Node) else None


def _arg(n: fx.Node, i: int, name: str, default=None):
    if len(n.args) > i:
        return n.args[i]
    return n.kwargs.get(name, default)


def region_text(mod: fx.GraphModule, ext: list, dyn: dict, name: str) -> str:
    """torch-dialect text of the region module: func @name(x, *params) returning the
    region's outputs, x's dims in `dyn` dynamic (`?`). Refuses (region_export.Refused,
    the op named) what it cannot write."""
    w = _Writer({})
    env: dict = {}   # node -> SSA name (tensors), list of SSA names (tuples), or a Python value
    types = w.types
    args = []
    phs = [n for n in mod.graph.nodes if n.op == "placeholder"]
    if len(phs) != len(ext):
        raise _refused(f"got {len(phs)} placeholders for {len(ext)} inputs")
    for i, (ph, src) in enumerate(zip(phs, ext)):
        t = tensor_type(_ev(src), set(dyn) if i == 0 else set())
        env[ph] = f"%arg{i}"
        types[f"%arg{i}"] = t
        args.append(f"%arg{i}: {t}")
    # the dynamic dims of x, as !torch.int values
    for d, s in sorted(dyn.items()):
        r = w.fresh()
        w.emit(f"{r} = torch.aten.size.int %arg0, {w.const(d)} : {types['%arg0']}, !torch.int -> !torch.int")
        w.dyn_syms[s.node.expr] = r
        types[r] = "!torch.int"
    metas = {ph: _ev(src) for ph, src in zip(phs, ext)}
    out_node = None
    for n in mod.graph.nodes:
        if n.op == "placeholder":
            continue
        if n.op == "output":
            out_node = n
            break
        _write_node(w, n, env, metas)
    outs = out_node.args[0]
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    vals = []
    for o in outs:
        v = env.get(o) if isinstance(o, fx.Node) else None
        if not isinstance(v, str):
            raise _refused(f"has an output that is not a tensor ({o})")
        vals.append(v)
    rtypes = [types[v] for v in vals]
    rsig = rtypes[0] if len(rtypes) == 1 else "(" + ", ".join(rtypes) + ")"
    body = "\n".join(w.lines)
    return (f"module {{\n  func.func @{name}({', '.join(args)}) -> {rsig} {{\n{body}\n"
            f"    return {', '.join(vals)} : {', '.join(rtypes)}\n  }}\n}}\n")


def _write_node(w: _Writer, n: fx.Node, env: dict, metas: dict) -> None:
    types = w.types
    v = _ev(n)
    metas[n] = v
    if not isinstance(v, (torch.Tensor, tuple, list)) or \
            (isinstance(v, (tuple, list)) and not all(isinstance(t, torch.Tensor) for t in v)):
        # sizes, torch.Size, symbolic scalars: their values are read from the metadata
        # of the tensors that use them (views), or were baked by build_region_module
        env[n] = v
        return

    def val(a):
        """SSA name of a tensor argument."""
        if isinstance(a, fx.Node) and isinstance(env.get(a), str):
            return env[a]
        raise _refused(f"{_op_name(n)}: argument {a} is not a tensor it wrote")

    def scalar(a):
        if isinstance(a, fx.Node):
            a = env.get(a)
        if isinstance(a, (torch.SymInt, torch.SymFloat)):
            raise _refused(f"{_op_name(n)}: the scalar {a} is symbolic")
        if isinstance(a, bool) or not isinstance(a, (int, float)):
            raise _refused(f"{_op_name(n)}: {a!r} is not a number")
        return a

    def is_tensor(a):
        return isinstance(a, fx.Node) and isinstance(env.get(a), str)

    def op(aten: str, operands: list, result_meta=v) -> str:
        r = w.fresh()
        rt = tensor_type(result_meta)
        ots = ", ".join(types[o] for o in operands)
        w.emit(f"{r} = torch.aten.{aten} {', '.join(operands)} : {ots} -> {rt}")
        types[r] = rt
        return r

    t, kind = n.target, n.op
    if kind == "call_method" and t in _CASTS:
        src = n.args[0]
        if metas[src].dtype == v.dtype:
            env[n] = val(src)
        else:
            r = w.fresh()
            rt = tensor_type(v)
            w.emit(f"{r} = torch.prims.convert_element_type {val(src)}, {w.const(_DTYPES[v.dtype][1])} : "
                   f"{types[val(src)]}, !torch.int -> {rt}")
            types[r] = rt
            env[n] = r
        return
    if (kind == "call_method" and t == "contiguous") or \
            (kind == "call_function" and t in (F.dropout,) and
             (not _arg(n, 2, "training", True) or _arg(n, 1, "p", 0.5) == 0)):
        env[n] = val(n.args[0])
        return
    if (kind == "call_method" and t in _UNARY) or (kind == "call_function" and t in _UNARY_FNS):
        aten = _UNARY[t] if kind == "call_method" else _UNARY_FNS[t]
        if n.kwargs.get("inplace") or (len(n.args) > 1 and aten in ("silu", "relu")):
            raise _refused(f"{_op_name(n)}: in-place form")
        env[n] = op(aten, [val(n.args[0])])
        return
    if kind == "call_function" and t is F.gelu:
        approx = n.kwargs.get("approximate", n.args[1] if len(n.args) > 1 else "none")
        env[n] = op("gelu", [val(n.args[0]), w.const(str(approx))])
        return
    if (kind == "call_method" and t in ("add", "sub", "mul", "div")) or \
            (kind == "call_function" and t in _BINARY_FNS):
        env[n] = _binary(w, n, t if kind == "call_method" else _BINARY_FNS[t], val, scalar, is_tensor, op)
        return
    if (kind == "call_method" and t == "pow") or (kind == "call_function" and t in (operator.pow, torch.pow)):
        a, e = n.args[0], n.args[1]
        if not is_tensor(a) or is_tensor(e):
            raise _refused(f"{_op_name(n)}: only tensor ** number is written")
        env[n] = op("pow.Tensor_Scalar", [val(a), w.const(scalar(e))])
        return
    if (kind == "call_method" and t == "mean") or (kind == "call_function" and t is torch.mean):
        dim = _arg(n, 1, "dim")
        if dim is None or n.kwargs.get("dtype") is not None:
            raise _refused(f"{_op_name(n)}: only a mean over given dims is written")
        dims = list(dim) if isinstance(dim, (tuple, list)) else [dim]
        keep = bool(_arg(n, 2, "keepdim", False))
        env[n] = op("mean.dim", [val(n.args[0]), w.int_list(dims), w.const(keep), w.const(None)])
        return
    if kind == "call_function" and t in _NORMS:
        env[n] = _norm(w, n, _NORMS[t], val, op)
        return
    if kind == "call_function" and t in _LINEARS:
        x, wt = n.args[0], _arg(n, 1, "weight")
        b = _arg(n, 2, "bias")
        env[n] = op("linear", [val(x), val(wt), val(b) if b is not None else w.const(None)])
        return
    if kind == "call_function" and t is torch.addmm:
        if n.kwargs:
            raise _refused(f"{_op_name(n)}: beta/alpha are not written")
        b, m1, m2 = n.args[:3]
        mv = _mm_meta(metas[m1], metas[m2])
        mm = op("mm", [val(m1), val(m2)], mv)
        env[n] = op("add.Tensor", [mm, val(b), w.const(1)])
        return
    if kind == "call_function" and t in (operator.matmul, torch.matmul):
        env[n] = op("matmul", [val(n.args[0]), val(n.args[1])])
        return
    if (kind == "call_method" and t in ("view", "reshape")) or (kind == "call_function" and t is torch.reshape):
        shape = w.int_list([w.size(s) for s in v.shape])
        env[n] = op("view", [val(n.args[0]), shape])
        return
    if _is_transpose2d(n, metas):
        env[n] = op("permute", [val(n.args[0]), w.int_list([1, 0])])
        return
    if (kind == "call_method" and t == "transpose") or (kind == "call_function" and t is torch.transpose):
        env[n] = op("transpose.int", [val(n.args[0]), w.const(int(n.args[1])), w.const(int(n.args[2]))])
        return
    if (kind == "call_method" and t == "permute") or (kind == "call_function" and t is torch.permute):
        dims = n.args[1] if len(n.args) == 2 and isinstance(n.args[1], (tuple, list)) else n.args[1:]
        env[n] = op("permute", [val(n.args[0]), w.int_list([int(d) for d in dims])])
        return
    if (kind == "call_method" and t in ("chunk", "split")) or \
            (kind == "call_function" and t in (torch.chunk, torch.split)):
        env[n] = _split(w, n, "chunk" if t in ("chunk", torch.chunk) else "split", val, w.types)
        return
    if kind == "call_function" and t is operator.getitem and isinstance(env.get(n.args[0]), list) \
            and isinstance(n.args[1], int):
        env[n] = env[n.args[0]][n.args[1]]
        return
    raise _refused(f"does not write {kind} {_op_name(n)}")


def _binary(w, n, which, val, scalar, is_tensor, op):
    if n.kwargs or len(n.args) != 2:
        raise _refused(f"{_op_name(n)}: only a binary {which} without alpha/rounding is written")
    a, b = n.args
    if is_tensor(a) and is_tensor(b):
        ops = [val(a), val(b)] + ([w.const(1)] if which in ("add", "sub") else [])
        return op(f"{which}.Tensor", ops)
    if is_tensor(a):
        ops = [val(a), w.const(scalar(b))] + ([w.const(1)] if which in ("add", "sub") else [])
        return op(f"{which}.Scalar", ops)
    if is_tensor(b):
        s = scalar(a)
        if which in ("add", "mul"):
            ops = [val(b), w.const(s)] + ([w.const(1)] if which == "add" else [])
            return op(f"{which}.Scalar", ops)
        if which == "sub":
            return op("rsub.Scalar", [val(b), w.const(s), w.const(1)])
        r = op("reciprocal", [val(b)])  # s / t
        return op("mul.Scalar", [r, w.const(s)])
    raise _refused(f"{_op_name(n)}: no tensor operand")


def _norm(w, n, which, val, op):
    x = n.args[0]
    shape = _arg(n, 1, "normalized_shape")
    weight = _arg(n, 2, "weight")
    if which == "layer_norm":
        bias, eps = _arg(n, 3, "bias"), _arg(n, 4, "eps", 1e-5)
    else:
        bias, eps = None, _arg(n, 3, "eps")
    shape = [shape] if isinstance(shape, int) else list(shape)
    opt = [val(weight) if weight is not None else w.const(None)]
    if which == "layer_norm":
        opt.append(val(bias) if bias is not None else w.const(None))
    if eps is not None and isinstance(eps, fx.Node):
        raise _refused(f"{_op_name(n)}: eps is not a constant")
    e = w.const(float(eps)) if eps is not None else w.const(None)
    extra = [w.const(True)] if which == "layer_norm" else []
    return op(which, [val(x), w.int_list(shape)] + opt + [e] + extra)


def _mm_meta(a, b):
    return torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device="meta")


def _is_transpose2d(n, metas) -> bool:
    if n.op == "call_function" and n.target in (torch.t, torch.ops.aten.numpy_T.default,
                                                torch.ops.aten.numpy_T):
        return True
    if n.op == "call_method" and n.target == "t":
        return True
    if n.op == "call_function" and n.target is getattr and n.args[1] in ("T", "mT"):
        m = metas.get(n.args[0])
        return isinstance(m, torch.Tensor) and m.dim() == 2
    return False


def _split(w, n, which, val, types):
    v = _ev(n)
    x = n.args[0]
    arg = _arg(n, 1, "chunks" if which == "chunk" else "split_size_or_sections")
    dim = _arg(n, 2, "dim", 0)
    if not isinstance(arg, int) or not isinstance(dim, int):
        raise _refused(f"{_op_name(n)}: only an int {which} along a constant dim is written")
    lst = w.fresh()
    aten = "chunk" if which == "chunk" else "split.Tensor"
    w.emit(f"{lst} = torch.aten.{aten} {val(x)}, {w.const(arg)}, {w.const(dim)} : "
           f"{types[val(x)]}, !torch.int, !torch.int -> !torch.list<vtensor>")
    parts = [w.fresh() for _ in v]
    pts = [tensor_type(t) for t in v]
    w.emit(f"{', '.join(parts)} = torch.prim.ListUnpack {lst} : !torch.list<vtensor> -> {', '.join(pts)}")
    for p, t in zip(parts, pts):
        types[p] = t
    return parts
