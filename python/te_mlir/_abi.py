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

__all__ = ["TeMlirError", "TeMlirWarning", "find_build", "runtime", "Runtime", "Context", "Graph"]


class TeMlirError(RuntimeError):
    """A te-mlir failure: a runtime call that returned non-zero (with te_rt_last_error's
    text), a bad argument caught before a call, or a missing tool."""


class TeMlirWarning(UserWarning):
    """Something te-mlir did differently from what was asked, e.g. te-compile's warning
    that a module op whose dims do not fit the recipe's alignment runs unquantized.
    ``strict=True`` (or TE_MLIR_STRICT=1) makes these errors."""


_REPO = Path(__file__).resolve().parents[2]  # python/te_mlir/_abi.py -> repository root
# An installed wheel's binaries (cmake/TEWheel.cmake): bin/te-compile, lib/libte_runtime.so,
# lib/libte_torch_ops.so. Absent in a checkout.
_NATIVE = Path(__file__).resolve().parent / "_native"


def _candidates():
    """(build dirs searched, in order) with the reason each is there."""
    out = []
    env = os.environ.get("TE_MLIR_BUILD")
    if env:
        out.append((Path(env), "$TE_MLIR_BUILD"))
    if _NATIVE.is_dir():
        out.append((_NATIVE, "the installed package"))
    if (_REPO / "CMakeLists.txt").exists() and (_REPO / "lib" / "Runtime").is_dir():  # run from a checkout
        for name in ("build", "build-new"):
            out.append((_REPO / name, "the repository"))
    exe = shutil.which("te-compile")
    if exe:
        out.append((Path(exe).resolve().parent.parent, "te-compile on PATH"))
    return out


def find_build(what="lib/libte_runtime.so"):
    """The build directory (with bin/ and lib/) holding `what`: $TE_MLIR_BUILD, else the
    installed wheel's te_mlir/_native, else <repo>/build and <repo>/build-new (a checkout),
    else the one of te-compile on $PATH. Raises TeMlirError naming every place searched."""
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
u32, u64, f32, f64 = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_float, ctypes.c_double
P64, PP, P32, PF = ctypes.POINTER(i64), ctypes.POINTER(vp), ctypes.POINTER(i32), ctypes.POINTER(f32)

