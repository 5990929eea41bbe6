"""`torch.compile(model, backend="te_mlir")`: TransformerEngine-style modules of a Dynamo
graph run as te-mlir libraries, the rest of the graph by Inductor.

How it works (docs/torch-compile.md has the long form):

1. Dynamo hands the backend its FX graph (parameters are placeholders).
2. The matcher finds candidate regions: a norm (F.layer_norm, F.rms_norm, or a
   hand-written chain around an rsqrt: HF's RMSNorm, T5's, Gemma's, Cohere's LayerNorm)
   feeding linears (F.linear, or GPT-2's Conv1D: view -> addmm -> view), optionally
   followed by a pointwise chain (gated or not) and one more linear.
3. Each candidate is cut out as a small GraphModule (inputs: the norm's input and the
   parameters; outputs: what the rest of the graph reads), exported by torch-mlir's FX
   importer (parameters as function arguments, the graph's dynamic dims as `?`), and
   compiled by `te-compile --train` (te_mlir.compile, cached on disk). te-compile
   raises a module only when every op of it is a TransformerEngine module: it is the
   judge. A refused region stays in the graph, with te-compile's message recorded.
4. Each accepted region is replaced by one call_function node calling the library's
   function (te_mlir.torch: custom ops with registered autograd: <fn>_fwd / <fn>_bwd).
5. The rewritten graph goes to Inductor's compile_fx (its aot_autograd traces through
   the custom ops). No graph breaks are introduced.

Options: torch.compile(..., options={"recipe": "bf16", "checkpoint": False,
"verbose": False, "fallback": "inductor", "min_hidden": 0}) or configure(...).
The report of the last compilation: last_report(); all of them: reports().
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import operator
import os
import pathlib
import threading
import time
import warnings
from typing import Any, Callable, Optional

import torch
import torch.fx as fx
import torch.nn.functional as F

log = logging.getLogger("te_mlir.backend")

# --------------------------------------------------------------------------------------
# Options and reports
# --------------------------------------------------------------------------------------

_DEFAULTS = {
    "recipe": "bf16",        # te-compile --recipe
    "checkpoint": False,     # te-compile --checkpoint
    "verbose": False,        # print the report of every compilation
    "mlp": True,             # try norm + linear + act + linear as one LayerNormMLP
    "split_mlp": True,       # when an MLP region is refused, try its norm + FC1 alone
    "target": "auto",        # te-compile --target
    "extra_args": (),        # more te-compile arguments
    "cache_dir": None,       # te_mlir.compile's cache
    "inductor": True,        # compile the rewritten graph with Inductor (False: run it eagerly, for debugging)
}
_config = dict(_DEFAULTS)
_reports: list["Report"] = []
_lock = threading.Lock()


def configure(**kw) -> dict:
    """Set backend defaults (recipe, checkpoint, verbose, mlp, split_mlp, target,
    extra_args, cache_dir, inductor). Returns the new configuration."""
    for k in kw:
        if k not in _DEFAULTS:
            raise ValueError(f"te_mlir backend: unknown option {k!r} (known: {', '.join(_DEFAULTS)})")
    _config.update(kw)
    return dict(_config)


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

    def describe(self) -> str:
        s = f"{self.kind} ({self.norm}) at {self.where or self.root.name}"
        if self.status == "taken":
            return s + f": taken ({len(self.nodes)} ops -> {self.name})"
        return s + f": refused: {self.reason}"


@dataclasses.dataclass
class Report:
    regions: list = dataclasses.field(default_factory=list)
    graph_nodes: int = 0
    dynamic_dims: int = 0
    seconds: float = 0.0
    fallback: str = ""              # why the whole graph went to Inductor, if it did

    @property
    def taken(self):
        """Every region replaced by a te-mlir function (splits of refused MLPs included)."""
        return [r for r in self.regions if r.status == "taken"]

    @property
    def refused(self):
        return [r for r in self.regions if r.status == "refused"]

    @property
    def candidates(self):
        """The blocks found (not counting the norm + FC1 splits of refused MLPs)."""
        return [r for r in self.regions if r.split_of is None]

    @property
    def blocks_taken(self):
        """Candidates taken whole."""
        return [r for r in self.candidates if r.status == "taken"]

    @property
    def blocks_split(self):
        """Refused MLP candidates whose norm + FC1 was taken as a LayerNormLinear."""
        return [r for r in self.candidates if r.status == "refused" and
                any(s.split_of is r and s.status == "taken" for s in self.regions)]

    def summary(self) -> str:
        split = f", {len(self.blocks_split)} split (norm + FC1 taken)" if self.blocks_split else ""
        lines = [f"te_mlir: {len(self.blocks_taken)} of {len(self.candidates)} candidate blocks taken{split} "
                 f"({self.graph_nodes} graph nodes, {self.dynamic_dims} dynamic input dims, "
                 f"{self.seconds:.1f} s)"]
        if self.fallback:
            lines.append(f"  whole graph to Inductor: {self.fallback}")
        for r in self.regions:
            lines.append(("    " if r.split_of is not None else "  ") + r.describe())
        return "\n".join(lines)

    def __str__(self):
        return self.summary()


def last_report() -> Optional[Report]:
    """The report of the most recent graph compiled by the backend (None before any)."""
    return _reports[-1] if _reports else None


def reports() -> list:
    """The reports of every graph compiled by the backend in this process."""
    return list(_reports)


def clear_reports() -> None:
    _reports.clear()


class Refused(Exception):
    pass


# --------------------------------------------------------------------------------------
# Node classification
# --------------------------------------------------------------------------------------

_LINEAR_FNS = {torch._C._nn.linear, F.linear}
_ADDMM_FNS = {torch.addmm}
_LAYER_NORM_FNS = {F.layer_norm, torch.layer_norm}
_RMS_NORM_FNS = {getattr(F, "rms_norm", None), getattr(torch, "rms_norm", None)} - {None}
_RSQRT = {torch.rsqrt}
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
} | _LAYER_NORM_FNS | _RMS_NORM_FNS


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
    if n.op == "call_function" and (n.target in _LAYER_NORM_FNS or n.target in _RMS_NORM_FNS):
        a = n.args[0]
        # OLMo: F.layer_norm(x.to(float32), ...).to(dtype): the upcast is the norm's
        while isinstance(a, fx.Node) and a.op == "call_method" and a.target in _CAST_METHODS:
            a = a.args[0]
        return ("layer_norm" if n.target in _LAYER_NORM_FNS else "rms_norm"), a
    is_rsqrt = (n.op == "call_function" and n.target in _RSQRT) or (n.op == "call_method" and n.target == "rsqrt")
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


# --------------------------------------------------------------------------------------
# Cutting a region out: a GraphModule over (x, *params)
# --------------------------------------------------------------------------------------


def _sym_expr(v):
    return v.node.expr if isinstance(v, (torch.SymInt, torch.SymFloat)) else None


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
            # a scalar from .item() of a scalar-tensor input (Dynamo's dynamic floats):
            # baked with its current value (HF norms' eps)
            if a.op == "call_method" and a.target == "item" and a.args[0].op == "placeholder":
                val = example_inputs[ph_index[a.args[0]]]
                env[a] = float(val.item()) if isinstance(val, torch.Tensor) else float(val)
                return env[a]
            raise Refused(f"uses the scalar {a.name}, computed outside the region")
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


def export_region(mod: fx.GraphModule, ext: list, dyn: dict, name: str, outputs=None) -> str:
    """torch-mlir text of the region (func @name, x and the parameters as arguments).
    With `outputs` (the region's output nodes), the region module is first run on the
    samples and each result's dtype and rank must be the graph's (an autocast region,
    whose dtypes come from the autocast state, is refused here)."""
    try:
        from torch_mlir import fx as tmfx
    except ImportError as e:  # checked earlier; kept for direct callers
        raise Refused(f"torch_mlir is not installed ({e})")
    from torch.export import Dim

    args = [_sample(_ev(ext[0]), dyn)] + [_sample(_ev(p), {}) for p in ext[1:]]
    if outputs is not None:
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


class _Wrap(torch.nn.Module):
    def __init__(self, gm):
        super().__init__()
        self.gm = gm

    def forward(self, *args):
        return self.gm(*args)


# --------------------------------------------------------------------------------------
# Compiling a region, loading its function
# --------------------------------------------------------------------------------------

_function_override = None  # tests of the graph surgery alone: region module -> callable
_refused_cache: dict = {}   # sha256 of the export + options -> te-compile's message
_loaded: dict = {}          # library path -> te_mlir.torch ops namespace


def _te_compile(text: str, opts: dict) -> pathlib.Path:
    import te_mlir

    key = hashlib.sha256((text + repr(sorted((k, str(v)) for k, v in opts.items()))).encode()).hexdigest()
    if key in _refused_cache:
        raise Refused(_refused_cache[key])
    try:
        return te_mlir.compile(text, recipe=opts["recipe"], train=True, checkpoint=opts["checkpoint"],
                               target=opts["target"], extra_args=tuple(opts["extra_args"]),
                               cache_dir=opts["cache_dir"])
    except Exception as e:  # TeMlirError: te-compile's own message
        msg = _te_compile_reason(str(e))
        _refused_cache[key] = msg
        raise Refused(msg)


def _te_compile_reason(err: str) -> str:
    """te-compile's first error line, without the scratch path."""
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    if not lines:
        return err.strip().splitlines()[-1] if err.strip() else "te-compile failed"
    ln = lines[0]
    i = ln.find("error: ")
    ln = ln[i + len("error: "):] if i >= 0 else ln
    for pre in ("te-compile: ", "te-import-torch: "):
        if ln.startswith(pre):
            ln = ln[len(pre):]
    # drop te-compile's advice about --partition: the backend partitions itself
    k = ln.find("; --partition")
    if k >= 0:
        ln = ln[:k]
    return ln


def _load_function(lib_path: pathlib.Path, name: str) -> Callable:
    """The library's autograd function `name` (te_mlir.torch.load(lib).function(name))."""
    from te_mlir import torch as tet

    key = str(lib_path)
    if key not in _loaded:
        _loaded[key] = tet.load(str(lib_path))
    return _loaded[key].function(name)


# --------------------------------------------------------------------------------------
# The backend
# --------------------------------------------------------------------------------------


def _options(options: Optional[dict]) -> dict:
    opts = dict(_config)
    for k, v in (options or {}).items():
        if k not in _DEFAULTS:
            raise ValueError(f"te_mlir backend: unknown option {k!r} (known: {', '.join(_DEFAULTS)})")
        opts[k] = v
    return opts


def _torch_mlir_missing() -> Optional[str]:
    try:
        import torch_mlir.fx  # noqa: F401
    except Exception as e:  # noqa: BLE001
        return f"torch_mlir is not importable ({type(e).__name__}: {e})"
    return None


def _inductor(gm, example_inputs, opts):
    if not opts["inductor"]:
        return gm.forward
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs)


