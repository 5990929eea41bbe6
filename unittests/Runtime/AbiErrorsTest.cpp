//===- AbiErrorsTest.cpp - runtime ABI: error messages ----------*- C++ -*-===//
//
// The te_rt_* calls through the C ABI (split from AbiTest.cpp by family;
// the fixture is AbiFixture.h): the error messages of the other calls.
//
//===----------------------------------------------------------------------===//

#include "AbiFixture.h"

using namespace te::test;

namespace {

//===----------------------------------------------------------------------===//
// Error messages of the other calls
//===----------------------------------------------------------------------===//

TEST_F(Abi, ErrorMessagesNameTheCallAndTheArgument) {
  float b[16] = {}, s[4] = {};
  float *p = b;
  // The examples of the contract.
  EXPECT_FAILS_WITH(
      te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, nullptr, p, nullptr, p, 2, 2, 2),
      "te_rt_gemm_fprop: x is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p,
                                   p, p, 1e-5, 0, 2, 2, p, nullptr, s),
                    "te_rt_norm_fwd: beta must be NULL for RMSNorm");
  EXPECT_FAILS_WITH(
      te_rt_act_fwd(ctx, 42, TE_RT_DTYPE_F32, p, p, 1, 2, 0, 0, 0, nullptr),
      "te_rt_act_fwd: unknown activation 42");
  EXPECT_FAILS_WITH(
      te_rt_act_fwd(ctx, -1, TE_RT_DTYPE_F32, p, p, 1, 2, 0, 0, 0, nullptr),
      "te_rt_act_fwd: unknown activation -1");
  EXPECT_FAILS_WITH(
      te_rt_act_fwd(ctx, TE_RT_ACT_SWIGLU, TE_RT_DTYPE_F32, p, p, 1, 7, 0, 0, 0,
                    nullptr),
      "te_rt_act_fwd: gated activation swiglu needs an even number of "
      "columns, got 7");
  EXPECT_FAILS_WITH(
      te_rt_act_bwd(ctx, TE_RT_ACT_CLAMPED_SWIGLU, TE_RT_DTYPE_F32, p, p, p, 1,
                    3, 7, 1.702f, 1, nullptr),
      "te_rt_act_bwd: gated activation clamped_swiglu needs an even number "
      "of columns, got 3");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, p, 1e-5, 0, -1, 2, p, s, s),
                    "te_rt_norm_fwd: rows must be >= 0, got -1");
  EXPECT_FAILS_WITH(te_rt_add(ctx, 3, p, p, p, 2),
                    "te_rt_add: unknown dtype 3 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(
      te_rt_gemm_dgrad(nullptr, TE_RT_DTYPE_F32, p, p, p, 2, 2, 2),
      "te_rt_gemm_dgrad: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_dbias_quantize_fp8(nullptr, TE_RT_DTYPE_F32, p, 2, 2,
                                             0, nullptr, 0, p, nullptr, s,
                                             nullptr, p),
                    "te_rt_dbias_quantize_fp8: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_dbias_quantize_fp8(ctx, TE_RT_DTYPE_F32, p, 2, -3, 0,
                                             nullptr, 0, p, nullptr, s, nullptr,
                                             p),
                    "te_rt_dbias_quantize_fp8: cols must be >= 0, got -3");

  // Normalization.
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, 2, TE_RT_DTYPE_F32, p, p, nullptr, 1e-5,
                                   0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: unknown norm kind 2 (0 layernorm, 1 "
                    "rmsnorm)");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, 7, p, p, nullptr,
                                   1e-5, 0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: unknown dtype 7 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, nullptr, 1e-5, 0, 2, 0, p, s, s),
                    "te_rt_norm_fwd: cols must be > 0, got 0");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, nullptr, NAN, 0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: eps must be finite and >= 0, got nan");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, nullptr, -0.5, 0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: eps must be finite and >= 0, got -0.5");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, nullptr, 1e-5, 2, 2, 2, p, s, s),
                    "te_rt_norm_fwd: zero_centered must be 0 or 1, got 2");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, nullptr, nullptr, 1e-5, 0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: gamma is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, nullptr, 1e-5, 0, 2, 2, p, nullptr, s),
                    "te_rt_norm_fwd: mu is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p,
                                   p, nullptr, 1e-5, 0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: mu must be NULL for RMSNorm");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p,
                                   p, nullptr, 1e-5, 0, 2, 2, p, nullptr,
                                   nullptr),
                    "te_rt_norm_fwd: rsigma is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p,
                                   p, nullptr, 1e-5, 0, int64_t(1) << 40,
                                   int64_t(1) << 40, p, nullptr, s),
                    "te_rt_norm_fwd: rows * cols = 1099511627776 * "
                    "1099511627776 is too large");
  EXPECT_FAILS_WITH(te_rt_norm_bwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, nullptr, s, p, 0, 2, 2, p, p, p),
                    "te_rt_norm_bwd: mu is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_bwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, s, s, p, 0, 2, 2, p, nullptr, p),
                    "te_rt_norm_bwd: dgamma is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_bwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p,
                                   p, nullptr, s, p, 0, 2, 2, p, p, p),
                    "te_rt_norm_bwd: dbeta must be NULL for RMSNorm");
  EXPECT_FAILS_WITH(te_rt_norm_bwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32,
                                   nullptr, p, nullptr, s, p, 0, 2, 2, p, p,
                                   nullptr),
                    "te_rt_norm_bwd: dz is NULL");

  // GEMMs.
  EXPECT_FAILS_WITH(
      te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, p, p, nullptr, p, -2, 2, 2),
      "te_rt_gemm_fprop: m must be >= 0, got -2");
  EXPECT_FAILS_WITH(
      te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, p, p, nullptr, nullptr, 2, 2, 2),
      "te_rt_gemm_fprop: y is NULL");
  EXPECT_FAILS_WITH(
      te_rt_gemm_dgrad(ctx, TE_RT_DTYPE_F32, p, nullptr, p, 2, 2, 2),
      "te_rt_gemm_dgrad: w is NULL");
  EXPECT_FAILS_WITH(te_rt_gemm_dgrad(ctx, TE_RT_DTYPE_F32, p, p, p, 2, 2, -3),
                    "te_rt_gemm_dgrad: k must be >= 0, got -3");
  EXPECT_FAILS_WITH(
      te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_F32, p, p, p, nullptr, 2, 2, 2, 2),
      "te_rt_gemm_wgrad: accumulate must be 0 or 1, got 2");
  EXPECT_FAILS_WITH(
      te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_F32, p, p, nullptr, p, 2, 2, 2, 0),
      "te_rt_gemm_wgrad: dw is NULL");
  EXPECT_FAILS_WITH(
      te_rt_gemm_wgrad(ctx, -1, p, p, p, p, 2, 2, 2, 0),
      "te_rt_gemm_wgrad: unknown dtype -1 (0 f32, 1 bf16, 2 f16)");

  // Activations, bias gradient, elementwise.
  EXPECT_FAILS_WITH(te_rt_act_fwd(ctx, TE_RT_ACT_CLAMPED_SWIGLU,
                                  TE_RT_DTYPE_F32, p, p, 1, 2, -1, 1.702f, 1,
                                  nullptr),
                    "te_rt_act_fwd: limit must be >= 0 for clamped_swiglu, got "
                    "-1");
  EXPECT_FAILS_WITH(te_rt_act_bwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, p,
                                  nullptr, p, 1, 2, 0, 0, 0, nullptr),
                    "te_rt_act_bwd: x is NULL");
  EXPECT_FAILS_WITH(te_rt_act_bwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, p, p, p,
                                  1, -4, 0, 0, 0, nullptr),
                    "te_rt_act_bwd: cols must be >= 0, got -4");
  EXPECT_FAILS_WITH(te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, p, nullptr, 2, 2),
                    "te_rt_bias_grad: dbias is NULL");
  EXPECT_FAILS_WITH(te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, p, p, -5, 2),
                    "te_rt_bias_grad: rows must be >= 0, got -5");
  EXPECT_FAILS_WITH(te_rt_add(ctx, TE_RT_DTYPE_F32, p, nullptr, p, 2),
                    "te_rt_add: b is NULL");
  EXPECT_FAILS_WITH(te_rt_add(ctx, TE_RT_DTYPE_F32, p, p, p, -1),
                    "te_rt_add: n must be >= 0, got -1");
  EXPECT_FAILS_WITH(te_rt_add(ctx, TE_RT_DTYPE_F32, p, p, p,
                              std::numeric_limits<int64_t>::max()),
                    "te_rt_add: n = 9223372036854775807 is too large");
  EXPECT_FAILS_WITH(te_rt_cast(ctx, 5, TE_RT_DTYPE_F32, p, p, 2),
                    "te_rt_cast: unknown src_dtype 5 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(te_rt_cast(ctx, TE_RT_DTYPE_F32, 5, p, p, 2),
                    "te_rt_cast: unknown dst_dtype 5 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(
      te_rt_cast(ctx, TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, p, nullptr, 2),
      "te_rt_cast: dst is NULL");
  EXPECT_FAILS_WITH(te_rt_transpose(ctx, TE_RT_DTYPE_F32, p, p + 1, 2, 2),
                    "te_rt_transpose: dst and src overlap");
  EXPECT_FAILS_WITH(te_rt_transpose(ctx, TE_RT_DTYPE_F32, nullptr, p, 2, 2),
                    "te_rt_transpose: src is NULL");
  EXPECT_FAILS_WITH(te_rt_transpose(nullptr, TE_RT_DTYPE_F32, p, p, 2, 2),
                    "te_rt_transpose: ctx is NULL");
  auto *bytes = reinterpret_cast<uint8_t *>(p);
  EXPECT_FAILS_WITH(te_rt_transpose_bytes(ctx, bytes, bytes + 3, 2, 2),
                    "te_rt_transpose_bytes: dst and src overlap");
  EXPECT_FAILS_WITH(te_rt_transpose_bytes(ctx, nullptr, p, 2, 2),
                    "te_rt_transpose_bytes: src is NULL");
  EXPECT_FAILS_WITH(te_rt_transpose_bytes(ctx, p, nullptr, 2, 2),
                    "te_rt_transpose_bytes: dst is NULL");
  EXPECT_FAILS_WITH(te_rt_transpose_bytes(nullptr, p, p, 2, 2),
                    "te_rt_transpose_bytes: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_transpose_bytes(ctx, p, bytes + 64, -1, 2),
                    "te_rt_transpose_bytes: rows must be >= 0, got -1");
  // te_rt_add_columnwise_fp8: its pointers, sizes and overlaps named.
  float sc = 1, so = 0;
  EXPECT_FAILS_WITH(
      te_rt_add_columnwise_fp8(ctx, bytes, &sc, 2, 2, bytes + 3, &so),
      "te_rt_add_columnwise_fp8: transpose and data overlap");
  EXPECT_FAILS_WITH(
      te_rt_add_columnwise_fp8(ctx, bytes, &sc, 2, 2, bytes + 8, &sc),
      "te_rt_add_columnwise_fp8: scale_inv_out overlaps scale_inv, data or "
      "transpose");
  EXPECT_FAILS_WITH(te_rt_add_columnwise_fp8(ctx, bytes, &sc, 2, 2, bytes + 8,
                                             reinterpret_cast<float *>(bytes)),
                    "te_rt_add_columnwise_fp8: scale_inv_out overlaps "
                    "scale_inv, data or transpose");
  EXPECT_FAILS_WITH(
      te_rt_add_columnwise_fp8(ctx, bytes, nullptr, 2, 2, bytes + 8, &so),
      "te_rt_add_columnwise_fp8: scale_inv is NULL");
  EXPECT_FAILS_WITH(
      te_rt_add_columnwise_fp8(ctx, bytes, &sc, 2, 2, nullptr, &so),
      "te_rt_add_columnwise_fp8: transpose is NULL");
  EXPECT_FAILS_WITH(
      te_rt_add_columnwise_fp8(ctx, bytes, &sc, 2, 2, bytes + 8, nullptr),
      "te_rt_add_columnwise_fp8: scale_inv_out is NULL");
  EXPECT_FAILS_WITH(
      te_rt_add_columnwise_fp8(ctx, bytes, &sc, 2, -3, bytes + 8, &so),
      "te_rt_add_columnwise_fp8: cols must be >= 0, got -3");
  EXPECT_FAILS_WITH(
      te_rt_add_columnwise_fp8(nullptr, bytes, &sc, 2, 2, bytes + 8, &so),
      "te_rt_add_columnwise_fp8: ctx is NULL");
}

TEST_F(Abi, FailedCallsLeaveOutputsAlone) {
  float x[4] = {1, 2, 3, 4}, y[4] = {9, 9, 9, 9};
  EXPECT_NE(te_rt_act_fwd(ctx, TE_RT_ACT_SWIGLU, TE_RT_DTYPE_F32, x, y, 1, 3, 0,
                          0, 0, nullptr),
            0);
  expectNear(y, {9, 9, 9, 9}, 0, "y");
}

} // namespace
