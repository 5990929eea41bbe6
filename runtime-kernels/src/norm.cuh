//===- norm.cuh - Shared parts of the norm kernels -------------*- CUDA -*-===//
//
// LayerNorm/RMSNorm forward (norm_fwd.cu) and backward (norm_bwd.cu): fp32
// math with the CPU reference's formulas (lib/Runtime/cpu/Reference.cpp),
// each output rounded once, to nearest even, with the CPU backend's bit
// conversions. What both directions share: the block reductions of the
// one-CTA-per-row kernels, and the row groups of the fast path (below)
// with their launch helpers.
//
//===----------------------------------------------------------------------===//

#ifndef TE_KERNELS_SRC_NORM_CUH
#define TE_KERNELS_SRC_NORM_CUH

#include "launch.cuh"

#include <type_traits>

namespace te::kernels {

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

__device__ inline float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Sum over the block (fixed order for a given blockDim: deterministic).
__device__ inline float blockSum(float v) {
  __shared__ float part[32];
  __shared__ float total;
  v = warpSum(v);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0)
    part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int warps = (blockDim.x + 31) / 32;
    float t = lane < warps ? part[lane] : 0.0f;
    t = warpSum(t);
    if (lane == 0)
      total = t;
  }
  __syncthreads();
  float r = total;
  __syncthreads(); // part/total are reused by the next call
  return r;
}

/// Threads per row of the row kernels: about four elements each.
inline unsigned rowThreads(int64_t cols) {
  int64_t t = ((cols + 3) / 4 + 31) / 32 * 32;
  return static_cast<unsigned>(std::clamp<int64_t>(t, 32, 512));
}

template <typename E>
__device__ inline float gammaTilde(const typename E::T *gamma, int64_t j,
                                   bool zc) {
  float g = E::load(gamma[j]);
  return zc ? g + 1.0f : g;
}

//===----------------------------------------------------------------------===//
// Normalization, fast path
//===----------------------------------------------------------------------===//
//
// Taken when cols is a multiple of P = 16 / sizeof(T) (8 bf16/f16, 4 f32),
// the row tensors and gamma/beta are 16-byte aligned and a row fits the
// largest row group (16384 bf16/f16, 8192 f32 elements); everything else
// takes the one-CTA-per-row kernels (normFwdKernel, normBwdKernel).
//
// A row is owned by a row group of W warps and held in registers: thread t
// of the group owns the 16-byte vectors t, t + 32 W, ... (V of them:
// coalesced 16-byte loads and stores), W the fewest (a power of two) that
// cover the row. Statistics are fp32 as in the reference: warp shuffles,
// then the W warp sums added in warp order through shared memory (a named
// barrier per group); the mean, then the centered second moment from the
// registers (two passes). CTAs hold several groups and are persistent: the
// grid is what the device runs at once, striding over the rows, and each
// thread loads the next row while it computes the current one. gamma and
// beta are re-read per row (L1 hits) rather than held in registers.
//
// Backward: each thread also sums the dgamma (dbeta) terms of its columns
// over its rows in registers; the CTA adds its groups' sums in group order
// through shared memory and writes one fp32 partial row, and normColFinish
// adds the partials in a fixed order. No atomics: the result is a function
// of the shape and the grid (the device's CTA capacity).

constexpr int kNormMaxWarps = 16; // warps per row group

/// Threads per CTA for row groups of w warps, at least cta.
constexpr int normCta(int cta, int w) { return 32 * w > cta ? 32 * w : cta; }

__device__ inline uint4 ldVec(const uint4 *p) { return __ldg(p); }

/// A 16-byte load issued where it is written: a volatile asm that the
/// compiler neither hoists out of the row loop nor merges with another
/// load, so that gamma and beta are re-read per row (L1 hits) instead of
/// holding registers across it.
__device__ inline uint4 ldVecHere(const uint4 *p) {
  uint4 r;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}

/// lo and hi rounded once to nearest even, lo in the low half: E::store's
/// bits (cvtPair; E::store itself for NaNs).
template <typename E> __device__ inline uint32_t pack2(float lo, float hi) {
  uint32_t r = cvtPair(E{}, lo, hi);
  if (lo != lo || hi != hi)
    r = E::store(lo) | static_cast<uint32_t>(E::store(hi)) << 16;
  return r;
}

template <typename E>
__device__ inline uint4 pack(const float (&f)[perVec<E>()]) {
  uint32_t w[4];
  if constexpr (perVec<E>() == 4) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      w[i] = __float_as_uint(f[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i)
      w[i] = pack2<E>(f[2 * i], f[2 * i + 1]);
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

/// v[k] = its sum over the calling thread's row group of W warps: warp
/// shuffles, then the warp sums in warp order (deterministic), exchanged
/// through red (2 * K * 32 floats, the half given by phase, which flips:
/// consecutive calls alternate halves, so one barrier per call suffices).
/// The W warps of the group call it together (named barrier 1 + group).
template <int W, int K>
__device__ inline void groupSum(float (&v)[K], float *red, int &phase) {
#pragma unroll
  for (int k = 0; k < K; ++k)
    v[k] = warpSum(v[k]);
  if constexpr (W > 1) {
    float *r = red + phase * (K * 32);
    phase ^= 1;
    const int warp = threadIdx.x >> 5, first = warp & ~(W - 1);
    if ((threadIdx.x & 31) == 0)
#pragma unroll
      for (int k = 0; k < K; ++k)
        r[k * 32 + warp] = v[k];
    asm volatile("bar.sync %0, %1;" ::"r"(1 + warp / W), "n"(32 * W)
                 : "memory");
#pragma unroll
    for (int k = 0; k < K; ++k) {
      float s = r[k * 32 + first];
#pragma unroll
      for (int w = 1; w < W; ++w)
        s += r[k * 32 + first + w];
      v[k] = s;
    }
  }
}

/// Warps per row group for rows of cols elements, v 16-byte vectors of P
/// elements per thread; 0 when even kNormMaxWarps do not cover a row.
inline int normWarps(int64_t cols, int P, int v) {
  if (cols % P != 0)
    return 0;
  for (int w = 1; w <= kNormMaxWarps; w *= 2)
    if (int64_t(32) * w * v * P >= cols)
      return w;
  return 0;
}

/// The grid of a persistent kernel: the CTAs the device runs at once, at
/// most want (at least one).
template <typename K>
const char *persistentGrid(K kernel, int cta, size_t smem, int64_t want,
                           unsigned *grid) {
  int dev = 0, sms = 0, per = 0;
  if (const char *err = status(cudaGetDevice(&dev)))
    return err;
  if (const char *err = status(
          cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)))
    return err;
  if (const char *err = status(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &per, kernel, cta, smem)))
    return err;
  int64_t most = int64_t(std::max(sms, 1)) * std::max(per, 1);
  *grid = static_cast<unsigned>(std::max<int64_t>(1, std::min(want, most)));
  return nullptr;
}

/// Calls fn(std::integral_constant<int, w>{}) for w in 1, 2, ..., 16.
template <typename Fn> const char *byWarps(int w, Fn fn) {
  switch (w) {
  case 1:
    return fn(std::integral_constant<int, 1>{});
  case 2:
    return fn(std::integral_constant<int, 2>{});
  case 4:
    return fn(std::integral_constant<int, 4>{});
  case 8:
    return fn(std::integral_constant<int, 8>{});
  case 16:
    return fn(std::integral_constant<int, 16>{});
  }
  return "unsupported row group";
}

} // namespace te::kernels

#endif // TE_KERNELS_SRC_NORM_CUH
