//===- ops.cu - CUDA backend of the runtime's compute primitives ----------===//
//
// LayerNorm/RMSNorm forward and backward, the 13 activations and their
// derivatives, bias gradients, add, bias add, cast, transpose and the
// zeroing of lists of byte ranges (one launch for up to
// TE_RT_ZERO_RANGES_PER_LAUNCH of them, passed by value). fp32
// math with the CPU reference's formulas (lib/Runtime/cpu/Reference.cpp);
// each output is rounded once, to nearest even, with the same bit
// conversions as the CPU backend. Column sums (dgamma, dbeta, dbias) are
// deterministic: fixed row chunks summed per column, then the chunk
// partials summed in order (the norms' fast path: one partial row per
// CTA, summed in a fixed order).
// The activation kernels (forward, backward, dbias + dact) optionally
// reduce the amax of what they store (an atomicMax per block: max is
// order-independent), for a current-scaling FP8 quantization of their
// output that then skips its own amax pass (fp8.cu's amax_in).
//
//===----------------------------------------------------------------------===//

#include "act.cuh"
#include "internal.cuh"
#include "te/Runtime/TERuntime.h" // TE_RT_ACT_*, TE_RT_ZERO_RANGES_PER_LAUNCH

#include <algorithm>
#include <new>
#include <type_traits>

using namespace te::kernels;

namespace {

constexpr int kThreads = 256;

/// Blocks of kThreads for a grid-stride loop over n items.
unsigned gridFor(int64_t n) {
  return static_cast<unsigned>(std::max<int64_t>(
      1, std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t(1) << 20)));
}

bool aligned16(const void *p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

/// Calls fn(std::true_type{}) when the optional amax output is given, else
/// fn(std::false_type{}): the producer kernels are instantiated with and
/// without their amax reduction (kAmax).
template <typename Fn> const char *withAmax(const float *amax, Fn fn) {
  return amax ? fn(std::true_type{}) : fn(std::false_type{});
}

/// The grid of a grid-stride producer kernel over n items: gridFor(n), or
/// with its amax reduction (kAmax) at most 32 blocks per multiprocessor.
/// On the H200 (8192x4096), one block per 256 items made the blocks'
/// reductions cost 15-30% of the kernel; 16 blocks per multiprocessor
/// slowed the f32 kernels (too few loads in flight), 64 the bf16 ones.
template <bool kAmax> unsigned producerGrid(int64_t n) {
  if constexpr (kAmax)
    return static_cast<unsigned>(
        std::min<int64_t>(gridFor(n), int64_t(32) * smCount()));
  return gridFor(n);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

__device__ inline float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Sum over the block (fixed order for a given blockDim: deterministic).
__device__ float blockSum(float v) {
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
unsigned rowThreads(int64_t cols) {
  int64_t t = ((cols + 3) / 4 + 31) / 32 * 32;
  return static_cast<unsigned>(std::clamp<int64_t>(t, 32, 512));
}

/// Rows per chunk of the column sums: a function of rows only, so the
/// summation order does not depend on the device.
int64_t chunkRows(int64_t rows) {
  return std::max<int64_t>(64, (rows + 32767) / 32768);
}

/// partial[c * cols + j] (and, with two outputs, partial[(chunks + c) *
/// cols + j]) = sums of fn(i, j) over the rows of chunk c, in row order.
template <typename Fn>
__global__ void colPartial(Fn fn, int64_t rows, int64_t cols, int64_t chunk,
                           int64_t chunks, bool two, float *partial) {
  int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= cols)
    return;
  int64_t c = blockIdx.y;
  int64_t r0 = c * chunk, r1 = min(rows, r0 + chunk);
  float s0 = 0.0f, s1 = 0.0f;
  for (int64_t i = r0; i < r1; ++i) {
    float2 v = fn(i, j);
    s0 += v.x;
    s1 += v.y;
  }
  partial[c * cols + j] = s0;
  if (two)
    partial[(chunks + c) * cols + j] = s1;
}

/// Column sums of fn over [rows, cols] into out0 (and out1 when non-null).
template <typename E, typename Fn>
const char *columnSums(te_kernels_state *s, Fn fn, int64_t rows, int64_t cols,
                       typename E::T *out0, typename E::T *out1) {
  if (cols == 0)
    return nullptr;
  int64_t chunk = chunkRows(rows), chunks = (rows + chunk - 1) / chunk;
  float *partial = nullptr;
  int64_t per = out1 ? 2 : 1;
  if (chunks > 0) {
    if (const char *err = scratch(s, per * chunks * cols, &partial))
      return err;
    dim3 grid(static_cast<unsigned>((cols + kThreads - 1) / kThreads),
              static_cast<unsigned>(chunks));
    colPartial<<<grid, kThreads, 0, s->stream>>>(fn, rows, cols, chunk, chunks,
                                                 out1 != nullptr, partial);
    if (const char *err = launched())
      return err;
  }
  colFinish<E>
      <<<gridFor(cols), kThreads, 0, s->stream>>>(partial, chunks, cols, out0);
  if (out1)
    colFinish<E><<<gridFor(cols), kThreads, 0, s->stream>>>(
        partial + chunks * cols, chunks, cols, out1);
  return launched();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

template <typename E>
__device__ inline float gammaTilde(const typename E::T *gamma, int64_t j,
                                   bool zc) {
  float g = E::load(gamma[j]);
  return zc ? g + 1.0f : g;
}

/// One CTA per row. amax (may be null): max |z| as stored, into a zeroed
/// cell (the maximum rounded once: rounding is monotone).
template <typename E>
__global__ void
normFwdKernel(bool rms, const typename E::T *x, const typename E::T *gamma,
              const typename E::T *beta, float eps, bool zc, int64_t cols,
              typename E::T *z, float *mu, float *rsigma, AmaxOut amax) {
  int64_t row = blockIdx.x;
  const typename E::T *xr = x + row * cols;
  typename E::T *zr = z + row * cols;
  const float rn = 1.0f / static_cast<float>(cols);
  float mean = 0.0f;
  if (!rms) {
    float s = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      s += E::load(xr[j]);
    mean = blockSum(s) * rn;
  }
  float m2 = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float c = E::load(xr[j]) - mean;
    m2 += c * c;
  }
  m2 = blockSum(m2);
  float rs = 1.0f / sqrtf(m2 * rn + eps);
  float m = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float y = (E::load(xr[j]) - mean) * rs;
    float v = gammaTilde<E>(gamma, j, zc) * y;
    if (!rms && beta)
      v += E::load(beta[j]);
    m = fmaxf(m, fabsf(v));
    zr[j] = E::store(v);
  }
  if (threadIdx.x == 0) {
    if (!rms)
      mu[row] = mean;
    rsigma[row] = rs;
  }
  if (amax)
    blockAmax(E::load(E::store(m)), amax);
}

/// dx of one row per CTA.
template <typename E>
__global__ void normBwdKernel(bool rms, const typename E::T *dz,
                              const typename E::T *x, const float *mu,
                              const float *rsigma, const typename E::T *gamma,
                              bool zc, int64_t cols, typename E::T *dx) {
  int64_t row = blockIdx.x;
  const typename E::T *xr = x + row * cols, *dzr = dz + row * cols;
  typename E::T *dxr = dx + row * cols;
  const float rn = 1.0f / static_cast<float>(cols);
  float mean = rms ? 0.0f : mu[row];
  float rs = rsigma[row];
  float m1 = 0.0f, m2 = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float y = (E::load(xr[j]) - mean) * rs;
    float g = gammaTilde<E>(gamma, j, zc) * E::load(dzr[j]);
    m1 += g;
    m2 += g * y;
  }
  m1 = blockSum(m1) * rn;
  m2 = blockSum(m2) * rn;
  if (rms)
    m1 = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float y = (E::load(xr[j]) - mean) * rs;
    float g = gammaTilde<E>(gamma, j, zc) * E::load(dzr[j]);
    dxr[j] = E::store(rs * (g - (m2 * y + m1)));
  }
}

/// (dz * y, dz) at (i, j): the terms of dgamma and dbeta.
template <typename E> struct NormGradTerms {
  bool rms;
  const typename E::T *dz, *x;
  const float *mu, *rsigma;
  int64_t cols;
  __device__ float2 operator()(int64_t i, int64_t j) const {
    float mean = rms ? 0.0f : mu[i];
    float y = (E::load(x[i * cols + j]) - mean) * rsigma[i];
    float d = E::load(dz[i * cols + j]);
    return make_float2(d * y, d);
  }
};

