//===- QuantizeTest.cpp - CPU reference quantization ------------*- C++ -*-===//
//
// Scale computation, delayed scaling's amax-history update and MXFP8 block
// quantization, against values computed by hand.
//
//===----------------------------------------------------------------------===//

#include "cpu/Quantize.h"

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
