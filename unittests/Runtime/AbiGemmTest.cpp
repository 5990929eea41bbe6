//===- AbiGemmTest.cpp - runtime ABI: GEMMs ---------------------*- C++ -*-===//
//
// The te_rt_* calls through the C ABI (split from AbiTest.cpp by family;
// the fixture is AbiFixture.h): GEMMs and reduced-precision rounding.
//
//===----------------------------------------------------------------------===//

#include "AbiFixture.h"

using namespace te::test;

namespace {

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

// x [2,2] = [[1,2],[3,4]] (m = k = 2), w [2,2] = [[5,6],[7,8]] (n = 2),
// dy [2,2] = [[1,0],[2,1]].
const float kX[4] = {1, 2, 3, 4}, kW[4] = {5, 6, 7, 8}, kDy[4] = {1, 0, 2, 1};

TEST_F(Abi, GemmFprop2x2x2) {
  const float bias[2] = {1, -1};
  float y[4];
  ASSERT_EQ(te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, kX, kW, bias, y, 2, 2, 2),
            0);
  expectNear(y, {18, 22, 40, 52}, 0, "y");
  ASSERT_EQ(te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, kX, kW, nullptr, y, 2, 2, 2),
            0);
  expectNear(y, {17, 23, 39, 53}, 0, "y (no bias)");
}

TEST_F(Abi, GemmDgrad2x2x2) {
  float dx[4];
  ASSERT_EQ(te_rt_gemm_dgrad(ctx, TE_RT_DTYPE_F32, kDy, kW, dx, 2, 2, 2), 0);
  expectNear(dx, {5, 6, 17, 20}, 0, "dx");
}

TEST_F(Abi, GemmWgrad2x2x2) {
  float dw[4], dbias[2];
  ASSERT_EQ(
      te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_F32, kDy, kX, dw, dbias, 2, 2, 2, 0),
      0);
  expectNear(dw, {7, 10, 3, 4}, 0, "dw");
  expectNear(dbias, {3, 1}, 0, "dbias");
  float acc[4] = {1, 1, 1, 1};
  ASSERT_EQ(
      te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_F32, kDy, kX, acc, nullptr, 2, 2, 2, 1),
      0);
  expectNear(acc, {8, 11, 4, 5}, 0, "dw (accumulate)");
}

TEST_F(Abi, GemmLayoutsNonSquare) {
  // m = 3, n = 2, k = 4 against naive loops, so swapped extents show.
  const int64_t m = 3, n = 2, k = 4;
  auto x = exactRandom(m * k, 5), w = exactRandom(n * k, 6),
       dy = exactRandom(m * n, 7);
  std::vector<float> y(m * n), dx(m * k), dw(n * k), db(n);
  ASSERT_EQ(te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, x.data(), w.data(), nullptr,
                             y.data(), m, n, k),
            0);
  ASSERT_EQ(te_rt_gemm_dgrad(ctx, TE_RT_DTYPE_F32, dy.data(), w.data(),
                             dx.data(), m, n, k),
            0);
  ASSERT_EQ(te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_F32, dy.data(), x.data(),
                             dw.data(), db.data(), m, n, k, 0),
            0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t p = 0; p < k; ++p)
        ref += double(x[i * k + p]) * w[j * k + p];
      EXPECT_NEAR(y[i * n + j], ref, 1e-6);
    }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      double ref = 0;
      for (int64_t j = 0; j < n; ++j)
        ref += double(dy[i * n + j]) * w[j * k + p];
      EXPECT_NEAR(dx[i * k + p], ref, 1e-6);
    }
  for (int64_t j = 0; j < n; ++j) {
    double refB = 0;
    for (int64_t i = 0; i < m; ++i)
      refB += dy[i * n + j];
    EXPECT_NEAR(db[j], refB, 1e-6);
    for (int64_t p = 0; p < k; ++p) {
      double ref = 0;
      for (int64_t i = 0; i < m; ++i)
        ref += double(dy[i * n + j]) * x[i * k + p];
      EXPECT_NEAR(dw[j * k + p], ref, 1e-6);
    }
  }
}

