"""ctypes bindings of libte_runtime.so: the te_rt_* ABI (include/te/Runtime/
TERuntime.def) and the module client te_module_* (include/te/Runtime/TEModule.h).

Nothing here imports torch. The runtime is found once (``find_build``) and loaded
RTLD_LOCAL (its symbols stay out of the process's global scope): te-compile'd libraries,
which link against it (DT_NEEDED libte_runtime.so), still resolve their te_rt_* symbols to
this copy, since the dynamic loader matches an already loaded object by its SONAME
(libte_runtime.so) before it searches paths.
"""
import ctypes
import os
import shutil
import sys
import threading
from pathlib import Path

__all__ = ["TeMlirError", "find_build", "runtime", "Runtime"]


class TeMlirError(RuntimeError):
    """A te-mlir failure: a runtime call that returned non-zero (with te_rt_last_error's
    text), a bad argument caught before a call, or a missing tool."""


_REPO = Path(__file__).resolve().parents[2]  # python/te_mlir/_abi.py -> repository root


def _candidates():
    """(build dirs searched, in order) with the reason each is there."""
    out = []
    env = os.environ.get("TE_MLIR_BUILD")
    if env:
        out.append((Path(env), "$TE_MLIR_BUILD"))
    if (_REPO / "CMakeLists.txt").exists() and (_REPO / "lib" / "Runtime").is_dir():  # run from a checkout
        for name in ("build", "build-new"):
            out.append((_REPO / name, "the repository"))
    exe = shutil.which("te-compile")
    if exe:
        out.append((Path(exe).resolve().parent.parent, "te-compile on PATH"))
    return out


def find_build(what="lib/libte_runtime.so"):
    """The build directory (with bin/ and lib/) holding `what`: $TE_MLIR_BUILD, else
    <repo>/build and <repo>/build-new, else the one of te-compile on $PATH. Raises
    TeMlirError naming every place searched."""
    env = os.environ.get("TE_MLIR_BUILD")
    searched = []
    for d, why in _candidates():
        p = d / what
        if p.exists():
            return d
        searched.append(f"{p} ({why})")
        if env and why == "$TE_MLIR_BUILD":
            # an explicit build dir that lacks it is an error, not a fallback
            raise TeMlirError(f"te-mlir: $TE_MLIR_BUILD={env} has no {what}")
    if not exe_on_path():
        searched.append("te-compile on $PATH (not found)")
    if not env:
        searched.insert(0, "$TE_MLIR_BUILD (not set)")
    raise TeMlirError("te-mlir: cannot find " + what + "; searched: " + "; ".join(searched)
                      + ". Set TE_MLIR_BUILD to a te-mlir build directory (with bin/ and lib/).")


def exe_on_path():
    return shutil.which("te-compile") is not None


vp, i32, i64, cp = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_char_p
P64, PP, P32 = ctypes.POINTER(i64), ctypes.POINTER(vp), ctypes.POINTER(i32)

