//===- AbiNVFP4Test.cpp - runtime ABI: NVFP4 --------------------*- C++ -*-===//
//
// The te_rt_* calls through the C ABI (split from AbiTest.cpp by family;
// the fixture is AbiFixture.h): NVFP4.
//
//===----------------------------------------------------------------------===//

#include "AbiFixture.h"

using namespace te::test;

namespace {

//===----------------------------------------------------------------------===//
// NVFP4
//===----------------------------------------------------------------------===//

/// One NVFP4 copy of an [r, c] tensor (the rowwise copy of x [r, c] or the
/// columnwise copy of x [c, r]): packed codes [r, c/2], scale bytes
/// [roundup(r, 128), roundup(c/16, 4)] and the global amax; every byte
/// starts as 0xAA so that the test sees what the call wrote.
struct NVFP4Copy {
  NVFP4Copy(int64_t r, int64_t c)
      : rows(r), cols(c), scaleCols((c / 16 + 3) / 4 * 4),
        data(static_cast<size_t>(r * c / 2), 0xAA),
        scales(static_cast<size_t>((r + 127) / 128 * 128 * scaleCols), 0xAA) {}
  /// The 4-bit code of element (i, j).
  uint8_t code(int64_t i, int64_t j) const {
    uint8_t byte = data[i * (cols / 2) + j / 2];
    return j % 2 ? byte >> 4 : byte & 0xF;
  }
  /// The scale byte of element (i, j) (compact layout).
  uint8_t scale(int64_t i, int64_t j) const {
    return scales[i * scaleCols + j / 16];
  }
  int64_t rows, cols, scaleCols;
  std::vector<uint8_t> data, scales;
  float amax = -1.0f;
};

struct NVFP4Flags {
  int32_t block2d = 0, rht = 0, stochastic = 0;
  uint64_t seed = 0;
  int32_t swizzled = 0;
};

/// te_rt_quantize_nvfp4 of f32 x [rows, cols] into `row` and / or `col`
/// (NULL to skip).
int32_t quantizeNVFP4(te_rt_context *ctx, const std::vector<float> &x,
                      int64_t rows, int64_t cols, NVFP4Flags f, NVFP4Copy *row,
                      NVFP4Copy *col) {
  return te_rt_quantize_nvfp4(
      ctx, TE_RT_DTYPE_F32, x.data(), rows, cols, f.block2d, f.rht,
      f.stochastic, f.seed, f.swizzled, row ? row->data.data() : nullptr,
      row ? row->scales.data() : nullptr, row ? &row->amax : nullptr,
      col ? col->data.data() : nullptr, col ? col->scales.data() : nullptr,
      col ? &col->amax : nullptr);
}

/// te_rt_gemm_nvfp4 (f32 out, no bias) of two copies: d [a.rows, b.rows].
std::vector<float> gemmNVFP4(te_rt_context *ctx, const NVFP4Copy &a,
                             const NVFP4Copy &b, int32_t swizzled = 0) {
  std::vector<float> d(static_cast<size_t>(a.rows * b.rows), -7.0f);
  EXPECT_EQ(te_rt_gemm_nvfp4(ctx, TE_RT_DTYPE_F32, a.data.data(),
                             a.scales.data(), &a.amax, b.data.data(),
                             b.scales.data(), &b.amax, swizzled, nullptr,
                             d.data(), a.rows, b.rows, a.cols, 0),
            0)
      << lastError();
  return d;
}

std::vector<float> gaussian(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// a [m, k] . b [n, k]^T in double.
std::vector<double> matmulTN(const std::vector<float> &a,
                             const std::vector<float> &b, int64_t m, int64_t n,
                             int64_t k) {
  std::vector<double> d(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        d[i * n + j] += double(a[i * k + p]) * b[j * k + p];
  return d;
}

std::vector<float> transposed(const std::vector<float> &x, int64_t rows,
                              int64_t cols) {
  std::vector<float> t(x.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      t[j * rows + i] = x[i * cols + j];
  return t;
}

/// ||got - want|| / ||want|| (Frobenius).
double relativeError(const std::vector<float> &got,
                     const std::vector<double> &want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

TEST_F(Abi, QuantizeNVFP4ByHand) {
  // x [16, 32], zero except row 0 and x[5][20]. Global amax 6: S_enc = 448.
  //   Rowwise, row 0, block 0 {6, -1.5, 0.25, 0.75, 0...}: S_dec = e4m3(6 *
  //   448 / 6) = 448 (0x7E), factor 1: codes 7, 0xB, 0 (tie 0 | 0.5 to
  //   even), 2 (tie 0.5 | 1). Block 1 {3, 1, 0...}: S_dec 224 (0x76),
  //   factor 2: 7, 4 (2.0). Row 5, block 1 {.., 2 at column 20}: S_dec =
  //   e4m3(149.33) = 144 (0x71), 2 * 448 / 144 = 6.2 -> 6 (7). All-zero
  //   blocks: S_dec 0, codes 0.
  //   Columnwise (x^T [32, 16], blocks down x's columns): column 1 {-1.5}:
  //   S_dec e4m3(112) = 0x6E, factor 4: -6 (0xF); column 2 {0.25}: S_dec
  //   e4m3(18.67) = 18 (0x59), 0.25 * 448 / 18 = 6.2 -> 7; column 3 {0.75}:
  //   S_dec 56 (0x66), factor 8: 7; column 20 {2 at row 5}: 0x71, 7.
  const int64_t rows = 16, cols = 32;
  std::vector<float> x(rows * cols, 0.0f);
  x[0] = 6, x[1] = -1.5f, x[2] = 0.25f, x[3] = 0.75f, x[16] = 3, x[17] = 1;
  x[5 * cols + 20] = 2;
  NVFP4Copy row(rows, cols), col(cols, rows);
  ASSERT_EQ(quantizeNVFP4(ctx, x, rows, cols, {}, &row, &col), 0)
      << lastError();
  EXPECT_EQ(row.amax, 6.0f);
  EXPECT_EQ(col.amax, 6.0f);
  // Two codes per byte, the even element in the low nibble.
  EXPECT_EQ(row.data[0], 0xB7);
  EXPECT_EQ(row.data[1], 0x20);
  EXPECT_EQ(row.data[8], 0x47);
  EXPECT_EQ(row.data[5 * 16 + 10], 0x07);
  for (size_t i = 0; i < row.data.size(); ++i) {
    bool set = i == 0 || i == 1 || i == 8 || i == 5 * 16 + 10;
    ASSERT_TRUE(set || row.data[i] == 0) << i;
  }
  // Scales [128, 4]: block (i, b) at [i][b], padding 0.
  for (size_t i = 0; i < row.scales.size(); ++i) {
    uint8_t want = i == 0 ? 0x7E : i == 1 ? 0x76 : i == 5 * 4 + 1 ? 0x71 : 0;
    ASSERT_EQ(row.scales[i], want) << i;
  }
  EXPECT_EQ(col.code(0, 0), 0x7);
  EXPECT_EQ(col.code(1, 0), 0xF);
  EXPECT_EQ(col.code(2, 0), 0x7);
  EXPECT_EQ(col.code(3, 0), 0x7);
  EXPECT_EQ(col.code(16, 0), 0x7);
  EXPECT_EQ(col.code(17, 0), 0x7);       // column 17 {1}: 0x69 below, 6.2 -> 6
  EXPECT_EQ(col.data[20 * 8 + 2], 0x70); // x[5][20]: element 5 of row 20
  EXPECT_EQ(col.scale(0, 0), 0x7E);
  EXPECT_EQ(col.scale(1, 0), 0x6E);
  EXPECT_EQ(col.scale(2, 0), 0x59);
  EXPECT_EQ(col.scale(3, 0), 0x66);
  EXPECT_EQ(col.scale(16, 0), 0x76);
  EXPECT_EQ(col.scale(17, 0), 0x69); // e4m3(74.67) = 72
  EXPECT_EQ(col.scale(20, 0), 0x71);
  EXPECT_EQ(col.scale(4, 0), 0);
  EXPECT_EQ(col.scales[1], 0);      // padding column
  EXPECT_EQ(col.scales[32 * 4], 0); // padding row

  // Swizzled scales: cuBLAS's 128x4 tiles for both copies; same data.
  NVFP4Copy srow(rows, cols), scol(cols, rows);
  NVFP4Flags swz;
  swz.swizzled = 1;
  ASSERT_EQ(quantizeNVFP4(ctx, x, rows, cols, swz, &srow, &scol), 0)
      << lastError();
  EXPECT_EQ(srow.data, row.data);
  EXPECT_EQ(scol.data, col.data);
  std::vector<uint8_t> want(row.scales.size());
  swizzleScales(row.scales.data(), 128, 4, want.data());
  EXPECT_EQ(srow.scales, want);
  EXPECT_EQ(srow.scales[5 * 16 + 1], 0x71); // (5, 1) at (5 % 32) * 16 + 1
  swizzleScales(col.scales.data(), 128, 4, want.data());
  EXPECT_EQ(scol.scales, want);
  EXPECT_EQ(scol.scales[20 * 16], 0x71);

  // bf16 and f16 inputs (all values exact) give the same bytes.
  for (int32_t dtype : {TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16}) {
    std::vector<uint16_t> h = dtype == TE_RT_DTYPE_BF16 ? toBF16(x) : toF16(x);
    NVFP4Copy hrow(rows, cols), hcol(cols, rows);
    ASSERT_EQ(te_rt_quantize_nvfp4(ctx, dtype, h.data(), rows, cols, 0, 0, 0, 0,
                                   0, hrow.data.data(), hrow.scales.data(),
                                   &hrow.amax, hcol.data.data(),
                                   hcol.scales.data(), &hcol.amax),
              0)
        << lastError();
    EXPECT_EQ(hrow.data, row.data);
    EXPECT_EQ(hrow.scales, row.scales);
    EXPECT_EQ(hcol.data, col.data);
    EXPECT_EQ(hcol.scales, col.scales);
    EXPECT_EQ(hrow.amax, 6.0f);
  }
}

TEST_F(Abi, QuantizeNVFP42DTilesAndTransposedCodes) {
  // 16x16 tiles: one S_dec per tile, written for each of its rows; the
  // columnwise copy (x^T in the same tiles) is the transpose of the
  // rowwise codes and scales.
  const int64_t rows = 64, cols = 48;
  std::vector<float> x = gaussian(rows * cols, 21);
  x[37 * cols + 40] = 9.0f; // one tile with a larger amax
  NVFP4Copy row(rows, cols), col(cols, rows);
  NVFP4Flags f;
  f.block2d = 1;
  ASSERT_EQ(quantizeNVFP4(ctx, x, rows, cols, f, &row, &col), 0) << lastError();
  EXPECT_EQ(row.amax, 9.0f);
  EXPECT_EQ(col.amax, 9.0f);
  // Tile (2, 2) holds the 9: S_dec = e4m3(9 * (2688 / 9) / 6) = 448.
  EXPECT_EQ(row.scale(37, 40), 0x7E);
  EXPECT_EQ(row.code(37, 40), 0x7);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      ASSERT_EQ(row.scale(i, j), row.scale(i / 16 * 16, j)) << i << "," << j;
      ASSERT_EQ(col.code(j, i), row.code(i, j)) << i << "," << j;
      ASSERT_EQ(col.scale(j, i), row.scale(i, j)) << i << "," << j;
    }
  // Stochastic rounding would round the two copies independently: refused.
  NVFP4Copy srow(rows, cols), scol(cols, rows);
  NVFP4Flags sr = f;
  sr.stochastic = 1;
  EXPECT_NE(quantizeNVFP4(ctx, x, rows, cols, sr, &srow, &scol), 0);
  EXPECT_EQ(lastError(),
            "te_rt_quantize_nvfp4: stochastic_rounding and block_2d cannot be "
            "combined (16x16 tiles are for weights, whose two copies must "
            "hold the same values; TE rounds gradients stochastically)");
  // 1-D blocks differ: the tile's other rows get their own, smaller scales.
  NVFP4Copy row1(rows, cols);
  ASSERT_EQ(quantizeNVFP4(ctx, x, rows, cols, {}, &row1, nullptr), 0);
  EXPECT_EQ(row1.scale(37, 40), 0x7E);
  EXPECT_LT(row1.scale(36, 40), 0x7E);
}

TEST_F(Abi, QuantizeNVFP4RHT) {
  // x [16, 16] of ones: each row of x^T is a chunk of ones, which the RHT
  // maps to (4, 0, ..., 0): columnwise amax 4 (rowwise 1), S_enc 672, S_dec
  // e4m3(4 * 672 / 6) = 448, 4 * 672 / 448 = 6 (code 7), zeros elsewhere.
  const int64_t n = 16;
  std::vector<float> ones(n * n, 1.0f);
  NVFP4Copy row(n, n), col(n, n);
  NVFP4Flags rht;
  rht.rht = 1;
  ASSERT_EQ(quantizeNVFP4(ctx, ones, n, n, rht, &row, &col), 0) << lastError();
  EXPECT_EQ(row.amax, 1.0f);
  EXPECT_EQ(col.amax, 4.0f); // taken after the transform
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(col.data[i * 8], 0x07) << i;
    for (int64_t b = 1; b < 8; ++b)
      EXPECT_EQ(col.data[i * 8 + b], 0) << i;
    EXPECT_EQ(col.scale(i, 0), 0x7E) << i;
    for (int64_t b = 0; b < 8; ++b) // the rowwise copy is not transformed
      EXPECT_EQ(row.data[i * 8 + b], 0x77) << i;
  }
  // Without rht: all ones, amax 1, code 7 everywhere.
  NVFP4Copy plain(n, n);
  ASSERT_EQ(quantizeNVFP4(ctx, ones, n, n, {}, nullptr, &plain), 0);
  EXPECT_EQ(plain.amax, 1.0f);
  EXPECT_EQ(plain.data, row.data);

  // x = e_0 (x[0][0] = 1): row 0 of x^T is e_0, mapped to row 0 of M, s / 4:
  // amax 0.25, S_enc 10752, S_dec 448, factor 24: +-6 by the sign of s =
  // 1 1 1 -1 1 -1 -1 -1 -1 -1 -1 1 -1 1 -1 -1; the other rows stay zero.
  std::vector<float> e0(n * n, 0.0f);
  e0[0] = 1.0f;
  NVFP4Copy ecol(n, n);
  ASSERT_EQ(quantizeNVFP4(ctx, e0, n, n, rht, nullptr, &ecol), 0)
      << lastError();
  EXPECT_EQ(ecol.amax, 0.25f);
  const std::vector<uint8_t> row0 = {0x77, 0xF7, 0xF7, 0xFF,
                                     0xFF, 0x7F, 0x7F, 0xFF};
  EXPECT_EQ(std::vector<uint8_t>(ecol.data.begin(), ecol.data.begin() + 8),
            row0);
  for (size_t i = 8; i < ecol.data.size(); ++i)
    ASSERT_EQ(ecol.data[i], 0) << i;
  EXPECT_EQ(ecol.scale(0, 0), 0x7E);
  EXPECT_EQ(ecol.scale(1, 0), 0);
}

TEST_F(Abi, QuantizeNVFP4StochasticRoundingBitForBit) {
  // Every 1x16 block along a row and down a column holds a 6 (x = 6 on rows
  // and columns that are multiples of 16, 2.25 elsewhere): global amax 6,
  // every S_dec 448, factor 1 in both copies. 2.25 lies between 2 (code 4)
  // and 3 (code 5) with p = 0.25: up iff (r >> 8) < 2^22, r the bits of
  // (context seed, seed, copy, the element's index in that copy).
  const int64_t rows = 48, cols = 64;
  std::vector<float> x(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      x[i * cols + j] = (i % 16 == 0 || j % 16 == 0) ? 6.0f : 2.25f;
  const uint64_t contextSeed = 12345, seed = 678;
  ASSERT_EQ(te_rt_context_set_seed(ctx, contextSeed), 0);
  NVFP4Copy row(rows, cols), col(cols, rows);
  NVFP4Flags sr;
  sr.stochastic = 1;
  sr.seed = seed;
  ASSERT_EQ(quantizeNVFP4(ctx, x, rows, cols, sr, &row, &col), 0)
      << lastError();
  auto expected = [&](float v, int32_t copy, int64_t index) -> uint8_t {
    if (v == 6.0f)
      return 0x7;
    uint32_t r = te_rt_nvfp4_random_bits(contextSeed, seed, copy, index);
    return (r >> 8) < (1u << 22) ? 0x5 : 0x4;
  };
  int64_t up = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float v = x[i * cols + j];
      ASSERT_EQ(row.code(i, j), expected(v, 0, i * cols + j)) << i << "," << j;
      ASSERT_EQ(col.code(j, i), expected(v, 1, j * rows + i)) << i << "," << j;
      up += row.code(i, j) == 0x5;
    }
  EXPECT_GT(up, 0);
  // Round to nearest: 2.25 -> 2 everywhere.
  NVFP4Copy rne(rows, cols);
  ASSERT_EQ(quantizeNVFP4(ctx, x, rows, cols, {}, &rne, nullptr), 0);
  for (int64_t i = 0; i < rows; ++i)
    ASSERT_EQ(rne.code(i, 1), i % 16 ? 0x4 : 0x7) << i;

  // Same seeds: the same bytes. Another call seed or context seed: others.
  NVFP4Copy again(rows, cols), other(rows, cols), otherCtx(rows, cols);
  ASSERT_EQ(quantizeNVFP4(ctx, x, rows, cols, sr, &again, nullptr), 0);
  EXPECT_EQ(again.data, row.data);
  NVFP4Flags sr2 = sr;
  sr2.seed = seed + 1;
  ASSERT_EQ(quantizeNVFP4(ctx, x, rows, cols, sr2, &other, nullptr), 0);
  EXPECT_NE(other.data, row.data);
  EXPECT_EQ(other.scales, row.scales); // only the rounding changes
  ASSERT_EQ(te_rt_context_set_seed(ctx, contextSeed + 1), 0);
  ASSERT_EQ(quantizeNVFP4(ctx, x, rows, cols, sr, &otherCtx, nullptr), 0);
  EXPECT_NE(otherCtx.data, row.data);
  EXPECT_NE(otherCtx.data, other.data);
  // A fresh context starts at seed 0.
  te_rt_context *fresh = te_rt_context_create(TE_RT_BACKEND_CPU);
  ASSERT_NE(fresh, nullptr);
  NVFP4Copy zero(rows, cols);
  ASSERT_EQ(quantizeNVFP4(fresh, x, rows, cols, sr, &zero, nullptr), 0);
  te_rt_context_destroy(fresh);
  ASSERT_EQ(te_rt_context_set_seed(ctx, 0), 0);
  NVFP4Copy zero2(rows, cols);
  ASSERT_EQ(quantizeNVFP4(ctx, x, rows, cols, sr, &zero2, nullptr), 0);
  EXPECT_EQ(zero.data, zero2.data);
  EXPECT_NE(zero.data, row.data);
}

TEST_F(Abi, QuantizeNVFP4StochasticRoundingIsUnbiased) {
  // 2^20 elements, 15/16 of them 2.25 with p = 0.25 (each row's blocks
  // start with a 6, so the factor is 1): the fraction rounded up is within
  // 1% of p (about 6 standard deviations).
  const int64_t n = 1024;
  std::vector<float> x(n * n, 2.25f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; j += 16)
      x[i * n + j] = 6.0f;
  NVFP4Copy row(n, n);
  NVFP4Flags sr;
  sr.stochastic = 1;
  sr.seed = 99;
  ASSERT_EQ(quantizeNVFP4(ctx, x, n, n, sr, &row, nullptr), 0) << lastError();
  int64_t up = 0, down = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      if (j % 16 == 0)
        continue;
      uint8_t code = row.code(i, j);
      ASSERT_TRUE(code == 0x4 || code == 0x5) << i << "," << j;
      (code == 0x5 ? up : down) += 1;
    }
  double fraction = double(up) / double(up + down);
  EXPECT_NEAR(fraction, 0.25, 0.0025);
}

TEST_F(Abi, NVFP4RandomBitsByHand) {
  // splitmix64 from state 0: outputs 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4
  // (index 0 of copies 0 and 1 with both seeds 0).
  EXPECT_EQ(te_rt_nvfp4_random_bits(0, 0, 0, 0), 0xE220A839u);
  EXPECT_EQ(te_rt_nvfp4_random_bits(0, 0, 1, 0), 0x6E789E6Au);
  // context_seed 5, seed 7, copy 1, index 3: key = 5 ^ 7 * 0xD1B5...03,
  // z = key + 7 * 0x9E37...15, then the finalizer (see QuantizeTest.cpp).
  EXPECT_EQ(te_rt_nvfp4_random_bits(5, 7, 1, 3), 0xA054BAE3u);
}

TEST_F(Abi, GemmNVFP4ByHand) {
  // A [1, 16]: code 2 (1.0) everywhere, scale 0x40 (2.0): values 2.
  // B [2, 16]: row 0 code 7 (6.0), scale 0x38 (1.0): values 6; row 1 codes
  // 0x1 (0.5) / 0xC (-2) alternating, scale 0x30 (0.5): 0.25 / -1.
  // Sums: 16 * 12 = 192 and 8 * (0.5 - 2) = -12. alpha = 5376 * 672 /
  // 7225344 = 0.5: {96, -6}; + bias {1, 2}: {97, -4} (alpha before bias).
  std::vector<uint8_t> a(8, 0x22), b(16), sa(128 * 4, 0), sb(128 * 4, 0);
  for (int i = 0; i < 8; ++i)
    b[i] = 0x77, b[8 + i] = 0xC1;
  sa[0] = 0x40;
  sb[0] = 0x38;
  sb[4] = 0x30;
  float aAmax = 5376, bAmax = 672;
  std::vector<float> bias = {1, 2}, d(2, -7);
  ASSERT_EQ(te_rt_gemm_nvfp4(ctx, TE_RT_DTYPE_F32, a.data(), sa.data(), &aAmax,
                             b.data(), sb.data(), &bAmax, 0, bias.data(),
                             d.data(), 1, 2, 16, 0),
            0)
      << lastError();
  EXPECT_EQ(d, (std::vector<float>{97, -4}));
  // Accumulate: d = acc * alpha + bias + old d.
  ASSERT_EQ(te_rt_gemm_nvfp4(ctx, TE_RT_DTYPE_F32, a.data(), sa.data(), &aAmax,
                             b.data(), sb.data(), &bAmax, 0, bias.data(),
                             d.data(), 1, 2, 16, 1),
            0);
  EXPECT_EQ(d, (std::vector<float>{194, -8}));
  // Swizzled scales: the same result.
  std::vector<uint8_t> swa(512), swb(512);
  swizzleScales(sa.data(), 128, 4, swa.data());
  swizzleScales(sb.data(), 128, 4, swb.data());
  std::vector<float> ds(2, -7);
  ASSERT_EQ(te_rt_gemm_nvfp4(ctx, TE_RT_DTYPE_F32, a.data(), swa.data(), &aAmax,
                             b.data(), swb.data(), &bAmax, 1, bias.data(),
                             ds.data(), 1, 2, 16, 0),
            0)
      << lastError();
  EXPECT_EQ(ds, (std::vector<float>{97, -4}));
  // alpha = (1 / S_enc(3)) * (1 / S_enc(5)), S_enc(A) = 2688 / A in fp32,
  // each factor the inverse of the scale the operand was encoded with; no
  // bias.
  float a3 = 3, b5 = 5;
  ASSERT_EQ(te_rt_gemm_nvfp4(ctx, TE_RT_DTYPE_F32, a.data(), sa.data(), &a3,
                             b.data(), sb.data(), &b5, 0, nullptr, d.data(), 1,
                             2, 16, 0),
            0);
  float alpha = (1.0f / (2688.0f / 3.0f)) * (1.0f / (2688.0f / 5.0f));
  EXPECT_EQ(d, (std::vector<float>{192.0f * alpha, -12.0f * alpha}));
  // bf16 out and bias: the same (97 and -4 are exact in bf16).
  std::vector<uint16_t> bbias = toBF16({1, 2}), bd(2, 0);
  ASSERT_EQ(te_rt_gemm_nvfp4(ctx, TE_RT_DTYPE_BF16, a.data(), sa.data(), &aAmax,
                             b.data(), sb.data(), &bAmax, 0, bbias.data(),
                             bd.data(), 1, 2, 16, 0),
            0);
  EXPECT_EQ(fromBF16(bd), (std::vector<float>{97, -4}));
}

TEST_F(Abi, GemmNVFP4ApproximatesTheLinearLayer) {
  // tokens T, in K, out N: x [T, K], w [N, K], dy [T, N], quantized as TE's
  // NVFP4 recipe does: x 1-D (rowwise; columnwise with the RHT), w 16x16
  // tiles, dy 1-D with stochastic rounding (columnwise with the RHT).
  const int64_t T = 128, K = 64, N = 48;
  std::vector<float> x = gaussian(T * K, 1), w = gaussian(N * K, 2),
                     dy = gaussian(T * N, 3);
  NVFP4Copy xRow(T, K), xCol(K, T), xColPlain(K, T), wRow(N, K), wCol(K, N),
      dyRow(T, N), dyCol(N, T);
  NVFP4Flags rht, tiles, grad;
  rht.rht = 1;
  tiles.block2d = 1;
  grad.rht = 1;
  grad.stochastic = 1;
  grad.seed = 5;
  ASSERT_EQ(quantizeNVFP4(ctx, x, T, K, rht, &xRow, &xCol), 0) << lastError();
  ASSERT_EQ(quantizeNVFP4(ctx, x, T, K, {}, nullptr, &xColPlain), 0);
  ASSERT_EQ(quantizeNVFP4(ctx, w, N, K, tiles, &wRow, &wCol), 0);
  ASSERT_EQ(quantizeNVFP4(ctx, dy, T, N, grad, &dyRow, &dyCol), 0);

  // fprop y = x w^T, dgrad dx = dy w, wgrad dw = dy^T x.
  double fprop =
      relativeError(gemmNVFP4(ctx, xRow, wRow), matmulTN(x, w, T, N, K));
  double dgrad = relativeError(gemmNVFP4(ctx, dyRow, wCol),
                               matmulTN(dy, transposed(w, N, K), T, K, N));
  std::vector<double> dw =
      matmulTN(transposed(dy, T, N), transposed(x, T, K), N, K, T);
  double wgrad = relativeError(gemmNVFP4(ctx, dyCol, xCol), dw);
  // The RHT cancels only when both operands carry it.
  double mixed = relativeError(gemmNVFP4(ctx, dyCol, xColPlain), dw);
  // NVFP4 is coarse: about 9% relative error per Gaussian operand (1x16
  // blocks), so about 0.13 for a GEMM; 16x16 tiles and stochastic rounding
  // add to it. A wgrad that mixes an RHT'd and a plain operand is off by
  // more than the result itself. (Measured: 0.148, 0.177, 0.173 and 1.51.)
  EXPECT_LT(fprop, 0.2);
  EXPECT_LT(dgrad, 0.2);
  EXPECT_LT(wgrad, 0.2);
  EXPECT_GT(mixed, 0.8);
  // The GEMM is the product of the values the codes stand for
  // (dequantizeNVFP4Rowwise: code * S_dec / S_enc), up to fp32 rounding:
  // alpha undoes both global scales.
  std::vector<float> xd(T * K), wd(N * K);
  dequantizeNVFP4Rowwise(xRow.data.data(), xRow.scales.data(), xRow.amax, T, K,
                         xd.data());
  dequantizeNVFP4Rowwise(wRow.data.data(), wRow.scales.data(), wRow.amax, N, K,
                         wd.data());
  EXPECT_LT(
      relativeError(gemmNVFP4(ctx, xRow, wRow), matmulTN(xd, wd, T, N, K)),
      1e-6);
  // Swizzled scales give the same GEMM.
  NVFP4Copy sRow(T, K), sw(N, K);
  NVFP4Flags swz, swzTiles = tiles;
  swz.swizzled = swzTiles.swizzled = 1;
  ASSERT_EQ(quantizeNVFP4(ctx, x, T, K, swz, &sRow, nullptr), 0);
  ASSERT_EQ(quantizeNVFP4(ctx, w, N, K, swzTiles, &sw, nullptr), 0);
  EXPECT_EQ(gemmNVFP4(ctx, sRow, sw, 1), gemmNVFP4(ctx, xRow, wRow));
}

TEST_F(Abi, NVFP4ArgumentChecks) {
  float f[512] = {}, am = 0;
  uint8_t q[512] = {};
  auto quantize = [&](int32_t dtype, int64_t rows, int64_t cols, int32_t b2d,
                      int32_t rht, int32_t sr, int32_t swz, void *data,
                      uint8_t *s, float *amax, void *cdata, uint8_t *cs,
                      float *camax, const void *x) {
    return te_rt_quantize_nvfp4(ctx, dtype, x, rows, cols, b2d, rht, sr, 0, swz,
                                data, s, amax, cdata, cs, camax);
  };
  const char *call = "te_rt_quantize_nvfp4: ";
  auto msg = [&](const char *m) { return std::string(call) + m; };
  EXPECT_FAILS_WITH(te_rt_quantize_nvfp4(nullptr, 0, f, 16, 16, 0, 0, 0, 0, 0,
                                         q, q, &am, nullptr, nullptr, nullptr),
                    msg("ctx is NULL"));
  EXPECT_FAILS_WITH(
      quantize(3, 16, 16, 0, 0, 0, 0, q, q, &am, nullptr, nullptr, nullptr, f),
      msg("unknown dtype 3 (0 f32, 1 bf16, 2 f16)"));
  EXPECT_FAILS_WITH(
      quantize(0, -16, 16, 0, 0, 0, 0, q, q, &am, nullptr, nullptr, nullptr, f),
      msg("rows must be >= 0, got -16"));
  EXPECT_FAILS_WITH(
      quantize(0, 16, -16, 0, 0, 0, 0, q, q, &am, nullptr, nullptr, nullptr, f),
      msg("cols must be > 0, got -16"));
  EXPECT_FAILS_WITH(
      quantize(0, 8, 16, 0, 0, 0, 0, q, q, &am, nullptr, nullptr, nullptr, f),
      msg("rows must be a multiple of 16 (NVFP4 blocks), got 8"));
  EXPECT_FAILS_WITH(
      quantize(0, 16, 40, 0, 0, 0, 0, q, q, &am, nullptr, nullptr, nullptr, f),
      msg("cols must be a multiple of 16 (NVFP4 blocks), got "
          "40"));
  EXPECT_FAILS_WITH(quantize(0, int64_t(1) << 40, int64_t(1) << 40, 0, 0, 0, 0,
                             q, q, &am, nullptr, nullptr, nullptr, f),
                    msg("rows * cols = 1099511627776 * 1099511627776 is too "
                        "large"));
  EXPECT_FAILS_WITH(
      quantize(0, 16, 16, 2, 0, 0, 0, q, q, &am, nullptr, nullptr, nullptr, f),
      msg("block_2d must be 0 or 1, got 2"));
  EXPECT_FAILS_WITH(quantize(0, 16, 16, 0, -1, 0, 0, q, q, &am, q, q, &am, f),
                    msg("rht must be 0 or 1, got -1"));
  EXPECT_FAILS_WITH(
      quantize(0, 16, 16, 0, 0, 5, 0, q, q, &am, nullptr, nullptr, nullptr, f),
      msg("stochastic_rounding must be 0 or 1, got 5"));
  EXPECT_FAILS_WITH(
      quantize(0, 16, 16, 0, 0, 0, 2, q, q, &am, nullptr, nullptr, nullptr, f),
      msg("swizzled must be 0 or 1, got 2"));
  EXPECT_FAILS_WITH(quantize(0, 16, 16, 0, 0, 0, 0, q, q, &am, nullptr, nullptr,
                             nullptr, nullptr),
                    msg("x is NULL"));
  EXPECT_FAILS_WITH(quantize(0, 16, 16, 0, 0, 0, 0, q, q, nullptr, nullptr,
                             nullptr, nullptr, f),
                    msg("data, scale_inv and amax must all be given or all "
                        "be NULL"));
  EXPECT_FAILS_WITH(quantize(0, 16, 16, 0, 0, 0, 0, nullptr, q, nullptr,
                             nullptr, nullptr, nullptr, f),
                    msg("data, scale_inv and amax must all be given or all "
                        "be NULL"));
  EXPECT_FAILS_WITH(quantize(0, 16, 16, 0, 0, 0, 0, nullptr, nullptr, nullptr,
                             q, nullptr, &am, f),
                    msg("columnwise_data, columnwise_scale_inv and "
                        "columnwise_amax must all be given or all be NULL"));
  EXPECT_FAILS_WITH(quantize(0, 16, 16, 0, 0, 0, 0, nullptr, nullptr, nullptr,
                             nullptr, nullptr, nullptr, f),
                    msg("no copy requested (data and columnwise_data are "
                        "NULL)"));
  EXPECT_FAILS_WITH(
      quantize(0, 16, 16, 0, 1, 0, 0, q, q, &am, nullptr, nullptr, nullptr, f),
      msg("rht needs the columnwise copy (columnwise_data is "
          "NULL): the transform applies to the columnwise data "
          "only"));
  EXPECT_FAILS_WITH(quantize(0, 16, 16, 1, 1, 0, 0, q, q, &am, q, q, &am, f),
                    msg("rht and block_2d cannot be combined (the transform "
                        "is for 1-D blocks, TE's wgrad operands; 16x16 "
                        "blocks are for weights)"));

  auto gemm = [&](int32_t out, const void *a, const uint8_t *as,
                  const float *aa, const void *b, const uint8_t *bs,
                  const float *ba, int32_t swz, void *d, int64_t m, int64_t n,
                  int64_t k, int32_t acc) {
    return te_rt_gemm_nvfp4(ctx, out, a, as, aa, b, bs, ba, swz, nullptr, d, m,
                            n, k, acc);
  };
  EXPECT_FAILS_WITH(te_rt_gemm_nvfp4(nullptr, 0, q, q, &am, q, q, &am, 0,
                                     nullptr, f, 1, 1, 16, 0),
                    "te_rt_gemm_nvfp4: ctx is NULL");
  EXPECT_FAILS_WITH(gemm(4, q, q, &am, q, q, &am, 0, f, 1, 1, 16, 0),
                    "te_rt_gemm_nvfp4: unknown out_dtype 4 (0 f32, 1 bf16, 2 "
                    "f16)");
  EXPECT_FAILS_WITH(gemm(0, q, q, &am, q, q, &am, 0, f, -1, 1, 16, 0),
                    "te_rt_gemm_nvfp4: m must be >= 0, got -1");
  EXPECT_FAILS_WITH(gemm(0, q, q, &am, q, q, &am, 0, f, 1, -1, 16, 0),
                    "te_rt_gemm_nvfp4: n must be >= 0, got -1");
  EXPECT_FAILS_WITH(gemm(0, q, q, &am, q, q, &am, 0, f, 1, 1, -16, 0),
                    "te_rt_gemm_nvfp4: k must be >= 0, got -16");
  EXPECT_FAILS_WITH(gemm(0, q, q, &am, q, q, &am, 0, f, 1, 1, 24, 0),
                    "te_rt_gemm_nvfp4: k must be a multiple of 16 (NVFP4 "
                    "blocks), got 24");
  EXPECT_FAILS_WITH(gemm(0, q, q, &am, q, q, &am, 2, f, 1, 1, 16, 0),
                    "te_rt_gemm_nvfp4: swizzled must be 0 or 1, got 2");
  EXPECT_FAILS_WITH(gemm(0, q, q, &am, q, q, &am, 0, f, 1, 1, 16, 3),
                    "te_rt_gemm_nvfp4: accumulate must be 0 or 1, got 3");
  EXPECT_FAILS_WITH(gemm(0, nullptr, q, &am, q, q, &am, 0, f, 1, 1, 16, 0),
                    "te_rt_gemm_nvfp4: a is NULL");
  EXPECT_FAILS_WITH(gemm(0, q, nullptr, &am, q, q, &am, 0, f, 1, 1, 16, 0),
                    "te_rt_gemm_nvfp4: a_scale_inv is NULL");
  EXPECT_FAILS_WITH(gemm(0, q, q, nullptr, q, q, &am, 0, f, 1, 1, 16, 0),
                    "te_rt_gemm_nvfp4: a_amax is NULL");
  EXPECT_FAILS_WITH(gemm(0, q, q, &am, nullptr, q, &am, 0, f, 1, 1, 16, 0),
                    "te_rt_gemm_nvfp4: b is NULL");
  EXPECT_FAILS_WITH(gemm(0, q, q, &am, q, nullptr, &am, 0, f, 1, 1, 16, 0),
                    "te_rt_gemm_nvfp4: b_scale_inv is NULL");
  EXPECT_FAILS_WITH(gemm(0, q, q, &am, q, q, nullptr, 0, f, 1, 1, 16, 0),
                    "te_rt_gemm_nvfp4: b_amax is NULL");
  EXPECT_FAILS_WITH(gemm(0, q, q, &am, q, q, &am, 0, nullptr, 1, 1, 16, 0),
                    "te_rt_gemm_nvfp4: d is NULL");
  EXPECT_FAILS_WITH(gemm(0, q, q, &am, q, q, &am, 0, f, int64_t(1) << 40,
                         int64_t(1) << 40, 16, 0),
                    "te_rt_gemm_nvfp4: m * n = 1099511627776 * 1099511627776 "
                    "is too large");

  EXPECT_FAILS_WITH(te_rt_context_set_seed(nullptr, 1),
                    "te_rt_context_set_seed: ctx is NULL");
  // A failed call leaves its outputs alone.
  std::vector<uint8_t> untouched(512, 0xAA);
  float keep = -1;
  EXPECT_NE(quantize(0, 16, 16, 1, 1, 0, 0, untouched.data(), untouched.data(),
                     &keep, untouched.data(), untouched.data(), &keep, f),
            0);
  EXPECT_EQ(untouched, std::vector<uint8_t>(512, 0xAA));
  EXPECT_EQ(keep, -1);
}

} // namespace

namespace {

/// te_rt_quantize_nvfp4_4over6: both copies as quantizeNVFP4FourOverSix
/// writes them (rowwise of x, columnwise of x^T), the stored amax scaled by
/// 448 / e4m3_max so that the GEMM's S_enc = 2688 / amax is the one used,
/// and bad modes refused.
TEST_F(Abi, QuantizeNVFP4FourOverSix) {
  const int64_t rows = 32, cols = 48;
  std::vector<float> x = gaussian(rows * cols, 11), xt(x.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      xt[j * rows + i] = x[i * cols + j];
  for (int32_t bound : {256, 448})
    for (int32_t block2d : {0, 1}) {
      NVFP4Copy row(rows, cols), col(cols, rows), wantRow(rows, cols),
          wantCol(cols, rows);
      ASSERT_EQ(te_rt_quantize_nvfp4_4over6(
                    ctx, TE_RT_DTYPE_F32, x.data(), rows, cols, block2d,
                    /*err_mode=*/1, bound, /*swizzled=*/0, row.data.data(),
                    row.scales.data(), &row.amax, col.data.data(),
                    col.scales.data(), &col.amax),
                0)
          << lastError();
      float a = te::cpu::quantizeNVFP4FourOverSix(
          x.data(), rows, cols, block2d, true, float(bound),
          wantRow.data.data(), wantRow.scales.data());
      te::cpu::quantizeNVFP4FourOverSix(xt.data(), cols, rows, block2d, true,
                                        float(bound), wantCol.data.data(),
                                        wantCol.scales.data());
      EXPECT_EQ(row.data, wantRow.data);
      EXPECT_EQ(row.scales, wantRow.scales);
      EXPECT_EQ(col.data, wantCol.data);
      EXPECT_EQ(col.scales, wantCol.scales);
      EXPECT_EQ(row.amax, a * (448.0f / float(bound)));
      EXPECT_EQ(col.amax, row.amax);
    }
  NVFP4Copy row(rows, cols);
  EXPECT_NE(te_rt_quantize_nvfp4_4over6(ctx, TE_RT_DTYPE_F32, x.data(), rows,
                                        cols, 0, /*err_mode=*/2, 256, 0,
                                        row.data.data(), row.scales.data(),
                                        &row.amax, nullptr, nullptr, nullptr),
            0);
  EXPECT_NE(std::string(lastError()).find("err_mode must be 0 (MAE) or 1"),
            std::string::npos)
      << lastError();
  EXPECT_NE(te_rt_quantize_nvfp4_4over6(ctx, TE_RT_DTYPE_F32, x.data(), rows,
                                        cols, 0, 0, 300, 0, row.data.data(),
                                        row.scales.data(), &row.amax, nullptr,
                                        nullptr, nullptr),
            0);
  EXPECT_NE(std::string(lastError()).find("e4m3_max must be 256 or 448"),
            std::string::npos)
      << lastError();
}

/// Row-scaled NVFP4: each row is quantized as a tensor whose global amax is
/// that row's (bit for bit: row i's codes and scale bytes are those of a
/// 16-row tensor repeating row i), amax[i] = max |x[i, :]|; the GEMM is
/// TE's per-tensor GEMM of amax-1 operands times a_amax[i] * b_amax per row.
TEST_F(Abi, QuantizeAndGemmNVFP4RowScaled) {
  const int64_t rows = 32, cols = 64, n = 16;
  std::vector<float> x = gaussian(rows * cols, 11);
  // Rows of very different magnitudes (1e-3 .. 1e3): a per-tensor amax
  // flushes the small rows to zero, a row's own amax does not.
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      x[i * cols + j] *= std::pow(10.0f, float(i % 7) - 3.0f);
  x[5 * cols + 3] = std::nanf(""); // NaN: skipped by the row's amax
  NVFP4Copy row(rows, cols);
  std::vector<float> rowAmax(rows, -1.0f);
  ASSERT_EQ(te_rt_quantize_nvfp4_row_scaled(ctx, TE_RT_DTYPE_F32, x.data(),
                                            rows, cols, 0, row.data.data(),
                                            row.scales.data(), rowAmax.data()),
            0)
      << lastError();
  for (int64_t i = 0; i < rows; ++i) {
    float want = 0.0f;
    for (int64_t j = 0; j < cols; ++j)
      if (!std::isnan(x[i * cols + j]))
        want = std::max(want, std::fabs(x[i * cols + j]));
    EXPECT_EQ(rowAmax[i], want) << "row " << i;
    if (i == 5)
      continue; // (the NaN's code follows floatToE2M1, checked elsewhere)
    std::vector<float> rep(static_cast<size_t>(16 * cols));
    for (int64_t r = 0; r < 16; ++r)
      std::copy(x.begin() + i * cols, x.begin() + (i + 1) * cols,
                rep.begin() + r * cols);
    NVFP4Copy one(16, cols);
    ASSERT_EQ(quantizeNVFP4(ctx, rep, 16, cols, {}, &one, nullptr), 0);
    EXPECT_EQ(one.amax, rowAmax[i]);
    for (int64_t j = 0; j < cols; ++j) {
      ASSERT_EQ(row.code(i, j), one.code(0, j)) << i << "," << j;
      ASSERT_EQ(row.scale(i, j), one.scale(0, j)) << i << "," << j;
    }
  }
  // Swizzled scales: the same bytes in cuBLAS's order.
  NVFP4Copy sw(rows, cols);
  std::vector<float> swAmax(rows);
  ASSERT_EQ(te_rt_quantize_nvfp4_row_scaled(ctx, TE_RT_DTYPE_F32, x.data(),
                                            rows, cols, 1, sw.data.data(),
                                            sw.scales.data(), swAmax.data()),
            0);
  std::vector<uint8_t> want(row.scales.size());
  swizzleScales(row.scales.data(), 128, row.scaleCols, want.data());
  EXPECT_EQ(sw.scales, want);
  EXPECT_EQ(sw.data, row.data);
  EXPECT_EQ(swAmax, rowAmax);

  // The GEMM against a per-tensor weight [n, cols], no NaN this time.
  x[5 * cols + 3] = 0.5f;
  ASSERT_EQ(te_rt_quantize_nvfp4_row_scaled(ctx, TE_RT_DTYPE_F32, x.data(),
                                            rows, cols, 0, row.data.data(),
                                            row.scales.data(), rowAmax.data()),
            0);
  std::vector<float> w = gaussian(n * cols, 12);
  NVFP4Copy wq(n, cols);
  ASSERT_EQ(quantizeNVFP4(ctx, w, n, cols, {}, &wq, nullptr), 0);
  std::vector<float> bias(n), d(rows * n, -7.0f);
  for (int64_t j = 0; j < n; ++j)
    bias[j] = 0.25f * float(j);
  ASSERT_EQ(te_rt_gemm_nvfp4_row_scaled(
                ctx, TE_RT_DTYPE_F32, row.data.data(), row.scales.data(),
                rowAmax.data(), wq.data.data(), wq.scales.data(), &wq.amax, 0,
                bias.data(), d.data(), rows, n, cols, 0),
            0)
      << lastError();
  // The same product by hand: the block values (amax-1 GEMM of
  // te_rt_gemm_nvfp4 with both amaxes 1 gives sum * (1 / 2688)^2), times
  // the row's factor, plus the bias.
  std::vector<float> ones(rows * n);
  float a1 = 1.0f, b1 = 1.0f;
  ASSERT_EQ(te_rt_gemm_nvfp4(ctx, TE_RT_DTYPE_F32, row.data.data(),
                             row.scales.data(), &a1, wq.data.data(),
                             wq.scales.data(), &b1, 0, nullptr, ones.data(),
                             rows, n, cols, 0),
            0);
  double errRow = 0, errTensor = 0, ref = 0;
  NVFP4Copy pt(rows, cols); // the per-tensor quantization, for comparison
  ASSERT_EQ(quantizeNVFP4(ctx, x, rows, cols, {}, &pt, nullptr), 0);
  std::vector<float> dpt = gemmNVFP4(ctx, pt, wq);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float want = ones[i * n + j] * (rowAmax[i] * wq.amax) + bias[j];
      EXPECT_EQ(d[i * n + j], want) << i << "," << j;
      // Against the fp32 product, relative to each row's magnitude.
      double exact = 0, scale = std::pow(10.0, double(i % 7) - 3.0);
      for (int64_t k = 0; k < cols; ++k)
        exact += double(x[i * cols + k]) * double(w[j * cols + k]);
      errRow += std::pow((d[i * n + j] - bias[j] - exact) / scale, 2);
      errTensor += std::pow((dpt[i * n + j] - exact) / scale, 2);
      ref += std::pow(exact / scale, 2);
    }
  // Row scaling keeps the small rows: its error relative to each row's
  // scale is NVFP4's usual (~10%); the per-tensor amax loses them.
  EXPECT_LT(std::sqrt(errRow / ref), 0.2);
  EXPECT_GT(std::sqrt(errTensor / ref), 3 * std::sqrt(errRow / ref));
  // Accumulate adds the old d.
  std::vector<float> acc = d;
  ASSERT_EQ(te_rt_gemm_nvfp4_row_scaled(
                ctx, TE_RT_DTYPE_F32, row.data.data(), row.scales.data(),
                rowAmax.data(), wq.data.data(), wq.scales.data(), &wq.amax, 0,
                nullptr, acc.data(), rows, n, cols, 1),
            0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j)
      EXPECT_EQ(acc[i * n + j],
                ones[i * n + j] * (rowAmax[i] * wq.amax) + d[i * n + j])
          << i << "," << j;
  // Checks name the argument.
  EXPECT_FAILS_WITH(te_rt_quantize_nvfp4_row_scaled(
                        ctx, TE_RT_DTYPE_F32, x.data(), rows, 40, 0,
                        row.data.data(), row.scales.data(), rowAmax.data()),
                    "te_rt_quantize_nvfp4_row_scaled: cols must be a multiple "
                    "of 16 (NVFP4 blocks), got 40");
  EXPECT_FAILS_WITH(te_rt_quantize_nvfp4_row_scaled(
                        ctx, TE_RT_DTYPE_F32, x.data(), rows, cols, 0,
                        row.data.data(), row.scales.data(), nullptr),
                    "te_rt_quantize_nvfp4_row_scaled: amax is NULL");
  EXPECT_FAILS_WITH(te_rt_gemm_nvfp4_row_scaled(
                        ctx, TE_RT_DTYPE_F32, row.data.data(),
                        row.scales.data(), nullptr, wq.data.data(),
                        wq.scales.data(), &wq.amax, 0, nullptr, d.data(), rows,
                        n, cols, 0),
                    "te_rt_gemm_nvfp4_row_scaled: a_amax is NULL");
}

} // namespace
