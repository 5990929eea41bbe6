//===- AbiActivationTest.cpp - runtime ABI: activations ---------*- C++ -*-===//
//
// The te_rt_* calls through the C ABI (split from AbiTest.cpp by family;
// the fixture is AbiFixture.h): activations, bias gradients, producer amaxes and fused casts.
//
//===----------------------------------------------------------------------===//

#include "AbiFixture.h"

using namespace te::test;

namespace {

//===----------------------------------------------------------------------===//
// Activations, bias gradient, elementwise
//===----------------------------------------------------------------------===//

TEST_F(Abi, ReluAndGeluValues) {
  const float x[4] = {-1, 0, 1, 2}, dy[4] = {1, 1, 1, 1};
  float y[4], dx[4];
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_RELU, TE_RT_DTYPE_F32, x, y, 1, 4, 0,
                          0, 0, nullptr),
            0);
  expectNear(y, {0, 0, 1, 2}, 0, "relu");
  ASSERT_EQ(te_rt_act_bwd(ctx, TE_RT_ACT_RELU, TE_RT_DTYPE_F32, dy, x, dx, 1, 4,
                          0, 0, 0, nullptr),
            0);
  expectNear(dx, {0, 0, 1, 1}, 0, "drelu");
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, x, y, 2, 2, 0,
                          0, 0, nullptr),
            0);
  expectNear(y, {-0.15880801f, 0.0f, 0.84119199f, 1.95459770f}, 1e-6f, "gelu");
  ASSERT_EQ(te_rt_act_bwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, dy, x, dx, 2, 2,
                          0, 0, 0, nullptr),
            0);
  expectNear(dx, {-0.08296408f, 0.5f, 1.08296408f, 1.08609926f}, 1e-5f,
             "dgelu");
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_GELU_ERF, TE_RT_DTYPE_F32, x + 2, y, 1,
                          1, 0, 0, 0, nullptr),
            0);
  EXPECT_NEAR(y[0], 0.84134475f, 1e-6f);
}

// In place (the memory plan writes te.dact / te.dbias_dact over an operand
// that dies there: MemoryPlan.h): dx over x, and over dy for a non-gated
// activation, the same values as out of place, dbias too; f32 (the
// buffers themselves) and bf16 (fp32 staging).
TEST_F(Abi, ActivationBackwardInPlace) {
  const int64_t rows = 5, cols = 12, n = rows * cols;
  std::vector<float> x(n), dy(n);
  for (int64_t i = 0; i < n; ++i) {
    x[size_t(i)] = 0.37f * float(i % 11) - 1.9f;
    dy[size_t(i)] = 0.21f * float(i % 7) - 0.6f;
  }
  for (int32_t act : {TE_RT_ACT_GELU, TE_RT_ACT_SRELU, TE_RT_ACT_SWIGLU})
    for (int32_t t : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16}) {
      const bool gated = act == TE_RT_ACT_SWIGLU;
      const size_t e = t == TE_RT_DTYPE_F32 ? 4 : 2;
      auto bytes = [&](const std::vector<float> &v, int64_t count) {
        std::vector<uint8_t> b(size_t(count) * e);
        for (int64_t i = 0; i < count; ++i) {
          if (t == TE_RT_DTYPE_F32)
            std::memcpy(b.data() + i * 4, &v[size_t(i)], 4);
          else {
            uint16_t h = te::cpu::floatToBF16(v[size_t(i)]);
            std::memcpy(b.data() + i * 2, &h, 2);
          }
        }
        return b;
      };
      const int64_t dyN = gated ? n / 2 : n;
      const std::vector<uint8_t> xb = bytes(x, n), gb = bytes(dy, dyN);
      for (int fused = 0; fused < (gated ? 1 : 2); ++fused) {
        auto run = [&](const void *g, const void *in, void *out, void *db) {
          return fused ? te_rt_dbias_dact(ctx, act, t, g, in, out, db, rows,
                                          cols, 0, 0, 0, nullptr)
                       : te_rt_act_bwd(ctx, act, t, g, in, out, rows, cols, 0,
                                       0, 0, nullptr);
        };
        std::vector<uint8_t> dx(size_t(n) * e), db(size_t(cols) * e);
        ASSERT_EQ(run(gb.data(), xb.data(), dx.data(), db.data()), 0)
            << te_rt_last_error();
        for (int over = 0; over < (gated ? 1 : 2); ++over) { // x, then dy
          std::vector<uint8_t> xx = xb, gg = gb, db2(db.size());
          void *out = over ? gg.data() : xx.data();
          ASSERT_EQ(run(gg.data(), xx.data(), out, db2.data()), 0)
              << te_rt_last_error();
          EXPECT_TRUE((over ? gg : xx) == dx)
              << "act " << act << " dtype " << t << (fused ? " fused" : "")
              << (over ? " over dy" : " over x");
          if (fused) {
            EXPECT_TRUE(db2 == db) << "act " << act << " dtype " << t;
          }
        }
      }
    }
}

