//===- Context.h - te_rt_context and argument checking ----------*- C++ -*-===//
//
// The execution context behind the ABI's opaque te_rt_context (backend and
// its table of calls, CUDA stream and kernel state, buffer cache, fp32
// staging buffers of the CPU backend, communicators), the captured CUDA
// graph behind te_rt_graph, and the argument checks every te_rt_* call
// runs before it touches memory.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_CONTEXT_H
#define TE_LIB_RUNTIME_CONTEXT_H

#include "RuntimeInternal.h"
#include "te/Runtime/TERuntime.h"

#include <cstdint>
#include <exception>
#include <map>
#include <unordered_map>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace te::rt {
struct BackendOps;
extern const BackendOps cpuOps;
struct EntryGraphCache;
} // namespace te::rt

struct te_rt_context {
  /// TE_RT_BACKEND_CPU or TE_RT_BACKEND_CUDA (never AUTO), and the table of
  /// that backend the compute calls go through (Backend.h); both set by
  /// te::rt::bindBackend.
  int32_t backend = TE_RT_BACKEND_CPU;
  const te::rt::BackendOps *ops = &te::rt::cpuOps;
  /// The stream the CUDA backend queues on (cudaStream_t): the context's
  /// own, or the caller's after te_rt_context_set_stream (null is then the
  /// legacy default stream); null on cpu.
  void *stream = nullptr;
  /// The stream the context created (destroyed with it), null on cpu.
  void *ownStream = nullptr;
  /// The event te_rt_context_set_stream orders a stream switch with
  /// (cudaEvent_t, created at the first switch; destroyed with the context).
  void *switchEvent = nullptr;
  /// The caller's arena (te_rt_context_set_arena), null when entries
  /// allocate their own.
  void *arena = nullptr;
  int64_t arenaBytes = 0;
  /// The arguments the caller donates to the next entries
  /// (te_rt_context_set_donated), by index.
  std::vector<uint8_t> donated;
  /// The caller's workspace (te_rt_context_set_workspace), null when the
  /// kernel state keeps its own; what the last call short of it needed.
  void *workspace = nullptr;
  int64_t workspaceBytes = 0;
  int64_t workspaceNeeded = 0;
  /// The CUDA backend's kernel state (te_kernels_state: cuBLASLt handle,
  /// workspace, device scratch), created by the first compute call.
  void *cuda = nullptr;
  /// Between te_rt_branch_begin and te_rt_branch_end: the kernel state the
  /// CUDA backend's calls take instead of `cuda` (the branch's while the
  /// stream is captured, `cuda` itself otherwise); `inBranch` on every
  /// backend.
  void *cudaBranch = nullptr;
  bool inBranch = false;
  /// NVFP4's stochastic-rounding seed (te_rt_context_set_seed; 0 until
  /// set), combined with each quantize call's own seed.
  uint64_t seed = 0;

  /// Grow-only fp32 staging buffers, indexed by slot, for converting
  /// bf16/f16 operands and for partial results. Reused across calls; the
  /// context is used by one thread at a time.
  float *scratch(int slot, int64_t elements);

  static constexpr int kScratchSlots = 8;

  /// CUDA buffers: te_rt_free keeps a buffer for reuse instead of
  /// cudaFree (which stalls the device); te_rt_alloc takes a cached buffer
  /// of the same rounded size first. Safe because all of a context's work
  /// is in one order (te_rt_context_set_stream orders a switch). Freed for
  /// real on OOM and at destroy.
  std::unordered_map<void *, int64_t> cudaLive;
  std::multimap<int64_t, void *> cudaCached;

  /// CUDA graphs. `capturing` is the graph being recorded, between
  /// te_rt_capture_begin and te_rt_capture_end (null otherwise).
  /// `graphOwned` holds the buffers (still in cudaLive) that a graph owns:
  /// those te_rt_alloc handed out during its capture, and those te_rt_free'd
  /// during it (the captured work may use them); the value says whether
  /// te_rt_free was called. te_rt_free leaves them alone, so no later
  /// te_rt_alloc hands out memory a replay still writes;
  /// te_rt_graph_destroy parks them in cudaCached.
  te_rt_graph *capturing = nullptr;
  std::unordered_map<void *, bool> graphOwned;
  /// te_module_run's CUDA graphs of whole entries (module/EntryGraphs.h),
  /// created by the first entry run on a cuda context; destroyed with it.
  te::rt::EntryGraphCache *entryGraphs = nullptr;