def _replace(gm: fx.GraphModule, region: Region, ext: list, fn: Callable) -> None:
    g = gm.graph
    first = region.nodes[0]
    order = {n: i for i, n in enumerate(g.nodes)}
    for a in ext:
        # a get_attr weight defined after the region starts (inline_inbuilt_nn_modules
        # off): get_attr has no inputs, so it can move up
        if order[a] > order[first] and a.op == "get_attr":
            first.prepend(a)
        elif order[a] > order[first]:
            raise Refused(f"{a.name} is defined after the region starts")
    with g.inserting_before(first):
        call = g.call_function(fn, tuple(ext))
        outs = []
        for i, o in enumerate(region.outputs):
            gi = g.call_function(operator.getitem, (call, i))
            gi.meta.update({k: v for k, v in o.meta.items() if k in ("example_value", "val", "stack_trace",
                                                                     "nn_module_stack", "source_fn_stack")})
            outs.append(gi)
    call.meta["stack_trace"] = first.meta.get("stack_trace")
    for o, gi in zip(region.outputs, outs):
        o.replace_all_uses_with(gi)
    for n in reversed(region.nodes):
        if not n.users:
            g.erase_node(n)
    leftover = [n for n in region.nodes if n.graph is g and n.users]
    if leftover:  # cannot happen for a closed region; be loud if it does
        raise RuntimeError(f"te_mlir backend: region nodes still used: {[n.name for n in leftover]}")


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


