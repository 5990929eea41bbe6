//===- RobustnessTest.cpp - runtime calls on edge-case sizes ----*- C++ -*-===//
//
// Empty tensors (a zero token count) through the fused calls and the block
// quantizers, and sizes beyond the machine's memory, which must be errors
// rather than allocations an allocator (or a sanitizer's) aborts on
// (issue 17; the fuzz/ runtime target found the first two).
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "te/Runtime/TERuntime.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

class Robustness : public ::testing::Test {
protected:
  void SetUp() override {
    ctx = te_rt_context_create(TE_RT_BACKEND_CPU);
    ASSERT_NE(ctx, nullptr) << te_rt_last_error();
  }
  void TearDown() override { te_rt_context_destroy(ctx); }
  te_rt_context *ctx = nullptr;
};

std::string lastError() { return te_rt_last_error(); }

// Zero rows: the fused norm-cast, act-cast and dact-cast stage the
// intermediate in a host buffer, which was empty (NULL) and refused by the
// inner call ("te_rt_norm_fwd: z is NULL").
TEST_F(Robustness, FusedFp8CallsOnZeroRows) {
  const int64_t cols = 64;
  std::vector<float> x(cols, 1.0f), gamma(cols, 1.0f), beta(cols, 0.0f),
      stats(4, -1.0f), bias(cols, 7.0f);
  std::vector<uint8_t> data(cols), transpose(cols);
  for (int32_t dtype : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16}) {
    float scaleInv = -1, amax = -1;
    EXPECT_EQ(te_rt_norm_quantize_fp8(
                  ctx, TE_RT_NORM_LAYERNORM, dtype, x.data(), gamma.data(),
                  beta.data(), 1e-5, 0, /*rows=*/0, cols, stats.data(),
                  stats.data() + 2, TE_RT_FP8_E4M3, nullptr, 0, data.data(),
                  transpose.data(), &scaleInv, &amax),
              0)
        << lastError();
    EXPECT_EQ(amax, 0.0f) << "the amax of no values";
    // The fused activation-casts are delayed scaling's (a known scale).
    amax = -1;
    const float scale = 1.0f;
    EXPECT_EQ(te_rt_act_quantize_fp8(ctx, TE_RT_ACT_GELU, dtype, x.data(), 0,
                                     cols, 7.0f, 1.702f, 1.0f, TE_RT_FP8_E4M3,
                                     &scale, data.data(), transpose.data(),
                                     &scaleInv, &amax),
              0)
        << lastError();
    EXPECT_EQ(amax, 0.0f);
    std::vector<float> dbias(cols, 5.0f);
    EXPECT_EQ(te_rt_dact_quantize_fp8(
                  ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, x.data(), x.data(),
                  dbias.data(), 0, cols, 7.0f, 1.702f, 1.0f, TE_RT_FP8_E5M2,
                  &scale, data.data(), transpose.data(), &scaleInv, &amax),
              0)
        << lastError();
    EXPECT_EQ(dbias, std::vector<float>(cols, 0.0f)) << "dbias sums no rows";
    // The fused bias gradient + cast, current and delayed scaling.
    for (const float *sc : {static_cast<const float *>(nullptr), &scale}) {
      std::vector<float> db(cols, 5.0f);
      amax = -1;
      EXPECT_EQ(te_rt_dbias_quantize_fp8(ctx, TE_RT_DTYPE_F32, x.data(), 0,
                                         cols, TE_RT_FP8_E5M2, sc, 0,
                                         data.data(), transpose.data(),
                                         &scaleInv, &amax, db.data()),
                0)
          << lastError();
      EXPECT_EQ(amax, 0.0f);
      EXPECT_EQ(db, std::vector<float>(cols, 0.0f)) << "dbias sums no rows";
    }
  }
}

