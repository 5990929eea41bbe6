//===- ModulePaddingTest.cpp - quantized results' padding -------*- C++ -*-===//
//
// te_module_run leaves the padding of every quantized result zeroed (the
// bytes between its inner tensors and after the last one, up to
// te_module_tensor_bytes): the ranges (te::padding::append) against hand-
// computed ones and malformed layouts; runs of fixtures/qtensor_library.c
// on the cpu backend into buffers filled with 0xAB, against runs into
// zeroed buffers, at dims seen and not seen before (the client's cache),
// from several threads, with padding an entry copies garbage into or does
// not write at all, with more ranges than one te_rt_zero_ranges launch
// holds; and the client's errors.
//
//===----------------------------------------------------------------------===//

#include "ModulePaddingCheck.h"
#include "module/Padding.h"
#include "te/Runtime/TEModule.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

using namespace te::test;
using te::padding::Range;

namespace {

std::string lastError() { return te_rt_last_error(); }

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

//===----------------------------------------------------------------------===//
// te_module_run on the cpu backend
//===----------------------------------------------------------------------===//

class ModulePadding : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(te_module_open(TE_TEST_QTENSOR_LIBRARY, &module), 0)
        << lastError();
    ctx = te_rt_context_create(TE_RT_BACKEND_CPU);
    ASSERT_NE(ctx, nullptr) << lastError();
  }
  void TearDown() override {
    te_rt_context_destroy(ctx);
    te_module_close(module);
  }
  const te_module_entry *entry(const char *name) {
    const te_module_entry *e = te_module_find_entry(module, name);
    EXPECT_NE(e, nullptr) << lastError();
    return e;
  }
  /// `quantize` at dims into 0xAB-filled and into zeroed buffers, checked;
  /// the padding bytes checked.
  int64_t checkQuantize(te_rt_context *c, int64_t rows, int64_t cols) {
    const te_module_entry *e = entry("quantize");
    std::vector<Bytes> args = {randomInput(rows * cols, unsigned(rows))};
    std::vector<int64_t> dims = {rows, cols};
    std::vector<Bytes> filled = runFilled(c, e, args, dims, 0xAB),
                       zeroed = runFilled(c, e, args, dims, 0x00);
    return expectPaddingZeroed(e, dims, filled, zeroed);
  }
  te_module *module = nullptr;
  te_rt_context *ctx = nullptr;
};

// [24, 20]: result0 (alignment 256) has 252 + 32 + 32 padding bytes,
// result1 (alignment 128) 124 + 32, the first 124 written by the entry
// (transpose bytes): zeroed after it. [16, 16]: only the gaps after the
// scale_inv. A [1, 1] tensor is mostly padding.
TEST_F(ModulePadding, QuantizedResultsComeOutWithZeroPadding) {
  EXPECT_EQ(checkQuantize(ctx, 24, 20), 316 + 156);
  EXPECT_EQ(checkQuantize(ctx, 16, 16), 252 + 124);
  EXPECT_EQ(checkQuantize(ctx, 1, 1), 252 + 255 + 255 + 124 + 127);
}

// More dims than the client caches (8), then the first ones again: every
// run is zeroed at its own dims.
TEST_F(ModulePadding, ManyDimsAndTheCache) {
  for (int pass = 0; pass < 2; ++pass)
    for (int64_t rows = 1; rows <= 12; ++rows)
      EXPECT_GT(checkQuantize(ctx, rows, 3 * rows + 1), 0) << rows;
}

// Runs on several threads (a context each) at changing dims share the
// entry's cache.
TEST_F(ModulePadding, ConcurrentRuns) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([this, t] {
      te_rt_context *c = te_rt_context_create(TE_RT_BACKEND_CPU);
      ASSERT_NE(c, nullptr) << lastError();
      for (int64_t i = 0; i < 20; ++i)
        EXPECT_GT(checkQuantize(c, 1 + (i * 7 + t) % 11, 9), 0);
      te_rt_context_destroy(c);
    });
  for (std::thread &t : threads)
    t.join();
}

// 80 quantized results with two gaps each: 160 ranges, two
// te_rt_zero_ranges calls (128 + 32).
TEST_F(ModulePadding, MoreRangesThanOneLaunch) {
  const te_module_entry *e = entry("many");
  std::vector<Bytes> args = {randomInput(10, 5)};
  std::vector<int64_t> dims = {10};
  std::vector<Bytes> filled = runFilled(ctx, e, args, dims, 0xAB),
                     zeroed = runFilled(ctx, e, args, dims, 0x00);
  EXPECT_EQ(expectPaddingZeroed(e, dims, filled, zeroed), 80 * (252 + 246));
}