def _export_cached(mod, ext, dyn, name, outputs, opts) -> str:
    """export_region, cached in this process and on disk (<te_mlir cache>/exports/), keyed
    by the region graph (its ops and their arguments, casts' dtypes included: what the
    region computes), the argument shapes and dtypes and the dynamic dims, not by
    the torch version: an export of the same computation is a valid library source under
    any torch. Without torch_mlir, a region exported before (say on another machine with
    the same cache, as the H200's, which has no torch-mlir) still compiles."""
    spec = [(str(_ev(a).dtype), _shape_key(_ev(a)) if i else tuple(
        "?" if d in dyn else int(_concrete(s)) for d, s in enumerate(_ev(a).shape)))
        for i, a in enumerate(ext)]
    key = hashlib.sha256(repr((_canonical(mod), spec, sorted(dyn), name)).encode()).hexdigest()
    if key in _exports:
        return _exports[key]
    import importlib

    d = pathlib.Path(importlib.import_module("te_mlir.compile").cache_dir(opts["cache_dir"])) / "exports"
    f = d / f"{name}-{key[:24]}.mlir"
    if f.exists():
        _exports[key] = f.read_text()
        return _exports[key]
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


def _as_tuple_fn(fn: Callable, n_out: int, label: str = "te_mlir_region") -> Callable:
    """fn returning a tensor or a tuple -> a function returning a tuple."""
    def call(*args):
        r = fn(*args)
        return tuple(r) if isinstance(r, (tuple, list)) else (r,)
    call.__name__ = label
    call.__qualname__ = call.__name__
    return call


