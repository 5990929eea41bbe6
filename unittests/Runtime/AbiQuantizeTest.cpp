//===- AbiQuantizeTest.cpp - runtime ABI: per-tensor FP8 --------*- C++ -*-===//
//
// The te_rt_* calls through the C ABI (split from AbiTest.cpp by family;
// the fixture is AbiFixture.h): per-tensor FP8, FP8 block scaling and MXFP8.
//
//===----------------------------------------------------------------------===//

#include "AbiFixture.h"

using namespace te::test;

namespace {

//===----------------------------------------------------------------------===//
// Per-tensor FP8
//===----------------------------------------------------------------------===//

TEST_F(Abi, QuantizeFP8CurrentScalingByHand) {
  // amax 2 -> scale 448 / 2 = 224: 1 -> 224 (0x76), -2 -> -448 (0xFE),
  // 0.5 -> 112 (0x6E), 0 -> 0, 0.25 -> 56 (0x66), -1 -> -224 (0xF6).
  std::vector<uint16_t> x = toBF16({1, -2, 0.5f, 0, 0.25f, -1});
  std::vector<uint8_t> q(6), t(6);
  float scaleInv = 0, amax = -1;
  ASSERT_EQ(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_BF16, x.data(), 2, 3,
                               TE_RT_FP8_E4M3, nullptr, 0, q.data(), t.data(),
                               &scaleInv, &amax, nullptr),
            0)
      << lastError();
  EXPECT_EQ(q, (std::vector<uint8_t>{0x76, 0xFE, 0x6E, 0x00, 0x66, 0xF6}));
  // The transposed copy [3, 2] holds the same bytes.
  EXPECT_EQ(t, (std::vector<uint8_t>{0x76, 0x00, 0xFE, 0x66, 0x6E, 0xF6}));
  EXPECT_EQ(scaleInv, 1.0f / 224.0f);
  EXPECT_EQ(amax, 2.0f);

  // Power-of-two scales: 448 / 3 = 149.3 rounds down to 128; 3 -> 384
  // (0x7C); E5M2 max 57344 / 3 -> 16384: 3 -> 49152 (0x7A).
  std::vector<float> y = {3, -1.5f};
  std::vector<uint8_t> q2(2);
  ASSERT_EQ(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, y.data(), 1, 2,
                               TE_RT_FP8_E4M3, nullptr, 1, q2.data(), nullptr,
                               &scaleInv, nullptr, nullptr),
            0);
  EXPECT_EQ(scaleInv, 1.0f / 128.0f);
  EXPECT_EQ(q2[0], 0x7C);
  ASSERT_EQ(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, y.data(), 1, 2,
                               TE_RT_FP8_E5M2, nullptr, 1, q2.data(), nullptr,
                               &scaleInv, nullptr, nullptr),
            0);
  EXPECT_EQ(scaleInv, 1.0f / 16384.0f);
  EXPECT_EQ(q2[0], 0x7A);

  // An all-zero tensor has scale 1.
  std::vector<float> z(4, 0.0f);
  std::vector<uint8_t> q3(4, 0xFF);
  ASSERT_EQ(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, z.data(), 2, 2,
                               TE_RT_FP8_E4M3, nullptr, 0, q3.data(), nullptr,
                               &scaleInv, &amax, nullptr),
            0);
  EXPECT_EQ(scaleInv, 1.0f);
  EXPECT_EQ(amax, 0.0f);
  EXPECT_EQ(q3, std::vector<uint8_t>(4, 0));
}

TEST_F(Abi, QuantizeFP8DelayedScalingSaturates) {
  // A stale scale of 1000: 1 -> 1000 saturates to 448 (0x7E), -0.25 -> -250
  // (-256 nearest: 0xF8), and the amax is still recorded.
  std::vector<float> x = {1, -0.25f};
  std::vector<uint8_t> t(2);
  float scale = 1000, scaleInv = 0, amax = 0;
  ASSERT_EQ(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, x.data(), 1, 2,
                               TE_RT_FP8_E4M3, &scale, 0, nullptr, t.data(),
                               &scaleInv, &amax, nullptr),
            0)
      << lastError();
  EXPECT_EQ(t, (std::vector<uint8_t>{0x7E, 0xF8}));
  EXPECT_EQ(scaleInv, 1.0f / 1000.0f);
  EXPECT_EQ(amax, 1.0f);
}

