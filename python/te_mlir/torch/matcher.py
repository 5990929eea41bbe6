"""The te_mlir backend's matcher: candidate regions of a Dynamo FX graph, found by
pattern (no compilation). A region is a norm (F.layer_norm, F.rms_norm, or a hand-written
chain around an rsqrt) feeding linears (F.linear, GPT-2's Conv1D: view -> addmm -> view,
Falcon's x @ w.T), optionally followed by a pointwise chain (gated or not) and one more
linear: a LayerNormLinear or LayerNormMLP candidate. Whether a candidate is one is
te-compile's to judge (backend.py); the matcher only bounds it (docs/torch-compile.md).
"""

from __future__ import annotations

import dataclasses
import operator
import os
from typing import Any, Optional

import torch
import torch.fx as fx
import torch.nn.functional as F

@dataclasses.dataclass
class Region:
    kind: str                      # "layernorm_mlp" | "layernorm_linear"
    norm: str                      # the norm's spelling: layer_norm / rms_norm / rsqrt chain
    nodes: list                    # FX nodes of the region, in graph order
    root: Any                      # the norm's input node
    outputs: list                  # nodes read outside the region
    name: str = ""                 # function name in the library
    status: str = "candidate"      # "taken" | "refused"
    reason: str = ""
    library: Optional[str] = None
    compile_s: float = 0.0
    where: str = ""                # module path from the parameter names
    split_of: Optional["Region"] = None   # the refused MLP region this norm + FC1 is cut from
    state: dict = dataclasses.field(default_factory=dict)  # its recipe-state buffers by name (fp8-delayed)

    def describe(self) -> str:
        s = f"{self.kind} ({self.norm}) at {self.where or self.root.name}"
        if self.status == "taken":
            return s + f": taken ({len(self.nodes)} ops -> {self.name}" + (
                f", {len(self.state)} recipe-state buffers)" if self.state else ")")
        return s + f": refused: {self.reason}"


# --------------------------------------------------------------------------------------
# Node classification
# --------------------------------------------------------------------------------------

_LINEAR_FNS = {torch._C._nn.linear, F.linear}
_ADDMM_FNS = {torch.addmm}
# The norms, in one table: te-compile's importer recognizes them again in torch-mlir's IR
# (lib/Conversion/TorchToTE/Norm.cpp and Recompose.cpp: the aten ops and their decomposed
# forms, with weights, eps, zero-centered gamma and casts) and judges them. The matcher
# still needs them on the FX graph: a region is cut out and exported before te-compile
# sees anything, and only a norm says where a region starts (its input is the region's
# x). So it recognizes only what bounds a region: a norm call, or the core of a
# hand-written one (HF's RMSNorm, T5's, Gemma's, Cohere's LayerNorm), an rsqrt of
# mean(x^2) [+ eps], centered (x - mean(x)) for a LayerNorm; the pointwise rest of the
# chain (weights, eps, casts) joins the region unexamined, for te-compile to take or
# refuse.
_NORM_CALLS = {fn: spelling for spelling, fns in (
    ("layer_norm", (F.layer_norm, torch.layer_norm)),
    ("rms_norm", (getattr(F, "rms_norm", None), getattr(torch, "rms_norm", None))))
    for fn in fns if fn is not None}
_RSQRT_FN, _RSQRT_METHOD = torch.rsqrt, "rsqrt"
_VIEW_METHODS = {"view", "reshape", "contiguous"}
_CAST_METHODS = {"to", "float", "type_as", "type", "bfloat16", "half"}
_POINTWISE_METHODS = {
    "to", "float", "type_as", "type", "bfloat16", "half", "pow", "mean", "rsqrt", "sqrt",
    "add", "sub", "mul", "div", "neg", "sigmoid", "tanh", "exp", "relu", "clamp", "abs",
    "square", "var", "reciprocal", "erf", "size", "item", "contiguous", "view", "reshape",
    "__getitem__", "expand_as", "chunk", "split",
}
_POINTWISE_FNS = {
    operator.add, operator.sub, operator.mul, operator.truediv, operator.neg, operator.pow,
    operator.getitem, torch.add, torch.sub, torch.mul, torch.div, torch.pow, torch.mean,
    torch.rsqrt, torch.sqrt, torch.tanh, torch.sigmoid, torch.exp, torch.erf, torch.relu,
    torch.square, torch.var, torch.reciprocal, torch.neg, torch.abs, torch.clamp,
    torch.nn.functional.gelu, torch.nn.functional.silu, torch.nn.functional.relu,
    torch.nn.functional.sigmoid, torch.nn.functional.tanh, torch.nn.functional.mish,
    torch.nn.functional.leaky_relu, torch.nn.functional.elu, torch.nn.functional.softplus,
    torch.nn.functional.hardswish, torch.nn.functional.hardsigmoid,
    torch.nn.functional.dropout, torch.Size, torch.sym_float, torch.sym_int,
    torch.chunk, torch.split,  # a fused gate_up projection split in halves (Phi-3)
} | set(_NORM_CALLS)


