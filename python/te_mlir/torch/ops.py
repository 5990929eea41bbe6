"""One torch.library.custom_op per entry of a te-compile'd library, with fake impls and
autograd generated from the library's module info (docs/python.md).

    ops = te_mlir.torch.load(lib_or_path)        # OpLibrary, cached per library
    ops.op("mlp_fwd")                            # torch.ops.te_mlir_<sha12>.mlp_fwd
    f = ops.function("mlp"); y = f(x, g, b, w1, b1, w2, b2)
"""
import ctypes
import threading
import warnings
import weakref

import torch

from .. import _abi
from .._abi import TeMlirError, TeMlirWarning
from ..library import Library

__all__ = ["OpLibrary", "TeFunction", "load", "namespace_of", "kernel_info", "TORCH_DTYPES"]

TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DTYPE_NAMES = {v: k for k, v in TORCH_DTYPES.items()}

_LOADED = {}
_FAILED = {}  # namespace -> why its ops could not be registered (not retried)
_LOCK = threading.RLock()


def namespace_of(lib):
    return "te_mlir_" + lib.sha256[:12]


def load(lib_or_path, backend="auto"):
    """The OpLibrary of a Library or a library path; one per library file content (its
    sha256), so loading twice returns the same ops (a path already loaded is not
    opened again)."""
    import hashlib
    from pathlib import Path
    with _LOCK:
        if isinstance(lib_or_path, Library):
            lib = lib_or_path
            ns = namespace_of(lib)
        else:
            try:
                digest = hashlib.sha256(Path(lib_or_path).read_bytes()).hexdigest()
            except OSError as ex:
                raise TeMlirError(f"te-mlir: cannot read library {lib_or_path}: {ex}") from None
            ns = "te_mlir_" + digest[:12]
            lib = None
            if ns in _LOADED and backend == "auto":
                return _LOADED[ns]
            lib = Library(lib_or_path, backend=backend, sha256=digest)
        ops = _LOADED.get(ns)
        if ops is None:
            if ns in _FAILED:  # (its ops are partly defined: the same error, not a clash)
                raise TeMlirError(_FAILED[ns])
            try:
                ops = _LOADED[ns] = OpLibrary(lib)
            except (TeMlirError, RuntimeError) as ex:
                _FAILED[ns] = f"te-mlir: the ops of {lib.path.name} could not be registered: {ex}"
                raise TeMlirError(_FAILED[ns]) from ex
        elif ops.library.backend != lib.backend:
            raise TeMlirError(f"te-mlir: {lib.path.name} is already loaded for backend "
                              f"{ops.library.backend}; its ops ({ns}) cannot also run on "
                              f"{lib.backend} in this process")
        return ops


# --------------------------------------------------------------------------- the C++ kernels

_CPP_INTERFACE = 7  # te_torch_ops_version() this module speaks


class _CppOps:
    """libte_torch_ops.so (python/csrc): the C++ kernels of the ops, on torch's stable
    ABI. Loaded RTLD_LOCAL after the runtime (it links libte_runtime.so, matched by
    soname); ``register`` is called once per op, then calls of the op run in C++."""

    def __init__(self, path):
        L = ctypes.CDLL(str(path), mode=ctypes.RTLD_LOCAL)
        L.te_torch_ops_version.restype = ctypes.c_int32
        L.te_torch_ops_target_version.restype = ctypes.c_uint64
        L.te_torch_ops_last_error.restype = ctypes.c_char_p
        L.te_torch_ops_register.restype = ctypes.c_int32
        L.te_torch_ops_register.argtypes = [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64,
            ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int64),
            ctypes.POINTER(ctypes.c_char_p)]
        L.te_torch_ops_calls.restype = ctypes.c_int64
        L.te_torch_ops_calls.argtypes = [ctypes.c_int32]
        L.te_torch_ops_donate_next.restype = None
        L.te_torch_ops_donate_next.argtypes = [ctypes.c_int32, ctypes.c_int64,
                                               ctypes.POINTER(ctypes.c_int64)]
        L.te_torch_ops_donated.restype = ctypes.c_int64
        L.te_torch_ops_donated.argtypes = [ctypes.c_int32]
        L.te_torch_ops_arenas.restype = ctypes.c_int32
        L.te_torch_ops_arenas.argtypes = [ctypes.c_int32, ctypes.POINTER(ctypes.c_int64),
                                          ctypes.POINTER(ctypes.c_int64)]
        L.te_torch_ops_alias.restype = ctypes.c_int32
        L.te_torch_ops_alias.argtypes = [ctypes.c_int32, ctypes.c_char_p, ctypes.c_char_p]
        self.lib, self.path = L, path
        if L.te_torch_ops_version() != _CPP_INTERFACE:
            raise TeMlirError(f"{path}: interface {L.te_torch_ops_version()}, this package "
                              f"speaks {_CPP_INTERFACE} (rebuild it: scripts/build_torch_ops.sh)")
        v = L.te_torch_ops_target_version()
        self.target = (v >> 56 & 0xFF, v >> 48 & 0xFF)

    def register(self, namespace, entry):
        n = len(entry.checks)
        exprs = (ctypes.c_char_p * max(1, n))(*[
            (str(e) if isinstance(e, int) else e.text).encode() for e, _, _ in entry.checks])
        mults = (ctypes.c_int64 * max(1, n))(*[m for _, m, _ in entry.checks])
        msgs = (ctypes.c_char_p * max(1, n))(*[msg.encode() for _, _, msg in entry.checks])
        backend = _abi.BACKEND_CUDA if entry.library.backend == "cuda" else _abi.BACKEND_CPU
        slot = self.lib.te_torch_ops_register(namespace.encode(), entry.name.encode(),
                                              entry.handle, backend, n, exprs, mults, msgs)
        if slot < 0:
            raise TeMlirError(f"{namespace}::{entry.name}: "
                              + self.lib.te_torch_ops_last_error().decode(errors="replace"))
        return slot

    def alias(self, slot, namespace, name):
        """Op `namespace`::`name` (defined, same schema) runs op `slot`'s kernel too."""
        if self.lib.te_torch_ops_alias(slot, namespace.encode(), name.encode()) != 0:
            raise TeMlirError(f"{namespace}::{name}: "
                              + self.lib.te_torch_ops_last_error().decode(errors="replace"))

    def calls(self, slot):
        return self.lib.te_torch_ops_calls(slot)

    def donate_next(self, slot, args):
        """The next call of op `slot` on this thread donates arguments `args` (indices;
        empty: clears it)."""
        arr = (ctypes.c_int64 * max(1, len(args)))(*args)
        self.lib.te_torch_ops_donate_next(slot, len(args), arr)

    def arenas(self, slot):
        a, r = ctypes.c_int64(), ctypes.c_int64()
        if self.lib.te_torch_ops_arenas(slot, ctypes.byref(a), ctypes.byref(r)) != 0:
            return None
        return a.value, r.value

    def donated(self, slot):
        """The arena bytes op `slot`'s last donating call saved (0: none donated)."""
        return self.lib.te_torch_ops_donated(slot)


_CPP = None
_CPP_WHY = None  # why the C++ kernels are not used (None: not tried yet or in use)
# libte_torch_ops.so has a fixed number of kernel slots per process (its error says so);
# past them, ops get the ctypes kernel, with one warning
_CPP_FULL = "te-mlir ops in one process"
_CPP_FULL_WARNED = False


def _warn_cpp_full(why):
    global _CPP_FULL_WARNED
    if not _CPP_FULL_WARNED:
        _CPP_FULL_WARNED = True
        warnings.warn(f"te_mlir.torch: {why}; the ops of further libraries run through the "
                      "slower ctypes path (each library's C++ kernels take slots: fewer "
                      "distinct module shapes or recipes per process avoid it)", TeMlirWarning,
                      stacklevel=4)