//===----------------------------------------------------------------------===//
// Normalization, fast path
//===----------------------------------------------------------------------===//
//
// Taken when cols is a multiple of P = 16 / sizeof(T) (8 bf16/f16, 4 f32),
// the row tensors and gamma/beta are 16-byte aligned and a row fits the
// largest row group (16384 bf16/f16, 8192 f32 elements); everything else
// takes the one-CTA-per-row kernels above.
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
constexpr int kNormFwdVecs = 4;   // forward: 16-byte vectors per thread
constexpr int kNormFwdCta = 256;  // forward: threads per CTA (at least)
// Backward: one CTA of 512 threads per SM (up to 128 registers a thread:
// the column sums, this row and the next); measured on the H200 against
// 2 CTAs of 256 (same speed within 2%, twice the partial rows) and the
// 32-column, no-prefetch layout (10-50% slower).
constexpr int kNormBwdCta = 512;

/// Threads per CTA for row groups of w warps, at least cta.
constexpr int normCta(int cta, int w) { return 32 * w > cta ? 32 * w : cta; }

/// Backward: 16-byte vectors per thread (16 columns; 32 for the widest
/// 16-bit rows, W = 16).
template <typename E> constexpr int bwdVecs() { return 16 / perVec<E>(); }

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
/// bits (the paired conversion instruction; E::store itself for NaNs).
__device__ inline uint32_t pack2(BF16, float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  if (lo != lo || hi != hi)
    r = BF16::store(lo) | static_cast<uint32_t>(BF16::store(hi)) << 16;
  return r;
}
__device__ inline uint32_t pack2(F16, float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  if (lo != lo || hi != hi)
    r = F16::store(lo) | static_cast<uint32_t>(F16::store(hi)) << 16;
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
      w[i] = pack2(E{}, f[2 * i], f[2 * i + 1]);
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

/// What normFwdFast writes besides the statistics: z (kFmt < 0), or z
/// rounded to E, scaled by *scale and cast to FP8 (kFmt: kE4M3 / kE5M2)
/// into the bytes q [rows, cols] (delayed scaling's fused cast; block 0
/// writes *scaleInv = 1 / *scale); with kAmax also max |z| as stored into
/// *amax (a zeroed cell).
struct NormOut {
  void *z;
  const float *scale;
  float *scaleInv;
  AmaxOut amax;
};

template <typename E, int W, int kFmt, bool kAmax>
__global__ void __launch_bounds__(normCta(kNormFwdCta, W),
                                  768 / normCta(kNormFwdCta, W))
    normFwdFast(bool rms, const typename E::T *__restrict__ x,
                const typename E::T *__restrict__ gamma,
                const typename E::T *__restrict__ beta, float eps, bool zc,
                int64_t rows, int cols, NormOut out, float *__restrict__ mu,
                float *__restrict__ rsigma) {
  constexpr int P = perVec<E>(), V = kNormFwdVecs, G = 32 * W;
  constexpr int GROUPS = normCta(kNormFwdCta, W) / G;
  __shared__ float red[2 * 32];
  const int group = threadIdx.x / G, t = threadIdx.x % G;
  const int nvec = cols / P;
  const float rn = 1.0f / static_cast<float>(cols);
  const uint4 zero = make_uint4(0, 0, 0, 0);
  const bool addBeta = !rms && beta;
  bool live[V];
#pragma unroll
  for (int v = 0; v < V; ++v)
    live[v] = v * G + t < nvec;
  const uint4 *gr = reinterpret_cast<const uint4 *>(gamma) + t;
  const uint4 *br = reinterpret_cast<const uint4 *>(beta) + t;
  const int64_t step = static_cast<int64_t>(gridDim.x) * GROUPS;
  int64_t row = static_cast<int64_t>(blockIdx.x) * GROUPS + group;
  uint4 nx[V]; // the next row (loaded while the current one is computed)
  auto load = [&](int64_t r) {
    const uint4 *xr =
        reinterpret_cast<const uint4 *>(x + (r < rows ? r : 0) * cols) + t;
#pragma unroll
    for (int v = 0; v < V; ++v)
      nx[v] = r < rows && live[v] ? ldVec(xr + v * G) : zero;
  };
  load(row);
  int phase = 0;
  float m = 0.0f, qs = 1.0f;
  if constexpr (kFmt >= 0) {
    qs = *out.scale;
    if (blockIdx.x == 0 && threadIdx.x == 0)
      *out.scaleInv = 1.0f / qs;
  }
  for (; row - group < rows; row += step) {
    const bool ok = row < rows;
    uint4 rx[V];
#pragma unroll
    for (int v = 0; v < V; ++v)
      rx[v] = nx[v];
    load(row + step);
    float mean = 0.0f;
    if (!rms) {
      float s[1] = {0.0f};
#pragma unroll
      for (int v = 0; v < V; ++v) {
        float xv[P];
        unpack<E>(rx[v], xv);
#pragma unroll
        for (int e = 0; e < P; ++e)
          s[0] += xv[e];
      }
      groupSum<W>(s, red, phase);
      mean = s[0] * rn;
    }
    float m2[1] = {0.0f};
#pragma unroll
    for (int v = 0; v < V; ++v) {
      if (!live[v])
        continue;
      float xv[P];
      unpack<E>(rx[v], xv);
#pragma unroll
      for (int e = 0; e < P; ++e) {
        float c = xv[e] - mean;
        m2[0] += c * c;
      }
    }
    groupSum<W>(m2, red, phase);
    const float rs = 1.0f / sqrtf(m2[0] * rn + eps);
    if (!ok)
      continue;
    using T = typename E::T;
    uint4 *zr = reinterpret_cast<uint4 *>(static_cast<T *>(out.z) +
                                          row * cols) +
                t;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      if (!live[v])
        continue;
      float xv[P], gv[P], bv[P], o[P];
      unpack<E>(rx[v], xv);
      unpack<E>(ldVecHere(gr + v * G), gv);
      unpack<E>(addBeta ? ldVecHere(br + v * G) : zero, bv);
#pragma unroll
      for (int e = 0; e < P; ++e) {
        float y = (xv[e] - mean) * rs;
        float val = (zc ? gv[e] + 1.0f : gv[e]) * y;
        if (addBeta)
          val += bv[e];
        if constexpr (kAmax)
          m = fmaxf(m, fabsf(val));
        o[e] = val;
      }
      if constexpr (kFmt < 0) {
        zr[v * G] = pack<E>(o);
      } else {
        // P bytes of FP8: the values as z would store them, times the scale.
        uint32_t w[P / 4];
#pragma unroll
        for (int k = 0; k < P / 4; ++k)
          w[k] = toFP8x2<kFmt>(E::load(E::store(o[4 * k])) * qs,
                               E::load(E::store(o[4 * k + 1])) * qs) |
                 (toFP8x2<kFmt>(E::load(E::store(o[4 * k + 2])) * qs,
                                E::load(E::store(o[4 * k + 3])) * qs)
                  << 16);
        uint8_t *qr = static_cast<uint8_t *>(out.z) + row * cols +
                      static_cast<int64_t>(v * G + t) * P;
        if constexpr (P == 8)
          *reinterpret_cast<uint2 *>(qr) = make_uint2(w[0], w[1]);
        else
          *reinterpret_cast<uint32_t *>(qr) = w[0];
      }
    }
    if (t == 0) {
      if (!rms)
        mu[row] = mean;
      rsigma[row] = rs;
    }
  }
  if constexpr (kAmax)
    blockAmax(E::load(E::store(m)), out.amax);
}

