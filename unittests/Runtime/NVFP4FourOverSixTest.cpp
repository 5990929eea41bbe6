//===- NVFP4FourOverSixTest.cpp - NVFP4's 4-over-6 block scales -*- C++ -*-===//
//
// quantizeNVFP4FourOverSix against a straightforward implementation of TE's
// reference (NVFP4QuantizerRef with nvfp4_use_4over6): both candidates of
// every block, MAE or MSE, the 256 or 448 global bound, 1x16 and 16x16
// blocks; and blocks where each candidate wins by construction.
//
//===----------------------------------------------------------------------===//

#include "cpu/Quantize.h"
#include "te_kernels/formats.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

using namespace te::cpu;

namespace {

/// Round to the nearest E2M1 magnitude (ties to the even code), saturating.
uint8_t e2m1(float v) {
  static const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  float a = std::fabs(v);
  int best = 0;
  for (int i = 1; i < 8; ++i) {
    float d = std::fabs(grid[i] - a), db = std::fabs(grid[best] - a);
    if (d < db || (d == db && i % 2 == 0))
      best = i;
  }
  return static_cast<uint8_t>(best | (std::signbit(v) ? 8 : 0));
}

float e2m1Value(uint8_t c) {
  static const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  return (c & 8 ? -1.0f : 1.0f) * grid[c & 7];
}

struct Ref {
  std::vector<uint8_t> codes;  // one per element
  std::vector<uint8_t> scales; // one per block, [rows, cols / 16]
};

/// TE's _quantize_blockwise_4over6_reference, element by element.
Ref reference(const std::vector<float> &x, int rows, int cols, bool tile2d,
              bool mse, float bound) {
  float A = 0;
  for (float v : x)
    A = std::max(A, std::fabs(v));
  float enc = std::min(bound * 6.0f / A, FLT_MAX);
  if (A == 0 || enc == 0)
    enc = 1;
  float dec = 1.0f / enc;
  int nb = cols / 16;
  std::vector<float> vecMax(rows * nb);
  for (int i = 0; i < rows; ++i)
    for (int b = 0; b < nb; ++b) {
      float m = 0;
      int r0 = tile2d ? i / 16 * 16 : i, r1 = tile2d ? r0 + 16 : i + 1;
      for (int r = r0; r < r1; ++r)
        for (int j = 0; j < 16; ++j)
          m = std::max(m, std::fabs(x[r * cols + b * 16 + j]));
      vecMax[i * nb + b] = m;
    }
  Ref out{std::vector<uint8_t>(x.size()), std::vector<uint8_t>(rows * nb)};
  std::vector<float> err[2] = {std::vector<float>(rows * nb),
                               std::vector<float>(rows * nb)};
  std::vector<uint8_t> sc[2] = {std::vector<uint8_t>(rows * nb),
                                std::vector<uint8_t>(rows * nb)};
  std::vector<uint8_t> cd[2] = {std::vector<uint8_t>(x.size()),
                                std::vector<uint8_t>(x.size())};
  for (int k = 0; k < 2; ++k) // 0: map to 4, 1: map to 6
    for (int i = 0; i < rows; ++i)
      for (int b = 0; b < nb; ++b) {
        float base = vecMax[i * nb + b] / 6.0f * enc;
        if (k == 0)
          base = base * 1.5f;
        uint8_t s = te::formats::floatToE4M3(std::min(base, 448.0f));
        float sf = te::formats::e4m3ToFloat(s);
        float encBlock = std::min(1.0f / (sf * dec), FLT_MAX);
        float e = 0;
        for (int j = 0; j < 16; ++j) {
          int idx = i * cols + b * 16 + j;
          float v = std::min(std::max(x[idx] * encBlock, -6.0f), 6.0f);
          uint8_t c = e2m1(v);
          cd[k][idx] = c;
          float val = e2m1Value(c) * sf;
          val = val * A;
          val = val / (6.0f * bound);
          float d = val - x[idx];
          e = e + (mse ? d * d : std::fabs(d));
        }
        err[k][i * nb + b] = e;
        sc[k][i * nb + b] = s;
      }
  for (int i = 0; i < rows; ++i)
    for (int b = 0; b < nb; ++b) {
      bool pick4;
      if (tile2d) {
        int r0 = i / 16 * 16;
        float s[2];
        for (int k = 0; k < 2; ++k) {
          float rr[16];
          for (int r = 0; r < 16; ++r)
            rr[r] = err[k][(r0 + r) * nb + b];
          for (int h = 8; h >= 1; h /= 2)
            for (int r = 0; r < h; ++r)
              rr[r] = rr[r] + rr[r + h];
          s[k] = rr[0];
        }
        pick4 = s[0] < s[1];
      } else {
        pick4 = err[0][i * nb + b] < err[1][i * nb + b];
      }
      int k = pick4 ? 0 : 1;
      out.scales[i * nb + b] = sc[k][i * nb + b];
      for (int j = 0; j < 16; ++j)
        out.codes[i * cols + b * 16 + j] = cd[k][i * cols + b * 16 + j];
    }
  return out;
}

/// Runs quantizeNVFP4FourOverSix; codes unpacked, scales [rows, cols/16].
Ref run(const std::vector<float> &x, int rows, int cols, bool tile2d, bool mse,
        float bound, float *amax = nullptr) {
  std::vector<uint8_t> q(x.size() / 2);
  int64_t sc = nvfp4ScaleCols(cols);
  std::vector<uint8_t> s(((rows + 127) / 128 * 128) * sc);
  float a = quantizeNVFP4FourOverSix(x.data(), rows, cols, tile2d, mse, bound,
                                     q.data(), s.data());
  if (amax)
    *amax = a;
  Ref r{std::vector<uint8_t>(x.size()), std::vector<uint8_t>(rows * cols / 16)};
  for (size_t i = 0; i < x.size(); ++i)
    r.codes[i] = i % 2 ? q[i / 2] >> 4 : q[i / 2] & 0xF;
  for (int i = 0; i < rows; ++i)
    for (int b = 0; b < cols / 16; ++b)
      r.scales[i * (cols / 16) + b] = s[i * sc + b];
  return r;
}

TEST(NVFP4FourOverSix, MatchesReference) {
  const int rows = 48, cols = 64;
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (float &v : x)
    v = normal(gen) * (1 + (&v - x.data()) % 5); // varied block amaxes
  x[5] = 0.0f;
  int map4Total = 0;
  for (bool tile2d : {false, true})
    for (bool mse : {false, true})
      for (float bound : {256.0f, 448.0f}) {
        SCOPED_TRACE(testing::Message() << "2d " << tile2d << " mse " << mse
                                        << " bound " << bound);
        Ref want = reference(x, rows, cols, tile2d, mse, bound);
        float amax;
        Ref got = run(x, rows, cols, tile2d, mse, bound, &amax);
        EXPECT_EQ(got.codes, want.codes);
        EXPECT_EQ(got.scales, want.scales);
        float a = 0;
        for (float v : x)
          a = std::max(a, std::fabs(v));
        EXPECT_EQ(amax, a);
        // Both candidates are chosen somewhere: the map-to-4 scale is the
        // larger byte of the two for the same block amax.
        for (size_t i = 0; i < got.scales.size(); ++i) {
          int r = int(i) / (cols / 16), b = int(i) % (cols / 16);
          float m = 0;
          int r0 = tile2d ? r / 16 * 16 : r, r1 = tile2d ? r0 + 16 : r + 1;
          for (int rr = r0; rr < r1; ++rr)
            for (int j = 0; j < 16; ++j)
              m = std::max(m, std::fabs(x[rr * cols + b * 16 + j]));
          float enc = bound * 6.0f / a;
          uint8_t map6 =
              te::formats::floatToE4M3(std::min(m / 6.0f * enc, 448.0f));
          map4Total += got.scales[i] != map6;
        }
      }
  EXPECT_GT(map4Total, 0);
  // MAE and MSE choose differently somewhere on this data.
  EXPECT_NE(run(x, rows, cols, false, false, 256).scales,
            run(x, rows, cols, false, true, 256).scales);
  // The bound changes the scales.
  EXPECT_NE(run(x, rows, cols, false, false, 256).scales,
            run(x, rows, cols, false, false, 448).scales);
}

/// A 16x16 input whose every row is `row` (so each block's amax is the
/// global amax).
std::vector<float> repeated(const float (&row)[16]) {
  std::vector<float> x(16 * 16);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j)
      x[i * 16 + j] = row[j];
  return x;
}

