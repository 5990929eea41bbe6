//===- norm_bwd.cu - LayerNorm/RMSNorm backward ---------------------------===//
//
// te_kernels_norm_bwd: dx by the one-CTA-per-row kernel or the row-group
// fast path (norm.cuh); dgamma and dbeta deterministic, as column sums of
// fixed row chunks (launch.cuh) or, on the fast path, one fp32 partial row
// per CTA summed in a fixed order (normColFinish; a grid of one CTA writes
// them itself).
//
//===----------------------------------------------------------------------===//

#include "norm.cuh"

#include <algorithm>

using namespace te::kernels;

namespace {

// Backward: one CTA of 512 threads per SM (up to 128 registers a thread:
// the column sums, this row and the next); measured on the H200 against
// 2 CTAs of 256 (same speed within 2%, twice the partial rows) and the
// 32-column, no-prefetch layout (10-50% slower).
constexpr int kNormBwdCta = 512;

/// Backward: 16-byte vectors per thread (16 columns; 32 for the widest
/// 16-bit rows, W = 16).
template <typename E> constexpr int bwdVecs() { return 16 / perVec<E>(); }

/// dx of one row per CTA.
template <typename E>
__global__ void normBwdKernel(bool rms, const typename E::T *dz,
                              const typename E::T *x, const float *mu,
                              const float *rsigma, const typename E::T *gamma,
                              bool zc, int64_t cols, typename E::T *dx) {
  gridWait();
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
                float *__restrict__ partial, typename E::T *dgOut,
                typename E::T *dbOut) {
  gridWait();
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
  // One plane (dgamma or dbeta) of the CTA's partial row; with dgOut (a
  // grid of one CTA) the sums themselves, rounded to E: the bits
  // normColFinish would write (0.0f plus the one partial, which is never
  // -0.0f, plus zero slices).
  typename E::T *direct = nullptr;
  auto put = [&](int64_t i, float4 v) {
    if (direct) {
      direct[4 * i] = E::store(v.x);
      direct[4 * i + 1] = E::store(v.y);
      direct[4 * i + 2] = E::store(v.z);
      direct[4 * i + 3] = E::store(v.w);
    } else {
      out[i] = v;
    }
  };
  auto emit = [&](const float (&a)[V][P], int plane) {
    direct = plane ? dbOut : dgOut;
    const int64_t dst = (static_cast<int64_t>(plane) * gridDim.x +
                         blockIdx.x) * c4;
    const int64_t base = direct ? 0 : dst;
    if constexpr (GROUPS == 1) {
#pragma unroll
      for (int v = 0; v < V; ++v) {
        if (!live[v])
          continue;
#pragma unroll
        for (int h = 0; h < P / 4; ++h)
          put(base + (v * G + t) * (P / 4) + h,
              make_float4(a[v][4 * h], a[v][4 * h + 1], a[v][4 * h + 2],
                          a[v][4 * h + 3]));
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
        put(base + c, s);
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
  gridWait();
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
  // One CTA: it writes dgamma and dbeta (no partial rows, no finish).
  const bool direct = grid == 1;
  float *partial = nullptr;
  if (!direct)
    if (const char *err = scratch(s, int64_t(planes) * grid * cols, &partial))
      return err;
  launchKernel(s, normBwdFast<E, W, V>, grid, CTA, smem, rms, dz, x, mu, rsigma,
               gamma, zc, rows, static_cast<int>(cols), dbeta != nullptr, dx,
               partial, direct ? dgamma : nullptr, direct ? dbeta : nullptr);
  if (const char *err = launched())
    return err;
  if (direct)
    return nullptr;
  dim3 block(32, kFinishSlices);
  dim3 blocks(static_cast<unsigned>((cols + 31) / 32),
              static_cast<unsigned>(planes));
  launchKernel(s, normColFinish<E>, blocks, block, 0, partial,
               static_cast<int>(grid), static_cast<int>(cols), dgamma, dbeta);
  return launched();
}

} // namespace

extern "C" {

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
      launchKernel(s, normBwdKernel<E>, static_cast<unsigned>(rows),
                   rowThreads(cols), 0, rms != 0, DZ, X, mu, rsigma,
                   static_cast<const T *>(gamma), zero_centered != 0, cols,
                   static_cast<T *>(dx));
      if (const char *err = launched())
        return err;
    }
    return columnSums<E>(s, NormGradTerms<E>{rms != 0, DZ, X, mu, rsigma, cols},
                         rows, cols, static_cast<T *>(dgamma),
                         static_cast<T *>(dbeta));
  });
}

} // extern "C"