/// dx, and one partial row of dgamma (and dbeta) sums per CTA:
/// partial[blockIdx.x * cols + j] (partial[(gridDim.x + blockIdx.x) * cols
/// + j]). Dynamic shared memory: (CTA / 32 W) * cols floats when the CTA
/// has several row groups.
template <typename E, int W, int V>
__global__ void __launch_bounds__(normCta(kNormBwdCta, W), 1)
    normBwdFast(bool rms, const typename E::T *__restrict__ dz,
                const typename E::T *__restrict__ x,
                const float *__restrict__ mu, const float *__restrict__ rsigma,
                const typename E::T *__restrict__ gamma, bool zc, int64_t rows,
                int cols, bool wantBeta, typename E::T *__restrict__ dx,
                float *__restrict__ partial) {
  constexpr int P = perVec<E>(), G = 32 * W;
  constexpr int CTA = normCta(kNormBwdCta, W), GROUPS = CTA / G;
  extern __shared__ float4 combine[];
  __shared__ float red[2 * 2 * 32];
  const int group = threadIdx.x / G, t = threadIdx.x % G;
  const int nvec = cols / P;
  const float rn = 1.0f / static_cast<float>(cols);
  const uint4 zero = make_uint4(0, 0, 0, 0);
  bool live[V];
  float dg[V][P], db[V][P];
#pragma unroll
  for (int v = 0; v < V; ++v) {
    live[v] = v * G + t < nvec;
#pragma unroll
    for (int e = 0; e < P; ++e)
      dg[v][e] = db[v][e] = 0.0f;
  }
  const uint4 *gr = reinterpret_cast<const uint4 *>(gamma) + t;
  const int64_t step = static_cast<int64_t>(gridDim.x) * GROUPS;
  int64_t row = static_cast<int64_t>(blockIdx.x) * GROUPS + group;
  // The next row's dz, x, mean and rsigma, loaded during the current row.
  uint4 nd[V], nx[V];
  float nmean = 0.0f, nrs = 0.0f;
  auto load = [&](int64_t r) {
    const bool in = r < rows;
    const int64_t off = (in ? r : 0) * cols;
    const uint4 *dzr = reinterpret_cast<const uint4 *>(dz + off) + t;
    const uint4 *xr = reinterpret_cast<const uint4 *>(x + off) + t;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      nd[v] = in && live[v] ? ldVec(dzr + v * G) : zero;
      nx[v] = in && live[v] ? ldVec(xr + v * G) : zero;
    }
    nmean = in && !rms ? mu[r] : 0.0f;
    nrs = in ? rsigma[r] : 0.0f;
  };
  // Prefetching the next row needs registers that 32 columns per thread
  // (the widest 16-bit rows) do not leave.
  constexpr bool kPrefetch = V * P <= 16;
  if (kPrefetch)
    load(row);
  int phase = 0;
  for (; row - group < rows; row += step) {
    const bool ok = row < rows;
    if (!kPrefetch)
      load(row);
    uint4 rd[V], rx[V];
#pragma unroll
    for (int v = 0; v < V; ++v)
      rd[v] = nd[v], rx[v] = nx[v];
    const float mean = nmean, rs = nrs;
    if (kPrefetch)
      load(row + step);
    // g = gamma~ * dz; m1 = mean(g) (LayerNorm only); m2 = mean(g * y)
    float m[2] = {0.0f, 0.0f};
#pragma unroll
    for (int v = 0; v < V; ++v) {
      if (!live[v])
        continue;
      float fd[P], fx[P], fg[P];
      unpack<E>(rd[v], fd);
      unpack<E>(rx[v], fx);
      unpack<E>(ldVecHere(gr + v * G), fg);
#pragma unroll
      for (int e = 0; e < P; ++e) {
        float y = (fx[e] - mean) * rs;
        float gg = (zc ? fg[e] + 1.0f : fg[e]) * fd[e];
        m[0] += gg;
        m[1] += gg * y;
        dg[v][e] += fd[e] * y;
        db[v][e] += fd[e];
      }
    }
    groupSum<W>(m, red, phase);
    const float m1 = rms ? 0.0f : m[0] * rn, m2 = m[1] * rn;
    if (!ok)
      continue;
    uint4 *dxr = reinterpret_cast<uint4 *>(dx + row * cols) + t;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      if (!live[v])
        continue;
      float fd[P], fx[P], fg[P], o[P];
      unpack<E>(rd[v], fd);
      unpack<E>(rx[v], fx);
      unpack<E>(ldVecHere(gr + v * G), fg);
#pragma unroll
      for (int e = 0; e < P; ++e) {
        float y = (fx[e] - mean) * rs;
        float gg = (zc ? fg[e] + 1.0f : fg[e]) * fd[e];
        o[e] = rs * (gg - (m2 * y + m1));
      }
      dxr[v * G] = pack<E>(o);
    }
  }
  float4 *out = reinterpret_cast<float4 *>(partial);
  const int c4 = cols / 4; // float4s per row
  // One plane (dgamma or dbeta) of the CTA's partial row.
  auto emit = [&](const float (&a)[V][P], int plane) {
    float4 *dst = out + (static_cast<int64_t>(plane) * gridDim.x +
                         blockIdx.x) * c4;
    if constexpr (GROUPS == 1) {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        if (!live[v])
          continue;
#pragma unroll
        for (int h = 0; h < P / 4; ++h)
          dst[(v * G + t) * (P / 4) + h] =
              make_float4(a[v][4 * h], a[v][4 * h + 1], a[v][4 * h + 2],
                          a[v][4 * h + 3]);
      }
    } else {
      // Every group's sums into shared memory, then each column summed
      // over the groups in group order by one thread of the CTA.
#pragma unroll
      for (int v = 0; v < V; ++v) {
        if (!live[v])
          continue;
#pragma unroll
        for (int h = 0; h < P / 4; ++h)
          combine[group * c4 + (v * G + t) * (P / 4) + h] =
              make_float4(a[v][4 * h], a[v][4 * h + 1], a[v][4 * h + 2],
                          a[v][4 * h + 3]);
      }
      __syncthreads();
      for (int c = threadIdx.x; c < c4; c += CTA) {
        float4 s = combine[c];
#pragma unroll
        for (int k = 1; k < GROUPS; ++k) {
          const float4 u = combine[k * c4 + c];
          s.x += u.x, s.y += u.y, s.z += u.z, s.w += u.w;
        }
        dst[c] = s;
      }
      __syncthreads(); // combine is reused by the next plane
    }
  };
  emit(dg, 0);
  if (wantBeta)
    emit(db, 1);
}

constexpr int kFinishSlices = 16;

/// out[j] = the sum over c < parts of plane[c * cols + j], plane being the
/// first (blockIdx.y = 0, into out0) or second (into out1) parts x cols
/// block of partial: kFinishSlices strided slices summed in order, then the
/// slices in order. Blocks of 32 x kFinishSlices threads, 32 columns each.
template <typename E>
__global__ void normColFinish(const float *__restrict__ partial, int parts,
                              int cols, typename E::T *out0,
                              typename E::T *out1) {
  __shared__ float slice[kFinishSlices][33];
  const int j = blockIdx.x * 32 + threadIdx.x;
  const float *p =
      partial + static_cast<int64_t>(blockIdx.y) * parts * cols + j;
  float s = 0.0f;
  if (j < cols)
#pragma unroll 4
    for (int c = threadIdx.y; c < parts; c += kFinishSlices)
      s += p[static_cast<int64_t>(c) * cols];
  slice[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y != 0 || j >= cols)
    return;
  float r = slice[0][threadIdx.x];
  for (int k = 1; k < kFinishSlices; ++k)
    r += slice[k][threadIdx.x];
  (blockIdx.y ? out1 : out0)[j] = E::store(r);
}

/// Warps per row group for rows of cols elements, v 16-byte vectors of P
/// elements per thread; 0 when even kNormMaxWarps do not cover a row.
int normWarps(int64_t cols, int P, int v) {
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

/// normBwdFast<E, W, V> and its finishing kernel on s's stream.
template <typename E, int W, int V>
const char *normBwdLaunch(te_kernels_state *s, bool rms,
                          const typename E::T *dz, const typename E::T *x,
                          const float *mu, const float *rsigma,
                          const typename E::T *gamma, bool zc, int64_t rows,
                          int64_t cols, typename E::T *dx,
                          typename E::T *dgamma, typename E::T *dbeta) {
  constexpr int CTA = normCta(kNormBwdCta, W), GROUPS = CTA / (32 * W);
  size_t smem =
      GROUPS > 1 ? size_t(GROUPS) * static_cast<size_t>(cols) * sizeof(float)
                 : 0;
  unsigned grid = 0;
  if (const char *err = persistentGrid(normBwdFast<E, W, V>, CTA, smem,
                                       (rows + GROUPS - 1) / GROUPS, &grid))
    return err;
  int planes = dbeta ? 2 : 1;
  float *partial = nullptr;
  if (const char *err = scratch(s, int64_t(planes) * grid * cols, &partial))
    return err;
  normBwdFast<E, W, V><<<grid, CTA, smem, s->stream>>>(
      rms, dz, x, mu, rsigma, gamma, zc, rows, static_cast<int>(cols),
      dbeta != nullptr, dx, partial);
  if (const char *err = launched())
    return err;
  dim3 block(32, kFinishSlices);
  dim3 blocks(static_cast<unsigned>((cols + 31) / 32),
              static_cast<unsigned>(planes));
  normColFinish<E><<<blocks, block, 0, s->stream>>>(
      partial, static_cast<int>(grid), static_cast<int>(cols), dgamma, dbeta);
  return launched();
}

//===----------------------------------------------------------------------===//
// Activations (lib/Runtime/cpu/Reference.cpp's formulas)
//===----------------------------------------------------------------------===//

template <typename T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };

