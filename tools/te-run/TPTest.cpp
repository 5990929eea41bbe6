//===- TPTest.cpp - te-run --tp's shard slicing and gathering ------------===//
//
// The shard functions of TP.h on 1-D, 2-D and 3-D arrays of 2- and 4-byte
// elements: the blocks rank r keeps, that gathering every rank's slice
// restores the global array, the errors of dims that do not divide, and the
// partial sums' rounding.
//
//===----------------------------------------------------------------------===//

#include "TP.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace te::tp;

namespace {

/// A global array whose element i holds the value i (in `elementBytes`
/// little-endian bytes), so a slice's elements say where they came from.
std::vector<char> iota(const std::vector<int64_t> &shape, int64_t elementBytes) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<char> a(size_t(n * elementBytes));
  for (int64_t i = 0; i < n; ++i) {
    uint32_t v = uint32_t(i);
    std::memcpy(a.data() + i * elementBytes, &v, size_t(elementBytes));
  }
  return a;
}

std::vector<int64_t> values(const std::vector<char> &a, int64_t elementBytes) {
  std::vector<int64_t> v(a.size() / size_t(elementBytes));
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t x = 0;
    std::memcpy(&x, a.data() + i * size_t(elementBytes), size_t(elementBytes));
    v[i] = x;
  }
  return v;
}

/// Slices `shape` over `n` ranks and gathers the slices back.
void roundTrip(const std::vector<int64_t> &shape, int64_t elementBytes,
               Shard shard, int64_t n) {
  SCOPED_TRACE(std::string(shardName(shard)) + " over " + std::to_string(n) +
               " ranks, element " + std::to_string(elementBytes) + " bytes");
  std::vector<char> global = iota(shape, elementBytes), all;
  std::vector<int64_t> local;
  std::string error;
  ASSERT_TRUE(localShape(shape, shard, n, local, error)) << error;
  for (int64_t r = 0; r < n; ++r) {
    std::vector<char> part;
    ASSERT_TRUE(slice(global, shape, elementBytes, shard, n, r, part, error))
        << error;
    ASSERT_EQ(part.size(), global.size() / size_t(n));
    all.insert(all.end(), part.begin(), part.end());
  }
  std::vector<char> back;
  ASSERT_TRUE(gather(all, local, elementBytes, shard, n, back, error)) << error;
  EXPECT_EQ(back, global);
  std::vector<int64_t> again;
  ASSERT_TRUE(globalShape(local, shard, n, again, error)) << error;
  EXPECT_EQ(again, shape);
}

} // namespace

TEST(TeRunTP, ParseShard) {
  EXPECT_EQ(parseShard(nullptr), Shard::None);
  EXPECT_EQ(parseShard("rows"), Shard::Rows);
  EXPECT_EQ(parseShard("cols"), Shard::Cols);
  EXPECT_EQ(parseShard("gated_rows"), Shard::GatedRows);
  EXPECT_EQ(parseShard("replicated"), Shard::Replicated);
  EXPECT_EQ(parseShard("partial"), Shard::Partial);
  EXPECT_FALSE(parseShard("Rows"));
  EXPECT_FALSE(parseShard(""));
}

TEST(TeRunTP, Shapes) {
  std::vector<int64_t> s;
  std::string error;
  ASSERT_TRUE(localShape({8, 6}, Shard::Rows, 2, s, error));
  EXPECT_EQ(s, (std::vector<int64_t>{4, 6}));
  ASSERT_TRUE(localShape({8, 6}, Shard::Cols, 2, s, error));
  EXPECT_EQ(s, (std::vector<int64_t>{8, 3}));
  ASSERT_TRUE(localShape({8, 6}, Shard::GatedRows, 2, s, error));
  EXPECT_EQ(s, (std::vector<int64_t>{4, 6}));
  ASSERT_TRUE(localShape({8, 6}, Shard::Replicated, 4, s, error));
  EXPECT_EQ(s, (std::vector<int64_t>{8, 6}));
  ASSERT_TRUE(globalShape({3, 5, 7}, Shard::Cols, 3, s, error));
  EXPECT_EQ(s, (std::vector<int64_t>{3, 5, 21}));
  ASSERT_TRUE(globalShape({3, 5, 7}, Shard::GatedRows, 3, s, error));
  EXPECT_EQ(s, (std::vector<int64_t>{9, 5, 7}));
  ASSERT_TRUE(globalShape({3}, Shard::Partial, 3, s, error));
  EXPECT_EQ(s, (std::vector<int64_t>{3}));
  EXPECT_EQ(shardedDim(Shard::Cols, 3), 2);
  EXPECT_EQ(shardedDim(Shard::Rows, 3), 0);
  EXPECT_EQ(shardedDim(Shard::Replicated, 3), -1);
}