TEST_F(Abi, GatedActivations) {
  // swiglu: x = [a | b] = [1 | 2]: y = silu(1) * 2.
  const float x[2] = {1, 2}, dy[1] = {1};
  float y[1], dx[2];
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_SWIGLU, TE_RT_DTYPE_F32, x, y, 1, 2, 0,
                          0, 0, nullptr),
            0);
  EXPECT_NEAR(y[0], 2 * 0.73105858f, 1e-6f);
  ASSERT_EQ(te_rt_act_bwd(ctx, TE_RT_ACT_SWIGLU, TE_RT_DTYPE_F32, dy, x, dx, 1,
                          2, 0, 0, 0, nullptr),
            0);
  expectNear(dx, {2 * 0.92767051f, 0.73105858f}, 1e-6f, "dswiglu");
  // clamped_swiglu: a clamped to 7, b to [-7, 7] plus offset 1.
  const float big[4] = {10, 0.5f, -10, 3}; // rows of [a | b]: [10,-10],[.5,3]
  const float xs[4] = {big[0], big[2], big[1], big[3]};
  const float dys[2] = {1, 1};
  float ys[2], dxs[4];
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_CLAMPED_SWIGLU, TE_RT_DTYPE_F32, xs,
                          ys, 2, 2, 7.0f, 1.702f, 1.0f, nullptr),
            0);
  expectNear(ys, {-41.9997188f, 1.40155375f}, 1e-5f, "clamped_swiglu");
  ASSERT_EQ(te_rt_act_bwd(ctx, TE_RT_ACT_CLAMPED_SWIGLU, TE_RT_DTYPE_F32, dys,
                          xs, dxs, 2, 2, 7.0f, 1.702f, 1.0f, nullptr),
            0);
  // Outside the clamp the gradient is zero.
  expectNear(dxs, {0, 0, 3.51688765f, 0.35038844f}, 1e-5f, "dclamped_swiglu");
}

TEST_F(Abi, BiasGradSums) {
  const float dy[6] = {1, 2, 3, 4, 5, 6.5f};
  float db[2];
  ASSERT_EQ(te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, dy, db, 3, 2), 0);
  expectNear(db, {9, 12.5f}, 0, "dbias");
  // 300 ones: a bf16 running sum would stop at 256; fp32 sums reach 300.
  std::vector<uint16_t> ones(300, floatToBF16(1.0f));
  uint16_t out[1];
  ASSERT_EQ(te_rt_bias_grad(ctx, TE_RT_DTYPE_BF16, ones.data(), out, 300, 1),
            0);
  EXPECT_EQ(bf16ToFloat(out[0]), 300.0f);
  // Zero rows: zeros.
  float zero[2] = {7, 7};
  ASSERT_EQ(te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, dy, zero, 0, 2), 0);
  expectNear(zero, {0, 0}, 0, "dbias of no rows");
}