def _torch_version():
    import re
    m = re.match(r"(\d+)\.(\d+)", torch.__version__)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _cpp_ops():
    """The loaded _CppOps, or None (the ctypes fallback: warned once, with why).
    $TE_MLIR_TORCH_OPS: a path to libte_torch_ops.so, or "python" for the fallback."""
    global _CPP, _CPP_WHY
    if _CPP is not None or _CPP_WHY is not None:
        return _CPP
    import os
    import warnings
    from pathlib import Path
    with _LOCK:
        if _CPP is not None or _CPP_WHY is not None:
            return _CPP
        env = os.environ.get("TE_MLIR_TORCH_OPS", "")
        rt = _abi.runtime()  # first: the op library links it
        path = Path(env) if env else rt.path.parent / "libte_torch_ops.so"
        if env == "python":
            _CPP_WHY = "TE_MLIR_TORCH_OPS=python"
        elif not path.exists():
            _CPP_WHY = (f"the C++ op library {path} is not built (scripts/build_torch_ops.sh "
                        "BUILD_DIR PYTHON builds it)")
        else:
            try:
                cpp = _CppOps(path)
                if _torch_version() < cpp.target:
                    _CPP_WHY = (f"torch {torch.__version__} is older than {path.name}'s stable "
                                f"ABI target {cpp.target[0]}.{cpp.target[1]}")
                else:
                    _CPP = cpp
            except (OSError, AttributeError, TeMlirError) as ex:
                _CPP_WHY = f"cannot load {path}: {ex}"
        if _CPP is None:
            warnings.warn(f"te_mlir: {_CPP_WHY}; te-mlir ops run through the ctypes fallback "
                          "(Python on every call: more host time per op)", RuntimeWarning,
                          stacklevel=3)
        return _CPP


def kernel_info():
    """("c++", path) when the ops' kernels are libte_torch_ops.so's, else ("python", why)."""
    cpp = _cpp_ops()
    return ("c++", str(cpp.path)) if cpp is not None else ("python", _CPP_WHY)


# --------------------------------------------------------------------------- running


def _device_of(entry, args):
    devs = {a.device for a in args}
    if len(devs) > 1:
        raise TeMlirError(f"{entry.name}: arguments on different devices: "
                          + ", ".join(sorted(str(d) for d in devs)))
    return devs.pop() if devs else torch.device(entry.library.backend)


def _check_device(entry, dev):
    want = entry.library.backend
    if dev.type != want:
        raise TeMlirError(f"{entry.name}: the library {entry.library.path.name} runs on the "
                          f"{want} backend, but its arguments are on {dev} (move them with "
                          f".to('{want}') or load a library for {dev.type})")


# Arenas up to this size come from a region the C++ op layer's context keeps for the
# process (python/csrc/TorchOps.cpp, kSmallArenaBytes): a call allocates only its results.
SMALL_ARENA_BYTES = 4 << 20


def aligned_empty(n, dev, align=256):
    """A uint8 buffer of `n` bytes starting at a multiple of `align` (the runtime's
    arena and workspace alignment), from torch's allocator."""
    raw = torch.empty(n + align, dtype=torch.uint8, device=dev)
    off = (-raw.data_ptr()) % align
    return raw[off:off + n]


def _set_workspace(ctx, dev, n):
    """Gives the context a torch workspace of n bytes, kept alive with the context. A
    workspace it replaces is kept too (`retired`): CUDA graphs captured with it still
    use its address on every replay. Allocated outside any capture only (inside one it
    would come from, and go back to, the graph's private pool), and outside any pool
    PyTorch routes the thread's allocations to."""
    if dev.type == "cuda" and torch.cuda.is_current_stream_capturing():
        raise TeMlirError(
            f"te-mlir: the runtime's workspace ({n} bytes) would be allocated while a CUDA "
            "graph is being captured; run the module (or the compiled function) once before "
            "capturing it (torch.compile's reduce-overhead mode does this by itself)")
    # allocated on a helper thread: while torch.compile's reduce-overhead warms a graph
    # up, PyTorch routes the calling thread's allocations to the graph's private pool,
    # whose owner then finds a block nothing but the graph's outputs may hold
    got = []

    def alloc():
        try:
            got.append(aligned_empty(n, dev))
        except BaseException as e:  # re-raised on the caller's thread
            got.append(e)
    helper = threading.Thread(target=alloc, name="te-mlir-workspace")
    helper.start()
    helper.join()
    if isinstance(got[0], BaseException):
        raise got[0]
    ws = got[0]
    ctx.set_workspace(ws.data_ptr(), n)
    if ctx.workspace is not None:
        if not hasattr(ctx, "retired"):
            ctx.retired = []
        ctx.retired.append(ctx.workspace)
    ctx.workspace = ws


def _context_for(lib, dev):
    """The library backend's context for device `dev` (created once)."""
    if dev.type == "cuda":
        with torch.cuda.device(dev):  # a cuda context binds the current device
            return lib.context(dev.index if dev.index is not None else
                               torch.cuda.current_device())
    return lib.context(0)


def _bind_caller(rt, ctx, dev):
    """Puts the context on torch's current stream with a torch workspace (cuda)."""
    if dev.type != "cuda":
        return
    if ctx.workspace is None:
        n = rt.workspace_bytes()
        if n > 0:
            _set_workspace(ctx, dev, n)
    ctx.set_stream(torch.cuda.current_stream(dev).cuda_stream)


# The donation of the next call of an entry on this thread (the ctypes kernels; the C++
# ones keep theirs in libte_torch_ops.so): (entry name, argument indices)
_DONATE = threading.local()


def _take_donation(entry):
    pending = getattr(_DONATE, "next", None)
    _DONATE.next = None
    return pending[1] if pending is not None and pending[0] == entry.name else None


def run_entry(entry, args, dims=None):
    """The real impl: checks and binds `args` (an entry that takes its dims: `dims`),
    allocates the results with torch.empty (qtensors: uint8 buffers of their byte size),
    runs the entry on the caller's stream with a torch-allocated arena and returns the
    results."""
    lib = entry.library
    rt = lib._rt
    if len(args) != len(entry.args):
        raise TeMlirError(f"{entry.name}: expected {len(entry.args)} arguments, got {len(args)}")
    dev = _device_of(entry, args)
    _check_device(entry, dev)
    # What the arguments' dtypes and sizes decide (the dims, the checks, the results'
    # sizes, the arena) is worked out once per signature: the host time of a call is
    # then the allocation and the run (a decoder layer calls each entry with the same
    # few shapes every step).
    try:
        key = tuple((t.dtype, tuple(t.shape)) for t in args) + \
            ((tuple(int(d) for d in dims),) if entry.takes_dims else ())
    except (AttributeError, TypeError):
        key = None
    plans = entry.__dict__.setdefault("_plans", {})
    plan = plans.get(key) if key is not None else None
    if plan is None:
        plan = _plan(entry, args, dims)
        if len(plans) >= 256:
            plans.clear()
        plans[key] = plan
    dims, result_specs = plan
    xs = [t.contiguous() for t in args]
    results = [torch.empty(shape, dtype=dt, device=dev) if i not in entry.in_place
               else _in_place_buffer(entry, args, i, shape)
               for i, (shape, dt) in enumerate(result_specs)]
    ctx = _context_for(lib, dev)
    donated = _take_donation(entry)
    if donated:
        # donated arguments' buffers are overwritten: only the caller's tensors, not
        # copies made contiguous here (nothing to gain), and a call that fails midway
        # cannot be rerun, so donate once a call of this signature went through (cuda:
        # the workspace it may have grown to)
        ok = plans.get(("ran",) + (key or ()), False) or dev.type != "cuda"
        donated = [i for i in donated if ok and xs[i] is args[i]]
    with ctx.lock:  # one call at a time per context: stream, arena and run belong together
        _bind_caller(rt, ctx, dev)
        out = _run_locked(entry, ctx, dev, xs, results, dims, donated)
    if key is not None:
        plans[("ran",) + key] = True
    return [out[i] for i in entry.returned] if entry.in_place else out