// The producers' amax (kAmax; te_rt_act_fwd's amax, ...): each thread
// keeps max |v| over the fp32 values v it rounds and stores (one max per
// element, NaN skipped) in a register, rounds that maximum to E once, and
// blockAmax folds the block's into the zeroed cell at the end (every
// thread reaches it: grid-stride loops, no early return). Rounding to
// nearest even is monotone and odd (|r(v)| = r(|v|)), so r(max |v|) is
// exactly the max |r(v)| of the stored values. The amax variants run on a
// capped grid (producerGrid: fewer block reductions and atomics, each
// thread looping over several vectors), the vectorized ones with at most
// 32 registers a thread. Without an amax the kernels are instantiated with
// kAmax false, on their usual grid, and do nothing more than before.

/// E::store(v), with kAmax m = max(m, |v|) (NaN skipped).
template <typename E, bool kAmax>
__device__ inline typename E::T storeFold(float v, float &m) {
  if constexpr (kAmax)
    m = fmaxf(m, fabsf(v));
  return E::store(v);
}

/// The block's amax of the stored values: m rounded to E (see above).
template <typename E> __device__ inline void blockAmaxOf(float m, AmaxOut amax) {
  blockAmax(E::load(E::store(m)), amax);
}

/// Activation forward with 16-byte accesses: non-gated over n / N vectors,
/// gated over rows of yCols / N vectors (a at j, b at yCols + j). The body
/// of actFwdVecKernel and actFwdVecAmaxKernel.
template <typename E, bool kAmax>
__device__ __forceinline__ void
actFwdVec(ActParams p, bool gated, const typename E::T *x, typename E::T *y,
          int64_t rows, int64_t yCols, AmaxOut amax) {
  using T = typename E::T;
  constexpr int N = 16 / sizeof(T);
  using V = Vec<T, N>;
  const int64_t rowVecs = yCols / N, nv = rows * rowVecs;
  float m = 0.0f;
  for (int64_t v = globalId(); v < nv; v += globalStride()) {
    V out;
    if (!gated) {
      V in = reinterpret_cast<const V *>(x)[v];
#pragma unroll
      for (int e = 0; e < N; ++e)
        out.v[e] = storeFold<E, kAmax>(actF(p.act, E::load(in.v[e])), m);
    } else {
      int64_t i = v / rowVecs, jv = v - i * rowVecs;
      const V *row = reinterpret_cast<const V *>(x + i * 2 * yCols);
      V a = row[jv], b = row[rowVecs + jv];
#pragma unroll
      for (int e = 0; e < N; ++e) {
        out.v[e] = storeFold<E, kAmax>(
            gatedF(p, E::load(a.v[e]), E::load(b.v[e])), m);
      }
    }
    reinterpret_cast<V *>(y)[v] = out;
  }
  if constexpr (kAmax)
    blockAmaxOf<E>(m, amax);
}

template <typename E>
__global__ void actFwdVecKernel(ActParams p, bool gated, const typename E::T *x,
                                typename E::T *y, int64_t rows, int64_t yCols,
                                AmaxOut amax) {
  actFwdVec<E, false>(p, gated, x, y, rows, yCols, amax);
}

/// With the amax: at most 32 registers a thread, so that 8 blocks fit on a
/// multiprocessor (the amax's register would otherwise cost occupancy; on
/// the H200 a quarter of the bf16 kernels' speed with the capped grid).
template <typename E>
__global__ void __launch_bounds__(kThreads, 8)
    actFwdVecAmaxKernel(ActParams p, bool gated, const typename E::T *x,
                        typename E::T *y, int64_t rows, int64_t yCols,
                        AmaxOut amax) {
  actFwdVec<E, true>(p, gated, x, y, rows, yCols, amax);
}

/// Fused dbias + dact of a non-gated activation with 16-byte accesses: each
/// thread owns N adjacent columns of one chunk of rows, writes dx and sums
/// the fp32 dact down its columns in row order (the order colPartial uses,
/// so dbias is the same as columnSums of Dact). colFinish adds the chunks.
/// Threads past the last column do nothing (with kAmax they still join the
/// block's amax reduction).
template <typename E, bool kAmax>
__global__ void dbiasDactVecKernel(int act, const typename E::T *dy,
                                   const typename E::T *x, typename E::T *dx,
                                   int64_t rows, int64_t cols, int64_t chunk,
                                   float *partial, AmaxOut amax) {
  using T = typename E::T;
  constexpr int N = 16 / sizeof(T);
  using V = Vec<T, N>;
  const int64_t colVecs = cols / N;
  int64_t jv = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float m = 0.0f;
  if (jv < colVecs) {
    int64_t c = blockIdx.y;
    int64_t r0 = c * chunk, r1 = min(rows, r0 + chunk);
    float sum[N];
#pragma unroll
    for (int e = 0; e < N; ++e)
      sum[e] = 0.0f;
    const V *g = reinterpret_cast<const V *>(dy);
    const V *in = reinterpret_cast<const V *>(x);
    V *out = reinterpret_cast<V *>(dx);
    for (int64_t i = r0; i < r1; ++i) {
      V gv = g[i * colVecs + jv], xv = in[i * colVecs + jv], d;
#pragma unroll
      for (int e = 0; e < N; ++e) {
        float v = E::load(gv.v[e]) * actDf(act, E::load(xv.v[e]));
        sum[e] += v;
        d.v[e] = storeFold<E, kAmax>(v, m);
      }
      out[i * colVecs + jv] = d;
    }
#pragma unroll
    for (int e = 0; e < N; ++e)
      partial[c * cols + jv * N + e] = sum[e];
  }
  if constexpr (kAmax)
    blockAmaxOf<E>(m, amax);
}

/// Activation backward with 16-byte accesses (see actFwdVec).
template <typename E, bool kAmax>
__device__ __forceinline__ void
actBwdVec(ActParams p, bool gated, const typename E::T *dy,
          const typename E::T *x, typename E::T *dx, int64_t rows,
          int64_t yCols, AmaxOut amax) {
  using T = typename E::T;
  constexpr int N = 16 / sizeof(T);
  using V = Vec<T, N>;
  const int64_t rowVecs = yCols / N, nv = rows * rowVecs;
  float m = 0.0f;
  for (int64_t v = globalId(); v < nv; v += globalStride()) {
    V g = reinterpret_cast<const V *>(dy)[v];
    if (!gated) {
      V in = reinterpret_cast<const V *>(x)[v], out;
#pragma unroll
      for (int e = 0; e < N; ++e)
        out.v[e] = storeFold<E, kAmax>(
            E::load(g.v[e]) * actDf(p.act, E::load(in.v[e])), m);
      reinterpret_cast<V *>(dx)[v] = out;
      continue;
    }
    int64_t i = v / rowVecs, jv = v - i * rowVecs;
    const V *row = reinterpret_cast<const V *>(x + i * 2 * yCols);
    V *drow = reinterpret_cast<V *>(dx + i * 2 * yCols);
    V a = row[jv], b = row[rowVecs + jv], da, db;
#pragma unroll
    for (int e = 0; e < N; ++e) {
      float fa, fb;
      gatedDf(p, E::load(a.v[e]), E::load(b.v[e]), E::load(g.v[e]), fa, fb);
      da.v[e] = storeFold<E, kAmax>(fa, m);
      db.v[e] = storeFold<E, kAmax>(fb, m);
    }
    drow[jv] = da;
    drow[rowVecs + jv] = db;
  }
  if constexpr (kAmax)
    blockAmaxOf<E>(m, amax);
}

template <typename E>
__global__ void actBwdVecKernel(ActParams p, bool gated,
                                const typename E::T *dy, const typename E::T *x,
                                typename E::T *dx, int64_t rows, int64_t yCols,
                                AmaxOut amax) {
  actBwdVec<E, false>(p, gated, dy, x, dx, rows, yCols, amax);
}

/// With the amax (see actFwdVecAmaxKernel).
template <typename E>
__global__ void __launch_bounds__(kThreads, 8)
    actBwdVecAmaxKernel(ActParams p, bool gated, const typename E::T *dy,
                        const typename E::T *x, typename E::T *dx, int64_t rows,
                        int64_t yCols, AmaxOut amax) {
  actBwdVec<E, true>(p, gated, dy, x, dx, rows, yCols, amax);
}

/// out[k] = v rounded to E, with kAmax m = max(m, |v|) (the element-wise
/// kernels' store).
template <typename E, bool kAmax>
__device__ inline void put(typename E::T *out, int64_t k, float v, float &m) {
  out[k] = storeFold<E, kAmax>(v, m);
}

template <typename E, bool kAmax>
__global__ void actFwdKernel(ActParams p, bool gated, const typename E::T *x,
                             typename E::T *y, int64_t rows, int64_t cols,
                             AmaxOut amax) {
  int64_t yCols = gated ? cols / 2 : cols, n = rows * yCols;
  float m = 0.0f;
  for (int64_t k = globalId(); k < n; k += globalStride()) {
    if (!gated) {
      put<E, kAmax>(y, k, actF(p.act, E::load(x[k])), m);
      continue;
    }
    int64_t i = k / yCols, j = k - i * yCols;
    put<E, kAmax>(y, k,
                  gatedF(p, E::load(x[i * cols + j]),
                         E::load(x[i * cols + yCols + j])),
                  m);
  }
  if constexpr (kAmax)
    blockAmaxOf<E>(m, amax);
}