TEST(TeRunTP, NonDivisibleDimsAreErrors) {
  std::vector<int64_t> s;
  std::string error;
  EXPECT_FALSE(localShape({7, 4}, Shard::Rows, 2, s, error));
  EXPECT_NE(error.find("dim 0 of the global shape [7x4] (7) is not a "
                       "multiple of 2 ranks"),
            std::string::npos)
      << error;
  EXPECT_FALSE(localShape({4, 9}, Shard::Cols, 2, s, error));
  EXPECT_NE(error.find("dim 1"), std::string::npos) << error;
  // gated_rows: both halves split, so dim 0 needs 2 * nranks.
  EXPECT_FALSE(localShape({6, 4}, Shard::GatedRows, 2, s, error));
  EXPECT_NE(error.find("2 x 2 ranks"), std::string::npos) << error;
  EXPECT_TRUE(localShape({6, 4}, Shard::GatedRows, 3, s, error)) << error;
  EXPECT_FALSE(localShape({}, Shard::Rows, 2, s, error));
  EXPECT_NE(error.find("0-d"), std::string::npos) << error;
  EXPECT_FALSE(globalShape({}, Shard::Cols, 2, s, error));
  EXPECT_FALSE(globalShape({int64_t(1) << 62, 2}, Shard::Rows, 4, s, error));
  EXPECT_NE(error.find("does not fit"), std::string::npos) << error;
  EXPECT_FALSE(localShape({4}, Shard::Rows, 0, s, error));
  std::vector<char> out;
  std::vector<char> g = iota({7, 4}, 4);
  EXPECT_FALSE(slice(g, {7, 4}, 4, Shard::Rows, 2, 0, out, error));
  EXPECT_FALSE(slice(g, {7, 4}, 4, Shard::Rows, 7, 7, out, error)); // rank
  EXPECT_NE(error.find("rank 7"), std::string::npos) << error;
  EXPECT_FALSE(slice(g, {8, 4}, 4, Shard::Rows, 2, 0, out, error)); // bytes
  EXPECT_NE(error.find("must be 128 bytes, got 112"), std::string::npos)
      << error;
  EXPECT_FALSE(gather(g, {7, 4}, 4, Shard::Rows, 2, out, error));
  EXPECT_FALSE(gather(g, {7, 4}, 4, Shard::Replicated, 1, out, error));
}

TEST(TeRunTP, RowsBlocks) {
  // [4, 3] over 2 ranks: rank 1 holds rows 2 and 3.
  std::vector<char> g = iota({4, 3}, 4), part;
  std::string error;
  ASSERT_TRUE(slice(g, {4, 3}, 4, Shard::Rows, 2, 1, part, error)) << error;
  EXPECT_EQ(values(part, 4), (std::vector<int64_t>{6, 7, 8, 9, 10, 11}));
}

TEST(TeRunTP, ColsBlocks) {
  // [2, 4] over 2 ranks: rank 1 holds columns 2 and 3 of each row.
  std::vector<char> g = iota({2, 4}, 2), part;
  std::string error;
  ASSERT_TRUE(slice(g, {2, 4}, 2, Shard::Cols, 2, 1, part, error)) << error;
  EXPECT_EQ(values(part, 2), (std::vector<int64_t>{2, 3, 6, 7}));
  // 1-D: the last dim is dim 0.
  std::vector<char> v = iota({6}, 4);
  ASSERT_TRUE(slice(v, {6}, 4, Shard::Cols, 3, 2, part, error)) << error;
  EXPECT_EQ(values(part, 4), (std::vector<int64_t>{4, 5}));
}

TEST(TeRunTP, GatedRowsBlocks) {
  // [2F, H] = [8, 2] = [a ; b] with F = 4 over 2 ranks: rank r holds
  // [a_r ; b_r], rows {2r, 2r+1} of a and of b.
  std::vector<char> g = iota({8, 2}, 2), part;
  std::string error;
  ASSERT_TRUE(slice(g, {8, 2}, 2, Shard::GatedRows, 2, 0, part, error));
  EXPECT_EQ(values(part, 2), (std::vector<int64_t>{0, 1, 2, 3, 8, 9, 10, 11}));
  ASSERT_TRUE(slice(g, {8, 2}, 2, Shard::GatedRows, 2, 1, part, error));
  EXPECT_EQ(values(part, 2),
            (std::vector<int64_t>{4, 5, 6, 7, 12, 13, 14, 15}));
  // Its bias [2F] = [8].
  std::vector<char> bias = iota({8}, 4);
  ASSERT_TRUE(slice(bias, {8}, 4, Shard::GatedRows, 4, 3, part, error));
  EXPECT_EQ(values(part, 4), (std::vector<int64_t>{3, 7}));
}

