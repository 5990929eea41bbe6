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

constexpr int64_t kCols = 32;

/// out[c] = sum over t < count of coef(t) * rows[t * kCols + c] (+ bias[c]
/// when bias is not null), for c < cols: fp32 partials of kDotChunk terms in
/// t order, each added into an fp64 total, then + bias and one rounding (a
/// sum of one partial without bias is that partial). `rows` is a packed
/// block, kCols values per t; the kCols sums stay in registers (the compiler
/// vectorizes over c).
template <typename Coef>
void dotBlock(int64_t count, Coef coef, const float *rows, int64_t cols,
              float *out, const float *bias = nullptr) {
  float acc[kCols];
  auto chunk = [&](int64_t t0, int64_t t1) {
    for (int64_t c = 0; c < kCols; ++c)
      acc[c] = 0.0f;
    for (int64_t t = t0; t < t1; ++t) {
      const float g = coef(t);
      const float *r = rows + t * kCols;
      for (int64_t c = 0; c < kCols; ++c)
        acc[c] += g * r[c];
    }
  };
  if (count <= kDotChunk) { // its fp64 total is the partial itself
    chunk(0, count);
    for (int64_t c = 0; c < cols; ++c)
      out[c] = bias ? static_cast<float>(double(acc[c]) + bias[c]) : acc[c];
    return;
  }
  double total[kCols] = {};
  for (int64_t t0 = 0; t0 < count; t0 += kDotChunk) {
    chunk(t0, std::min(count, t0 + kDotChunk));
    for (int64_t c = 0; c < kCols; ++c)
      total[c] += acc[c];
  }
  for (int64_t c = 0; c < cols; ++c)
    out[c] = static_cast<float>(bias ? total[c] + bias[c] : total[c]);
}

/// Packs columns [c0, c0 + kCols) of the rows x cols matrix `a` into
/// `block` (kCols values per row, zeros past the last column).
void packColumns(const float *a, int64_t rows, int64_t cols, int64_t c0,
                 std::vector<float> &block) {
  block.resize(static_cast<size_t>(rows * kCols));
  const int64_t nc = std::min(kCols, cols - c0);
  for (int64_t t = 0; t < rows; ++t) {
    const float *src = a + t * cols + c0;
    float *dst = block.data() + t * kCols;
    for (int64_t c = 0; c < nc; ++c)
      dst[c] = src[c];
    for (int64_t c = nc; c < kCols; ++c)
      dst[c] = 0.0f;
  }
}

} // namespace

void gemmTN(const float *x, const float *w, const float *bias, int64_t m,
            int64_t n, int64_t k, float *y) {
  // Each output is the dot product of its row of x and row of W (dotBlock:
  // chunked, fp64 totals, then + bias and one rounding), kCols outputs of a
  // row at a time from a transposed block of W (wt[p][jj] = W[jb + jj][p],
  // zeros past the last row of W).
  parallelFor(m, n * k, [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> wt;
    wt.resize(static_cast<size_t>(k * kCols));
    for (int64_t jb = 0; jb < n; jb += kCols) {
      const int64_t nb = std::min(kCols, n - jb);
      for (int64_t jj = 0; jj < kCols; ++jj) {
        if (jj < nb) {
          const float *wr = w + (jb + jj) * k;
          for (int64_t p = 0; p < k; ++p)
            wt[p * kCols + jj] = wr[p];
        } else {
          for (int64_t p = 0; p < k; ++p)
            wt[p * kCols + jj] = 0.0f;
        }
      }
      for (int64_t i = r0; i < r1; ++i) {
        const float *xr = x + i * k;
        dotBlock(
            k, [&](int64_t p) { return xr[p]; }, wt.data(), nb, y + i * n + jb,
            bias ? bias + jb : nullptr);
      }
    }
  });
}

namespace {

/// out[r * k + p] = sum over t < count of coef(r, t) * a[t * k + p], for r in
/// [r0, r1) and p < k: per block of kCols columns, a's columns packed once
/// (count x kCols, contiguous), then each row's kCols dot products over t
/// (dotBlock). The dgrad and wgrad GEMMs are both this shape.
template <typename Coef>
void combineRows(const float *a, int64_t count, int64_t k, int64_t r0,
                 int64_t r1, Coef coef, float *out) {
  thread_local std::vector<float> block;
  for (int64_t pb = 0; pb < k; pb += kCols) {
    packColumns(a, count, k, pb, block);
    for (int64_t r = r0; r < r1; ++r)
      dotBlock(
          count, [&](int64_t t) { return coef(r, t); }, block.data(),
          std::min(kCols, k - pb), out + r * k + pb);
  }
}

} // namespace

void gemmNN(const float *dy, const float *w, int64_t m, int64_t n, int64_t k,
            float *dx) {
  // dx[i, :] = sum_j dy[i, j] * W[j, :]
  parallelFor(m, n * k, [&](int64_t r0, int64_t r1) {
    combineRows(
        w, n, k, r0, r1, [&](int64_t i, int64_t j) { return dy[i * n + j]; },
        dx);
  });
}

void gemmNT(const float *dy, const float *x, int64_t m, int64_t n, int64_t k,
            float *dw, float *dbias) {
  // dW[j, :] = sum_i dy[i, j] * x[i, :]; dbias = dy's column sums.
  parallelFor(n, m * k, [&](int64_t j0, int64_t j1) {
    combineRows(
        x, m, k, j0, j1, [&](int64_t j, int64_t i) { return dy[i * n + j]; },
        dw);
  });
  if (dbias)
    columnSums(
        m, n, [&](int64_t i, int64_t j) { return dy[i * n + j]; }, dbias);
}

} // namespace te::cpu
