//===- Context.cpp - te-mlir runtime: contexts and buffers ------*- C++ -*-===//
//
// te_rt_context_* (NVFP4's seed included), te_rt_alloc/free, the copies,
// te_rt_zero, te_rt_synchronize and the CUDA graph calls (te_rt_capture_*,
// te_rt_graph_*) for both backends, the binding of a context to its
// backend's table (Backend.h), and the argument checks shared by every
// te_rt_* call.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Comm.h"
#include "Context.h"
#include "module/EntryGraphs.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <sys/sysinfo.h>

using te::rt::Checker;

int64_t te::rt::hostMemoryBytes() {
  static const int64_t bytes = [] {
    struct sysinfo info;
    if (sysinfo(&info) != 0)
      return int64_t(1) << 40;
    unsigned __int128 total =
        (unsigned __int128)(info.totalram + info.totalswap) * info.mem_unit;
    return total > (unsigned __int128)INT64_MAX ? INT64_MAX : int64_t(total);
  }();
  return bytes;
}

float *te_rt_context::scratch(int slot, int64_t elements) {
  if (elements > capacity[slot]) {
    // Grow by at least half again so that slowly growing sizes do not
    // reallocate on every call.
    int64_t grown = std::max(elements, capacity[slot] + capacity[slot] / 2);
    // More than the machine holds: out of memory (the callers run in
    // guarded(), which reports it), before any allocator sees the size.
    if (elements > te::rt::hostMemoryBytes() / int64_t(sizeof(float)))
      throw std::bad_alloc();
    grown = std::min(grown, te::rt::hostMemoryBytes() / int64_t(sizeof(float)));
    buffers[slot].reset(); // free first: the old contents are not kept
    capacity[slot] = 0;
    buffers[slot].reset(new float[static_cast<size_t>(grown)]);
    capacity[slot] = grown;
  }
  return buffers[slot].get();
}

//===----------------------------------------------------------------------===//
// Checker
//===----------------------------------------------------------------------===//

namespace te::rt {

bool Checker::fail(const std::string &message) const {
  te_rt_internal_set_error(std::string(call) + ": " + message);
  return false;
}

bool Checker::context(const te_rt_context *ctx) const {
  return ctx ? true : fail("ctx is NULL");
}

bool Checker::notNull(const char *name, const void *p) const {
  return p ? true : fail(std::string(name) + " is NULL");
}

bool Checker::mustBeNull(const char *name, const void *p,
                         const char *why) const {
  return !p ? true : fail(std::string(name) + " must be NULL " + why);
}

bool Checker::nonNegative(const char *name, int64_t v) const {
  return v >= 0 ? true
                : fail(std::string(name) + " must be >= 0, got " +
                       std::to_string(v));
}

bool Checker::positive(const char *name, int64_t v) const {
  return v > 0 ? true
               : fail(std::string(name) + " must be > 0, got " +
                      std::to_string(v));
}

bool Checker::flag(const char *name, int32_t v) const {
  return v == 0 || v == 1 ? true
                          : fail(std::string(name) + " must be 0 or 1, got " +
                                 std::to_string(v));
}

bool Checker::dtype(int32_t v, const char *name) const {
  if (v == TE_RT_DTYPE_F32 || v == TE_RT_DTYPE_BF16 || v == TE_RT_DTYPE_F16)
    return true;
  return fail("unknown " + std::string(name) + " " + std::to_string(v) +
              " (0 f32, 1 bf16, 2 f16)");
}

namespace {
/// a * b * elemBytes as a byte count that fits in int64 and size_t.
bool bytesFit(int64_t a, int64_t b, int64_t elemBytes, int64_t *n) {
  int64_t bytes;
  return !__builtin_mul_overflow(a, b, n) &&
         !__builtin_mul_overflow(*n, elemBytes, &bytes) &&
         static_cast<uint64_t>(bytes) <= std::numeric_limits<size_t>::max() / 2;
}
} // namespace

bool Checker::product(const char *what, int64_t a, int64_t b, int64_t elemBytes,
                      int64_t *count) const {
  if (!bytesFit(a, b, elemBytes, count))
    return fail(std::string(what) + " = " + std::to_string(a) + " * " +
                std::to_string(b) + " is too large");
  return true;
}

bool Checker::count(const char *name, int64_t n, int64_t elemBytes) const {
  int64_t unused;
  if (!nonNegative(name, n))
    return false;
  if (!bytesFit(n, 1, elemBytes, &unused))
    return fail(std::string(name) + " = " + std::to_string(n) +
                " is too large");
  return true;
}

//===----------------------------------------------------------------------===//
// Backends
//===----------------------------------------------------------------------===//

void bindBackend(te_rt_context *ctx, int32_t backend) {
  ctx->backend = backend;
  ctx->ops = backend == TE_RT_BACKEND_CUDA ? &cudaOps : &cpuOps;
}

int32_t unsupported(const Checker &c, const te_rt_context *ctx) {
  return c.fail(std::string("the ") + ctx->ops->name +
                " backend does not implement this call"),
         1;
}

} // namespace te::rt