def _is_pointwise(n: fx.Node) -> bool:
    if n.op == "call_function":
        return n.target in _POINTWISE_FNS
    if n.op == "call_method":
        return n.target in _POINTWISE_METHODS
    return False


def _is_leaf(n) -> bool:
    """A parameter-like value: a placeholder or a get_attr."""
    return isinstance(n, fx.Node) and n.op in ("placeholder", "get_attr")


def _ev(n):
    return n.meta.get("example_value") if isinstance(n, fx.Node) else None


def _is_tensor_node(n) -> bool:
    return isinstance(_ev(n), torch.Tensor)


def _is_sym_node(n) -> bool:
    v = _ev(n)
    return isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float))


def _node_inputs(n: fx.Node) -> list:
    return list(n.all_input_nodes)


# --------------------------------------------------------------------------------------
# The matcher
# --------------------------------------------------------------------------------------


@dataclasses.dataclass
class _LinearUnit:
    nodes: list      # [view?, linear|addmm, view?]
    input: fx.Node   # the activation it reads (before the view)
    output: fx.Node  # what the rest reads
    weight: fx.Node


def _linear_units(gm: fx.GraphModule) -> list:
    units = []
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        if n.target in _LINEAR_FNS:
            w = n.args[1] if len(n.args) > 1 else n.kwargs.get("weight")
            if _is_leaf(w):
                units.append(_LinearUnit([n], n.args[0], n, w))
        elif n.target in _ADDMM_FNS and len(n.args) >= 3:
            bias, inp, w = n.args[:3]
            if not (_is_leaf(w) and _is_leaf(bias)) or n.kwargs:
                continue
            nodes, src, out = [n], inp, n
            if isinstance(inp, fx.Node) and inp.op == "call_method" and inp.target in ("view", "reshape") \
                    and len(inp.users) == 1:
                nodes.insert(0, inp)
                src = inp.args[0]
            if len(n.users) == 1:
                u = next(iter(n.users))
                if u.op == "call_method" and u.target in ("view", "reshape"):
                    nodes.append(u)
                    out = u
            units.append(_LinearUnit(nodes, src, out, w))
        elif n.target in (operator.matmul, torch.matmul) and len(n.args) == 2:
            # x @ w.T [+ b] (Falcon's FalconLinear)
            t = n.args[1]
            if not (isinstance(t, fx.Node) and len(t.users) == 1 and _is_transpose(t) and _is_leaf(t.args[0])):
                continue
            nodes, out = [t, n], n
            if len(n.users) == 1:
                u = next(iter(n.users))
                if _is_add(u) and len(u.args) == 2 and u.args[0] is n and _is_leaf(u.args[1]) and \
                        isinstance(_ev(u.args[1]), torch.Tensor) and _ev(u.args[1]).dim() == 1:
                    nodes.append(u)
                    out = u
            units.append(_LinearUnit(nodes, n.args[0], out, t.args[0]))
    return units


def _is_transpose(n: fx.Node) -> bool:
    if n.op == "call_function" and n.target in (torch.ops.aten.numpy_T.default, torch.ops.aten.numpy_T, torch.t):
        return True
    if n.op == "call_method" and n.target == "t":
        return True
    if n.op == "call_function" and n.target is getattr and n.args[1] in ("T", "mT"):
        return True
    if ((n.op == "call_method" and n.target == "transpose") or
            (n.op == "call_function" and n.target is torch.transpose)) and len(n.args) == 3:
        return set(n.args[1:]) in ({0, 1}, {-1, -2}, {0, -1}, {1, -2})
    return False