// Zero rows (and columns) through the MXFP8 and NVFP4 quantizers: no scale
// bytes to clear (memset on an empty staging vector's NULL data was
// undefined behaviour), NVFP4 too.
TEST_F(Robustness, BlockQuantizersOnEmptyTensors) {
  std::vector<float> x(64 * 64, 1.0f);
  std::vector<uint8_t> q(64 * 64), s(512), cq(64 * 64), cs(512);
  EXPECT_EQ(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, x.data(), 0, 64,
                                 TE_RT_FP8_E4M3, 1, q.data(), s.data(),
                                 cq.data(), cs.data()),
            0)
      << lastError();
  EXPECT_EQ(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, x.data(), 64, 0,
                                 TE_RT_FP8_E4M3, 0, q.data(), s.data(),
                                 cq.data(), cs.data()),
            0)
      << lastError();
  EXPECT_EQ(
      te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, x.data(), 0, 64, 0, 0,
                               q.data(), reinterpret_cast<float *>(s.data()),
                               cq.data(), reinterpret_cast<float *>(cs.data())),
      0)
      << lastError();
  // NVFP4 too (TE's zero-token steps): nothing to quantize, the amax is 0.
  float amax[2] = {-1.0f, -1.0f};
  EXPECT_EQ(te_rt_quantize_nvfp4(ctx, TE_RT_DTYPE_F32, x.data(), 0, 64, 0, 0, 0,
                                 0, 1, q.data(), s.data(), amax, nullptr,
                                 nullptr, nullptr),
            0)
      << lastError();
  EXPECT_EQ(amax[0], 0.0f);
}

// A host buffer larger than the machine (a library's arena from a 2^40-long
// amax history) is an error naming the size, not an allocation.
TEST_F(Robustness, AllocBeyondMachineMemory) {
  int64_t limit = te::rt::hostMemoryBytes();
  ASSERT_GT(limit, 0);
  EXPECT_EQ(te_rt_alloc(ctx, limit + 1), nullptr);
  EXPECT_EQ(lastError(), "te_rt_alloc: cannot allocate " +
                             std::to_string(limit + 1) +
                             " bytes on the cpu backend: more than this "
                             "machine's memory (" +
                             std::to_string(limit) + " bytes of RAM and swap)");
  void *p = te_rt_alloc(ctx, 1 << 20);
  EXPECT_NE(p, nullptr) << lastError();
  te_rt_free(ctx, p);
}

// The fp32 staging of a bf16 operand larger than the machine: out of host
// memory before the buffer (never read) is touched.
TEST_F(Robustness, StagingBeyondMachineMemory) {
  int64_t rows = te::rt::hostMemoryBytes() / 64 + 1, cols = 16;
  std::vector<uint16_t> x(16), gamma(16), z(16);
  float mu[1], rs[1];
  EXPECT_NE(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_BF16,
                           x.data(), gamma.data(), nullptr, 1e-5, 0, rows, cols,
                           z.data(), mu, rs),
            0);
  EXPECT_EQ(lastError(), "te_rt_norm_fwd: out of host memory");
}

} // namespace

namespace {

// The range check compiled entries run on their dynamic dims and element
// counts before anything is sized (te-lower-to-runtime's emitSizeChecks).
TEST_F(Robustness, CheckRange) {
  const int64_t maxDim = int64_t(1) << 40;
  EXPECT_EQ(te_rt_check_range(ctx, 0, 0, maxDim, "f: dim d0"), 0);
  EXPECT_EQ(te_rt_check_range(ctx, maxDim, 0, maxDim, "f: dim d0"), 0);
  ASSERT_NE(te_rt_check_range(ctx, maxDim + 1, 0, maxDim, "f: dim d0"), 0);
  EXPECT_EQ(lastError(),
            "f: dim d0 must be in [0, 1099511627776], got 1099511627777");
  ASSERT_NE(te_rt_check_range(ctx, -1, 0, maxDim, "f: dim d0"), 0);
  EXPECT_EQ(lastError(), "f: dim d0 must be in [0, 1099511627776], got -1");
  // A saturated element count (the entry clamps overflowing products).
  ASSERT_NE(te_rt_check_range(ctx, INT64_MAX, 0, int64_t(1) << 48,
                              "f: the element count d0*d1*64"),
            0);
  EXPECT_EQ(lastError(), "f: the element count d0*d1*64 must be in [0, "
                         "281474976710656], got 9223372036854775807");
  // Bad arguments are errors, not crashes.
  EXPECT_NE(te_rt_check_range(nullptr, 0, 0, 1, "x"), 0);
  EXPECT_NE(te_rt_check_range(ctx, 0, 0, 1, nullptr), 0);
}

} // namespace