TEST_F(Abi, GemmEmptyExtents) {
  // k = 0: y = bias; m = 0: nothing to write.
  const float bias[2] = {3, 4};
  float y[2] = {-1, -1};
  ASSERT_EQ(te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, kX, kW, bias, y, 1, 2, 0),
            0);
  expectNear(y, {3, 4}, 0, "y");
  float dw[4] = {9, 9, 9, 9}, db[2] = {9, 9};
  ASSERT_EQ(te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_F32, kDy, kX, dw, db, 0, 2, 2, 0),
            0);
  expectNear(dw, {0, 0, 0, 0}, 0, "dw");
  expectNear(db, {0, 0}, 0, "dbias");
}

/// GELU (tanh approximation) and its derivative in double, independent of
/// the runtime's code.
double geluRef(double v) {
  const double c = std::sqrt(2.0 / M_PI);
  return 0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v)));
}
double dgeluRef(double v) {
  const double c = std::sqrt(2.0 / M_PI);
  double u = c * (v + 0.044715 * v * v * v), t = std::tanh(u);
  return 0.5 * (1.0 + t) +
         0.5 * v * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * v * v);
}

TEST_F(Abi, GemmActEpilogues) {
  // m = 5, n = 3, k = 4: y = gelu(x . w^T + bias), aux the pre-activation;
  // dx = (dy . w) * gelu'(aux).
  const int64_t m = 5, n = 3, k = 4;
  auto x = exactRandom(m * k, 21), w = exactRandom(n * k, 22),
       bias = exactRandom(n, 23), dy = exactRandom(m * n, 24),
       pre = exactRandom(m * k, 25);
  for (float &v : x)
    v *= 8; // pre-activations of order 1, where GELU bends
  std::vector<float> y(m * n), aux(m * n), yNoAux(m * n), dx(m * k);
  ASSERT_EQ(te_rt_gemm_fprop_act(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32,
                                 x.data(), w.data(), bias.data(), y.data(),
                                 aux.data(), m, n, k),
            0)
      << lastError();
  ASSERT_EQ(te_rt_gemm_fprop_act(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32,
                                 x.data(), w.data(), bias.data(),
                                 yNoAux.data(), nullptr, m, n, k),
            0)
      << lastError();
  EXPECT_EQ(yNoAux, y);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double p = bias[j];
      for (int64_t q = 0; q < k; ++q)
        p += double(x[i * k + q]) * w[j * k + q];
      EXPECT_NEAR(aux[i * n + j], p, 1e-6) << "aux " << i << "," << j;
      EXPECT_NEAR(y[i * n + j], geluRef(p), 1e-6) << "y " << i << "," << j;
    }
  ASSERT_EQ(te_rt_gemm_dgrad_dact(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32,
                                  dy.data(), w.data(), pre.data(), dx.data(),
                                  m, n, k),
            0)
      << lastError();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t q = 0; q < k; ++q) {
      double g = 0;
      for (int64_t j = 0; j < n; ++j)
        g += double(dy[i * n + j]) * w[j * k + q];
      EXPECT_NEAR(dx[i * k + q], g * dgeluRef(pre[i * k + q]), 1e-6)
          << "dx " << i << "," << q;
    }
}

TEST_F(Abi, GemmActEpilogueErrors) {
  float p[4] = {};
  EXPECT_FAILS_WITH(te_rt_gemm_fprop_act(ctx, TE_RT_ACT_RELU, TE_RT_DTYPE_F32,
                                         p, p, nullptr, p, p, 2, 2, 2),
                    "te_rt_gemm_fprop_act: act must be TE_RT_ACT_GELU (0), "
                    "the GEMM epilogue's only activation, got 5 (relu)");
  EXPECT_FAILS_WITH(te_rt_gemm_dgrad_dact(ctx, 99, TE_RT_DTYPE_F32, p, p, p, p,
                                          2, 2, 2),
                    "te_rt_gemm_dgrad_dact: act must be TE_RT_ACT_GELU (0), "
                    "the GEMM epilogue's only activation, got 99");
  EXPECT_FAILS_WITH(te_rt_gemm_dgrad_dact(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32,
                                          p, p, nullptr, p, 2, 2, 2),
                    "te_rt_gemm_dgrad_dact: aux is NULL");
  EXPECT_FAILS_WITH(te_rt_gemm_fprop_act(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32,
                                         p, p, nullptr, nullptr, p, 2, 2, 2),
                    "te_rt_gemm_fprop_act: y is NULL");
  EXPECT_FAILS_WITH(te_rt_gemm_fprop_act(nullptr, TE_RT_ACT_GELU,
                                         TE_RT_DTYPE_F32, p, p, nullptr, p, p,
                                         2, 2, 2),
                    "te_rt_gemm_fprop_act: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_gemm_dgrad_dact(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32,
                                          p, p, p, p, 2, -1, 2),
                    "te_rt_gemm_dgrad_dact: n must be >= 0, got -1");
}