def _in_place_buffer(entry, args, r, shape):
    """The buffer of in-place result `r` (te.main_grad_of: main_grad + a weight's
    gradient; a backward's new recipe state): its argument itself, which must be
    contiguous (the entry writes into it)."""
    t = args[entry.in_place[r]]
    if not t.is_contiguous():
        raise TeMlirError(f"{entry.name}: {entry.args[entry.in_place[r]].label}: an argument "
                          "the entry writes in place (a main_grad, recipe state) must be "
                          "contiguous")
    if tuple(t.shape) != tuple(shape):
        raise TeMlirError(f"{entry.name}: {entry.args[entry.in_place[r]].label} has shape "
                          f"{tuple(t.shape)}, its result {tuple(shape)}")
    return t


def _given_dims(entry, dims):
    """The dims a caller gave an entry that takes them, checked: as many as the entry
    has, each a non-negative int."""
    try:
        dims = [int(d) for d in dims]
    except (TypeError, ValueError):
        raise TeMlirError(f"{entry.name}: dims must be a list of {entry.num_dims} ints, "
                          f"got {dims!r}") from None
    if len(dims) != entry.num_dims or any(d < 0 for d in dims):
        raise TeMlirError(f"{entry.name}: dims must hold {entry.num_dims} non-negative "
                          f"values, got {dims}")
    return dims


def _plan(entry, args, given=None):
    """The checks of a call's arguments (a clear error naming the argument), and what
    they decide: (dims, [(result shape, torch dtype)]). An entry that takes its dims:
    `given`, every plain argument's shape checked against them."""
    dtypes, shapes = [], []
    for spec, t in zip(entry.args, args):
        if not isinstance(t, torch.Tensor):
            raise TeMlirError(f"{entry.name} {spec.label}: expected a tensor, got "
                              f"{type(t).__name__}")
        if spec.is_qtensor:
            if t.dtype != torch.uint8 or t.dim() != 1:
                raise TeMlirError(f"{entry.name} {spec.label}: a quantized tensor is a 1-D uint8 "
                                  f"byte buffer, got {t.dtype} {list(t.shape)}")
            dtypes.append(None)
            shapes.append(None)
        else:
            want = TORCH_DTYPES[spec.dtype]
            if t.dtype != want:
                raise TeMlirError(f"{entry.name}: {spec.label} must be {spec.dtype}, got "
                                  f"{DTYPE_NAMES.get(t.dtype, str(t.dtype))}")
            dtypes.append(spec.dtype)
            shapes.append(list(t.shape))
    if entry.takes_dims:
        dims = _given_dims(entry, given)
        for spec, shape in zip(entry.args, shapes):
            if shape is not None and list(spec.client_shape(dims)) != shape:
                raise TeMlirError(f"{entry.name}: {spec.label} has shape {shape}, the dims "
                                  f"given make it {list(spec.client_shape(dims))}")
    else:
        dims = entry.bind_dims(dtypes, shapes)
    entry.check_dims(dims)
    for spec, t in zip(entry.args, args):
        if spec.is_qtensor:
            n = spec.client_bytes(dims)
            if t.numel() != n:
                raise TeMlirError(f"{entry.name} {spec.label}: quantized buffer of {t.numel()} "
                                  f"bytes, the entry wants {n} at dims {dims}")
    result_specs = [((spec.client_bytes(dims),), torch.uint8) if spec.is_qtensor else
                    (tuple(spec.client_shape(dims)), TORCH_DTYPES[spec.dtype])
                    for spec in entry.results]
    return dims, result_specs


def _run_locked(entry, ctx, dev, xs, results, dims, donated=None):
    arena = None
    n = entry.arena_bytes(dims, donated)
    if donated:
        entry._donated_bytes = (entry.arena_bytes(dims) or 0) - (n or 0)
    if n is not None and n > 0:
        arena = aligned_empty(n, dev)
        ctx.set_arena(arena.data_ptr(), arena.numel())
    # empty tensors (zero tokens) have no storage (data_ptr 0), which the runtime refuses:
    # give each a distinct, aligned, unused address (te_rt_alloc's "valid unique pointer")
    empties = [t for t in list(xs) + list(results) if t.numel() == 0]
    spare = aligned_empty(256 * len(empties), dev) if empties else None
    ptr = {id(t): spare.data_ptr() + 256 * i for i, t in enumerate(empties)}
    try:
        a = [ptr.get(id(t), t.data_ptr()) if t.numel() == 0 else t.data_ptr() for t in xs]
        r = [ptr.get(id(t), t.data_ptr()) if t.numel() == 0 else t.data_ptr() for t in results]
        try:
            entry.run(ctx, a, r, dims, donated)
        except TeMlirError:
            # the caller's workspace was too small: grow it to what the call needed, rerun
            # (not a donating call: it may have overwritten what it was donated)
            need = ctx.workspace_needed() if dev.type == "cuda" else 0
            if need <= 0 or ctx.workspace is None or need <= ctx.workspace.numel() or \
                    donated:
                raise
            _set_workspace(ctx, dev, need)
            entry.run(ctx, a, r, dims)
    finally:
        if arena is not None:
            ctx.set_arena(None, 0)
    # te_module_run leaves a qtensor result's alignment padding zeroed, so results are
    # deterministic (opcheck, CUDA graph replays, hashes)
    return results


def fake_entry(entry, args, given=None):
    """The fake impl: result shapes from the module info's dim expressions on the
    arguments' (Sym)sizes (an entry that takes its dims: `given`); equalities, exact
    divisions and the recipe's alignment rules as torch._check."""
    if len(args) != len(entry.args):
        raise TeMlirError(f"{entry.name}: expected {len(entry.args)} arguments, got {len(args)}")
    dev = args[0].device if args else torch.device("meta")
    for spec, t in zip(entry.args, args):
        # (real tensors mixed with meta ones dispatch here too, not to the kernel: the
        # results would be uninitialized memory on the first argument's device)
        if t.device != dev:
            raise TeMlirError(f"{entry.name}: arguments on different devices: "
                              f"{entry.args[0].label} on {dev}, {spec.label} on {t.device}")
        if spec.is_qtensor:
            if t.dtype != torch.uint8 or t.dim() != 1:
                raise TeMlirError(f"{entry.name} {spec.label}: a quantized tensor is a 1-D uint8 "
                                  f"byte buffer, got {t.dtype} {list(t.shape)}")
        else:
            if t.dtype != TORCH_DTYPES[spec.dtype]:
                raise TeMlirError(f"{entry.name}: {spec.label} must be {spec.dtype}, got "
                                  f"{DTYPE_NAMES.get(t.dtype, str(t.dtype))}")
            if t.dim() != len(spec.shape):
                raise TeMlirError(f"{entry.name}: {spec.label} must have rank {len(spec.shape)} "
                                  f"{spec.shape}, got {list(t.shape)}")
    if entry.takes_dims:
        if given is None or len(given) != entry.num_dims:
            raise TeMlirError(f"{entry.name}: dims must hold {entry.num_dims} values, got "
                              f"{given!r}")
        dims = list(given)
    else:
        dims = [args[i].shape[d] for i, d in entry.size_sources]

    def exact(v, d, text):
        torch._check(v % d == 0, lambda: f"{entry.name}: dim expression {text!r} needs a "
                                          f"multiple of {d}")

    for expr, m, message in entry.checks:
        v = expr if isinstance(expr, int) else expr.evaluate(dims, exact)
        torch._check(v % m == 0, lambda message=message: message)
    for spec, t in zip(entry.args, args):
        if spec.is_qtensor:
            n = spec.bytes_at(dims, exact)
            torch._check(t.shape[0] == n, lambda spec=spec: f"{entry.name} {spec.label}: "
                         "wrong quantized buffer size")
        else:
            for j, want in enumerate(spec.shape_at(dims, exact)):
                torch._check(t.shape[j] == want, lambda spec=spec, j=j, want=want:
                             f"{entry.name}: {spec.label} dim {j} must be {spec.shape[j]}")
    out = []
    for spec in entry.results:
        if spec.index in entry.in_place:  # written into its argument (main_grad, state)
            continue
        if spec.is_qtensor:
            out.append(torch.empty(spec.bytes_at(dims, exact), dtype=torch.uint8, device=dev))
        else:
            out.append(torch.empty(spec.shape_at(dims, exact), dtype=TORCH_DTYPES[spec.dtype],
                                   device=dev))
    return out


