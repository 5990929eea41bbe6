//===- launch.cuh - Launch helpers the kernels share -----------*- CUDA -*-===//
//
// The block size of the grid-stride kernels and their grid, 16-byte
// vectors of elements, and the deterministic column sums (dgamma, dbeta,
// dbias): fixed row chunks summed per column, then the chunk partials
// summed in order (colFinish).
//
//===----------------------------------------------------------------------===//

#ifndef TE_KERNELS_SRC_LAUNCH_CUH
#define TE_KERNELS_SRC_LAUNCH_CUH

#include "internal.cuh"

#include <algorithm>

namespace te::kernels {

constexpr int kThreads = 256;

/// Blocks of kThreads for a grid-stride loop over n items.
inline unsigned gridFor(int64_t n) {
  return static_cast<unsigned>(std::max<int64_t>(
      1, std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t(1) << 20)));
}

inline bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

template <typename T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };

/// Rows per chunk of the column sums: a function of rows only, so the
/// summation order does not depend on the device.
inline int64_t chunkRows(int64_t rows) {
  return std::max<int64_t>(64, (rows + 32767) / 32768);
}

/// partial[c * cols + j] (and, with two outputs, partial[(chunks + c) *
/// cols + j]) = sums of fn(i, j) over the rows of chunk c, in row order.
template <typename Fn>
__global__ void colPartial(Fn fn, int64_t rows, int64_t cols, int64_t chunk,
                           int64_t chunks, bool two, float *partial) {
  gridWait();
  int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= cols)
    return;
  int64_t c = blockIdx.y;
  int64_t r0 = c * chunk, r1 = min(rows, r0 + chunk);
  float s0 = 0.0f, s1 = 0.0f;
  // (unrolled: several rows' loads in flight, the sums in row order)
#pragma unroll 4
  for (int64_t i = r0; i < r1; ++i) {
    float2 v = fn(i, j);
    s0 += v.x;
    s1 += v.y;
  }
  partial[c * cols + j] = s0;
  if (two)
    partial[(chunks + c) * cols + j] = s1;
}

/// colPartial's sums of a single chunk (all the rows), rounded to E into
/// out0 (and out1 with `two`): the bits colFinish would write from its one
/// partial (0.0f plus a sum that is never -0.0f), without its launch.
template <typename E, typename Fn>
__global__ void colDirect(Fn fn, int64_t rows, int64_t cols, bool two,
                          typename E::T *out0, typename E::T *out1) {
  gridWait();
  int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= cols)
    return;
  float s0 = 0.0f, s1 = 0.0f;
#pragma unroll 4
  for (int64_t i = 0; i < rows; ++i) {
    float2 v = fn(i, j);
    s0 += v.x;
    s1 += v.y;
  }
  out0[j] = E::store(s0);
  if (two)
    out1[j] = E::store(s1);
}

/// Column sums of fn over [rows, cols] into out0 (and out1 when non-null):
/// fixed chunks of rows summed by colPartial, then colFinish; one kernel
/// (colDirect) when the rows are one chunk.
template <typename E, typename Fn>
const char *columnSums(te_kernels_state *s, Fn fn, int64_t rows, int64_t cols,
                       typename E::T *out0, typename E::T *out1) {
  if (cols == 0)
    return nullptr;
  int64_t chunk = chunkRows(rows), chunks = (rows + chunk - 1) / chunk;
  if (chunks == 1) {
    launchKernel(s, colDirect<E, Fn>,
                 static_cast<unsigned>((cols + kThreads - 1) / kThreads),
                 kThreads, 0, fn, rows, cols, out1 != nullptr, out0, out1);
    return launched();
  }
  float *partial = nullptr;
  int64_t per = out1 ? 2 : 1;
  if (chunks > 0) {
    if (const char *err = scratch(s, per * chunks * cols, &partial))
      return err;
    dim3 grid(static_cast<unsigned>((cols + kThreads - 1) / kThreads),
              static_cast<unsigned>(chunks));
    launchKernel(s, colPartial<Fn>, grid, kThreads, 0, fn, rows, cols, chunk,
                 chunks, out1 != nullptr, partial);
    if (const char *err = launched())
      return err;
  }
  launchKernel(s, colFinish<E>, gridFor(cols), kThreads, 0, partial, chunks,
               cols, out0);
  if (out1)
    launchKernel(s, colFinish<E>, gridFor(cols), kThreads, 0,
                 partial + chunks * cols, chunks, cols, out1);
  return launched();
}

} // namespace te::kernels

#endif // TE_KERNELS_SRC_LAUNCH_CUH