//===----------------------------------------------------------------------===//
// Contexts
//===----------------------------------------------------------------------===//

extern "C" {

te_rt_context *te_rt_context_create(int32_t backend) {
  Checker c("te_rt_context_create");
  int32_t resolved = te_rt_select_backend(backend);
  if (resolved == TE_RT_BACKEND_INVALID) {
    // Keep te_rt_select_backend's reason, prefixed by this call's name.
    c.fail(te_rt_last_error());
    return nullptr;
  }
  te_rt_context *ctx = new (std::nothrow) te_rt_context;
  if (!ctx) {
    c.fail("out of host memory");
    return nullptr;
  }
  te::rt::bindBackend(ctx, resolved);
  if (resolved == TE_RT_BACKEND_CUDA) {
    if (const char *err = te_rt_internal_cuda_stream_create(&ctx->stream)) {
      c.fail(std::string("cannot create a CUDA stream: ") + err);
      delete ctx;
      return nullptr;
    }
    ctx->ownStream = ctx->stream;
  }
  return ctx;
}

namespace {
/// Frees the context's cached CUDA buffers (after its queued work). Never
/// while capturing: synchronizing or cudaFree would break the capture.
void releaseCudaCache(te_rt_context *ctx) {
  if (ctx->cudaCached.empty())
    return;
  te_rt_internal_cuda_synchronize(ctx->stream);
  if (ctx->stream != ctx->ownStream)
    te_rt_internal_cuda_synchronize(ctx->ownStream);
  for (auto &[bytes, ptr] : ctx->cudaCached)
    te_rt_internal_cuda_free(ptr);
  ctx->cudaCached.clear();
}
} // namespace

namespace {
/// Ends the ownership of a graph that will not run (again): its buffers
/// that were te_rt_free'd go to the cache; with `keepUnfreed`, the others
/// become ordinary live buffers of the caller again, else they are cached
/// too (te_rt_graph_destroy frees what the graph owns).
void releaseGraphBuffers(te_rt_context *ctx, te_rt_graph *graph,
                         bool keepUnfreed) {
  for (void *p : graph->owned) {
    auto owned = ctx->graphOwned.find(p);
    if (owned == ctx->graphOwned.end())
      continue;
    bool freed = owned->second;
    ctx->graphOwned.erase(owned);
    if (!freed && keepUnfreed)
      continue;
    auto live = ctx->cudaLive.find(p);
    if (live == ctx->cudaLive.end())
      continue;
    ctx->cudaCached.emplace(live->second, p);
    ctx->cudaLive.erase(live);
  }
  graph->owned.clear();
}
} // namespace

void te_rt_context_destroy(te_rt_context *ctx) {
  if (!ctx)
    return;
  // Its communicators stay alive: the caller owns them.
  te_rt_internal_comm_detach(ctx);
  if (ctx->backend == TE_RT_BACKEND_CUDA) {
    te::rt::destroyEntryGraphs(ctx);
    if (te_rt_graph *graph = ctx->capturing) {
      // A capture left open: end it and drop what it recorded.
      ctx->capturing = nullptr;
      void *g = nullptr;
      if (!te_rt_internal_cuda_capture_end(ctx->stream, &g))
        te_rt_internal_cuda_graph_discard(g);
      releaseGraphBuffers(ctx, graph, /*keepUnfreed=*/false);
      delete graph;
    }
    releaseCudaCache(ctx);
    // The kernel state waits for the stream it last queued on (the
    // caller's, when one was set, which must still exist), then frees its
    // buffers; the context's own stream goes last.
    te_rt_internal_cuda_state_destroy(ctx->cuda);
    te_rt_internal_cuda_stream_destroy(ctx->ownStream);
    te_rt_internal_cuda_event_destroy(ctx->switchEvent);
  }
  delete ctx;
}

int32_t te_rt_context_backend(const te_rt_context *ctx) {
  Checker c("te_rt_context_backend");
  if (!c.context(ctx))
    return TE_RT_BACKEND_INVALID;
  return ctx->backend;
}

int32_t te_rt_context_set_stream(te_rt_context *ctx, void *stream) {
  Checker c("te_rt_context_set_stream");
  if (!c.context(ctx))
    return 1;
  if (ctx->backend != TE_RT_BACKEND_CUDA)
    return c.mustBeNull("stream", stream, "a cpu context has no streams") ? 0
                                                                          : 1;
  if (stream == ctx->stream)
    return 0;
  if (ctx->capturing)
    return c.fail("cannot change the stream while te_rt_capture_begin's "
                  "capture of the current one is open"),
           1;
  // The context's workspace, kernel scratch, amax ticket and cached buffers
  // are one per context: the new stream waits for what the old one has
  // queued, so a context's calls run in call order across streams. Not
  // while either is being captured (a capture may not wait for work outside
  // it, nor work outside wait for a capture): a captured stream's order is
  // its graph's.
  if (!te_rt_internal_cuda_stream_capturing(ctx->stream) &&
      !te_rt_internal_cuda_stream_capturing(stream)) {
    if (const char *err = te_rt_internal_cuda_stream_follow(
            ctx->stream, stream, &ctx->switchEvent))
      return c.fail(std::string("cannot order the new stream after the "
                                "old one: ") +
                    err),
             1;
  }
  ctx->stream = stream;
  return 0;
}

void *te_rt_context_stream(const te_rt_context *ctx) {
  Checker c("te_rt_context_stream");
  if (!c.context(ctx))
    return nullptr;
  return ctx->stream;
}

namespace {
bool aligned(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 256 == 0;
}
} // namespace

int32_t te_rt_context_set_arena(te_rt_context *ctx, void *ptr, int64_t bytes) {
  Checker c("te_rt_context_set_arena");
  if (!c.context(ctx) || !c.nonNegative("bytes", bytes))
    return 1;
  if (ptr && !aligned(ptr))
    return c.fail("ptr is not 256-byte aligned"), 1;
  ctx->arena = ptr;
  ctx->arenaBytes = ptr ? bytes : 0;
  return 0;
}

int32_t te_rt_context_set_workspace(te_rt_context *ctx, void *ptr,
                                    int64_t bytes) {
  Checker c("te_rt_context_set_workspace");
  if (!c.context(ctx) || !c.nonNegative("bytes", bytes))
    return 1;
  if (ptr && !aligned(ptr))
    return c.fail("ptr is not 256-byte aligned"), 1;
  if (ptr && bytes < te_rt_gemm_workspace_bytes())
    return c.fail("a workspace of " + std::to_string(bytes) +
                  " bytes is smaller than the GEMM workspace (" +
                  std::to_string(te_rt_gemm_workspace_bytes()) + " bytes)"),
           1;
  ctx->workspace = ptr;
  ctx->workspaceBytes = ptr ? bytes : 0;
  ctx->workspaceNeeded = 0;
  return 0;
}

int32_t te_rt_context_capturing(const te_rt_context *ctx) {
  Checker c("te_rt_context_capturing");
  if (!c.context(ctx))
    return -1;
  return ctx->backend == TE_RT_BACKEND_CUDA &&
                 te_rt_internal_cuda_stream_capturing(ctx->stream)
             ? 1
             : 0;
}

int64_t te_rt_gemm_workspace_bytes(void) { return int64_t(32) << 20; }

int64_t te_rt_workspace_bytes(void) {
  return te_rt_gemm_workspace_bytes() + (int64_t(16) << 20);
}

int64_t te_rt_context_workspace_needed(const te_rt_context *ctx) {
  Checker c("te_rt_context_workspace_needed");
  if (!c.context(ctx))
    return 0;
  return ctx->workspaceNeeded;
}

namespace {
/// What an entry whose arena has no bytes at its dims gets without a caller
/// arena: an aligned address that nothing reads or writes (every slot of
/// that arena is empty). Allocating instead would cost a call, and inside
/// an entry graph's capture the allocation would belong to the graph, whose
/// capture then fails: such entries never replayed.
alignas(256) unsigned char emptyArena[256];
} // namespace

void *te_rt_arena_acquire(te_rt_context *ctx, int64_t bytes) {
  Checker c("te_rt_arena_acquire");
  if (!c.context(ctx) || !c.nonNegative("bytes", bytes))
    return nullptr;
  if (!ctx->arena)
    return bytes == 0 ? static_cast<void *>(emptyArena)
                      : te_rt_alloc(ctx, bytes);
  if (bytes > ctx->arenaBytes) {
    c.fail("the caller's arena has " + std::to_string(ctx->arenaBytes) +
           " bytes; this entry needs " + std::to_string(bytes) +
           " (te_module_entry_arena_bytes at these dims)");
    return nullptr;
  }
  return ctx->arena;
}

int32_t te_rt_context_set_donated(te_rt_context *ctx, const uint8_t *donated,
                                  int64_t n) {
  Checker c("te_rt_context_set_donated");
  if (!c.context(ctx) || !c.nonNegative("n", n))
    return 1;
  if (!donated && n)
    return c.fail("donated is NULL with n = " + std::to_string(n)), 1;
  ctx->donated.assign(donated, donated + n);
  return 0;
}

int32_t te_rt_arg_donated(te_rt_context *ctx, int64_t arg) {
  return ctx && arg >= 0 && arg < int64_t(ctx->donated.size()) &&
                 ctx->donated[size_t(arg)]
             ? 1
             : 0;
}

int32_t te_rt_branch_begin(te_rt_context *ctx) {
  Checker c("te_rt_branch_begin");
  if (!c.context(ctx))
    return 1;
  return te::rt::beginBranch(c, ctx);
}

int32_t te_rt_branch_end(te_rt_context *ctx) {
  Checker c("te_rt_branch_end");
  if (!c.context(ctx))
    return 1;
  if (!ctx->inBranch)
    return c.fail("no branch is open (te_rt_branch_begin first)"), 1;
  // The branch stays pending until te_rt_branch_join (or the entry's end).
  return te::rt::endBranch(c, ctx);
}

int32_t te_rt_branch_join(te_rt_context *ctx, int64_t run) {
  Checker c("te_rt_branch_join");
  if (!c.context(ctx))
    return 1;
  if (run < -1)
    return c.fail("run is " + std::to_string(run) +
                  " (a run's number from 0, or -1 for all of them)"),
           1;
  return te::rt::joinBranch(c, ctx, run);
}

void te_rt_arena_release(te_rt_context *ctx, void *arena) {
  // The entry's end: what it forked (te_rt_amax_update_fork, a branch)
  // joins here.
  te::rt::joinForks(ctx);
  if (!ctx || !arena || arena == ctx->arena || arena == emptyArena)
    return;
  te_rt_free(ctx, arena);
}

int32_t te_rt_context_set_seed(te_rt_context *ctx, uint64_t seed) {
  Checker c("te_rt_context_set_seed");
  if (!c.context(ctx))
    return 1;
  // A host-side setting on every backend: read by the quantize calls.
  ctx->seed = seed;
  return 0;
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

namespace {
constexpr int64_t kAlignment = 256;

/// A buffer handed out while capturing belongs to the graph being captured.
void *handOut(te_rt_context *ctx, void *p, int64_t rounded) {
  ctx->cudaLive[p] = rounded;
  if (ctx->capturing) {
    ctx->capturing->owned.push_back(p);
    ctx->graphOwned[p] = false;
  }
  return p;
}
} // namespace

void *te_rt_alloc(te_rt_context *ctx, int64_t bytes) {
  Checker c("te_rt_alloc");
  if (!c.context(ctx) || !c.nonNegative("bytes", bytes))
    return nullptr;
  // No machine addresses 2^48 bytes (x86-64 and AArch64 user space): a
  // request above that is a bug upstream, refused before any allocator sees
  // it (sanitizer allocators abort on such sizes instead of returning null).
  constexpr int64_t kMaxBytes = int64_t(1) << 48;
  if (bytes > kMaxBytes) {
    c.fail("bytes = " + std::to_string(bytes) +
           " is too large (the limit is 2^48)");
    return nullptr;
  }
  void *p = nullptr;
  if (ctx->backend == TE_RT_BACKEND_CUDA) {
    // Rounded sizes make buffers reusable across calls (the arena of a
    // compiled entry has the same size every step).
    int64_t granule =
        bytes >= (int64_t(1) << 20) ? int64_t(1) << 20 : kAlignment;
    int64_t rounded =
        std::max(kAlignment, (bytes + granule - 1) / granule * granule);
    auto cached = ctx->cudaCached.find(rounded);
    if (cached != ctx->cudaCached.end()) {
      p = cached->second;
      ctx->cudaCached.erase(cached);
      return handOut(ctx, p, rounded);
    }
    const char *err = te_rt_internal_cuda_alloc(rounded, &p);
    if (err && !ctx->cudaCached.empty() && !ctx->capturing) {
      // Out of memory with buffers parked in the cache: give them back.
      releaseCudaCache(ctx);
      err = te_rt_internal_cuda_alloc(rounded, &p);
    }
    if (err) {
      c.fail("cannot allocate " + std::to_string(bytes) +
             " bytes on the cuda backend: " + err);
      return nullptr;
    }
    return handOut(ctx, p, rounded);
  }
  // A host buffer larger than the machine's memory cannot exist: refused
  // here rather than handed to an allocator (sanitizer allocators abort on
  // such sizes; a library's arena size comes from its own arithmetic).
  if (bytes > te::rt::hostMemoryBytes()) {
    c.fail("cannot allocate " + std::to_string(bytes) +
           " bytes on the cpu backend: more than this machine's memory (" +
           std::to_string(te::rt::hostMemoryBytes()) +
           " bytes of RAM and swap)");
    return nullptr;
  }
  // aligned_alloc needs a multiple of the alignment; 0 bytes still gets a
  // block of its own so that the pointer is unique.
  int64_t rounded = std::max<int64_t>(kAlignment, (bytes + kAlignment - 1) /
                                                      kAlignment * kAlignment);
  p = std::aligned_alloc(kAlignment, static_cast<size_t>(rounded));
  if (!p)
    c.fail("out of host memory allocating " + std::to_string(bytes) + " bytes");
  return p;
}

void te_rt_free(te_rt_context *ctx, void *ptr) {
  Checker c("te_rt_free");
  if (!ptr)
    return;
  if (!c.context(ctx))
    return; // cannot know which backend owns ptr: leak rather than guess
  if (ctx->backend == TE_RT_BACKEND_CUDA) {
    // A graph's buffer: replays may still use it; te_rt_graph_destroy
    // releases it.
    auto owned = ctx->graphOwned.find(ptr);
    if (owned != ctx->graphOwned.end()) {
      owned->second = true;
      return;
    }
    auto live = ctx->cudaLive.find(ptr);
    if (live == ctx->cudaLive.end()) {
      for (auto &[bytes, cached] : ctx->cudaCached)
        if (cached == ptr) {
          c.fail("ptr was already freed (or released by "
                 "te_rt_graph_destroy)");
          return;
        }
      if (ctx->capturing) {
        c.fail("cannot cudaFree a buffer that te_rt_alloc did not hand out "
               "while capturing a CUDA graph (call te_rt_capture_end first)");
        return;
      }
      // Not from this context's te_rt_alloc: free it as it is.
      if (const char *err = te_rt_internal_cuda_free(ptr))
        c.fail(std::string("cudaFree failed: ") + err);
      return;
    }
    if (ctx->capturing) {
      // Allocated before the capture, freed during it: the captured work
      // may use it, so the graph keeps it.
      ctx->capturing->owned.push_back(ptr);
      ctx->graphOwned[ptr] = true;
      return;
    }
    ctx->cudaCached.emplace(live->second, ptr);
    ctx->cudaLive.erase(live);
    return;
  }
  std::free(ptr);
}

namespace {

/// Checks of the byte copies: ctx, dst, src and bytes.
bool checkCopy(const Checker &c, te_rt_context *ctx, const char *dstName,
               const void *dst, const char *srcName, const void *src,
               int64_t bytes) {
  return c.context(ctx) && c.notNull(dstName, dst) && c.notNull(srcName, src) &&
         c.nonNegative("bytes", bytes);
}

/// Host copies and synchronization wait for the stream, which a capture
/// cannot record (CUDA would invalidate the capture): refused up front.
bool notCapturing(const Checker &c, const te_rt_context *ctx,
                  const char *what) {
  if (!ctx->capturing)
    return true;
  return c.fail(std::string("cannot ") + what +
                " while capturing a CUDA graph (call te_rt_capture_end "
                "first)");
}

} // namespace

int32_t te_rt_copy_to_backend(te_rt_context *ctx, void *dst,
                              const void *host_src, int64_t bytes) {
  Checker c("te_rt_copy_to_backend");
  if (!checkCopy(c, ctx, "dst", dst, "host_src", host_src, bytes) ||
      !notCapturing(c, ctx, "copy from the host"))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA) {
    if (const char *err = te_rt_internal_cuda_copy(
            ctx->stream, dst, host_src, bytes, CudaCopy::HostToDevice))
      return c.fail(std::string("cudaMemcpyAsync failed: ") + err), 1;
    return 0;
  }
  std::memmove(dst, host_src, static_cast<size_t>(bytes));
  return 0;
}

int32_t te_rt_copy_to_host(te_rt_context *ctx, void *host_dst, const void *src,
                           int64_t bytes) {
  Checker c("te_rt_copy_to_host");
  if (!checkCopy(c, ctx, "host_dst", host_dst, "src", src, bytes) ||
      !notCapturing(c, ctx, "copy to the host"))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA) {
    if (const char *err = te_rt_internal_cuda_copy(
            ctx->stream, host_dst, src, bytes, CudaCopy::DeviceToHost))
      return c.fail(std::string("cudaMemcpyAsync failed: ") + err), 1;
    return 0;
  }
  std::memmove(host_dst, src, static_cast<size_t>(bytes));
  return 0;
}