TEST(NVFP4FourOverSix, SixWinsOnTheSixGrid) {
  // amax 6, bound 256: S_enc = 256, scale 6 = 256 codes every value exactly;
  // scale 4 = 384 turns 4 into 2.67 (rounded to 3).
  const float row[16] = {6,  4,  3,  2,  1.5f, 1, 0.5f, 0,
                         -6, -4, -3, -2, -1,   0, 0,    0};
  for (bool mse : {false, true}) {
    Ref got = run(repeated(row), 16, 16, false, mse, 256);
    EXPECT_EQ(got.scales[0], te::formats::floatToE4M3(256.0f));
    for (int j = 0; j < 16; ++j)
      EXPECT_EQ(e2m1Value(got.codes[j]), row[j]) << j;
  }
}

TEST(NVFP4FourOverSix, FourWinsOnTheFourGrid) {
  // amax 4, bound 256: S_enc = 384, scale 6 = 256 maps 3 to 4.5 (no E2M1
  // value); scale 4 = 384 codes every value exactly.
  const float row[16] = {4,  3,  2,  1.5f, 1, 0.5f, 0, -4,
                         -3, -2, -1, 0,    0, 0,    0, 0};
  for (bool tile2d : {false, true})
    for (bool mse : {false, true}) {
      Ref got = run(repeated(row), 16, 16, tile2d, mse, 256);
      EXPECT_EQ(got.scales[0], te::formats::floatToE4M3(384.0f));
      for (int j = 0; j < 16; ++j)
        EXPECT_EQ(e2m1Value(got.codes[j]), row[j]) << j;
    }
}

TEST(NVFP4FourOverSix, TiesKeepSix) {
  // A block of equal values is exact both ways (6 * 256 and 4 * 384 over
  // S_enc = 256): equal errors keep the 6 mapping.
  const float row[16] = {6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6};
  for (bool tile2d : {false, true})
    EXPECT_EQ(run(repeated(row), 16, 16, tile2d, false, 256).scales[0],
              te::formats::floatToE4M3(256.0f));
}

TEST(NVFP4FourOverSix, ZeroInput) {
  std::vector<float> x(16 * 32, 0.0f);
  float amax = -1;
  Ref got = run(x, 16, 32, false, false, 256, &amax);
  EXPECT_EQ(amax, 0.0f);
  for (uint8_t c : got.codes)
    EXPECT_EQ(c & 7, 0);
}

} // namespace