// Current-scaling fusion: the producer's amax handed to te_rt_quantize_fp8
// as amax_in gives the bytes, transpose and scale_inv of the unfused call
// (which reduces its own amax), for every dtype, format and pow2 setting;
// and amax_in really is the amax used: twice it halves the scale.
TEST_F(Abi, QuantizeFP8WithTheProducersAmax) {
  const int64_t rows = 24, cols = 40, n = rows * cols;
  auto x = exactRandom(n, 51);
  for (float &v : x)
    v *= 3;
  for (int32_t t : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16})
    for (int32_t fmt : {TE_RT_FP8_E4M3, TE_RT_FP8_E5M2})
      for (int32_t pow2 : {0, 1}) {
        std::string what = std::string(dtypeNameOf(t)) + " format " +
                           std::to_string(fmt) + " pow2 " +
                           std::to_string(pow2);
        const size_t sz = t == TE_RT_DTYPE_F32 ? 4 : 2;
        auto X = bytesOf(t, x);
        std::vector<uint8_t> y(n * sz);
        float amax = -1;
        ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_GELU, t, X.data(), y.data(),
                                rows, cols, 0, 0, 0, &amax),
                  0)
            << lastError();
        // Unfused: the quantization reduces its own amax.
        std::vector<uint8_t> q1(n), t1(n), q2(n, 0xA5), t2(n, 0xA5);
        float si1 = 0, am1 = -1, si2 = 0;
        ASSERT_EQ(te_rt_quantize_fp8(ctx, t, y.data(), rows, cols, fmt, nullptr,
                                     pow2, q1.data(), t1.data(), &si1, &am1,
                                     nullptr),
                  0)
            << lastError();
        EXPECT_EQ(am1, amax) << what;
        // Fused: the producer's amax, no amax pass.
        ASSERT_EQ(te_rt_quantize_fp8(ctx, t, y.data(), rows, cols, fmt, nullptr,
                                     pow2, q2.data(), t2.data(), &si2, nullptr,
                                     &amax),
                  0)
            << lastError();
        EXPECT_EQ(q2, q1) << what;
        EXPECT_EQ(t2, t1) << what;
        EXPECT_EQ(bitsOf(si2), bitsOf(si1)) << what;
        // Twice the amax: the scale follows amax_in, not the data.
        const FP8 f = fmt == TE_RT_FP8_E4M3 ? FP8::E4M3 : FP8::E5M2;
        const float twice = 2 * amax;
        const float scale = scaleFromAmax(twice, fp8Max(f), pow2 != 0);
        ASSERT_EQ(scale, scaleFromAmax(amax, fp8Max(f), pow2 != 0) / 2);
        std::vector<uint8_t> q3(n);
        float si3 = 0;
        ASSERT_EQ(te_rt_quantize_fp8(ctx, t, y.data(), rows, cols, fmt, nullptr,
                                     pow2, q3.data(), nullptr, &si3, nullptr,
                                     &twice),
                  0)
            << lastError();
        EXPECT_EQ(si3, 1.0f / scale) << what;
        EXPECT_EQ(si3, 2 * si1) << what;
        size_t mismatches = 0;
        for (int64_t i = 0; i < n; ++i)
          mismatches +=
              q3[i] != quantizeFP8(valueAt(t, y.data(), i) * scale, f);
        EXPECT_EQ(mismatches, 0u) << what;
      }
}

// The fused bias gradient + cast (te_rt_dbias_quantize_fp8) is, on the cpu
// backend, te_rt_bias_grad followed by te_rt_quantize_fp8 bit for bit: every
// dtype and format, delayed (a saturating scale) and current scaling (with
// and without pow2 scales; with and without an amax), data and/or
// transpose, aligned and ragged shapes (zero rows: dbias is zeros).
TEST_F(Abi, DBiasQuantizeFP8IsBiasGradThenQuantize) {
  struct Shape {
    int64_t rows, cols;
  } shapes[] = {{24, 40}, {33, 47}, {1, 1}, {130, 64}, {0, 16}};
  enum { Current, CurrentPow2, Delayed };
  enum { Both, DataOnly, TransposeOnly };
  for (Shape sh : shapes)
    for (int32_t t : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16})
      for (int32_t fmt : {TE_RT_FP8_E4M3, TE_RT_FP8_E5M2})
        for (int mode : {Current, CurrentPow2, Delayed})
          for (int outs : {Both, DataOnly, TransposeOnly}) {
            const int64_t rows = sh.rows, cols = sh.cols, n = rows * cols;
            std::string what =
                std::string(dtypeNameOf(t)) + " format " + std::to_string(fmt) +
                " mode " + std::to_string(mode) + " outs " +
                std::to_string(outs) + " " + std::to_string(rows) + "x" +
                std::to_string(cols);
            auto x = exactRandom(n, 61 + static_cast<unsigned>(cols));
            for (float &v : x)
              v *= 3;
            auto X = bytesOf(t, x);
            const size_t sz = t == TE_RT_DTYPE_F32 ? 4 : 2;
            if (X.empty())
              X.resize(sz); // zero rows: x is still a valid pointer
            const float scale = fmt == TE_RT_FP8_E4M3 ? 300.0f : 38000.0f;
            const float *sc = mode == Delayed ? &scale : nullptr;
            const bool wantData = outs != TransposeOnly,
                       wantT = outs != DataOnly, wantAmax = outs != DataOnly;
            // (At least one byte: an empty vector's data() may be NULL.)
            const size_t nb = std::max<int64_t>(n, 1);
            std::vector<uint8_t> q1(nb, 0x5A), t1(nb, 0x5A), q2(nb, 0xA5),
                t2(nb, 0xA5), db1(cols * sz, 0x11), db2(cols * sz, 0x22);
            float si1 = 0, am1 = -1, si2 = 1, am2 = -2;
            ASSERT_EQ(te_rt_bias_grad(ctx, t, X.data(), db1.data(), rows, cols),
                      0)
                << lastError();
            ASSERT_EQ(te_rt_quantize_fp8(ctx, t, X.data(), rows, cols, fmt, sc,
                                         mode == CurrentPow2,
                                         wantData ? q1.data() : nullptr,
                                         wantT ? t1.data() : nullptr, &si1,
                                         wantAmax ? &am1 : nullptr, nullptr),
                      0)
                << lastError();
            ASSERT_EQ(te_rt_dbias_quantize_fp8(
                          ctx, t, X.data(), rows, cols, fmt, sc,
                          mode == CurrentPow2, wantData ? q2.data() : nullptr,
                          wantT ? t2.data() : nullptr, &si2,
                          wantAmax ? &am2 : nullptr, db2.data()),
                      0)
                << lastError();
            if (wantData && n > 0)
              EXPECT_EQ(q2, q1) << what;
            if (wantT && n > 0)
              EXPECT_EQ(t2, t1) << what;
            EXPECT_EQ(bitsOf(si2), bitsOf(si1)) << what;
            if (wantAmax)
              EXPECT_EQ(bitsOf(am2), bitsOf(am1)) << what;
            EXPECT_EQ(db2, db1) << what;
            if (rows == 0)
              for (size_t j = 0; j < static_cast<size_t>(cols); ++j)
                EXPECT_EQ(valueAt(t, db2.data(), j), 0.0f) << what;
          }
}