/// dy * act'(x) of a non-gated activation, in fp32.
template <typename E> struct Dact {
  int act;
  const typename E::T *dy, *x;
  int64_t cols;
  __device__ float at(int64_t k) const {
    return E::load(dy[k]) * actDf(act, E::load(x[k]));
  }
  __device__ float2 operator()(int64_t i, int64_t j) const {
    return make_float2(at(i * cols + j), 0.0f);
  }
};

template <typename E, bool kAmax>
__global__ void actBwdKernel(ActParams p, bool gated, const typename E::T *dy,
                             const typename E::T *x, typename E::T *dx,
                             int64_t rows, int64_t cols, AmaxOut amax) {
  int64_t yCols = gated ? cols / 2 : cols, n = rows * yCols;
  Dact<E> dact{p.act, dy, x, cols};
  float m = 0.0f;
  for (int64_t k = globalId(); k < n; k += globalStride()) {
    if (!gated) {
      put<E, kAmax>(dx, k, dact.at(k), m);
      continue;
    }
    int64_t i = k / yCols, j = k - i * yCols;
    int64_t ia = i * cols + j, ib = ia + yCols;
    float da, db;
    gatedDf(p, E::load(x[ia]), E::load(x[ib]), E::load(dy[k]), da, db);
    put<E, kAmax>(dx, ia, da, m);
    put<E, kAmax>(dx, ib, db, m);
  }
  if constexpr (kAmax)
    blockAmaxOf<E>(m, amax);
}

/// dy at (i, j): the terms of the bias gradient.
template <typename E> struct Load2D {
  const typename E::T *p;
  int64_t cols;
  __device__ float2 operator()(int64_t i, int64_t j) const {
    return make_float2(E::load(p[i * cols + j]), 0.0f);
  }
};

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// c = a + b; N elements per 16-byte access when vec (all aligned).
template <typename E>
__global__ void addKernel(const typename E::T *a, const typename E::T *b,
                          typename E::T *c, int64_t n, bool vec) {
  using T = typename E::T;
  constexpr int N = 16 / sizeof(T);
  int64_t done = 0;
  if (vec) {
    using V = Vec<T, N>;
    int64_t nv = n / N;
    for (int64_t i = globalId(); i < nv; i += globalStride()) {
      V va = reinterpret_cast<const V *>(a)[i];
      V vb = reinterpret_cast<const V *>(b)[i];
      V vc;
#pragma unroll
      for (int e = 0; e < N; ++e)
        vc.v[e] = E::store(E::load(va.v[e]) + E::load(vb.v[e]));
      reinterpret_cast<V *>(c)[i] = vc;
    }
    done = nv * N;
  }
  for (int64_t i = done + globalId(); i < n; i += globalStride())
    c[i] = E::store(E::load(a[i]) + E::load(b[i]));
}

/// out[r, c] = x[r, c] + bias[c] (te_rt_bias_add; out may be x). With vec
/// (x, bias and out 16-byte aligned and cols a multiple of N) each thread
/// adds N elements of one row per 16-byte access.
template <typename E>
__global__ void biasAddKernel(const typename E::T *x, const typename E::T *bias,
                              typename E::T *out, int64_t n, int64_t cols,
                              bool vec) {
  using T = typename E::T;
  constexpr int N = 16 / sizeof(T);
  if (vec) {
    using V = Vec<T, N>;
    int64_t nv = n / N, colVecs = cols / N;
    for (int64_t i = globalId(); i < nv; i += globalStride()) {
      V vx = reinterpret_cast<const V *>(x)[i];
      V vb = reinterpret_cast<const V *>(bias)[i % colVecs];
      V vo;
#pragma unroll
      for (int e = 0; e < N; ++e)
        vo.v[e] = E::store(E::load(vx.v[e]) + E::load(vb.v[e]));
      reinterpret_cast<V *>(out)[i] = vo;
    }
    return;
  }
  for (int64_t i = globalId(); i < n; i += globalStride())
    out[i] = E::store(E::load(x[i]) + E::load(bias[i % cols]));
}

/// dst = D(S(src)); widening to fp32 is exact, so one rounding.
template <typename S, typename D>
__global__ void castKernel(const typename S::T *src, typename D::T *dst,
                           int64_t n, bool vec) {
  constexpr int N = 4;
  int64_t done = 0;
  if (vec) {
    using VS = Vec<typename S::T, N>;
    using VD = Vec<typename D::T, N>;
    int64_t nv = n / N;
    for (int64_t i = globalId(); i < nv; i += globalStride()) {
      VS vs = reinterpret_cast<const VS *>(src)[i];
      VD vd;
#pragma unroll
      for (int e = 0; e < N; ++e)
        vd.v[e] = D::store(S::load(vs.v[e]));
      reinterpret_cast<VD *>(dst)[i] = vd;
    }
    done = nv * N;
  }
  for (int64_t i = done + globalId(); i < n; i += globalStride())
    dst[i] = D::store(S::load(src[i]));
}

/// dst[cols, rows] = src[rows, cols]^T through 32x32 shared-memory tiles.
template <typename T>
__global__ void transposeKernel(const T *src, T *dst, int64_t rows,
                                int64_t cols) {
  __shared__ T tile[32][33];
  int64_t tilesY = (rows + 31) / 32;
  for (int64_t by = blockIdx.y; by < tilesY; by += gridDim.y) {
    int64_t i0 = by * 32, j0 = static_cast<int64_t>(blockIdx.x) * 32;
    for (int r = threadIdx.y; r < 32; r += blockDim.y) {
      int64_t i = i0 + r, j = j0 + threadIdx.x;
      if (i < rows && j < cols)
        tile[r][threadIdx.x] = src[i * cols + j];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < 32; r += blockDim.y) {
      int64_t j = j0 + r, i = i0 + threadIdx.x;
      if (i < rows && j < cols)
        dst[j * rows + i] = tile[threadIdx.x][r];
    }
    __syncthreads();
  }
}

/// The ranges of one te_kernels_zero_ranges launch, passed by value in the
/// kernel's parameters (2 KiB of the 4 KiB they may hold).
struct ZeroRanges {
  unsigned char *ptr[TE_RT_ZERO_RANGES_PER_LAUNCH];
  int64_t bytes[TE_RT_ZERO_RANGES_PER_LAUNCH];
};

/// Zeroes range blockIdx.y of `r`, the blocks along x striding over it:
/// single bytes up to its first 16-byte boundary and after its last one,
/// 16-byte stores between.
__global__ void zeroRangesKernel(ZeroRanges r) {
  unsigned char *p = r.ptr[blockIdx.y];
  int64_t n = r.bytes[blockIdx.y];
  int64_t head = min(n, static_cast<int64_t>(
                            (16 - reinterpret_cast<uintptr_t>(p) % 16) % 16));
  int64_t nv = (n - head) / 16, tail = head + nv * 16;
  int64_t id = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  if (id < head) // head < 16 <= blockDim.x
    p[id] = 0;
  uint4 *v = reinterpret_cast<uint4 *>(p + head);
  for (int64_t i = id; i < nv; i += stride)
    v[i] = make_uint4(0, 0, 0, 0);
  if (id < n - tail) // n - tail < 16
    p[tail + id] = 0;
}

template <typename E>
__global__ void broadcastKernel(const typename E::T *bias, typename E::T *y,
                                int64_t rows, int64_t cols) {
  int64_t n = rows * cols;
  for (int64_t k = globalId(); k < n; k += globalStride())
    y[k] = E::store(bias ? 0.0f + E::load(bias[k % cols]) : 0.0f);
}