_compiling = torch.compiler.is_compiling


def _schema(names, n_results, mutated=(), dims=False):
    """The op's schema: its arguments (those in `mutated`, indices, written in place:
    Tensor(a!), Tensor(b!), ...), with `dims` a trailing int[] dims (an entry whose
    dims only quantized arguments carry), and `n_results` tensors."""
    res = "Tensor" if n_results == 1 else "(" + ", ".join(["Tensor"] * n_results) + ")"
    alias = {i: f"({chr(ord('a') + j)}!)" for j, i in enumerate(sorted(mutated))}
    return "(" + ", ".join([f"Tensor{alias.get(i, '')} {n}" for i, n in enumerate(names)] +
                           (["int[] dims"] if dims else [])) + ") -> " + res


def _pack(results, n):
    return results[0] if n == 1 else tuple(results)


# --------------------------------------------------------------------------- autograd


class _Step:
    """How <fn>_bwd is fed from a forward entry (<fn>_fwd or <fn>_fwd_cached)."""

    def __init__(self, lib, fwd, bwd, feeds, wgrad=None, wgrad_feeds=()):
        self.fwd, self.bwd, self.feeds = fwd, bwd, feeds
        # te-split-wgrad: the deferred weight gradients' entry (te.delay_wgrad), or None
        self.wgrad, self.wgrad_feeds = wgrad, list(wgrad_feeds)
        # backward recipe state (fp8-delayed): extra trailing inputs of the forward op
        self.bwd_state = [i for i, (k, _) in enumerate(feeds) if k == _abi.FEED_STATE]
        self.n_fwd_args = len(fwd.args)
        # positions among the results the backward op returns (its in-place main_grad
        # results are not returned)
        pos = {r: j for j, r in enumerate(bwd.returned)}
        self.grad_of_input = {}  # returned bwd result -> forward input index
        self.bwd_state_results = {}  # returned bwd result -> position in bwd_state
        names = {bwd.args[i].role("te.state"): j for j, i in enumerate(self.bwd_state)}
        for r in bwd.results:
            g = r.role("te.grad_of")
            if r.index in bwd.in_place:
                continue
            if g is not None and g.startswith("input:"):
                self.grad_of_input[pos[r.index]] = int(g.split(":")[1])
            elif r.is_state and r.role("te.state") in names:
                self.bwd_state_results[pos[r.index]] = names[r.role("te.state")]


def _register_autograd(ops, step):
    """The op's Autograd kernel: with grad needed, the op's autograd.Function (all the
    entry's results out, saved/state/quantized ones non-differentiable); else the entry's
    op without autograd (<namespace>_raw::<entry>, the same C++ kernel). What AOTAutograd
    traces under torch.compile, and what a direct call of the op runs in eager. The
    Function's forward calls the op without autograd, so the graphs torch.compile makes
    call that one: at run time no Python autograd kernel runs between the compiled code
    and the C++ kernel."""
    raw = ops.raw_op(step.fwd.name)
    full = _fast_function(ops, step, list(range(len(step.fwd.results))), hold_state=False,
                          fwd_op=raw)
    raw = getattr(raw, "_op", raw)
    grad_enabled = torch.is_grad_enabled
    n_res = len(step.fwd.results)

    def autograd_kernel(keyset, *args):
        if grad_enabled():
            for a in args:
                if isinstance(a, torch.Tensor) and a.requires_grad:
                    out = full.apply(*args)
                    return out[0] if n_res == 1 else out
        return raw(*args)

    ops._lib.impl(step.fwd.name, autograd_kernel, "Autograd", with_keyset=True)