int32_t te_rt_synchronize(te_rt_context *ctx) {
  Checker c("te_rt_synchronize");
  if (!c.context(ctx) || !notCapturing(c, ctx, "synchronize"))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA) {
    if (const char *err = te_rt_internal_cuda_synchronize(ctx->stream))
      return c.fail(std::string("cudaStreamSynchronize failed: ") + err), 1;
  }
  return 0;
}

int32_t te_rt_copy(te_rt_context *ctx, void *dst, const void *src,
                   int64_t bytes) {
  Checker c("te_rt_copy");
  if (!checkCopy(c, ctx, "dst", dst, "src", src, bytes))
    return 1;
  uintptr_t d = reinterpret_cast<uintptr_t>(dst),
            s = reinterpret_cast<uintptr_t>(src);
  uint64_t n = static_cast<uint64_t>(bytes);
  // A buffer copied onto itself is already the result: nothing moves (a
  // weight-cache forward whose saved weight result is the cached-weight
  // argument's buffer; docs/passes.md, te-weight-cache). Any other overlap
  // is an error.
  if (d == s)
    return 0;
  if (n && d < s + n && s < d + n)
    return c.fail("dst and src overlap"), 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA) {
    if (const char *err = te_rt_internal_cuda_copy(ctx->stream, dst, src, bytes,
                                                   CudaCopy::DeviceToDevice))
      return c.fail(std::string("cudaMemcpyAsync failed: ") + err), 1;
    return 0;
  }
  std::memcpy(dst, src, static_cast<size_t>(n));
  return 0;
}