/// Normalization forward with the output `out` says (NormOut; fmt < 0: z,
/// else FP8 bytes of format fmt). z runs the fast kernel where it applies
/// and the row kernel elsewhere; FP8 output only the fast kernel: *ran is
/// false, and nothing is queued, where it does not apply.
const char *normForward(te_kernels_state *s, bool rms, int dtype,
                        const void *x, const void *gamma, const void *beta,
                        float eps, bool zc, int64_t rows, int64_t cols,
                        NormOut out, float *mu, float *rsigma, int fmt,
                        bool *ran) {
  *ran = false;
  if (rows == 0) { // no kernel: the amax of nothing is 0
    *ran = true;
    return out.amax ? zeroAmax(s->stream, out.amax.out) : nullptr;
  }
  return byDtype(dtype, [&](auto e) -> const char * {
    using E = decltype(e);
    using T = typename E::T;
    const T *X = static_cast<const T *>(x), *G = static_cast<const T *>(gamma),
            *B = static_cast<const T *>(beta);
    int wpr = normWarps(cols, perVec<E>(), kNormFwdVecs);
    const bool outAligned =
        fmt < 0 ? aligned16(out.z) : aligned(out.z, perVec<E>());
    if (wpr && aligned16(x) && aligned16(gamma) && (!beta || aligned16(beta)) &&
        outAligned) {
      *ran = true;
      return byWarps(wpr, [&](auto w) -> const char * {
        constexpr int W = decltype(w)::value, CTA = normCta(kNormFwdCta, W);
        constexpr int GROUPS = CTA / (32 * W);
        auto launch = [&](auto kernel) -> const char * {
          unsigned grid = 0;
          if (const char *err = persistentGrid(
                  kernel, CTA, 0, (rows + GROUPS - 1) / GROUPS, &grid))
            return err;
          kernel<<<grid, CTA, 0, s->stream>>>(rms, X, G, B, eps, zc, rows,
                                              static_cast<int>(cols), out, mu,
                                              rsigma);
          return launched();
        };
        const bool a = bool(out.amax);
        if (fmt == kE4M3)
          return a ? launch(normFwdFast<E, W, kE4M3, true>)
                   : launch(normFwdFast<E, W, kE4M3, false>);
        if (fmt == kE5M2)
          return a ? launch(normFwdFast<E, W, kE5M2, true>)
                   : launch(normFwdFast<E, W, kE5M2, false>);
        return a ? launch(normFwdFast<E, W, -1, true>)
                 : launch(normFwdFast<E, W, -1, false>);
      });
    }
    if (fmt >= 0)
      return nullptr; // *ran false: the caller casts z instead
    *ran = true;
    normFwdKernel<E>
        <<<static_cast<unsigned>(rows), rowThreads(cols), 0, s->stream>>>(
            rms, X, G, B, eps, zc, cols, static_cast<T *>(out.z), mu, rsigma,
            out.amax);
    return launched();
  });
}

/// dst [cols, rows] = src [rows, cols]^T over bytes (the columnwise copy of
/// FP8 data): 64x64 tiles through a swizzled shared-memory tile, 8-byte row
/// loads and 16-byte transposed stores where the tile is whole and aligned,
/// byte by byte elsewhere.
__global__ void __launch_bounds__(kThreads)
    transposeBytesKernel(const uint8_t *src, uint8_t *dst, int64_t rows,
                         int64_t cols, bool vecLoad, bool vecStore) {
  constexpr int kT = 64;
  static_assert(kThreads == kT * 4, "one transposed piece per thread");
  __shared__ __align__(16) uint8_t tile[kT * kT];
  const int64_t tilesC = (cols + kT - 1) / kT,
                tiles = (rows + kT - 1) / kT * tilesC;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t r0 = t / tilesC * kT, c0 = t % tilesC * kT;
    const bool full = r0 + kT <= rows && c0 + kT <= cols;
    if (full && vecLoad) {
      // 64 rows of 8 pieces of 8 bytes; a swizzled 8-byte pair stays whole.
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const int id = threadIdx.x + k * kThreads, r = id / 8, p = id % 8;
        *reinterpret_cast<uint2 *>(tile + swizzled<kT>(r, 8 * p)) =
            *reinterpret_cast<const uint2 *>(src + (r0 + r) * cols + c0 +
                                             8 * p);
      }
    } else {
      for (int id = threadIdx.x; id < kT * kT; id += kThreads) {
        const int r = id / kT, c = id % kT;
        if (r0 + r < rows && c0 + c < cols)
          tile[swizzled<kT>(r, c)] = src[(r0 + r) * cols + c0 + c];
      }
    }
    __syncthreads();
    const int c = threadIdx.x / 4, q = threadIdx.x % 4;
    uint8_t *out = dst + (c0 + c) * rows + r0 + 16 * q;
    if (full && vecStore) {
      *reinterpret_cast<uint4 *>(out) = transposedPiece<kT>(tile, q, c);
    } else if (c0 + c < cols) {
      for (int i = 0; i < 16 && r0 + 16 * q + i < rows; ++i)
        out[i] = tile[swizzled<kT>(16 * q + i, c)];
    }
    __syncthreads(); // the tile is refilled next
  }
}

const char *transposeBytes(te_kernels_state *s, const uint8_t *src,
                           uint8_t *dst, int64_t rows, int64_t cols) {
  const int64_t tiles = (rows + 63) / 64 * ((cols + 63) / 64);
  transposeBytesKernel<<<blocksFor(tiles, smCount()), kThreads, 0,
                         s->stream>>>(src, dst, rows, cols,
                                      aligned(src, 8) && cols % 8 == 0,
                                      aligned(dst, 16) && rows % 16 == 0);
  return launched();
}

} // namespace

//===----------------------------------------------------------------------===//
// State and shared helpers
//===----------------------------------------------------------------------===//

namespace te::kernels {

const char *scratch(te_kernels_state *s, int64_t elems, float **out) {
  if (s->callerWorkspace) {
    // The caller's memory: never grown here (no allocation on that path).
    if (elems > s->callerScratchElems) {
      s->scratchNeeded = std::max<int64_t>(
          s->scratchNeeded, int64_t(kGemmWorkspaceBytes) + elems * 4);
      return "the caller's workspace is too small for this call's scratch "
             "(te_rt_context_workspace_needed gives the bytes it needs)";
    }
    *out = s->callerScratch;
    return nullptr;
  }
  if (elems > s->scratchElems) {
    // Inside a capture, cudaMallocAsync would become the graph's own
    // allocation (absent outside replays): refuse the growth instead.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (const char *err = status(cudaStreamIsCapturing(s->stream, &capture)))
      return err;
    if (capture != cudaStreamCaptureStatusNone)
      return "the scratch buffer would grow while a CUDA graph is being "
             "captured (run the captured work once before capturing)";
    // A captured graph may still read the old buffer: retire it (freed
    // with the state) instead of freeing it.
    if (s->scratch) {
      try {
        s->retiredScratch.push_back(s->scratch);
      } catch (...) {
        return "out of host memory";
      }
    }
    int64_t grown = std::max(elems, s->scratchElems + s->scratchElems / 2);
    s->scratch = nullptr;
    s->scratchElems = 0;
    void *p = nullptr;
    if (const char *err = status(cudaMallocAsync(
            &p, static_cast<size_t>(grown) * sizeof(float), s->stream)))
      return err;
    s->scratch = static_cast<float *>(p);
    s->scratchElems = grown;
  }
  *out = s->scratch;
  return nullptr;
}

const char *biasGrad(te_kernels_state *s, int dtype, const void *dy,
                     void *dbias, int64_t rows, int64_t cols) {
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::T;
    return columnSums<E>(s, Load2D<E>{static_cast<const T *>(dy), cols}, rows,
                         cols, static_cast<T *>(dbias), nullptr);
  });
}

const char *broadcastRows(te_kernels_state *s, int dtype, const void *bias,
                          void *y, int64_t rows, int64_t cols) {
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::T;
    broadcastKernel<E><<<gridFor(rows * cols), kThreads, 0, s->stream>>>(
        static_cast<const T *>(bias), static_cast<T *>(y), rows, cols);
    return launched();
  });
}

/// Zeroes the amax ticket of a new state.
__global__ void zeroTicketKernel(unsigned *ticket) {
  if (threadIdx.x < 2)
    ticket[threadIdx.x] = 0;
}

} // namespace te::kernels