// Padding the entry never writes is zeroed; what it does not write of its
// inner tensors stays as the caller left it.
TEST_F(ModulePadding, PaddingTheEntryDoesNotWrite) {
  std::vector<Bytes> out =
      runFilled(ctx, entry("noop"), {randomInput(8, 1)}, {8}, 0xAB);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].size(), 512u);
  for (size_t j = 0; j < 512; ++j)
    EXPECT_EQ(int(out[0][j]), j < 4 || (j >= 256 && j < 264) ? 0xAB : 0)
        << "byte " << j;
}

// An entry whose module info says it writes none of its result's padding
// (padding_written []) has it zeroed before it runs: `early` then writes
// 0xEE over all of it (a library that lies), and its bytes stay. Without
// the key (noop) the padding is zeroed after the entry, as
// PaddingTheEntryDoesNotWrite shows; quantize (result1 listed) and many
// (none listed) come out zeroed either way (the tests above).
TEST_F(ModulePadding, PaddingZeroedBeforeTheEntryWhereItWritesNone) {
  const te_module_entry *early = entry("early"), *quantize = entry("quantize");
  EXPECT_EQ(te_module_entry_result_padding_written(early, 0), 0);
  EXPECT_EQ(te_module_entry_result_padding_written(entry("noop"), 0), 1);
  EXPECT_EQ(te_module_entry_result_padding_written(quantize, 0), 0);
  EXPECT_EQ(te_module_entry_result_padding_written(quantize, 1), 1);
  EXPECT_EQ(te_module_entry_result_padding_written(quantize, 2), 0);
  EXPECT_EQ(te_module_entry_result_padding_written(quantize, 3), -1);
  EXPECT_EQ(te_module_entry_result_padding_written(nullptr, 0), -1);
  std::vector<Bytes> out =
      runFilled(ctx, early, {randomInput(8, 1)}, {8}, 0xAB);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].size(), 512u);
  // (TE_RT_PADDING_BESIDE=0 zeroes every padding after the entry: then
  // only the inner tensors keep the entry's bytes.)
  const char *env = std::getenv("TE_RT_PADDING_BESIDE");
  const bool beside = !(env && std::string(env) == "0");
  for (size_t j = 0; j < 512; ++j) {
    const bool inner = j < 4 || (j >= 256 && j < 264);
    EXPECT_EQ(int(out[0][j]), (beside ? j < 264 : inner) ? 0xEE : 0)
        << "byte " << j;
  }
}

// A quantized result's buffer is needed (the entry did not look at it
// here); a layout that cannot be evaluated at the dims, or that overflows,
// is an error (found before the entry runs: the runner lays the padding
// out first), never a write out of bounds.
TEST_F(ModulePadding, Errors) {
  const te_module_entry *e = entry("noop");
  Bytes x = randomInput(8, 1), buffer(512, 0xAB);
  void *args[1] = {x.data()}, *results[1] = {nullptr};
  int64_t dims[1] = {8};
  EXPECT_NE(te_module_run(e, ctx, args, results, dims), 0);
  EXPECT_EQ(lastError(), "noop failed: result0 is NULL (a quantized result's "
                         "buffer, whose padding is zeroed with the entry)");
  results[0] = buffer.data();
  dims[0] = 6;
  EXPECT_NE(te_module_run(e, ctx, args, results, dims), 0);
  EXPECT_EQ(lastError(), "noop failed: result0: dim expression 'd0/4': 6 is "
                         "not divisible by 4 (the recipe needs a multiple of "
                         "4 there)");
  dims[0] = INT64_MAX - 3;
  EXPECT_NE(te_module_run(e, ctx, args, results, dims), 0);
  EXPECT_EQ(lastError(), "noop failed: result0: a buffer of the module info: "
                         "a quantized tensor's size overflows int64");
  for (uint8_t b : buffer)
    EXPECT_EQ(b, 0xAB); // nothing was zeroed
  dims[0] = 8;
  EXPECT_EQ(te_module_run(e, ctx, args, results, dims), 0) << lastError();
  EXPECT_EQ(buffer[4], 0);
}

} // namespace