// The bias gradient by hand: columns {1 + 2 + 0.5, -2 + 0.25 + 4} of a
// [3, 2] f32 tensor, current scaling of amax 4 (scale 112).
TEST_F(Abi, DBiasQuantizeFP8ByHand) {
  std::vector<float> x = {1, -2, 2, 0.25f, 0.5f, 4}, db(2, -1);
  std::vector<uint8_t> q(6), tr(6);
  float si = 0, amax = 0;
  ASSERT_EQ(te_rt_dbias_quantize_fp8(ctx, TE_RT_DTYPE_F32, x.data(), 3, 2,
                                     TE_RT_FP8_E4M3, nullptr, 0, q.data(),
                                     tr.data(), &si, &amax, db.data()),
            0)
      << lastError();
  EXPECT_EQ(db, (std::vector<float>{3.5f, 2.25f}));
  EXPECT_EQ(amax, 4.0f);
  EXPECT_EQ(si, 4.0f / 448.0f);
  // 1 * 112 = 112 (0x6E), 4 * 112 = 448 (0x7E); transposed: x[0][1] = -2
  // (-224, 0xF6) is tr[1 * 3 + 0].
  EXPECT_EQ(q[0], 0x6E);
  EXPECT_EQ(q[5], 0x7E);
  EXPECT_EQ(tr[3], 0xF6);
}

TEST_F(Abi, GemmFP8IsTheGemmOfTheDequantizedOperands) {
  // a [2, 2] E4M3 {1, 2; 3, 0.5} * 0.5, b [1, 2] E5M2 {2, -1} * 4:
  // d = a' . b'^T = {0.5*8 + 1*-4, 1.5*8 + 0.25*-4} = {0, 11}, + bias 1.
  std::vector<uint8_t> a = {0x38, 0x40, 0x44, 0x30}; // 1, 2, 3, 0.5
  std::vector<uint8_t> b = {0x40, 0xBC};             // 2, -1 (E5M2)
  float sa = 0.5f, sb = 4.0f;
  std::vector<float> bias = {1}, d(2, -7);
  ASSERT_EQ(te_rt_gemm_fp8(ctx, TE_RT_DTYPE_F32, TE_RT_FP8_E4M3, a.data(), &sa,
                           TE_RT_FP8_E5M2, b.data(), &sb, bias.data(), d.data(),
                           2, 1, 2, 0, 0),
            0)
      << lastError();
  EXPECT_EQ(d, (std::vector<float>{1, 12}));
  // Accumulate into bf16: 12 + 12 = 24 exactly.
  std::vector<uint16_t> dh = toBF16({1, 12});
  std::vector<uint16_t> bh = toBF16({1});
  ASSERT_EQ(te_rt_gemm_fp8(ctx, TE_RT_DTYPE_BF16, TE_RT_FP8_E4M3, a.data(),
                           &sa, TE_RT_FP8_E5M2, b.data(), &sb, bh.data(),
                           dh.data(), 2, 1, 2, 1, 0),
            0);
  EXPECT_EQ(bf16ToFloat(dh[0]), 2.0f);
  EXPECT_EQ(bf16ToFloat(dh[1]), 24.0f);
  // Fast accumulation is a GPU precision trade; the cpu sums exactly.
  std::vector<float> d2(2, -7);
  ASSERT_EQ(te_rt_gemm_fp8(ctx, TE_RT_DTYPE_F32, TE_RT_FP8_E4M3, a.data(), &sa,
                           TE_RT_FP8_E5M2, b.data(), &sb, bias.data(),
                           d2.data(), 2, 1, 2, 0, 1),
            0)
      << lastError();
  EXPECT_EQ(d2, (std::vector<float>{1, 12}));
  EXPECT_FAILS_WITH(te_rt_gemm_fp8(ctx, TE_RT_DTYPE_F32, TE_RT_FP8_E4M3,
                                   a.data(), &sa, TE_RT_FP8_E5M2, b.data(), &sb,
                                   nullptr, d2.data(), 2, 1, 2, 0, 2),
                    "te_rt_gemm_fp8: fast_accumulate must be 0 or 1, got 2");
}

