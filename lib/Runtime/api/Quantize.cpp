//===- Quantize.cpp - te-mlir runtime: quantization calls -------*- C++ -*-===//
//
// The quantization recipes' calls of the ABI (per-tensor FP8 and its fused
// casts, Float8 block scaling, MXFP8, NVFP4, the delayed-scaling amax
// update) and their GEMMs: each call's argument checks, then the context's
// backend (ctx->ops, Backend.h).
//
//===----------------------------------------------------------------------===//

#include "cpu/Quantize.h"
#include "Backend.h"
#include "api/Checks.h"
#include "cpu/Reference.h"

#include <cmath>
#include <string>

using namespace te::rt::api;
using te::rt::Checker;

extern "C" {

//===----------------------------------------------------------------------===//
// Per-tensor FP8
//===----------------------------------------------------------------------===//

int32_t te_rt_quantize_fp8(te_rt_context *ctx, int32_t dtype, const void *x,
                           int64_t rows, int64_t cols, int32_t format,
                           const float *scale, int32_t pow2_scale, void *data,
                           void *transpose, float *scale_inv, float *amax,
                           const float *amax_in) {
  Checker c("te_rt_quantize_fp8");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !fp8Format(c, format, "format") || !c.flag("pow2_scale", pow2_scale) ||
      !c.notNull("x", x) || !c.notNull("scale_inv", scale_inv))
    return 1;
  if (!fp8CastOutputs(c, scale, pow2_scale, data, transpose))
    return 1;
  // A precomputed amax replaces current scaling's amax pass; it is then the
  // amax, so there is none to write.
  if ((scale && !c.mustBeNull("amax_in", amax_in,
                              "with delayed scaling (scale given)")) ||
      (amax_in && !c.mustBeNull("amax", amax,
                                "when amax_in is given (amax_in is the amax)")))
    return 1;
  return ctx->ops->quantize_fp8(c, ctx, dtype, x, rows, cols, format, scale,
                                pow2_scale, data, transpose, scale_inv, amax,
                                amax_in);
}

int32_t te_rt_add_columnwise_fp8(te_rt_context *ctx, const void *data,
                                 const float *scale_inv, int64_t rows,
                                 int64_t cols, void *transpose,
                                 float *scale_inv_out) {
  Checker c("te_rt_add_columnwise_fp8");
  int64_t n = 0;
  if (!c.context(ctx) || !c.matrix(rows, cols, &n, 1) ||
      !c.notNull("data", data) || !c.notNull("scale_inv", scale_inv) ||
      !c.notNull("transpose", transpose) ||
      !c.notNull("scale_inv_out", scale_inv_out))
    return 1;
  if (te::rt::overlap(transpose, n, data, n))
    return c.fail("transpose and data overlap"), 1;
  if (te::rt::overlap(scale_inv_out, 4, scale_inv, 4) ||
      te::rt::overlap(scale_inv_out, 4, data, n) ||
      te::rt::overlap(scale_inv_out, 4, transpose, n))
    return c.fail("scale_inv_out overlaps scale_inv, data or transpose"), 1;
  return ctx->ops->add_columnwise_fp8(c, ctx, data, scale_inv, rows, cols,
                                      transpose, scale_inv_out);
}

int32_t te_rt_dbias_quantize_fp8(te_rt_context *ctx, int32_t dtype,
                                 const void *x, int64_t rows, int64_t cols,
                                 int32_t format, const float *scale,
                                 int32_t pow2_scale, void *data,
                                 void *transpose, float *scale_inv, float *amax,
                                 void *dbias) {
  Checker c("te_rt_dbias_quantize_fp8");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !fp8Format(c, format, "format") || !c.flag("pow2_scale", pow2_scale) ||
      !c.notNull("x", x) || !c.notNull("scale_inv", scale_inv) ||
      !c.notNull("dbias", dbias))
    return 1;
  if (!fp8CastOutputs(c, scale, pow2_scale, data, transpose))
    return 1;
  return ctx->ops->dbias_quantize_fp8(c, ctx, dtype, x, rows, cols, format,
                                      scale, pow2_scale, data, transpose,
                                      scale_inv, amax, dbias);
}

