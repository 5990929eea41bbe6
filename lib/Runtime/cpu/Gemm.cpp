//===- Gemm.cpp - CPU reference GEMMs ---------------------------*- C++ -*-===//
//
// Blocked fp32 GEMMs split by output rows across threads (Parallel.h).
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "Parallel.h"

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
  // Asked once: glibc answers hardware_concurrency() by reading
  // /sys/devices/system/cpu/online (three system calls), and every kernel
  // asks before each parallel loop (ten times per small entry).
  static const int hardware =
      static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return hardware;
}

namespace {

constexpr int64_t kBlock = 64;

} // namespace

void gemmTN(const float *x, const float *w, const float *bias, int64_t m,
            int64_t n, int64_t k, float *y) {
  // Each output is the dot product of its row of x and row of W, accumulated
  // from 0 in p order, then + bias. Computed for kCols outputs of a row at a
  // time from a transposed block of W (wt[p][jj] = W[jb + jj][p]): the same
  // products and additions in the same order, bit for bit, but contiguous
  // over jj, so the compiler vectorizes them (a dot product's sum it may not
  // reorder).
  constexpr int64_t kCols = 32;
  parallelFor(m, n * k, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> wt;
    wt.resize(static_cast<size_t>(k * kCols));
    for (int64_t jb = 0; jb < n; jb += kCols) {
      const int64_t nb = std::min(kCols, n - jb);
      for (int64_t jj = 0; jj < nb; ++jj) {
        const float *wr = w + (jb + jj) * k;
        for (int64_t p = 0; p < k; ++p)
          wt[p * kCols + jj] = wr[p];
      }
      for (int64_t i = r0; i < r1; ++i) {
        const float *xr = x + i * k;
        float acc[kCols] = {};
        for (int64_t p = 0; p < k; ++p) {
          const float g = xr[p];
          const float *row = wt.data() + p * kCols;
          for (int64_t jj = 0; jj < kCols; ++jj)
            acc[jj] += g * row[jj];
        }
        float *out = y + i * n + jb;
        for (int64_t jj = 0; jj < nb; ++jj)
          out[jj] = bias ? acc[jj] + bias[jb + jj] : acc[jj];
      }
    }
  });
}

void gemmNN(const float *dy, const float *w, int64_t m, int64_t n, int64_t k,
            float *dx) {
  parallelFor(m, n * k, [&](int64_t r0, int64_t r1) {
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
  parallelFor(n, m * k, [&](int64_t j0, int64_t j1) {
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
