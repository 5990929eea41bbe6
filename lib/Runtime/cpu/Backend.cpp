//===- Backend.cpp - te-mlir runtime: the CPU reference backend -*- C++ -*-===//
//
// The te_rt_* compute primitives on a cpu context, after Api.cpp's checks:
// bf16/f16 operands converted to fp32 into the context's staging buffers,
// the fp32 reference kernels (Reference.h, Gemm.h, Quantize.h), one
// round-to-nearest-even back.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Context.h"
#include "cpu/Convert.h"
#include "cpu/Gemm.h"
#include "cpu/Parallel.h"
#include "cpu/Quantize.h"
#include "cpu/Reference.h"
#include "te_kernels/formats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

using te::cpu::DType;
using te::rt::Checker;
using te::rt::guarded;

namespace {

DType dtypeOf(int32_t dtype) { return static_cast<DType>(dtype); }

/// The fp32 view of an input buffer: the buffer itself when it is f32, else
/// its conversion into the context's staging slot `slot`.
const float *input(te_rt_context *ctx, int slot, DType t, const void *p,
                   int64_t n) {
  if (t == DType::F32)
    return static_cast<const float *>(p);
  float *s = ctx->scratch(slot, n);
  te::cpu::toFloat(t, p, n, s);
  return s;
}

/// Where an output is computed in fp32: the buffer itself when it is f32,
/// else staging slot `slot`; commit() then rounds it into the buffer.
float *output(te_rt_context *ctx, int slot, DType t, void *p, int64_t n) {
  return t == DType::F32 ? static_cast<float *>(p) : ctx->scratch(slot, n);
}

void commit(DType t, const float *v, void *p, int64_t n) {
  te::cpu::fromFloat(t, v, n, p); // a no-op when v is p (f32)
}

/// Element access by dtype, for the loops that read buffers in place.
struct F32Elem {
  using T = float;
  static float load(float v) { return v; }
  static float store(float v) { return v; }
};

struct BF16Elem {
  using T = uint16_t;
  static float load(uint16_t v) { return te::cpu::bf16ToFloat(v); }
  static uint16_t store(float v) { return te::cpu::floatToBF16(v); }
};

struct F16Elem {
  using T = uint16_t;
  static float load(uint16_t v) { return te::cpu::f16ToFloat(v); }
  static uint16_t store(float v) { return te::cpu::floatToF16(v); }
};

/// Calls fn(Elem{}) with the element type of `t`; the loop inside fn is
/// compiled once per dtype.
template <typename Fn> void dispatch(DType t, Fn fn) {
  switch (t) {
  case DType::F32:
    fn(F32Elem{});
    return;
  case DType::BF16:
    fn(BF16Elem{});
    return;
  case DType::F16:
    fn(F16Elem{});
    return;
  }
}

/// max |v| over the n values of buffer `p` as stored in `t`, NaN skipped
/// (te::cpu::amaxOf's rule): the amax the producers (te_rt_act_fwd, ...)
/// report, which a current-scaling quantization of the buffer would
/// compute itself. Fixed chunks reduced in parallel, then their maxima;
/// max is order-independent, so the thread count does not matter.
float storedAmax(DType t, const void *p, int64_t n) {
  constexpr int64_t kChunk = int64_t(1) << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<float> part(static_cast<size_t>(chunks), 0.0f);
  dispatch(t, [&](auto e) {
    using E = decltype(e);
    const auto *v = static_cast<const typename E::T *>(p);
    te::cpu::parallelFor(chunks, kChunk, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        float m = 0.0f;
        for (int64_t i = c * kChunk, end = std::min(n, i + kChunk); i < end;
             ++i)
          m = std::max(m, std::fabs(E::load(v[i])));
        part[c] = m;
      }
    });
  });
  float m = 0.0f;
  for (float v : part)
    m = std::max(m, v);
  return m;
}

/// Rows per chunk of the norm backward's dgamma/dbeta reduction: fixed, so
/// that the sums do not depend on the thread count.
constexpr int64_t kNormBwdChunk = 256;

/// dst[cols, rows] = src[rows, cols]^T in 32x32 tiles, tile rows across
/// threads.
template <typename T>
void transposeTiled(const T *src, T *dst, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
  int64_t tileRows = (rows + kTile - 1) / kTile;
  te::cpu::parallelFor(tileRows, kTile * cols, [&](int64_t t0, int64_t t1) {
    for (int64_t ti = t0; ti < t1; ++ti) {
      int64_t i0 = ti * kTile, i1 = std::min(rows, i0 + kTile);
      for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
        int64_t j1 = std::min(cols, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = j0; j < j1; ++j)
            dst[j * rows + i] = src[i * cols + j];
      }
    }
  });
}

te::cpu::FP8 fp8Of(int32_t format) {
  return format == TE_RT_FP8_E4M3 ? te::cpu::FP8::E4M3 : te::cpu::FP8::E5M2;
}

