//===- Parallel.h - Row-range parallelism of the CPU backend ----*- C++ -*-===//
//
// Splits [0, n) into contiguous ranges run on std::threads (cpuThreads() of
// them), or inline when the work is small. Ranges depend only on n and the
// thread count; kernels whose results must not depend on the thread count
// reduce over fixed-size chunks instead (see the norm backward).
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_CPU_PARALLEL_H
#define TE_LIB_RUNTIME_CPU_PARALLEL_H

#include "Gemm.h"

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace te::cpu {

/// The least work (parallelFor's n * workPerItem, about one multiply-add
/// each) split across threads. A thread is started per range and call, which
/// costs some 10-20 us (more on a loaded machine): below about 2^19 the
/// calling thread alone is faster (an fp32 GEMM of 16 x 256 x 64, 2^18
/// multiply-adds: 21 us alone, 33 us on two threads; 16 x 512 x 256: 161
/// against 131).
constexpr int64_t kParallelMinWork = int64_t(1) << 19;

/// Runs body(begin, end) over [0, n); `workPerItem` estimates the cost of
/// one item, so that small problems stay on the calling thread.
template <typename Body>
void parallelFor(int64_t n, int64_t workPerItem, Body body) {
  if (n <= 0)
    return;
  // The size first: cpuThreads() reads TE_RT_CPU_THREADS (a getenv, a scan
  // of the environment) and small work, most calls, never needs it.
  if (n < 2 || n * std::max<int64_t>(workPerItem, 1) < kParallelMinWork) {
    body(int64_t(0), n);
    return;
  }
  int threads = cpuThreads();
  if (threads == 1) {
    body(int64_t(0), n);
    return;
  }
  threads = static_cast<int>(std::min<int64_t>(threads, n));
  int64_t chunk = (n + threads - 1) / threads;
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  // The calling thread takes the first range.
  for (int t = 1; t < threads; ++t) {
    int64_t begin = t * chunk, end = std::min(n, begin + chunk);
    if (begin < end)
      pool.emplace_back(body, begin, end);
  }
  body(int64_t(0), std::min(n, chunk));
  for (std::thread &th : pool)
    th.join();
}

/// sums[j] = sum over rows i of load(i, j), for j in [0, cols): fp32 partials
/// of kSumChunk rows in row order, each added into an fp64 total, rounded
/// once (Gemm.h); columns split across threads, so the result does not
/// depend on the thread count.
template <typename Load>
void columnSums(int64_t rows, int64_t cols, Load load, float *sums) {
  parallelFor(cols, rows, [&](int64_t j0, int64_t j1) {
    thread_local std::vector<double> total;
    total.assign(static_cast<size_t>(j1 - j0), 0.0);
    for (int64_t i0 = 0; i0 < rows; i0 += kSumChunk) {
      std::fill(sums + j0, sums + j1, 0.0f);
      for (int64_t i = i0; i < std::min(rows, i0 + kSumChunk); ++i)
        for (int64_t j = j0; j < j1; ++j)
          sums[j] += load(i, j);
      for (int64_t j = j0; j < j1; ++j)
        total[j - j0] += sums[j];
    }
    for (int64_t j = j0; j < j1; ++j)
      sums[j] = static_cast<float>(total[j - j0]);
  });
}

} // namespace te::cpu

#endif // TE_LIB_RUNTIME_CPU_PARALLEL_H