TEST_F(Abi, FP8ArgumentChecks) {
  float f[8] = {};
  uint8_t q[8] = {};
  EXPECT_FAILS_WITH(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 3,
                                       nullptr, 0, q, nullptr, f, nullptr,
                                       nullptr),
                    "te_rt_quantize_fp8: unknown format 3 (0 E4M3, 1 E5M2)");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                       nullptr, 0, nullptr, nullptr, f, nullptr,
                                       nullptr),
                    "te_rt_quantize_fp8: data and transpose are both NULL "
                    "(nothing to write)");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0, f, 1,
                                       q, nullptr, f, nullptr, nullptr),
                    "te_rt_quantize_fp8: pow2_scale applies to current "
                    "scaling only (scale must be NULL)");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                       nullptr, 0, q, nullptr, nullptr, nullptr,
                                       nullptr),
                    "te_rt_quantize_fp8: scale_inv is NULL");
  // A precomputed amax: current scaling only, and it is the amax.
  EXPECT_FAILS_WITH(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0, f, 0,
                                       q, nullptr, f, nullptr, f),
                    "te_rt_quantize_fp8: amax_in must be NULL with delayed "
                    "scaling (scale given)");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                       nullptr, 0, q, nullptr, f, f + 1, f),
                    "te_rt_quantize_fp8: amax must be NULL when amax_in is "
                    "given (amax_in is the amax)");
  // The fused bias gradient + cast: the quantization's checks, and dbias.
  EXPECT_FAILS_WITH(te_rt_dbias_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 3,
                                             nullptr, 0, q, nullptr, f, nullptr,
                                             f),
                    "te_rt_dbias_quantize_fp8: unknown format 3 (0 E4M3, 1 "
                    "E5M2)");
  EXPECT_FAILS_WITH(te_rt_dbias_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                             nullptr, 0, nullptr, nullptr, f,
                                             nullptr, f),
                    "te_rt_dbias_quantize_fp8: data and transpose are both "
                    "NULL (nothing to write)");
  EXPECT_FAILS_WITH(te_rt_dbias_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                             f, 1, q, nullptr, f, nullptr, f),
                    "te_rt_dbias_quantize_fp8: pow2_scale applies to current "
                    "scaling only (scale must be NULL)");
  EXPECT_FAILS_WITH(te_rt_dbias_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                             nullptr, 2, q, nullptr, f, nullptr,
                                             f),
                    "te_rt_dbias_quantize_fp8: pow2_scale must be 0 or 1, got "
                    "2");
  EXPECT_FAILS_WITH(te_rt_dbias_quantize_fp8(ctx, TE_RT_DTYPE_F32, nullptr, 2,
                                             2, 0, nullptr, 0, q, nullptr, f,
                                             nullptr, f),
                    "te_rt_dbias_quantize_fp8: x is NULL");
  EXPECT_FAILS_WITH(te_rt_dbias_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                             nullptr, 0, q, nullptr, nullptr,
                                             nullptr, f),
                    "te_rt_dbias_quantize_fp8: scale_inv is NULL");
  EXPECT_FAILS_WITH(te_rt_dbias_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                             nullptr, 0, q, nullptr, f, nullptr,
                                             nullptr),
                    "te_rt_dbias_quantize_fp8: dbias is NULL");
  EXPECT_FAILS_WITH(
      te_rt_dbias_quantize_fp8(ctx, 9, f, 2, 2, 0, nullptr, 0, q, nullptr, f,
                               nullptr, f),
      "te_rt_dbias_quantize_fp8: unknown dtype 9 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(te_rt_dbias_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, -1, 2, 0,
                                             nullptr, 0, q, nullptr, f, nullptr,
                                             f),
                    "te_rt_dbias_quantize_fp8: rows must be >= 0, got -1");
  EXPECT_FAILS_WITH(te_rt_gemm_fp8(ctx, TE_RT_DTYPE_F32, TE_RT_FP8_E5M2, q, f,
                                   TE_RT_FP8_E5M2, q, f, nullptr, f, 1, 1, 1,
                                   0, 0),
                    "te_rt_gemm_fp8: E5M2 x E5M2 GEMMs are not supported (one "
                    "operand must be E4M3, as in TE's HYBRID format)");
  EXPECT_FAILS_WITH(te_rt_gemm_fp8(ctx, TE_RT_DTYPE_F32, 0, q, nullptr, 0, q,
                                   f, nullptr, f, 1, 1, 1, 0, 0),
                    "te_rt_gemm_fp8: a_scale_inv is NULL");
  EXPECT_FAILS_WITH(te_rt_amax_update(ctx, f, f, f, 0, 2, 448, 0, 0, f, f),
                    "te_rt_amax_update: len must be > 0, got 0");
  EXPECT_FAILS_WITH(te_rt_amax_update(ctx, f, f, f, 1, 2, 448, -1, 0, f, f),
                    "te_rt_amax_update: margin must be in [0, 126], got -1");
  // The unused mask: a bit per slot, 64 at most. Its own checks, and the
  // shared ones under its own name.
  EXPECT_FAILS_WITH(
      te_rt_amax_update_unused(ctx, f, f, f, 1, 2, 448, 0, 0, 0x5, f, f),
      "te_rt_amax_update_unused: unused sets bit 2, not a slot of n = 2");
  EXPECT_FAILS_WITH(
      te_rt_amax_update_unused(ctx, f, f, f, 1, 0, 448, 0, 0, 1, f, f),
      "te_rt_amax_update_unused: unused sets bit 0, not a slot of n = 0");
  EXPECT_FAILS_WITH(
      te_rt_amax_update_unused(ctx, f, f, f, 1, 63, 448, 0, 0, INT64_MIN, f, f),
      "te_rt_amax_update_unused: unused sets bit 63, not a slot of n = 63");
  EXPECT_FAILS_WITH(
      te_rt_amax_update_unused(ctx, f, f, f, 1, 65, 448, 0, 0, 1, f, f),
      "te_rt_amax_update_unused: unused (a mask of 64 slots) must be 0 when "
      "n > 64, got n = 65");
  EXPECT_FAILS_WITH(
      te_rt_amax_update_unused(ctx, f, f, f, 0, 2, 448, 0, 0, 1, f, f),
      "te_rt_amax_update_unused: len must be > 0, got 0");
  EXPECT_FAILS_WITH(
      te_rt_amax_update_unused(ctx, f, f, nullptr, 1, 2, 448, 0, 0, 1, f, f),
      "te_rt_amax_update_unused: amax is NULL");
  // The fork checks what te_rt_amax_update_unused checks, under its name.
  EXPECT_FAILS_WITH(
      te_rt_amax_update_fork(ctx, f, f, f, 1, 2, 448, 0, 0, 0x5, f, f),
      "te_rt_amax_update_fork: unused sets bit 2, not a slot of n = 2");
  EXPECT_FAILS_WITH(
      te_rt_amax_update_fork(ctx, f, f, f, 1, 2, 448, 127, 0, 0, f, f),
      "te_rt_amax_update_fork: margin must be in [0, 126], got 127");
  EXPECT_FAILS_WITH(
      te_rt_amax_update_fork(ctx, f, nullptr, f, 1, 2, 448, 0, 0, 0, f, f),
      "te_rt_amax_update_fork: scale is NULL");
}

