"""`torch.compile(model, backend="te_mlir")`: TransformerEngine-style modules of a Dynamo
graph run as te-mlir libraries, the rest of the graph by Inductor.

How it works (docs/torch-compile.md has the long form); this module is the backend
proper (options, reports, compiling regions, rewriting the graph), beside matcher.py
(step 2) and region_export.py (step 3):

1. Dynamo hands the backend its FX graph (parameters are placeholders).
2. The matcher finds candidate regions: a norm (F.layer_norm, F.rms_norm, or a
   hand-written chain around an rsqrt: HF's RMSNorm, T5's, Gemma's, Cohere's LayerNorm)
   feeding linears (F.linear, or GPT-2's Conv1D: view -> addmm -> view), optionally
   followed by a pointwise chain (gated or not) and one more linear.
3. Each candidate is cut out as a small GraphModule (inputs: the norm's input and the
   parameters; outputs: what the rest of the graph reads), written as torch-dialect text
   by fx_to_torch from the FX nodes and their metadata (or, with export="torch-mlir",
   by torch-mlir's FX importer; parameters as function arguments, the graph's dynamic
   dims as `?`), and
   compiled by `te-compile --train` (te_mlir.compile, cached on disk). te-compile
   raises a module only when every op of it is a TransformerEngine module: it is the
   judge. A refused region stays in the graph, with te-compile's message recorded.
4. Each accepted region is replaced by one call_function node calling the library's
   function (te_mlir.torch: custom ops with registered autograd: <fn>_fwd / <fn>_bwd).
5. The rewritten graph goes to Inductor's compile_fx (its aot_autograd traces through
   the custom ops). No graph breaks are introduced.

Options: torch.compile(..., options={"recipe": "bf16", "checkpoint": False,
"verbose": False, ...}) or configure(...) (_DEFAULTS lists them).
The report of the last compilation: last_report(); all of them: reports().
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import operator
import pathlib
import threading
import time
import warnings
from typing import Callable, Optional

import torch
import torch.fx as fx

from .matcher import Region, _where, find_regions
from .region_export import EXPORTERS, Refused, _export_cached, _exports, build_region_module  # noqa: F401

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
    "export": "fx",          # how regions become torch-dialect text: "fx" (fx_to_torch) or "torch-mlir"
}
_config = dict(_DEFAULTS)
_reports: list["Report"] = []
_lock = threading.Lock()


def configure(**kw) -> dict:
    """Set backend defaults (recipe, checkpoint, verbose, mlp, split_mlp, target,
    extra_args, cache_dir, inductor, export). Returns the new configuration."""
    for k in kw:
        if k not in _DEFAULTS:
            raise ValueError(f"te_mlir backend: unknown option {k!r} (known: {', '.join(_DEFAULTS)})")
    _config.update(kw)
    return dict(_config)



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


def _replace(gm: fx.GraphModule, region: Region, ext: list, fn: Callable,
             state: tuple = ((), ())) -> None:
    """Region -> one call of `fn` on `ext`. ``state``: the names of the graph module's
    recipe-state buffers (forward, backward; _state_buffers), passed after `ext`; the
    call returns the new forward state after the region's outputs, copied into its
    buffers (a mutation of graph inputs AOTAutograd keeps); the backward updates its
    state in place."""
    g = gm.graph
    fwd_state, bwd_state = state
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
        fwd_nodes = [g.get_attr(n) for n in fwd_state]
        bwd_nodes = [g.get_attr(n) for n in bwd_state]
        call = g.call_function(fn, tuple(ext) + tuple(fwd_nodes) + tuple(bwd_nodes))
        outs = []
        for i, o in enumerate(region.outputs):
            gi = g.call_function(operator.getitem, (call, i))
            gi.meta.update({k: v for k, v in o.meta.items() if k in ("example_value", "val", "stack_trace",
                                                                     "nn_module_stack", "source_fn_stack")})
            outs.append(gi)
        for k, buf in enumerate(fwd_nodes):
            new = g.call_function(operator.getitem, (call, len(region.outputs) + k))
            g.call_function(torch.ops.aten.copy_.default, (buf, new))
    call.meta["stack_trace"] = first.meta.get("stack_trace")
    for o, gi in zip(region.outputs, outs):
        o.replace_all_uses_with(gi)
    for n in reversed(region.nodes):
        if not n.users:
            g.erase_node(n)
    leftover = [n for n in region.nodes if n.graph is g and n.users]
    if leftover:  # cannot happen for a closed region; be loud if it does
        raise RuntimeError(f"te_mlir backend: region nodes still used: {[n.name for n in leftover]}")



def _as_tuple_fn(fn: Callable, n_out: int, label: str = "te_mlir_region",
                 n_bwd_state: int = 0) -> Callable:
    """fn returning a tensor or a tuple -> a function returning a tuple. With
    ``n_bwd_state``, the last that many arguments are the backward recipe state
    (TeFunction.call's bwd_state, updated in place by the backward)."""
    if n_bwd_state:
        def call(*args):
            outs, _ = fn.call(*args[:-n_bwd_state], bwd_state=list(args[-n_bwd_state:]))
            return tuple(outs)
    else:
        def call(*args):
            r = fn(*args)
            return tuple(r) if isinstance(r, (tuple, list)) else (r,)
    call.__name__ = label
    call.__qualname__ = call.__name__
    return call


def _state_buffers(gm: fx.GraphModule, fn, ext: list, label: str) -> tuple:
    """The recipe state of a region's function (fp8-delayed: amax histories and scales,
    forward and backward), made buffers of the graph module at TE's initial values
    (histories 0, scales 1) on the region's device: (forward names, backward names).
    They live as long as the compiled graph; each step's forward and backward update
    them as a module's own state buffers are updated."""
    dev = torch.device("cpu")
    for a in ext:
        v = a.meta.get("example_value", a.meta.get("val"))
        if isinstance(v, torch.Tensor):
            dev = v.device
            break
    names = ([], [])
    for which, specs in ((0, fn.state_specs), (1, fn.bwd_state_specs)):
        for spec, t in zip(specs, fn.initial_state(device=dev, backward=bool(which))):
            # "<op>_<k>.<kind>": the region's label once, the op only when the region
            # holds more than its first (LLaMA's q/k/v: one op per projection)
            op, _, kind = spec.roles["te.state"].rpartition(".")
            op = "" if op in ("", f"{label}_0") else f"_{op.replace('.', '_')}"
            name = f"_te_mlir_state_{label}{op}_{kind}"
            k = 0
            while hasattr(gm, name + (f"_{k}" if k else "")):
                k += 1
            name += f"_{k}" if k else ""
            gm.register_buffer(name, t)
            names[which].append(name)
            # a Dynamo graph names the source of every parameter and buffer AOTAutograd
            # lifts (guards, CUDA graphs' static inputs): these are the backend's own
            if hasattr(gm, "_param_name_to_source"):
                from torch._dynamo.source import ConstantSource
                gm._param_name_to_source[name] = ConstantSource(f"te_mlir_state:{name}")
    return tuple(names[0]), tuple(names[1])


def te_mlir_backend(gm: fx.GraphModule, example_inputs: list, options: Optional[dict] = None, **kw):
    """The Dynamo backend (registered as "te_mlir")."""
    kw.pop("mode", None)  # torch.compile(mode=...) is Inductor's; the backend has one mode
    opts = _options({**(options or {}), **kw})
    t0 = time.time()
    report = Report(graph_nodes=len(gm.graph.nodes))
    with _lock:
        _reports.append(report)
    if opts["export"] not in EXPORTERS:
        raise ValueError(f"te_mlir backend: export={opts['export']!r}; known: {', '.join(EXPORTERS)}")
    # torch-mlir is needed only when asked for
    missing = _torch_mlir_missing() if opts["export"] == "torch-mlir" else None
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
        ns = getattr(getattr(fn, "ops", None), "namespace", "te_mlir")
        state = ((), ())
        if getattr(fn, "state_specs", None) or getattr(fn, "bwd_state_specs", None):
            # fp8-delayed: the region carries its recipe state as buffers of the graph
            state = _state_buffers(gm, fn, ext, r.name)
            r.state = {n: getattr(gm, n) for n in (*state[0], *state[1])}
        _replace(gm, r, ext, _as_tuple_fn(fn, len(r.outputs), f"{ns}_{r.name}",
                                          n_bwd_state=len(state[1])), state)
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