/// y = act(x) over [rows, cols] of x in fp32, rows split across threads
/// (y is [rows, cols / 2] for gated activations).
void activationForwardRows(te::cpu::Activation kind, const float *x, float *y,
                           int64_t rows, int64_t cols,
                           te::cpu::ClampParams p = {}) {
  int64_t yCols = te::cpu::isGated(kind) ? cols / 2 : cols;
  te::cpu::parallelFor(rows, 16 * cols, [&](int64_t r0, int64_t r1) {
    te::cpu::activationForward(kind, x + r0 * cols, r1 - r0, cols,
                               y + r0 * yCols, p);
  });
}

/// dx = dy * act'(x) over [rows, cols] of x in fp32, rows split across
/// threads (dy is [rows, cols / 2] for gated activations).
void activationBackwardRows(te::cpu::Activation kind, const float *dy,
                            const float *x, float *dx, int64_t rows,
                            int64_t cols, te::cpu::ClampParams p = {}) {
  int64_t dyCols = te::cpu::isGated(kind) ? cols / 2 : cols;
  te::cpu::parallelFor(rows, 16 * cols, [&](int64_t r0, int64_t r1) {
    te::cpu::activationBackward(kind, dy + r0 * dyCols, x + r0 * cols, r1 - r0,
                                cols, dx + r0 * cols, p);
  });
}

/// The quantized GEMMs on the cpu: d[m,n] = alpha * (A[m,k] . B[n,k]^T)
/// (+ bias) (+ d when accumulate) from the dequantized fp32 operands
/// (scratch slots 0 and 1), each step in fp32 in that order, rounded once
/// to `t`. alpha is 1 (exact) except for NVFP4's global-scale factor.
void gemmOfDequantized(te_rt_context *ctx, DType t, const float *A,
                       const float *B, const void *bias, void *d, int64_t m,
                       int64_t n, int64_t k, bool accumulate,
                       float alpha = 1.0f) {
  int64_t mn = m * n;
  const float *Bias = bias ? input(ctx, 2, t, bias, n) : nullptr;
  float *D = ctx->scratch(3, mn);
  te::cpu::gemmTN(A, B, nullptr, m, n, k, D);
  const float *Old = accumulate ? input(ctx, 4, t, d, mn) : nullptr;
  te::cpu::parallelFor(m, n, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float v = D[i * n + j] * alpha;
        if (Bias)
          v += Bias[j];
        if (Old)
          v += Old[i * n + j];
        D[i * n + j] = v;
      }
  });
  commit(t, D, d, mn);
}

/// Bytes of one element of a TE_RT_DTYPE_*.
int64_t elementBytes(int32_t dtype) { return dtype == TE_RT_DTYPE_F32 ? 4 : 2; }

/// Bytes of the host staging buffer of `n` elements between a fused
/// call's two halves: at least one, so that an empty tensor (a zero dim)
/// still passes a non-NULL buffer to the inner call.
size_t stagingBytes(int64_t n, int32_t dtype) {
  return static_cast<size_t>(std::max<int64_t>(n * elementBytes(dtype), 1));
}

/// Transposes a [rows, cols] byte matrix.
std::vector<uint8_t> transposeBytes(const uint8_t *in, int64_t rows,
                                    int64_t cols) {
  std::vector<uint8_t> out(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out[j * rows + i] = in[i * cols + j];
  return out;
}

/// The fp32 values of MXFP8 operand `q` of a GEMM with contraction dim `k`:
/// `r` logical rows, each of length k, stored as the rowwise copy of an
/// [r, k] tensor or the columnwise copy of a [k, r] one. Writes out [r, k].
void dequantizeMXFP8Operand(const uint8_t *q, const uint8_t *scales,
                            bool columnwise, bool swizzled, int64_t r,
                            int64_t k, te::cpu::FP8 format, float *out) {
  int64_t rp = te::cpu::roundUpTo(r, 128), kb = te::cpu::roundUpTo(k / 32, 4);
  // Per logical row i and k-block b: scale byte s[i * kb + b]. A rowwise
  // tensor's compact scales are in that layout; a columnwise one's are its
  // transpose, and swizzled columnwise scales are the swizzle of exactly
  // that transpose.
  std::vector<uint8_t> s(static_cast<size_t>(rp * kb));
  if (swizzled)
    te::cpu::unswizzleScales(scales, rp, kb, s.data());
  else if (columnwise)
    s = transposeBytes(scales, kb, rp);
  else if (!s.empty())
    std::memcpy(s.data(), scales, s.size());
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < k; ++j) {
      uint8_t code = columnwise ? q[j * r + i] : q[i * k + j];
      out[i * k + j] = te::cpu::dequantizeFP8(code, format) *
                       te::formats::e8m0ToFloat(s[i * kb + j / 32]);
    }
}

/// Quantizes x [rows, cols] (fp32) into one NVFP4 copy: data [rows,
/// cols/2], scales [roundup(rows,128), roundup(cols/16,4)] (compact, or
/// swizzled into cuBLAS's order), amax[0] the global amax.
void quantizeNVFP4Copy(const float *x, int64_t rows, int64_t cols,
                       const te::cpu::NVFP4Options &options, bool swizzled,
                       void *data, uint8_t *scale_inv, float *amax) {
  int64_t sr = te::cpu::roundUpTo(rows, 128),
          sc = te::cpu::nvfp4ScaleCols(cols);
  auto *q = static_cast<uint8_t *>(data);
  float globalAmax;
  if (swizzled) {
    std::vector<uint8_t> compact(static_cast<size_t>(sr * sc));
    globalAmax =
        te::cpu::quantizeNVFP4(x, rows, cols, options, q, compact.data());
    te::cpu::swizzleScales(compact.data(), sr, sc, scale_inv);
  } else {
    globalAmax = te::cpu::quantizeNVFP4(x, rows, cols, options, q, scale_inv);
  }
  amax[0] = globalAmax;
}