TEST_F(Abi, QuantizeFP8Block1DByHand) {
  // x [2, 130]: two 1x128 blocks per row, the second partial (2 columns).
  // Power-of-two scales (TE's default):
  //   row 0, block 0: {2, 1, ..., 1}, amax 2 -> 448/2 = 224 -> 128:
  //     2 -> 256 (0x78), 1 -> 128 (0x70); block 1 {0, 0}: scale 1.
  //   row 1, block 0: 0.5 everywhere, amax 0.5 -> 896 -> 512: 256 (0x78);
  //     block 1 {3, -3}: 448/3 -> 128: +-384 (0x7C, 0xFC).
  const int64_t rows = 2, cols = 130;
  std::vector<float> x(rows * cols, 1.0f);
  x[0] = 2;
  x[128] = x[129] = 0;
  for (int64_t j = 0; j < 128; ++j)
    x[cols + j] = 0.5f;
  x[cols + 128] = 3;
  x[cols + 129] = -3;
  std::vector<uint8_t> q(rows * cols), t(rows * cols);
  // Rowwise scales [ceil(130/128) = 2, roundup(2, 4) = 4]; columnwise
  // (blocks down the 2 rows) [1, roundup(130, 4) = 132]. Padding is 0.
  std::vector<float> s(2 * 4, -1), st(132, -1);
  ASSERT_EQ(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, x.data(), rows,
                                     cols, 0, 1, q.data(), s.data(), t.data(),
                                     st.data()),
            0)
      << lastError();
  EXPECT_EQ(q[0], 0x78);
  EXPECT_EQ(q[1], 0x70);
  EXPECT_EQ(q[127], 0x70);
  EXPECT_EQ(q[128], 0x00);
  EXPECT_EQ(q[cols + 5], 0x78);
  EXPECT_EQ(q[cols + 128], 0x7C);
  EXPECT_EQ(q[cols + 129], 0xFC);
  EXPECT_EQ(s, (std::vector<float>{1.0f / 128, 1.0f / 512, 0, 0, 1,
                                   1.0f / 128, 0, 0}));
  // Columnwise: x^T [130, 2], one block per column of x. Column 0 {2, 0.5}
  // -> 128: {256, 64} = {0x78, 0x68}; columns 1..127 {1, 0.5} -> 256:
  // {0x78, 0x70}; columns 128, 129 {0, +-3} -> 128.
  EXPECT_EQ(t[0], 0x78);
  EXPECT_EQ(t[1], 0x68);
  EXPECT_EQ(t[2], 0x78);
  EXPECT_EQ(t[3], 0x70);
  EXPECT_EQ(t[2 * 128], 0x00);
  EXPECT_EQ(t[2 * 128 + 1], 0x7C);
  EXPECT_EQ(t[2 * 129 + 1], 0xFC);
  EXPECT_EQ(st[0], 1.0f / 128);
  EXPECT_EQ(st[1], 1.0f / 256);
  EXPECT_EQ(st[127], 1.0f / 256);
  EXPECT_EQ(st[128], 1.0f / 128);
  EXPECT_EQ(st[129], 1.0f / 128);
  EXPECT_EQ(st[130], 0.0f);
  EXPECT_EQ(st[131], 0.0f);
}