_SIGS = {
    # te_rt_*
    "te_rt_version": (cp, []),
    "te_rt_last_error": (cp, []),
    "te_rt_backend_from_name": (i32, [cp]),
    "te_rt_backend_name": (cp, [i32]),
    "te_rt_backend_available": (i32, [i32]),
    "te_rt_select_backend": (i32, [i32]),
    "te_rt_context_create": (vp, [i32]),
    "te_rt_context_destroy": (None, [vp]),
    "te_rt_context_backend": (i32, [vp]),
    "te_rt_synchronize": (i32, [vp]),
    # te_module_*
    "te_module_open": (i32, [cp, PP]),
    "te_module_close": (None, [vp]),
    "te_module_path": (cp, [vp]),
    "te_module_info_text": (cp, [vp]),
    "te_module_get": (cp, [vp, cp]),
    "te_module_num_entries": (i64, [vp]),
    "te_module_entry_at": (vp, [vp, i64]),
    "te_module_find_entry": (vp, [vp, cp]),
    "te_module_entry_name": (cp, [vp]),
    "te_module_entry_symbol": (cp, [vp]),
    "te_module_entry_get": (cp, [vp, cp]),
    "te_module_entry_num_args": (i64, [vp]),
    "te_module_entry_num_results": (i64, [vp]),
    "te_module_entry_num_dims": (i64, [vp]),
    "te_module_entry_arg": (vp, [vp, i64]),
    "te_module_entry_result": (vp, [vp, i64]),
    "te_module_entry_arena_text": (cp, [vp]),
    "te_module_entry_arena_bytes": (i32, [vp, P64, P64]),
    "te_module_entry_state_result": (i64, [vp, i64]),
    "te_module_bind_dims": (i32, [vp, ctypes.POINTER(cp), ctypes.POINTER(P64), P64, P64]),
    "te_module_run": (i32, [vp, vp, PP, PP, P64]),
    "te_module_tensor_dtype": (cp, [vp]),
    "te_module_tensor_label": (cp, [vp]),
    "te_module_tensor_rank": (i64, [vp]),
    "te_module_tensor_dim": (cp, [vp, i64]),
    "te_module_tensor_shape_text": (cp, [vp]),
    "te_module_tensor_role": (cp, [vp, i32]),
    "te_module_tensor_get": (cp, [vp, cp]),
    "te_module_tensor_alignment": (i64, [vp]),
    "te_module_tensor_num_inner": (i64, [vp]),
    "te_module_tensor_inner_name": (cp, [vp, i64]),
    "te_module_tensor_inner_dtype": (cp, [vp, i64]),
    "te_module_tensor_inner_rank": (i64, [vp, i64]),
    "te_module_tensor_inner_dim": (cp, [vp, i64, i64]),
    "te_module_tensor_inner_layout": (i32, [vp, i64, P64, P64, P64]),
    "te_module_tensor_shape": (i32, [vp, P64, P64]),
    "te_module_tensor_bytes": (i32, [vp, P64, P64]),
    "te_module_tensor_initial_state": (i32, [vp, ctypes.POINTER(ctypes.c_float)]),
    "te_module_eval_dim": (i32, [cp, P64, i64, P64, P64]),
    "te_module_step_create": (i32, [vp, cp, PP]),
    "te_module_step_destroy": (None, [vp]),
    "te_module_step_fwd": (vp, [vp]),
    "te_module_step_bwd": (vp, [vp]),
    "te_module_step_feed": (i32, [vp, i64, P32, P64]),
    "te_module_step_bwd_dims": (i32, [vp, P64, P64]),
}

# The stream/arena/workspace ABI (newer runtimes); probed with hasattr.
_OPTIONAL = {
    "te_rt_context_set_stream": (i32, [vp, vp]),
    "te_rt_context_set_arena": (i32, [vp, vp, i64]),
    "te_rt_context_set_workspace": (i32, [vp, vp, i64]),
    "te_rt_workspace_bytes": (i64, []),
    "te_rt_context_workspace_needed": (i64, [vp]),
    # te_module_run zeroes quantized results' padding with it (a runtime without it
    # leaves that to the caller)
    "te_rt_zero_ranges": (i32, [vp, PP, P64, i64]),
}

BACKEND_CPU, BACKEND_CUDA = 0, 1

ROLE_SAVED, ROLE_GRAD_OF, ROLE_STATE, ROLE_CACHED_WEIGHT, ROLE_ALIAS = range(5)
ROLE_KEYS = ("te.saved", "te.grad_of", "te.state", "te.cached_weight", "te.alias")
FEED_INPUT, FEED_RESULT, FEED_GRAD, FEED_STATE = range(4)


def i64s(values):
    return (ctypes.c_int64 * max(1, len(values)))(*values)


# A guest in the caller's process: nothing of ours in the global scope (where it could
# interpose on, or be interposed by, another library's symbols); every symbol bound now.
_RTLD_LOCAL = os.RTLD_LOCAL | os.RTLD_NOW


def _preload_cuda_libs():
    """libte_runtime.so's runpath may lack the CUDA libraries; torch's nvidia wheels
    ship the same sonames (as bench/bench.py does). Loaded RTLD_LOCAL: the runtime's
    DT_NEEDED libcudart.so.13 / libcublasLt.so.13 match these by soname."""
    for so in ("libcudart.so.13", "libcublasLt.so.13", "libcudart.so.12", "libcublasLt.so.12"):
        for d in [os.path.join(p, "nvidia", sub, "lib") for p in sys.path if p
                  for sub in ("cu13", "cuda_runtime", "cublas")] + ["/usr/local/cuda/lib64"]:
            f = os.path.join(d, so)
            if os.path.exists(f):
                try:
                    ctypes.CDLL(f, mode=_RTLD_LOCAL)
                except OSError:
                    pass
                break