/// The most bytes te_rt_zero clears with a kernel on cuda (a memset above).
constexpr int64_t kZeroByKernelBytes = int64_t(64) << 10;

int32_t te_rt_zero(te_rt_context *ctx, void *dst, int64_t bytes) {
  Checker c("te_rt_zero");
  if (!c.context(ctx) || !c.notNull("dst", dst) ||
      !c.nonNegative("bytes", bytes))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA) {
    // Few bytes (a concat's zero parts): a kernel, which in a CUDA graph is
    // a kernel node among kernel nodes, launched programmatically like them
    // (a memset node is neither); more bytes: the memset.
    if (bytes <= kZeroByKernelBytes)
      return bytes ? ctx->ops->zero_ranges(c, ctx, &dst, &bytes, 1, 0) : 0;
    if (const char *err = te_rt_internal_cuda_zero(ctx->stream, dst, bytes))
      return c.fail(std::string("cudaMemsetAsync failed: ") + err), 1;
    return 0;
  }
  std::memset(dst, 0, static_cast<size_t>(bytes));
  return 0;
}

//===----------------------------------------------------------------------===//
// CUDA graphs
//===----------------------------------------------------------------------===//

namespace {
/// The cuda backend, for the graph calls.
bool cudaContext(const Checker &c, const te_rt_context *ctx) {
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return true;
  return c.fail(std::string("CUDA graphs need the cuda backend (this "
                            "context runs on ") +
                te_rt_backend_name(ctx->backend) + ")");
}
} // namespace

