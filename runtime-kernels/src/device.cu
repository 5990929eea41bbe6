//===- device.cu - Device discovery and the kernel self-test --------------===//
//
// The first kernel of runtime-kernels/: a vectorized axpy with a scalar tail,
// used to prove that the library was built for and loads on the device.
//
//===----------------------------------------------------------------------===//

#include "te_kernels/te_kernels.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace {

/// y = a * x + y, four elements per thread through 16-byte loads; the last
/// n % 4 elements are handled by the first threads of the scalar tail.
__global__ void axpyVec4(int n, float a, const float *__restrict__ x,
                         float *__restrict__ y) {
  int nVec = n / 4;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nVec) {
    float4 xv = reinterpret_cast<const float4 *>(x)[i];
    float4 yv = reinterpret_cast<float4 *>(y)[i];
    yv.x = fmaf(a, xv.x, yv.x);
    yv.y = fmaf(a, xv.y, yv.y);
    yv.z = fmaf(a, xv.z, yv.z);
    yv.w = fmaf(a, xv.w, yv.w);
    reinterpret_cast<float4 *>(y)[i] = yv;
  }
  int tail = nVec * 4 + i;
  if (i < n % 4)
    y[tail] = fmaf(a, x[tail], y[tail]);
}

/// Keeps the first CUDA error message.
struct ErrorLatch {
  const char *message = nullptr;
  bool check(cudaError_t err) {
    if (err != cudaSuccess && !message)
      message = cudaGetErrorString(err);
    return err == cudaSuccess;
  }
};

} // namespace

extern "C" const char *te_kernels_device_count(int *count) {
  *count = 0;
  cudaError_t err = cudaGetDeviceCount(count);
  if (err != cudaSuccess) {
    *count = 0;
    cudaGetLastError(); // clear the sticky-free error state
    return cudaGetErrorString(err);
  }
  return nullptr;
}

extern "C" const char *te_kernels_device_info(char *name, int nameLen,
                                              int *major, int *minor) {
  int device = 0;
  cudaDeviceProp prop;
  ErrorLatch latch;
  if (!latch.check(cudaGetDevice(&device)) ||
      !latch.check(cudaGetDeviceProperties(&prop, device)))
    return latch.message;
  if (name && nameLen > 0) {
    std::strncpy(name, prop.name, nameLen - 1);
    name[nameLen - 1] = '\0';
  }
  *major = prop.major;
  *minor = prop.minor;
  return nullptr;
}

extern "C" const char *te_kernels_selftest(void) {
  const int n = 1000003; // not a multiple of 4: exercises the tail
  const float a = 0.5f;
  std::vector<float> x(n), y(n), out(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 97) - 48.0f;
    y[i] = static_cast<float>(i % 13) * 0.25f;
  }
  ErrorLatch latch;
  float *dx = nullptr, *dy = nullptr;
  size_t bytes = sizeof(float) * n;
  if (latch.check(cudaMalloc(&dx, bytes)) &&
      latch.check(cudaMalloc(&dy, bytes)) &&
      latch.check(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice)) &&
      latch.check(cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice))) {
    int threads = 256;
    int blocks = (n / 4 + threads - 1) / threads;
    axpyVec4<<<blocks, threads>>>(n, a, dx, dy);
    if (latch.check(cudaGetLastError()) && latch.check(cudaDeviceSynchronize()))
      latch.check(cudaMemcpy(out.data(), dy, bytes, cudaMemcpyDeviceToHost));
  }
  cudaFree(dx);
  cudaFree(dy);
  if (latch.message)
    return latch.message;
  for (int i = 0; i < n; ++i) {
    // Exact: a = 0.5 and small integers/quarters are representable.
    if (out[i] != std::fma(a, x[i], y[i]))
      return "axpy self-test produced a wrong value";
  }
  return nullptr;
}