int32_t te_rt_act_quantize_fp8(te_rt_context *ctx, int32_t act, int32_t dtype,
                               const void *x, int64_t rows, int64_t cols,
                               float limit, float alpha, float offset,
                               int32_t format, const float *scale, void *data,
                               void *transpose, float *scale_inv, float *amax) {
  Checker c("te_rt_act_quantize_fp8");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !activation(c, act, cols, limit) || !c.notNull("x", x) ||
      !fusedCastArgs(c, format, scale, data, transpose, scale_inv))
    return 1;
  return ctx->ops->act_quantize_fp8(c, ctx, act, dtype, x, rows, cols, limit,
                                    alpha, offset, format, scale, data,
                                    transpose, scale_inv, amax);
}

int32_t te_rt_norm_quantize_fp8(te_rt_context *ctx, int32_t kind, int32_t dtype,
                                const void *x, const void *gamma,
                                const void *beta, double eps,
                                int32_t zero_centered, int64_t rows,
                                int64_t cols, float *mu, float *rsigma,
                                int32_t format, const float *scale,
                                int32_t pow2_scale, void *data, void *transpose,
                                float *scale_inv, float *amax) {
  Checker c("te_rt_norm_quantize_fp8");
  int64_t n = 0;
  if (!c.context(ctx) || !normKind(c, kind) || !c.dtype(dtype) ||
      !c.nonNegative("rows", rows) || !c.positive("cols", cols) ||
      !c.product("rows * cols", rows, cols, 4, &n))
    return 1;
  const bool rms = kind == TE_RT_NORM_RMSNORM;
  if (!(std::isfinite(eps) && eps >= 0.0))
    return c.fail("eps must be finite and >= 0, got " + str(eps)), 1;
  if (!c.flag("zero_centered", zero_centered) || !c.notNull("x", x) ||
      !c.notNull("gamma", gamma) ||
      (rms && !c.mustBeNull("beta", beta, "for RMSNorm")) ||
      (rms ? !c.mustBeNull("mu", mu, "for RMSNorm") : !c.notNull("mu", mu)) ||
      !c.notNull("rsigma", rsigma) || !fp8Format(c, format, "format") ||
      !c.flag("pow2_scale", pow2_scale) || !c.notNull("scale_inv", scale_inv))
    return 1;
  if (!fp8CastOutputs(c, scale, pow2_scale, data, transpose))
    return 1;
  return ctx->ops->norm_quantize_fp8(
      c, ctx, kind, dtype, x, gamma, beta, eps, zero_centered, rows, cols, mu,
      rsigma, format, scale, pow2_scale, data, transpose, scale_inv, amax);
}

int32_t te_rt_dact_quantize_fp8(te_rt_context *ctx, int32_t act, int32_t dtype,
                                const void *dy, const void *x, void *dbias,
                                int64_t rows, int64_t cols, float limit,
                                float alpha, float offset, int32_t format,
                                const float *scale, void *data, void *transpose,
                                float *scale_inv, float *amax) {
  Checker c("te_rt_dact_quantize_fp8");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !activation(c, act, cols, limit) || !c.notNull("dy", dy) ||
      !c.notNull("x", x) ||
      !fusedCastArgs(c, format, scale, data, transpose, scale_inv))
    return 1;
  if (dbias && te::cpu::isGated(static_cast<te::cpu::Activation>(act)))
    return c.fail(std::string("gated activation ") + activationName(act) +
                  " has no fused dbias + dact (dbias must be NULL)"),
           1;
  return ctx->ops->dact_quantize_fp8(c, ctx, act, dtype, dy, x, dbias, rows,
                                     cols, limit, alpha, offset, format, scale,
                                     data, transpose, scale_inv, amax);
}

int32_t te_rt_gemm_fp8(te_rt_context *ctx, int32_t out_dtype, int32_t a_format,
                       const void *a, const float *a_scale_inv,
                       int32_t b_format, const void *b,
                       const float *b_scale_inv, const void *bias, void *d,
                       int64_t m, int64_t n, int64_t k, int32_t accumulate,
                       int32_t fast_accumulate) {
  Checker c("te_rt_gemm_fp8");
  int64_t mn, mk, nk;
  if (!c.context(ctx) || !c.dtype(out_dtype, "out_dtype") ||
      !fp8Format(c, a_format, "a_format") ||
      !fp8Format(c, b_format, "b_format") ||
      !gemmSizes(c, m, n, k, &mn, &mk, &nk) ||
      !c.flag("accumulate", accumulate) ||
      !c.flag("fast_accumulate", fast_accumulate) || !c.notNull("a", a) ||
      !c.notNull("a_scale_inv", a_scale_inv) || !c.notNull("b", b) ||
      !c.notNull("b_scale_inv", b_scale_inv) || !c.notNull("d", d))
    return 1;
  if (a_format == TE_RT_FP8_E5M2 && b_format == TE_RT_FP8_E5M2)
    return c.fail("E5M2 x E5M2 GEMMs are not supported (one operand must be "
                  "E4M3, as in TE's HYBRID format)"),
           1;
  return ctx->ops->gemm_fp8(c, ctx, out_dtype, a_format, a, a_scale_inv,
                            b_format, b, b_scale_inv, bias, d, m, n, k,
                            accumulate, fast_accumulate);
}