TEST_F(Abi, DBiasDActIsDActPlusColumnSums) {
  // relu' = 1[x > 0]: dx = dy where x > 0, and dbias sums dx's columns.
  const float dy[6] = {1, 2, 3, 4, 5, 6};
  const float x[6] = {1, -1, 2, -2, 3, 0};
  float dx[6], db[2];
  ASSERT_EQ(te_rt_dbias_dact(ctx, TE_RT_ACT_RELU, TE_RT_DTYPE_F32, dy, x, dx,
                             db, 3, 2, 0, 0, 0, nullptr),
            0);
  expectNear(dx, {1, 0, 3, 0, 5, 0}, 0, "dx");
  expectNear(db, {9, 0}, 0, "dbias");
  // GELU: the same dx as te_rt_act_bwd, the same sums as te_rt_bias_grad.
  auto dyr = exactRandom(64 * 16, 5), xr = exactRandom(64 * 16, 6);
  std::vector<float> dx1(64 * 16), dx2(64 * 16), db1(16), db2(16);
  ASSERT_EQ(te_rt_dbias_dact(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, dyr.data(),
                             xr.data(), dx1.data(), db1.data(), 64, 16, 0, 0, 0,
                             nullptr),
            0);
  ASSERT_EQ(te_rt_act_bwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, dyr.data(),
                          xr.data(), dx2.data(), 64, 16, 0, 0, 0, nullptr),
            0);
  ASSERT_EQ(
      te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, dx2.data(), db2.data(), 64, 16), 0);
  EXPECT_EQ(dx1, dx2);
  EXPECT_EQ(db1, db2);
  // Gated activations have no fused form.
  EXPECT_FAILS_WITH(te_rt_dbias_dact(ctx, TE_RT_ACT_SWIGLU, TE_RT_DTYPE_F32, dy,
                                     x, dx, db, 3, 2, 0, 0, 0, nullptr),
                    "te_rt_dbias_dact: gated activation swiglu has no fused "
                    "dbias + dact");
  EXPECT_FAILS_WITH(te_rt_dbias_dact(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, dy,
                                     x, dx, nullptr, 3, 2, 0, 0, 0, nullptr),
                    "te_rt_dbias_dact: dbias is NULL");
}