TEST_F(Abi, QuantizeFP8Block2DByHand) {
  // x [3, 200]: 128x128 blocks (0, 0) and (0, 1). Block (0, 0) is 0.75 with
  // one -6: amax 6 -> 448/6 = 74.67 -> 64: 0.75 -> 48 (0x64), -6 -> -384
  // (0xFC). Block (0, 1) is 1792: 448/1792 = 0.25 exactly -> 448 (0x7E).
  const int64_t rows = 3, cols = 200;
  std::vector<float> x(rows * cols, 0.75f);
  x[cols + 5] = -6;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 128; j < cols; ++j)
      x[i * cols + j] = 1792;
  std::vector<uint16_t> xb = toBF16(x); // all exact in bf16
  std::vector<uint8_t> q(rows * cols), t(rows * cols);
  // Rowwise [1, roundup(2, 4)]; columnwise [2, roundup(1, 4)].
  std::vector<float> s(4, -1), st(8, -1);
  ASSERT_EQ(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_BF16, xb.data(), rows,
                                     cols, 1, 1, q.data(), s.data(), t.data(),
                                     st.data()),
            0)
      << lastError();
  EXPECT_EQ(q[0], 0x64);
  EXPECT_EQ(q[cols + 5], 0xFC);
  EXPECT_EQ(q[2 * cols + 199], 0x7E);
  EXPECT_EQ(s, (std::vector<float>{1.0f / 64, 4, 0, 0}));
  EXPECT_EQ(st, (std::vector<float>{1.0f / 64, 0, 0, 0, 4, 0, 0, 0}));
  // With 2-D blocks the columnwise copy is the byte transpose.
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      ASSERT_EQ(t[j * rows + i], q[i * cols + j]) << i << "," << j;

  // fp32 scales: 448/6 = 74.666664f; 0.75 -> 56 (0x66), -6 -> -448 (0xFE).
  ASSERT_EQ(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, x.data(), rows,
                                     cols, 1, 0, q.data(), s.data(), nullptr,
                                     nullptr),
            0)
      << lastError();
  EXPECT_EQ(q[0], 0x66);
  EXPECT_EQ(q[cols + 5], 0xFE);
  EXPECT_EQ(s[0], 1.0f / (448.0f / 6.0f));
}

TEST_F(Abi, GemmFP8BlockIsTheGemmOfTheDequantizedOperands) {
  // a: the 1-D quantization of x [2, 130] above (every value exact), b:
  // ones [1, 130] in 128x128 blocks (scale 256, dequantized exactly 1).
  // d = row sums of x: {2 + 127, 64 + 3 - 3} = {129, 64}, + bias 10.
  const int64_t cols = 130;
  std::vector<float> x(2 * cols, 1.0f);
  x[0] = 2;
  x[128] = x[129] = 0;
  for (int64_t j = 0; j < 128; ++j)
    x[cols + j] = 0.5f;
  x[cols + 128] = 3;
  x[cols + 129] = -3;
  std::vector<float> ones(cols, 1.0f);
  std::vector<uint8_t> a(2 * cols), b(cols);
  std::vector<float> sa(8), sb(4);
  ASSERT_EQ(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, x.data(), 2, cols,
                                     0, 1, a.data(), sa.data(), nullptr,
                                     nullptr),
            0);
  ASSERT_EQ(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, ones.data(), 1,
                                     cols, 1, 1, b.data(), sb.data(), nullptr,
                                     nullptr),
            0);
  std::vector<float> bias = {10}, d(2, -7);
  ASSERT_EQ(te_rt_gemm_fp8_block(ctx, TE_RT_DTYPE_F32, a.data(), sa.data(), 0,
                                 b.data(), sb.data(), 1, bias.data(), d.data(),
                                 2, 1, cols, 0),
            0)
      << lastError();
  EXPECT_EQ(d, (std::vector<float>{139, 74}));
  // Accumulate (no bias): 139 + 129, 74 + 64.
  ASSERT_EQ(te_rt_gemm_fp8_block(ctx, TE_RT_DTYPE_F32, a.data(), sa.data(), 0,
                                 b.data(), sb.data(), 1, nullptr, d.data(), 2,
                                 1, cols, 1),
            0);
  EXPECT_EQ(d, (std::vector<float>{268, 138}));
  // Operands swapped (2-D a, 1-D b): d^T.
  std::vector<float> dt(2);
  ASSERT_EQ(te_rt_gemm_fp8_block(ctx, TE_RT_DTYPE_F32, b.data(), sb.data(), 1,
                                 a.data(), sa.data(), 0, nullptr, dt.data(), 1,
                                 2, cols, 0),
            0);
  EXPECT_EQ(dt, (std::vector<float>{129, 64}));
}