def _norm_core_root(n: fx.Node):
    """(spelling, root) when n is a norm core: F.layer_norm / F.rms_norm (root: its
    input) or an rsqrt of mean(x^2) [+ eps] (root: x before casts / the mean
    subtraction). None otherwise."""
    if n.op == "call_function" and n.target in _NORM_CALLS:
        a = n.args[0]
        # OLMo: F.layer_norm(x.to(float32), ...).to(dtype): the upcast is the norm's
        while isinstance(a, fx.Node) and a.op == "call_method" and a.target in _CAST_METHODS:
            a = a.args[0]
        return _NORM_CALLS[n.target], a
    is_rsqrt = (n.op == "call_function" and n.target is _RSQRT_FN) or \
        (n.op == "call_method" and n.target == _RSQRT_METHOD)
    if not is_rsqrt:
        return None
    a = n.args[0]
    # strip + eps
    if isinstance(a, fx.Node) and _is_add(a):
        t = [x for x in a.args[:2] if _is_tensor_node(x)]
        if len(t) != 1:
            return None
        a = t[0]
    if not (isinstance(a, fx.Node) and _is_mean(a)):
        return None
    a = a.args[0]
    # pow(x, 2) or x * x
    if isinstance(a, fx.Node) and _is_pow2(a):
        a = a.args[0]
    elif isinstance(a, fx.Node) and _is_mul(a) and a.args[0] is a.args[1]:
        a = a.args[0]
    else:
        return None
    spelling = "rmsnorm chain"
    # x - mean(x): a hand-written LayerNorm
    if isinstance(a, fx.Node) and _is_sub(a) and isinstance(a.args[1], fx.Node) and _is_mean(a.args[1]) \
            and a.args[1].args[0] is a.args[0]:
        a = a.args[0]
        spelling = "layernorm chain"
    while isinstance(a, fx.Node) and a.op == "call_method" and a.target in _CAST_METHODS:
        a = a.args[0]
    return spelling, a


def _is_add(n):
    return (n.op == "call_function" and n.target in (operator.add, torch.add)) or \
        (n.op == "call_method" and n.target == "add")


def _is_sub(n):
    return (n.op == "call_function" and n.target in (operator.sub, torch.sub)) or \
        (n.op == "call_method" and n.target == "sub")


def _is_mul(n):
    return (n.op == "call_function" and n.target in (operator.mul, torch.mul)) or \
        (n.op == "call_method" and n.target == "mul")


def _is_mean(n):
    return (n.op == "call_function" and n.target == torch.mean) or (n.op == "call_method" and n.target == "mean")


def _is_pow2(n):
    ok = (n.op == "call_function" and n.target in (operator.pow, torch.pow)) or \
        (n.op == "call_method" and n.target == "pow")
    return ok and len(n.args) > 1 and n.args[1] == 2


def _between(root, out: fx.Node, order: dict, limit: int = 200):
    """The nodes on paths from root (excluded) to out (included), walking back from out
    through pointwise nodes; leaves (placeholders/get_attr), symbolic scalars and
    constants are the region's other inputs. None when a path leaves the pointwise
    world (a non-pointwise node is reached without passing root) or is too long."""
    roots = set(root) if isinstance(root, (list, tuple, set)) else {root}
    first = min(order[r] for r in roots)
    seen, stack, inside = set(), [out], []
    while stack:
        n = stack.pop()
        if n in seen or n in roots:
            continue
        seen.add(n)
        if _is_leaf(n):
            continue
        if n is not out and _is_sym_node(n) and not _is_tensor_node(n):
            # sizes and scalars computed elsewhere (e.g. eps.item()): inputs
            continue
        if not _is_pointwise(n):
            return None
        if order[n] < first:
            return None
        inside.append(n)
        if len(inside) > limit:
            return None
        stack.extend(_node_inputs(n))
    return sorted(inside, key=order.__getitem__)


def _closed(nodes: list, outputs: set, extra_users: set = frozenset()) -> bool:
    """Every node's users are in the region, except those of the outputs."""
    s = set(nodes) | set(extra_users)
    for n in nodes:
        if n in outputs:
            continue
        if any(u not in s for u in n.users):
            return False
    return True