// te_rt_act_fwd / te_rt_act_bwd / te_rt_dbias_dact with an amax: the amax
// is max |output| over the values as stored (after rounding to the dtype;
// a NaN output skipped), for every activation and dtype, and the outputs
// are the bytes of the same call without one.
TEST_F(Abi, ProducersReportTheAmaxOfTheirStoredOutput) {
  const int64_t rows = 37, cols = 48, n = rows * cols;
  auto x = exactRandom(n, 41), g = exactRandom(n, 42);
  for (float &v : x)
    v *= 4;   // outputs up to ~10^3: past 1, where rounding shows in the max
  x[5] = NAN; // a NaN output for most activations (relu gives 0)
  for (int32_t t : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16}) {
    const size_t sz = t == TE_RT_DTYPE_F32 ? 4 : 2;
    for (int32_t act = TE_RT_ACT_GELU; act < TE_RT_ACT_COUNT; ++act) {
      bool gated = isGated(static_cast<Activation>(act));
      int64_t yn = gated ? n / 2 : n;
      std::string what =
          std::string(dtypeNameOf(t)) + " act " + std::to_string(act);
      auto X = bytesOf(t, x);
      auto DY = bytesOf(t, std::vector<float>(g.begin(), g.begin() + yn));
      std::vector<uint8_t> y(yn * sz), y0(yn * sz), dx(n * sz), dx0(n * sz);
      float amax = -1;
      ASSERT_EQ(te_rt_act_fwd(ctx, act, t, X.data(), y.data(), rows, cols, 7.0f,
                              1.702f, 1.0f, &amax),
                0)
          << lastError();
      ASSERT_EQ(te_rt_act_fwd(ctx, act, t, X.data(), y0.data(), rows, cols,
                              7.0f, 1.702f, 1.0f, nullptr),
                0);
      EXPECT_EQ(y, y0) << what << " fwd";
      EXPECT_EQ(amax, storedMax(t, y.data(), yn)) << what << " fwd";
      EXPECT_GT(amax, 0.0f) << what << " fwd";
      amax = -1;
      ASSERT_EQ(te_rt_act_bwd(ctx, act, t, DY.data(), X.data(), dx.data(), rows,
                              cols, 7.0f, 1.702f, 1.0f, &amax),
                0)
          << lastError();
      ASSERT_EQ(te_rt_act_bwd(ctx, act, t, DY.data(), X.data(), dx0.data(),
                              rows, cols, 7.0f, 1.702f, 1.0f, nullptr),
                0);
      EXPECT_EQ(dx, dx0) << what << " bwd";
      EXPECT_EQ(amax, storedMax(t, dx.data(), n)) << what << " bwd";
      EXPECT_GT(amax, 0.0f) << what << " bwd";
      if (gated)
        continue;
      std::vector<uint8_t> dx2(n * sz), db(cols * sz), db0(cols * sz);
      amax = -1;
      ASSERT_EQ(te_rt_dbias_dact(ctx, act, t, DY.data(), X.data(), dx2.data(),
                                 db.data(), rows, cols, 7.0f, 1.702f, 1.0f,
                                 &amax),
                0)
          << lastError();
      ASSERT_EQ(te_rt_dbias_dact(ctx, act, t, DY.data(), X.data(), dx0.data(),
                                 db0.data(), rows, cols, 7.0f, 1.702f, 1.0f,
                                 nullptr),
                0);
      EXPECT_EQ(dx2, dx0) << what << " dbias_dact dx";
      EXPECT_EQ(db, db0) << what << " dbias_dact dbias";
      EXPECT_EQ(amax, storedMax(t, dx2.data(), n)) << what << " dbias_dact";
    }
  }
  // The max of what is stored, not of the fp32 values: srelu(1 + 2^-7) =
  // 1 + 2^-6 + 2^-14 in fp32, stored in bf16 (8 significant bits) as
  // 1 + 2^-6.
  const uint16_t xs[2] = {floatToBF16(1 + 0x1p-7f), floatToBF16(-3.0f)};
  uint16_t ys[2];
  float amax = -1;
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_SRELU, TE_RT_DTYPE_BF16, xs, ys, 1, 2,
                          0, 0, 0, &amax),
            0);
  EXPECT_EQ(amax, 1 + 0x1p-6f);
  EXPECT_EQ(bf16ToFloat(ys[0]), amax);
  // No rows: amax 0.
  amax = -1;
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_BF16, xs, ys, 0, 2,
                          0, 0, 0, &amax),
            0);
  EXPECT_EQ(amax, 0.0f);
}