/// The fp32 values e2m1(code) * e4m3(scale) of NVFP4 operand `q` of a GEMM
/// with contraction dim k: [r, k/2] codes, scales [roundup(r,128),
/// roundup(k/16,4)] (swizzled or compact), whether it is a rowwise copy of
/// an [r, k] tensor or the columnwise copy of a [k, r] one. Writes out
/// [r, k].
void dequantizeNVFP4Operand(const uint8_t *q, const uint8_t *scales,
                            bool swizzled, int64_t r, int64_t k, float *out) {
  if (!swizzled) {
    te::cpu::dequantizeNVFP4Blocks(q, scales, r, k, out);
    return;
  }
  int64_t rp = te::cpu::roundUpTo(r, 128), kb = te::cpu::nvfp4ScaleCols(k);
  std::vector<uint8_t> compact(static_cast<size_t>(rp * kb));
  te::cpu::unswizzleScales(scales, rp, kb, compact.data());
  te::cpu::dequantizeNVFP4Blocks(q, compact.data(), r, k, out);
}

} // namespace

namespace te::rt::cpu {

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

int32_t norm_fwd(const Checker &c, te_rt_context *ctx, int32_t kind,
                 int32_t dtype, const void *x, const void *gamma,
                 const void *beta, double eps, int32_t zero_centered,
                 int64_t rows, int64_t cols, void *z, float *mu, float *rsigma,
                 int64_t n, bool rms) {
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *X = input(ctx, 0, t, x, n);
    const float *G = input(ctx, 1, t, gamma, cols);
    const float *B = beta ? input(ctx, 2, t, beta, cols) : nullptr;
    float *Z = output(ctx, 3, t, z, n);
    auto normKindOf = rms ? te::cpu::Norm::RMSNorm : te::cpu::Norm::LayerNorm;
    te::cpu::parallelFor(rows, 8 * cols, [&](int64_t r0, int64_t r1) {
      te::cpu::normForward(normKindOf, X + r0 * cols, G, B,
                           static_cast<float>(eps), zero_centered, r1 - r0,
                           cols, Z + r0 * cols, mu ? mu + r0 : nullptr,
                           rsigma + r0);
    });
    commit(t, Z, z, n);
  });
}

int32_t norm_bwd(const Checker &c, te_rt_context *ctx, int32_t kind,
                 int32_t dtype, const void *dz, const void *x, const float *mu,
                 const float *rsigma, const void *gamma, int32_t zero_centered,
                 int64_t rows, int64_t cols, void *dx, void *dgamma,
                 void *dbeta, int64_t n, bool rms) {
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *DZ = input(ctx, 0, t, dz, n);
    const float *X = input(ctx, 1, t, x, n);
    const float *G = input(ctx, 2, t, gamma, cols);
    float *DX = output(ctx, 3, t, dx, n);
    float *DG = output(ctx, 4, t, dgamma, cols);
    float *DB = dbeta ? output(ctx, 5, t, dbeta, cols) : nullptr;
    auto normKindOf = rms ? te::cpu::Norm::RMSNorm : te::cpu::Norm::LayerNorm;
    const float *MU = rms ? nullptr : mu;
    int64_t chunks = (rows + kNormBwdChunk - 1) / kNormBwdChunk;
    if (chunks <= 1) {
      te::cpu::normBackward(normKindOf, DZ, X, MU, rsigma, G, zero_centered,
                            rows, cols, DX, DG, DB);
    } else {
      // Per-chunk partial dgamma (and dbeta), summed in chunk order.
      int64_t per = DB ? 2 * cols : cols;
      float *partial = ctx->scratch(6, chunks * per);
      te::cpu::parallelFor(
          chunks, kNormBwdChunk * cols * 16, [&](int64_t c0, int64_t c1) {
            for (int64_t ch = c0; ch < c1; ++ch) {
              int64_t r0 = ch * kNormBwdChunk;
              int64_t r1 = std::min(rows, r0 + kNormBwdChunk);
              float *pg = partial + ch * per;
              te::cpu::normBackward(
                  normKindOf, DZ + r0 * cols, X + r0 * cols,
                  MU ? MU + r0 : nullptr, rsigma + r0, G, zero_centered,
                  r1 - r0, cols, DX + r0 * cols, pg, DB ? pg + cols : nullptr);
            }
          });
      te::cpu::parallelFor(cols, chunks * 2, [&](int64_t j0, int64_t j1) {
        for (int64_t j = j0; j < j1; ++j) {
          float g = 0.0f, b = 0.0f;
          for (int64_t ch = 0; ch < chunks; ++ch) {
            g += partial[ch * per + j];
            if (DB)
              b += partial[ch * per + cols + j];
          }
          DG[j] = g;
          if (DB)
            DB[j] = b;
        }
      });
    }
    commit(t, DX, dx, n);
    commit(t, DG, dgamma, cols);
    if (DB)
      commit(t, DB, dbeta, cols);
  });
}

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

