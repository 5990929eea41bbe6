//===- state.cu - The kernels' state and scratch --------------------------===//
//
// te_kernels_state_create, _bind, _scratch_needed and _destroy, and the
// scratch buffer (internal.cuh's scratch()): grow-only and stream-ordered,
// or the rest of the caller's workspace while one is bound.
//
//===----------------------------------------------------------------------===//

#include "internal.cuh"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <tuple>

using namespace te::kernels;

namespace te::kernels {

KernelFit fitKernel(const void *kernel, size_t smem, int threads,
                    bool carveoutMax) {
  int device = 0;
  KernelFit fit;
  if ((fit.err = status(cudaGetDevice(&device))))
    return fit;
  using Key = std::tuple<int, const void *, size_t, int, bool>;
  static std::mutex mu;
  static std::map<Key, KernelFit> fits;
  const Key key{device, kernel, smem, threads, carveoutMax};
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = fits.find(key); it != fits.end())
    return it->second;
  if (carveoutMax)
    fit.err = status(cudaFuncSetAttribute(
        kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
        int(cudaSharedmemCarveoutMaxShared)));
  if (!fit.err)
    fit.err = status(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
        static_cast<int>(smem)));
  if (fit.err)
    return fit; // not cached: the next launch asks again
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit.perSm, kernel,
                                                    threads, smem) !=
          cudaSuccess ||
      fit.perSm <= 0) {
    cudaGetLastError();
    fit.perSm = 4;
  }
  fits.emplace(key, fit);
  return fit;
}

const char *scratch(te_kernels_state *s, int64_t elems, float **out) {
  if (s->callerWorkspace) {
    // The caller's memory: never grown here (no allocation on that path).
    if (elems > s->callerScratchElems) {
      s->scratchNeeded = std::max<int64_t>(
          s->scratchNeeded, int64_t(kGemmWorkspaceBytes) + elems * 4);
      return "the caller's workspace is too small for this call's scratch "
             "(te_rt_context_workspace_needed gives the bytes it needs)";
    }
    *out = s->callerScratch;
    return nullptr;
  }
  if (elems > s->scratchElems) {
    // Inside a capture, cudaMallocAsync would become the graph's own
    // allocation (absent outside replays): refuse the growth instead.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (const char *err = status(cudaStreamIsCapturing(s->stream, &capture)))
      return err;
    if (capture != cudaStreamCaptureStatusNone && !s->parent)
      return "the scratch buffer would grow while a CUDA graph is being "
             "captured (run the captured work once before capturing)";
    // A captured graph may still read the old buffer: retire it (freed
    // with the state) instead of freeing it.
    if (s->scratch) {
      try {
        s->retiredScratch.push_back(s->scratch);
      } catch (...) {
        return "out of host memory";
      }
    }
    int64_t grown = std::max(elems, s->scratchElems + s->scratchElems / 2);
    s->scratch = nullptr;
    s->scratchElems = 0;
    void *p = nullptr;
    if (s->parent) {
      // A branch grows inside the capture that began it: a plain
      // allocation outside the capture's rules (freed with the state).
      cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
      cudaThreadExchangeStreamCaptureMode(&mode);
      cudaError_t err =
          cudaMalloc(&p, static_cast<size_t>(grown) * sizeof(float));
      cudaThreadExchangeStreamCaptureMode(&mode);
      if (err != cudaSuccess)
        return status(err);
    } else if (const char *err = status(cudaMallocAsync(
                   &p, static_cast<size_t>(grown) * sizeof(float),
                   s->stream))) {
      return err;
    }
    s->scratch = static_cast<float *>(p);
    s->scratchElems = grown;
  }
  *out = s->scratch;
  return nullptr;
}

const char *createSideStream(cudaStream_t *stream, cudaEvent_t *fork,
                             cudaEvent_t *join) {
  *stream = nullptr;
  *fork = *join = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  cudaError_t err = cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking);
  if (err == cudaSuccess)
    err = cudaEventCreateWithFlags(fork, cudaEventDisableTiming);
  if (err == cudaSuccess)
    err = cudaEventCreateWithFlags(join, cudaEventDisableTiming);
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (err == cudaSuccess)
    return nullptr;
  if (*stream)
    cudaStreamDestroy(*stream);
  if (*fork)
    cudaEventDestroy(*fork);
  *stream = nullptr;
  *fork = *join = nullptr;
  return status(err);
}