def _fast_function(ops, step, output_index, hold_state=True, fwd_op=None):
    """The autograd.Function of forward entry `step.fwd`: its forward calls the op below
    the Autograd key (the C++ kernel directly), saves exactly what `<fn>_bwd` is fed
    (`te_module_step_feed`: te.alias input:N re-saved from the inputs, te.alias
    output:N and te.saved from the results, backward recipe state from the trailing
    inputs) and returns the results at `output_index` (the modules: only the outputs;
    the op's Autograd kernel: all of them, saved/state/quantized ones marked
    non-differentiable); its backward calls `<fn>_bwd` and copies the new backward
    recipe state into its tensors. ``fwd_op``: the forward's op (default: the entry's
    op, called below autograd). What the feeds decide is worked out here, once.
    ``hold_state``: the eager modules' Function (the backward recipe state held live,
    below); else the op's Autograd kernel's. With non-differentiable outputs autograd
    materializes no gradient: the backward makes zeros for a fed gradient that comes as
    None."""
    # the OpOverloads' C++ callables (one Python frame less per call)
    fwd_op = fwd_op if fwd_op is not None else ops.op(step.fwd.name)
    fwd_op = getattr(fwd_op, "_op", fwd_op)
    bwd_op = getattr(ops.op(step.bwd.name), "_op", ops.op(step.bwd.name))
    n_fwd = step.n_fwd_args
    results = step.fwd.results
    out_pos = {r: j for j, r in enumerate(output_index)}
    nondiff = [j for j, r in enumerate(output_index)
               if results[r].is_qtensor or results[r].is_saved or results[r].is_state]
    # saved_plan: what forward saves, in order: (0, forward input k) or (1, result k);
    # bwd_plan, per backward argument: (1, position in saved_tensors) or (0, index of
    # the returned output whose gradient it is)
    # In eager (hold_state), the backward recipe state is not saved but held live
    # (bwd_plan (2, position)): each backward reads the state as the backwards before
    # it left it and updates it in place, as sequential steps would, so a module run
    # twice before one backward (shared weights, microbatches summed into one loss)
    # or recomputed under checkpointing works; a saved tensor would fail autograd's
    # version check after the first backward's update.
    # A weight-cache entry (<fn>_fwd_cached) returns the cached weights it took as saved
    # results, copies of those arguments: the arguments themselves are saved instead, so
    # between forward and backward only the caller's cache holds them (as TE holds its
    # FP8 weights), not a copy per step.
    cached_arg = {a.role("te.cached_weight"): i for i, a in enumerate(step.fwd.args)
                  if a.role("te.cached_weight") is not None}
    saved_plan, bwd_plan = [], []
    main_inputs = []  # the forward inputs whose main_grad the backward accumulates into
    for j, (kind, k) in enumerate(step.feeds):
        if kind == _abi.FEED_GRAD:
            bwd_plan.append((0, out_pos[k]))
            continue
        if kind == _abi.FEED_MAIN_GRAD:
            bwd_plan.append((3, len(main_inputs)))
            main_inputs.append(k)
            continue
        if kind == _abi.FEED_STATE and hold_state:
            bwd_plan.append((2, step.bwd_state.index(j)))
            continue
        bwd_plan.append((1, len(saved_plan)))
        if kind == _abi.FEED_INPUT:
            saved_plan.append((0, k))
        elif kind == _abi.FEED_RESULT:
            arg = cached_arg.get(results[k].role("te.saved"))
            saved_plan.append((1, k) if arg is None else (0, arg))
        else:  # FEED_STATE: the trailing backward-state inputs
            saved_plan.append((0, n_fwd + step.bwd_state.index(j)))
    # A forward recipe-state argument the backward reads (a checkpointed delayed-scaling
    # recompute quantizes with the forward's scales) comes as a forward result, a copy
    # (te-generate-backward): the caller updates its state tensors after the forward
    # (under torch.compile, copy_ into the module's or the graph's buffers). A library
    # that saves it by alias (an older te-compile) is refused under torch.compile, where
    # the backward would see the updated values.
    # te-split-wgrad (te.delay_wgrad): <fn>_bwd returns stashes instead of the delayed
    # gradients, which <fn>_bwd_wgrad computes from them and the step's other tensors
    # when the module's backward_dw() asks (a module registered a sink for the weights:
    # hold_wgrad), else right after the backward. wg_plan per wgrad argument: (1,
    # position in saved_plan), (0, returned output whose gradient it is), (4, returned
    # bwd result), (3, forward input whose main_grad), (2, backward state position).
    wg = step.wgrad
    wg_plan, wg_inputs = [], []
    if wg is not None:
        bpos = {r: j for j, r in enumerate(step.bwd.returned)}
        for kind, k in step.wgrad_feeds:
            if kind == _abi.FEED_GRAD:
                wg_plan.append((0, out_pos[k]))
            elif kind == _abi.FEED_STASH:
                wg_plan.append((4, bpos[k]))
            elif kind == _abi.FEED_MAIN_GRAD:
                wg_plan.append((3, k))
            elif kind == _abi.FEED_STATE:
                raise TeMlirError(f"{wg.name}: reads recipe state (not supported)")
            else:
                want = (0, k) if kind == _abi.FEED_INPUT else (1, k)
                if kind == _abi.FEED_RESULT:
                    arg = cached_arg.get(results[k].role("te.saved"))
                    want = want if arg is None else (0, arg)
                if want not in saved_plan:
                    saved_plan.append(want)
                wg_plan.append((1, saved_plan.index(want)))
        for r in wg.results:
            of = r.role("te.grad_of") or r.role("te.main_grad_of")
            wg_inputs.append(int(of.split(":")[1]))
        wg_saved = {k for w, k in wg_plan if w == 1}
        wg_op = getattr(ops.op(wg.name), "_op", ops.op(wg.name))
    aliased_state = [step.fwd.args[k].label for w, k in saved_plan
                     if w == 0 and k < n_fwd and step.fwd.args[k].is_state]
    grad_js = sorted({k for w, k in bwd_plan if not w} | {k for w, k in wg_plan if not w})
    grad_of = sorted(step.grad_of_input.items())
    state_results = [(r, step.bwd_state[j]) for r, j in step.bwd_state_results.items()]
    n_in = n_fwd + len(step.bwd_state)
    live_state = hold_state and bool(step.bwd_state)
    # The backward arguments it may donate to <fn>_bwd (te.donatable): forward results
    # that only this Function holds (saved, not returned to the caller, not a cached
    # weight); donated when no one can run this backward again (_donations).
    donatable = [j for j, (w, k) in enumerate(bwd_plan)
                 if w == 1 and step.bwd.args[j].donatable and saved_plan[k][0] == 1
                 and saved_plan[k][1] not in out_pos and (wg is None or k not in wg_saved)]
    bwd_name = step.bwd.name
    below = torch._C._AutoDispatchBelowAutograd
    single, first = len(output_index) == 1, output_index[0] if output_index else 0
    # The C++ kernel's donation call bound once (one ctypes call per backward: the kernel
    # consumes it), with the array of the usual case (every donatable argument) prebuilt.
    donate_all, set_donation = _donation_setter(ops, bwd_name, donatable)
    fed_grads = [j for j, (w, _) in enumerate(bwd_plan) if not w]  # backward args

    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            with below():
                res = fwd_op(*inputs)
            if not isinstance(res, tuple):
                res = (res,)
            if aliased_state and _compiling():
                raise TeMlirError(f"{step.fwd.name}: its backward reads the forward recipe "
                                  f"state {', '.join(aliased_state)} by alias, which "
                                  "torch.compile updates before the backward runs: compile "
                                  "the library again with this te-compile (it saves a copy)")
            ctx.save_for_backward(*[inputs[k] if w == 0 else res[k] for w, k in saved_plan])
            if live_state:
                ctx.te_state = inputs[n_fwd:]
            if main_inputs:  # (the weights themselves: their main_grad is read at backward)
                ctx.te_main = [inputs[k] for k in main_inputs]
            if wg is not None:  # the delayed inputs (their sink, their main_grad)
                ctx.te_inputs = {k: inputs[k] for k in set(wg_inputs)}
            outs = (res[first],) if single else tuple([res[r] for r in output_index])
            if nondiff:
                ctx.mark_non_differentiable(*[outs[j] for j in nondiff])
                # Autograd would materialize a zeros gradient per non-differentiable
                # output (the new forward recipe state, the quantized and saved results)
                # and step, which nothing reads: the backward makes zeros itself, for a
                # fed gradient that comes as None (an unused output: what a
                # te.optional_grad output's missing gradient must be).
                ctx.set_materialize_grads(False)
                ctx.te_meta = {j: (outs[j].shape, outs[j].dtype, outs[j].device)
                               for j in grad_js}
            # (else autograd materializes an unused output's gradient as zeros)
            return outs

        @staticmethod
        def backward(ctx, *grads):
            if grad_enabled():  # create_graph=True: the entry has no double backward
                return once(ctx, *grads)
            return run_backward(ctx, *grads)

    def run_backward(ctx, *grads):  # Fn.backward
        saved = ctx.saved_tensors
        if live_state or main_inputs:
            live = ctx.te_state if live_state else ()
            mains = _main_grads(bwd_name, ctx.te_main) if main_inputs else ()
            bargs = [grads[k] if w == 0 else saved[k] if w == 1 else live[k] if w == 2
                     else mains[k] for w, k in bwd_plan]
        else:
            bargs = [saved[k] if w else grads[k] for w, k in bwd_plan]
        for j in fed_grads if nondiff else ():
            if bargs[j] is None:
                shape, dtype, dev = ctx.te_meta[bwd_plan[j][1]]
                bargs[j] = torch.zeros(shape, dtype=dtype, device=dev)
        donate = _donations(donatable, bargs)
        if donate:
            set_donation(donate_all if len(donate) == len(donatable) else donate)
            try:
                res = bwd_op(*bargs)
            except BaseException:
                set_donation(None)  # not consumed when the kernel did not run
                raise
        else:
            res = bwd_op(*bargs)
        if not isinstance(res, tuple):
            res = (res,)
        out = [None] * n_in
        need = ctx.needs_input_grad
        for r, i in grad_of:
            if need[i]:
                out[i] = res[r]
        if wg is not None:
            _defer_wgrad(ctx, grads, bargs, res, saved, out)
        for i, t in zip(main_inputs, ctx.te_main if main_inputs else ()):
            _added_to_main_grad(t, i, need, out)
        if state_results:  # the new backward recipe state, in one launch on cuda
            with torch.no_grad():
                torch._foreach_copy_([bargs[j] for _, j in state_results],
                                     [res[r] for r, _ in state_results])
        return tuple(out)

    def _defer_wgrad(ctx, grads, bargs, res, saved, out):
        """<fn>_bwd_wgrad's call, held in the delayed weights' sink (backward_dw) or run
        now into `out`."""
        wargs = [saved[k] if w == 1 else res[k] if w == 4 else ctx.te_inputs[k] if w == 3
                 else grads[k] for w, k in wg_plan]
        for j, (w, k) in enumerate(wg_plan):
            if w == 0 and wargs[j] is None:  # an unused output's gradient: zeros
                shape, dtype, dev = ctx.te_meta[k]
                wargs[j] = torch.zeros(shape, dtype=dtype, device=dev)
        dims = _wgrad_dims(step, bargs, wargs) if wg.takes_dims else None
        inputs = ctx.te_inputs
        need = ctx.needs_input_grad

        def run():
            args = list(wargs)
            for j, (w, k) in enumerate(wg_plan):
                if w == 3:  # the weight's fp32 main_grad, read now
                    args[j] = _main_grads(wg.name, [_owner(inputs[k])])[0]
            r = wg_op(*args, *([dims] if dims is not None else []))
            r = r if isinstance(r, tuple) else (r,)
            done, it = [], iter(r)
            for spec, i in zip(wg.results, wg_inputs):
                if spec.index not in wg.in_place:  # (main_grad ones: in place)
                    done.append((i, _owner(inputs[i]), next(it)))
            return done

        # main_grad accumulations: Megatron's flag and TE's zero .grad at backward time,
        # as without the delay
        for spec, i in zip(wg.results, wg_inputs):
            if spec.index in wg.in_place:
                _added_to_main_grad(inputs[i], i, need, out)

        sinks = (_recall(_WGRAD_SINK, _owner(inputs[i])) for i in wg_inputs)
        sink = next((p for p in sinks if p is not None), None)
        if sink is not None:
            sink.append(lambda: [(w, g) for _, w, g in run()])
            return
        for i, _, g in run():  # no one defers them: the gradients now
            if need[i]:
                out[i] = g

    # Under create_graph=True the gradients it returns would carry no graph: a second
    # backward through them would give zeros. PyTorch's once_differentiable makes that
    # second backward an error instead.
    grad_enabled = torch.is_grad_enabled
    once = torch.autograd.function.once_differentiable(run_backward)
    Fn.__name__ = Fn.__qualname__ = f"{ops.namespace}_{step.fwd.name}"
    return Fn