int32_t te_rt_capture_begin(te_rt_context *ctx) {
  Checker c("te_rt_capture_begin");
  if (!c.context(ctx) || !cudaContext(c, ctx))
    return 1;
  if (ctx->capturing)
    return c.fail("this context is already capturing a CUDA graph (call "
                  "te_rt_capture_end first)"),
           1;
  te_rt_graph *graph = new (std::nothrow) te_rt_graph;
  if (!graph)
    return c.fail("out of host memory"), 1;
  graph->ctx = ctx;
  if (const char *err = te_rt_internal_cuda_capture_begin(ctx->stream)) {
    delete graph;
    return c.fail(std::string("cudaStreamBeginCapture failed: ") + err), 1;
  }
  ctx->capturing = graph;
  return 0;
}

int32_t te_rt_capture_end(te_rt_context *ctx, te_rt_graph **graph) {
  Checker c("te_rt_capture_end");
  if (graph)
    *graph = nullptr;
  if (!c.context(ctx) || !c.notNull("graph", graph) || !cudaContext(c, ctx))
    return 1;
  te_rt_graph *g = ctx->capturing;
  if (!g)
    return c.fail("this context is not capturing (call te_rt_capture_begin "
                  "first)"),
           1;
  ctx->capturing = nullptr;
  te::rt::joinForks(ctx); // a fork left pending would invalidate the capture
  void *captured = nullptr;
  const char *err = te_rt_internal_cuda_capture_end(ctx->stream, &captured);
  std::string what = "cudaStreamEndCapture failed: ";
  if (!err) {
    err =
        te_rt_internal_cuda_graph_instantiate(captured, ctx->stream, &g->exec);
    what = "cannot instantiate the captured graph: ";
  }
  if (err) {
    // Abandoned: the buffers handed out during the capture and not freed
    // are the caller's again.
    releaseGraphBuffers(ctx, g, /*keepUnfreed=*/true);
    delete g;
    return c.fail(what + err), 1;
  }
  *graph = g;
  return 0;
}

