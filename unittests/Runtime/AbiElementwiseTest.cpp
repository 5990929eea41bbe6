//===- AbiElementwiseTest.cpp - runtime ABI: rounding -----------*- C++ -*-===//
//
// The te_rt_* calls through the C ABI (split from AbiTest.cpp by family;
// the fixture is AbiFixture.h): rounding, casts, elementwise calls and the recipe-state update.
//
//===----------------------------------------------------------------------===//

#include "AbiFixture.h"

using namespace te::test;

namespace {

//===----------------------------------------------------------------------===//
// Rounding
//===----------------------------------------------------------------------===//

float bits(uint32_t u) { return floatOf(u); }

TEST(AbiRounding, BF16EdgeCases) {
  // Ties go to the even neighbour, either way.
  EXPECT_EQ(floatToBF16(bits(0x3f808000)), 0x3f80); // 1 + 2^-8 -> 1
  EXPECT_EQ(floatToBF16(bits(0x3f818000)), 0x3f82); // odd: up
  EXPECT_EQ(floatToBF16(bits(0x3f808001)), 0x3f81); // above the tie
  EXPECT_EQ(floatToBF16(bits(0x3f807fff)), 0x3f80); // below the tie
  EXPECT_EQ(floatToBF16(bits(0xbf808000)), 0xbf80); // sign kept
  EXPECT_EQ(floatToBF16(bits(0xbf818000)), 0xbf82);
  // NaNs stay (quiet) NaNs, also when only low payload bits are set.
  EXPECT_EQ(floatToBF16(bits(0x7fc00000)), 0x7fc0);
  EXPECT_EQ(floatToBF16(bits(0x7f800001)), 0x7fc0);
  EXPECT_EQ(floatToBF16(bits(0xff800001)), 0xffc0);
  EXPECT_EQ(floatToBF16(bits(0x7fffffff)), 0x7fff);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(NAN))));
  // Overflow to inf; the largest bf16 stays finite.
  EXPECT_EQ(floatToBF16(FLT_MAX), 0x7f80);
  EXPECT_EQ(floatToBF16(-FLT_MAX), 0xff80);
  EXPECT_EQ(floatToBF16(bits(0x7f7f7fff)), 0x7f7f);
  EXPECT_EQ(floatToBF16(bits(0x7f7f8000)), 0x7f80); // tie, odd -> inf
  EXPECT_EQ(floatToBF16(INFINITY), 0x7f80);
  EXPECT_EQ(floatToBF16(-INFINITY), 0xff80);
  // Zeros and subnormals.
  EXPECT_EQ(floatToBF16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBF16(bits(0x00008000)), 0x0000);
  EXPECT_EQ(floatToBF16(bits(0x00018000)), 0x0002);
  EXPECT_EQ(bf16ToFloat(0x3fc0), 1.5f);
  EXPECT_EQ(bf16ToFloat(0xc2f7), -123.5f);
  // Every bf16 survives the round trip through fp32.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = bf16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f))
      EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(f)))) << h;
    else
      EXPECT_EQ(floatToBF16(f), h) << h;
  }
}

TEST(AbiRounding, F16EdgeCases) {
  EXPECT_EQ(floatToF16(1.0f), 0x3c00);
  EXPECT_EQ(floatToF16(-2.0f), 0xc000);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff);
  EXPECT_EQ(floatToF16(65519.0f), 0x7bff);
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00); // tie, odd -> inf
  EXPECT_EQ(floatToF16(-1e6f), 0xfc00);
  EXPECT_EQ(floatToF16(1.0f + 0x1p-11f), 0x3c00); // tie -> even
  EXPECT_EQ(floatToF16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(floatToF16(0x1p-14f), 0x0400);            // smallest normal
  EXPECT_EQ(floatToF16(0x1p-14f - 0x1p-25f), 0x0400); // tie, odd -> up
  EXPECT_EQ(floatToF16(0x1p-24f), 0x0001);            // smallest subnormal
  EXPECT_EQ(floatToF16(0x1p-25f), 0x0000);            // tie -> even (zero)
  EXPECT_EQ(floatToF16(0x1.8p-24f), 0x0002);          // 1.5 units -> 2
  EXPECT_EQ(floatToF16(0x1.8p-23f), 0x0003);          // exact 3 units
  EXPECT_EQ(floatToF16(-0x1p-26f), 0x8000);
  EXPECT_EQ(floatToF16(bits(0x7f800001)), 0x7e00); // NaN stays NaN
  EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(NAN))));
  EXPECT_EQ(f16ToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(f16ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(f16ToFloat(0xfc00), -INFINITY);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = f16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f))
      EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(f)))) << h;
    else
      EXPECT_EQ(floatToF16(f), h) << h;
  }
}

