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
#include <new>

using namespace te::kernels;

namespace te::kernels {

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
    if (capture != cudaStreamCaptureStatusNone)
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
    if (const char *err = status(cudaMallocAsync(
            &p, static_cast<size_t>(grown) * sizeof(float), s->stream)))
      return err;
    s->scratch = static_cast<float *>(p);
    s->scratchElems = grown;
  }
  *out = s->scratch;
  return nullptr;
}

/// Zeroes the amax ticket of a new state.
__global__ void zeroTicketKernel(unsigned *ticket) {
  gridWait();
  if (threadIdx.x < 2)
    ticket[threadIdx.x] = 0;
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

int64_t te_kernels_state_scratch_needed(const te_kernels_state *s) {
  return s ? s->scratchNeeded : 0;
}

void te_kernels_state_destroy(te_kernels_state *s) {
  if (!s)
    return;
  te_kernels_join(s);
  cudaStreamSynchronize(s->stream);
  if (s->sideStream) {
    cudaStreamSynchronize(s->sideStream);
    cudaStreamDestroy(s->sideStream);
  }
  if (s->forkEvent)
    cudaEventDestroy(s->forkEvent);
  if (s->joinEvent)
    cudaEventDestroy(s->joinEvent);
  if (s->scratch)
    cudaFreeAsync(s->scratch, s->stream);
  cudaStreamSynchronize(s->stream);
  if (s->ownWorkspace)
    cudaFree(s->ownWorkspace);
  if (s->lt)
    cublasLtDestroy(s->lt);
  delete s;
}

} // extern "C"