extern "C" {

const char *te_kernels_state_create(void *stream, te_kernels_state **state) {
  auto *s = new (std::nothrow) te_kernels_state;
  if (!s)
    return "out of host memory";
  s->stream = static_cast<cudaStream_t>(stream);
  // The amax ticket: allocated outside any capture's rules (relaxed mode,
  // as te_rt_alloc does), zeroed by a kernel on the stream, which a
  // capture in progress records (its replays zero it again, harmlessly);
  // outside a capture the stream is synchronized once, so that kernels of
  // a later stream (te_kernels_state_bind) find it zeroed.
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  cudaError_t err = cudaMalloc(&s->amaxTicket, 2 * sizeof(unsigned));
  cudaThreadExchangeStreamCaptureMode(&mode);
  if (err != cudaSuccess) {
    s->amaxTicket = nullptr;
    delete s;
    return status(err);
  }
  zeroTicketKernel<<<1, 32, 0, s->stream>>>(s->amaxTicket);
  const char *launchErr = launched();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (!launchErr && cudaStreamIsCapturing(s->stream, &capture) == cudaSuccess &&
      capture == cudaStreamCaptureStatusNone)
    launchErr = status(cudaStreamSynchronize(s->stream));
  if (launchErr) {
    delete s;
    return launchErr;
  }
  *state = s;
  return nullptr;
}

void te_kernels_state_bind(te_kernels_state *s, void *stream, void *workspace,
                           int64_t bytes) {
  s->stream = static_cast<cudaStream_t>(stream);
  if (workspace && bytes >= int64_t(kGemmWorkspaceBytes)) {
    s->callerWorkspace = true;
    s->workspace = workspace;
    s->workspaceBytes = kGemmWorkspaceBytes;
    s->callerScratch = reinterpret_cast<float *>(
        static_cast<char *>(workspace) + kGemmWorkspaceBytes);
    s->callerScratchElems = (bytes - int64_t(kGemmWorkspaceBytes)) / 4;
  } else {
    s->callerWorkspace = false;
    s->workspace = s->ownWorkspace;
    s->workspaceBytes = s->ownWorkspace ? kGemmWorkspaceBytes : 0;
    s->callerScratch = nullptr;
    s->callerScratchElems = 0;
  }
  s->scratchNeeded = 0;
}

int64_t te_kernels_state_scratch_needed(const te_kernels_state *s) {
  return s ? s->scratchNeeded : 0;
}

void te_kernels_state_destroy(te_kernels_state *s) {
  if (!s)
    return;
  cudaStreamSynchronize(s->stream);
  if (s->scratch)
    cudaFreeAsync(s->scratch, s->stream);
  cudaStreamSynchronize(s->stream);
  if (s->ownWorkspace)
    cudaFree(s->ownWorkspace);
  if (s->lt)
    cublasLtDestroy(s->lt);
  delete s;
}

const char *te_kernels_norm_fwd(te_kernels_state *s, int rms, int dtype,
                                const void *x, const void *gamma,
                                const void *beta, float eps, int zero_centered,
                                int64_t rows, int64_t cols, void *z, float *mu,
                                float *rsigma) {
  bool ran = false;
  return normForward(s, rms != 0, dtype, x, gamma, beta, eps,
                     zero_centered != 0, rows, cols,
                     NormOut{z, nullptr, nullptr, AmaxOut{}}, mu, rsigma, -1,
                     &ran);
}

const char *te_kernels_norm_quantize_fp8(
    te_kernels_state *s, int rms, int dtype, const void *x, const void *gamma,
    const void *beta, float eps, int zero_centered, int64_t rows, int64_t cols,
    float *mu, float *rsigma, int format, const float *scale, int pow2_scale,
    void *data, void *transpose, float *scale_inv, float *amax) {
  if (format != kE4M3 && format != kE5M2)
    return "FP8 quantize: unknown format";
  if (rows == 0) // nothing to normalize: the cast writes scale_inv (amax 0)
    return te_kernels_quantize_fp8(s, dtype, x, 0, cols, format, scale,
                                   pow2_scale, data, transpose, scale_inv,
                                   amax, nullptr);
  const int64_t n = rows * cols;
  const int64_t zFloats = (n * (dtype == 0 ? 4 : 2) + 15) / 16 * 4;
  bool ran = false;
  if (!scale) {
    // Current scaling: z in the scratch, its amax from the norm kernel,
    // then the cast with that amax (no amax pass over z).
    float *buf = nullptr;
    if (const char *err = scratch(s, zFloats + 4, &buf))
      return err;
    float *cell = amax ? amax : buf + zFloats; // written by the reduction
    if (const char *err = normForward(
            s, rms != 0, dtype, x, gamma, beta, eps, zero_centered != 0, rows,
            cols, NormOut{buf, nullptr, nullptr, amaxOut(s, cell)}, mu, rsigma,
            -1, &ran))
      return err;
    return te_kernels_quantize_fp8(s, dtype, buf, rows, cols, format, nullptr,
                                   pow2_scale, data, transpose, scale_inv,
                                   nullptr, cell);
  }
  // Delayed scaling: the norm kernel writes the FP8 rows (into the scratch
  // when only the transposed copy is wanted), the transpose is of bytes.
  float *buf = nullptr;
  if (!data)
    if (const char *err = scratch(s, (n + 15) / 16 * 4, &buf))
      return err;
  uint8_t *q = data ? static_cast<uint8_t *>(data)
                    : reinterpret_cast<uint8_t *>(buf);
  if (const char *err = normForward(s, rms != 0, dtype, x, gamma, beta, eps,
                                    zero_centered != 0, rows, cols,
                                    NormOut{q, scale, scale_inv, amaxOut(s, amax)},
                                    mu, rsigma, format, &ran))
    return err;
  if (!ran) {
    // No FP8-writing kernel for the shape or alignment: z in the scratch,
    // then the cast (the same bytes).
    if (const char *err = scratch(s, zFloats, &buf))
      return err;
    if (const char *err = normForward(s, rms != 0, dtype, x, gamma, beta, eps,
                                      zero_centered != 0, rows, cols,
                                      NormOut{buf, nullptr, nullptr, AmaxOut{}},
                                      mu, rsigma, -1, &ran))
      return err;
    return te_kernels_quantize_fp8(s, dtype, buf, rows, cols, format, scale, 0,
                                   data, transpose, scale_inv, amax, nullptr);
  }
  return transpose ? transposeBytes(s, q, static_cast<uint8_t *>(transpose),
                                    rows, cols)
                   : nullptr;
}

const char *te_kernels_norm_bwd(te_kernels_state *s, int rms, int dtype,
                                const void *dz, const void *x, const float *mu,
                                const float *rsigma, const void *gamma,
                                int zero_centered, int64_t rows, int64_t cols,
                                void *dx, void *dgamma, void *dbeta) {
  return byDtype(dtype, [&](auto e) -> const char * {
    using E = decltype(e);
    using T = typename E::T;
    const T *DZ = static_cast<const T *>(dz), *X = static_cast<const T *>(x);
    // 16 columns per thread; 32 for 16-bit rows too wide for that.
    constexpr int V = bwdVecs<E>();
    int wpr = normWarps(cols, perVec<E>(), V), wide = 0;
    if (!wpr && V < 4)
      wide = normWarps(cols, perVec<E>(), 4) == kNormMaxWarps;
    if ((wpr || wide) && rows > 0 && aligned16(dz) && aligned16(x) &&
        aligned16(gamma) && aligned16(dx)) {
      const T *Gm = static_cast<const T *>(gamma);
      T *DX = static_cast<T *>(dx), *DG = static_cast<T *>(dgamma),
        *DB = static_cast<T *>(dbeta);
      bool zc = zero_centered != 0;
      if (wide)
        return normBwdLaunch<E, kNormMaxWarps, 4>(s, rms != 0, DZ, X, mu,
                                                  rsigma, Gm, zc, rows, cols,
                                                  DX, DG, DB);
      return byWarps(wpr, [&](auto w) -> const char * {
        return normBwdLaunch<E, decltype(w)::value, V>(
            s, rms != 0, DZ, X, mu, rsigma, Gm, zc, rows, cols, DX, DG, DB);
      });
    }
    if (rows > 0) {
      normBwdKernel<E>
          <<<static_cast<unsigned>(rows), rowThreads(cols), 0, s->stream>>>(
              rms != 0, DZ, X, mu, rsigma, static_cast<const T *>(gamma),
              zero_centered != 0, cols, static_cast<T *>(dx));
      if (const char *err = launched())
        return err;
    }
    return columnSums<E>(s, NormGradTerms<E>{rms != 0, DZ, X, mu, rsigma, cols},
                         rows, cols, static_cast<T *>(dgamma),
                         static_cast<T *>(dbeta));
  });
}

const char *te_kernels_act_fwd(te_kernels_state *s, int act, int dtype,
                               const void *x, void *y, int64_t rows,
                               int64_t cols, float limit, float alpha,
                               float offset, float *amax) {
  bool gated = isGated(act);
  int64_t n = rows * (gated ? cols / 2 : cols);
  if (n == 0) // the amax of an empty output (no kernel writes it)
    return amax ? zeroAmax(s->stream, amax) : nullptr;
  const AmaxOut out = amaxOut(s, amax);
  return byDtype(dtype, [&](auto e) {
    return withAmax(amax, [&](auto amaxOn) {
      using E = decltype(e);
      using T = typename E::T;
      constexpr bool A = decltype(amaxOn)::value;
      constexpr int N = 16 / sizeof(T);
      int64_t yCols = gated ? cols / 2 : cols;
      if (aligned16(x) && aligned16(y) && yCols % N == 0) {
        auto kernel = A ? actFwdVecAmaxKernel<E> : actFwdVecKernel<E>;
        kernel<<<producerGrid<A>(n / N), kThreads, 0, s->stream>>>(
            ActParams{act, limit, alpha, offset}, gated,
            static_cast<const T *>(x), static_cast<T *>(y), rows, yCols, out);
        return launched();
      }
      actFwdKernel<E, A><<<producerGrid<A>(n), kThreads, 0, s->stream>>>(
          ActParams{act, limit, alpha, offset}, gated,
          static_cast<const T *>(x), static_cast<T *>(y), rows, cols, out);
      return launched();
    });
  });
}

const char *te_kernels_act_bwd(te_kernels_state *s, int act, int dtype,
                               const void *dy, const void *x, void *dx,
                               int64_t rows, int64_t cols, float limit,
                               float alpha, float offset, float *amax) {
  bool gated = isGated(act);
  int64_t n = rows * (gated ? cols / 2 : cols);
  if (n == 0) // the amax of an empty output (no kernel writes it)
    return amax ? zeroAmax(s->stream, amax) : nullptr;
  const AmaxOut out = amaxOut(s, amax);
  return byDtype(dtype, [&](auto e) {
    return withAmax(amax, [&](auto amaxOn) {
      using E = decltype(e);
      using T = typename E::T;
      constexpr bool A = decltype(amaxOn)::value;
      constexpr int N = 16 / sizeof(T);
      int64_t yCols = gated ? cols / 2 : cols;
      if (aligned16(dy) && aligned16(x) && aligned16(dx) && yCols % N == 0) {
        auto kernel = A ? actBwdVecAmaxKernel<E> : actBwdVecKernel<E>;
        kernel<<<producerGrid<A>(n / N), kThreads, 0, s->stream>>>(
            ActParams{act, limit, alpha, offset}, gated,
            static_cast<const T *>(dy), static_cast<const T *>(x),
            static_cast<T *>(dx), rows, yCols, out);
        return launched();
      }
      actBwdKernel<E, A><<<producerGrid<A>(n), kThreads, 0, s->stream>>>(
          ActParams{act, limit, alpha, offset}, gated,
          static_cast<const T *>(dy), static_cast<const T *>(x),
          static_cast<T *>(dx), rows, cols, out);
      return launched();
    });
  });
}

const char *te_kernels_dbias_dact(te_kernels_state *s, int act, int dtype,
                                  const void *dy, const void *x, void *dx,
                                  void *dbias, int64_t rows, int64_t cols,
                                  float limit, float alpha, float offset,
                                  float *amax) {
  if (rows > 0 && cols > 0 && aligned16(dy) && aligned16(x) && aligned16(dx) &&
      cols % (dtype == 0 ? 4 : 8) == 0)
    return byDtype(dtype, [&](auto e) -> const char * {
      using E = decltype(e);
      using T = typename E::T;
      constexpr int N = 16 / sizeof(T);
      int64_t chunk = chunkRows(rows), chunks = (rows + chunk - 1) / chunk;
      float *partial = nullptr;
      if (const char *err = scratch(s, chunks * cols, &partial))
        return err;
      dim3 grid(static_cast<unsigned>((cols / N + kThreads - 1) / kThreads),
                static_cast<unsigned>(chunks));
      if (const char *err = withAmax(amax, [&](auto amaxOn) {
            constexpr bool A = decltype(amaxOn)::value;
            dbiasDactVecKernel<E, A><<<grid, kThreads, 0, s->stream>>>(
                act, static_cast<const T *>(dy), static_cast<const T *>(x),
                static_cast<T *>(dx), rows, cols, chunk, partial,
                amaxOut(s, amax));
            return launched();
          }))
        return err;
      colFinish<E><<<gridFor(cols), kThreads, 0, s->stream>>>(
          partial, chunks, cols, static_cast<T *>(dbias));
      return launched();
    });
  // Unaligned or ragged: the element-wise dact (which reduces the amax),
  // then the column sums.
  if (const char *err = te_kernels_act_bwd(s, act, dtype, dy, x, dx, rows, cols,
                                           limit, alpha, offset, amax))
    return err;
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::T;
    // The column sums recompute the fp32 dact (not the rounded dx).
    return columnSums<E>(s,
                         Dact<E>{act, static_cast<const T *>(dy),
                                 static_cast<const T *>(x), cols},
                         rows, cols, static_cast<T *>(dbias), nullptr);
  });
}