# The functions this package calls, with their ctypes signatures (result, [arguments]).
# test/python/test_abi.py checks every entry against include/te/Runtime/TERuntime.def and
# TEModule.h (argument count and C types), and that every function those declare is here
# or in NOT_BOUND. A data pointer the caller passes as an address (a tensor's data_ptr())
# is vp whatever it points to.
_SIGS = {
    # te_rt_*: the runtime, its contexts and caller memory
    "te_rt_version": (cp, []),
    "te_rt_last_error": (cp, []),
    "te_rt_backend_from_name": (i32, [cp]),
    "te_rt_backend_name": (cp, [i32]),
    "te_rt_backend_available": (i32, [i32]),
    "te_rt_select_backend": (i32, [i32]),
    "te_rt_context_create": (vp, [i32]),
    "te_rt_context_destroy": (None, [vp]),
    "te_rt_context_backend": (i32, [vp]),
    "te_rt_context_set_stream": (i32, [vp, vp]),
    "te_rt_context_stream": (vp, [vp]),
    "te_rt_context_capturing": (i32, [vp]),
    "te_rt_context_set_arena": (i32, [vp, vp, i64]),
    "te_rt_context_set_workspace": (i32, [vp, vp, i64]),
    "te_rt_workspace_bytes": (i64, []),
    "te_rt_gemm_workspace_bytes": (i64, []),
    "te_rt_context_workspace_needed": (i64, [vp]),
    "te_rt_synchronize": (i32, [vp]),
    "te_rt_copy": (i32, [vp, vp, vp, i64]),
    "te_rt_zero": (i32, [vp, vp, i64]),
    "te_rt_zero_ranges": (i32, [vp, PP, P64, i64]),
    # the norm kernels alone (bench/bench.py times them beside torch's)
    "te_rt_norm_fwd": (i32, [vp, i32, i32, vp, vp, vp, f64, i32, i64, i64, vp, vp, vp]),
    "te_rt_norm_bwd": (i32, [vp, i32, i32, vp, vp, vp, vp, vp, i32, i64, i64, vp, vp, vp]),
    # CUDA graphs of a context's work
    "te_rt_capture_begin": (i32, [vp]),
    "te_rt_capture_end": (i32, [vp, PP]),
    "te_rt_graph_launch": (i32, [vp, vp]),
    "te_rt_graph_destroy": (None, [vp]),
    # te_module_*: the module client
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
    "te_module_entry_arena_donated_text": (cp, [vp]),
    "te_module_entry_arena_bytes_donated": (i32, [vp, P64, vp, P64]),
    "te_module_entry_state_result": (i64, [vp, i64]),
    "te_module_entry_result_padding_written": (i32, [vp, i64]),
    "te_module_entry_result_state_in_place": (i64, [vp, i64]),
    "te_module_bind_dims": (i32, [vp, ctypes.POINTER(cp), ctypes.POINTER(P64), P64, P64]),
    "te_module_run": (i32, [vp, vp, PP, PP, P64]),
    "te_module_run_donated": (i32, [vp, vp, PP, PP, P64, vp]),
    "te_module_tensor_dtype": (cp, [vp]),
    "te_module_tensor_label": (cp, [vp]),
    "te_module_tensor_rank": (i64, [vp]),
    "te_module_tensor_dim": (cp, [vp, i64]),
    "te_module_tensor_shape_text": (cp, [vp]),
    "te_module_tensor_role": (cp, [vp, i32]),
    "te_module_tensor_donatable": (i32, [vp]),
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
    "te_module_tensor_initial_state": (i32, [vp, PF]),
    "te_module_eval_dim": (i32, [cp, P64, i64, P64, P64]),
    "te_module_step_create": (i32, [vp, cp, PP]),
    "te_module_step_destroy": (None, [vp]),
    "te_module_step_fwd": (vp, [vp]),
    "te_module_step_bwd": (vp, [vp]),
    "te_module_step_feed": (i32, [vp, i64, P32, P64]),
    "te_module_step_bwd_dims": (i32, [vp, P64, P64]),
    "te_module_step_run": (i32, [vp, vp, PP, PP, PP, PP, PP, P64]),
    "te_module_step_wgrad": (vp, [vp]),
    "te_module_step_wgrad_feed": (i32, [vp, i64, P32, P64]),
    "te_module_step_wgrad_dims": (i32, [vp, P64, P64]),
}

# Exported, deliberately not bound: what compiled entries call (the compute primitives,
# their checks and arena), what Python has no use for (buffers come from torch, the CUDA
# self-test is te-run's), and tensor parallelism (not driven from Python yet).
NOT_BOUND = frozenset("""
    te_rt_cuda_selftest te_rt_arena_acquire te_rt_arena_release te_rt_alloc te_rt_free
    te_rt_copy_to_backend te_rt_copy_to_host
    te_rt_gemm_fprop te_rt_gemm_dgrad te_rt_gemm_wgrad te_rt_gemm_wgrad_fp32 te_rt_gemm_fprop_act
    te_rt_gemm_dgrad_dact te_rt_check_multiple te_rt_check_range te_rt_act_fwd te_rt_act_bwd
    te_rt_dbias_dact te_rt_bias_grad te_rt_add te_rt_cast te_rt_transpose te_rt_transpose_bytes
    te_rt_add_columnwise_fp8
    te_rt_quantize_fp8 te_rt_dbias_quantize_fp8 te_rt_gemm_fp8 te_rt_act_quantize_fp8
    te_rt_dact_quantize_fp8 te_rt_norm_quantize_fp8 te_rt_amax_update te_rt_amax_update_unused
    te_rt_amax_update_fork te_rt_branch_begin te_rt_branch_end te_rt_branch_join
    te_rt_quantize_fp8_block te_rt_gemm_fp8_block te_rt_quantize_mxfp8 te_rt_gemm_mxfp8
    te_rt_context_set_seed
    te_rt_quantize_nvfp4 te_rt_quantize_nvfp4_4over6 te_rt_nvfp4_random_bits te_rt_gemm_nvfp4
    te_rt_quantize_nvfp4_row_scaled te_rt_gemm_nvfp4_row_scaled
    te_rt_comm_available te_rt_nccl_unique_id te_rt_comm_create_nccl te_rt_comm_wrap_nccl
    te_rt_comm_wrap_mpi te_rt_comm_destroy te_rt_comm_size te_rt_comm_rank
    te_rt_context_set_comm te_rt_all_gather te_rt_reduce_scatter te_rt_all_reduce
    te_rt_bias_add te_rt_context_set_donated te_rt_arg_donated
    te_module_tensor_alloc te_module_step_bwd_args te_module_step_wgrad_args
""".split())