int32_t te_rt_graph_launch(te_rt_context *ctx, te_rt_graph *graph) {
  Checker c("te_rt_graph_launch");
  if (!c.context(ctx) || !c.notNull("graph", graph) || !cudaContext(c, ctx))
    return 1;
  if (graph->ctx != ctx)
    return c.fail("graph was captured on another context"), 1;
  if (ctx->capturing)
    return c.fail("cannot launch a graph while capturing a CUDA graph (call "
                  "te_rt_capture_end first)"),
           1;
  if (const char *err =
          te_rt_internal_cuda_graph_launch(graph->exec, ctx->stream))
    return c.fail(std::string("cudaGraphLaunch failed: ") + err), 1;
  return 0;
}

void te_rt_graph_destroy(te_rt_graph *graph) {
  if (!graph)
    return;
  // Launches in flight finish first; the buffers go to the cache, whose
  // next users are ordered after them on the context's one stream.
  te_rt_internal_cuda_graph_exec_destroy(graph->exec);
  releaseGraphBuffers(graph->ctx, graph, /*keepUnfreed=*/false);
  delete graph;
}

} // extern "C"

te_rt_graph *te::rt::captureAside(te_rt_context *ctx, int32_t (*run)(void *),
                                  void *state) {
  Checker c("te_module_run (entry graph)");
  if (ctx->backend != TE_RT_BACKEND_CUDA || !ctx->ownStream)
    return c.fail("no capture: not a cuda context"), nullptr;
  void *caller = ctx->stream;
  ctx->stream = ctx->ownStream;
  if (te_rt_capture_begin(ctx) != 0) { // (its last error says why)
    ctx->stream = caller;
    return nullptr;
  }
  te_rt_graph *g = ctx->capturing;
  int32_t rc = run(state);
  ctx->capturing = nullptr;
  te::rt::joinForks(ctx); // a fork left pending would invalidate the capture
  void *captured = nullptr;
  const char *err = te_rt_internal_cuda_capture_end(ctx->stream, &captured);
  ctx->stream = caller;
  std::string why;
  if (rc != 0)
    why = te_rt_last_error();
  else if (err)
    why = std::string("cudaStreamEndCapture failed: ") + err;
  else if (!g->owned.empty())
    why = "the entry allocated buffers while captured (no caller arena)";
  else if ((err = te_rt_internal_cuda_graph_instantiate(captured, caller,
                                                         &g->exec))) {
    captured = nullptr; // (destroyed by the instantiation)
    why = std::string("cannot instantiate the captured graph: ") + err;
  } else {
    return g;
  }
  if (captured)
    te_rt_internal_cuda_graph_discard(captured);
  releaseGraphBuffers(ctx, g, /*keepUnfreed=*/true);
  delete g;
  c.fail(why);
  return nullptr;
}
