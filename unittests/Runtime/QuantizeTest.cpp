//===- QuantizeTest.cpp - CPU reference quantization ------------*- C++ -*-===//
//
// Scale computation, delayed scaling's amax-history update, MXFP8, Float8
// block and NVFP4 quantization (rounding, random bits, the RHT, 16x16
// tiles), against values computed by hand.
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

TEST(Scale, FromAmax) {
  EXPECT_EQ(scaleFromAmax(448.0f, 448.0f, false), 1.0f);
  EXPECT_EQ(scaleFromAmax(1.0f, 448.0f, false), 448.0f);
  EXPECT_EQ(scaleFromAmax(0.0f, 448.0f, false), 1.0f);     // zero amax
  EXPECT_EQ(scaleFromAmax(INFINITY, 448.0f, false), 1.0f); // non-finite
  EXPECT_EQ(scaleFromAmax(NAN, 448.0f, false), 1.0f);
  EXPECT_EQ(scaleFromAmax(1.0f, 448.0f, true), 256.0f); // pow2: down
  EXPECT_FLOAT_EQ(scaleFromAmax(0.0f, 448.0f, false, 1e-3f), 448000.0f); // eps
  EXPECT_EQ(scaleFromAmax(1e-45f, 448.0f, false), FLT_MAX); // inf -> max
}

TEST(PerTensor, QuantizeDequantize) {
  const float x[4] = {1.0f, -0.5f, 2.0f, 0.0f};
  uint8_t q[4];
  float amax = quantizePerTensor(x, 4, 224.0f, FP8::E4M3, q);
  EXPECT_EQ(amax, 2.0f);
  // 2 * 224 = 448: the largest E4M3 value.
  EXPECT_EQ(q[2], 0x7E);
  float back[4];
  dequantizePerTensor(q, 4, 1.0f / 224.0f, FP8::E4M3, back);
  for (int i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(back[i], x[i]); // all exactly representable here
}

TEST(DelayedScaling, HistoryRollAndScale) {
  // history [len 3, 2 slots], rows are steps (row 0 the current one)
  float history[6] = {1, 0, //
                      4, 2, //
                      2, 8};
  float scale[2] = {5, 5};
  updateDelayedScaling(history, scale, 3, 2, 448.0f, /*margin=*/1,
                       /*mostRecent=*/false);
  EXPECT_EQ(scale[0], 448.0f / 4 / 2); // max over history, margin 1
  EXPECT_EQ(scale[1], 448.0f / 8 / 2);
  // rolled by -1, row 0 zeroed: slot 0 [1,4,2] -> [0,2,1]
  const float expected[6] = {0, 0, 2, 8, 1, 0};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(history[i], expected[i]) << i;
  // most_recent reads row 0 (now zero): scales stay.
  updateDelayedScaling(history, scale, 3, 2, 448.0f, 0, /*mostRecent=*/true);
  EXPECT_EQ(scale[0], 56.0f);
  EXPECT_EQ(scale[1], 28.0f);
}

TEST(MXFP8, OneBlockByHand) {
  std::vector<float> x(32, 1.0f);
  x[5] = 600.0f; // amax 600 -> scale ceil_pow2(600/448) = 2 -> E8M0 128
  x[6] = 300.0f;
  std::vector<uint8_t> q(32), scaleInv(128 * 4, 0xAA);
  quantizeMXFP8Rowwise(x.data(), 1, 32, FP8::E4M3, q.data(), scaleInv.data());
  EXPECT_EQ(scaleInv[0], 128);
  for (size_t i = 1; i < scaleInv.size(); ++i)
    EXPECT_EQ(scaleInv[i], 0) << "padding " << i;
  std::vector<float> back(32);
  dequantizeMXFP8Rowwise(q.data(), scaleInv.data(), 1, 32, FP8::E4M3,
                         back.data());
  EXPECT_EQ(back[5], 576.0f); // 300 -> 288 (E4M3 step 32 there), times 2
  EXPECT_EQ(back[6], 288.0f); // 150 -> 144 (step 16), times 2
  EXPECT_EQ(back[0], 1.0f);   // 0.5 exact, times 2
}

TEST(MXFP8, RelativeErrorWithinHalfAnUlp) {
  const int64_t rows = 3, cols = 64;
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
  std::vector<float> x(rows * cols);
  for (float &v : x)
    v = dist(gen);
  std::vector<uint8_t> q(rows * cols),
      scaleInv(128 * mxfp8RowwiseScaleCols(cols));
  quantizeMXFP8Rowwise(x.data(), rows, cols, FP8::E4M3, q.data(),
                       scaleInv.data());
  std::vector<float> back(rows * cols);
  dequantizeMXFP8Rowwise(q.data(), scaleInv.data(), rows, cols, FP8::E4M3,
                         back.data());
  for (size_t i = 0; i < x.size(); ++i) {
    // E4M3 has 3 mantissa bits: half an ulp is 1/16 of the value's binade;
    // below the normal range the absolute step of the block bounds it.
    float block =
        std::ldexp(1.0f, scaleInv[(i / cols) * 4 + (i % cols) / 32] - 127);
    EXPECT_LE(std::fabs(back[i] - x[i]),
              std::fabs(x[i]) / 16.0f + block * std::ldexp(1.0f, -10))
        << i;
  }
}

} // namespace