BACKEND_CPU, BACKEND_CUDA = 0, 1

ROLE_SAVED, ROLE_GRAD_OF, ROLE_STATE, ROLE_CACHED_WEIGHT, ROLE_ALIAS = range(5)
ROLE_KEYS = ("te.saved", "te.grad_of", "te.state", "te.cached_weight", "te.alias",
             "te.main_grad_of", "te.wgrad_stash")
FEED_INPUT, FEED_RESULT, FEED_GRAD, FEED_STATE, FEED_MAIN_GRAD, FEED_STASH = range(6)

# The version of the package, which must be the runtime's: they ship together (the
# runtime says it in te_rt_version, "te-mlir 0.1.0 (cpu,cuda)").
VERSION = "0.1.0"


def i64s(values):
    """An int64 array of `values` (one element when empty: never a NULL pointer)."""
    return (ctypes.c_int64 * max(1, len(values)))(*values)


def addresses(values):
    """A void* array of buffer addresses (ints; None for NULL), as te_module_run takes."""
    return (ctypes.c_void_p * max(1, len(values)))(*values)


# A guest in the caller's process: nothing of ours in the global scope (where it could
# interpose on, or be interposed by, another library's symbols); every symbol bound now.
_RTLD_LOCAL = os.RTLD_LOCAL | os.RTLD_NOW


