//===- BackendQuantize.cpp - CPU backend: quantization ----------*- C++ -*-===//
//
// The CPU reference backend's quantization recipes and their GEMMs
// (Backend.h), after the checks of api/Quantize.cpp: the reference
// quantizers of Quantize.h, and GEMMs of the dequantized operands in fp32.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Context.h"
#include "cpu/BackendUtil.h"
#include "cpu/Convert.h"
#include "cpu/Gemm.h"
#include "cpu/Parallel.h"
#include "cpu/Quantize.h"
#include "cpu/Reference.h"
#include "te_kernels/formats.h"

#include <algorithm>
#include <utility>
#include <cstring>
#include <vector>

using te::cpu::DType;
using te::rt::Checker;
using te::rt::guarded;
using te::rt::cpu::commit;
using te::rt::cpu::input;

namespace {

/// The quantized GEMMs on the cpu: d[m,n] = alpha * (A[m,k] . B[n,k]^T)
/// (+ bias) (+ d when accumulate) from the dequantized fp32 operands
/// (scratch slots 0 and 1), each step in fp32 in that order, rounded once
/// to `t`. alpha is 1 (exact) except for NVFP4's global-scale factor.
void gemmOfDequantized(te_rt_context *ctx, DType t, const float *A,
                       const float *B, const void *bias, void *d, int64_t m,
                       int64_t n, int64_t k, bool accumulate,
                       float alpha = 1.0f, const float *rowAlpha = nullptr) {
  int64_t mn = m * n;
  const float *Bias = bias ? input(ctx, 2, t, bias, n) : nullptr;
  float *D = ctx->scratch(3, mn);
  te::cpu::gemmTN(A, B, nullptr, m, n, k, D);
  const float *Old = accumulate ? input(ctx, 4, t, d, mn) : nullptr;
  te::cpu::parallelFor(m, n, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float v = D[i * n + j] * alpha;
        if (rowAlpha) // row-scaled NVFP4: its row's factor, after alpha
          v *= rowAlpha[i];
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

/// The two operands of an NVFP4 GEMM (sizes the checks found to fit) as
/// the fp32 block values e2m1 x e4m3 in the context's scratch 0 and 1:
/// A [m, k], B [n, k].
std::pair<float *, float *> nvfp4Operands(te_rt_context *ctx, const void *a,
                                          const uint8_t *aScales,
                                          const void *b,
                                          const uint8_t *bScales,
                                          bool swizzled, int64_t m, int64_t n,
                                          int64_t k) {
  float *A = ctx->scratch(0, m * k), *B = ctx->scratch(1, n * k);
  dequantizeNVFP4Operand(static_cast<const uint8_t *>(a), aScales, swizzled,
                         m, k, A);
  dequantizeNVFP4Operand(static_cast<const uint8_t *>(b), bScales, swizzled,
                         n, k, B);
  return {A, B};
}

} // namespace

namespace te::rt::cpu {

//===----------------------------------------------------------------------===//
// Per-tensor FP8
//===----------------------------------------------------------------------===//

int32_t quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t dtype,
                     const void *x, int64_t rows, int64_t cols, int32_t format,
                     const float *scale, int32_t pow2_scale, void *data,
                     void *transpose, float *scale_inv, float *amax,
                     const float *amax_in) {
  // Sizes the checks (api/) found to fit.
  int64_t n = rows * cols;
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

int32_t add_columnwise_fp8(const Checker &c, te_rt_context *ctx,
                           const void *data, const float *scale_inv,
                           int64_t rows, int64_t cols, void *transpose,
                           float *scale_inv_out) {
  (void)ctx;
  return guarded(c, [&] {
    transposeTiled(static_cast<const uint8_t *>(data),
                   static_cast<uint8_t *>(transpose), rows, cols);
    scale_inv_out[0] = scale_inv[0];
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
                          float *scale_inv, float *amax) {
  // Sizes the checks (api/) found to fit.
  int64_t n = rows * cols;
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
                          float *scale_inv, float *amax) {
  // Sizes the checks (api/) found to fit.
  int64_t n = rows * cols;
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
                 int32_t accumulate, int32_t fast_accumulate) {
  // Sizes the checks (api/) found to fit.
  int64_t mk = m * k, nk = n * k;
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
                           float *columnwise_scale_inv) {
  // Sizes the checks (api/) found to fit.
  int64_t n = rows * cols;
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
                       int64_t k, int32_t accumulate) {
  // Sizes the checks (api/) found to fit.
  int64_t mk = m * k, nk = n * k;
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
                       uint8_t *columnwise_scale_inv) {
  // Sizes the checks (api/) found to fit.
  int64_t n = rows * cols;
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
                   int64_t n, int64_t k, int32_t accumulate) {
  // Sizes the checks (api/) found to fit.
  int64_t mk = m * k, nk = n * k;
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
                       uint8_t *columnwise_scale_inv, float *columnwise_amax) {
  // Sizes the checks (api/) found to fit.
  int64_t n = rows * cols;
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

int32_t quantize_nvfp4_4over6(const Checker &c, te_rt_context *ctx,
                              int32_t dtype, const void *x, int64_t rows,
                              int64_t cols, int32_t block_2d, int32_t err_mode,
                              int32_t e4m3_max, int32_t swizzled, void *data,
                              uint8_t *scale_inv, float *amax,
                              void *columnwise_data,
                              uint8_t *columnwise_scale_inv,
                              float *columnwise_amax) {
  // Sizes the checks (api/) found to fit.
  int64_t n = rows * cols;
  return guarded(c, [&] {
    const float *X = input(ctx, 0, dtypeOf(dtype), x, n);
    float bound = static_cast<float>(e4m3_max);
    // One copy of x [r, k]; the amax stored makes 2688 / amax (the S_enc
    // te_rt_gemm_nvfp4 and dequantization read) the S_enc used here.
    auto copy = [&](const float *src, int64_t r, int64_t k, void *out,
                    uint8_t *scales, float *outAmax) {
      int64_t sr = te::cpu::roundUpTo(r, 128), sc = te::cpu::nvfp4ScaleCols(k);
      std::vector<uint8_t> compact(swizzled ? static_cast<size_t>(sr * sc) : 0);
      uint8_t *dst = swizzled ? compact.data() : scales;
      float a = te::cpu::quantizeNVFP4FourOverSix(
          src, r, k, block_2d != 0, err_mode == 1, bound,
          static_cast<uint8_t *>(out), dst);
      if (swizzled)
        te::cpu::swizzleScales(compact.data(), sr, sc, scales);
      outAmax[0] = a * (448.0f / bound);
    };
    if (data)
      copy(X, rows, cols, data, scale_inv, amax);
    if (columnwise_data) {
      float *T = ctx->scratch(1, n);
      transposeTiled(reinterpret_cast<const uint32_t *>(X),
                     reinterpret_cast<uint32_t *>(T), rows, cols);
      copy(T, cols, rows, columnwise_data, columnwise_scale_inv,
           columnwise_amax);
    }
  });
}

int32_t gemm_nvfp4(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                   const void *a, const uint8_t *a_scale_inv,
                   const float *a_amax, const void *b,
                   const uint8_t *b_scale_inv, const float *b_amax,
                   int32_t swizzled, const void *bias, void *d, int64_t m,
                   int64_t n, int64_t k, int32_t accumulate) {
  return guarded(c, [&] {
    auto [A, B] = nvfp4Operands(ctx, a, a_scale_inv, b, b_scale_inv,
                                swizzled != 0, m, n, k);
    // The global-scale factor: the operands above lack 1 / S_enc each, the
    // encode scales their quantization used (TE's amax_a amax_b / (6 6 448
    // 448), without its overflow for huge amaxes or its flush for tiny ones).
    float alpha = (1.0f / te::cpu::nvfp4EncodeScale(a_amax[0])) *
                  (1.0f / te::cpu::nvfp4EncodeScale(b_amax[0]));
    gemmOfDequantized(ctx, dtypeOf(out_dtype), A, B, bias, d, m, n, k,
                      accumulate != 0, alpha);
  });
}

int32_t quantize_nvfp4_row_scaled(const Checker &c, te_rt_context *ctx,
                                  int32_t dtype, const void *x, int64_t rows,
                                  int64_t cols, int32_t swizzled, void *data,
                                  uint8_t *scale_inv, float *amax) {
  // Sizes the checks (api/) found to fit.
  int64_t n = rows * cols;
  return guarded(c, [&] {
    const float *X = input(ctx, 0, dtypeOf(dtype), x, n);
    te::cpu::NVFP4Options options;
    options.rowAmax = amax; // one amax per row, each row its own S_enc
    float ignored;
    quantizeNVFP4Copy(X, rows, cols, options, swizzled != 0, data, scale_inv,
                      &ignored);
  });
}

int32_t gemm_nvfp4_row_scaled(const Checker &c, te_rt_context *ctx,
                              int32_t out_dtype, const void *a,
                              const uint8_t *a_scale_inv, const float *a_amax,
                              const void *b, const uint8_t *b_scale_inv,
                              const float *b_amax, int32_t swizzled,
                              const void *bias, void *d, int64_t m, int64_t n,
                              int64_t k, int32_t accumulate) {
  return guarded(c, [&] {
    auto [A, B] = nvfp4Operands(ctx, a, a_scale_inv, b, b_scale_inv,
                                swizzled != 0, m, n, k);
    // TE's row-scaled GEMM: the per-tensor GEMM of amax-1 operands (alpha
    // 1 / S_enc(1)^2), then each row times the fp32 product of the two
    // amaxes (its cpp_extensions/gemm.py folds a scalar side into one
    // factor per row).
    float one = 1.0f / te::cpu::nvfp4EncodeScale(1.0f);
    std::vector<float> rowAlpha(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i)
      rowAlpha[i] = a_amax[i] * b_amax[0];
    gemmOfDequantized(ctx, dtypeOf(out_dtype), A, B, bias, d, m, n, k,
                      accumulate != 0, one * one, rowAlpha.data());
  });
}

/// In order: nothing to fork (`fork` ignored).
int32_t amax_update(const Checker &c, te_rt_context *ctx, const float *history,
                    const float *scale, const float *amax, int64_t len,
                    int64_t n, float fp8_max, int32_t margin,
                    int32_t most_recent, int64_t unused, float *new_history,
                    float *new_scale, int32_t fork) {
  // Sizes the checks (api/) found to fit; a nonzero mask only with n <= 64.
  int64_t count = len * n;
  return guarded(c, [&] {
    if (new_history != history)
      std::memmove(new_history, history, static_cast<size_t>(count) * 4);
    if (new_scale != scale)
      std::memmove(new_scale, scale, static_cast<size_t>(n) * 4);
    if (unused == 0) {
      std::memmove(new_history, amax, static_cast<size_t>(n) * 4);
    } else {
      // The step's amaxes, an unused slot's 0 without reading it, staged
      // first: amax may overlap row 0 as memmove allows.
      float step[64];
      for (int64_t s = 0; s < n; ++s)
        step[s] = (static_cast<uint64_t>(unused) >> s) & 1 ? 0.0f : amax[s];
      std::memcpy(new_history, step, static_cast<size_t>(n) * 4);
    }
    te::cpu::updateDelayedScaling(new_history, new_scale, len, n, fp8_max,
                                  margin, most_recent != 0);
  });
}

} // namespace te::rt::cpu
