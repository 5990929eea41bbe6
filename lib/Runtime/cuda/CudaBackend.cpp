//===- CudaBackend.cpp - te-mlir runtime: CUDA backend ----------*- C++ -*-===//
//
// Host side of the CUDA backend: device discovery, the kernel self-test,
// the buffers, streams and kernel state of CUDA contexts, and the capture
// and replay of CUDA graphs (the compute primitives reach runtime-kernels/
// through cuda/Dispatch.cpp, after the checks of api/*.cpp; the graph calls'
// checks and buffer ownership are in Context.cpp).
// Compiled only with TE_ENABLE_CUDA; the kernels live in runtime-kernels/.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"
#include "te/Runtime/TERuntime.h"
#include "te_kernels/ops.h"
#include "te_kernels/te_kernels.h"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace {
std::string unavailableReason;

/// Queried once: device count (or the CUDA error that prevented it).
int deviceCount() {
  static int count = [] {
    int n = 0;
    const char *err = te_kernels_device_count(&n);
    if (err) {
      unavailableReason = std::string("no CUDA device is usable: ") + err;
      return 0;
    }
    if (n == 0)
      unavailableReason = "no CUDA device is visible";
    return n;
  }();
  return count;
}
} // namespace

bool te_rt_internal_cuda_available() { return deviceCount() > 0; }

const char *te_rt_internal_cuda_unavailable_reason() {
  deviceCount();
  return unavailableReason.c_str();
}

extern "C" int32_t te_rt_cuda_selftest(void) {
  if (!te_rt_internal_cuda_available()) {
    te_rt_internal_set_error(std::string("te_rt_cuda_selftest: ") +
                             unavailableReason);
    return 1;
  }
  if (const char *err = te_kernels_selftest()) {
    te_rt_internal_set_error(std::string("te_rt_cuda_selftest: ") + err);
    return 1;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Buffers and streams of CUDA contexts
//===----------------------------------------------------------------------===//

namespace {
const char *status(cudaError_t err) {
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}
} // namespace

const char *te_rt_internal_cuda_stream_create(void **stream) {
  cudaStream_t s = nullptr;
  if (const char *err =
          status(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)))
    return err;
  *stream = s;
  return nullptr;
}

void te_rt_internal_cuda_stream_destroy(void *stream) {
  if (stream) {
    cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
    cudaStreamDestroy(static_cast<cudaStream_t>(stream));
  }
}

const char *te_rt_internal_cuda_alloc(int64_t bytes, void **ptr) {
  // While this thread captures a CUDA graph (thread-local mode), cudaMalloc
  // may be refused as a potentially unsafe call. A plain allocation outside
  // the graph is what te_rt_alloc wants even then: allow it, for this call
  // only, by switching the thread to relaxed mode and back.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  // cudaMalloc(0) gives null; a zero-byte buffer still needs its own address.
  cudaError_t err =
      cudaMalloc(ptr, static_cast<size_t>(bytes > 0 ? bytes : 1));
  cudaThreadExchangeStreamCaptureMode(&mode);
  return status(err);
}

const char *te_rt_internal_cuda_free(void *ptr) {
  return status(cudaFree(ptr));
}

const char *te_rt_internal_cuda_copy(void *stream, void *dst, const void *src,
                                     int64_t bytes, CudaCopy direction) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  cudaMemcpyKind kind =
      direction == CudaCopy::HostToDevice   ? cudaMemcpyHostToDevice
      : direction == CudaCopy::DeviceToHost ? cudaMemcpyDeviceToHost
                                            : cudaMemcpyDeviceToDevice;
  if (const char *err = status(
          cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), kind, s)))
    return err;
  if (direction == CudaCopy::DeviceToDevice)
    return nullptr;
  return status(cudaStreamSynchronize(s));
}

const char *te_rt_internal_cuda_zero(void *stream, void *dst, int64_t bytes) {
  return status(cudaMemsetAsync(dst, 0, static_cast<size_t>(bytes),
                                static_cast<cudaStream_t>(stream)));
}