class Runtime:
    """The loaded libte_runtime.so with its signatures set (loaded RTLD_LOCAL; compiled
    libraries bind to this copy by its SONAME)."""

    def __init__(self, path):
        self.path = Path(path)
        try:
            L = ctypes.CDLL(str(self.path), mode=_RTLD_LOCAL)
        except OSError:
            _preload_cuda_libs()
            try:
                L = ctypes.CDLL(str(self.path), mode=_RTLD_LOCAL)
            except OSError as ex:
                raise TeMlirError(f"te-mlir: cannot load the runtime {self.path}: {ex}") from None
        for name, (res, args) in _SIGS.items():
            f = getattr(L, name)
            f.restype, f.argtypes = res, args
        self.has = {}
        for name, (res, args) in _OPTIONAL.items():
            ok = hasattr(L, name)
            self.has[name] = ok
            if ok:
                f = getattr(L, name)
                f.restype, f.argtypes = res, args
        self.lib = L
        self.version = L.te_rt_version().decode()
        self._contexts = {}
        self._lock = threading.Lock()

    @property
    def has_stream(self):
        return self.has["te_rt_context_set_stream"]

    @property
    def has_arena(self):
        return self.has["te_rt_context_set_arena"]

    @property
    def has_workspace(self):
        return self.has["te_rt_context_set_workspace"] and self.has["te_rt_workspace_bytes"]

    def error(self):
        e = self.lib.te_rt_last_error()
        return e.decode(errors="replace") if e else "(no error text)"

    def check(self, rc, what):
        if rc != 0:
            raise TeMlirError(f"{what}: {self.error()}")

    def backend_id(self, name):
        b = self.lib.te_rt_backend_from_name(name.encode())
        if b < 0 or b > 2:
            raise TeMlirError(f"te-mlir: unknown backend {name!r} (cpu, cuda or auto)")
        return b

    def select_backend(self, name):
        """The backend that runs for `name` (cpu|cuda|auto; $TE_RT_BACKEND overrides)."""
        b = self.lib.te_rt_select_backend(self.backend_id(name))
        if b not in (BACKEND_CPU, BACKEND_CUDA):
            raise TeMlirError(f"te-mlir: backend {name!r} cannot run here: {self.error()}")
        return self.lib.te_rt_backend_name(b).decode()

    def context(self, backend, device_index=0):
        """The context of (backend, device), created once and kept alive."""
        key = (backend, device_index)
        ctx = self._contexts.get(key)
        if ctx is None:
            with self._lock:
                ctx = self._contexts.get(key)
                if ctx is None:
                    h = self.lib.te_rt_context_create(self.backend_id(backend))
                    if not h:
                        raise TeMlirError(f"te_rt_context_create({backend}): {self.error()}")
                    ctx = Context(self, h, backend, device_index)
                    self._contexts[key] = ctx
        return ctx


class Context:
    """A te_rt_context (one per backend and device). `state` holds what the caller keeps
    alive with it (the CUDA workspace tensor)."""

    def __init__(self, rt, handle, backend, device_index):
        self.rt, self.handle, self.backend, self.device_index = rt, handle, backend, device_index
        self.workspace = None
        # a context is used by one thread at a time (TERuntime.def): set_stream / arena /
        # run of one call happen under this lock
        self.lock = threading.RLock()

    def __del__(self):
        try:
            if self.handle:
                self.rt.lib.te_rt_context_destroy(self.handle)
        except Exception:
            pass


_RUNTIME = None
_RT_LOCK = threading.Lock()


def runtime():
    """The process's Runtime (libte_runtime.so of find_build())."""
    global _RUNTIME
    if _RUNTIME is None:
        with _RT_LOCK:
            if _RUNTIME is None:
                _RUNTIME = Runtime(find_build() / "lib" / "libte_runtime.so")
    return _RUNTIME