TEST_F(Abi, CheckMultiple) {
  const char *what = "ln_mlp_fwd: recipe fp8-block needs d0 % 128 == 0";
  EXPECT_EQ(te_rt_check_multiple(ctx, 256, 128, what), 0);
  EXPECT_EQ(te_rt_check_multiple(ctx, 0, 128, what), 0);
  EXPECT_FAILS_WITH(te_rt_check_multiple(ctx, 200, 128, what),
                    "ln_mlp_fwd: recipe fp8-block needs d0 % 128 == 0, got "
                    "200");
  EXPECT_FAILS_WITH(te_rt_check_multiple(ctx, 8, 0, what),
                    "te_rt_check_multiple: multiple must be > 0, got 0");
  EXPECT_FAILS_WITH(te_rt_check_multiple(ctx, 8, 8, nullptr),
                    "te_rt_check_multiple: what is NULL");
}

TEST_F(Abi, WgradAccumulateRoundsOnce) {
  // dw = 1 + (2^-8 + 2^-20): rounding the product to bf16 first would land
  // on the tie 1 + 2^-8 and go to 1; summing in fp32 gives 1 + 2^-7.
  const uint16_t dy[2] = {floatToBF16(0x1p-8f), floatToBF16(0x1p-20f)};
  const uint16_t x[2] = {floatToBF16(1.0f), floatToBF16(1.0f)};
  uint16_t dw[1] = {floatToBF16(1.0f)}, db[1];
  ASSERT_EQ(te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_BF16, dy, x, dw, db, 2, 1, 1, 1),
            0);
  EXPECT_EQ(dw[0], 0x3f81);
  EXPECT_EQ(db[0], floatToBF16(0x1p-8f + 0x1p-20f)); // dbias is not summed in
}

TEST_F(Abi, WgradFp32KeepsTheProductsBits) {
  // main_grad (fp32) += dy^T . x with bf16 operands: the product
  // 2^-8 + 2^-20 is added to 1 in fp32, not rounded to bf16 first (which
  // would lose the 2^-20), and without accumulate it is stored whole.
  const uint16_t dy[2] = {floatToBF16(0x1p-8f), floatToBF16(0x1p-20f)};
  const uint16_t x[2] = {floatToBF16(1.0f), floatToBF16(1.0f)};
  float main[1] = {1.0f};
  ASSERT_EQ(
      te_rt_gemm_wgrad_fp32(ctx, TE_RT_DTYPE_BF16, dy, x, main, 2, 1, 1, 1), 0);
  EXPECT_EQ(main[0], 1.0f + 0x1p-8f + 0x1p-20f);
  ASSERT_EQ(
      te_rt_gemm_wgrad_fp32(ctx, TE_RT_DTYPE_BF16, dy, x, main, 2, 1, 1, 0), 0);
  EXPECT_EQ(main[0], 0x1p-8f + 0x1p-20f);
  // No tokens: accumulate leaves main_grad as it was; overwrite zeroes it.
  float two[2] = {3.0f, -4.0f};
  ASSERT_EQ(
      te_rt_gemm_wgrad_fp32(ctx, TE_RT_DTYPE_BF16, dy, x, two, 0, 2, 1, 1), 0);
  EXPECT_EQ(two[0], 3.0f);
  EXPECT_EQ(two[1], -4.0f);
  ASSERT_EQ(
      te_rt_gemm_wgrad_fp32(ctx, TE_RT_DTYPE_BF16, dy, x, two, 0, 2, 1, 0), 0);
  EXPECT_EQ(two[0], 0.0f);
  EXPECT_EQ(two[1], 0.0f);
  EXPECT_FAILS_WITH(
      te_rt_gemm_wgrad_fp32(ctx, TE_RT_DTYPE_BF16, dy, x, nullptr, 2, 1, 1, 1),
      "te_rt_gemm_wgrad_fp32: dw is NULL");
  EXPECT_FAILS_WITH(
      te_rt_gemm_wgrad_fp32(ctx, TE_RT_DTYPE_BF16, dy, x, main, 2, 1, 1, 2),
      "te_rt_gemm_wgrad_fp32: accumulate must be 0 or 1, got 2");
}

