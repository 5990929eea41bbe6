//===- FormatsTest.cpp - FP8 / FP4 / E8M0 conversions -----------*- C++ -*-===//
//
// Hand-computed values and edge cases (NaN, inf, subnormals, saturation,
// ties) of te_kernels/formats.h, shared by the CPU backend and the kernels.
//
//===----------------------------------------------------------------------===//

#include "te_kernels/formats.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace te::formats;

namespace {

float pow2(int e) { return std::ldexp(1.0f, e); }

TEST(E4M3, HandComputedValues) {
  EXPECT_EQ(floatToE4M3(0.0f), 0x00);
  EXPECT_EQ(floatToE4M3(-0.0f), 0x80);
  EXPECT_EQ(floatToE4M3(1.0f), 0x38);   // exp 7 (bias 7), man 0
  EXPECT_EQ(floatToE4M3(1.125f), 0x39); // one mantissa step
  EXPECT_EQ(floatToE4M3(-2.0f), 0xC0);
  EXPECT_EQ(floatToE4M3(448.0f), 0x7E);   // largest finite
  EXPECT_EQ(floatToE4M3(pow2(-6)), 0x08); // smallest normal
  EXPECT_EQ(floatToE4M3(pow2(-9)), 0x01); // smallest subnormal
  EXPECT_EQ(floatToE4M3(7 * pow2(-9)), 0x07);
}

TEST(E4M3, RoundsToNearestEven) {
  // 1 + 1/16 is halfway between 1 (even, man 0) and 1.125 (odd): down.
  EXPECT_EQ(floatToE4M3(1.0625f), 0x38);
  // 1.125 + 1/16 is halfway between 1.125 (odd) and 1.25 (even): up.
  EXPECT_EQ(floatToE4M3(1.1875f), 0x3A);
  EXPECT_EQ(floatToE4M3(std::nextafter(1.0625f, 2.0f)), 0x39);
  // Half the smallest subnormal ties to zero (even).
  EXPECT_EQ(floatToE4M3(pow2(-10)), 0x00);
  EXPECT_EQ(floatToE4M3(std::nextafter(pow2(-10), 1.0f)), 0x01);
  // Subnormal 1.5 ulps ties to 2 (even).
  EXPECT_EQ(floatToE4M3(3 * pow2(-10)), 0x02);
  // Rounding up across a binade: 15.5 -> 16.
  EXPECT_EQ(floatToE4M3(15.5f), 0x58);
}

TEST(E4M3, SaturatesAndHandlesSpecials) {
  EXPECT_EQ(floatToE4M3(464.0f), 0x7E); // halfway to 512: ties to 448 (even)
  EXPECT_EQ(floatToE4M3(465.0f), 0x7E); // would round to 512: saturate
  EXPECT_EQ(floatToE4M3(1e30f), 0x7E);
  EXPECT_EQ(floatToE4M3(-1e30f), 0xFE);
  EXPECT_EQ(floatToE4M3(INFINITY), 0x7E);
  EXPECT_EQ(floatToE4M3(-INFINITY), 0xFE);
  EXPECT_EQ(floatToE4M3(NAN), 0x7F);
  EXPECT_EQ(floatToE4M3(-NAN), 0x7F);   // NaN loses its sign (as on the GPU)
  EXPECT_EQ(floatToE4M3(1e-30f), 0x00); // underflow
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3ToFloat(0xFF)));
}

TEST(E4M3, EveryCodeRoundTrips) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7F) == 0x7F)
      continue; // NaN
    float v = e4m3ToFloat(static_cast<uint8_t>(c));
    EXPECT_EQ(floatToE4M3(v), c) << "code " << c << " value " << v;
  }
  EXPECT_EQ(e4m3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(e4m3ToFloat(0x01), pow2(-9));
}

