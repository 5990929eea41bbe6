//===- norm_fwd.cu - LayerNorm/RMSNorm forward ----------------------------===//
//
// te_kernels_norm_fwd and te_kernels_norm_quantize_fp8: the one-CTA-per-row
// kernel and the row-group fast path (norm.cuh), which can also write z's
// FP8 bytes (delayed scaling's fused cast) or reduce z's amax (current
// scaling, for the cast that follows), then the byte transpose of the FP8
// rows (elementwise.cu's transposeBytes). Current scaling of a z small
// enough for one CTA's shared memory (kOwnScaleBytes: the seeds' 16 tokens)
// runs in one kernel: the CTA normalizes every row into shared memory,
// reduces the amax, and casts from there (one launch instead of two).
//
//===----------------------------------------------------------------------===//

#include "norm.cuh"
#include "quantize.cuh"

#include <algorithm>

using namespace te::kernels;

namespace {

constexpr int kNormFwdVecs = 4;  // forward: 16-byte vectors per thread
constexpr int kNormFwdCta = 256; // forward: threads per CTA (at least)

/// One CTA per row. amax (may be null): max |z| as stored, into a zeroed
/// cell (the maximum rounded once: rounding is monotone).
template <typename E>
__global__ void
normFwdKernel(bool rms, const typename E::T *x, const typename E::T *gamma,
              const typename E::T *beta, float eps, bool zc, int64_t cols,
              typename E::T *z, float *mu, float *rsigma, AmaxOut amax) {
  gridWait();
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

/// What normFwdFast writes besides the statistics: z (kFmt < 0), or z
/// rounded to E, scaled by *scale and cast to FP8 (kFmt: kE4M3 / kE5M2)
/// into the bytes q [rows, cols] (delayed scaling's fused cast; block 0
/// writes *scaleInv = 1 / *scale); with kAmax also max |z| as stored into
/// *amax (a zeroed cell). With transpose (FP8 only) the same bytes also go
/// to transpose [cols, rows], byte by byte: for few rows (kTransposeRows),
/// where this costs less than the byte-transpose kernel's launch.
struct NormOut {
  void *z;
  const float *scale;
  float *scaleInv;
  AmaxOut amax;
  uint8_t *transpose = nullptr;
  // Current scaling in one CTA (normFwdFast's kOwn): the format's largest
  // value and the power-of-two rounding of the scale.
  float fp8Max = 0.0f;
  bool pow2 = false;
};

/// The most bytes of z that one CTA stages in shared memory for current
/// scaling in one kernel (normFwdFast's kOwn): 16 x 1024 bf16 values, and
/// at most kOwnScaleRows rows (the CTA's row groups take them in turn).
/// Above that the norm kernel reduces the amax across its grid and the cast
/// is a second kernel.
constexpr int64_t kOwnScaleBytes = 32 * 1024;
constexpr int64_t kOwnScaleRows = 64;

/// The most rows whose FP8 norm output the norm kernel transposes itself
/// (each thread's bytes go to rows of the transpose `rows` bytes apart;
/// above, transposeBytes' tiles write whole lines).
constexpr int64_t kTransposeRows = 64;

template <typename E, int W, int kFmt, bool kAmax, bool kOwn = false>
__global__ void __launch_bounds__(normCta(kNormFwdCta, W),
                                  768 / normCta(kNormFwdCta, W))
    normFwdFast(bool rms, const typename E::T *__restrict__ x,
                const typename E::T *__restrict__ gamma,
                const typename E::T *__restrict__ beta, float eps, bool zc,
                int64_t rows, int cols, NormOut out, float *__restrict__ mu,
                float *__restrict__ rsigma) {
  gridWait();
  constexpr int P = perVec<E>(), V = kNormFwdVecs, G = 32 * W;
  constexpr int GROUPS = normCta(kNormFwdCta, W) / G;
  __shared__ float red[2 * 32];
  // FP8 with the transpose: the CTA's GROUPS rows of bytes, staged so that
  // each column's GROUPS bytes go out in one store (a row is at most
  // G * V * P bytes).
  constexpr int kStage = kFmt >= 0 && !kOwn ? GROUPS * G * V * P : 16;
  __shared__ __align__(16) uint8_t staged[kStage];
  // kOwn (a grid of one CTA): every row of z as stored, [rows, cols].
  extern __shared__ __align__(16) uint4 zStage[];
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
  // The first row's gamma and beta on their way to L1 while x loads (they
  // are read after the row's statistics).
#pragma unroll
  for (int v = 0; v < V; ++v)
    if (live[v]) {
      asm volatile("prefetch.global.L1 [%0];" ::"l"(gr + v * G));
      if (addBeta)
        asm volatile("prefetch.global.L1 [%0];" ::"l"(br + v * G));
    }
  int phase = 0;
  float m = 0.0f, qs = 1.0f;
  if constexpr (kFmt >= 0 && !kOwn) {
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
    if (ok) {
      using T = typename E::T;
      uint4 *zr =
          reinterpret_cast<uint4 *>(static_cast<T *>(out.z) + row * cols) + t;
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
        if constexpr (kOwn) {
          zStage[row * nvec + v * G + t] = pack<E>(o);
        } else if constexpr (kFmt < 0) {
          zr[v * G] = pack<E>(o);
        } else {
          // P bytes of FP8: the values as z would store them, times the scale.
          uint32_t w[P / 4];
          roundAll<E>(o);
#pragma unroll
          for (int k = 0; k < P / 4; ++k)
            w[k] = toFP8x2<kFmt>(o[4 * k] * qs, o[4 * k + 1] * qs) |
                   (toFP8x2<kFmt>(o[4 * k + 2] * qs, o[4 * k + 3] * qs) << 16);
          const int64_t c0 = static_cast<int64_t>(v * G + t) * P;
          uint8_t *qr = static_cast<uint8_t *>(out.z) + row * cols + c0;
          if constexpr (P == 8)
            *reinterpret_cast<uint2 *>(qr) = make_uint2(w[0], w[1]);
          else
            *reinterpret_cast<uint32_t *>(qr) = w[0];
          if (out.transpose) {
            uint8_t *sr = staged + group * cols + c0;
            if constexpr (P == 8)
              *reinterpret_cast<uint2 *>(sr) = make_uint2(w[0], w[1]);
            else
              *reinterpret_cast<uint32_t *>(sr) = w[0];
          }
        }
      }
      if (t == 0) {
        if (!rms)
          mu[row] = mean;
        rsigma[row] = rs;
      }
    }
    if constexpr (kFmt >= 0 && !kOwn) {
      // The transpose's bytes of rows [first, first + GROUPS): column c's
      // are contiguous there, one store of GROUPS bytes when the rows and
      // the buffer allow it (rows % GROUPS == 0: the usual 16 or 32 tokens).
      if (out.transpose) {
        __syncthreads(); // every group's row is staged
        const int64_t first = row - group;
        const int n =
            static_cast<int>(rows - first < GROUPS ? rows - first : GROUPS);
        const bool whole =
            n == GROUPS && rows % GROUPS == 0 &&
            reinterpret_cast<uintptr_t>(out.transpose) % GROUPS == 0;
        for (int c = threadIdx.x; c < cols; c += blockDim.x) {
          uint8_t *dst = out.transpose + static_cast<int64_t>(c) * rows + first;
          uint64_t bytes = 0;
#pragma unroll
          for (int g = 0; g < GROUPS; ++g)
            bytes |= static_cast<uint64_t>(staged[g * cols + c]) << (8 * g);
          if (whole && GROUPS == 8)
            *reinterpret_cast<uint64_t *>(dst) = bytes;
          else if (whole && GROUPS == 4)
            *reinterpret_cast<uint32_t *>(dst) = static_cast<uint32_t>(bytes);
          else if (whole && GROUPS == 2)
            *reinterpret_cast<uint16_t *>(dst) = static_cast<uint16_t>(bytes);
          else
            for (int g = 0; g < n; ++g)
              dst[g] = static_cast<uint8_t>(bytes >> (8 * g));
        }
        __syncthreads(); // the stage is refilled by the next rows
      }
    }
  }
  if constexpr (kOwn)
    castOwnScale<E, kFmt>(reinterpret_cast<const typename E::T *>(zStage),
                          E::load(E::store(m)), rows, cols, out.fp8Max,
                          out.pow2, static_cast<uint8_t *>(out.z),
                          out.transpose, out.scaleInv, out.amax.out);
  else if constexpr (kAmax)
    blockAmax(E::load(E::store(m)), out.amax);
}

/// Normalization forward with the output `out` says (NormOut; fmt < 0: z,
/// else FP8 bytes of format fmt: delayed scaling with out.scale, current
/// scaling in one CTA without). z runs the fast kernel where it applies
/// and the row kernel elsewhere; FP8 output only the fast kernel (current
/// scaling: only where one CTA stages z, kOwnScaleBytes): *ran is false,
/// and nothing is queued, where it does not apply.
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
    // Current scaling in one CTA: z staged in its shared memory.
    const bool own = fmt >= 0 && !out.scale;
    const int64_t stageBytes = rows * cols * static_cast<int64_t>(sizeof(T));
    if (own && (rows > kOwnScaleRows || stageBytes > kOwnScaleBytes))
      return nullptr; // *ran false
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
          launchKernel(s, kernel, grid, CTA, 0, rms, X, G, B, eps, zc, rows,
                       static_cast<int>(cols), out, mu, rsigma);
          return launched();
        };
        if (own) {
          const size_t smem = static_cast<size_t>((stageBytes + 15) / 16 * 16);
          auto one = [&](auto kernel) -> const char * {
            launchKernel(s, kernel, 1, CTA, smem, rms, X, G, B, eps, zc, rows,
                         static_cast<int>(cols), out, mu, rsigma);
            return launched();
          };
          return fmt == kE4M3 ? one(normFwdFast<E, W, kE4M3, true, true>)
                              : one(normFwdFast<E, W, kE5M2, true, true>);
        }
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
    launchKernel(s, normFwdKernel<E>, static_cast<unsigned>(rows),
                 rowThreads(cols), 0, rms, X, G, B, eps, zc, cols,
                 static_cast<T *>(out.z), mu, rsigma, out.amax);
    return launched();
  });
}

} // namespace