def te_mlir_backend(gm: fx.GraphModule, example_inputs: list, options: Optional[dict] = None, **kw):
    """The Dynamo backend (registered as "te_mlir")."""
    kw.pop("mode", None)  # torch.compile(mode=...) is Inductor's; the backend has one mode
    opts = _options({**(options or {}), **kw})
    t0 = time.time()
    report = Report(graph_nodes=len(gm.graph.nodes))
    with _lock:
        _reports.append(report)
    missing = _torch_mlir_missing()
    opts["_no_torch_mlir"] = missing
    regions = find_regions(gm, mlp=opts["mlp"])
    report.regions = regions
    extra = []
    for i, r in enumerate(regions):
        _take(gm, r, example_inputs, opts, extra)
    report.regions = regions + extra
    if missing:
        n = len(report.taken)
        report.fallback = (missing + (f": {n} region(s) from cached exports, the rest of the graph on Inductor"
                                      if n else ": no region can be exported; the whole graph runs on Inductor"))
        warnings.warn("te_mlir backend: " + report.fallback, RuntimeWarning, stacklevel=2)
    gm.graph.lint()
    gm.recompile()
    report.seconds = time.time() - t0
    report.dynamic_dims = sum(1 for v in example_inputs if isinstance(v, torch.SymInt))
    if opts["verbose"]:
        print(report.summary())
    log.info("%s", report.summary())
    return _inductor(gm, example_inputs, opts)


def _take(gm, r: Region, example_inputs, opts, extra: list) -> None:
    t = time.time()
    try:
        mod, ext, dyn = build_region_module(gm, r, example_inputs)
        r.name = r.kind
        text = _export_cached(mod, ext, dyn, r.name, r.outputs, opts)
        lib = _te_compile(text, opts)
        r.library = str(lib)
        fn = _function_override(mod) if _function_override else _load_function(lib, r.name)
        if getattr(fn, "state_specs", None) or getattr(fn, "bwd_state_specs", None):
            raise Refused(f"recipe {opts['recipe']}: the library's function takes recipe state "
                          "(te.state), which a region of the graph does not carry (use the "
                          "te_mlir.torch modules for delayed scaling)")
        ns = getattr(getattr(fn, "ops", None), "namespace", "te_mlir")
        _replace(gm, r, ext, _as_tuple_fn(fn, len(r.outputs), f"{ns}_{r.name}"))
        r.status = "taken"
    except Refused as e:
        r.status, r.reason = "refused", str(e)
        if r.kind == "layernorm_mlp" and opts["split_mlp"]:
            sub = _split_mlp(gm, r)
            if sub is not None:
                extra.append(sub)
                _take(gm, sub, example_inputs, opts, extra)
    finally:
        r.compile_s = time.time() - t


def _split_mlp(gm, r: Region) -> Optional[Region]:
    """The norm + FC1 of a refused MLP region, as a LayerNormLinear region."""
    regions = find_regions(gm, mlp=False)
    for s in regions:
        if s.root is r.root and set(s.nodes) <= set(r.nodes):
            s.where = _where(s)
            s.split_of = r
            return s
    return None


def _register():
    try:
        from torch._dynamo import register_backend
        from torch._dynamo.backends.registry import _BACKENDS

        if "te_mlir" not in _BACKENDS:
            register_backend(name="te_mlir")(te_mlir_backend)
    except Exception as e:  # noqa: BLE001
        warnings.warn(f"te_mlir backend: could not register with Dynamo: {e}", RuntimeWarning)


_register()
