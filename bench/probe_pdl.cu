// Programmatic dependent launch (Hopper) on chains of small kernels in a
// CUDA graph: what it saves per kernel at the seeds' sizes (16 rows).
//
//   nvcc -O2 -std=c++17 -arch=sm_90a bench/probe_pdl.cu -o /tmp/probe_pdl
//   /tmp/probe_pdl            # prints µs per graph replay per variant
//
// Each kernel reads a [rows, cols] bf16-sized buffer the previous one wrote
// (a real dependency), does a little arithmetic and writes the next buffer.
// Variants: plain launches; launches with the programmatic-serialization
// attribute, each kernel waiting for its predecessor (griddepcontrol.wait)
// first, then letting its successor launch (griddepcontrol.launch_dependents)
// either right after the wait or not at all (implicit at exit).
#include "probe.cuh"

#include <cstdlib>
#include <vector>

template <int kMode> // 0 plain, 1 wait then trigger, 2 wait only
__global__ void step(const float *in, float *out, int n, float *amax) {
  if constexpr (kMode > 0)
    asm volatile("griddepcontrol.wait;" ::: "memory");
  if constexpr (kMode == 1)
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  float m = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += gridDim.x * blockDim.x) {
    float v = in[i] * 1.0001f + 0.5f;
    out[i] = v;
    m = fmaxf(m, fabsf(v));
  }
  if (amax && m > 0.0f)
    atomicMax(reinterpret_cast<unsigned *>(amax), __float_as_uint(m));
}

template <int kMode>
int chain(cudaStream_t st, float *a, float *b, int n, int kernels, int grid,
          float *amax) {
  for (int k = 0; k < kernels; ++k) {
    const float *in = k % 2 ? b : a;
    float *out = k % 2 ? a : b;
    CK(launchMaybePdl(st, dim3(grid), dim3(256), kMode > 0, step<kMode>, in,
                      out, n, k % 3 == 0 ? amax : nullptr));
  }
  return 0;
}

int main() {
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const int kernels = 20;
  struct Case {
    int n, grid;
  } cases[] = {{16 * 256, 16}, {16 * 1024, 64}, {16 * 256, 132}};
  for (auto c : cases) {
    float *a, *b, *amax;
    CK(cudaMalloc(&a, c.n * 4));
    CK(cudaMalloc(&b, c.n * 4));
    CK(cudaMalloc(&amax, 4));
    CK(cudaMemset(a, 0, c.n * 4));
    const char *names[] = {"plain", "pdl wait+trigger", "pdl wait only"};
    float best[3] = {1e9f, 1e9f, 1e9f};
    cudaGraphExec_t ex[3];
    for (int mode = 0; mode < 3; ++mode) {
      cudaGraph_t g;
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
      const int err =
          mode == 0   ? chain<0>(st, a, b, c.n, kernels, c.grid, amax)
          : mode == 1 ? chain<1>(st, a, b, c.n, kernels, c.grid, amax)
                      : chain<2>(st, a, b, c.n, kernels, c.grid, amax);
      if (err)
        return 1;
      CK(cudaStreamEndCapture(st, &g));
      CK(cudaGraphInstantiate(&ex[mode], g, 0));
    }
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int round = 0; round < 5; ++round)
      for (int mode = 0; mode < 3; ++mode) {
        for (int w = 0; w < 20; ++w)
          CK(cudaGraphLaunch(ex[mode], st));
        const int reps = 500;
        CK(cudaEventRecord(e0, st));
        for (int r = 0; r < reps; ++r)
          CK(cudaGraphLaunch(ex[mode], st));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        float us = ms * 1000.0f / reps;
        best[mode] = us < best[mode] ? us : best[mode];
      }
    // the results are the same (a check that the waits order the chain)
    std::vector<float> ref(c.n), got(c.n);
    for (int mode = 0; mode < 3; ++mode) {
      CK(cudaMemset(a, 0, c.n * 4));
      CK(cudaGraphLaunch(ex[mode], st));
      CK(cudaStreamSynchronize(st));
      CK(cudaMemcpy(mode ? got.data() : ref.data(), a, c.n * 4,
                    cudaMemcpyDeviceToHost));
      if (mode && got != ref)
        std::printf("MISMATCH mode %d\n", mode);
    }
    std::printf("n=%d grid=%d, %d kernels per graph:", c.n, c.grid, kernels);
    for (int mode = 0; mode < 3; ++mode)
      std::printf("  %s %.2f us (%.2f/kernel)", names[mode], best[mode],
                  best[mode] / kernels);
    std::printf("\n");
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(amax));
  }
  return 0;
}