TEST_F(Abi, FP8BlockArgumentChecks) {
  float f[8] = {};
  uint8_t q[8] = {};
  EXPECT_FAILS_WITH(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                             1, q, nullptr, nullptr, nullptr),
                    "te_rt_quantize_fp8_block: data and scale_inv must both "
                    "be given or both be NULL");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                             1, nullptr, nullptr, q, nullptr),
                    "te_rt_quantize_fp8_block: columnwise_data and "
                    "columnwise_scale_inv must both be given or both be NULL");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                             1, nullptr, nullptr, nullptr,
                                             nullptr),
                    "te_rt_quantize_fp8_block: no copy requested (data and "
                    "columnwise_data are NULL)");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, f, 2, 2, 3,
                                             1, q, f, nullptr, nullptr),
                    "te_rt_quantize_fp8_block: block_2d must be 0 or 1, got "
                    "3");
  EXPECT_FAILS_WITH(te_rt_gemm_fp8_block(ctx, TE_RT_DTYPE_F32, q, f, 1, q, f,
                                         1, nullptr, f, 1, 1, 1, 0),
                    "te_rt_gemm_fp8_block: both operands use 128x128 blocks "
                    "(at most one may, as in TransformerEngine)");
  EXPECT_FAILS_WITH(te_rt_gemm_fp8_block(ctx, TE_RT_DTYPE_F32, q, nullptr, 0,
                                         q, f, 0, nullptr, f, 1, 1, 1, 0),
                    "te_rt_gemm_fp8_block: a_scale_inv is NULL");
}

TEST_F(Abi, QuantizeMXFP8ByHand) {
  // x [32, 64] of ones, x[0][0] = 3, row 2's second block all zero.
  //   rowwise (0, 0): amax 3 -> 3/448 -> 2^-7 (e 120): 1 -> 128 (0x70),
  //   3 -> 384 (0x7C); other blocks amax 1 -> 2^-8 (e 119): 1 -> 256
  //   (0x78); the zero block: e 0, bytes 0.
  //   columnwise (blocks of 32 down each column): column 0 {3, 1, ...} ->
  //   e 120; columns 1.. -> 119 (column 32..63 include row 2's zeros,
  //   still amax 1).
  const int64_t rows = 32, cols = 64;
  std::vector<float> x(rows * cols, 1.0f);
  x[0] = 3;
  for (int64_t j = 32; j < 64; ++j)
    x[2 * cols + j] = 0;
  std::vector<uint8_t> q(rows * cols), cq(rows * cols);
  // Compact scales: rowwise [roundup(32, 128), roundup(2, 4)], columnwise
  // [roundup(1, 4), roundup(64, 128)].
  std::vector<uint8_t> s(128 * 4, 0xAA), cs(4 * 128, 0xAA);
  ASSERT_EQ(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, x.data(), rows, cols,
                                 TE_RT_FP8_E4M3, 0, q.data(), s.data(),
                                 cq.data(), cs.data()),
            0)
      << lastError();
  EXPECT_EQ(q[0], 0x7C);
  EXPECT_EQ(q[1], 0x70);
  EXPECT_EQ(q[32], 0x78);
  EXPECT_EQ(q[2 * cols + 40], 0x00);
  EXPECT_EQ(s[0], 120);
  EXPECT_EQ(s[1], 119);
  EXPECT_EQ(s[4 + 0], 119);
  EXPECT_EQ(s[2 * 4 + 1], 0);
  EXPECT_EQ(s[2], 0);       // padding column
  EXPECT_EQ(s[32 * 4], 0);  // padding row
  // Columnwise data keeps the [rows, cols] layout.
  EXPECT_EQ(cq[0], 0x7C);
  EXPECT_EQ(cq[cols], 0x70);
  EXPECT_EQ(cq[1], 0x78);
  EXPECT_EQ(cs[0], 120);
  EXPECT_EQ(cs[1], 119);
  EXPECT_EQ(cs[63], 119);
  EXPECT_EQ(cs[64], 0);
  EXPECT_EQ(cs[128], 0);
  // Swizzled (cuBLAS's 128x4 tiles): rowwise (r, c) at (r % 32) * 16 +
  // (r / 32) * 4 + c; the columnwise scales are swizzled as their transpose
  // [128, 4], so column j's first block is at (j % 32) * 16 + (j / 32) * 4.
  std::vector<uint8_t> sw(128 * 4), csw(128 * 4);
  ASSERT_EQ(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, x.data(), rows, cols,
                                 TE_RT_FP8_E4M3, 1, q.data(), sw.data(),
                                 cq.data(), csw.data()),
            0)
      << lastError();
  EXPECT_EQ(sw[0], 120);
  EXPECT_EQ(sw[1], 119);
  EXPECT_EQ(sw[16], 119);     // (1, 0)
  EXPECT_EQ(sw[2 * 16 + 1], 0); // (2, 1): the zero block
  EXPECT_EQ(csw[0], 120);
  EXPECT_EQ(csw[16], 119);    // column 1
  EXPECT_EQ(csw[31 * 16 + 4], 119); // column 63 = (63 % 32) * 16 + 4
}