int32_t gemm_fprop(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *x, const void *w, const void *bias, void *y,
                   int64_t m, int64_t n, int64_t k, int64_t mn, int64_t mk,
                   int64_t nk) {
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *X = input(ctx, 0, t, x, mk);
    const float *W = input(ctx, 1, t, w, nk);
    const float *B = bias ? input(ctx, 2, t, bias, n) : nullptr;
    float *Y = output(ctx, 3, t, y, mn);
    te::cpu::gemmTN(X, W, B, m, n, k, Y);
    commit(t, Y, y, mn);
  });
}

int32_t gemm_dgrad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *dy, const void *w, void *dx, int64_t m,
                   int64_t n, int64_t k, int64_t mn, int64_t mk, int64_t nk) {
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *DY = input(ctx, 0, t, dy, mn);
    const float *W = input(ctx, 1, t, w, nk);
    float *DX = output(ctx, 2, t, dx, mk);
    te::cpu::gemmNN(DY, W, m, n, k, DX);
    commit(t, DX, dx, mk);
  });
}

int32_t gemm_wgrad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *dy, const void *x, void *dw, void *dbias,
                   int64_t m, int64_t n, int64_t k, int32_t accumulate,
                   int64_t mn, int64_t mk, int64_t nk) {
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *DY = input(ctx, 0, t, dy, mn);
    const float *X = input(ctx, 1, t, x, mk);
    // With accumulate the product goes to staging, then dw = dw + product
    // in fp32, rounded once.
    float *DW = accumulate ? ctx->scratch(2, nk) : output(ctx, 2, t, dw, nk);
    float *DB = dbias ? output(ctx, 3, t, dbias, n) : nullptr;
    te::cpu::gemmNT(DY, X, m, n, k, DW, DB);
    if (accumulate) {
      const float *old = input(ctx, 4, t, dw, nk);
      te::cpu::parallelFor(nk, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          DW[i] = old[i] + DW[i];
      });
    }
    commit(t, DW, dw, nk);
    if (DB)
      commit(t, DB, dbias, n);
  });
}

int32_t gemm_fprop_act(const Checker &c, te_rt_context *ctx, int32_t act,
                       int32_t dtype, const void *x, const void *w,
                       const void *bias, void *y, void *aux, int64_t m,
                       int64_t n, int64_t k, int64_t mn, int64_t mk,
                       int64_t nk) {
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *X = input(ctx, 0, t, x, mk);
    const float *W = input(ctx, 1, t, w, nk);
    const float *B = bias ? input(ctx, 2, t, bias, n) : nullptr;
    // The pre-activation stays in fp32 (staging even for f32: y is not it).
    float *pre = ctx->scratch(3, mn);
    te::cpu::gemmTN(X, W, B, m, n, k, pre);
    if (aux)
      commit(t, pre, aux, mn); // rounds into aux; pre keeps its fp32 values
    float *Y = output(ctx, 4, t, y, mn);
    activationForwardRows(te::cpu::Activation::GELU, pre, Y, m, n);
    commit(t, Y, y, mn);
  });
}

int32_t gemm_dgrad_dact(const Checker &c, te_rt_context *ctx, int32_t act,
                        int32_t dtype, const void *dy, const void *w,
                        const void *aux, void *dx, int64_t m, int64_t n,
                        int64_t k, int64_t mn, int64_t mk, int64_t nk) {
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *DY = input(ctx, 0, t, dy, mn);
    const float *W = input(ctx, 1, t, w, nk);
    const float *AUX = input(ctx, 2, t, aux, mk);
    float *dh = ctx->scratch(3, mk); // dy . w, not rounded
    te::cpu::gemmNN(DY, W, m, n, k, dh);
    float *DX = output(ctx, 4, t, dx, mk);
    activationBackwardRows(te::cpu::Activation::GELU, dh, AUX, DX, m, k);
    commit(t, DX, dx, mk);
  });
}

//===----------------------------------------------------------------------===//
// Activations and bias gradient
//===----------------------------------------------------------------------===//

int32_t act_fwd(const Checker &c, te_rt_context *ctx, int32_t act,
                int32_t dtype, const void *x, void *y, int64_t rows,
                int64_t cols, float limit, float alpha, float offset,
                float *amax, int64_t n) {
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    auto kind = static_cast<te::cpu::Activation>(act);
    int64_t yCols = te::cpu::isGated(kind) ? cols / 2 : cols;
    const float *X = input(ctx, 0, t, x, n);
    float *Y = output(ctx, 1, t, y, rows * yCols);
    activationForwardRows(kind, X, Y, rows, cols, {limit, alpha, offset});
    commit(t, Y, y, rows * yCols);
    if (amax)
      amax[0] = storedAmax(t, y, rows * yCols);
  });
}