// A large output reduced on several threads: the same amax as one thread.
// te_rt_act_quantize_fp8 / te_rt_dact_quantize_fp8 (delayed scaling's fused
// activation-cast): the bytes of the activation (or its derivative, with or
// without the bias gradient) stored in the dtype and then quantized with
// te_rt_quantize_fp8 and the same scale, for every activation, dtype and
// format, with each of data / transpose / amax left out.
TEST_F(Abi, FusedActivationCastIsActivationThenQuantize) {
  const int64_t rows = 19, cols = 48, n = rows * cols;
  auto x = exactRandom(n, 51), g = exactRandom(n, 52);
  for (float &v : x)
    v *= 3;
  const float scale = 24.0f;
  for (int32_t t : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16})
    for (int32_t fmt : {TE_RT_FP8_E4M3, TE_RT_FP8_E5M2})
      for (int32_t act = TE_RT_ACT_GELU; act < TE_RT_ACT_COUNT; ++act)
        for (int kind = 0; kind < 3; ++kind) { // fwd, bwd, dbias + bwd
          const bool gated = isGated(static_cast<Activation>(act));
          if (kind == 2 && gated)
            continue;
          const size_t sz = t == TE_RT_DTYPE_F32 ? 4 : 2;
          const int64_t yCols = kind == 0 && gated ? cols / 2 : cols;
          const int64_t yn = rows * yCols, dyn = gated ? n / 2 : n;
          std::string what = std::string(dtypeNameOf(t)) + " fmt " +
                              std::to_string(fmt) + " act " +
                              std::to_string(act) + " kind " +
                              std::to_string(kind);
          auto X = bytesOf(t, x);
          auto DY = bytesOf(t, std::vector<float>(g.begin(), g.begin() + dyn));
          // Unfused: the activation's output, then its quantization.
          std::vector<uint8_t> y(yn * sz), db0(cols * sz), db(cols * sz);
          int32_t rc =
              kind == 0 ? te_rt_act_fwd(ctx, act, t, X.data(), y.data(), rows,
                                        cols, 7.0f, 1.702f, 1.0f, nullptr)
              : kind == 1
                  ? te_rt_act_bwd(ctx, act, t, DY.data(), X.data(), y.data(),
                                  rows, cols, 7.0f, 1.702f, 1.0f, nullptr)
                  : te_rt_dbias_dact(ctx, act, t, DY.data(), X.data(),
                                     y.data(), db0.data(), rows, cols, 7.0f,
                                     1.702f, 1.0f, nullptr);
          ASSERT_EQ(rc, 0) << lastError();
          std::vector<uint8_t> d0(yn), tr0(yn), d(yn), tr(yn);
          float si0 = 0, amax0 = 0;
          ASSERT_EQ(te_rt_quantize_fp8(ctx, t, y.data(), rows, yCols, fmt,
                                       &scale, 0, d0.data(), tr0.data(), &si0,
                                       &amax0, nullptr),
                    0)
              << lastError();
          for (int drop = 0; drop < 3; ++drop) { // none, data, transpose
            std::fill(d.begin(), d.end(), 0xAB);
            std::fill(tr.begin(), tr.end(), 0xAB);
            float si = 0, amax = -1;
            uint8_t *dp = drop == 1 ? nullptr : d.data();
            uint8_t *tp = drop == 2 ? nullptr : tr.data();
            float *ap = drop == 0 ? &amax : nullptr;
            rc = kind == 0
                     ? te_rt_act_quantize_fp8(ctx, act, t, X.data(), rows,
                                              cols, 7.0f, 1.702f, 1.0f, fmt,
                                              &scale, dp, tp, &si, ap)
                     : te_rt_dact_quantize_fp8(
                           ctx, act, t, DY.data(), X.data(),
                           kind == 2 ? db.data() : nullptr, rows, cols, 7.0f,
                           1.702f, 1.0f, fmt, &scale, dp, tp, &si, ap);
            ASSERT_EQ(rc, 0) << what << ": " << lastError();
            if (dp) {
              EXPECT_EQ(d, d0) << what << " data";
            }
            if (tp) {
              EXPECT_EQ(tr, tr0) << what << " transpose";
            }
            EXPECT_EQ(si, si0) << what << " scale_inv";
            if (ap) {
              EXPECT_EQ(amax, amax0) << what << " amax";
            }
            if (kind == 2) {
              EXPECT_EQ(db, db0) << what << " dbias";
            }
          }
        }
  // Argument errors.
  std::vector<float> buf(64);
  float si = 0, sc = 1;
  EXPECT_FAILS_WITH(
      te_rt_act_quantize_fp8(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, buf.data(),
                             4, 8, 7, 1.702f, 1, TE_RT_FP8_E4M3, nullptr,
                             buf.data(), nullptr, &si, nullptr),
      "te_rt_act_quantize_fp8: scale is NULL (the fused activation-cast is "
      "delayed scaling's: the scale is known before the activation runs)");
  EXPECT_FAILS_WITH(
      te_rt_act_quantize_fp8(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, buf.data(),
                             4, 8, 7, 1.702f, 1, TE_RT_FP8_E4M3, &sc, nullptr,
                             nullptr, &si, nullptr),
      "te_rt_act_quantize_fp8: data and transpose are both NULL (nothing to "
      "write)");
  EXPECT_FAILS_WITH(
      te_rt_act_quantize_fp8(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, buf.data(),
                             4, 8, 7, 1.702f, 1, 7, &sc, buf.data(), nullptr,
                             &si, nullptr),
      "te_rt_act_quantize_fp8: unknown format 7 (0 E4M3, 1 E5M2)");
  EXPECT_FAILS_WITH(
      te_rt_dact_quantize_fp8(ctx, TE_RT_ACT_SWIGLU, TE_RT_DTYPE_F32,
                              buf.data(), buf.data(), buf.data(), 4, 8, 7,
                              1.702f, 1, TE_RT_FP8_E4M3, &sc, buf.data(),
                              nullptr, &si, nullptr),
      "te_rt_dact_quantize_fp8: gated activation swiglu has no fused dbias + "
      "dact (dbias must be NULL)");
  EXPECT_FAILS_WITH(
      te_rt_dact_quantize_fp8(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, nullptr,
                              buf.data(), nullptr, 4, 8, 7, 1.702f, 1,
                              TE_RT_FP8_E4M3, &sc, buf.data(), nullptr, &si,
                              nullptr),
      "te_rt_dact_quantize_fp8: dy is NULL");
}