const char *onSideStream(te_kernels_state *s,
                         const char *(*fn)(te_kernels_state *, void *),
                         void *arg) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (const char *err = status(cudaStreamIsCapturing(s->stream, &capture)))
    return err;
  if (capture != cudaStreamCaptureStatusActive)
    return fn(s, arg);
  if (!s->sideStream)
    if (const char *err =
            createSideStream(&s->sideStream, &s->forkEvent, &s->joinEvent))
      return err;
  if (s->forkedFrom && s->forkedFrom != s->stream)
    if (const char *err = te_kernels_join(s))
      return err;
  if (const char *err = status(cudaEventRecord(s->forkEvent, s->stream)))
    return err;
  if (const char *err =
          status(cudaStreamWaitEvent(s->sideStream, s->forkEvent, 0)))
    return err;
  // The side stream joined the capture: from here on it must be joined
  // back before the capture ends, even if fn fails.
  cudaStream_t from = s->stream;
  const bool pdl = s->pdl;
  s->forkedFrom = from;
  s->stream = s->sideStream;
  s->pdl = false;
  const char *err = fn(s, arg);
  s->stream = from;
  s->pdl = pdl;
  return err;
}

/// Zeroes the amax ticket of a new state.
__global__ void zeroTicketKernel(unsigned *ticket) {
  gridWait();
  if (threadIdx.x < 2)
    ticket[threadIdx.x] = 0;
}

/// The end of a state: waits for its stream, frees its scratch (the
/// retired buffers too), GEMM workspace and cuBLASLt handle, and deletes
/// it (its amax ticket with it). A branch's buffers are plain allocations
/// made inside a capture (scratch()); the main state's scratch is
/// stream-ordered. The stream itself is the caller's.
static void releaseState(te_kernels_state *s) {
  cudaStreamSynchronize(s->stream);
  auto release = [s](float *p) {
    if (s->parent)
      cudaFree(p);
    else
      cudaFreeAsync(p, s->stream);
  };
  for (float *p : s->retiredScratch)
    release(p);
  s->retiredScratch.clear();
  if (s->scratch)
    release(s->scratch);
  s->scratch = nullptr;
  cudaStreamSynchronize(s->stream);
  if (s->ownWorkspace)
    cudaFree(s->ownWorkspace);
  s->ownWorkspace = nullptr;
  if (s->lt)
    cublasLtDestroy(s->lt);
  s->lt = nullptr;
  delete s;
}

} // namespace te::kernels

extern "C" {

const char *te_kernels_state_create(void *stream, te_kernels_state **state) {
  auto *s = new (std::nothrow) te_kernels_state;
  if (!s)
    return "out of host memory";
  s->stream = static_cast<cudaStream_t>(stream);
  // Programmatic dependent launches on Hopper and newer (launchKernel);
  // TE_RT_PDL=0 queues plain launches instead.
  int dev = 0, major = 0;
  const char *pdlEnv = std::getenv("TE_RT_PDL");
  s->pdl = cudaGetDevice(&dev) == cudaSuccess &&
           cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                                  dev) == cudaSuccess &&
           major >= 9 && !(pdlEnv && std::string(pdlEnv) == "0");
  // The amax ticket: allocated outside any capture's rules (relaxed mode,
  // as te_rt_alloc does), zeroed by a kernel on the stream, which a
  // capture in progress records (its replays zero it again, harmlessly);
  // outside a capture the stream is synchronized once, so that kernels of
  // a later stream (te_kernels_state_bind) find it zeroed.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  cudaError_t err = cudaMalloc(&s->amaxTicket, 2 * sizeof(unsigned));
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (err != cudaSuccess) {
    s->amaxTicket = nullptr;
    delete s;
    return status(err);
  }
  launchKernel(s, zeroTicketKernel, 1, 32, 0, s->amaxTicket);
  const char *launchErr = launched();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (!launchErr && cudaStreamIsCapturing(s->stream, &capture) == cudaSuccess &&
      capture == cudaStreamCaptureStatusNone)
    launchErr = status(cudaStreamSynchronize(s->stream));
  if (launchErr) {
    delete s;
    return launchErr;
  }
  *state = s;
  return nullptr;
}

void te_kernels_state_bind(te_kernels_state *s, void *stream, void *workspace,
                           int64_t bytes) {
  s->stream = static_cast<cudaStream_t>(stream);
  if (workspace && bytes >= int64_t(kGemmWorkspaceBytes)) {
    s->callerWorkspace = true;
    s->workspace = workspace;
    s->workspaceBytes = kGemmWorkspaceBytes;
    s->callerScratch = reinterpret_cast<float *>(
        static_cast<char *>(workspace) + kGemmWorkspaceBytes);
    s->callerScratchElems = (bytes - int64_t(kGemmWorkspaceBytes)) / 4;
  } else {
    s->callerWorkspace = false;
    s->workspace = s->ownWorkspace;
    s->workspaceBytes = s->ownWorkspace ? kGemmWorkspaceBytes : 0;
    s->callerScratch = nullptr;
    s->callerScratchElems = 0;
  }
  s->scratchNeeded = 0;
}