//===----------------------------------------------------------------------===//
// Float8 block scaling
//===----------------------------------------------------------------------===//

int32_t te_rt_quantize_fp8_block(te_rt_context *ctx, int32_t dtype,
                                 const void *x, int64_t rows, int64_t cols,
                                 int32_t block_2d, int32_t pow2_scale,
                                 void *data, float *scale_inv,
                                 void *columnwise_data,
                                 float *columnwise_scale_inv) {
  Checker c("te_rt_quantize_fp8_block");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !c.flag("block_2d", block_2d) || !c.flag("pow2_scale", pow2_scale) ||
      !c.notNull("x", x))
    return 1;
  if (!blockCopies(c, data, scale_inv, columnwise_data, columnwise_scale_inv))
    return 1;
  return ctx->ops->quantize_fp8_block(c, ctx, dtype, x, rows, cols, block_2d,
                                      pow2_scale, data, scale_inv,
                                      columnwise_data, columnwise_scale_inv);
}

int32_t te_rt_gemm_fp8_block(te_rt_context *ctx, int32_t out_dtype,
                             const void *a, const float *a_scale_inv,
                             int32_t a_block_2d, const void *b,
                             const float *b_scale_inv, int32_t b_block_2d,
                             const void *bias, void *d, int64_t m, int64_t n,
                             int64_t k, int32_t accumulate) {
  Checker c("te_rt_gemm_fp8_block");
  int64_t mn, mk, nk;
  if (!c.context(ctx) || !c.dtype(out_dtype, "out_dtype") ||
      !gemmSizes(c, m, n, k, &mn, &mk, &nk) ||
      !c.flag("a_block_2d", a_block_2d) || !c.flag("b_block_2d", b_block_2d) ||
      !c.flag("accumulate", accumulate) || !c.notNull("a", a) ||
      !c.notNull("a_scale_inv", a_scale_inv) || !c.notNull("b", b) ||
      !c.notNull("b_scale_inv", b_scale_inv) || !c.notNull("d", d))
    return 1;
  if (a_block_2d && b_block_2d)
    return c.fail("both operands use 128x128 blocks (at most one may, as in "
                  "TransformerEngine)"),
           1;
  return ctx->ops->gemm_fp8_block(c, ctx, out_dtype, a, a_scale_inv, a_block_2d,
                                  b, b_scale_inv, b_block_2d, bias, d, m, n, k,
                                  accumulate);
}

//===----------------------------------------------------------------------===//
// MXFP8
//===----------------------------------------------------------------------===//

int32_t te_rt_quantize_mxfp8(te_rt_context *ctx, int32_t dtype, const void *x,
                             int64_t rows, int64_t cols, int32_t format,
                             int32_t swizzled, void *data, uint8_t *scale_inv,
                             void *columnwise_data,
                             uint8_t *columnwise_scale_inv) {
  Checker c("te_rt_quantize_mxfp8");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !wholeBlocks(c, "rows", rows, 32, "MXFP8") ||
      !wholeBlocks(c, "cols", cols, 32, "MXFP8") ||
      !fp8Format(c, format, "format") || !c.flag("swizzled", swizzled) ||
      !c.notNull("x", x))
    return 1;
  if (!blockCopies(c, data, scale_inv, columnwise_data, columnwise_scale_inv))
    return 1;
  return ctx->ops->quantize_mxfp8(c, ctx, dtype, x, rows, cols, format,
                                  swizzled, data, scale_inv, columnwise_data,
                                  columnwise_scale_inv);
}