extern "C" {

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
    // Current scaling of few rows: one kernel (normFwdFast's kOwn).
    NormOut own{data, nullptr, scale_inv, amaxOut(s, amax),
                static_cast<uint8_t *>(transpose)};
    own.fp8Max = fp8MaxOf(format);
    own.pow2 = pow2_scale != 0;
    if (const char *err = normForward(s, rms != 0, dtype, x, gamma, beta, eps,
                                      zero_centered != 0, rows, cols, own, mu,
                                      rsigma, format, &ran))
      return err;
    if (ran)
      return nullptr;
    // Else z in the scratch, its amax from the norm kernel, then the cast
    // with that amax (no amax pass over z).
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
  // Few rows: the norm kernel writes the transpose too (no second launch).
  uint8_t *direct = rows <= kTransposeRows
                        ? static_cast<uint8_t *>(transpose)
                        : nullptr;
  if (const char *err = normForward(
          s, rms != 0, dtype, x, gamma, beta, eps, zero_centered != 0, rows,
          cols, NormOut{q, scale, scale_inv, amaxOut(s, amax), direct}, mu,
          rsigma, format, &ran))
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
  return transpose && !direct
             ? transposeBytes(s, q, static_cast<uint8_t *>(transpose), rows,
                              cols)
             : nullptr;
}

} // extern "C"