#if defined(__FLT16_MAX__)
TEST(AbiRounding, F16MatchesTheCompiler) {
  // _Float16's conversions are correctly rounded (RNE); compare over every
  // f16 code and a stride through all fp32 patterns.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t code = static_cast<uint16_t>(h);
    _Float16 v;
    std::memcpy(&v, &code, 2);
    float want = static_cast<float>(v), got = f16ToFloat(code);
    if (std::isnan(want))
      EXPECT_TRUE(std::isnan(got)) << h;
    else
      EXPECT_EQ(bitsOf(got), bitsOf(want)) << h;
  }
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 997) {
    float f = floatOf(static_cast<uint32_t>(u));
    _Float16 v = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &v, 2);
    uint16_t got = floatToF16(f);
    if (std::isnan(f))
      ASSERT_EQ(got & 0x7e00, 0x7e00) << std::hex << u;
    else
      ASSERT_EQ(got, want) << std::hex << u;
  }
}
#endif

TEST_F(Abi, CastRoundsOnceAndKeepsBits) {
  const float src[6] = {1.0f, bits(0x3f808000), bits(0x3f818000),
                        NAN,  FLT_MAX,          -0.0f};
  uint16_t bf[6], hf[6], bfFromHf[6];
  ASSERT_EQ(te_rt_cast(ctx, TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, src, bf, 6), 0);
  EXPECT_EQ(bf[0], 0x3f80);
  EXPECT_EQ(bf[1], 0x3f80);
  EXPECT_EQ(bf[2], 0x3f82);
  EXPECT_EQ(bf[3] & 0x7fc0, 0x7fc0);
  EXPECT_EQ(bf[4], 0x7f80);
  EXPECT_EQ(bf[5], 0x8000);
  ASSERT_EQ(te_rt_cast(ctx, TE_RT_DTYPE_F32, TE_RT_DTYPE_F16, src, hf, 6), 0);
  EXPECT_EQ(hf[0], 0x3c00);
  EXPECT_EQ(hf[1], 0x3c04); // 1 + 2^-8 is exact in f16
  EXPECT_EQ(hf[4], 0x7c00);
  // f16 -> bf16 goes through fp32 exactly, so it is rounded once.
  ASSERT_EQ(te_rt_cast(ctx, TE_RT_DTYPE_F16, TE_RT_DTYPE_BF16, hf, bfFromHf, 6),
            0);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(bfFromHf[i], floatToBF16(f16ToFloat(hf[i]))) << i;
  float back[6];
  ASSERT_EQ(te_rt_cast(ctx, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F32, bf, back, 6), 0);
  EXPECT_EQ(back[2], bf16ToFloat(0x3f82));
  // Same dtype: bits unchanged, NaN payload included.
  uint16_t nanIn[2] = {0x7f81, 0x1234}, nanOut[2];
  ASSERT_EQ(
      te_rt_cast(ctx, TE_RT_DTYPE_BF16, TE_RT_DTYPE_BF16, nanIn, nanOut, 2), 0);
  EXPECT_EQ(nanOut[0], 0x7f81);
  EXPECT_EQ(nanOut[1], 0x1234);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

TEST_F(Abi, AddRoundsOnce) {
  const float a[2] = {1, 2}, b[2] = {3, 4.5f};
  float c[2];
  ASSERT_EQ(te_rt_add(ctx, TE_RT_DTYPE_F32, a, b, c, 2), 0);
  expectNear(c, {4, 6.5f}, 0, "c");
  // 1 + (2^-8 + 2^-15): above the tie, so up to 1 + 2^-7.
  const uint16_t ha[1] = {0x3f80}, hb[1] = {floatToBF16(0x1p-8f + 0x1p-15f)};
  uint16_t hc[1];
  ASSERT_EQ(bf16ToFloat(hb[0]), 0x1p-8f + 0x1p-15f);
  ASSERT_EQ(te_rt_add(ctx, TE_RT_DTYPE_BF16, ha, hb, hc, 1), 0);
  EXPECT_EQ(hc[0], 0x3f81);
  // In place.
  float inPlace[2] = {1, 2};
  ASSERT_EQ(te_rt_add(ctx, TE_RT_DTYPE_F32, inPlace, b, inPlace, 2), 0);
  expectNear(inPlace, {4, 6.5f}, 0, "in place");
}

TEST_F(Abi, Transpose2x3) {
  const float src[6] = {1, 2, 3, 4, 5, 6};
  float dst[6];
  ASSERT_EQ(te_rt_transpose(ctx, TE_RT_DTYPE_F32, src, dst, 2, 3), 0);
  expectNear(dst, {1, 4, 2, 5, 3, 6}, 0, "f32");
  const uint16_t hsrc[6] = {1, 2, 3, 4, 5, 6};
  uint16_t hdst[6];
  ASSERT_EQ(te_rt_transpose(ctx, TE_RT_DTYPE_BF16, hsrc, hdst, 3, 2), 0);
  const uint16_t want[6] = {1, 3, 5, 2, 4, 6};
  EXPECT_EQ(std::memcmp(hdst, want, sizeof(want)), 0);
  // Larger than a tile, ragged.
  const int64_t rows = 77, cols = 45;
  auto big = exactRandom(rows * cols, 31);
  std::vector<float> t(rows * cols);
  ASSERT_EQ(
      te_rt_transpose(ctx, TE_RT_DTYPE_F32, big.data(), t.data(), rows, cols),
      0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      ASSERT_EQ(t[j * rows + i], big[i * cols + j]);
}

// The byte transpose makes the columnwise copy of a rowwise FP8 tensor:
// exactly the `transpose` that quantizing with both usages writes.
TEST_F(Abi, TransposeBytes) {
  const uint8_t src[6] = {1, 2, 3, 4, 5, 0xff};
  uint8_t dst[6];
  ASSERT_EQ(te_rt_transpose_bytes(ctx, src, dst, 2, 3), 0);
  const uint8_t want[6] = {1, 4, 2, 5, 3, 0xff};
  EXPECT_EQ(std::memcmp(dst, want, sizeof(want)), 0);
  // Empty: nothing to do.
  EXPECT_EQ(te_rt_transpose_bytes(ctx, src, dst, 0, 3), 0);
  const int64_t rows = 77, cols = 48;
  auto x = exactRandom(rows * cols, 7);
  std::vector<uint8_t> data(rows * cols), t(rows * cols), made(rows * cols);
  float scaleInv = 0, amax = 0;
  ASSERT_EQ(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, x.data(), rows, cols,
                               TE_RT_FP8_E4M3, nullptr, 0, data.data(),
                               t.data(), &scaleInv, &amax, nullptr),
            0);
  ASSERT_EQ(te_rt_transpose_bytes(ctx, data.data(), made.data(), rows, cols),
            0);
  EXPECT_EQ(made, t);
  // te.add_columnwise's one call: the same bytes, and the scale carried.
  std::vector<uint8_t> col(rows * cols);
  float colScaleInv = -1;
  ASSERT_EQ(te_rt_add_columnwise_fp8(ctx, data.data(), &scaleInv, rows, cols,
                                     col.data(), &colScaleInv),
            0)
      << te_rt_last_error();
  EXPECT_EQ(col, t);
  EXPECT_EQ(colScaleInv, scaleInv);
  // Empty: the scale alone.
  colScaleInv = -1;
  ASSERT_EQ(te_rt_add_columnwise_fp8(ctx, data.data(), &scaleInv, 0, cols,
                                     col.data(), &colScaleInv),
            0);
  EXPECT_EQ(colScaleInv, scaleInv);
}

// te_rt_branch_*: in order on the cpu backend (a branch's call gives the
// same bytes), with the bracket checked: begin inside a run, end outside
// one, join inside one and a run below -1 fail with the call's name; the
// entry's end (te_rt_arena_release) closes a run a failure left open.
TEST_F(Abi, BranchesRunInOrderAndCheckTheirBrackets) {
  std::vector<float> a = {1.5f, -2.0f, 3.25f}, b = {0.5f, 4.0f, -1.0f};
  std::vector<float> inOrder(3), branched(3);
  ASSERT_EQ(te_rt_add(ctx, TE_RT_DTYPE_F32, a.data(), b.data(),
                      inOrder.data(), 3),
            0);
  ASSERT_EQ(te_rt_branch_join(ctx, -1), 0) << "nothing pending: nothing to do";
  ASSERT_EQ(te_rt_branch_begin(ctx), 0) << lastError();
  EXPECT_NE(te_rt_branch_begin(ctx), 0) << "branches do not nest";
  EXPECT_NE(lastError().find("te_rt_branch_begin"), std::string::npos)
      << lastError();
  EXPECT_NE(te_rt_branch_join(ctx, 0), 0) << "joined while open";
  EXPECT_NE(lastError().find("still open"), std::string::npos) << lastError();
  ASSERT_EQ(te_rt_add(ctx, TE_RT_DTYPE_F32, a.data(), b.data(),
                      branched.data(), 3),
            0);
  ASSERT_EQ(te_rt_branch_end(ctx), 0) << lastError();
  EXPECT_NE(te_rt_branch_end(ctx), 0) << "no branch open";
  EXPECT_NE(lastError().find("no branch is open"), std::string::npos)
      << lastError();
  EXPECT_NE(te_rt_branch_join(ctx, -2), 0) << "a run below -1";
  EXPECT_NE(lastError().find("run is -2"), std::string::npos) << lastError();
  ASSERT_EQ(te_rt_branch_join(ctx, 0), 0) << lastError();
  ASSERT_EQ(te_rt_branch_join(ctx, -1), 0) << lastError();
  EXPECT_EQ(branched, inOrder);
  ASSERT_EQ(te_rt_branch_begin(ctx), 0) << lastError();
  te_rt_arena_release(ctx, nullptr);
  EXPECT_NE(te_rt_branch_end(ctx), 0) << "closed by the release";
  EXPECT_NE(te_rt_branch_begin(nullptr), 0) << "no context";
}

//===----------------------------------------------------------------------===//
// Recipe state
//===----------------------------------------------------------------------===//

TEST_F(Abi, AmaxUpdateRollsTheHistory) {
  // len 3, two slots. History rows {5, 1}, {7, 0}, {2, 0}; this step's
  // amax {4, 0} replaces row 0. max: slot 0 = 7 -> 448 / 7 / 2 (margin 1)
  // = 32; slot 1 = 0 keeps its scale. Rolled: rows {7, 0}, {2, 0}, {4, 0},
  // then row 0 zeroed.
  std::vector<float> h = {5, 1, 7, 0, 2, 0}, s = {1, 1}, amax = {4, 0};
  std::vector<float> h2(6), s2(2);
  ASSERT_EQ(te_rt_amax_update(ctx, h.data(), s.data(), amax.data(), 3, 2, 448,
                              1, 0, h2.data(), s2.data()),
            0)
      << lastError();
  EXPECT_EQ(h2, (std::vector<float>{0, 0, 2, 0, 4, 0}));
  EXPECT_EQ(s2, (std::vector<float>{32, 1}));
  // most_recent, in place: slot 0 uses 4 -> 112; slot 1's amax 0 keeps its
  // scale.
  ASSERT_EQ(te_rt_amax_update(ctx, h.data(), s.data(), amax.data(), 3, 2, 448,
                              0, 1, h.data(), s.data()),
            0);
  EXPECT_EQ(s, (std::vector<float>{112, 1}));
  EXPECT_EQ(h, (std::vector<float>{0, 0, 2, 0, 4, 0}));
}

TEST_F(Abi, AmaxUpdateUnusedSlotsAreZeroAmaxes) {
  // te_rt_amax_update_unused with NaN in the slots its mask marks gives
  // the bytes te_rt_amax_update gives with 0 there: those amaxes are never
  // read. Both algorithms, in place or not, a slot whose history is all 0
  // (its scale kept), 64 slots with the sign bit of the mask set, and a
  // mask of every slot.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.0f, 500.0f);
  struct Case {
    int64_t len, n;
    uint64_t unused;
  } cases[] = {{3, 4, 0x6},
               {16, 7, 0x45},
               {1024, 64, 0x8000000000000001ull},
               {5, 3, 0x7},
               {1, 1, 0x1}};
  for (Case cs : cases)
    for (int32_t recent : {0, 1})
      for (bool inPlace : {false, true}) {
        const int64_t len = cs.len, n = cs.n;
        std::vector<float> h(len * n), sc(n), zeroed(n);
        for (float &v : h)
          v = u(rng);
        for (float &v : sc)
          v = u(rng) / 100.0f + 0.5f;
        for (float &v : zeroed)
          v = u(rng);
        for (int64_t r = 1; r < len; ++r)
          h[r * n] = 0.0f;
        std::vector<float> nan = zeroed;
        for (int64_t s = 0; s < n; ++s)
          if ((cs.unused >> s) & 1) {
            zeroed[s] = 0.0f;
            nan[s] = NAN;
          }
        std::string tag =
            "len=" + std::to_string(len) + " n=" + std::to_string(n) +
            (recent ? " most_recent" : " max") + (inPlace ? " in place" : "");
        std::vector<float> wantH(h.size()), wantS(n);
        ASSERT_EQ(te_rt_amax_update(ctx, h.data(), sc.data(), zeroed.data(),
                                    len, n, 448, 1, recent, wantH.data(),
                                    wantS.data()),
                  0)
            << tag << ": " << lastError();
        std::vector<float> gotH = h, gotS = sc, outH(h.size()), outS(n);
        float *nh = inPlace ? gotH.data() : outH.data();
        float *ns = inPlace ? gotS.data() : outS.data();
        ASSERT_EQ(te_rt_amax_update_unused(ctx, gotH.data(), gotS.data(),
                                           nan.data(), len, n, 448, 1, recent,
                                           int64_t(cs.unused), nh, ns),
                  0)
            << tag << ": " << lastError();
        EXPECT_EQ(std::memcmp(nh, wantH.data(), h.size() * 4), 0)
            << tag << ": history";
        EXPECT_EQ(std::memcmp(ns, wantS.data(), n * 4), 0) << tag << ": scale";
        // te_rt_amax_update_fork: on the cpu backend, in order, the same
        // bytes (the caller then joins with te_rt_arena_release).
        gotH = h, gotS = sc;
        ASSERT_EQ(te_rt_amax_update_fork(ctx, gotH.data(), gotS.data(),
                                         nan.data(), len, n, 448, 1, recent,
                                         int64_t(cs.unused), nh, ns),
                  0)
            << tag << ": " << lastError();
        te_rt_arena_release(ctx, nullptr);
        EXPECT_EQ(std::memcmp(nh, wantH.data(), h.size() * 4), 0)
            << tag << ": forked history";
        EXPECT_EQ(std::memcmp(ns, wantS.data(), n * 4), 0)
            << tag << ": forked scale";
      }
  // A zero mask is te_rt_amax_update: the NaN is read.
  std::vector<float> h = {1, 2}, sc = {1}, amax = {NAN}, h2(2), s2(1);
  ASSERT_EQ(te_rt_amax_update_unused(ctx, h.data(), sc.data(), amax.data(), 2,
                                     1, 448, 0, 0, 0, h2.data(), s2.data()),
            0);
  EXPECT_TRUE(std::isnan(h2[1]));
}

} // namespace