int32_t te_rt_gemm_mxfp8(te_rt_context *ctx, int32_t out_dtype,
                         int32_t a_format, const void *a,
                         const uint8_t *a_scale_inv, int32_t a_columnwise,
                         int32_t b_format, const void *b,
                         const uint8_t *b_scale_inv, int32_t b_columnwise,
                         int32_t swizzled, const void *bias, void *d, int64_t m,
                         int64_t n, int64_t k, int32_t accumulate) {
  Checker c("te_rt_gemm_mxfp8");
  int64_t mn, mk, nk;
  if (!c.context(ctx) || !c.dtype(out_dtype, "out_dtype") ||
      !fp8Format(c, a_format, "a_format") ||
      !fp8Format(c, b_format, "b_format") ||
      !gemmSizes(c, m, n, k, &mn, &mk, &nk) ||
      !wholeBlocks(c, "k", k, 32, "MXFP8") ||
      !c.flag("a_columnwise", a_columnwise) ||
      !c.flag("b_columnwise", b_columnwise) || !c.flag("swizzled", swizzled) ||
      !c.flag("accumulate", accumulate) || !c.notNull("a", a) ||
      !c.notNull("a_scale_inv", a_scale_inv) || !c.notNull("b", b) ||
      !c.notNull("b_scale_inv", b_scale_inv) || !c.notNull("d", d))
    return 1;
  if (a_format == TE_RT_FP8_E5M2 && b_format == TE_RT_FP8_E5M2)
    return c.fail("E5M2 x E5M2 GEMMs are not supported (one operand must be "
                  "E4M3)"),
           1;
  return ctx->ops->gemm_mxfp8(
      c, ctx, out_dtype, a_format, a, a_scale_inv, a_columnwise, b_format, b,
      b_scale_inv, b_columnwise, swizzled, bias, d, m, n, k, accumulate);
}

//===----------------------------------------------------------------------===//
// NVFP4
//===----------------------------------------------------------------------===//

uint32_t te_rt_nvfp4_random_bits(uint64_t context_seed, uint64_t seed,
                                 int32_t copy, int64_t index) {
  return te::cpu::nvfp4RandomBits(context_seed, seed, copy, index);
}

} // extern "C"

namespace {
/// The checks of an NVFP4 GEMM's arguments (te_rt_gemm_nvfp4 and its
/// row-scaled form: the same arguments, a_amax one float or m of them).
bool nvfp4GemmArgs(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                   const void *a, const uint8_t *a_scale_inv,
                   const float *a_amax, const void *b,
                   const uint8_t *b_scale_inv, const float *b_amax,
                   int32_t swizzled, const void *d, int64_t m, int64_t n,
                   int64_t k, int32_t accumulate) {
  int64_t mn, mk, nk;
  return c.context(ctx) && c.dtype(out_dtype, "out_dtype") &&
         gemmSizes(c, m, n, k, &mn, &mk, &nk) &&
         wholeBlocks(c, "k", k, 16, "NVFP4") && c.flag("swizzled", swizzled) &&
         c.flag("accumulate", accumulate) && c.notNull("a", a) &&
         c.notNull("a_scale_inv", a_scale_inv) && c.notNull("a_amax", a_amax) &&
         c.notNull("b", b) && c.notNull("b_scale_inv", b_scale_inv) &&
         c.notNull("b_amax", b_amax) && c.notNull("d", d);
}

/// te_rt_amax_update and te_rt_amax_update_unused (unused = 0 for the
/// first): the checks, then the backend.
int32_t amaxUpdate(const Checker &c, te_rt_context *ctx, const float *history,
                   const float *scale, const float *amax, int64_t len,
                   int64_t n, float fp8_max, int32_t margin,
                   int32_t most_recent, int64_t unused, float *new_history,
                   float *new_scale, bool fork = false) {
  int64_t count = 0;
  if (!c.context(ctx) || !c.positive("len", len) || !c.nonNegative("n", n) ||
      !c.product("len * n", len, n, 4, &count) ||
      !c.flag("most_recent", most_recent) || !c.notNull("history", history) ||
      !c.notNull("scale", scale) || !c.notNull("amax", amax) ||
      !c.notNull("new_history", new_history) ||
      !c.notNull("new_scale", new_scale))
    return 1;
  if (!(fp8_max > 0.0f) || !std::isfinite(fp8_max))
    return c.fail("fp8_max must be finite and > 0, got " + str(fp8_max)), 1;
  if (margin < 0 || margin > 126)
    return c.fail("margin must be in [0, 126], got " + std::to_string(margin)),
           1;
  // The mask has a bit per slot: a set bit past the last slot is a caller
  // that miscounted its slots, not a slot to skip.
  const uint64_t mask = static_cast<uint64_t>(unused);
  if (mask != 0 && n > 64)
    return c.fail("unused (a mask of 64 slots) must be 0 when n > 64, got "
                  "n = " +
                  std::to_string(n)),
           1;
  if (n < 64 && (mask >> n) != 0)
    return c.fail("unused sets bit " +
                  std::to_string(63 - __builtin_clzll(mask)) +
                  ", not a slot of n = " + std::to_string(n)),
           1;
  return ctx->ops->amax_update(c, ctx, history, scale, amax, len, n, fp8_max,
                               margin, most_recent, unused, new_history,
                               new_scale, fork);
}
} // namespace