TEST_F(Abi, GemmMXFP8IsTheGemmOfTheDequantizedOperands) {
  const int64_t rows = 32, cols = 64;
  std::vector<float> x(rows * cols, 1.0f);
  x[0] = 3;
  std::vector<float> ones(rows * cols, 1.0f);
  for (int32_t swz : {0, 1}) {
    std::vector<uint8_t> q(rows * cols), s(512), cq(rows * cols), cs(512);
    std::vector<uint8_t> o(rows * cols), os(512), oc(rows * cols), ocs(512);
    ASSERT_EQ(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, x.data(), rows, cols,
                                   TE_RT_FP8_E4M3, swz, q.data(), s.data(),
                                   cq.data(), cs.data()),
              0);
    ASSERT_EQ(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, ones.data(), rows,
                                   cols, TE_RT_FP8_E4M3, swz, o.data(),
                                   os.data(), oc.data(), ocs.data()),
              0);
    // Rowwise x rowwise: d [32, 32] = x [32, 64] . ones [32, 64]^T: row
    // sums {66, 64, ...}, + bias 1.
    std::vector<float> bias(32, 1.0f), d(32 * 32, -7);
    ASSERT_EQ(te_rt_gemm_mxfp8(ctx, TE_RT_DTYPE_F32, TE_RT_FP8_E4M3, q.data(),
                               s.data(), 0, TE_RT_FP8_E4M3, o.data(), os.data(),
                               0, swz, bias.data(), d.data(), 32, 32, 64, 0),
              0)
        << lastError();
    EXPECT_EQ(d[0], 67);
    EXPECT_EQ(d[31], 67);
    EXPECT_EQ(d[32], 65);
    // Columnwise x columnwise (the wgrad form): A [64, 32] = x^T, B [64, 32]
    // = ones^T (both from [32, 64] tensors, k = 32): d = x^T . ones, column
    // sums of x: {34, 32, ...}.
    std::vector<float> dw(64 * 64, -7);
    ASSERT_EQ(te_rt_gemm_mxfp8(ctx, TE_RT_DTYPE_F32, TE_RT_FP8_E4M3, cq.data(),
                               cs.data(), 1, TE_RT_FP8_E4M3, oc.data(),
                               ocs.data(), 1, swz, nullptr, dw.data(), 64, 64,
                               32, 0),
              0)
        << lastError();
    EXPECT_EQ(dw[0], 34);
    EXPECT_EQ(dw[63], 34);
    EXPECT_EQ(dw[64], 32);
  }
}

TEST_F(Abi, MXFP8ArgumentChecks) {
  float f[64] = {};
  uint8_t q[64] = {};
  EXPECT_FAILS_WITH(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, f, 32, 48, 0,
                                         0, q, q, nullptr, nullptr),
                    "te_rt_quantize_mxfp8: cols must be a multiple of 32 "
                    "(MXFP8 blocks), got 48");
  EXPECT_FAILS_WITH(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, f, 32, 32, 0,
                                         2, q, q, nullptr, nullptr),
                    "te_rt_quantize_mxfp8: swizzled must be 0 or 1, got 2");
  EXPECT_FAILS_WITH(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, f, 32, 32, 0,
                                         0, nullptr, nullptr, nullptr, nullptr),
                    "te_rt_quantize_mxfp8: no copy requested (data and "
                    "columnwise_data are NULL)");
  EXPECT_FAILS_WITH(te_rt_gemm_mxfp8(ctx, TE_RT_DTYPE_F32, 0, q, q, 0, 0, q, q,
                                     0, 0, nullptr, f, 1, 1, 16, 0),
                    "te_rt_gemm_mxfp8: k must be a multiple of 32 (MXFP8 "
                    "blocks), got 16");
  EXPECT_FAILS_WITH(te_rt_gemm_mxfp8(ctx, TE_RT_DTYPE_F32, 1, q, q, 0, 1, q, q,
                                     0, 0, nullptr, f, 1, 1, 32, 0),
                    "te_rt_gemm_mxfp8: E5M2 x E5M2 GEMMs are not supported "
                    "(one operand must be E4M3)");
}

} // namespace