def _preload_cuda_libs():
    """libte_runtime.so's runpath may lack the CUDA libraries; torch's nvidia wheels
    ship the same sonames. Loaded RTLD_LOCAL: the runtime's DT_NEEDED libcudart.so.13 /
    libcublasLt.so.13 match these by soname."""
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
    libraries bind to this copy by its SONAME). It must be the runtime of this package's
    version and have every function of _SIGS: anything else is a TeMlirError here."""

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
        missing = [name for name in _SIGS if not hasattr(L, name)]
        version = None
        if hasattr(L, "te_rt_version"):
            L.te_rt_version.restype, L.te_rt_version.argtypes = cp, []
            version = (L.te_rt_version() or b"").decode(errors="replace")
        words = (version or "").split()
        if missing or len(words) < 2 or words[:2] != ["te-mlir", VERSION]:
            raise TeMlirError(
                f"te-mlir: the runtime {self.path} ({version or 'no te_rt_version'}) is not the "
                f"one of this package (te-mlir {VERSION})"
                + (f": it lacks {', '.join(missing[:6])}" + (" ..." if len(missing) > 6 else "")
                   if missing else "")
                + ". The package and libte_runtime.so ship together: use the python/ of the "
                "same build (TE_MLIR_BUILD).")
        for name, (res, args) in _SIGS.items():
            f = getattr(L, name)
            f.restype, f.argtypes = res, args
        self.lib = L
        self.version = version
        self._contexts = {}
        self._lock = threading.Lock()

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

    def workspace_bytes(self):
        """The workspace a caller should start a cuda context with (te_rt_workspace_bytes)."""
        return self.lib.te_rt_workspace_bytes()

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
    """A te_rt_context (one per backend and device). `workspace` holds what the caller
    keeps alive with it (the CUDA workspace tensor)."""

    def __init__(self, rt, handle, backend, device_index):
        self.rt, self.handle, self.backend, self.device_index = rt, handle, backend, device_index
        self.workspace = None
        # a context is used by one thread at a time (TERuntime.def): set_stream / arena /
        # run of one call happen under this lock
        self.lock = threading.RLock()

    def _check(self, rc, what):
        self.rt.check(rc, f"{what} ({self.backend} context)")

    def set_stream(self, stream):
        """Queue later work on `stream` (a cudaStream_t as an int; 0: the legacy default
        stream; cpu accepts only 0)."""
        self._check(self.rt.lib.te_rt_context_set_stream(self.handle, stream or None),
                    "te_rt_context_set_stream")

    def set_arena(self, ptr, nbytes):
        """Entries take their arena from [ptr, ptr + nbytes) (256-byte aligned); ptr None:
        they allocate their own again."""
        self._check(self.rt.lib.te_rt_context_set_arena(self.handle, ptr, nbytes if ptr else 0),
                    "te_rt_context_set_arena")

    def set_workspace(self, ptr, nbytes):
        """The cuda backend's GEMM workspace and scratch from [ptr, ptr + nbytes); ptr None:
        the context's own again."""
        self._check(self.rt.lib.te_rt_context_set_workspace(self.handle, ptr,
                                                            nbytes if ptr else 0),
                    "te_rt_context_set_workspace")

    def workspace_needed(self):
        """The workspace bytes the last call that failed for lack of workspace needed."""
        return self.rt.lib.te_rt_context_workspace_needed(self.handle)

    def synchronize(self):
        """Waits for the context's queued work (no-op on cpu)."""
        self._check(self.rt.lib.te_rt_synchronize(self.handle), "te_rt_synchronize")

    def copy(self, dst, src, nbytes):
        """Queues a copy of `nbytes` between buffers of the context (addresses)."""
        self._check(self.rt.lib.te_rt_copy(self.handle, dst, src, nbytes), "te_rt_copy")

    def capture_begin(self):
        """Starts recording the context's stream into a CUDA graph (cuda only)."""
        self._check(self.rt.lib.te_rt_capture_begin(self.handle), "te_rt_capture_begin")

    def capture_end(self):
        """Stops recording: the Graph, or a TeMlirError (the capture abandoned)."""
        g = ctypes.c_void_p()
        rc = self.rt.lib.te_rt_capture_end(self.handle, ctypes.byref(g))
        if rc != 0 or not g.value:
            if g.value:
                self.rt.lib.te_rt_graph_destroy(g)
            self._check(rc or 1, "te_rt_capture_end")
        return Graph(self, g)

    def __del__(self):
        try:
            if self.handle:
                self.rt.lib.te_rt_context_destroy(self.handle)
        except Exception:
            pass


class Graph:
    """A CUDA graph captured on a context (Context.capture_end); replayed on it."""

    def __init__(self, ctx, handle):
        self.ctx, self.handle = ctx, handle

    def launch(self):
        """Queues one replay on the context's stream."""
        rc = self.ctx.rt.lib.te_rt_graph_launch(self.ctx.handle, self.handle)
        if rc != 0:
            self.ctx._check(rc, "te_rt_graph_launch")

    def destroy(self):
        """Frees the graph and the buffers it owns (the context must still exist)."""
        if self.handle:
            self.ctx.rt.lib.te_rt_graph_destroy(self.handle)
            self.handle = None


_RUNTIME = None
_RT_LOCK = threading.Lock()


def runtime(path=None):
    """The process's Runtime: libte_runtime.so of find_build(), or the one at `path` (a
    script pointing at another build, before anything loaded one; a process has one
    runtime, so asking for another later is an error)."""
    global _RUNTIME
    if _RUNTIME is not None and path is None:
        return _RUNTIME
    with _RT_LOCK:
        if _RUNTIME is None:
            _RUNTIME = Runtime(path or find_build() / "lib" / "libte_runtime.so")
        elif path is not None and Path(path).resolve() != _RUNTIME.path.resolve():
            raise TeMlirError(f"te-mlir: the runtime {_RUNTIME.path} is loaded already; "
                              f"cannot load {path} too")
    return _RUNTIME