int32_t act_bwd(const Checker &c, te_rt_context *ctx, int32_t act,
                int32_t dtype, const void *dy, const void *x, void *dx,
                int64_t rows, int64_t cols, float limit, float alpha,
                float offset, float *amax, int64_t n) {
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    auto kind = static_cast<te::cpu::Activation>(act);
    int64_t yCols = te::cpu::isGated(kind) ? cols / 2 : cols;
    const float *DY = input(ctx, 0, t, dy, rows * yCols);
    const float *X = input(ctx, 1, t, x, n);
    float *DX = output(ctx, 2, t, dx, n);
    activationBackwardRows(kind, DY, X, DX, rows, cols, {limit, alpha, offset});
    commit(t, DX, dx, n);
    if (amax)
      amax[0] = storedAmax(t, dx, n);
  });
}

int32_t bias_grad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                  const void *dy, void *dbias, int64_t rows, int64_t cols) {
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    float *sums = ctx->scratch(0, cols);
    dispatch(t, [&](auto e) {
      using E = decltype(e);
      const auto *in = static_cast<const typename E::T *>(dy);
      // Columns split across threads; each sums its columns over all rows
      // in row order, so the result does not depend on the thread count.
      te::cpu::parallelFor(cols, rows, [&](int64_t j0, int64_t j1) {
        std::fill(sums + j0, sums + j1, 0.0f);
        for (int64_t i = 0; i < rows; ++i) {
          const auto *row = in + i * cols;
          for (int64_t j = j0; j < j1; ++j)
            sums[j] += E::load(row[j]);
        }
      });
    });
    commit(t, sums, dbias, cols);
  });
}

int32_t dbias_dact(const Checker &c, te_rt_context *ctx, int32_t act,
                   int32_t dtype, const void *dy, const void *x, void *dx,
                   void *dbias, int64_t rows, int64_t cols, float limit,
                   float alpha, float offset, float *amax, int64_t n,
                   te::cpu::Activation kind) {
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *DY = input(ctx, 0, t, dy, n);
    const float *X = input(ctx, 1, t, x, n);
    float *DX = output(ctx, 2, t, dx, n);
    activationBackwardRows(kind, DY, X, DX, rows, cols, {limit, alpha, offset});
    // Column sums of the fp32 dact, in row order (thread-count independent).
    float *sums = ctx->scratch(3, cols);
    te::cpu::parallelFor(cols, rows, [&](int64_t j0, int64_t j1) {
      std::fill(sums + j0, sums + j1, 0.0f);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = j0; j < j1; ++j)
          sums[j] += DX[i * cols + j];
    });
    commit(t, DX, dx, n);
    commit(t, sums, dbias, cols);
    if (amax)
      amax[0] = storedAmax(t, dx, n);
  });
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

int32_t add(const Checker &c, te_rt_context *ctx, int32_t dtype, const void *a,
            const void *b, void *c_, int64_t n) {
  return guarded(c, [&] {
    dispatch(dtypeOf(dtype), [&](auto e) {
      using E = decltype(e);
      using T = typename E::T;
      const T *pa = static_cast<const T *>(a), *pb = static_cast<const T *>(b);
      T *pc = static_cast<T *>(c_);
      te::cpu::parallelFor(n, 1, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
          pc[i] = E::store(E::load(pa[i]) + E::load(pb[i]));
      });
    });
  });
}

int32_t bias_add(const Checker &c, te_rt_context *ctx, int32_t dtype,
                 const void *x, const void *bias, void *out, int64_t rows,
                 int64_t cols) {
  return guarded(c, [&] {
    dispatch(dtypeOf(dtype), [&](auto e) {
      using E = decltype(e);
      using T = typename E::T;
      const T *px = static_cast<const T *>(x),
              *pb = static_cast<const T *>(bias);
      T *po = static_cast<T *>(out);
      // Rows in parallel; out may be x (each element read before written).
      te::cpu::parallelFor(rows, cols, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t j = 0; j < cols; ++j)
            po[r * cols + j] =
                E::store(E::load(px[r * cols + j]) + E::load(pb[j]));
      });
    });
  });
}

int32_t cast(const Checker &c, te_rt_context *ctx, int32_t src_dtype,
             int32_t dst_dtype, const void *src, void *dst, int64_t n) {
  return guarded(c, [&] {
    DType from = dtypeOf(src_dtype), to = dtypeOf(dst_dtype);
    if (from == to) {
      // Bits unchanged (NaN payloads included).
      if (dst != src)
        std::memmove(dst, src, static_cast<size_t>(n * te::cpu::dtypeSize(to)));
      return;
    }
    dispatch(from, [&](auto s) {
      dispatch(to, [&](auto d) {
        using S = decltype(s);
        using D = decltype(d);
        const auto *in = static_cast<const typename S::T *>(src);
        auto *out = static_cast<typename D::T *>(dst);
        // Widening to fp32 is exact, so each element is rounded once.
        te::cpu::parallelFor(n, 1, [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i)
            out[i] = D::store(S::load(in[i]));
        });
      });
    });
  });
}

int32_t transpose(const Checker &c, te_rt_context *ctx, int32_t dtype,
                  const void *src, void *dst, int64_t rows, int64_t cols) {
  return guarded(c, [&] {
    if (dtypeOf(dtype) == DType::F32)
      transposeTiled(static_cast<const uint32_t *>(src),
                     static_cast<uint32_t *>(dst), rows, cols);
    else
      transposeTiled(static_cast<const uint16_t *>(src),
                     static_cast<uint16_t *>(dst), rows, cols);
  });
}