TEST(E5M2, HandComputedValuesAndSpecials) {
  EXPECT_EQ(floatToE5M2(1.0f), 0x3C);      // exp 15 (bias 15)
  EXPECT_EQ(floatToE5M2(57344.0f), 0x7B);  // largest finite
  EXPECT_EQ(floatToE5M2(pow2(-14)), 0x04); // smallest normal
  EXPECT_EQ(floatToE5M2(pow2(-16)), 0x01); // smallest subnormal
  // 57344 is odd (man 11): the tie at 61440 rounds up, i.e. overflows.
  EXPECT_EQ(floatToE5M2(61440.0f), 0x7B);
  EXPECT_EQ(floatToE5M2(INFINITY), 0x7B);
  EXPECT_EQ(floatToE5M2(-INFINITY), 0xFB);
  EXPECT_EQ(floatToE5M2(NAN), 0x7F); // every NaN (as on the GPU)
  EXPECT_EQ(floatToE5M2(-NAN), 0x7F);
  EXPECT_EQ(e5m2ToFloat(0x7C), INFINITY);
  EXPECT_EQ(e5m2ToFloat(0xFC), -INFINITY);
  EXPECT_TRUE(std::isnan(e5m2ToFloat(0x7D)));
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7C) == 0x7C)
      continue; // inf and NaN
    EXPECT_EQ(floatToE5M2(e5m2ToFloat(static_cast<uint8_t>(c))), c);
  }
}

TEST(E2M1, GridRoundingAndSaturation) {
  const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(e2m1ToFloat(c), grid[c]);
    EXPECT_EQ(e2m1ToFloat(c | 8), -grid[c]);
    EXPECT_EQ(floatToE2M1(grid[c]), c);
  }
  EXPECT_EQ(floatToE2M1(-1.5f), 0xB);
  EXPECT_EQ(floatToE2M1(0.25f), 0x0); // tie 0 / 0.5 -> 0 (even)
  EXPECT_EQ(floatToE2M1(0.75f), 0x2); // tie 0.5 / 1 -> 1 (even)
  EXPECT_EQ(floatToE2M1(2.5f), 0x4);  // tie 2 / 3 -> 2 (even)
  EXPECT_EQ(floatToE2M1(3.5f), 0x6);  // tie 3 / 4 -> 4 (even)
  EXPECT_EQ(floatToE2M1(5.0f), 0x6);  // tie 4 / 6 -> 4 (even)
  EXPECT_EQ(floatToE2M1(5.5f), 0x7);
  EXPECT_EQ(floatToE2M1(7.0f), 0x7); // saturate
  EXPECT_EQ(floatToE2M1(-100.0f), 0xF);
  EXPECT_EQ(floatToE2M1(INFINITY), 0x7);
}

TEST(E8M0, RoundsUpToPowersOfTwo) {
  EXPECT_EQ(floatToE8M0RoundUp(1.0f), 127);
  EXPECT_EQ(floatToE8M0RoundUp(1.5f), 128);
  EXPECT_EQ(floatToE8M0RoundUp(2.0f), 128);
  EXPECT_EQ(floatToE8M0RoundUp(0.75f), 127);
  EXPECT_EQ(floatToE8M0RoundUp(std::nextafter(1.0f, 2.0f)), 128);
  // amax 600 over E4M3's 448: scale 2 (1.34 rounded up).
  EXPECT_EQ(floatToE8M0RoundUp(600.0f / 448.0f), 128);
  EXPECT_EQ(floatToE8M0RoundUp(0.0f), 0);
  EXPECT_EQ(floatToE8M0RoundUp(pow2(-130)), 0); // below 2^-127
  EXPECT_EQ(floatToE8M0RoundUp(pow2(-127)), 0); // exactly 2^-127
  EXPECT_EQ(floatToE8M0RoundUp(std::nextafter(pow2(-127), 1.0f)), 1);
  EXPECT_EQ(floatToE8M0RoundUp(-1.5f), 128); // the sign is ignored
  EXPECT_EQ(floatToE8M0RoundUp(-INFINITY), 254);
  EXPECT_EQ(floatToE8M0RoundUp(pow2(127)), 254);
  EXPECT_EQ(floatToE8M0RoundUp(3e38f), 254); // saturate
  EXPECT_EQ(floatToE8M0RoundUp(INFINITY), 254);
  EXPECT_EQ(floatToE8M0RoundUp(NAN), 255);
  EXPECT_EQ(e8m0ToFloat(127), 1.0f);
  EXPECT_EQ(e8m0ToFloat(0), pow2(-127));
  EXPECT_EQ(e8m0ToFloat(254), pow2(127));
  EXPECT_TRUE(std::isnan(e8m0ToFloat(255)));
}

} // namespace