# What the modules (te_mlir.torch.nn) tell the backward about a tensor whose main_grad
# it accumulates into, by id (tensors compare elementwise: no dict key), each entry
# dropped with its tensor:
# - _MAIN_GRAD_OWNER: id(the tensor a step passed for a weight: a torch.autocast cast, an
#   FP8 primary weight's stand-in) -> (a weak reference to it, the weight): main_grad and
#   Megatron's flags are the weight's.
_MAIN_GRAD_OWNER = {}
# - _WGRAD_SINK: delay_wgrad_compute with a te.delay_wgrad library: id(weight) -> (a weak
#   reference to it, the module's pending list), where the backward leaves the call of
#   <fn>_bwd_wgrad for backward_dw().
_WGRAD_SINK = {}


def hold_wgrad(weight, pending):
    """The deferred weight gradients of `weight` (te.delay_wgrad) go to `pending`, as a
    callable returning [(weight, gradient)], until hold_wgrad is called again for it."""
    _remember(_WGRAD_SINK, weight, pending)


def _wgrad_dims(step, bargs, wargs):
    """<fn>_bwd_wgrad's dims when only quantized arguments carry them: each read off a
    typed argument with that bare symbol, or a stash's shape at the backward's dims
    (bound from the backward's typed arguments)."""
    wg, bwd = step.wgrad, step.bwd
    bwd_dims = None
    dims = []
    for k in range(wg.num_dims):
        sym, got = f"d{k}", None
        for a, (kind, r) in zip(wg.args, step.wgrad_feeds):
            if sym not in a.shape:
                continue
            d = a.shape.index(sym)
            if not a.is_qtensor:
                got = int(wargs[a.index].shape[d])
            elif kind == _abi.FEED_STASH:
                if bwd_dims is None:
                    bwd_dims = bwd.bind_dims(
                        [None if s.is_qtensor else s.dtype for s in bwd.args],
                        [None if s.is_qtensor else list(t.shape)
                         for s, t in zip(bwd.args, bargs)])
                got = int(bwd.results[r].shape_at(bwd_dims)[d])
            if got is not None:
                break
        if got is None:
            raise TeMlirError(f"{wg.name}: dim d{k} is carried by no typed argument or "
                              "backward stash")
        dims.append(got)
    return dims


def _remember(table, t, value):
    k = id(t)
    e = table.get(k)
    if e is None or e[0]() is not t or e[1] is not value:
        table[k] = (weakref.ref(t, lambda _, k=k: table.pop(k, None)), value)


def _recall(table, t):
    e = table.get(id(t))
    return e[1] if e is not None and e[0]() is t else None


def main_grad_owner(passed, weight):
    """`passed`, what a step passes for `weight` (a cast copy, a stand-in), accumulates
    into `weight`'s main_grad."""
    _remember(_MAIN_GRAD_OWNER, passed, weight)


def _owner(t):
    w = _recall(_MAIN_GRAD_OWNER, t)
    return t if w is None else w


def _added_to_main_grad(t, i, need, out):
    """Input `i` (`t`, a weight or its stand-in) was accumulated into its weight's
    main_grad: no .grad, or, where Megatron marks the weight with
    grad_added_to_main_grad, the flag set and a zero .grad in `out[i]` (TE's modules)."""
    w = _owner(t)
    if hasattr(w, "grad_added_to_main_grad"):
        w.grad_added_to_main_grad = True
        if need[i]:
            out[i] = torch.zeros(t.shape, dtype=t.dtype, device=t.device)


def _main_grads(entry_name, weights):
    """The fp32 main_grad of each of `weights` (Megatron's convention: an attribute of
    the weight, contiguous, of its shape) the backward accumulates into in place; zeroed
    first where the weight has overwrite_main_grad set (the GEMM then writes it)."""
    mains = []
    for w in map(_owner, weights):
        main = getattr(w, "main_grad", None)
        if not isinstance(main, torch.Tensor):
            raise TeMlirError(f"{entry_name}: fuse_wgrad_accumulation: a weight of shape "
                              f"{tuple(w.shape)} has no main_grad tensor (give each weight "
                              "a main_grad, fp32, of its shape, as Megatron-LM does)")
        if main.dtype != torch.float32 or main.shape != w.shape or \
                main.device != w.device or not main.is_contiguous():
            raise TeMlirError(f"{entry_name}: fuse_wgrad_accumulation: main_grad must be a "
                              f"contiguous float32 tensor of the weight's shape "
                              f"{tuple(w.shape)} on {w.device}, got {main.dtype} "
                              f"{tuple(main.shape)} on {main.device}"
                              + ("" if main.is_contiguous() else " (not contiguous)"))
        if getattr(w, "overwrite_main_grad", False):
            main.zero_()
        mains.append(main)
    return mains


def _donation_setter(ops, bwd_name, donatable):
    """(all, set): ``set(args)`` makes the next call of entry `bwd_name`'s kernel on this
    thread donate `args` (a list of argument indices, or `all`: every one of `donatable`);
    ``set(None)`` clears it. The C++ kernel consumes the donation when it runs; the ctypes
    fallback reads it through ops.donate_next."""
    slot = ops._slots.get(bwd_name)
    if slot is None or not donatable:
        return donatable, lambda args: ops.donate_next(bwd_name, args or [])
    call = _cpp_ops().lib.te_torch_ops_donate_next
    every = (ctypes.c_int64 * len(donatable))(*donatable)

    def set_donation(args):
        if args is None:
            call(slot, 0, None)
        elif args is every:
            call(slot, len(donatable), every)
        else:
            call(slot, len(args), (ctypes.c_int64 * len(args))(*args))
    return every, set_donation


def _donations(donatable, bargs):
    """The backward arguments (indices into `bargs`) an eager backward donates: those of
    `donatable` when the graph is not kept (no retain_graph / create_graph: nothing runs
    this backward again), outside torch.compile (its graphs call the op without this
    Function, and the op declares no mutation), and each a plain tensor."""
    if not donatable or _compiling() or \
            torch._C._autograd._get_current_graph_task_keep_graph():
        return []
    return [j for j in donatable if type(bargs[j]) is torch.Tensor]


# --------------------------------------------------------------------------- the library