int32_t zero_ranges(const Checker &c, te_rt_context *ctx, void *const *ptrs,
                    const int64_t *bytes, int64_t count) {
  (void)c;
  (void)ctx;
  for (int64_t i = 0; i < count; ++i)
    if (bytes[i])
      std::memset(ptrs[i], 0, static_cast<size_t>(bytes[i]));
  return 0;
}

//===----------------------------------------------------------------------===//
// Per-tensor FP8
//===----------------------------------------------------------------------===//

int32_t quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t dtype,
                     const void *x, int64_t rows, int64_t cols, int32_t format,
                     const float *scale, int32_t pow2_scale, void *data,
                     void *transpose, float *scale_inv, float *amax,
                     const float *amax_in, int64_t n) {
  return guarded(c, [&] {
    te::cpu::FP8 f = fp8Of(format);
    const float *X = input(ctx, 0, dtypeOf(dtype), x, n);
    float a = amax_in ? amax_in[0] : te::cpu::amaxOf(X, n);
    float sc =
        scale ? scale[0]
              : te::cpu::scaleFromAmax(a, te::cpu::fp8Max(f), pow2_scale != 0);
    auto *q = static_cast<uint8_t *>(data);
    auto *t = static_cast<uint8_t *>(transpose);
    te::cpu::parallelFor(rows, cols, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = 0; j < cols; ++j) {
          uint8_t v = te::cpu::quantizeFP8(X[r * cols + j] * sc, f);
          if (q)
            q[r * cols + j] = v;
          if (t)
            t[j * rows + r] = v;
        }
    });
    scale_inv[0] = 1.0f / sc;
    if (amax)
      amax[0] = a;
  });
}

int32_t dbias_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t dtype,
                           const void *x, int64_t rows, int64_t cols,
                           int32_t format, const float *scale,
                           int32_t pow2_scale, void *data, void *transpose,
                           float *scale_inv, float *amax, void *dbias) {
  // The CPU reference is the unfused pair by definition (the bias gradient
  // reads x, which the quantization does not change).
  (void)c;
  if (te_rt_bias_grad(ctx, dtype, x, dbias, rows, cols))
    return 1;
  return te_rt_quantize_fp8(ctx, dtype, x, rows, cols, format, scale,
                            pow2_scale, data, transpose, scale_inv, amax,
                            nullptr);
}

int32_t act_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t act,
                         int32_t dtype, const void *x, int64_t rows,
                         int64_t cols, float limit, float alpha, float offset,
                         int32_t format, const float *scale, void *data,
                         void *transpose, float *scale_inv, float *amax) {
  // The CPU reference is the unfused pair by definition: the activation
  // into a host buffer, then its quantization.
  const int64_t yCols =
      te::cpu::isGated(static_cast<te::cpu::Activation>(act)) ? cols / 2 : cols;
  std::vector<uint8_t> y;
  if (guarded(c, [&] { y.resize(stagingBytes(rows * yCols, dtype)); }))
    return 1;
  if (te_rt_act_fwd(ctx, act, dtype, x, y.data(), rows, cols, limit, alpha,
                    offset, nullptr))
    return 1;
  return te_rt_quantize_fp8(ctx, dtype, y.data(), rows, yCols, format, scale, 0,
                            data, transpose, scale_inv, amax, nullptr);
}

int32_t norm_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t kind,
                          int32_t dtype, const void *x, const void *gamma,
                          const void *beta, double eps, int32_t zero_centered,
                          int64_t rows, int64_t cols, float *mu, float *rsigma,
                          int32_t format, const float *scale,
                          int32_t pow2_scale, void *data, void *transpose,
                          float *scale_inv, float *amax, int64_t n) {
  // The CPU reference is the unfused pair by definition.
  std::vector<uint8_t> z;
  if (guarded(c, [&] { z.resize(stagingBytes(n, dtype)); }))
    return 1;
  if (te_rt_norm_fwd(ctx, kind, dtype, x, gamma, beta, eps, zero_centered, rows,
                     cols, z.data(), mu, rsigma))
    return 1;
  return te_rt_quantize_fp8(ctx, dtype, z.data(), rows, cols, format, scale,
                            pow2_scale, data, transpose, scale_inv, amax,
                            nullptr);
}

int32_t dact_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t act,
                          int32_t dtype, const void *dy, const void *x,
                          void *dbias, int64_t rows, int64_t cols, float limit,
                          float alpha, float offset, int32_t format,
                          const float *scale, void *data, void *transpose,
                          float *scale_inv, float *amax, int64_t n) {
  std::vector<uint8_t> dx;
  if (guarded(c, [&] { dx.resize(stagingBytes(n, dtype)); }))
    return 1;
  if (dbias ? te_rt_dbias_dact(ctx, act, dtype, dy, x, dx.data(), dbias, rows,
                               cols, limit, alpha, offset, nullptr)
            : te_rt_act_bwd(ctx, act, dtype, dy, x, dx.data(), rows, cols,
                            limit, alpha, offset, nullptr))
    return 1;
  return te_rt_quantize_fp8(ctx, dtype, dx.data(), rows, cols, format, scale, 0,
                            data, transpose, scale_inv, amax, nullptr);
}