/// Runs `call(dtype, inputs, outputs)` in f32 and in `t` on the same
/// (exactly representable) inputs and expects every 16-bit output to be the
/// f32 output rounded once.
template <typename Call>
void expectRoundedOnce(DType t, const std::vector<std::vector<float>> &inputs,
                       const std::vector<size_t> &outputSizes, Call call,
                       const char *what) {
  auto narrow = [&](const std::vector<float> &v) {
    return t == DType::BF16 ? toBF16(v) : toF16(v);
  };
  std::vector<const void *> in32, in16;
  std::vector<std::vector<uint16_t>> inputs16;
  for (const auto &v : inputs)
    inputs16.push_back(narrow(v));
  for (size_t i = 0; i < inputs.size(); ++i) {
    in32.push_back(inputs[i].data());
    in16.push_back(inputs16[i].data());
    // The inputs are exact in the 16-bit type.
    std::vector<float> back =
        t == DType::BF16 ? fromBF16(inputs16[i]) : fromF16(inputs16[i]);
    ASSERT_EQ(back, inputs[i]) << what << " input " << i;
  }
  std::vector<std::vector<float>> out32;
  std::vector<std::vector<uint16_t>> out16;
  std::vector<void *> p32, p16;
  for (size_t n : outputSizes) {
    out32.emplace_back(n, 0.0f);
    out16.emplace_back(n, uint16_t(0));
  }
  for (size_t i = 0; i < outputSizes.size(); ++i) {
    p32.push_back(out32[i].data());
    p16.push_back(out16[i].data());
  }
  ASSERT_EQ(call(TE_RT_DTYPE_F32, in32, p32), 0) << what << lastError();
  ASSERT_EQ(call(static_cast<int32_t>(t), in16, p16), 0) << what << lastError();
  for (size_t o = 0; o < outputSizes.size(); ++o) {
    std::vector<uint16_t> want = narrow(out32[o]);
    size_t mismatches = 0;
    for (size_t i = 0; i < want.size(); ++i)
      mismatches += want[i] != out16[o][i];
    EXPECT_EQ(mismatches, 0u) << what << " output " << o;
  }
}