extern "C" {

int32_t te_rt_quantize_nvfp4(te_rt_context *ctx, int32_t dtype, const void *x,
                             int64_t rows, int64_t cols, int32_t block_2d,
                             int32_t rht, int32_t stochastic_rounding,
                             uint64_t seed, int32_t swizzled, void *data,
                             uint8_t *scale_inv, float *amax,
                             void *columnwise_data,
                             uint8_t *columnwise_scale_inv,
                             float *columnwise_amax) {
  Checker c("te_rt_quantize_nvfp4");
  if (!nvfp4Input(c, ctx, dtype, rows, cols) || !c.flag("block_2d", block_2d) ||
      !c.flag("rht", rht) ||
      !c.flag("stochastic_rounding", stochastic_rounding) ||
      !c.flag("swizzled", swizzled) || !c.notNull("x", x))
    return 1;
  if (!nvfp4Copies(c, data, scale_inv, amax, columnwise_data,
                   columnwise_scale_inv, columnwise_amax))
    return 1;
  if (rht && !columnwise_data)
    return c.fail("rht needs the columnwise copy (columnwise_data is NULL): "
                  "the transform applies to the columnwise data only"),
           1;
  if (rht && block_2d)
    return c.fail("rht and block_2d cannot be combined (the transform is "
                  "for 1-D blocks, TE's wgrad operands; 16x16 blocks are "
                  "for weights)"),
           1;
  if (stochastic_rounding && block_2d)
    return c.fail("stochastic_rounding and block_2d cannot be combined "
                  "(16x16 tiles are for weights, whose two copies must hold "
                  "the same values; TE rounds gradients stochastically)"),
           1;
  return ctx->ops->quantize_nvfp4(c, ctx, dtype, x, rows, cols, block_2d, rht,
                                  stochastic_rounding, seed, swizzled, data,
                                  scale_inv, amax, columnwise_data,
                                  columnwise_scale_inv, columnwise_amax);
}

int32_t te_rt_quantize_nvfp4_4over6(te_rt_context *ctx, int32_t dtype,
                                    const void *x, int64_t rows, int64_t cols,
                                    int32_t block_2d, int32_t err_mode,
                                    int32_t e4m3_max, int32_t swizzled,
                                    void *data, uint8_t *scale_inv, float *amax,
                                    void *columnwise_data,
                                    uint8_t *columnwise_scale_inv,
                                    float *columnwise_amax) {
  Checker c("te_rt_quantize_nvfp4_4over6");
  if (!nvfp4Input(c, ctx, dtype, rows, cols) || !c.flag("block_2d", block_2d) ||
      !c.flag("swizzled", swizzled) || !c.notNull("x", x))
    return 1;
  if (err_mode != 0 && err_mode != 1)
    return c.fail("err_mode must be 0 (MAE) or 1 (MSE), got " +
                  std::to_string(err_mode)),
           1;
  if (e4m3_max != 256 && e4m3_max != 448)
    return c.fail("e4m3_max must be 256 or 448, got " +
                  std::to_string(e4m3_max)),
           1;
  if (!nvfp4Copies(c, data, scale_inv, amax, columnwise_data,
                   columnwise_scale_inv, columnwise_amax))
    return 1;
  return ctx->ops->quantize_nvfp4_4over6(c, ctx, dtype, x, rows, cols, block_2d,
                                         err_mode, e4m3_max, swizzled, data,
                                         scale_inv, amax, columnwise_data,
                                         columnwise_scale_inv, columnwise_amax);
}

int32_t te_rt_gemm_nvfp4(te_rt_context *ctx, int32_t out_dtype, const void *a,
                         const uint8_t *a_scale_inv, const float *a_amax,
                         const void *b, const uint8_t *b_scale_inv,
                         const float *b_amax, int32_t swizzled,
                         const void *bias, void *d, int64_t m, int64_t n,
                         int64_t k, int32_t accumulate) {
  Checker c("te_rt_gemm_nvfp4");
  if (!nvfp4GemmArgs(c, ctx, out_dtype, a, a_scale_inv, a_amax, b, b_scale_inv,
                     b_amax, swizzled, d, m, n, k, accumulate))
    return 1;
  return ctx->ops->gemm_nvfp4(c, ctx, out_dtype, a, a_scale_inv, a_amax, b,
                              b_scale_inv, b_amax, swizzled, bias, d, m, n, k,
                              accumulate);
}

int32_t te_rt_quantize_nvfp4_row_scaled(te_rt_context *ctx, int32_t dtype,
                                        const void *x, int64_t rows,
                                        int64_t cols, int32_t swizzled,
                                        void *data, uint8_t *scale_inv,
                                        float *amax) {
  Checker c("te_rt_quantize_nvfp4_row_scaled");
  if (!nvfp4Input(c, ctx, dtype, rows, cols) ||
      !c.flag("swizzled", swizzled) || !c.notNull("x", x) ||
      !c.notNull("data", data) || !c.notNull("scale_inv", scale_inv) ||
      !c.notNull("amax", amax))
    return 1;
  return ctx->ops->quantize_nvfp4_row_scaled(c, ctx, dtype, x, rows, cols,
                                             swizzled, data, scale_inv, amax);
}

int32_t te_rt_gemm_nvfp4_row_scaled(te_rt_context *ctx, int32_t out_dtype,
                                    const void *a, const uint8_t *a_scale_inv,
                                    const float *a_amax, const void *b,
                                    const uint8_t *b_scale_inv,
                                    const float *b_amax, int32_t swizzled,
                                    const void *bias, void *d, int64_t m,
                                    int64_t n, int64_t k, int32_t accumulate) {
  Checker c("te_rt_gemm_nvfp4_row_scaled");
  if (!nvfp4GemmArgs(c, ctx, out_dtype, a, a_scale_inv, a_amax, b, b_scale_inv,
                     b_amax, swizzled, d, m, n, k, accumulate))
    return 1;
  return ctx->ops->gemm_nvfp4_row_scaled(c, ctx, out_dtype, a, a_scale_inv,
                                         a_amax, b, b_scale_inv, b_amax,
                                         swizzled, bias, d, m, n, k,
                                         accumulate);
}

int32_t te_rt_amax_update(te_rt_context *ctx, const float *history,
                          const float *scale, const float *amax, int64_t len,
                          int64_t n, float fp8_max, int32_t margin,
                          int32_t most_recent, float *new_history,
                          float *new_scale) {
  return amaxUpdate(Checker("te_rt_amax_update"), ctx, history, scale, amax,
                    len, n, fp8_max, margin, most_recent, 0, new_history,
                    new_scale);
}

int32_t te_rt_amax_update_unused(te_rt_context *ctx, const float *history,
                                 const float *scale, const float *amax,
                                 int64_t len, int64_t n, float fp8_max,
                                 int32_t margin, int32_t most_recent,
                                 int64_t unused, float *new_history,
                                 float *new_scale) {
  return amaxUpdate(Checker("te_rt_amax_update_unused"), ctx, history, scale,
                    amax, len, n, fp8_max, margin, most_recent, unused,
                    new_history, new_scale);
}

int32_t te_rt_amax_update_fork(te_rt_context *ctx, const float *history,
                               const float *scale, const float *amax,
                               int64_t len, int64_t n, float fp8_max,
                               int32_t margin, int32_t most_recent,
                               int64_t unused, float *new_history,
                               float *new_scale) {
  return amaxUpdate(Checker("te_rt_amax_update_fork"), ctx, history, scale,
                    amax, len, n, fp8_max, margin, most_recent, unused,
                    new_history, new_scale, /*fork=*/true);
}

} // extern "C"