int32_t gemm_fp8(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                 int32_t a_format, const void *a, const float *a_scale_inv,
                 int32_t b_format, const void *b, const float *b_scale_inv,
                 const void *bias, void *d, int64_t m, int64_t n, int64_t k,
                 int32_t accumulate, int32_t fast_accumulate, int64_t mk,
                 int64_t nk) {
  return guarded(c, [&] {
    DType t = dtypeOf(out_dtype);
    float *A = ctx->scratch(0, mk), *B = ctx->scratch(1, nk);
    te::cpu::dequantizePerTensor(static_cast<const uint8_t *>(a), mk,
                                 a_scale_inv[0], fp8Of(a_format), A);
    te::cpu::dequantizePerTensor(static_cast<const uint8_t *>(b), nk,
                                 b_scale_inv[0], fp8Of(b_format), B);
    gemmOfDequantized(ctx, t, A, B, bias, d, m, n, k, accumulate != 0);
  });
}

//===----------------------------------------------------------------------===//
// Float8 block scaling
//===----------------------------------------------------------------------===//

int32_t quantize_fp8_block(const Checker &c, te_rt_context *ctx, int32_t dtype,
                           const void *x, int64_t rows, int64_t cols,
                           int32_t block_2d, int32_t pow2_scale, void *data,
                           float *scale_inv, void *columnwise_data,
                           float *columnwise_scale_inv, int64_t n) {
  return guarded(c, [&] {
    const float *X = input(ctx, 0, dtypeOf(dtype), x, n);
    bool fp32Scales = pow2_scale == 0;
    if (data)
      te::cpu::quantizeBlockRowwise(X, rows, cols, block_2d != 0, fp32Scales,
                                    static_cast<uint8_t *>(data), scale_inv);
    if (columnwise_data) {
      // The columnwise copy is the rowwise quantization of x^T.
      float *T = ctx->scratch(1, n);
      transposeTiled(reinterpret_cast<const uint32_t *>(X),
                     reinterpret_cast<uint32_t *>(T), rows, cols);
      te::cpu::quantizeBlockRowwise(T, cols, rows, block_2d != 0, fp32Scales,
                                    static_cast<uint8_t *>(columnwise_data),
                                    columnwise_scale_inv);
    }
  });
}

int32_t gemm_fp8_block(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                       const void *a, const float *a_scale_inv,
                       int32_t a_block_2d, const void *b,
                       const float *b_scale_inv, int32_t b_block_2d,
                       const void *bias, void *d, int64_t m, int64_t n,
                       int64_t k, int32_t accumulate, int64_t mk, int64_t nk) {
  return guarded(c, [&] {
    DType t = dtypeOf(out_dtype);
    float *A = ctx->scratch(0, mk), *B = ctx->scratch(1, nk);
    te::cpu::dequantizeBlockRowwise(static_cast<const uint8_t *>(a),
                                    a_scale_inv, m, k, a_block_2d != 0, A);
    te::cpu::dequantizeBlockRowwise(static_cast<const uint8_t *>(b),
                                    b_scale_inv, n, k, b_block_2d != 0, B);
    gemmOfDequantized(ctx, t, A, B, bias, d, m, n, k, accumulate != 0);
  });
}

//===----------------------------------------------------------------------===//
// MXFP8
//===----------------------------------------------------------------------===//

int32_t quantize_mxfp8(const Checker &c, te_rt_context *ctx, int32_t dtype,
                       const void *x, int64_t rows, int64_t cols,
                       int32_t format, int32_t swizzled, void *data,
                       uint8_t *scale_inv, void *columnwise_data,
                       uint8_t *columnwise_scale_inv, int64_t n) {
  return guarded(c, [&] {
    te::cpu::FP8 f = fp8Of(format);
    const float *X = input(ctx, 0, dtypeOf(dtype), x, n);
    if (data) {
      int64_t sr = te::cpu::roundUpTo(rows, 128),
              sc = te::cpu::mxfp8RowwiseScaleCols(cols);
      std::vector<uint8_t> compact(static_cast<size_t>(sr * sc));
      te::cpu::quantizeMXFP8Rowwise(
          X, rows, cols, f, static_cast<uint8_t *>(data), compact.data());
      if (swizzled)
        te::cpu::swizzleScales(compact.data(), sr, sc, scale_inv);
      else if (!compact.empty())
        std::memcpy(scale_inv, compact.data(), compact.size());
    }
    if (columnwise_data) {
      int64_t sr = te::cpu::roundUpTo(rows / 32, 4),
              sc = te::cpu::roundUpTo(cols, 128);
      std::vector<uint8_t> compact(static_cast<size_t>(sr * sc));
      te::cpu::quantizeMXFP8Columnwise(X, rows, cols, f,
                                       static_cast<uint8_t *>(columnwise_data),
                                       compact.data());
      if (swizzled)
        te::cpu::swizzleScales(transposeBytes(compact.data(), sr, sc).data(),
                               sc, sr, columnwise_scale_inv);
      else if (!compact.empty())
        std::memcpy(columnwise_scale_inv, compact.data(), compact.size());
    }
  });
}

