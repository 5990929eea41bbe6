//===- Backend.h - te-mlir runtime: the backend table -----------*- C++ -*-===//
//
// What the api/*.cpp calls run once a te_rt_* call's arguments are
// checked: ctx->ops-><call>, the entry of the context's backend in a table
// of function pointers listed once in BackendCalls.def (as IREE's HAL
// device vtables). Two tables: te::rt::cpuOps (the CPU reference backend,
// cpu/Backend*.cpp) and te::rt::cudaOps (the CUDA kernels,
// cuda/Dispatch.cpp, compiled in every build: without TE_RT_HAVE_CUDA a
// cuda context cannot be created and its entries only say why). Each entry
// takes the call's Checker (for its messages), its context and the call's
// arguments; it returns the call's result and sets its last error.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_LIB_BACKEND_H
#define TE_RUNTIME_LIB_BACKEND_H

#include "Context.h"

#include <cstdint>

/// The parameters of a backend entry: the call's Checker and context, then
/// the te_rt_* call's own after its context.
#define TE_RT_BACKEND_PARAMS(...)                                              \
  (const ::te::rt::Checker &, te_rt_context *, __VA_ARGS__)

namespace te::rt {

/// One backend: an entry per call of BackendCalls.def, never null (a call
/// the backend lacks is an entry that fails naming the call and the
/// backend, e.g. unsupported()).
struct BackendOps {
  /// The backend's name ("cpu", "cuda"), for messages.
  const char *name;
#define TE_RT_BACKEND_CALL(Name, Ret, Params)                                  \
  Ret(*Name) TE_RT_BACKEND_PARAMS Params;
#include "BackendCalls.def"
};

/// The CPU reference backend (cpu/Backend.cpp).
extern const BackendOps cpuOps;
/// The CUDA backend (cuda/Dispatch.cpp).
extern const BackendOps cudaOps;

/// Sets the context's backend (TE_RT_BACKEND_CPU or TE_RT_BACKEND_CUDA)
/// and the table its calls go through.
void bindBackend(te_rt_context *ctx, int32_t backend);

/// Joins the updates te_rt_amax_update_fork forked on a cuda context back
/// to the stream they left (cuda/Dispatch.cpp); nothing on other contexts
/// or when none is pending. What fails is reported by the stream's next
/// synchronization (or the capture's end), as a kernel's failure is.
void joinForks(te_rt_context *ctx);

/// te_rt_zero_ranges (fork 0), or (fork 1) on a cuda context whose stream
/// is capturing, the same zeroing on the side stream forked from it, beside
/// what the stream queues next until the entry's end joins it
/// (te_rt_arena_release, joinForks); the module runner's zeroing of result
/// padding no entry writes (api/Elementwise.cpp).
int32_t zeroRanges(te_rt_context *ctx, void *const *ptrs, const int64_t *bytes,
                   int64_t count, bool fork);

/// te_rt_branch_begin / _end / _join after their checks
/// (cuda/Dispatch.cpp): on a cuda context whose stream is capturing, fork
/// the kernel state's branch, mark the end of a run, or join the branch
/// back (up to run `run`; -1: all of it); elsewhere in order (begin and end
/// only mark the context as in a branch or not, join does nothing).
int32_t beginBranch(const Checker &c, te_rt_context *ctx);
int32_t endBranch(const Checker &c, te_rt_context *ctx);
int32_t joinBranch(const Checker &c, te_rt_context *ctx, int64_t run);

/// The failure of a call the context's backend does not implement:
/// "<call>: the <backend> backend does not implement this call"; returns 1.
int32_t unsupported(const Checker &c, const te_rt_context *ctx);

} // namespace te::rt

/// Each backend's implementation of every call, from the same list.
namespace te::rt::cpu {
#define TE_RT_BACKEND_CALL(Name, Ret, Params)                                  \
  Ret Name TE_RT_BACKEND_PARAMS Params;
#include "BackendCalls.def"
} // namespace te::rt::cpu

namespace te::rt::cuda {
#define TE_RT_BACKEND_CALL(Name, Ret, Params)                                  \
  Ret Name TE_RT_BACKEND_PARAMS Params;
#include "BackendCalls.def"
} // namespace te::rt::cuda

#endif // TE_RUNTIME_LIB_BACKEND_H
