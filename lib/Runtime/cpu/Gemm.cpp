//===- Gemm.cpp - CPU reference GEMMs ---------------------------*- C++ -*-===//
//
// Blocked fp32 GEMMs split by output rows across std::threads.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <vector>

namespace te::cpu {

int cpuThreads() {
  if (const char *env = std::getenv("TE_RT_CPU_THREADS")) {
    int n = std::atoi(env);
    if (n > 0)
      return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace {

/// Runs body(begin, end) over [0, rows) in contiguous chunks, one per thread.
template <typename Body>
void parallelRows(int64_t rows, int64_t workPerRow, Body body) {
  int threads = cpuThreads();
  // Small problems are not worth a thread.
  if (threads == 1 || rows * workPerRow < (1 << 16) || rows < 2) {
    body(0, rows);
    return;
  }
  threads = static_cast<int>(std::min<int64_t>(threads, rows));
  std::vector<std::thread> pool;
  int64_t chunk = (rows + threads - 1) / threads;
  for (int t = 0; t < threads; ++t) {
    int64_t begin = t * chunk, end = std::min(rows, begin + chunk);
    if (begin < end)
      pool.emplace_back(body, begin, end);
  }
  for (std::thread &th : pool)
    th.join();
}

constexpr int64_t kBlock = 64;

} // namespace

void gemmTN(const float *x, const float *w, const float *bias, int64_t m,
            int64_t n, int64_t k, float *y) {
  parallelRows(m, n * k, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const float *xr = x + i * k;
      for (int64_t j = 0; j < n; ++j) {
        const float *wr = w + j * k;
        float acc = 0.0f;
        for (int64_t p = 0; p < k; ++p)
          acc += xr[p] * wr[p];
        y[i * n + j] = bias ? acc + bias[j] : acc;
      }
    }
  });
}

void gemmNN(const float *dy, const float *w, int64_t m, int64_t n, int64_t k,
            float *dx) {
  parallelRows(m, n * k, [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      float *out = dx + i * k;
      std::fill(out, out + k, 0.0f);
      for (int64_t jb = 0; jb < n; jb += kBlock)
        for (int64_t j = jb; j < std::min(n, jb + kBlock); ++j) {
          float g = dy[i * n + j];
          const float *wr = w + j * k;
          for (int64_t p = 0; p < k; ++p)
            out[p] += g * wr[p];
        }
    }
  });
}

void gemmNT(const float *dy, const float *x, int64_t m, int64_t n, int64_t k,
            float *dw, float *dbias) {
  parallelRows(n, m * k, [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      float *out = dw + j * k;
      std::fill(out, out + k, 0.0f);
      float db = 0.0f;
      for (int64_t i = 0; i < m; ++i) {
        float g = dy[i * n + j];
        db += g;
        const float *xr = x + i * k;
        for (int64_t p = 0; p < k; ++p)
          out[p] += g * xr[p];
      }
      if (dbias)
        dbias[j] = db;
    }
  });
}

} // namespace te::cpu