int32_t gemm_mxfp8(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                   int32_t a_format, const void *a, const uint8_t *a_scale_inv,
                   int32_t a_columnwise, int32_t b_format, const void *b,
                   const uint8_t *b_scale_inv, int32_t b_columnwise,
                   int32_t swizzled, const void *bias, void *d, int64_t m,
                   int64_t n, int64_t k, int32_t accumulate, int64_t mk,
                   int64_t nk) {
  return guarded(c, [&] {
    DType t = dtypeOf(out_dtype);
    float *A = ctx->scratch(0, mk), *B = ctx->scratch(1, nk);
    dequantizeMXFP8Operand(static_cast<const uint8_t *>(a), a_scale_inv,
                           a_columnwise != 0, swizzled != 0, m, k,
                           fp8Of(a_format), A);
    dequantizeMXFP8Operand(static_cast<const uint8_t *>(b), b_scale_inv,
                           b_columnwise != 0, swizzled != 0, n, k,
                           fp8Of(b_format), B);
    gemmOfDequantized(ctx, t, A, B, bias, d, m, n, k, accumulate != 0);
  });
}

//===----------------------------------------------------------------------===//
// NVFP4
//===----------------------------------------------------------------------===//

int32_t quantize_nvfp4(const Checker &c, te_rt_context *ctx, int32_t dtype,
                       const void *x, int64_t rows, int64_t cols,
                       int32_t block_2d, int32_t rht,
                       int32_t stochastic_rounding, uint64_t seed,
                       int32_t swizzled, void *data, uint8_t *scale_inv,
                       float *amax, void *columnwise_data,
                       uint8_t *columnwise_scale_inv, float *columnwise_amax,
                       int64_t n) {
  return guarded(c, [&] {
    const float *X = input(ctx, 0, dtypeOf(dtype), x, n);
    te::cpu::NVFP4Options options;
    options.block2d = block_2d != 0;
    options.stochastic = stochastic_rounding != 0;
    options.contextSeed = ctx->seed;
    options.seed = seed;
    if (data) {
      options.copy = 0;
      quantizeNVFP4Copy(X, rows, cols, options, swizzled != 0, data, scale_inv,
                        amax);
    }
    if (columnwise_data) {
      // The columnwise copy is the same quantization of x^T [cols, rows]
      // (after the RHT of its rows' 16-element chunks with rht), drawing
      // copy 1's random bits. With block_2d (never with stochastic
      // rounding) its tiles, amaxes, scales and codes are the rowwise ones
      // transposed.
      float *T = ctx->scratch(1, n);
      transposeTiled(reinterpret_cast<const uint32_t *>(X),
                     reinterpret_cast<uint32_t *>(T), rows, cols);
      if (rht)
        te::cpu::applyNVFP4RHT(T, cols, rows);
      options.copy = 1;
      quantizeNVFP4Copy(T, cols, rows, options, swizzled != 0, columnwise_data,
                        columnwise_scale_inv, columnwise_amax);
    }
  });
}

int32_t gemm_nvfp4(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                   const void *a, const uint8_t *a_scale_inv,
                   const float *a_amax, const void *b,
                   const uint8_t *b_scale_inv, const float *b_amax,
                   int32_t swizzled, const void *bias, void *d, int64_t m,
                   int64_t n, int64_t k, int32_t accumulate, int64_t mk,
                   int64_t nk) {
  return guarded(c, [&] {
    DType t = dtypeOf(out_dtype);
    float *A = ctx->scratch(0, mk), *B = ctx->scratch(1, nk);
    dequantizeNVFP4Operand(static_cast<const uint8_t *>(a), a_scale_inv,
                           swizzled != 0, m, k, A);
    dequantizeNVFP4Operand(static_cast<const uint8_t *>(b), b_scale_inv,
                           swizzled != 0, n, k, B);
    // The global-scale factor: the operands above lack 1 / S_enc each, the
    // encode scales their quantization used (TE's amax_a amax_b / (6 6 448
    // 448), without its overflow for huge amaxes or its flush for tiny ones).
    float alpha = (1.0f / te::cpu::nvfp4EncodeScale(a_amax[0])) *
                  (1.0f / te::cpu::nvfp4EncodeScale(b_amax[0]));
    gemmOfDequantized(ctx, t, A, B, bias, d, m, n, k, accumulate != 0, alpha);
  });
}

int32_t amax_update(const Checker &c, te_rt_context *ctx, const float *history,
                    const float *scale, const float *amax, int64_t len,
                    int64_t n, float fp8_max, int32_t margin,
                    int32_t most_recent, float *new_history, float *new_scale,
                    int64_t count) {
  return guarded(c, [&] {
    if (new_history != history)
      std::memmove(new_history, history, static_cast<size_t>(count) * 4);
    if (new_scale != scale)
      std::memmove(new_scale, scale, static_cast<size_t>(n) * 4);
    std::memmove(new_history, amax, static_cast<size_t>(n) * 4);
    te::cpu::updateDelayedScaling(new_history, new_scale, len, n, fp8_max,
                                  margin, most_recent != 0);
  });
}

} // namespace te::rt::cpu