TEST(TeRunTP, SliceThenGatherRestores) {
  const std::vector<std::vector<int64_t>> shapes = {
      {24}, {12, 6}, {24, 12}, {12, 5, 12}, {24, 2, 6}};
  for (const auto &shape : shapes)
    for (int64_t bytes : {2, 4})
      for (int64_t n : {1, 2, 3, 6}) {
        SCOPED_TRACE(shape.size());
        roundTrip(shape, bytes, Shard::Rows, n);
        roundTrip(shape, bytes, Shard::Cols, n);
        roundTrip(shape, bytes, Shard::GatedRows, n);
      }
  // Empty arrays (a zero dim) round-trip too.
  roundTrip({0, 4}, 4, Shard::Rows, 2);
  roundTrip({4, 0}, 2, Shard::Rows, 2);
  roundTrip({4, 0}, 2, Shard::Cols, 1);
}

TEST(TeRunTP, ReplicatedSliceIsACopy) {
  std::vector<char> g = iota({3, 5}, 4), part;
  std::string error;
  ASSERT_TRUE(slice(g, {3, 5}, 4, Shard::Replicated, 4, 3, part, error));
  EXPECT_EQ(part, g);
}

TEST(TeRunTP, PartialSums) {
  std::string error;
  // fp32: summed in rank order.
  float f[] = {1.0f, -2.0f, 0.5f, 0.25f, 3.0f, 4.0f};
  std::vector<char> ranks(reinterpret_cast<char *>(f),
                          reinterpret_cast<char *>(f) + sizeof f), sum;
  ASSERT_TRUE(sumPartial(ranks, 2, DType::F32, 3, sum, error)) << error;
  float s[2];
  std::memcpy(s, sum.data(), 8);
  EXPECT_EQ(s[0], 1.0f + 0.5f + 3.0f);
  EXPECT_EQ(s[1], -2.0f + 0.25f + 4.0f);
  // bf16: summed in fp32 and rounded once. 1 + 2^-8 + 2^-8 is exact in
  // fp32 (1 + 2^-7) and a bf16; rounding each addition would give 1.
  uint16_t one = floatToBF16(1.0f), tiny = floatToBF16(std::ldexp(1.0f, -8));
  uint16_t h[] = {one, tiny, tiny};
  ranks.assign(reinterpret_cast<char *>(h), reinterpret_cast<char *>(h) + 6);
  ASSERT_TRUE(sumPartial(ranks, 1, DType::BF16, 3, sum, error)) << error;
  uint16_t r;
  std::memcpy(&r, sum.data(), 2);
  EXPECT_EQ(bf16ToFloat(r), 1.0f + std::ldexp(1.0f, -7));
  // Round to nearest even: 1 + 2^-8 is halfway between bf16 1 and
  // 1 + 2^-7, and goes to 1 (even); 1 + 3 * 2^-8 goes up to 1 + 2^-6.
  EXPECT_EQ(bf16ToFloat(floatToBF16(1.0f + std::ldexp(1.0f, -8))), 1.0f);
  EXPECT_EQ(bf16ToFloat(floatToBF16(1.0f + 3 * std::ldexp(1.0f, -8))),
            1.0f + std::ldexp(1.0f, -6));
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(NAN))));
  // f16.
  _Float16 a[] = {_Float16(1.5f), _Float16(2.25f)};
  ranks.assign(reinterpret_cast<char *>(a), reinterpret_cast<char *>(a) + 4);
  ASSERT_TRUE(sumPartial(ranks, 1, DType::F16, 2, sum, error)) << error;
  _Float16 x;
  std::memcpy(&x, sum.data(), 2);
  EXPECT_EQ(float(x), 3.75f);
  // Sizes are checked.
  EXPECT_FALSE(sumPartial(ranks, 2, DType::F16, 2, sum, error));
  EXPECT_NE(error.find("must be 8 bytes, got 4"), std::string::npos) << error;
}

TEST(TeRunTP, MaxAbsDifference) {
  float a[] = {1.0f, 2.0f, -0.0f}, b[] = {1.0f, 2.5f, 0.0f};
  EXPECT_EQ(maxAbsDifference(reinterpret_cast<char *>(a),
                             reinterpret_cast<char *>(b), 3, DType::F32),
            0.5);
  EXPECT_EQ(maxAbsDifference(reinterpret_cast<char *>(a),
                             reinterpret_cast<char *>(a), 3, DType::F32),
            0.0);
  b[0] = NAN;
  EXPECT_TRUE(std::isnan(maxAbsDifference(reinterpret_cast<char *>(a),
                                          reinterpret_cast<char *>(b), 3,
                                          DType::F32)));
}