class OpLibrary:
    """The custom ops of one Library: ``namespace`` ("te_mlir_<sha256[:12]>"), ``op(name)``
    (the CustomOpDef of entry `name`: torch.ops.<namespace>.<name>), ``function(name)``
    (a TeFunction), ``library``."""

    def __init__(self, lib):
        self.library = lib
        self.namespace = namespace_of(lib)
        self._ops = {}
        self._slots = {}  # entry name -> slot of its C++ kernel
        # the op definitions live as long as this OpLibrary (kept in _LOADED)
        self._lib = torch.library.Library(self.namespace, "FRAGMENT")
        self._steps = {}  # forward entry name -> _Step
        for fn, (fwd, bwd) in lib.steps.items():
            ls = lib.step(fn)
            feeds, wg = ls.feeds, (ls.wgrad, ls.wgrad_feeds)
            self._steps[fwd] = _Step(lib, lib.entry(fwd), lib.entry(bwd), feeds, *wg)
            for e in lib.entries.values():
                if e.cached_forward_of == fwd and self._same_results(e, lib.entry(fwd)):
                    self._steps[e.name] = _Step(lib, e, lib.entry(bwd), feeds, *wg)
        for e in lib.entries.values():
            self._ops[e.name] = self._define(e)
        # The forward entries' ops without autograd, in a namespace of their own: what
        # the autograd.Function of an op's Autograd kernel calls (so compiled graphs do)
        self.raw_namespace = self.namespace + "_raw"
        self._raw_lib = torch.library.Library(self.raw_namespace, "FRAGMENT")
        self._raw_ops = {name: self._define(lib.entry(name), raw=True)
                         for name in self._steps}
        for step in self._steps.values():
            _register_autograd(self, step)
        self._functions = {}

    @staticmethod
    def _same_results(a, b):
        return len(a.results) == len(b.results) and all(
            x.dtype == y.dtype and x.shape == y.shape and x.roles == y.roles
            for x, y in zip(a.results, b.results)) and a.args[:len(b.args)] and all(
            x.dtype == y.dtype and x.shape == y.shape for x, y in zip(a.args, b.args))

    def _define(self, entry, raw=False):
        """Defines op <namespace>::<entry> (schema, fake impl) and registers its kernel:
        the C++ one of libte_torch_ops.so, or (fallback) run_entry through ctypes.
        ``raw``: op <namespace>_raw::<entry> instead, with the same kernel (the C++ op's
        slot) and no autograd."""
        step = self._steps.get(entry.name)
        names = [a.name for a in entry.args]
        if step is not None:
            names += [f"bwd_state{j}" for j in range(len(step.bwd_state))]
        n_real = len(entry.args)
        n_res = len(entry.returned)

        takes = entry.takes_dims  # the trailing int[] dims

        def fake(*args):
            return _pack(fake_entry(entry, list(args[:n_real]),
                                    args[-1] if takes else None), n_res)

        ns, lib = (self.raw_namespace, self._raw_lib) if raw else (self.namespace, self._lib)
        lib.define(entry.name + _schema(names, n_res, entry.in_place.values(), takes))
        torch.library.register_fake(f"{ns}::{entry.name}", fake, lib=lib)
        cpp = _cpp_ops()
        slot = None
        if raw and entry.name in self._slots:
            cpp.alias(self._slots[entry.name], ns, entry.name)
            return getattr(getattr(torch.ops, ns), entry.name).default
        if cpp is not None and not raw:
            try:
                slot = cpp.register(self.namespace, entry)
            except TeMlirError as ex:
                if _CPP_FULL not in str(ex):
                    raise
                _warn_cpp_full(str(ex))
        if slot is not None:
            self._slots[entry.name] = slot
        else:
            def impl(*args):
                return _pack(run_entry(entry, list(args[:n_real]),
                                       args[-1] if takes else None), n_res)

            lib.impl(entry.name, impl, "CPU")
            lib.impl(entry.name, impl, "CUDA")
        return getattr(getattr(torch.ops, ns), entry.name).default

    @property
    def kernel(self):
        """"c++" (libte_torch_ops.so's kernels) or "python" (the ctypes fallback)."""
        return "c++" if self._slots else "python"

    def calls(self, name):
        """How many times the C++ kernel of entry `name` ran (-1: not a C++ op)."""
        slot = self._slots.get(name)
        return -1 if slot is None else _cpp_ops().calls(slot)

    def arena_calls(self, name):
        """(calls whose arena came from torch's allocator, calls whose arena was the
        context's small-arena region: SMALL_ARENA_BYTES) of entry `name`'s C++ kernel
        (None: not a C++ op)."""
        slot = self._slots.get(name)
        return None if slot is None else _cpp_ops().arenas(slot)

    def donate_next(self, name, args):
        """The next call of entry `name`'s kernel on this thread may overwrite its
        arguments `args` (indices of donatable arguments, te_module_run_donated); an
        empty `args` clears it. What the eager backward does with the saved tensors only
        it holds; the kernel donates a tensor it got as given (not a contiguous copy),
        once a call of the same signature went through (cuda: its workspace settled)."""
        slot = self._slots.get(name)
        if slot is not None:
            _cpp_ops().donate_next(slot, list(args))
        else:
            _DONATE.next = (name, list(args)) if args else None

    def donated_bytes(self, name):
        """The arena bytes the last donating call of entry `name` did not allocate (0:
        none donated yet)."""
        slot = self._slots.get(name)
        if slot is not None:
            return _cpp_ops().donated(slot)
        return getattr(self.library.entry(name), "_donated_bytes", 0)

    def op(self, name):
        """The op (OpOverload torch.ops.<namespace>.<name>.default) of entry `name`."""
        if name not in self._ops:
            self.library.entry(name)  # raises naming the entries
        return self._ops[name]

    def ops(self):
        return dict(self._ops)

    def raw_op(self, name):
        """Forward entry `name`'s op without autograd (torch.ops.<namespace>_raw.<name>
        .default): the same kernel, what torch.compile's graphs call."""
        return self._raw_ops[name]

    def step(self, fwd_name):
        return self._steps.get(fwd_name)

    def function(self, name):
        """The callable of function `name` (see TeFunction)."""
        f = self._functions.get(name)
        if f is None:
            f = self._functions[name] = TeFunction(self, name)
        return f

    def __repr__(self):
        return f"<OpLibrary {self.namespace}: " + ", ".join(self._ops) + ">"