const char *te_rt_internal_cuda_synchronize(void *stream) {
  return status(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

const char *te_rt_internal_cuda_stream_follow(void *from, void *to,
                                              void **event) {
  if (!*event) {
    cudaEvent_t e = nullptr;
    if (const char *err = status(
            cudaEventCreateWithFlags(&e, cudaEventDisableTiming)))
      return err;
    *event = e;
  }
  cudaEvent_t e = static_cast<cudaEvent_t>(*event);
  if (const char *err =
          status(cudaEventRecord(e, static_cast<cudaStream_t>(from))))
    return err;
  return status(cudaStreamWaitEvent(static_cast<cudaStream_t>(to), e, 0));
}

void te_rt_internal_cuda_event_destroy(void *event) {
  if (event)
    cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

void te_rt_internal_cuda_state_destroy(void *state) {
  te_kernels_state_destroy(static_cast<te_kernels_state *>(state));
}

//===----------------------------------------------------------------------===//
// CUDA graphs
//===----------------------------------------------------------------------===//

const char *te_rt_internal_cuda_capture_begin(void *stream) {
  // Thread-local mode: a call on this thread that cannot be captured (a
  // synchronization, cudaFree, a pageable copy) fails and invalidates the
  // capture, which te_rt_capture_end then reports; the global mode would
  // also fail unsafe calls of unrelated threads (other contexts), and the
  // relaxed mode would let them through unchecked.
  return status(cudaStreamBeginCapture(static_cast<cudaStream_t>(stream),
                                       cudaStreamCaptureModeThreadLocal));
}

const char *te_rt_internal_cuda_capture_end(void *stream, void **graph) {
  cudaGraph_t g = nullptr;
  cudaError_t err = cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &g);
  if (err != cudaSuccess) {
    if (g)
      cudaGraphDestroy(g);
    cudaGetLastError(); // the error is reported here, not by a later call
    *graph = nullptr;
    return cudaGetErrorString(err);
  }
  *graph = g;
  return nullptr;
}

void te_rt_internal_cuda_graph_discard(void *graph) {
  if (graph)
    cudaGraphDestroy(static_cast<cudaGraph_t>(graph));
}

const char *te_rt_internal_cuda_graph_instantiate(void *graph, void *stream,
                                                  void **exec) {
  cudaGraph_t g = static_cast<cudaGraph_t>(graph);
  // TE_RT_GRAPH_DOT=<folder>: each captured graph's nodes and edges as
  // Graphviz (cudaGraphDebugDotPrint), <folder>/graph_<n>.dot in capture
  // order, for reading a step's dependencies (docs/runtime.md). A failed
  // print is not the capture's error.
  if (const char *dir = std::getenv("TE_RT_GRAPH_DOT"); dir && *dir) {
    static std::atomic<int> printed{0}; // (contexts capture on any thread)
    std::string path =
        std::string(dir) + "/graph_" + std::to_string(printed++) + ".dot";
    if (cudaGraphDebugDotPrint(g, path.c_str(),
                               cudaGraphDebugDotFlagsKernelNodeParams) !=
        cudaSuccess)
      cudaGetLastError();
  }
  cudaGraphExec_t e = nullptr;
  cudaError_t err = cudaGraphInstantiate(&e, g, 0);
  cudaGraphDestroy(g);
  if (err == cudaSuccess) {
    // Upload now so that the first launch is not slower than the others.
    err = cudaGraphUpload(e, static_cast<cudaStream_t>(stream));
    if (err != cudaSuccess)
      cudaGraphExecDestroy(e);
  }
  if (err != cudaSuccess) {
    cudaGetLastError();
    *exec = nullptr;
    return cudaGetErrorString(err);
  }
  *exec = e;
  return nullptr;
}

const char *te_rt_internal_cuda_graph_launch(void *exec, void *stream) {
  return status(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec),
                                static_cast<cudaStream_t>(stream)));
}

bool te_rt_internal_cuda_stream_capturing(void *stream) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &st) !=
      cudaSuccess) {
    cudaGetLastError();
    return true;
  }
  return st != cudaStreamCaptureStatusNone;
}

void te_rt_internal_cuda_graph_exec_destroy(void *exec) {
  if (!exec)
    return;
  // Also when this thread captures another graph meanwhile.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec));
  cudaThreadExchangeStreamCaptureMode(&mode);
}