const char *te_kernels_branch_begin(te_kernels_state *s,
                                    te_kernels_state **branch) {
  *branch = s;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (const char *err = status(cudaStreamIsCapturing(s->stream, &capture)))
    return err;
  if (capture != cudaStreamCaptureStatusActive || s->parent)
    return nullptr; // in order
  if (!s->branch) {
    // A stream with its two events (createSideStream), and a state on it
    // whose buffers and amax ticket are allocated outside the capture's
    // rules too (the ticket zeroed on the new stream, not captured, and
    // synchronized).
    cudaStream_t stream = nullptr;
    te_kernels_state *b = nullptr;
    const char *err =
        createSideStream(&stream, &s->branchForkEvent, &s->branchJoinEvent);
    if (!err) {
      cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
      cudaThreadExchangeStreamCaptureMode(&mode);
      err = te_kernels_state_create(stream, &b);
      cudaThreadExchangeStreamCaptureMode(&mode);
      if (err) {
        cudaStreamDestroy(stream);
        cudaEventDestroy(s->branchForkEvent);
        cudaEventDestroy(s->branchJoinEvent);
        s->branchForkEvent = s->branchJoinEvent = nullptr;
      }
    }
    if (err)
      return err;
    b->parent = s;
    // Its first kernel follows an event, not a kernel: plain launches.
    b->pdl = false;
    s->branch = b;
  }
  // A branch still pending from another stream joins that stream first:
  // the branch serves one stream at a time.
  if (s->branchFrom && s->branchFrom != s->stream)
    if (const char *err = te_kernels_branch_join(s, -1))
      return err;
  if (const char *err = status(cudaEventRecord(s->branchForkEvent, s->stream)))
    return err;
  if (const char *err = status(
          cudaStreamWaitEvent(s->branch->stream, s->branchForkEvent, 0)))
    return err;
  // The branch's stream joined the capture: it must be joined back before
  // the capture ends (te_kernels_join), whatever happens next.
  if (!s->branchFrom)
    s->branchRuns = s->branchJoined = 0;
  s->branchFrom = s->stream;
  *branch = s->branch;
  return nullptr;
}

const char *te_kernels_branch_end(te_kernels_state *s) {
  if (!s || !s->branchFrom)
    return nullptr; // in order: nothing to mark
  size_t run = static_cast<size_t>(s->branchRuns);
  if (run == s->branchRunEvents.size()) {
    cudaEvent_t e = nullptr;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaThreadExchangeStreamCaptureMode(&mode);
    cudaError_t err = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    cudaThreadExchangeStreamCaptureMode(&mode);
    if (err != cudaSuccess)
      return status(err);
    try {
      s->branchRunEvents.push_back(e);
    } catch (...) {
      cudaEventDestroy(e);
      return "out of host memory";
    }
  }
  if (const char *err = status(
          cudaEventRecord(s->branchRunEvents[run], s->branch->stream)))
    return err;
  ++s->branchRuns;
  return nullptr;
}

const char *te_kernels_branch_join(te_kernels_state *s, int64_t run) {
  if (!s || !s->branchFrom)
    return nullptr;
  cudaStream_t to = s->branchFrom;
  if (run >= 0 && run < s->branchRuns) {
    // Up to that run only: the stream waits for the event its end
    // recorded (the runs after it may still go on).
    if (run < s->branchJoined)
      return nullptr; // joined already
    s->branchJoined = run + 1;
    return status(cudaStreamWaitEvent(
        to, s->branchRunEvents[static_cast<size_t>(run)], 0));
  }
  s->branchFrom = nullptr;
  if (const char *err =
          status(cudaEventRecord(s->branchJoinEvent, s->branch->stream)))
    return err;
  return status(cudaStreamWaitEvent(to, s->branchJoinEvent, 0));
}

int64_t te_kernels_state_scratch_needed(const te_kernels_state *s) {
  return s ? s->scratchNeeded : 0;
}

void te_kernels_state_destroy(te_kernels_state *s) {
  if (!s)
    return;
  te_kernels_join(s);
  if (te_kernels_state *branch = s->branch) {
    cudaStream_t stream = branch->stream; // its own
    releaseState(branch);
    cudaStreamDestroy(stream);
  }
  for (cudaEvent_t e : s->branchRunEvents)
    cudaEventDestroy(e);
  if (s->sideStream) {
    cudaStreamSynchronize(s->sideStream);
    cudaStreamDestroy(s->sideStream);
  }
  for (cudaEvent_t e : {s->branchForkEvent, s->branchJoinEvent, s->forkEvent,
                        s->joinEvent})
    if (e)
      cudaEventDestroy(e);
  releaseState(s);
}

} // extern "C"