// te_rt_norm_quantize_fp8: the bytes of te_rt_norm_fwd's z quantized by
// te_rt_quantize_fp8 (and the same statistics), under delayed and current
// scaling (with power-of-two scales), LayerNorm and RMSNorm, every dtype,
// with data / transpose / amax left out in turn.
TEST_F(Abi, FusedNormCastIsNormThenQuantize) {
  const int64_t rows = 13, cols = 40, n = rows * cols;
  auto x = exactRandom(n, 61), g = exactRandom(cols, 62),
       b = exactRandom(cols, 63);
  const float scale = 20.0f;
  for (int32_t t : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16})
    for (int32_t kind : {TE_RT_NORM_LAYERNORM, TE_RT_NORM_RMSNORM})
      for (int mode = 0; mode < 3; ++mode) { // delayed, current, current pow2
        const bool ln = kind == TE_RT_NORM_LAYERNORM;
        const float *sc = mode == 0 ? &scale : nullptr;
        const int32_t pow2 = mode == 2, fmt = TE_RT_FP8_E4M3;
        std::string what = std::string(dtypeNameOf(t)) + (ln ? " ln" : " rms") +
                           " mode " + std::to_string(mode);
        auto X = bytesOf(t, x), G = bytesOf(t, g), B = bytesOf(t, b);
        const size_t sz = t == TE_RT_DTYPE_F32 ? 4 : 2;
        std::vector<uint8_t> z(n * sz), d0(n), t0(n), d(n), tr(n);
        std::vector<float> mu0(rows), rs0(rows), mu(rows), rs(rows);
        float si0 = 0, amax0 = 0;
        ASSERT_EQ(te_rt_norm_fwd(ctx, kind, t, X.data(), G.data(),
                                 ln ? B.data() : nullptr, 1e-5, 1, rows, cols,
                                 z.data(), ln ? mu0.data() : nullptr,
                                 rs0.data()),
                  0)
            << lastError();
        ASSERT_EQ(te_rt_quantize_fp8(ctx, t, z.data(), rows, cols, fmt, sc,
                                     pow2, d0.data(), t0.data(), &si0, &amax0,
                                     nullptr),
                  0)
            << lastError();
        for (int drop = 0; drop < 3; ++drop) { // none, data, transpose
          std::fill(d.begin(), d.end(), 0xAB);
          std::fill(tr.begin(), tr.end(), 0xAB);
          float si = 0, amax = -1;
          uint8_t *dp = drop == 1 ? nullptr : d.data();
          uint8_t *tp = drop == 2 ? nullptr : tr.data();
          float *ap = drop == 0 ? &amax : nullptr;
          ASSERT_EQ(te_rt_norm_quantize_fp8(
                        ctx, kind, t, X.data(), G.data(),
                        ln ? B.data() : nullptr, 1e-5, 1, rows, cols,
                        ln ? mu.data() : nullptr, rs.data(), fmt, sc, pow2, dp,
                        tp, &si, ap),
                    0)
              << what << ": " << lastError();
          if (dp) {
            EXPECT_EQ(d, d0) << what << " data";
          }
          if (tp) {
            EXPECT_EQ(tr, t0) << what << " transpose";
          }
          EXPECT_EQ(si, si0) << what << " scale_inv";
          if (ap) {
            EXPECT_EQ(amax, amax0) << what << " amax";
          }
          if (ln) {
            EXPECT_EQ(mu, mu0) << what << " mu";
          }
          EXPECT_EQ(rs, rs0) << what << " rsigma";
        }
      }
  // Argument errors beyond te_rt_norm_fwd's.
  std::vector<float> buf(64);
  float si = 0, sc = 1;
  float *p = buf.data();
  EXPECT_FAILS_WITH(
      te_rt_norm_quantize_fp8(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p, p,
                              nullptr, 1e-5, 0, 2, 8, nullptr, p,
                              TE_RT_FP8_E4M3, &sc, 0, nullptr, nullptr, &si,
                              nullptr),
      "te_rt_norm_quantize_fp8: data and transpose are both NULL (nothing to "
      "write)");
  EXPECT_FAILS_WITH(
      te_rt_norm_quantize_fp8(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p, p,
                              nullptr, 1e-5, 0, 2, 8, nullptr, p,
                              TE_RT_FP8_E4M3, &sc, 1, p, nullptr, &si,
                              nullptr),
      "te_rt_norm_quantize_fp8: pow2_scale applies to current scaling only "
      "(scale must be NULL)");
  EXPECT_FAILS_WITH(
      te_rt_norm_quantize_fp8(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p, p,
                              nullptr, 1e-5, 0, 2, 8, nullptr, p, 3, &sc, 0, p,
                              nullptr, &si, nullptr),
      "te_rt_norm_quantize_fp8: unknown format 3 (0 E4M3, 1 E5M2)");
  EXPECT_FAILS_WITH(
      te_rt_norm_quantize_fp8(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32, p, p,
                              p, 1e-5, 0, 2, 8, nullptr, p, TE_RT_FP8_E4M3,
                              &sc, 0, p, nullptr, &si, nullptr),
      "te_rt_norm_quantize_fp8: mu is NULL");
  EXPECT_FAILS_WITH(
      te_rt_norm_quantize_fp8(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p, p,
                              nullptr, 1e-5, 0, 2, 8, nullptr, p,
                              TE_RT_FP8_E4M3, &sc, 0, p, nullptr, nullptr,
                              nullptr),
      "te_rt_norm_quantize_fp8: scale_inv is NULL");
}