def find_regions(gm: fx.GraphModule, mlp: bool = True) -> list:
    """Candidate regions of a Dynamo graph, in graph order; every node in at most one."""
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    units = _linear_units(gm)
    by_input: dict = {}
    for u in units:
        by_input.setdefault(u.input, []).append(u)
    unit_of = {u.output: u for u in units}
    used: set = set()
    regions = []
    for norm_out, lin in sorted(by_input.items(), key=lambda kv: order[kv[0]]):
        if not isinstance(norm_out, fx.Node) or norm_out in used:
            continue
        # the nearest norm core behind norm_out
        found = None
        seen, stack = set(), [norm_out]
        while stack and found is None:
            n = stack.pop()
            if n in seen or not isinstance(n, fx.Node) or _is_leaf(n):
                continue
            seen.add(n)
            core = _norm_core_root(n)
            if core is not None:
                spelling, root = core
                body = _between(root, norm_out, order)
                if body is not None and n in body:
                    found = (spelling, root, body)
                    break
            if _is_pointwise(n) and len(seen) < 60:
                stack.extend(x for x in _node_inputs(n) if _is_tensor_node(x))
        if found is None:
            continue
        spelling, root, body = found
        lin_nodes = [x for u in lin for x in u.nodes]
        lin_outs = [u.output for u in lin]
        # the norm's intermediates must be used only inside the norm (its output may be
        # read by others too: then it is an output of the region)
        if not _closed(body, {norm_out}, set(lin_nodes)):
            continue
        if set(body) & used:
            continue
        region = None
        if mlp:
            region = _grow_mlp(root, spelling, body, norm_out, lin, unit_of, order)
        if region is None:
            nodes = sorted(set(body) | set(lin_nodes), key=order.__getitem__)
            outs = list(lin_outs)
            if any(u not in set(nodes) for u in norm_out.users):
                outs.append(norm_out)
            region = Region("layernorm_linear", spelling, nodes, root, outs)
        if set(region.nodes) & used:
            continue
        region.where = _where(region)
        used |= set(region.nodes)
        regions.append(region)
    return regions


def _next_linears(o: fx.Node) -> set:
    """The linear ops reached from o through pointwise ops."""
    cands, stack, seen = set(), [o], set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for u in n.users:
            if u.op == "call_function" and (u.target in _LINEAR_FNS or u.target in _ADDMM_FNS or
                                            u.target in (operator.matmul, torch.matmul)):
                cands.add(u)
            elif u.op == "call_method" and u.target in ("view", "reshape") and \
                    any(v.op == "call_function" and v.target in _ADDMM_FNS for v in u.users):
                cands |= {v for v in u.users if v.op == "call_function" and v.target in _ADDMM_FNS}
            elif _is_pointwise(u) and len(seen) < 60:
                stack.append(u)
    return cands


def _grow_mlp(root, spelling, body, norm_out, lin, unit_of, order):
    """norm + FC1 (or gate and up, or a fused gate_up) + pointwise + FC2, when the norm
    output feeds only linears and the pointwise chain only FC2. Other linears on the
    same norm output (a parallel block's attention projections: Falcon, Cohere) join the
    region after the MLP, in that order (te-import-torch raises them as Linears on the
    LayerNormMLP's returned norm output only when they come after it)."""
    lin_nodes = {x for l in lin for x in l.nodes}
    if any(u not in lin_nodes for u in norm_out.users):
        return None
    reach: dict = {}
    for l in lin:
        for c in _next_linears(l.output):
            u = next((x for x in unit_of.values() if c in x.nodes), None)
            if u is not None and not any(u is m for m in lin):
                reach.setdefault(id(u), (u, []))[1].append(l)
    for fc2, mlp_lin in sorted(reach.values(), key=lambda kv: (-len(kv[1]), order[kv[0].output])):
        if len(mlp_lin) > 2:
            continue
        fc1_outs = [u.output for u in mlp_lin]
        b = _between(fc1_outs, fc2.input, order)
        if b is None:
            continue
        act = set(b) - set(fc1_outs)
        if fc2.input in set(fc1_outs) and len(mlp_lin) == 1:
            continue  # no activation
        others = [l for l in lin if not any(l is m for m in mlp_lin)]
        mlp_nodes = sorted(set(body) | {x for l in mlp_lin for x in l.nodes} | act | set(fc2.nodes),
                           key=order.__getitem__)
        other_nodes = sorted({x for l in others for x in l.nodes}, key=order.__getitem__)
        nodes = mlp_nodes + other_nodes
        outputs = [fc2.output] + [l.output for l in others]
        if not _closed(nodes, set(outputs)):
            continue
        return Region("layernorm_mlp", spelling, nodes, root, outputs)
    return None


def _where(region: Region) -> str:
    """A readable module path: the common prefix of the region's parameter names."""
    names = []
    for n in region.nodes:
        for a in n.all_input_nodes:
            if a.op == "placeholder" and "_parameters_" in a.name:
                # L_self_modules_model_modules_layers_modules_0_modules_mlp_parameters_weight_
                m = a.name.split("_parameters_")[0]
                m = m.split("_modules_", 1)[1].replace("_modules_", ".") if "_modules_" in m else "(root)"
                if m not in names:
                    names.append(m)
    if not names:
        return region.root.name
    pre = os.path.commonprefix(names)
    pre = pre[:pre.rfind(".") + 1] if "." in pre else ""
    if pre:
        return pre.rstrip(".") + " (" + ", ".join(x[len(pre):] for x in names) + ")"
    return ", ".join(names)