class TeFunction:
    """f(*args, bwd_state=None) for function `name` of a library.

    ``args`` are the arguments of the inference entry `name` (= those of `name`_fwd):
    the module inputs, then, for fp8-delayed, the forward recipe state (te.state:
    amax history and scales). The result is what the inference entry returns: the
    outputs, then the new forward state (a tensor when there is one result, else a
    tuple); the saved bundle of `name`_fwd is hidden.

    With autograd (grad mode on and an input requiring grad, and the library compiled
    with --train) it runs `name`_fwd and, in backward, `name`_bwd; else the inference
    entry. ``bwd_state``: the backward recipe state tensors (``self.bwd_state_specs``), a
    sequence the backward updates in place (copy_) with the state `name`_bwd returns;
    required when the backward has state and gradients are computed.

    Weight cache (--weight-cache): ``cached_weights=`` the quantized weights (as
    ``self.call(..., return_weights=True)`` returned them on the first microbatch) runs
    `name`_fwd_cached instead of re-quantizing them."""

    def __init__(self, ops, name):
        lib = ops.library
        self.ops, self.name = ops, name
        self.inference = lib.entries.get(name)
        self.fwd = lib.entries.get(name + "_fwd") if name in lib.steps else None
        if self.inference is None and self.fwd is None:
            raise TeMlirError(f"{lib.path.name}: no function {name!r}; entries: "
                              + ", ".join(lib.entries))
        base = self.fwd or self.inference
        self.arg_specs = list(base.args)
        self.state_specs = [a for a in base.args if a.is_state]
        self.step = ops.step(self.fwd.name) if self.fwd is not None else None
        self.bwd_state_specs = ([self.step.bwd.args[i] for i in self.step.bwd_state]
                                if self.step else [])
        self.cached = next((e for e in lib.entries.values()
                            if self.fwd is not None and e.cached_forward_of == self.fwd.name
                            and ops.step(e.name) is not None), None)
        self.cached_weight_specs = ([a for a in self.cached.args if "te.cached_weight" in a.roles]
                                    if self.cached else [])
        if self.cached is not None:
            # a checkpointed forward saves no quantized weights (its backward recomputes
            # them): nothing to cache, each microbatch quantizes its weights again
            saved = {r.roles.get("te.saved") for r in self.fwd.results}
            if any(a.roles["te.cached_weight"] not in saved for a in self.cached_weight_specs):
                self.cached, self.cached_weight_specs = None, []
        self.output_index = [i for i, r in enumerate(base.results) if not r.is_saved]
        self._fast = {}  # forward entry name -> its eager autograd.Function

    def memory_plan(self, shapes):
        """The plans' memory of one training step at the forward arguments' `shapes`
        (int lists; None for a quantized argument), in bytes: ``forward`` and
        ``backward`` each {"results", "arena", "peak"} (peak = results + arena above the
        entry's arguments, Entry.peak_bytes), the backward also "arena_donated" and
        "peak_donated" (every donatable saved tensor donated, as the eager backward
        donates them), and ``held``: the saved results the forward leaves for the
        backward (not the inputs it aliases). Needs a --train library."""
        if self.step is None:
            raise TeMlirError(f"{self.name}: memory_plan needs a training library (--train)")
        fwd, bwd = self.fwd, self.step.bwd
        fdims = fwd.bind_dims([None] * len(fwd.args), shapes)
        out_shape = lambda r: None if r.is_qtensor else r.shape_at(fdims)
        bshapes = []
        for (kind, k), arg in zip(self.step.feeds, bwd.args):
            if kind == _abi.FEED_INPUT:
                bshapes.append(shapes[k])
            elif kind in (_abi.FEED_RESULT, _abi.FEED_GRAD):
                bshapes.append(out_shape(fwd.results[k]))
            elif kind == _abi.FEED_MAIN_GRAD:
                bshapes.append(shapes[k])
            else:  # FEED_STATE: a backward state argument (static)
                bshapes.append(list(arg.shape))
        bdims = bwd.bind_dims([None] * len(bwd.args), bshapes)
        held = sum(r.client_bytes(fdims) for r in fwd.results
                   if r.is_saved and not (r.role("te.alias") or "").startswith("input:"))
        plan = {"held": held}
        for name, e, dims in (("forward", fwd, fdims), ("backward", bwd, bdims)):
            results = e.results_bytes(dims)
            arena = e.arena_bytes(dims)
            rec = {"results": results, "arena": arena,
                   "peak": None if arena is None else results + arena}
            if name == "backward":
                donated = e.arena_bytes(dims, e.donatable) if e.donatable else arena
                rec.update(arena_donated=donated,
                           peak_donated=None if donated is None else results + donated)
            plan[name] = rec
        return plan

    def _needs_grad(self, args):
        return torch.is_grad_enabled() and any(
            isinstance(a, torch.Tensor) and a.requires_grad for a in args)

    def initial_state(self, device=None, backward=False):
        """TE's initial recipe state (amax histories 0, scales 1) for the forward
        (or, backward=True, the backward) state arguments."""
        specs = self.bwd_state_specs if backward else self.state_specs
        return [torch.full(s.shape, s.initial_state, dtype=torch.float32, device=device)
                for s in specs]

    def call(self, *args, bwd_state=None, cached_weights=None, return_weights=False,
             training=None):
        """(outputs, weights): outputs as __call__ returns them (always a list);
        ``weights`` the quantized weights the forward saved, by te.saved name, when
        return_weights (the first microbatch of a weight cache), else None."""
        if len(args) != len(self.arg_specs):
            raise TeMlirError(f"{self.name}: expected {len(self.arg_specs)} arguments "
                              f"({', '.join(a.label for a in self.arg_specs)}), got {len(args)}")
        ns = getattr(torch.ops, self.ops.namespace)
        grad = self._needs_grad(args) if training is None else training
        if grad and self.fwd is None:
            raise TeMlirError(f"{self.name}: gradients are needed but {self.ops.library.path.name}"
                              f" has no {self.name}_fwd/{self.name}_bwd (compile with "
                              "train=True, te-compile --train), or run under torch.no_grad()")
        use_fwd = self.fwd is not None and (grad or return_weights or cached_weights is not None)
        if cached_weights is not None:
            if self.cached is None:
                raise TeMlirError(f"{self.name}: the library has no weight-cache entry (compile "
                                  "with weight_cache=True, te-compile --weight-cache)")
            entry = self.cached
            extra = []
            for s in self.cached_weight_specs:
                w = cached_weights.get(s.roles["te.cached_weight"]) if isinstance(
                    cached_weights, dict) else None
                if w is None:
                    raise TeMlirError(f"{entry.name}: no cached weight "
                                      f"{s.roles['te.cached_weight']}")
                extra.append(w)
            full = list(args) + extra
        elif use_fwd:
            entry, full = self.fwd, list(args)
        else:
            entry, full = self.inference or self.fwd, list(args)
        takes_bwd_state, all_results = self.entry_convention(entry)
        if takes_bwd_state:
            if bwd_state is None:
                if grad:
                    raise TeMlirError(f"{self.name}: the backward has recipe state ("
                                      + ", ".join(s.roles['te.state']
                                                  for s in self.bwd_state_specs)
                                      + "): pass bwd_state=[...] (updated in place)")
                bwd_state = self.initial_state(device=args[0].device, backward=True)
            full += list(bwd_state)
        step = self.ops.step(entry.name)
        if grad and step is not None and not return_weights and not _compiling():
            # eager training: the op's kernel below autograd, under an autograd.Function
            # built once per entry (torch.compile traces the op's registered autograd)
            return list(self._fast_for(entry.name, step).apply(*full)), None
        res = getattr(ns, entry.name)(*full)
        res = list(res) if isinstance(res, (tuple, list)) else [res]
        weights = None
        if return_weights and entry is self.fwd:
            names = {s.roles["te.cached_weight"] for s in self.cached_weight_specs}
            weights = {r.roles["te.saved"]: res[r.index].detach() for r in entry.results
                       if r.roles.get("te.saved") in names}
        if all_results:
            return res, weights
        return [res[i] for i in self.output_index], weights

    def entry_convention(self, entry):
        """How call() calls `entry` (one of this function's entries): (whether the
        backward's recipe state follows its arguments, which it does for an entry with
        a training step that has such state; whether its results come back all, as the
        inference entry's do, else those at output_index)."""
        step = self.ops.step(entry.name)
        return (step is not None and bool(step.bwd_state),
                entry is self.inference and entry is not self.fwd)

    def forward_saved(self, *args):
        """`name`_fwd below autograd on `args` (the inference entry's arguments): (the
        outputs and new forward state, as call() returns them; {te.saved name: result};
        the entry). A backward recipe state the op takes is TE's initial one (for callers
        that run another backward, backward_override)."""
        if self.fwd is None:
            raise TeMlirError(f"{self.name}: the library has no {self.name}_fwd (compile with "
                              "train=True)")
        full = list(args)
        if self.step is not None and self.step.bwd_state:
            full += self.initial_state(device=args[0].device, backward=True)
        op = self.ops.op(self.fwd.name)
        with torch._C._AutoDispatchBelowAutograd():
            res = getattr(op, "_op", op)(*full)
        res = list(res) if isinstance(res, (tuple, list)) else [res]
        saved = {r.roles["te.saved"]: res[r.index] for r in self.fwd.results if r.is_saved}
        return [res[i] for i in self.output_index], saved, self.fwd

    def training_function(self):
        """The eager autograd.Function of `name`_fwd (inputs: its arguments, then the
        backward recipe state; outputs: the function's outputs and new forward state),
        or None without a training step."""
        if self.fwd is None or self.step is None:
            return None
        return self._fast_for(self.fwd.name, self.step)

    def _fast_for(self, name, step):
        """The eager autograd.Function of forward entry `name` (built once)."""
        fast = self._fast.get(name)
        if fast is None:
            fast = self._fast[name] = _fast_function(self.ops, step, self.output_index)
        return fast

    def __call__(self, *args, bwd_state=None, cached_weights=None):
        outs, _ = self.call(*args, bwd_state=bwd_state, cached_weights=cached_weights)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self):
        return f"<TeFunction {self.ops.namespace}.{self.name}>"