TEST_F(Abi, ProducerAmaxDoesNotDependOnThreads) {
  // Large enough for the amax's chunks to be split across threads
  // (Parallel.h's kParallelMinWork).
  const int64_t rows = 1024, cols = 1024, n = rows * cols;
  auto x = exactRandom(n, 43);
  x[n - 3] = 9.5f; // the largest output, in the last chunk
  std::vector<uint16_t> X = toBF16(x), y(n);
  float a1 = -1, a4 = -1;
  {
    ScopedEnv t("TE_RT_CPU_THREADS", "1");
    ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_BF16, X.data(),
                            y.data(), rows, cols, 0, 0, 0, &a1),
              0);
  }
  {
    ScopedEnv t("TE_RT_CPU_THREADS", "4");
    ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_BF16, X.data(),
                            y.data(), rows, cols, 0, 0, 0, &a4),
              0);
  }
  EXPECT_EQ(a1, a4);
  EXPECT_EQ(a4, storedMax(TE_RT_DTYPE_BF16, y.data(), n));
  EXPECT_EQ(a4, bf16ToFloat(floatToBF16(9.5f))); // gelu(9.5) rounds to 9.5
}

TEST_F(Abi, BiasGradDoesNotDependOnThreads) {
  const int64_t rows = 8000, cols = 100; // split across threads
  auto dy = exactRandom(rows * cols, 21);
  std::vector<float> a(cols), b(cols);
  {
    ScopedEnv t("TE_RT_CPU_THREADS", "1");
    ASSERT_EQ(
        te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, dy.data(), a.data(), rows, cols),
        0);
  }
  {
    ScopedEnv t("TE_RT_CPU_THREADS", "4");
    ASSERT_EQ(
        te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, dy.data(), b.data(), rows, cols),
        0);
  }
  EXPECT_EQ(a, b);
}

} // namespace