const char *te_kernels_bias_grad(te_kernels_state *s, int dtype, const void *dy,
                                 void *dbias, int64_t rows, int64_t cols) {
  return biasGrad(s, dtype, dy, dbias, rows, cols);
}

const char *te_kernels_add(te_kernels_state *s, int dtype, const void *a,
                           const void *b, void *c, int64_t n) {
  if (n == 0)
    return nullptr;
  bool vec = aligned16(a) && aligned16(b) && aligned16(c);
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::T;
    addKernel<E><<<gridFor(vec ? n / (16 / sizeof(T)) + 1 : n), kThreads, 0,
                   s->stream>>>(static_cast<const T *>(a),
                                static_cast<const T *>(b), static_cast<T *>(c),
                                n, vec);
    return launched();
  });
}

const char *te_kernels_bias_add(te_kernels_state *s, int dtype, const void *x,
                                const void *bias, void *out, int64_t rows,
                                int64_t cols) {
  if (rows == 0 || cols == 0)
    return nullptr;
  int64_t n = rows * cols;
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::T;
    constexpr int N = 16 / sizeof(T);
    bool vec = cols % N == 0 && aligned16(x) && aligned16(bias) &&
               aligned16(out);
    biasAddKernel<E><<<gridFor(vec ? n / N : n), kThreads, 0, s->stream>>>(
        static_cast<const T *>(x), static_cast<const T *>(bias),
        static_cast<T *>(out), n, cols, vec);
    return launched();
  });
}

const char *te_kernels_cast(te_kernels_state *s, int src_dtype, int dst_dtype,
                            const void *src, void *dst, int64_t n) {
  if (n == 0 || src == dst)
    return nullptr;
  if (src_dtype == dst_dtype) // bits unchanged, NaN payloads included
    return status(cudaMemcpyAsync(
        dst, src, static_cast<size_t>(n) * (src_dtype == 0 ? 4 : 2),
        cudaMemcpyDeviceToDevice, s->stream));
  // 4 elements per access: 16 bytes of f32, 8 of bf16/f16.
  bool vec =
      reinterpret_cast<uintptr_t>(src) % (src_dtype == 0 ? 16 : 8) == 0 &&
      reinterpret_cast<uintptr_t>(dst) % (dst_dtype == 0 ? 16 : 8) == 0;
  return byDtype(src_dtype, [&](auto se) {
    return byDtype(dst_dtype, [&](auto de) {
      using S = decltype(se);
      using D = decltype(de);
      castKernel<S, D>
          <<<gridFor(vec ? n / 4 + 1 : n), kThreads, 0, s->stream>>>(
              static_cast<const typename S::T *>(src),
              static_cast<typename D::T *>(dst), n, vec);
      return launched();
    });
  });
}

const char *te_kernels_transpose(te_kernels_state *s, int dtype,
                                 const void *src, void *dst, int64_t rows,
                                 int64_t cols) {
  if (rows == 0 || cols == 0)
    return nullptr;
  dim3 block(32, 8);
  dim3 grid(static_cast<unsigned>((cols + 31) / 32),
            static_cast<unsigned>(std::min<int64_t>((rows + 31) / 32, 65535)));
  if (dtype == 0)
    transposeKernel<<<grid, block, 0, s->stream>>>(
        static_cast<const uint32_t *>(src), static_cast<uint32_t *>(dst), rows,
        cols);
  else
    transposeKernel<<<grid, block, 0, s->stream>>>(
        static_cast<const uint16_t *>(src), static_cast<uint16_t *>(dst), rows,
        cols);
  return launched();
}

const char *te_kernels_zero_ranges(te_kernels_state *s, void *const *ptrs,
                                   const int64_t *bytes, int64_t count) {
  // The non-empty ranges, TE_RT_ZERO_RANGES_PER_LAUNCH a launch.
  ZeroRanges r;
  int k = 0;
  int64_t most = 0;
  auto launch = [&]() -> const char * {
    dim3 grid(gridFor(most / 16), static_cast<unsigned>(k));
    zeroRangesKernel<<<grid, kThreads, 0, s->stream>>>(r);
    k = 0;
    most = 0;
    return launched();
  };
  for (int64_t i = 0; i < count; ++i) {
    if (bytes[i] == 0)
      continue;
    r.ptr[k] = static_cast<unsigned char *>(ptrs[i]);
    r.bytes[k] = bytes[i];
    most = std::max(most, bytes[i]);
    if (++k == TE_RT_ZERO_RANGES_PER_LAUNCH)
      if (const char *err = launch())
        return err;
  }
  return k ? launch() : nullptr;
}

} // extern "C"
