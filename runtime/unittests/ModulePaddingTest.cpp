//===- ModulePaddingTest.cpp - quantized results' padding -------*- C++ -*-===//
//
// The padding of a quantized result's buffer (the bytes between its inner
// tensors and after the last one): the ranges te::padding::append gives
// against hand-computed ones, and malformed layouts.
//
//===----------------------------------------------------------------------===//

#include "module/Padding.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

using te::padding::Range;

namespace {

/// The ranges as (result, offset, bytes) triples, for comparisons.
std::vector<std::vector<int64_t>> triples(const std::vector<Range> &ranges) {
  std::vector<std::vector<int64_t>> out;
  for (const Range &r : ranges)
    out.push_back({r.result, r.offset, r.bytes});
  return out;
}

//===----------------------------------------------------------------------===//
// The ranges
//===----------------------------------------------------------------------===//

// Per-tensor FP8 at [24, 20]: scale_inv (4 bytes), transpose and data (480
// bytes each), at 256-byte aligned offsets: three gaps.
TEST(PaddingRanges, PerTensorFP8Layout) {
  std::vector<Range> out;
  std::string error;
  ASSERT_TRUE(
      te::padding::append(3, {0, 256, 768}, {4, 480, 480}, 1280, out, error))
      << error;
  EXPECT_EQ(triples(out), (std::vector<std::vector<int64_t>>{
                              {3, 4, 252}, {3, 736, 32}, {3, 1248, 32}}));
}

// Inner tensors that fill their aligned slots leave nothing; empty ones
// (a zero dim) take no room; a gap before the first inner tensor counts.
TEST(PaddingRanges, NoGapsAndEmptyInnerTensors) {
  std::vector<Range> out;
  std::string error;
  ASSERT_TRUE(te::padding::append(0, {0, 256}, {256, 256}, 512, out, error));
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(
      te::padding::append(1, {0, 256, 256}, {4, 0, 0}, 256, out, error));
  ASSERT_TRUE(te::padding::append(2, {16}, {4}, 32, out, error));
  ASSERT_TRUE(te::padding::append(5, {}, {}, 0, out, error));
  ASSERT_TRUE(te::padding::append(6, {}, {}, 64, out, error));
  EXPECT_EQ(triples(out),
            (std::vector<std::vector<int64_t>>{
                {1, 4, 252}, {2, 0, 16}, {2, 20, 12}, {6, 0, 64}}));
}

// Not a layout: an error naming what is wrong, and nothing appended.
TEST(PaddingRanges, MalformedLayouts) {
  std::vector<Range> out = {{9, 1, 2}};
  std::string error;
  auto refused = [&](std::vector<int64_t> offsets, std::vector<int64_t> sizes,
                     int64_t total) {
    error.clear();
    EXPECT_FALSE(te::padding::append(0, offsets, sizes, total, out, error));
    EXPECT_EQ(out.size(), 1u);
    return error;
  };
  EXPECT_EQ(refused({0, 256}, {4}, 512), "2 offsets for 1 inner tensors");
  EXPECT_EQ(refused({0}, {4}, -1), "the buffer's size is negative (-1)");
  EXPECT_EQ(refused({0, 256}, {4, -8}, 512),
            "inner tensor 1 has a negative size (-8)");
  EXPECT_EQ(refused({0, 2}, {4, 8}, 512),
            "inner tensor 1 starts at byte 2, before the previous one ends "
            "(byte 4)");
  EXPECT_EQ(refused({-4}, {4}, 512),
            "inner tensor 0 starts at byte -4, before the previous one ends "
            "(byte 0)");
  EXPECT_EQ(refused({0, 256}, {4, 300}, 512),
            "inner tensor 1 (300 bytes at byte 256) ends past the buffer's "
            "512 bytes");
  EXPECT_EQ(refused({0, 256}, {4, INT64_MAX}, INT64_MAX),
            "inner tensor 1 (9223372036854775807 bytes at byte 256) ends past "
            "the buffer's 9223372036854775807 bytes");
}

} // namespace