TEST_F(Abi, ReducedPrecisionIsTheF32ResultRoundedOnce) {
  const int64_t m = 70, n = 50, k = 40, rows = 300, cols = 64;
  auto x = exactRandom(m * k, 11), w = exactRandom(n * k, 12),
       bias = exactRandom(n, 13), dy = exactRandom(m * n, 14),
       dwOld = exactRandom(n * k, 15);
  auto nx = exactRandom(rows * cols, 16), ndz = exactRandom(rows * cols, 17),
       gamma = exactRandom(cols, 18), beta = exactRandom(cols, 19);
  for (float &v : nx)
    v *= 4; // spread, so rsigma stays moderate
  std::vector<float> mu(rows), rs(rows);
  ASSERT_EQ(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                           nx.data(), gamma.data(), beta.data(), 1e-5, 0, rows,
                           cols, std::vector<float>(rows * cols).data(),
                           mu.data(), rs.data()),
            0);
  te_rt_context *c = ctx;
  for (DType t : {DType::BF16, DType::F16}) {
    expectRoundedOnce(
        t, {x, w, bias}, {size_t(m * n)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_gemm_fprop(c, d, in[0], in[1], in[2], out[0], m, n, k);
        },
        "fprop");
    expectRoundedOnce(
        t, {dy, w}, {size_t(m * k)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_gemm_dgrad(c, d, in[0], in[1], out[0], m, n, k);
        },
        "dgrad");
    // The activation epilogues round once: y and aux from the fp32
    // pre-activation, dx from the fp32 product times act'(aux).
    expectRoundedOnce(
        t, {x, w, bias}, {size_t(m * n), size_t(m * n)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_gemm_fprop_act(c, TE_RT_ACT_GELU, d, in[0], in[1],
                                      in[2], out[0], out[1], m, n, k);
        },
        "fprop_act");
    expectRoundedOnce(
        t, {dy, w, x}, {size_t(m * k)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_gemm_dgrad_dact(c, TE_RT_ACT_GELU, d, in[0], in[1],
                                       in[2], out[0], m, n, k);
        },
        "dgrad_dact");
    expectRoundedOnce(
        t, {dy, x, dwOld}, {size_t(n * k), size_t(n)},
        [&](int32_t d, auto &in, auto &out) {
          // accumulate into a copy of dwOld in the call's dtype
          size_t bytes = n * k * (d == TE_RT_DTYPE_F32 ? 4 : 2);
          std::memcpy(out[0], in[2], bytes);
          return te_rt_gemm_wgrad(c, d, in[0], in[1], out[0], out[1], m, n, k,
                                  1);
        },
        "wgrad accumulate");
    expectRoundedOnce(
        t, {nx, gamma, beta}, {size_t(rows * cols)},
        [&](int32_t d, auto &in, auto &out) {
          std::vector<float> mu2(rows), rs2(rows);
          int32_t rc = te_rt_norm_fwd(c, TE_RT_NORM_LAYERNORM, d, in[0], in[1],
                                      in[2], 1e-5, 0, rows, cols, out[0],
                                      mu2.data(), rs2.data());
          // statistics are fp32 and identical for every dtype
          EXPECT_EQ(mu2, mu);
          EXPECT_EQ(rs2, rs);
          return rc;
        },
        "norm_fwd");
    expectRoundedOnce(
        t, {ndz, nx, gamma}, {size_t(rows * cols), size_t(cols), size_t(cols)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_norm_bwd(c, TE_RT_NORM_LAYERNORM, d, in[0], in[1],
                                mu.data(), rs.data(), in[2], 0, rows, cols,
                                out[0], out[1], out[2]);
        },
        "norm_bwd");
    for (int32_t act : {TE_RT_ACT_GELU, TE_RT_ACT_SWIGLU, TE_RT_ACT_GELU_ERF,
                        TE_RT_ACT_CLAMPED_SWIGLU}) {
      bool gated = act == TE_RT_ACT_SWIGLU || act == TE_RT_ACT_CLAMPED_SWIGLU;
      int64_t yCols = gated ? cols / 2 : cols;
      std::vector<float> ady(nx.begin(), nx.begin() + rows * yCols);
      expectRoundedOnce(
          t, {nx}, {size_t(rows * yCols)},
          [&](int32_t d, auto &in, auto &out) {
            return te_rt_act_fwd(c, act, d, in[0], out[0], rows, cols, 7.0f,
                                 1.702f, 1.0f, nullptr);
          },
          "act_fwd");
      expectRoundedOnce(
          t, {ady, ndz}, {size_t(rows * cols)},
          [&](int32_t d, auto &in, auto &out) {
            return te_rt_act_bwd(c, act, d, in[0], in[1], out[0], rows, cols,
                                 7.0f, 1.702f, 1.0f, nullptr);
          },
          "act_bwd");
    }
    expectRoundedOnce(
        t, {ndz}, {size_t(cols)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_bias_grad(c, d, in[0], out[0], rows, cols);
        },
        "bias_grad");
    expectRoundedOnce(
        t, {nx, ndz}, {size_t(rows * cols)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_add(c, d, in[0], in[1], out[0], rows * cols);
        },
        "add");
  }
}

} // namespace