  /// The communicator of each group (te_rt_context_set_comm; null when
  /// unset), borrowed: the context never destroys one (Comm.h).
  te_rt_comm *comms[TE_RT_GROUP_COUNT] = {};

private:
  std::unique_ptr<float[]> buffers[kScratchSlots];
  int64_t capacity[kScratchSlots] = {};
};

/// A captured, instantiated CUDA graph (te_rt_capture_end) and the buffers
/// it owns (see te_rt_context::graphOwned).
struct te_rt_graph {
  te_rt_context *ctx = nullptr;
  void *exec = nullptr; ///< cudaGraphExec_t
  std::vector<void *> owned;
};

namespace te::rt {

/// Records what `run` queues on `ctx` into a CUDA graph without running it:
/// the capture goes on the context's own stream (ctx->stream meanwhile; a
/// capture may not begin on the legacy default stream a caller may have
/// set), the graph is instantiated and uploaded on the caller's stream.
/// Null when `run` fails, the capture fails or `run` was handed buffers by
/// te_rt_alloc (a graph would own them for its life): nothing of it is
/// kept then, and the last error says why.
te_rt_graph *captureAside(te_rt_context *ctx, int32_t (*run)(void *),
                          void *state);

/// Argument checks of one te_rt_* call. Each check returns true when the
/// argument is fine; otherwise it records "<call>: <message>" as the last
/// error and returns false, so a call reads
///   if (!c.context(ctx) || !c.notNull("x", x) || ...) return 1;
class Checker {
public:
  explicit Checker(const char *call) : call(call) {}

  /// Records "<call>: <message>"; returns false.
  bool fail(const std::string &message) const;

  bool context(const te_rt_context *ctx) const;
  bool notNull(const char *name, const void *p) const;
  bool mustBeNull(const char *name, const void *p, const char *why) const;
  bool nonNegative(const char *name, int64_t v) const;
  bool positive(const char *name, int64_t v) const;
  bool flag(const char *name, int32_t v) const;
  /// A TE_RT_DTYPE_*; `name` is "dtype" unless the call has several.
  bool dtype(int32_t v, const char *name = "dtype") const;
  /// a * b * elemBytes bytes fit in int64 (and size_t); writes a * b to
  /// *count. `what` names the product, e.g. "rows * cols".
  bool product(const char *what, int64_t a, int64_t b, int64_t elemBytes,
               int64_t *count) const;
  /// n >= 0 and n * elemBytes bytes fit.
  bool count(const char *name, int64_t n, int64_t elemBytes) const;
  /// A [rows, cols] matrix of `elemBytes`-byte elements (default fp32-sized):
  /// both >= 0 and the product fits; writes rows * cols to *n.
  bool matrix(int64_t rows, int64_t cols, int64_t *n,
              int64_t elemBytes = 4) const {
    return nonNegative("rows", rows) && nonNegative("cols", cols) &&
           product("rows * cols", rows, cols, elemBytes, n);
  }
  const char *name() const { return call; }

private:
  const char *call;
};

/// The bytes of this machine's memory (RAM and swap), read once: no host
/// buffer of the runtime may be larger (a larger request is an error, not
/// an allocation the OS or a sanitizer allocator aborts on).
int64_t hostMemoryBytes();

/// Thrown by a guarded() body whose failure is already the last error.
struct Reported {};

/// Runs `body` and turns a C++ exception (out of memory, no thread) into the
/// last error; returns 0 or 1 for the ABI.
template <typename Body> int32_t guarded(const Checker &c, Body body) {
  try {
    body();
    return 0;
  } catch (const Reported &) {
  } catch (const std::bad_alloc &) {
    c.fail("out of host memory");
  } catch (const std::exception &e) {
    c.fail(e.what());
  } catch (...) {
    c.fail("unexpected C++ exception");
  }
  return 1;
}

/// [a, a + aBytes) and [b, b + bBytes) share a byte (the calls' aliasing
/// checks: an output that would overwrite what the call still reads).
inline bool overlap(const void *a, int64_t aBytes, const void *b,
                    int64_t bBytes) {
  uintptr_t x = reinterpret_cast<uintptr_t>(a),
            y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + uint64_t(bBytes) &&
         y < x + uint64_t(aBytes);
}

} // namespace te::rt

#endif // TE_LIB_RUNTIME_CONTEXT_H
