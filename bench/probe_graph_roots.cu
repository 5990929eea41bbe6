// Two independent roots in a CUDA graph: does the second start while the
// first runs? The 16-token step graphs begin with two roots, the chain's
// norm kernel and the branch's first weight cast (docs/runtime.md, "Branches
// of a step's graph"); under the profiler one started only after the other
// ended (docs/bench.md, 2026-12-07 (x)). This probe takes the profiler out:
// every kernel writes the GPU's global timer at its start and end.
//
//   nvcc -O2 -std=c++17 -arch=sm_90a bench/probe_graph_roots.cu -o /tmp/probe_roots
//   /tmp/probe_roots          # one line per variant
//
// The graph: a branch B (two kernels of ~3.5 us, 32 CTAs each, on a second
// stream forked at the capture's start) and a chain C (8 kernels of ~1.5 us,
// 2 CTAs) on the origin stream, joined at the end. Variants: which root is
// captured first (B or C), the chain's kernels plain or programmatic
// (PDL: griddepcontrol.wait / launch_dependents), and B forked from an empty
// kernel captured first (one root). Printed: median over replays of the
// chain's first kernel's start and the branch's first kernel's start after
// the earlier of the two (us), and of the replay's wall time (events).
#include "probe.cuh"

#include <algorithm>
#include <cuda_runtime.h>
#include <vector>

__device__ __forceinline__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Spins ~ns nanoseconds; block 0's thread 0 stamps start and end into
/// stamps[2 * slot], stamps[2 * slot + 1].
__global__ void spin(unsigned long long *stamps, int slot, long long ns,
                     bool pdl) {
  if (pdl) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  }
  const unsigned long long t0 = now();
  if (blockIdx.x == 0 && threadIdx.x == 0)
    stamps[2 * slot] = t0;
  while (now() - t0 < static_cast<unsigned long long>(ns)) {
  }
  __syncthreads();
  if (blockIdx.x == 0 && threadIdx.x == 0)
    stamps[2 * slot + 1] = now();
}

__global__ void empty() {}

struct Variant {
  const char *name;
  bool branchFirst, pdl, singleRoot;
};

int launch(cudaStream_t st, unsigned long long *stamps, int slot, int grid,
           long long ns, bool pdl) {
  CK(launchMaybePdl(st, dim3(grid), dim3(256), pdl, spin, stamps, slot, ns,
                    pdl));
  return 0;
}

int main() {
  constexpr int kChain = 8, kBranch = 2, kReplays = 200;
  unsigned long long *stamps = nullptr;
  CK(cudaMalloc(&stamps, 2 * (kChain + kBranch) * sizeof(*stamps)));
  cudaStream_t s0, s1;
  CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  cudaEvent_t fork, join, a, b;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  const Variant variants[] = {
      {"branch captured first, chain plain", true, false, false},
      {"branch captured first, chain PDL", true, true, false},
      {"chain captured first, chain plain", false, false, false},
      {"chain captured first, chain PDL", false, true, false},
      {"one empty root, chain PDL", true, true, true},
  };
  for (const Variant &v : variants) {
    CK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
    if (v.singleRoot)
      empty<<<1, 32, 0, s0>>>();
    CK(cudaEventRecord(fork, s0));
    CK(cudaStreamWaitEvent(s1, fork, 0));
    auto branch = [&]() -> int {
      for (int k = 0; k < kBranch; ++k)
        if (launch(s1, stamps, kChain + k, 32, 3500, false))
          return 1;
      return 0;
    };
    if (v.branchFirst && branch())
      return 1;
    for (int k = 0; k < kChain; ++k) {
      if (launch(s0, stamps, k, 2, 1500, v.pdl))
        return 1;
      if (k == 0 && !v.branchFirst && branch())
        return 1;
    }
    CK(cudaEventRecord(join, s1));
    CK(cudaStreamWaitEvent(s0, join, 0));
    cudaGraph_t g;
    CK(cudaStreamEndCapture(s0, &g));
    cudaGraphExec_t exec;
    CK(cudaGraphInstantiate(&exec, g, 0));
    std::vector<double> chainStart, branchStart, wall;
    std::vector<unsigned long long> h(2 * (kChain + kBranch));
    for (int r = 0; r < kReplays; ++r) {
      CK(cudaEventRecord(a, s0));
      CK(cudaGraphLaunch(exec, s0));
      CK(cudaEventRecord(b, s0));
      CK(cudaStreamSynchronize(s0));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, a, b));
      CK(cudaMemcpy(h.data(), stamps, h.size() * sizeof(h[0]),
                    cudaMemcpyDeviceToHost));
      const unsigned long long first =
          std::min(h[0], h[2 * kChain]); // chain's and branch's first starts
      chainStart.push_back((h[0] - first) / 1e3);
      branchStart.push_back((h[2 * kChain] - first) / 1e3);
      wall.push_back(ms * 1e3);
    }
    auto median = [](std::vector<double> x) {
      std::sort(x.begin(), x.end());
      return x[x.size() / 2];
    };
    std::printf("%-40s chain starts %5.2f us, branch starts %5.2f us, "
                "replay %6.2f us\n",
                v.name, median(chainStart), median(branchStart), median(wall));
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(g));
  }
  return 0;
}