namespace {

TEST(BlockScaling, OneByOneTwentyEightByHand) {
  // 2 rows x 128 cols: row 0 amax 448 -> scale 1; row 1 amax 1 -> 448,
  // rounded down to a power of two: 256.
  std::vector<float> x(2 * 128, 0.0f);
  x[0] = 448.0f;
  x[1] = -3.0f;
  x[128] = 1.0f;
  x[129] = 0.5f;
  std::vector<uint8_t> q(x.size());
  std::vector<float> scaleInv(1 * 4, -1.0f); // [ceil(128/128), roundup(2,4)]
  quantizeBlockRowwise(x.data(), 2, 128, /*block2d=*/false,
                       /*fp32Scales=*/false, q.data(), scaleInv.data());
  EXPECT_EQ(scaleInv[0], 1.0f);
  EXPECT_EQ(scaleInv[1], 1.0f / 256.0f);
  EXPECT_EQ(scaleInv[2], 0.0f); // padding
  EXPECT_EQ(scaleInv[3], 0.0f);
  std::vector<float> back(x.size());
  dequantizeBlockRowwise(q.data(), scaleInv.data(), 2, 128, false, back.data());
  EXPECT_EQ(back[0], 448.0f);
  EXPECT_EQ(back[1], -3.0f);
  EXPECT_EQ(back[128], 1.0f);
  EXPECT_EQ(back[129], 0.5f);
  // fp32 scales: 448 exactly.
  quantizeBlockRowwise(x.data(), 2, 128, false, /*fp32Scales=*/true, q.data(),
                       scaleInv.data());
  EXPECT_EQ(scaleInv[1], 1.0f / 448.0f);
}

TEST(BlockScaling, TwoDimensionalBlocks) {
  // 256 x 128: two 128x128 blocks along the rows, one scale each, stored
  // [ceil(256/128), roundup(1, 4)] = [2, 4].
  std::vector<float> x(256 * 128, 1.0f);
  x[200 * 128 + 5] = 224.0f; // second block's amax -> scale 2
  std::vector<uint8_t> q(x.size());
  std::vector<float> scaleInv(2 * 4, -1.0f);
  quantizeBlockRowwise(x.data(), 256, 128, /*block2d=*/true, false, q.data(),
                       scaleInv.data());
  EXPECT_EQ(scaleInv[0], 1.0f / 256.0f); // amax 1 -> 448 -> pow2 256
  EXPECT_EQ(scaleInv[4], 1.0f / 2.0f);   // amax 224 -> 2
  EXPECT_EQ(scaleInv[1], 0.0f);
  std::vector<float> back(x.size());
  dequantizeBlockRowwise(q.data(), scaleInv.data(), 256, 128, true,
                         back.data());
  EXPECT_EQ(back[200 * 128 + 5], 224.0f);
  EXPECT_EQ(back[0], 1.0f);
}

TEST(NVFP4, TwoLevelScalingByHand) {
  // One row of 32: block 0 amax 6, block 1 amax 3; global amax 6.
  std::vector<float> x(32, 0.0f);
  x[0] = 6.0f;
  x[1] = -1.5f;
  x[2] = 0.25f; // tie 0 / 0.5 -> 0
  x[16] = 3.0f;
  x[17] = 1.0f;
  std::vector<uint8_t> q(16), scales(128 * 4);
  float amax = quantizeNVFP4Rowwise(x.data(), 1, 32, q.data(), scales.data());
  EXPECT_EQ(amax, 6.0f);
  // S_enc = 448*6/6 = 448; block 0: S_dec = e4m3(6*448/6) = 448 (0x7E);
  // block 1: S_dec = e4m3(3*448/6 = 224) = 224 (0x76); x scales: 1 and 2.
  EXPECT_EQ(scales[0], 0x7E);
  EXPECT_EQ(scales[1], 0x76);
  EXPECT_EQ(q[0], 0x7 | (0xB << 4)); // 6 (0x7) low, -1.5 (0xB) high
  EXPECT_EQ(q[1], 0x0);              // 0.25 -> 0, 0 -> 0
  EXPECT_EQ(q[8], 0x7 | (0x4 << 4)); // 3*2 = 6 -> 0x7, 1*2 = 2 -> 0x4
  std::vector<float> back(32);
  dequantizeNVFP4Rowwise(q.data(), scales.data(), amax, 1, 32, back.data());
  EXPECT_EQ(back[0], 6.0f);
  EXPECT_EQ(back[1], -1.5f);
  EXPECT_EQ(back[2], 0.0f);
  EXPECT_EQ(back[16], 3.0f);
  EXPECT_EQ(back[17], 1.0f);
}

} // namespace

