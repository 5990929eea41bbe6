//===- CudaBackend.cpp - te-mlir runtime: CUDA backend ----------*- C++ -*-===//
//
// Host side of the CUDA backend: device discovery, the kernel self-test and
// the buffers, streams and kernel state of CUDA contexts (the compute
// primitives call runtime-kernels/ from CpuBackend.cpp, after their checks).
// Compiled only with TE_ENABLE_CUDA; the kernels live in runtime-kernels/.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"
#include "te/Runtime/TERuntime.h"
#include "te_kernels/ops.h"
#include "te_kernels/te_kernels.h"

#include <cuda_runtime.h>

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
  // cudaMalloc(0) gives null; a zero-byte buffer still needs its own address.
  return status(cudaMalloc(ptr, static_cast<size_t>(bytes > 0 ? bytes : 1)));
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

void te_rt_internal_cuda_state_destroy(void *state) {
  te_kernels_state_destroy(static_cast<te_kernels_state *>(state));
}