namespace {

TEST(MXFP8, ColumnwiseBlocksRunDownColumns) {
  // 32 x 32: column 3 has amax 600 (scale 2^1 -> E8M0 128), the others 1
  // (1/448 rounded up to 2^-8 -> E8M0 119).
  std::vector<float> x(32 * 32, 1.0f);
  x[10 * 32 + 3] = 600.0f;
  std::vector<uint8_t> q(x.size()), scaleInv(4 * 128, 0xAA);
  quantizeMXFP8Columnwise(x.data(), 32, 32, FP8::E4M3, q.data(),
                          scaleInv.data());
  EXPECT_EQ(scaleInv[3], 128);
  EXPECT_EQ(scaleInv[0], 119);
  EXPECT_EQ(scaleInv[31], 119);
  EXPECT_EQ(scaleInv[32], 0);  // padding columns
  EXPECT_EQ(scaleInv[128], 0); // padding rows
  // 600 / 2 = 300 rounds to 288 in E4M3: 1.125 * 2^8, code 0x79.
  EXPECT_EQ(q[10 * 32 + 3], 0x79);
}

TEST(Swizzle, TileLayoutByHand) {
  // One 128x4 tile: compact value = row * 4 + col (mod 256).
  const int64_t rows = 256, cols = 8; // 2 x 2 tiles
  std::vector<uint8_t> compact(rows * cols), swizzled(rows * cols),
      back(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      compact[i * cols + j] = static_cast<uint8_t>((i * 7 + j * 3) & 0xFF);
  swizzleScales(compact.data(), rows, cols, swizzled.data());
  // Element (r, c) of the first tile lands at (r % 32) * 16 + (r / 32) * 4 + c.
  EXPECT_EQ(swizzled[0], compact[0]);                // (0, 0)
  EXPECT_EQ(swizzled[1], compact[1]);                // (0, 1)
  EXPECT_EQ(swizzled[4], compact[32 * cols + 0]);    // (32, 0)
  EXPECT_EQ(swizzled[16], compact[1 * cols + 0]);    // (1, 0)
  EXPECT_EQ(swizzled[511], compact[127 * cols + 3]); // (127, 3)
  // The second tile is the next 4 columns of the first 128 rows.
  EXPECT_EQ(swizzled[512], compact[0 * cols + 4]);
  // The third tile starts the next 128 rows.
  EXPECT_EQ(swizzled[1024], compact[128 * cols + 0]);
  unswizzleScales(swizzled.data(), rows, cols, back.data());
  EXPECT_EQ(back, compact);
}

} // namespace

namespace {

//===----------------------------------------------------------------------===//
// NVFP4: rounding, random bits, the RHT and 16x16 tiles
//===----------------------------------------------------------------------===//

TEST(NVFP4, EncodeScale) {
  EXPECT_EQ(nvfp4EncodeScale(6.0f), 448.0f);
  EXPECT_EQ(nvfp4EncodeScale(2688.0f), 1.0f);
  EXPECT_EQ(nvfp4EncodeScale(0.0f), 1.0f);
  EXPECT_EQ(nvfp4EncodeScale(INFINITY), 1.0f);  // not finite
  EXPECT_EQ(nvfp4EncodeScale(1e-40f), FLT_MAX); // 2688 / 1e-40 overflows
}

TEST(NVFP4, RoundToNearestEven) {
  // The E2M1 grid 0, 0.5, 1, 1.5, 2, 3, 4, 6 (codes 0..7); ties go to the
  // even code.
  EXPECT_EQ(te::formats::floatToE2M1(0.25f), 0x0); // 0 | 0.5
  EXPECT_EQ(te::formats::floatToE2M1(0.75f), 0x2); // 0.5 | 1
  EXPECT_EQ(te::formats::floatToE2M1(1.25f), 0x2); // 1 | 1.5
  EXPECT_EQ(te::formats::floatToE2M1(1.75f), 0x4); // 1.5 | 2
  EXPECT_EQ(te::formats::floatToE2M1(2.5f), 0x4);  // 2 | 3
  EXPECT_EQ(te::formats::floatToE2M1(3.5f), 0x6);  // 3 | 4
  EXPECT_EQ(te::formats::floatToE2M1(5.0f), 0x6);  // 4 | 6
  EXPECT_EQ(te::formats::floatToE2M1(2.6f), 0x5);
  EXPECT_EQ(te::formats::floatToE2M1(100.0f), 0x7); // saturates
  EXPECT_EQ(te::formats::floatToE2M1(-0.1f), 0x8);  // sign kept at zero
  EXPECT_EQ(te::formats::floatToE2M1(NAN), 0x7);
}

TEST(NVFP4, StochasticRoundingByHand) {
  // 2.25 lies between 2 (code 4) and 3 (code 5) with p = 0.25: up iff
  // (r >> 8) * 2^-24 < 0.25, i.e. r >> 8 < 0x400000.
  EXPECT_EQ(floatToE2M1Stochastic(2.25f, 0x3FFFFFFFu), 0x5);
  EXPECT_EQ(floatToE2M1Stochastic(2.25f, 0x3FFFFF00u), 0x5);
  EXPECT_EQ(floatToE2M1Stochastic(2.25f, 0x40000000u), 0x4);
  EXPECT_EQ(floatToE2M1Stochastic(2.25f, 0x400000FFu), 0x4); // low bits unused
  EXPECT_EQ(floatToE2M1Stochastic(2.25f, 0u), 0x5);
  EXPECT_EQ(floatToE2M1Stochastic(2.25f, 0xFFFFFFFFu), 0x4);
  EXPECT_EQ(floatToE2M1Stochastic(-2.25f, 0u), 0xD); // sign kept
  // 0.1 between 0 and 0.5: p = 0.2.
  EXPECT_EQ(floatToE2M1Stochastic(0.1f, 0u), 0x1);
  EXPECT_EQ(floatToE2M1Stochastic(0.1f, 0xFFFFFFFFu), 0x0);
  EXPECT_EQ(floatToE2M1Stochastic(-0.1f, 0xFFFFFFFFu), 0x8);
  // 5 between 4 and 6: p = 0.5 exactly; u = 0.5 does not round up.
  EXPECT_EQ(floatToE2M1Stochastic(5.0f, 0x7FFFFFFFu), 0x7);
  EXPECT_EQ(floatToE2M1Stochastic(5.0f, 0x80000000u), 0x6);
  // Clamped to 6 first; NaN as round to nearest (+6).
  for (uint32_t r : {0u, 0x12345678u, 0xFFFFFFFFu}) {
    EXPECT_EQ(floatToE2M1Stochastic(7.0f, r), 0x7);
    EXPECT_EQ(floatToE2M1Stochastic(-INFINITY, r), 0xF);
    EXPECT_EQ(floatToE2M1Stochastic(NAN, r), 0x7);
  }
  // Values on the grid never move, whatever the bits.
  const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  for (int code = 0; code < 8; ++code)
    for (uint32_t r : {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu}) {
      EXPECT_EQ(floatToE2M1Stochastic(grid[code], r), code);
      EXPECT_EQ(floatToE2M1Stochastic(-grid[code], r), code | 0x8);
    }
}

TEST(NVFP4, StochasticRoundingStaysBetweenNeighbours) {
  // Every value rounds to one of its two neighbours on the grid.
  const float grid[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> dist(0.0f, 6.0f);
  for (int t = 0; t < 10000; ++t) {
    float v = dist(gen);
    uint8_t code = floatToE2M1Stochastic(v, static_cast<uint32_t>(gen()));
    ASSERT_LT(code, 8);
    int lo = 7;
    while (grid[lo] > v)
      --lo;
    ASSERT_TRUE(code == lo || code == lo + 1) << v << " -> " << int(code);
  }
}

TEST(NVFP4, RandomBitsAreSplitmix64) {
  // With both seeds 0 the counter (2 * index + copy + 1) times the golden
  // gamma is the splitmix64 state after that many steps from 0, so these
  // are the high halves of its well-known first outputs
  // 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F.
  EXPECT_EQ(nvfp4RandomBits(0, 0, 0, 0), 0xE220A839u);
  EXPECT_EQ(nvfp4RandomBits(0, 0, 1, 0), 0x6E789E6Au);
  EXPECT_EQ(nvfp4RandomBits(0, 0, 0, 1), 0x06C45D18u);
  // The formula, step by step, with both seeds and a large index.
  auto byHand = [](uint64_t cs, uint64_t s, uint64_t copy, uint64_t index) {
    uint64_t z = (cs ^ (s * 0xD1B54A32D192ED03ull)) +
                 (2 * index + copy + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<uint32_t>(z >> 32);
  };
  EXPECT_EQ(nvfp4RandomBits(5, 7, 1, 3), byHand(5, 7, 1, 3));
  EXPECT_EQ(nvfp4RandomBits(5, 7, 1, 3), 0xA054BAE3u);
  EXPECT_EQ(nvfp4RandomBits(~0ull, 1ull << 63, 0, int64_t(1) << 40),
            byHand(~0ull, 1ull << 63, 0, uint64_t(1) << 40));
  EXPECT_NE(nvfp4RandomBits(1, 0, 0, 0), nvfp4RandomBits(0, 0, 0, 0));
  EXPECT_NE(nvfp4RandomBits(0, 1, 0, 0), nvfp4RandomBits(0, 0, 0, 0));
}

TEST(NVFP4, RHTMatrixIsOrthogonal) {
  float m[256];
  nvfp4RHTMatrix(m);
  const int s[16] = {1, 1, 1, -1, 1, -1, -1, -1, -1, -1, -1, 1, -1, 1, -1, -1};
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(m[j], s[j] * 0.25f) << j; // row 0 of H is all ones
    EXPECT_EQ(m[j * 16], 0.25f) << j;   // column 0: s[0] = 1
  }
  EXPECT_EQ(m[3 * 16 + 1], -0.25f); // H[3][1] = -1 (popcount(1) odd), s[1] 1
  EXPECT_EQ(m[3 * 16 + 3], -0.25f); // H[3][3] = +1, s[3] = -1
  // M M^T = I exactly: every product is +-1/16 and every partial sum a
  // small multiple of 1/16.
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 16; ++k) {
      float acc = 0.0f;
      for (int j = 0; j < 16; ++j)
        acc += m[i * 16 + j] * m[k * 16 + j];
      EXPECT_EQ(acc, i == k ? 1.0f : 0.0f) << i << "," << k;
    }
}

TEST(NVFP4, RHTAppliesToEveryChunk) {
  // Two rows of 32 (two chunks each): e_0 and e_5 map to rows 0 and 5 of
  // M; a chunk of ones maps to (4, 0, ..., 0) (the columns of H other than
  // the first sum to 0).
  float m[256];
  nvfp4RHTMatrix(m);
  std::vector<float> x(2 * 32, 0.0f);
  x[0] = 1.0f;      // row 0, chunk 0: e_0
  x[16 + 5] = 1.0f; // row 0, chunk 1: e_5
  for (int j = 0; j < 16; ++j)
    x[32 + j] = 1.0f;     // row 1, chunk 0: ones
  x[32 + 16 + 2] = -3.0f; // row 1, chunk 1: -3 e_2
  applyNVFP4RHT(x.data(), 2, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(x[j], m[j]) << j;
    EXPECT_EQ(x[16 + j], m[5 * 16 + j]) << j;
    EXPECT_EQ(x[32 + j], j == 0 ? 4.0f : 0.0f) << j;
    EXPECT_EQ(x[48 + j], -3.0f * m[2 * 16 + j]) << j;
  }
  // Norms are kept (orthogonal), up to fp32 rounding.
  std::mt19937 gen(3);
  std::normal_distribution<float> dist;
  std::vector<float> v(16);
  for (float &e : v)
    e = dist(gen);
  std::vector<float> w = v;
  applyNVFP4RHT(w.data(), 1, 16);
  double n0 = 0, n1 = 0;
  for (int j = 0; j < 16; ++j)
    n0 += double(v[j]) * v[j], n1 += double(w[j]) * w[j];
  EXPECT_NEAR(n1, n0, 1e-5 * n0);
}

TEST(NVFP4, TwoDimensionalTilesShareAScale) {
  // x [32, 32] of 0.5: four 16x16 tiles. Tile (0, 1) holds a 6 (global
  // amax 6, S_enc 448), tile (1, 0) a 3. Tile amax 6 -> S_dec 448 (0x7E),
  // 3 -> 224 (0x76), 0.5 -> e4m3(37.33) = 36 (0x61).
  std::vector<float> x(32 * 32, 0.5f);
  x[3 * 32 + 20] = 6.0f;
  x[17 * 32 + 2] = 3.0f;
  std::vector<uint8_t> q(32 * 16), scales(128 * 4, 0xAA);
  NVFP4Options o;
  o.block2d = true;
  EXPECT_EQ(quantizeNVFP4(x.data(), 32, 32, o, q.data(), scales.data()), 6.0f);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(scales[i * 4 + 0], i < 16 ? 0x61 : 0x76) << i;
    EXPECT_EQ(scales[i * 4 + 1], i < 16 ? 0x7E : 0x61) << i;
    EXPECT_EQ(scales[i * 4 + 2], 0) << i; // padding columns
    EXPECT_EQ(scales[i * 4 + 3], 0) << i;
  }
  for (size_t i = 32 * 4; i < scales.size(); ++i)
    ASSERT_EQ(scales[i], 0) << i; // padding rows
  // Tile (0, 1): factor 1, 0.5 -> code 1; tile (1, 0): factor 2, 0.5 -> 1
  // (code 2), 3 -> 6 (7); tile (0, 0): 448 / 36 = 12.44, 0.5 -> 6.22 -> 6.
  EXPECT_EQ(q[0 * 16 + 8], 0x11);  // row 0, columns 16, 17
  EXPECT_EQ(q[3 * 16 + 10], 0x17); // row 3, columns 20 (6), 21
  EXPECT_EQ(q[17 * 16 + 1], 0x27); // row 17, columns 2 (3), 3
  EXPECT_EQ(q[17 * 16 + 0], 0x22);
  EXPECT_EQ(q[0], 0x77);
  // A NaN is left out of the amaxes and quantizes to +6 (0x7), as
  // floatToE2M1 has it.
  std::vector<float> withNaN = x;
  withNaN[17 * 32 + 5] = NAN;
  EXPECT_EQ(quantizeNVFP4(withNaN.data(), 32, 32, o, q.data(), scales.data()),
            6.0f);
  EXPECT_EQ(scales[17 * 4 + 0], 0x76);
  EXPECT_EQ(q[17 * 16 + 2] >> 4, 0x7);
  // The same matrix with 1x16 blocks: row 17's first block has amax 3, the
  // other rows of tile (1, 0) amax 0.5.
  quantizeNVFP4(x.data(), 32, 32, NVFP4Options{}, q.data(), scales.data());
  EXPECT_EQ(scales[17 * 4 + 0], 0x76);
  EXPECT_EQ(scales[16 * 4 + 0], 0x61);
  EXPECT_EQ(scales[3 * 4 + 1], 0x7E);
  EXPECT_EQ(scales[4 * 4 + 1], 0x61);
}

} // namespace
