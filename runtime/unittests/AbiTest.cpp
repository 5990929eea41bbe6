//===- AbiTest.cpp - Runtime ABI: contexts and primitives -------*- C++ -*-===//
//
// The te_rt_* context, buffer and compute calls through the C ABI:
// hand-computed cases of every primitive, bf16/f16 rounding, reduced-
// precision results equal to the fp32 result rounded once, and the exact
// message of every argument check.
//
//===----------------------------------------------------------------------===//

#include "te/Runtime/TERuntime.h"

#include "Context.h"
#include "cpu/Convert.h"
#include "cpu/Quantize.h"
#include "cpu/Reference.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace te::cpu;

namespace {

/// Sets (or clears) an environment variable for the scope of a test.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old, hadOld = true;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (hadOld)
      setenv(name, saved.c_str(), 1);
    else
      unsetenv(name);
  }

private:
  const char *name;
  std::string saved;
  bool hadOld = false;
};

/// A cpu context per test (TE_RT_BACKEND cleared so that it resolves to cpu).
class Abi : public ::testing::Test {
protected:
  void SetUp() override {
    ScopedEnv env("TE_RT_BACKEND", nullptr);
    ctx = te_rt_context_create(TE_RT_BACKEND_CPU);
    ASSERT_NE(ctx, nullptr) << te_rt_last_error();
  }
  void TearDown() override { te_rt_context_destroy(ctx); }
  te_rt_context *ctx = nullptr;
};

std::string lastError() { return te_rt_last_error(); }

std::vector<uint16_t> toBF16(const std::vector<float> &v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = floatToBF16(v[i]);
  return out;
}
std::vector<uint16_t> toF16(const std::vector<float> &v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = floatToF16(v[i]);
  return out;
}
std::vector<float> fromBF16(const std::vector<uint16_t> &v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = bf16ToFloat(v[i]);
  return out;
}
std::vector<float> fromF16(const std::vector<uint16_t> &v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = f16ToFloat(v[i]);
  return out;
}

/// Random values that bf16 and f16 both represent exactly (8 significant
/// bits, small exponent range), so the f32 and 16-bit calls see the same
/// inputs.
std::vector<float> exactRandom(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> mant(-255, 255), exp(-8, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = std::ldexp(static_cast<float>(mant(gen)), exp(gen) - 7);
  return v;
}

void expectNear(const float *got, std::vector<float> want, float tol,
                const char *what) {
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol) << what << "[" << i << "]";
}

/// Expects `rc` to be a failure whose message is exactly `message`.
#define EXPECT_FAILS_WITH(rc, message)                                         \
  do {                                                                         \
    EXPECT_NE((rc), 0);                                                        \
    EXPECT_EQ(lastError(), std::string(message));                              \
  } while (0)

//===----------------------------------------------------------------------===//
// Contexts and buffers
//===----------------------------------------------------------------------===//

TEST(AbiContext, CpuCreateAndDestroy) {
  ScopedEnv env("TE_RT_BACKEND", nullptr);
  te_rt_context *ctx = te_rt_context_create(TE_RT_BACKEND_CPU);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(te_rt_context_backend(ctx), TE_RT_BACKEND_CPU);
  EXPECT_EQ(te_rt_synchronize(ctx), 0);
  te_rt_context_destroy(ctx);
  te_rt_context_destroy(nullptr); // a no-op
}

TEST(AbiContext, AutoResolvesThroughSelectBackend) {
  ScopedEnv env("TE_RT_BACKEND", nullptr);
  te_rt_context *ctx = te_rt_context_create(TE_RT_BACKEND_AUTO);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(te_rt_context_backend(ctx),
            te_rt_select_backend(TE_RT_BACKEND_AUTO));
  EXPECT_NE(te_rt_context_backend(ctx), TE_RT_BACKEND_AUTO);
  te_rt_context_destroy(ctx);
}

TEST(AbiContext, EnvironmentOverridesTheRequest) {
  ScopedEnv env("TE_RT_BACKEND", "cpu");
  te_rt_context *ctx = te_rt_context_create(TE_RT_BACKEND_CUDA);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(te_rt_context_backend(ctx), TE_RT_BACKEND_CPU);
  te_rt_context_destroy(ctx);
}

TEST(AbiContext, CudaWithoutDeviceFailsCleanly) {
  ScopedEnv env("TE_RT_BACKEND", nullptr);
  if (te_rt_backend_available(TE_RT_BACKEND_CUDA))
    GTEST_SKIP() << "a CUDA device is visible";
  EXPECT_EQ(te_rt_context_create(TE_RT_BACKEND_CUDA), nullptr);
  std::string err = lastError();
  EXPECT_EQ(err.rfind("te_rt_context_create: te_rt_select_backend: backend "
                      "'cuda' requested but ",
                      0),
            0u)
      << err;
}

TEST(AbiContext, BadBackendAndNullContext) {
  ScopedEnv env("TE_RT_BACKEND", nullptr);
  EXPECT_EQ(te_rt_context_create(9), nullptr);
  EXPECT_EQ(lastError(),
            "te_rt_context_create: te_rt_select_backend: argument "
            "'requested' = 9 is not a backend (0 cpu, 1 cuda, 2 auto)");
  EXPECT_EQ(te_rt_context_backend(nullptr), TE_RT_BACKEND_INVALID);
  EXPECT_EQ(lastError(), "te_rt_context_backend: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_synchronize(nullptr),
                    "te_rt_synchronize: ctx is NULL");
}

TEST_F(Abi, AllocIsAlignedAndUnique) {
  std::vector<void *> ptrs;
  for (int64_t bytes : {0, 0, 1, 3, 255, 256, 257, 4096, 1000003}) {
    void *p = te_rt_alloc(ctx, bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u) << bytes;
    std::memset(p, 0xab, static_cast<size_t>(bytes)); // all of it is ours
    for (void *q : ptrs)
      EXPECT_NE(p, q);
    ptrs.push_back(p);
  }
  // Without a context the owner is unknown: an error, nothing freed.
  te_rt_free(nullptr, ptrs[0]);
  EXPECT_EQ(lastError(), "te_rt_free: ctx is NULL");
  for (void *p : ptrs)
    te_rt_free(ctx, p);
  te_rt_free(ctx, nullptr);
  te_rt_free(nullptr, nullptr);
}

TEST_F(Abi, AllocErrors) {
  EXPECT_EQ(te_rt_alloc(ctx, -1), nullptr);
  EXPECT_EQ(lastError(), "te_rt_alloc: bytes must be >= 0, got -1");
  EXPECT_EQ(te_rt_alloc(nullptr, 16), nullptr);
  EXPECT_EQ(lastError(), "te_rt_alloc: ctx is NULL");
  EXPECT_EQ(te_rt_alloc(ctx, std::numeric_limits<int64_t>::max()), nullptr);
  EXPECT_EQ(lastError(), "te_rt_alloc: bytes = 9223372036854775807 is too "
                         "large (the limit is 2^48)");
  EXPECT_EQ(te_rt_alloc(ctx, (int64_t(1) << 48) + 1), nullptr);
  EXPECT_EQ(lastError(), "te_rt_alloc: bytes = 281474976710657 is too large "
                         "(the limit is 2^48)");
}

TEST_F(Abi, CopiesAndZero) {
  const char host[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  char back[8] = {};
  void *a = te_rt_alloc(ctx, 8), *b = te_rt_alloc(ctx, 8);
  ASSERT_EQ(te_rt_copy_to_backend(ctx, a, host, 8), 0);
  ASSERT_EQ(te_rt_copy(ctx, b, a, 8), 0);
  ASSERT_EQ(te_rt_zero(ctx, a, 4), 0);
  ASSERT_EQ(te_rt_copy_to_host(ctx, back, b, 8), 0);
  EXPECT_EQ(std::memcmp(back, host, 8), 0);
  ASSERT_EQ(te_rt_copy_to_host(ctx, back, a, 8), 0);
  const char want[8] = {0, 0, 0, 0, 5, 6, 7, 8};
  EXPECT_EQ(std::memcmp(back, want, 8), 0);
  EXPECT_EQ(te_rt_copy(ctx, b, a, 0), 0);
  EXPECT_EQ(te_rt_synchronize(ctx), 0);

  char *bytes = static_cast<char *>(a);
  EXPECT_FAILS_WITH(te_rt_copy(ctx, bytes + 1, bytes, 4),
                    "te_rt_copy: dst and src overlap");
  EXPECT_FAILS_WITH(te_rt_copy(ctx, bytes, bytes + 3, 4),
                    "te_rt_copy: dst and src overlap");
  EXPECT_EQ(te_rt_copy(ctx, bytes + 4, bytes, 4), 0); // adjacent is fine
  EXPECT_FAILS_WITH(te_rt_copy(ctx, nullptr, a, 4), "te_rt_copy: dst is NULL");
  EXPECT_FAILS_WITH(te_rt_copy(ctx, b, a, -2),
                    "te_rt_copy: bytes must be >= 0, got -2");
  EXPECT_FAILS_WITH(te_rt_copy_to_backend(ctx, a, nullptr, 4),
                    "te_rt_copy_to_backend: host_src is NULL");
  EXPECT_FAILS_WITH(te_rt_copy_to_host(nullptr, back, a, 4),
                    "te_rt_copy_to_host: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_copy_to_host(ctx, nullptr, a, 4),
                    "te_rt_copy_to_host: host_dst is NULL");
  EXPECT_FAILS_WITH(te_rt_zero(ctx, nullptr, 4), "te_rt_zero: dst is NULL");
  EXPECT_FAILS_WITH(te_rt_zero(ctx, a, -1),
                    "te_rt_zero: bytes must be >= 0, got -1");
  te_rt_free(ctx, a);
  te_rt_free(ctx, b);
}

TEST_F(Abi, SuccessKeepsTheLastError) {
  EXPECT_NE(te_rt_zero(ctx, nullptr, 4), 0);
  char buf[4];
  EXPECT_EQ(te_rt_zero(ctx, buf, 4), 0);
  EXPECT_EQ(lastError(), "te_rt_zero: dst is NULL");
}

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
// Normalization
//===----------------------------------------------------------------------===//

// x [2,3] = [[1,2,3],[0,0,6]]: mean 2 and 2, variance 2/3 and 8.
const float kNormX[6] = {1, 2, 3, 0, 0, 6};
const float kRs0 = 1.22474487f; // 1/sqrt(2/3)
const float kRs1 = 0.35355339f; // 1/sqrt(8)

TEST_F(Abi, LayerNormForward2x3) {
  const float gamma[3] = {1, 2, 0.5f}, beta[3] = {0, 1, -1};
  float z[6], mu[2], rs[2];
  ASSERT_EQ(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32, kNormX,
                           gamma, beta, 0.0, 0, 2, 3, z, mu, rs),
            0)
      << lastError();
  expectNear(mu, {2, 2}, 1e-6f, "mu");
  expectNear(rs, {kRs0, kRs1}, 1e-6f, "rsigma");
  expectNear(z,
             {-1.22474487f, 1.0f, 0.5f * 1.22474487f - 1.0f, -0.70710678f,
              1.0f - 2 * 0.70710678f, 0.5f * 1.41421356f - 1.0f},
             1e-6f, "z");
  // No beta: the same without the shift; zero-centered gamma adds one.
  const float zeros[3] = {0, 0, 0};
  ASSERT_EQ(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32, kNormX,
                           zeros, nullptr, 0.0, 1, 2, 3, z, mu, rs),
            0);
  expectNear(z, {-kRs0, 0, kRs0, -0.70710678f, -0.70710678f, 1.41421356f},
             1e-6f, "z (zero-centered)");
  // eps enters under the square root: var 8 + eps 1 -> rsigma 1/3.
  ASSERT_EQ(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32, kNormX,
                           gamma, beta, 1.0, 0, 2, 3, z, mu, rs),
            0);
  EXPECT_NEAR(rs[1], 1.0f / 3.0f, 1e-6f);
}

TEST_F(Abi, RMSNormForward) {
  const float x[2] = {3, 4}, gamma[2] = {0, 1}; // zero-centered: [1, 2]
  float z[2], rs[1];
  ASSERT_EQ(te_rt_norm_fwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, x, gamma,
                           nullptr, 0.0, 1, 1, 2, z, nullptr, rs),
            0)
      << lastError();
  EXPECT_NEAR(rs[0], 0.28284271f, 1e-7f); // 1/sqrt(12.5)
  expectNear(z, {0.84852814f, 2.2627417f}, 1e-6f, "z");
}

TEST_F(Abi, LayerNormBackward2x3) {
  const float gamma[3] = {1, 1, 1}, dz[6] = {1, 0, 0, 0, 1, 0};
  const float mu[2] = {2, 2}, rs[2] = {kRs0, kRs1};
  float dx[6], dgamma[3], dbeta[3];
  ASSERT_EQ(te_rt_norm_bwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32, dz,
                           kNormX, mu, rs, gamma, 0, 2, 3, dx, dgamma, dbeta),
            0)
      << lastError();
  expectNear(
      dx,
      {0.20412415f, -0.40824829f, 0.20412415f, -0.1767767f, 0.1767767f, 0.0f},
      1e-6f, "dx");
  expectNear(dgamma, {-1.22474487f, -0.70710678f, 0.0f}, 1e-6f, "dgamma");
  expectNear(dbeta, {1, 1, 0}, 0, "dbeta");
  // dbeta may be skipped.
  ASSERT_EQ(te_rt_norm_bwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32, dz,
                           kNormX, mu, rs, gamma, 0, 2, 3, dx, dgamma, nullptr),
            0);
  expectNear(dgamma, {-1.22474487f, -0.70710678f, 0.0f}, 1e-6f, "dgamma");
}

TEST_F(Abi, RMSNormBackward) {
  const float x[2] = {3, 4}, gamma[2] = {1, 1}, dz[2] = {1, 0};
  const float rs[1] = {0.28284271f};
  float dx[2], dgamma[2];
  ASSERT_EQ(te_rt_norm_bwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, dz, x,
                           nullptr, rs, gamma, 0, 1, 2, dx, dgamma, nullptr),
            0)
      << lastError();
  expectNear(dx, {0.18101934f, -0.1357645f}, 1e-6f, "dx");
  expectNear(dgamma, {0.84852814f, 0.0f}, 1e-6f, "dgamma");
}

TEST_F(Abi, NormBackwardOverManyRowsMatchesTheReference) {
  // More rows than one reduction chunk, several threads.
  ScopedEnv threads("TE_RT_CPU_THREADS", "3");
  const int64_t rows = 1000, cols = 96;
  auto x = exactRandom(rows * cols, 1), dz = exactRandom(rows * cols, 2),
       gamma = exactRandom(cols, 3), beta = exactRandom(cols, 4);
  std::vector<float> z(rows * cols), mu(rows), rs(rows);
  ASSERT_EQ(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32, x.data(),
                           gamma.data(), beta.data(), 1e-5, 0, rows, cols,
                           z.data(), mu.data(), rs.data()),
            0);
  std::vector<float> zRef(rows * cols), muRef(rows), rsRef(rows);
  normForward(Norm::LayerNorm, x.data(), gamma.data(), beta.data(), 1e-5f,
              false, rows, cols, zRef.data(), muRef.data(), rsRef.data());
  EXPECT_EQ(z, zRef);
  EXPECT_EQ(mu, muRef);
  EXPECT_EQ(rs, rsRef);

  std::vector<float> dx(rows * cols), dg(cols), db(cols);
  ASSERT_EQ(te_rt_norm_bwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                           dz.data(), x.data(), mu.data(), rs.data(),
                           gamma.data(), 0, rows, cols, dx.data(), dg.data(),
                           db.data()),
            0);
  std::vector<float> dxRef(rows * cols), dgRef(cols), dbRef(cols);
  normBackward(Norm::LayerNorm, dz.data(), x.data(), mu.data(), rs.data(),
               gamma.data(), false, rows, cols, dxRef.data(), dgRef.data(),
               dbRef.data());
  EXPECT_EQ(dx, dxRef); // per row: identical
  for (int64_t j = 0; j < cols; ++j) {
    EXPECT_NEAR(dg[j], dgRef[j], 1e-4f * (1 + std::fabs(dgRef[j]))) << j;
    EXPECT_NEAR(db[j], dbRef[j], 1e-4f * (1 + std::fabs(dbRef[j]))) << j;
  }
  // The reduction does not depend on the thread count.
  ScopedEnv one("TE_RT_CPU_THREADS", "1");
  std::vector<float> dg1(cols), db1(cols);
  ASSERT_EQ(te_rt_norm_bwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                           dz.data(), x.data(), mu.data(), rs.data(),
                           gamma.data(), 0, rows, cols, dx.data(), dg1.data(),
                           db1.data()),
            0);
  EXPECT_EQ(dg1, dg);
  EXPECT_EQ(db1, db);
}

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

// x [2,2] = [[1,2],[3,4]] (m = k = 2), w [2,2] = [[5,6],[7,8]] (n = 2),
// dy [2,2] = [[1,0],[2,1]].
const float kX[4] = {1, 2, 3, 4}, kW[4] = {5, 6, 7, 8}, kDy[4] = {1, 0, 2, 1};

TEST_F(Abi, GemmFprop2x2x2) {
  const float bias[2] = {1, -1};
  float y[4];
  ASSERT_EQ(te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, kX, kW, bias, y, 2, 2, 2),
            0);
  expectNear(y, {18, 22, 40, 52}, 0, "y");
  ASSERT_EQ(te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, kX, kW, nullptr, y, 2, 2, 2),
            0);
  expectNear(y, {17, 23, 39, 53}, 0, "y (no bias)");
}

TEST_F(Abi, GemmDgrad2x2x2) {
  float dx[4];
  ASSERT_EQ(te_rt_gemm_dgrad(ctx, TE_RT_DTYPE_F32, kDy, kW, dx, 2, 2, 2), 0);
  expectNear(dx, {5, 6, 17, 20}, 0, "dx");
}

TEST_F(Abi, GemmWgrad2x2x2) {
  float dw[4], dbias[2];
  ASSERT_EQ(
      te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_F32, kDy, kX, dw, dbias, 2, 2, 2, 0),
      0);
  expectNear(dw, {7, 10, 3, 4}, 0, "dw");
  expectNear(dbias, {3, 1}, 0, "dbias");
  float acc[4] = {1, 1, 1, 1};
  ASSERT_EQ(
      te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_F32, kDy, kX, acc, nullptr, 2, 2, 2, 1),
      0);
  expectNear(acc, {8, 11, 4, 5}, 0, "dw (accumulate)");
}

TEST_F(Abi, GemmLayoutsNonSquare) {
  // m = 3, n = 2, k = 4 against naive loops, so swapped extents show.
  const int64_t m = 3, n = 2, k = 4;
  auto x = exactRandom(m * k, 5), w = exactRandom(n * k, 6),
       dy = exactRandom(m * n, 7);
  std::vector<float> y(m * n), dx(m * k), dw(n * k), db(n);
  ASSERT_EQ(te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, x.data(), w.data(), nullptr,
                             y.data(), m, n, k),
            0);
  ASSERT_EQ(te_rt_gemm_dgrad(ctx, TE_RT_DTYPE_F32, dy.data(), w.data(),
                             dx.data(), m, n, k),
            0);
  ASSERT_EQ(te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_F32, dy.data(), x.data(),
                             dw.data(), db.data(), m, n, k, 0),
            0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int64_t p = 0; p < k; ++p)
        ref += double(x[i * k + p]) * w[j * k + p];
      EXPECT_NEAR(y[i * n + j], ref, 1e-6);
    }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      double ref = 0;
      for (int64_t j = 0; j < n; ++j)
        ref += double(dy[i * n + j]) * w[j * k + p];
      EXPECT_NEAR(dx[i * k + p], ref, 1e-6);
    }
  for (int64_t j = 0; j < n; ++j) {
    double refB = 0;
    for (int64_t i = 0; i < m; ++i)
      refB += dy[i * n + j];
    EXPECT_NEAR(db[j], refB, 1e-6);
    for (int64_t p = 0; p < k; ++p) {
      double ref = 0;
      for (int64_t i = 0; i < m; ++i)
        ref += double(dy[i * n + j]) * x[i * k + p];
      EXPECT_NEAR(dw[j * k + p], ref, 1e-6);
    }
  }
}

TEST_F(Abi, GemmEmptyExtents) {
  // k = 0: y = bias; m = 0: nothing to write.
  const float bias[2] = {3, 4};
  float y[2] = {-1, -1};
  ASSERT_EQ(te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, kX, kW, bias, y, 1, 2, 0),
            0);
  expectNear(y, {3, 4}, 0, "y");
  float dw[4] = {9, 9, 9, 9}, db[2] = {9, 9};
  ASSERT_EQ(te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_F32, kDy, kX, dw, db, 0, 2, 2, 0),
            0);
  expectNear(dw, {0, 0, 0, 0}, 0, "dw");
  expectNear(db, {0, 0}, 0, "dbias");
}

/// GELU (tanh approximation) and its derivative in double, independent of
/// the runtime's code.
double geluRef(double v) {
  const double c = std::sqrt(2.0 / M_PI);
  return 0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v)));
}
double dgeluRef(double v) {
  const double c = std::sqrt(2.0 / M_PI);
  double u = c * (v + 0.044715 * v * v * v), t = std::tanh(u);
  return 0.5 * (1.0 + t) +
         0.5 * v * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * v * v);
}

TEST_F(Abi, GemmActEpilogues) {
  // m = 5, n = 3, k = 4: y = gelu(x . w^T + bias), aux the pre-activation;
  // dx = (dy . w) * gelu'(aux).
  const int64_t m = 5, n = 3, k = 4;
  auto x = exactRandom(m * k, 21), w = exactRandom(n * k, 22),
       bias = exactRandom(n, 23), dy = exactRandom(m * n, 24),
       pre = exactRandom(m * k, 25);
  for (float &v : x)
    v *= 8; // pre-activations of order 1, where GELU bends
  std::vector<float> y(m * n), aux(m * n), yNoAux(m * n), dx(m * k);
  ASSERT_EQ(te_rt_gemm_fprop_act(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32,
                                 x.data(), w.data(), bias.data(), y.data(),
                                 aux.data(), m, n, k),
            0)
      << lastError();
  ASSERT_EQ(te_rt_gemm_fprop_act(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32,
                                 x.data(), w.data(), bias.data(),
                                 yNoAux.data(), nullptr, m, n, k),
            0)
      << lastError();
  EXPECT_EQ(yNoAux, y);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double p = bias[j];
      for (int64_t q = 0; q < k; ++q)
        p += double(x[i * k + q]) * w[j * k + q];
      EXPECT_NEAR(aux[i * n + j], p, 1e-6) << "aux " << i << "," << j;
      EXPECT_NEAR(y[i * n + j], geluRef(p), 1e-6) << "y " << i << "," << j;
    }
  ASSERT_EQ(te_rt_gemm_dgrad_dact(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32,
                                  dy.data(), w.data(), pre.data(), dx.data(),
                                  m, n, k),
            0)
      << lastError();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t q = 0; q < k; ++q) {
      double g = 0;
      for (int64_t j = 0; j < n; ++j)
        g += double(dy[i * n + j]) * w[j * k + q];
      EXPECT_NEAR(dx[i * k + q], g * dgeluRef(pre[i * k + q]), 1e-6)
          << "dx " << i << "," << q;
    }
}

TEST_F(Abi, GemmActEpilogueErrors) {
  float p[4] = {};
  EXPECT_FAILS_WITH(te_rt_gemm_fprop_act(ctx, TE_RT_ACT_RELU, TE_RT_DTYPE_F32,
                                         p, p, nullptr, p, p, 2, 2, 2),
                    "te_rt_gemm_fprop_act: act must be TE_RT_ACT_GELU (0), "
                    "the GEMM epilogue's only activation, got 5 (relu)");
  EXPECT_FAILS_WITH(te_rt_gemm_dgrad_dact(ctx, 99, TE_RT_DTYPE_F32, p, p, p, p,
                                          2, 2, 2),
                    "te_rt_gemm_dgrad_dact: act must be TE_RT_ACT_GELU (0), "
                    "the GEMM epilogue's only activation, got 99");
  EXPECT_FAILS_WITH(te_rt_gemm_dgrad_dact(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32,
                                          p, p, nullptr, p, 2, 2, 2),
                    "te_rt_gemm_dgrad_dact: aux is NULL");
  EXPECT_FAILS_WITH(te_rt_gemm_fprop_act(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32,
                                         p, p, nullptr, nullptr, p, 2, 2, 2),
                    "te_rt_gemm_fprop_act: y is NULL");
  EXPECT_FAILS_WITH(te_rt_gemm_fprop_act(nullptr, TE_RT_ACT_GELU,
                                         TE_RT_DTYPE_F32, p, p, nullptr, p, p,
                                         2, 2, 2),
                    "te_rt_gemm_fprop_act: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_gemm_dgrad_dact(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32,
                                          p, p, p, p, 2, -1, 2),
                    "te_rt_gemm_dgrad_dact: n must be >= 0, got -1");
}

TEST_F(Abi, CheckMultiple) {
  const char *what = "ln_mlp_fwd: recipe fp8-block needs d0 % 128 == 0";
  EXPECT_EQ(te_rt_check_multiple(ctx, 256, 128, what), 0);
  EXPECT_EQ(te_rt_check_multiple(ctx, 0, 128, what), 0);
  EXPECT_FAILS_WITH(te_rt_check_multiple(ctx, 200, 128, what),
                    "ln_mlp_fwd: recipe fp8-block needs d0 % 128 == 0, got "
                    "200");
  EXPECT_FAILS_WITH(te_rt_check_multiple(ctx, 8, 0, what),
                    "te_rt_check_multiple: multiple must be > 0, got 0");
  EXPECT_FAILS_WITH(te_rt_check_multiple(ctx, 8, 8, nullptr),
                    "te_rt_check_multiple: what is NULL");
}

TEST_F(Abi, WgradAccumulateRoundsOnce) {
  // dw = 1 + (2^-8 + 2^-20): rounding the product to bf16 first would land
  // on the tie 1 + 2^-8 and go to 1; summing in fp32 gives 1 + 2^-7.
  const uint16_t dy[2] = {floatToBF16(0x1p-8f), floatToBF16(0x1p-20f)};
  const uint16_t x[2] = {floatToBF16(1.0f), floatToBF16(1.0f)};
  uint16_t dw[1] = {floatToBF16(1.0f)}, db[1];
  ASSERT_EQ(te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_BF16, dy, x, dw, db, 2, 1, 1, 1),
            0);
  EXPECT_EQ(dw[0], 0x3f81);
  EXPECT_EQ(db[0], floatToBF16(0x1p-8f + 0x1p-20f)); // dbias is not summed in
}

/// Runs `call(dtype, inputs, outputs)` in f32 and in `t` on the same
/// (exactly representable) inputs and expects every 16-bit output to be the
/// f32 output rounded once.
template <typename Call>
void expectRoundedOnce(DType t, const std::vector<std::vector<float>> &inputs,
                       const std::vector<size_t> &outputSizes, Call call,
                       const char *what) {
  auto narrow = [&](const std::vector<float> &v) {
    return t == DType::BF16 ? toBF16(v) : toF16(v);
  };
  std::vector<const void *> in32, in16;
  std::vector<std::vector<uint16_t>> inputs16;
  for (const auto &v : inputs)
    inputs16.push_back(narrow(v));
  for (size_t i = 0; i < inputs.size(); ++i) {
    in32.push_back(inputs[i].data());
    in16.push_back(inputs16[i].data());
    // The inputs are exact in the 16-bit type.
    std::vector<float> back =
        t == DType::BF16 ? fromBF16(inputs16[i]) : fromF16(inputs16[i]);
    ASSERT_EQ(back, inputs[i]) << what << " input " << i;
  }
  std::vector<std::vector<float>> out32;
  std::vector<std::vector<uint16_t>> out16;
  std::vector<void *> p32, p16;
  for (size_t n : outputSizes) {
    out32.emplace_back(n, 0.0f);
    out16.emplace_back(n, uint16_t(0));
  }
  for (size_t i = 0; i < outputSizes.size(); ++i) {
    p32.push_back(out32[i].data());
    p16.push_back(out16[i].data());
  }
  ASSERT_EQ(call(TE_RT_DTYPE_F32, in32, p32), 0) << what << lastError();
  ASSERT_EQ(call(static_cast<int32_t>(t), in16, p16), 0) << what << lastError();
  for (size_t o = 0; o < outputSizes.size(); ++o) {
    std::vector<uint16_t> want = narrow(out32[o]);
    size_t mismatches = 0;
    for (size_t i = 0; i < want.size(); ++i)
      mismatches += want[i] != out16[o][i];
    EXPECT_EQ(mismatches, 0u) << what << " output " << o;
  }
}

TEST_F(Abi, ReducedPrecisionIsTheF32ResultRoundedOnce) {
  const int64_t m = 70, n = 50, k = 40, rows = 300, cols = 64;
  auto x = exactRandom(m * k, 11), w = exactRandom(n * k, 12),
       bias = exactRandom(n, 13), dy = exactRandom(m * n, 14),
       dwOld = exactRandom(n * k, 15);
  auto nx = exactRandom(rows * cols, 16), ndz = exactRandom(rows * cols, 17),
       gamma = exactRandom(cols, 18), beta = exactRandom(cols, 19);
  for (float &v : nx)
    v *= 4; // spread, so rsigma stays moderate
  std::vector<float> mu(rows), rs(rows);
  ASSERT_EQ(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                           nx.data(), gamma.data(), beta.data(), 1e-5, 0, rows,
                           cols, std::vector<float>(rows * cols).data(),
                           mu.data(), rs.data()),
            0);
  te_rt_context *c = ctx;
  for (DType t : {DType::BF16, DType::F16}) {
    expectRoundedOnce(
        t, {x, w, bias}, {size_t(m * n)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_gemm_fprop(c, d, in[0], in[1], in[2], out[0], m, n, k);
        },
        "fprop");
    expectRoundedOnce(
        t, {dy, w}, {size_t(m * k)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_gemm_dgrad(c, d, in[0], in[1], out[0], m, n, k);
        },
        "dgrad");
    // The activation epilogues round once: y and aux from the fp32
    // pre-activation, dx from the fp32 product times act'(aux).
    expectRoundedOnce(
        t, {x, w, bias}, {size_t(m * n), size_t(m * n)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_gemm_fprop_act(c, TE_RT_ACT_GELU, d, in[0], in[1],
                                      in[2], out[0], out[1], m, n, k);
        },
        "fprop_act");
    expectRoundedOnce(
        t, {dy, w, x}, {size_t(m * k)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_gemm_dgrad_dact(c, TE_RT_ACT_GELU, d, in[0], in[1],
                                       in[2], out[0], m, n, k);
        },
        "dgrad_dact");
    expectRoundedOnce(
        t, {dy, x, dwOld}, {size_t(n * k), size_t(n)},
        [&](int32_t d, auto &in, auto &out) {
          // accumulate into a copy of dwOld in the call's dtype
          size_t bytes = n * k * (d == TE_RT_DTYPE_F32 ? 4 : 2);
          std::memcpy(out[0], in[2], bytes);
          return te_rt_gemm_wgrad(c, d, in[0], in[1], out[0], out[1], m, n, k,
                                  1);
        },
        "wgrad accumulate");
    expectRoundedOnce(
        t, {nx, gamma, beta}, {size_t(rows * cols)},
        [&](int32_t d, auto &in, auto &out) {
          std::vector<float> mu2(rows), rs2(rows);
          int32_t rc = te_rt_norm_fwd(c, TE_RT_NORM_LAYERNORM, d, in[0], in[1],
                                      in[2], 1e-5, 0, rows, cols, out[0],
                                      mu2.data(), rs2.data());
          // statistics are fp32 and identical for every dtype
          EXPECT_EQ(mu2, mu);
          EXPECT_EQ(rs2, rs);
          return rc;
        },
        "norm_fwd");
    expectRoundedOnce(
        t, {ndz, nx, gamma}, {size_t(rows * cols), size_t(cols), size_t(cols)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_norm_bwd(c, TE_RT_NORM_LAYERNORM, d, in[0], in[1],
                                mu.data(), rs.data(), in[2], 0, rows, cols,
                                out[0], out[1], out[2]);
        },
        "norm_bwd");
    for (int32_t act : {TE_RT_ACT_GELU, TE_RT_ACT_SWIGLU, TE_RT_ACT_GELU_ERF,
                        TE_RT_ACT_CLAMPED_SWIGLU}) {
      bool gated = act == TE_RT_ACT_SWIGLU || act == TE_RT_ACT_CLAMPED_SWIGLU;
      int64_t yCols = gated ? cols / 2 : cols;
      std::vector<float> ady(nx.begin(), nx.begin() + rows * yCols);
      expectRoundedOnce(
          t, {nx}, {size_t(rows * yCols)},
          [&](int32_t d, auto &in, auto &out) {
            return te_rt_act_fwd(c, act, d, in[0], out[0], rows, cols, 7.0f,
                                 1.702f, 1.0f, nullptr);
          },
          "act_fwd");
      expectRoundedOnce(
          t, {ady, ndz}, {size_t(rows * cols)},
          [&](int32_t d, auto &in, auto &out) {
            return te_rt_act_bwd(c, act, d, in[0], in[1], out[0], rows, cols,
                                 7.0f, 1.702f, 1.0f, nullptr);
          },
          "act_bwd");
    }
    expectRoundedOnce(
        t, {ndz}, {size_t(cols)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_bias_grad(c, d, in[0], out[0], rows, cols);
        },
        "bias_grad");
    expectRoundedOnce(
        t, {nx, ndz}, {size_t(rows * cols)},
        [&](int32_t d, auto &in, auto &out) {
          return te_rt_add(c, d, in[0], in[1], out[0], rows * cols);
        },
        "add");
  }
}

//===----------------------------------------------------------------------===//
// Activations, bias gradient, elementwise
//===----------------------------------------------------------------------===//

TEST_F(Abi, ReluAndGeluValues) {
  const float x[4] = {-1, 0, 1, 2}, dy[4] = {1, 1, 1, 1};
  float y[4], dx[4];
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_RELU, TE_RT_DTYPE_F32, x, y, 1, 4, 0,
                          0, 0, nullptr),
            0);
  expectNear(y, {0, 0, 1, 2}, 0, "relu");
  ASSERT_EQ(te_rt_act_bwd(ctx, TE_RT_ACT_RELU, TE_RT_DTYPE_F32, dy, x, dx, 1, 4,
                          0, 0, 0, nullptr),
            0);
  expectNear(dx, {0, 0, 1, 1}, 0, "drelu");
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, x, y, 2, 2, 0,
                          0, 0, nullptr),
            0);
  expectNear(y, {-0.15880801f, 0.0f, 0.84119199f, 1.95459770f}, 1e-6f, "gelu");
  ASSERT_EQ(te_rt_act_bwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, dy, x, dx, 2, 2,
                          0, 0, 0, nullptr),
            0);
  expectNear(dx, {-0.08296408f, 0.5f, 1.08296408f, 1.08609926f}, 1e-5f,
             "dgelu");
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_GELU_ERF, TE_RT_DTYPE_F32, x + 2, y, 1,
                          1, 0, 0, 0, nullptr),
            0);
  EXPECT_NEAR(y[0], 0.84134475f, 1e-6f);
}

TEST_F(Abi, GatedActivations) {
  // swiglu: x = [a | b] = [1 | 2]: y = silu(1) * 2.
  const float x[2] = {1, 2}, dy[1] = {1};
  float y[1], dx[2];
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_SWIGLU, TE_RT_DTYPE_F32, x, y, 1, 2, 0,
                          0, 0, nullptr),
            0);
  EXPECT_NEAR(y[0], 2 * 0.73105858f, 1e-6f);
  ASSERT_EQ(te_rt_act_bwd(ctx, TE_RT_ACT_SWIGLU, TE_RT_DTYPE_F32, dy, x, dx, 1,
                          2, 0, 0, 0, nullptr),
            0);
  expectNear(dx, {2 * 0.92767051f, 0.73105858f}, 1e-6f, "dswiglu");
  // clamped_swiglu: a clamped to 7, b to [-7, 7] plus offset 1.
  const float big[4] = {10, 0.5f, -10, 3}; // rows of [a | b]: [10,-10],[.5,3]
  const float xs[4] = {big[0], big[2], big[1], big[3]};
  const float dys[2] = {1, 1};
  float ys[2], dxs[4];
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_CLAMPED_SWIGLU, TE_RT_DTYPE_F32, xs,
                          ys, 2, 2, 7.0f, 1.702f, 1.0f, nullptr),
            0);
  expectNear(ys, {-41.9997188f, 1.40155375f}, 1e-5f, "clamped_swiglu");
  ASSERT_EQ(te_rt_act_bwd(ctx, TE_RT_ACT_CLAMPED_SWIGLU, TE_RT_DTYPE_F32, dys,
                          xs, dxs, 2, 2, 7.0f, 1.702f, 1.0f, nullptr),
            0);
  // Outside the clamp the gradient is zero.
  expectNear(dxs, {0, 0, 3.51688765f, 0.35038844f}, 1e-5f, "dclamped_swiglu");
}

TEST_F(Abi, BiasGradSums) {
  const float dy[6] = {1, 2, 3, 4, 5, 6.5f};
  float db[2];
  ASSERT_EQ(te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, dy, db, 3, 2), 0);
  expectNear(db, {9, 12.5f}, 0, "dbias");
  // 300 ones: a bf16 running sum would stop at 256; fp32 sums reach 300.
  std::vector<uint16_t> ones(300, floatToBF16(1.0f));
  uint16_t out[1];
  ASSERT_EQ(te_rt_bias_grad(ctx, TE_RT_DTYPE_BF16, ones.data(), out, 300, 1),
            0);
  EXPECT_EQ(bf16ToFloat(out[0]), 300.0f);
  // Zero rows: zeros.
  float zero[2] = {7, 7};
  ASSERT_EQ(te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, dy, zero, 0, 2), 0);
  expectNear(zero, {0, 0}, 0, "dbias of no rows");
}

TEST_F(Abi, DBiasDActIsDActPlusColumnSums) {
  // relu' = 1[x > 0]: dx = dy where x > 0, and dbias sums dx's columns.
  const float dy[6] = {1, 2, 3, 4, 5, 6};
  const float x[6] = {1, -1, 2, -2, 3, 0};
  float dx[6], db[2];
  ASSERT_EQ(te_rt_dbias_dact(ctx, TE_RT_ACT_RELU, TE_RT_DTYPE_F32, dy, x, dx,
                             db, 3, 2, 0, 0, 0, nullptr),
            0);
  expectNear(dx, {1, 0, 3, 0, 5, 0}, 0, "dx");
  expectNear(db, {9, 0}, 0, "dbias");
  // GELU: the same dx as te_rt_act_bwd, the same sums as te_rt_bias_grad.
  auto dyr = exactRandom(64 * 16, 5), xr = exactRandom(64 * 16, 6);
  std::vector<float> dx1(64 * 16), dx2(64 * 16), db1(16), db2(16);
  ASSERT_EQ(te_rt_dbias_dact(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, dyr.data(),
                             xr.data(), dx1.data(), db1.data(), 64, 16, 0, 0, 0,
                             nullptr),
            0);
  ASSERT_EQ(te_rt_act_bwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, dyr.data(),
                          xr.data(), dx2.data(), 64, 16, 0, 0, 0, nullptr),
            0);
  ASSERT_EQ(
      te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, dx2.data(), db2.data(), 64, 16), 0);
  EXPECT_EQ(dx1, dx2);
  EXPECT_EQ(db1, db2);
  // Gated activations have no fused form.
  EXPECT_FAILS_WITH(te_rt_dbias_dact(ctx, TE_RT_ACT_SWIGLU, TE_RT_DTYPE_F32, dy,
                                     x, dx, db, 3, 2, 0, 0, 0, nullptr),
                    "te_rt_dbias_dact: gated activation swiglu has no fused "
                    "dbias + dact");
  EXPECT_FAILS_WITH(te_rt_dbias_dact(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, dy,
                                     x, dx, nullptr, 3, 2, 0, 0, 0, nullptr),
                    "te_rt_dbias_dact: dbias is NULL");
}

/// Bytes of `v` in dtype t (rounded to nearest even for bf16/f16).
std::vector<uint8_t> bytesOf(int32_t t, const std::vector<float> &v) {
  if (t == TE_RT_DTYPE_F32) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  std::vector<uint16_t> h = t == TE_RT_DTYPE_BF16 ? toBF16(v) : toF16(v);
  std::vector<uint8_t> b(h.size() * 2);
  std::memcpy(b.data(), h.data(), b.size());
  return b;
}

/// Value i of a buffer of dtype t.
float valueAt(int32_t t, const void *p, size_t i) {
  const uint8_t *b = static_cast<const uint8_t *>(p);
  if (t == TE_RT_DTYPE_F32) {
    float v;
    std::memcpy(&v, b + 4 * i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, b + 2 * i, 2);
  return t == TE_RT_DTYPE_BF16 ? bf16ToFloat(h) : f16ToFloat(h);
}

/// max |value| over the n values of dtype t stored in p, NaN skipped: what
/// a producer's amax must be (computed from the output buffer itself).
float storedMax(int32_t t, const void *p, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    float v = valueAt(t, p, i);
    if (!std::isnan(v))
      m = std::max(m, std::fabs(v));
  }
  return m;
}

const char *dtypeNameOf(int32_t t) {
  return t == TE_RT_DTYPE_F32 ? "f32" : t == TE_RT_DTYPE_BF16 ? "bf16" : "f16";
}

// te_rt_act_fwd / te_rt_act_bwd / te_rt_dbias_dact with an amax: the amax
// is max |output| over the values as stored (after rounding to the dtype;
// a NaN output skipped), for every activation and dtype, and the outputs
// are the bytes of the same call without one.
TEST_F(Abi, ProducersReportTheAmaxOfTheirStoredOutput) {
  const int64_t rows = 37, cols = 48, n = rows * cols;
  auto x = exactRandom(n, 41), g = exactRandom(n, 42);
  for (float &v : x)
    v *= 4;   // outputs up to ~10^3: past 1, where rounding shows in the max
  x[5] = NAN; // a NaN output for most activations (relu gives 0)
  for (int32_t t : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16}) {
    const size_t sz = t == TE_RT_DTYPE_F32 ? 4 : 2;
    for (int32_t act = TE_RT_ACT_GELU; act <= TE_RT_ACT_GELU_ERF; ++act) {
      bool gated = isGated(static_cast<Activation>(act));
      int64_t yn = gated ? n / 2 : n;
      std::string what =
          std::string(dtypeNameOf(t)) + " act " + std::to_string(act);
      auto X = bytesOf(t, x);
      auto DY = bytesOf(t, std::vector<float>(g.begin(), g.begin() + yn));
      std::vector<uint8_t> y(yn * sz), y0(yn * sz), dx(n * sz), dx0(n * sz);
      float amax = -1;
      ASSERT_EQ(te_rt_act_fwd(ctx, act, t, X.data(), y.data(), rows, cols, 7.0f,
                              1.702f, 1.0f, &amax),
                0)
          << lastError();
      ASSERT_EQ(te_rt_act_fwd(ctx, act, t, X.data(), y0.data(), rows, cols,
                              7.0f, 1.702f, 1.0f, nullptr),
                0);
      EXPECT_EQ(y, y0) << what << " fwd";
      EXPECT_EQ(amax, storedMax(t, y.data(), yn)) << what << " fwd";
      EXPECT_GT(amax, 0.0f) << what << " fwd";
      amax = -1;
      ASSERT_EQ(te_rt_act_bwd(ctx, act, t, DY.data(), X.data(), dx.data(), rows,
                              cols, 7.0f, 1.702f, 1.0f, &amax),
                0)
          << lastError();
      ASSERT_EQ(te_rt_act_bwd(ctx, act, t, DY.data(), X.data(), dx0.data(),
                              rows, cols, 7.0f, 1.702f, 1.0f, nullptr),
                0);
      EXPECT_EQ(dx, dx0) << what << " bwd";
      EXPECT_EQ(amax, storedMax(t, dx.data(), n)) << what << " bwd";
      EXPECT_GT(amax, 0.0f) << what << " bwd";
      if (gated)
        continue;
      std::vector<uint8_t> dx2(n * sz), db(cols * sz), db0(cols * sz);
      amax = -1;
      ASSERT_EQ(te_rt_dbias_dact(ctx, act, t, DY.data(), X.data(), dx2.data(),
                                 db.data(), rows, cols, 7.0f, 1.702f, 1.0f,
                                 &amax),
                0)
          << lastError();
      ASSERT_EQ(te_rt_dbias_dact(ctx, act, t, DY.data(), X.data(), dx0.data(),
                                 db0.data(), rows, cols, 7.0f, 1.702f, 1.0f,
                                 nullptr),
                0);
      EXPECT_EQ(dx2, dx0) << what << " dbias_dact dx";
      EXPECT_EQ(db, db0) << what << " dbias_dact dbias";
      EXPECT_EQ(amax, storedMax(t, dx2.data(), n)) << what << " dbias_dact";
    }
  }
  // The max of what is stored, not of the fp32 values: srelu(1 + 2^-7) =
  // 1 + 2^-6 + 2^-14 in fp32, stored in bf16 (8 significant bits) as
  // 1 + 2^-6.
  const uint16_t xs[2] = {floatToBF16(1 + 0x1p-7f), floatToBF16(-3.0f)};
  uint16_t ys[2];
  float amax = -1;
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_SRELU, TE_RT_DTYPE_BF16, xs, ys, 1, 2,
                          0, 0, 0, &amax),
            0);
  EXPECT_EQ(amax, 1 + 0x1p-6f);
  EXPECT_EQ(bf16ToFloat(ys[0]), amax);
  // No rows: amax 0.
  amax = -1;
  ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_BF16, xs, ys, 0, 2,
                          0, 0, 0, &amax),
            0);
  EXPECT_EQ(amax, 0.0f);
}

// A large output reduced on several threads: the same amax as one thread.
// te_rt_act_quantize_fp8 / te_rt_dact_quantize_fp8 (delayed scaling's fused
// activation-cast): the bytes of the activation (or its derivative, with or
// without the bias gradient) stored in the dtype and then quantized with
// te_rt_quantize_fp8 and the same scale, for every activation, dtype and
// format, with each of data / transpose / amax left out.
TEST_F(Abi, FusedActivationCastIsActivationThenQuantize) {
  const int64_t rows = 19, cols = 48, n = rows * cols;
  auto x = exactRandom(n, 51), g = exactRandom(n, 52);
  for (float &v : x)
    v *= 3;
  const float scale = 24.0f;
  for (int32_t t : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16})
    for (int32_t fmt : {TE_RT_FP8_E4M3, TE_RT_FP8_E5M2})
      for (int32_t act = TE_RT_ACT_GELU; act <= TE_RT_ACT_GELU_ERF; ++act)
        for (int kind = 0; kind < 3; ++kind) { // fwd, bwd, dbias + bwd
          const bool gated = isGated(static_cast<Activation>(act));
          if (kind == 2 && gated)
            continue;
          const size_t sz = t == TE_RT_DTYPE_F32 ? 4 : 2;
          const int64_t yCols = kind == 0 && gated ? cols / 2 : cols;
          const int64_t yn = rows * yCols, dyn = gated ? n / 2 : n;
          std::string what = std::string(dtypeNameOf(t)) + " fmt " +
                              std::to_string(fmt) + " act " +
                              std::to_string(act) + " kind " +
                              std::to_string(kind);
          auto X = bytesOf(t, x);
          auto DY = bytesOf(t, std::vector<float>(g.begin(), g.begin() + dyn));
          // Unfused: the activation's output, then its quantization.
          std::vector<uint8_t> y(yn * sz), db0(cols * sz), db(cols * sz);
          int32_t rc =
              kind == 0 ? te_rt_act_fwd(ctx, act, t, X.data(), y.data(), rows,
                                        cols, 7.0f, 1.702f, 1.0f, nullptr)
              : kind == 1
                  ? te_rt_act_bwd(ctx, act, t, DY.data(), X.data(), y.data(),
                                  rows, cols, 7.0f, 1.702f, 1.0f, nullptr)
                  : te_rt_dbias_dact(ctx, act, t, DY.data(), X.data(),
                                     y.data(), db0.data(), rows, cols, 7.0f,
                                     1.702f, 1.0f, nullptr);
          ASSERT_EQ(rc, 0) << lastError();
          std::vector<uint8_t> d0(yn), tr0(yn), d(yn), tr(yn);
          float si0 = 0, amax0 = 0;
          ASSERT_EQ(te_rt_quantize_fp8(ctx, t, y.data(), rows, yCols, fmt,
                                       &scale, 0, d0.data(), tr0.data(), &si0,
                                       &amax0, nullptr),
                    0)
              << lastError();
          for (int drop = 0; drop < 3; ++drop) { // none, data, transpose
            std::fill(d.begin(), d.end(), 0xAB);
            std::fill(tr.begin(), tr.end(), 0xAB);
            float si = 0, amax = -1;
            uint8_t *dp = drop == 1 ? nullptr : d.data();
            uint8_t *tp = drop == 2 ? nullptr : tr.data();
            float *ap = drop == 0 ? &amax : nullptr;
            rc = kind == 0
                     ? te_rt_act_quantize_fp8(ctx, act, t, X.data(), rows,
                                              cols, 7.0f, 1.702f, 1.0f, fmt,
                                              &scale, dp, tp, &si, ap)
                     : te_rt_dact_quantize_fp8(
                           ctx, act, t, DY.data(), X.data(),
                           kind == 2 ? db.data() : nullptr, rows, cols, 7.0f,
                           1.702f, 1.0f, fmt, &scale, dp, tp, &si, ap);
            ASSERT_EQ(rc, 0) << what << ": " << lastError();
            if (dp) {
              EXPECT_EQ(d, d0) << what << " data";
            }
            if (tp) {
              EXPECT_EQ(tr, tr0) << what << " transpose";
            }
            EXPECT_EQ(si, si0) << what << " scale_inv";
            if (ap) {
              EXPECT_EQ(amax, amax0) << what << " amax";
            }
            if (kind == 2) {
              EXPECT_EQ(db, db0) << what << " dbias";
            }
          }
        }
  // Argument errors.
  std::vector<float> buf(64);
  float si = 0, sc = 1;
  EXPECT_FAILS_WITH(
      te_rt_act_quantize_fp8(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, buf.data(),
                             4, 8, 7, 1.702f, 1, TE_RT_FP8_E4M3, nullptr,
                             buf.data(), nullptr, &si, nullptr),
      "te_rt_act_quantize_fp8: scale is NULL (the fused activation-cast is "
      "delayed scaling's: the scale is known before the activation runs)");
  EXPECT_FAILS_WITH(
      te_rt_act_quantize_fp8(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, buf.data(),
                             4, 8, 7, 1.702f, 1, TE_RT_FP8_E4M3, &sc, nullptr,
                             nullptr, &si, nullptr),
      "te_rt_act_quantize_fp8: data and transpose are both NULL (nothing to "
      "write)");
  EXPECT_FAILS_WITH(
      te_rt_act_quantize_fp8(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, buf.data(),
                             4, 8, 7, 1.702f, 1, 7, &sc, buf.data(), nullptr,
                             &si, nullptr),
      "te_rt_act_quantize_fp8: unknown format 7 (0 E4M3, 1 E5M2)");
  EXPECT_FAILS_WITH(
      te_rt_dact_quantize_fp8(ctx, TE_RT_ACT_SWIGLU, TE_RT_DTYPE_F32,
                              buf.data(), buf.data(), buf.data(), 4, 8, 7,
                              1.702f, 1, TE_RT_FP8_E4M3, &sc, buf.data(),
                              nullptr, &si, nullptr),
      "te_rt_dact_quantize_fp8: gated activation swiglu has no fused dbias + "
      "dact (dbias must be NULL)");
  EXPECT_FAILS_WITH(
      te_rt_dact_quantize_fp8(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, nullptr,
                              buf.data(), nullptr, 4, 8, 7, 1.702f, 1,
                              TE_RT_FP8_E4M3, &sc, buf.data(), nullptr, &si,
                              nullptr),
      "te_rt_dact_quantize_fp8: dy is NULL");
}

// te_rt_norm_quantize_fp8: the bytes of te_rt_norm_fwd's z quantized by
// te_rt_quantize_fp8 (and the same statistics), under delayed and current
// scaling (with power-of-two scales), LayerNorm and RMSNorm, every dtype,
// with data / transpose / amax left out in turn.
TEST_F(Abi, FusedNormCastIsNormThenQuantize) {
  const int64_t rows = 13, cols = 40, n = rows * cols;
  auto x = exactRandom(n, 61), g = exactRandom(cols, 62),
       b = exactRandom(cols, 63);
  const float scale = 20.0f;
  for (int32_t t : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16})
    for (int32_t kind : {TE_RT_NORM_LAYERNORM, TE_RT_NORM_RMSNORM})
      for (int mode = 0; mode < 3; ++mode) { // delayed, current, current pow2
        const bool ln = kind == TE_RT_NORM_LAYERNORM;
        const float *sc = mode == 0 ? &scale : nullptr;
        const int32_t pow2 = mode == 2, fmt = TE_RT_FP8_E4M3;
        std::string what = std::string(dtypeNameOf(t)) + (ln ? " ln" : " rms") +
                           " mode " + std::to_string(mode);
        auto X = bytesOf(t, x), G = bytesOf(t, g), B = bytesOf(t, b);
        const size_t sz = t == TE_RT_DTYPE_F32 ? 4 : 2;
        std::vector<uint8_t> z(n * sz), d0(n), t0(n), d(n), tr(n);
        std::vector<float> mu0(rows), rs0(rows), mu(rows), rs(rows);
        float si0 = 0, amax0 = 0;
        ASSERT_EQ(te_rt_norm_fwd(ctx, kind, t, X.data(), G.data(),
                                 ln ? B.data() : nullptr, 1e-5, 1, rows, cols,
                                 z.data(), ln ? mu0.data() : nullptr,
                                 rs0.data()),
                  0)
            << lastError();
        ASSERT_EQ(te_rt_quantize_fp8(ctx, t, z.data(), rows, cols, fmt, sc,
                                     pow2, d0.data(), t0.data(), &si0, &amax0,
                                     nullptr),
                  0)
            << lastError();
        for (int drop = 0; drop < 3; ++drop) { // none, data, transpose
          std::fill(d.begin(), d.end(), 0xAB);
          std::fill(tr.begin(), tr.end(), 0xAB);
          float si = 0, amax = -1;
          uint8_t *dp = drop == 1 ? nullptr : d.data();
          uint8_t *tp = drop == 2 ? nullptr : tr.data();
          float *ap = drop == 0 ? &amax : nullptr;
          ASSERT_EQ(te_rt_norm_quantize_fp8(
                        ctx, kind, t, X.data(), G.data(),
                        ln ? B.data() : nullptr, 1e-5, 1, rows, cols,
                        ln ? mu.data() : nullptr, rs.data(), fmt, sc, pow2, dp,
                        tp, &si, ap),
                    0)
              << what << ": " << lastError();
          if (dp) {
            EXPECT_EQ(d, d0) << what << " data";
          }
          if (tp) {
            EXPECT_EQ(tr, t0) << what << " transpose";
          }
          EXPECT_EQ(si, si0) << what << " scale_inv";
          if (ap) {
            EXPECT_EQ(amax, amax0) << what << " amax";
          }
          if (ln) {
            EXPECT_EQ(mu, mu0) << what << " mu";
          }
          EXPECT_EQ(rs, rs0) << what << " rsigma";
        }
      }
  // Argument errors beyond te_rt_norm_fwd's.
  std::vector<float> buf(64);
  float si = 0, sc = 1;
  float *p = buf.data();
  EXPECT_FAILS_WITH(
      te_rt_norm_quantize_fp8(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p, p,
                              nullptr, 1e-5, 0, 2, 8, nullptr, p,
                              TE_RT_FP8_E4M3, &sc, 0, nullptr, nullptr, &si,
                              nullptr),
      "te_rt_norm_quantize_fp8: data and transpose are both NULL (nothing to "
      "write)");
  EXPECT_FAILS_WITH(
      te_rt_norm_quantize_fp8(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p, p,
                              nullptr, 1e-5, 0, 2, 8, nullptr, p,
                              TE_RT_FP8_E4M3, &sc, 1, p, nullptr, &si,
                              nullptr),
      "te_rt_norm_quantize_fp8: pow2_scale applies to current scaling only "
      "(scale must be NULL)");
  EXPECT_FAILS_WITH(
      te_rt_norm_quantize_fp8(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p, p,
                              nullptr, 1e-5, 0, 2, 8, nullptr, p, 3, &sc, 0, p,
                              nullptr, &si, nullptr),
      "te_rt_norm_quantize_fp8: unknown format 3 (0 E4M3, 1 E5M2)");
  EXPECT_FAILS_WITH(
      te_rt_norm_quantize_fp8(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32, p, p,
                              p, 1e-5, 0, 2, 8, nullptr, p, TE_RT_FP8_E4M3,
                              &sc, 0, p, nullptr, &si, nullptr),
      "te_rt_norm_quantize_fp8: mu is NULL");
  EXPECT_FAILS_WITH(
      te_rt_norm_quantize_fp8(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p, p,
                              nullptr, 1e-5, 0, 2, 8, nullptr, p,
                              TE_RT_FP8_E4M3, &sc, 0, p, nullptr, nullptr,
                              nullptr),
      "te_rt_norm_quantize_fp8: scale_inv is NULL");
}

TEST_F(Abi, ProducerAmaxDoesNotDependOnThreads) {
  const int64_t rows = 512, cols = 512, n = rows * cols;
  auto x = exactRandom(n, 43);
  x[n - 3] = 9.5f; // the largest output, in the last chunk
  std::vector<uint16_t> X = toBF16(x), y(n);
  float a1 = -1, a4 = -1;
  {
    ScopedEnv t("TE_RT_CPU_THREADS", "1");
    ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_BF16, X.data(),
                            y.data(), rows, cols, 0, 0, 0, &a1),
              0);
  }
  {
    ScopedEnv t("TE_RT_CPU_THREADS", "4");
    ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_BF16, X.data(),
                            y.data(), rows, cols, 0, 0, 0, &a4),
              0);
  }
  EXPECT_EQ(a1, a4);
  EXPECT_EQ(a4, storedMax(TE_RT_DTYPE_BF16, y.data(), n));
  EXPECT_EQ(a4, bf16ToFloat(floatToBF16(9.5f))); // gelu(9.5) rounds to 9.5
}

TEST_F(Abi, BiasGradDoesNotDependOnThreads) {
  const int64_t rows = 2000, cols = 100;
  auto dy = exactRandom(rows * cols, 21);
  std::vector<float> a(cols), b(cols);
  {
    ScopedEnv t("TE_RT_CPU_THREADS", "1");
    ASSERT_EQ(
        te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, dy.data(), a.data(), rows, cols),
        0);
  }
  {
    ScopedEnv t("TE_RT_CPU_THREADS", "4");
    ASSERT_EQ(
        te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, dy.data(), b.data(), rows, cols),
        0);
  }
  EXPECT_EQ(a, b);
}

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

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Per-tensor FP8
//===----------------------------------------------------------------------===//

TEST_F(Abi, QuantizeFP8CurrentScalingByHand) {
  // amax 2 -> scale 448 / 2 = 224: 1 -> 224 (0x76), -2 -> -448 (0xFE),
  // 0.5 -> 112 (0x6E), 0 -> 0, 0.25 -> 56 (0x66), -1 -> -224 (0xF6).
  std::vector<uint16_t> x = toBF16({1, -2, 0.5f, 0, 0.25f, -1});
  std::vector<uint8_t> q(6), t(6);
  float scaleInv = 0, amax = -1;
  ASSERT_EQ(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_BF16, x.data(), 2, 3,
                               TE_RT_FP8_E4M3, nullptr, 0, q.data(), t.data(),
                               &scaleInv, &amax, nullptr),
            0)
      << lastError();
  EXPECT_EQ(q, (std::vector<uint8_t>{0x76, 0xFE, 0x6E, 0x00, 0x66, 0xF6}));
  // The transposed copy [3, 2] holds the same bytes.
  EXPECT_EQ(t, (std::vector<uint8_t>{0x76, 0x00, 0xFE, 0x66, 0x6E, 0xF6}));
  EXPECT_EQ(scaleInv, 1.0f / 224.0f);
  EXPECT_EQ(amax, 2.0f);

  // Power-of-two scales: 448 / 3 = 149.3 rounds down to 128; 3 -> 384
  // (0x7C); E5M2 max 57344 / 3 -> 16384: 3 -> 49152 (0x7A).
  std::vector<float> y = {3, -1.5f};
  std::vector<uint8_t> q2(2);
  ASSERT_EQ(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, y.data(), 1, 2,
                               TE_RT_FP8_E4M3, nullptr, 1, q2.data(), nullptr,
                               &scaleInv, nullptr, nullptr),
            0);
  EXPECT_EQ(scaleInv, 1.0f / 128.0f);
  EXPECT_EQ(q2[0], 0x7C);
  ASSERT_EQ(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, y.data(), 1, 2,
                               TE_RT_FP8_E5M2, nullptr, 1, q2.data(), nullptr,
                               &scaleInv, nullptr, nullptr),
            0);
  EXPECT_EQ(scaleInv, 1.0f / 16384.0f);
  EXPECT_EQ(q2[0], 0x7A);

  // An all-zero tensor has scale 1.
  std::vector<float> z(4, 0.0f);
  std::vector<uint8_t> q3(4, 0xFF);
  ASSERT_EQ(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, z.data(), 2, 2,
                               TE_RT_FP8_E4M3, nullptr, 0, q3.data(), nullptr,
                               &scaleInv, &amax, nullptr),
            0);
  EXPECT_EQ(scaleInv, 1.0f);
  EXPECT_EQ(amax, 0.0f);
  EXPECT_EQ(q3, std::vector<uint8_t>(4, 0));
}

TEST_F(Abi, QuantizeFP8DelayedScalingSaturates) {
  // A stale scale of 1000: 1 -> 1000 saturates to 448 (0x7E), -0.25 -> -250
  // (-256 nearest: 0xF8), and the amax is still recorded.
  std::vector<float> x = {1, -0.25f};
  std::vector<uint8_t> t(2);
  float scale = 1000, scaleInv = 0, amax = 0;
  ASSERT_EQ(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, x.data(), 1, 2,
                               TE_RT_FP8_E4M3, &scale, 0, nullptr, t.data(),
                               &scaleInv, &amax, nullptr),
            0)
      << lastError();
  EXPECT_EQ(t, (std::vector<uint8_t>{0x7E, 0xF8}));
  EXPECT_EQ(scaleInv, 1.0f / 1000.0f);
  EXPECT_EQ(amax, 1.0f);
}

// Current-scaling fusion: the producer's amax handed to te_rt_quantize_fp8
// as amax_in gives the bytes, transpose and scale_inv of the unfused call
// (which reduces its own amax), for every dtype, format and pow2 setting;
// and amax_in really is the amax used: twice it halves the scale.
TEST_F(Abi, QuantizeFP8WithTheProducersAmax) {
  const int64_t rows = 24, cols = 40, n = rows * cols;
  auto x = exactRandom(n, 51);
  for (float &v : x)
    v *= 3;
  for (int32_t t : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16})
    for (int32_t fmt : {TE_RT_FP8_E4M3, TE_RT_FP8_E5M2})
      for (int32_t pow2 : {0, 1}) {
        std::string what = std::string(dtypeNameOf(t)) + " format " +
                           std::to_string(fmt) + " pow2 " +
                           std::to_string(pow2);
        const size_t sz = t == TE_RT_DTYPE_F32 ? 4 : 2;
        auto X = bytesOf(t, x);
        std::vector<uint8_t> y(n * sz);
        float amax = -1;
        ASSERT_EQ(te_rt_act_fwd(ctx, TE_RT_ACT_GELU, t, X.data(), y.data(),
                                rows, cols, 0, 0, 0, &amax),
                  0)
            << lastError();
        // Unfused: the quantization reduces its own amax.
        std::vector<uint8_t> q1(n), t1(n), q2(n, 0xA5), t2(n, 0xA5);
        float si1 = 0, am1 = -1, si2 = 0;
        ASSERT_EQ(te_rt_quantize_fp8(ctx, t, y.data(), rows, cols, fmt, nullptr,
                                     pow2, q1.data(), t1.data(), &si1, &am1,
                                     nullptr),
                  0)
            << lastError();
        EXPECT_EQ(am1, amax) << what;
        // Fused: the producer's amax, no amax pass.
        ASSERT_EQ(te_rt_quantize_fp8(ctx, t, y.data(), rows, cols, fmt, nullptr,
                                     pow2, q2.data(), t2.data(), &si2, nullptr,
                                     &amax),
                  0)
            << lastError();
        EXPECT_EQ(q2, q1) << what;
        EXPECT_EQ(t2, t1) << what;
        EXPECT_EQ(bitsOf(si2), bitsOf(si1)) << what;
        // Twice the amax: the scale follows amax_in, not the data.
        const FP8 f = fmt == TE_RT_FP8_E4M3 ? FP8::E4M3 : FP8::E5M2;
        const float twice = 2 * amax;
        const float scale = scaleFromAmax(twice, fp8Max(f), pow2 != 0);
        ASSERT_EQ(scale, scaleFromAmax(amax, fp8Max(f), pow2 != 0) / 2);
        std::vector<uint8_t> q3(n);
        float si3 = 0;
        ASSERT_EQ(te_rt_quantize_fp8(ctx, t, y.data(), rows, cols, fmt, nullptr,
                                     pow2, q3.data(), nullptr, &si3, nullptr,
                                     &twice),
                  0)
            << lastError();
        EXPECT_EQ(si3, 1.0f / scale) << what;
        EXPECT_EQ(si3, 2 * si1) << what;
        size_t mismatches = 0;
        for (int64_t i = 0; i < n; ++i)
          mismatches +=
              q3[i] != quantizeFP8(valueAt(t, y.data(), i) * scale, f);
        EXPECT_EQ(mismatches, 0u) << what;
      }
}

TEST_F(Abi, GemmFP8IsTheGemmOfTheDequantizedOperands) {
  // a [2, 2] E4M3 {1, 2; 3, 0.5} * 0.5, b [1, 2] E5M2 {2, -1} * 4:
  // d = a' . b'^T = {0.5*8 + 1*-4, 1.5*8 + 0.25*-4} = {0, 11}, + bias 1.
  std::vector<uint8_t> a = {0x38, 0x40, 0x44, 0x30}; // 1, 2, 3, 0.5
  std::vector<uint8_t> b = {0x40, 0xBC};             // 2, -1 (E5M2)
  float sa = 0.5f, sb = 4.0f;
  std::vector<float> bias = {1}, d(2, -7);
  ASSERT_EQ(te_rt_gemm_fp8(ctx, TE_RT_DTYPE_F32, TE_RT_FP8_E4M3, a.data(), &sa,
                           TE_RT_FP8_E5M2, b.data(), &sb, bias.data(), d.data(),
                           2, 1, 2, 0, 0),
            0)
      << lastError();
  EXPECT_EQ(d, (std::vector<float>{1, 12}));
  // Accumulate into bf16: 12 + 12 = 24 exactly.
  std::vector<uint16_t> dh = toBF16({1, 12});
  std::vector<uint16_t> bh = toBF16({1});
  ASSERT_EQ(te_rt_gemm_fp8(ctx, TE_RT_DTYPE_BF16, TE_RT_FP8_E4M3, a.data(),
                           &sa, TE_RT_FP8_E5M2, b.data(), &sb, bh.data(),
                           dh.data(), 2, 1, 2, 1, 0),
            0);
  EXPECT_EQ(bf16ToFloat(dh[0]), 2.0f);
  EXPECT_EQ(bf16ToFloat(dh[1]), 24.0f);
  // Fast accumulation is a GPU precision trade; the cpu sums exactly.
  std::vector<float> d2(2, -7);
  ASSERT_EQ(te_rt_gemm_fp8(ctx, TE_RT_DTYPE_F32, TE_RT_FP8_E4M3, a.data(), &sa,
                           TE_RT_FP8_E5M2, b.data(), &sb, bias.data(),
                           d2.data(), 2, 1, 2, 0, 1),
            0)
      << lastError();
  EXPECT_EQ(d2, (std::vector<float>{1, 12}));
  EXPECT_FAILS_WITH(te_rt_gemm_fp8(ctx, TE_RT_DTYPE_F32, TE_RT_FP8_E4M3,
                                   a.data(), &sa, TE_RT_FP8_E5M2, b.data(), &sb,
                                   nullptr, d2.data(), 2, 1, 2, 0, 2),
                    "te_rt_gemm_fp8: fast_accumulate must be 0 or 1, got 2");
}

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

TEST_F(Abi, FP8ArgumentChecks) {
  float f[8] = {};
  uint8_t q[8] = {};
  EXPECT_FAILS_WITH(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 3,
                                       nullptr, 0, q, nullptr, f, nullptr,
                                       nullptr),
                    "te_rt_quantize_fp8: unknown format 3 (0 E4M3, 1 E5M2)");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                       nullptr, 0, nullptr, nullptr, f, nullptr,
                                       nullptr),
                    "te_rt_quantize_fp8: data and transpose are both NULL "
                    "(nothing to write)");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0, f, 1,
                                       q, nullptr, f, nullptr, nullptr),
                    "te_rt_quantize_fp8: pow2_scale applies to current "
                    "scaling only (scale must be NULL)");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                       nullptr, 0, q, nullptr, nullptr, nullptr,
                                       nullptr),
                    "te_rt_quantize_fp8: scale_inv is NULL");
  // A precomputed amax: current scaling only, and it is the amax.
  EXPECT_FAILS_WITH(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0, f, 0,
                                       q, nullptr, f, nullptr, f),
                    "te_rt_quantize_fp8: amax_in must be NULL with delayed "
                    "scaling (scale given)");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                       nullptr, 0, q, nullptr, f, f + 1, f),
                    "te_rt_quantize_fp8: amax must be NULL when amax_in is "
                    "given (amax_in is the amax)");
  EXPECT_FAILS_WITH(te_rt_gemm_fp8(ctx, TE_RT_DTYPE_F32, TE_RT_FP8_E5M2, q, f,
                                   TE_RT_FP8_E5M2, q, f, nullptr, f, 1, 1, 1,
                                   0, 0),
                    "te_rt_gemm_fp8: E5M2 x E5M2 GEMMs are not supported (one "
                    "operand must be E4M3, as in TE's HYBRID format)");
  EXPECT_FAILS_WITH(te_rt_gemm_fp8(ctx, TE_RT_DTYPE_F32, 0, q, nullptr, 0, q,
                                   f, nullptr, f, 1, 1, 1, 0, 0),
                    "te_rt_gemm_fp8: a_scale_inv is NULL");
  EXPECT_FAILS_WITH(te_rt_amax_update(ctx, f, f, f, 0, 2, 448, 0, 0, f, f),
                    "te_rt_amax_update: len must be > 0, got 0");
  EXPECT_FAILS_WITH(te_rt_amax_update(ctx, f, f, f, 1, 2, 448, -1, 0, f, f),
                    "te_rt_amax_update: margin must be in [0, 126], got -1");
}

TEST_F(Abi, QuantizeFP8Block1DByHand) {
  // x [2, 130]: two 1x128 blocks per row, the second partial (2 columns).
  // Power-of-two scales (TE's default):
  //   row 0, block 0: {2, 1, ..., 1}, amax 2 -> 448/2 = 224 -> 128:
  //     2 -> 256 (0x78), 1 -> 128 (0x70); block 1 {0, 0}: scale 1.
  //   row 1, block 0: 0.5 everywhere, amax 0.5 -> 896 -> 512: 256 (0x78);
  //     block 1 {3, -3}: 448/3 -> 128: +-384 (0x7C, 0xFC).
  const int64_t rows = 2, cols = 130;
  std::vector<float> x(rows * cols, 1.0f);
  x[0] = 2;
  x[128] = x[129] = 0;
  for (int64_t j = 0; j < 128; ++j)
    x[cols + j] = 0.5f;
  x[cols + 128] = 3;
  x[cols + 129] = -3;
  std::vector<uint8_t> q(rows * cols), t(rows * cols);
  // Rowwise scales [ceil(130/128) = 2, roundup(2, 4) = 4]; columnwise
  // (blocks down the 2 rows) [1, roundup(130, 4) = 132]. Padding is 0.
  std::vector<float> s(2 * 4, -1), st(132, -1);
  ASSERT_EQ(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, x.data(), rows,
                                     cols, 0, 1, q.data(), s.data(), t.data(),
                                     st.data()),
            0)
      << lastError();
  EXPECT_EQ(q[0], 0x78);
  EXPECT_EQ(q[1], 0x70);
  EXPECT_EQ(q[127], 0x70);
  EXPECT_EQ(q[128], 0x00);
  EXPECT_EQ(q[cols + 5], 0x78);
  EXPECT_EQ(q[cols + 128], 0x7C);
  EXPECT_EQ(q[cols + 129], 0xFC);
  EXPECT_EQ(s, (std::vector<float>{1.0f / 128, 1.0f / 512, 0, 0, 1,
                                   1.0f / 128, 0, 0}));
  // Columnwise: x^T [130, 2], one block per column of x. Column 0 {2, 0.5}
  // -> 128: {256, 64} = {0x78, 0x68}; columns 1..127 {1, 0.5} -> 256:
  // {0x78, 0x70}; columns 128, 129 {0, +-3} -> 128.
  EXPECT_EQ(t[0], 0x78);
  EXPECT_EQ(t[1], 0x68);
  EXPECT_EQ(t[2], 0x78);
  EXPECT_EQ(t[3], 0x70);
  EXPECT_EQ(t[2 * 128], 0x00);
  EXPECT_EQ(t[2 * 128 + 1], 0x7C);
  EXPECT_EQ(t[2 * 129 + 1], 0xFC);
  EXPECT_EQ(st[0], 1.0f / 128);
  EXPECT_EQ(st[1], 1.0f / 256);
  EXPECT_EQ(st[127], 1.0f / 256);
  EXPECT_EQ(st[128], 1.0f / 128);
  EXPECT_EQ(st[129], 1.0f / 128);
  EXPECT_EQ(st[130], 0.0f);
  EXPECT_EQ(st[131], 0.0f);
}

TEST_F(Abi, QuantizeFP8Block2DByHand) {
  // x [3, 200]: 128x128 blocks (0, 0) and (0, 1). Block (0, 0) is 0.75 with
  // one -6: amax 6 -> 448/6 = 74.67 -> 64: 0.75 -> 48 (0x64), -6 -> -384
  // (0xFC). Block (0, 1) is 1792: 448/1792 = 0.25 exactly -> 448 (0x7E).
  const int64_t rows = 3, cols = 200;
  std::vector<float> x(rows * cols, 0.75f);
  x[cols + 5] = -6;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 128; j < cols; ++j)
      x[i * cols + j] = 1792;
  std::vector<uint16_t> xb = toBF16(x); // all exact in bf16
  std::vector<uint8_t> q(rows * cols), t(rows * cols);
  // Rowwise [1, roundup(2, 4)]; columnwise [2, roundup(1, 4)].
  std::vector<float> s(4, -1), st(8, -1);
  ASSERT_EQ(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_BF16, xb.data(), rows,
                                     cols, 1, 1, q.data(), s.data(), t.data(),
                                     st.data()),
            0)
      << lastError();
  EXPECT_EQ(q[0], 0x64);
  EXPECT_EQ(q[cols + 5], 0xFC);
  EXPECT_EQ(q[2 * cols + 199], 0x7E);
  EXPECT_EQ(s, (std::vector<float>{1.0f / 64, 4, 0, 0}));
  EXPECT_EQ(st, (std::vector<float>{1.0f / 64, 0, 0, 0, 4, 0, 0, 0}));
  // With 2-D blocks the columnwise copy is the byte transpose.
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      ASSERT_EQ(t[j * rows + i], q[i * cols + j]) << i << "," << j;

  // fp32 scales: 448/6 = 74.666664f; 0.75 -> 56 (0x66), -6 -> -448 (0xFE).
  ASSERT_EQ(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, x.data(), rows,
                                     cols, 1, 0, q.data(), s.data(), nullptr,
                                     nullptr),
            0)
      << lastError();
  EXPECT_EQ(q[0], 0x66);
  EXPECT_EQ(q[cols + 5], 0xFE);
  EXPECT_EQ(s[0], 1.0f / (448.0f / 6.0f));
}

TEST_F(Abi, GemmFP8BlockIsTheGemmOfTheDequantizedOperands) {
  // a: the 1-D quantization of x [2, 130] above (every value exact), b:
  // ones [1, 130] in 128x128 blocks (scale 256, dequantized exactly 1).
  // d = row sums of x: {2 + 127, 64 + 3 - 3} = {129, 64}, + bias 10.
  const int64_t cols = 130;
  std::vector<float> x(2 * cols, 1.0f);
  x[0] = 2;
  x[128] = x[129] = 0;
  for (int64_t j = 0; j < 128; ++j)
    x[cols + j] = 0.5f;
  x[cols + 128] = 3;
  x[cols + 129] = -3;
  std::vector<float> ones(cols, 1.0f);
  std::vector<uint8_t> a(2 * cols), b(cols);
  std::vector<float> sa(8), sb(4);
  ASSERT_EQ(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, x.data(), 2, cols,
                                     0, 1, a.data(), sa.data(), nullptr,
                                     nullptr),
            0);
  ASSERT_EQ(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, ones.data(), 1,
                                     cols, 1, 1, b.data(), sb.data(), nullptr,
                                     nullptr),
            0);
  std::vector<float> bias = {10}, d(2, -7);
  ASSERT_EQ(te_rt_gemm_fp8_block(ctx, TE_RT_DTYPE_F32, a.data(), sa.data(), 0,
                                 b.data(), sb.data(), 1, bias.data(), d.data(),
                                 2, 1, cols, 0),
            0)
      << lastError();
  EXPECT_EQ(d, (std::vector<float>{139, 74}));
  // Accumulate (no bias): 139 + 129, 74 + 64.
  ASSERT_EQ(te_rt_gemm_fp8_block(ctx, TE_RT_DTYPE_F32, a.data(), sa.data(), 0,
                                 b.data(), sb.data(), 1, nullptr, d.data(), 2,
                                 1, cols, 1),
            0);
  EXPECT_EQ(d, (std::vector<float>{268, 138}));
  // Operands swapped (2-D a, 1-D b): d^T.
  std::vector<float> dt(2);
  ASSERT_EQ(te_rt_gemm_fp8_block(ctx, TE_RT_DTYPE_F32, b.data(), sb.data(), 1,
                                 a.data(), sa.data(), 0, nullptr, dt.data(), 1,
                                 2, cols, 0),
            0);
  EXPECT_EQ(dt, (std::vector<float>{129, 64}));
}

TEST_F(Abi, FP8BlockArgumentChecks) {
  float f[8] = {};
  uint8_t q[8] = {};
  EXPECT_FAILS_WITH(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                             1, q, nullptr, nullptr, nullptr),
                    "te_rt_quantize_fp8_block: data and scale_inv must both "
                    "be given or both be NULL");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                             1, nullptr, nullptr, q, nullptr),
                    "te_rt_quantize_fp8_block: columnwise_data and "
                    "columnwise_scale_inv must both be given or both be NULL");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, f, 2, 2, 0,
                                             1, nullptr, nullptr, nullptr,
                                             nullptr),
                    "te_rt_quantize_fp8_block: no copy requested (data and "
                    "columnwise_data are NULL)");
  EXPECT_FAILS_WITH(te_rt_quantize_fp8_block(ctx, TE_RT_DTYPE_F32, f, 2, 2, 3,
                                             1, q, f, nullptr, nullptr),
                    "te_rt_quantize_fp8_block: block_2d must be 0 or 1, got "
                    "3");
  EXPECT_FAILS_WITH(te_rt_gemm_fp8_block(ctx, TE_RT_DTYPE_F32, q, f, 1, q, f,
                                         1, nullptr, f, 1, 1, 1, 0),
                    "te_rt_gemm_fp8_block: both operands use 128x128 blocks "
                    "(at most one may, as in TransformerEngine)");
  EXPECT_FAILS_WITH(te_rt_gemm_fp8_block(ctx, TE_RT_DTYPE_F32, q, nullptr, 0,
                                         q, f, 0, nullptr, f, 1, 1, 1, 0),
                    "te_rt_gemm_fp8_block: a_scale_inv is NULL");
}

TEST_F(Abi, QuantizeMXFP8ByHand) {
  // x [32, 64] of ones, x[0][0] = 3, row 2's second block all zero.
  //   rowwise (0, 0): amax 3 -> 3/448 -> 2^-7 (e 120): 1 -> 128 (0x70),
  //   3 -> 384 (0x7C); other blocks amax 1 -> 2^-8 (e 119): 1 -> 256
  //   (0x78); the zero block: e 0, bytes 0.
  //   columnwise (blocks of 32 down each column): column 0 {3, 1, ...} ->
  //   e 120; columns 1.. -> 119 (column 32..63 include row 2's zeros,
  //   still amax 1).
  const int64_t rows = 32, cols = 64;
  std::vector<float> x(rows * cols, 1.0f);
  x[0] = 3;
  for (int64_t j = 32; j < 64; ++j)
    x[2 * cols + j] = 0;
  std::vector<uint8_t> q(rows * cols), cq(rows * cols);
  // Compact scales: rowwise [roundup(32, 128), roundup(2, 4)], columnwise
  // [roundup(1, 4), roundup(64, 128)].
  std::vector<uint8_t> s(128 * 4, 0xAA), cs(4 * 128, 0xAA);
  ASSERT_EQ(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, x.data(), rows, cols,
                                 TE_RT_FP8_E4M3, 0, q.data(), s.data(),
                                 cq.data(), cs.data()),
            0)
      << lastError();
  EXPECT_EQ(q[0], 0x7C);
  EXPECT_EQ(q[1], 0x70);
  EXPECT_EQ(q[32], 0x78);
  EXPECT_EQ(q[2 * cols + 40], 0x00);
  EXPECT_EQ(s[0], 120);
  EXPECT_EQ(s[1], 119);
  EXPECT_EQ(s[4 + 0], 119);
  EXPECT_EQ(s[2 * 4 + 1], 0);
  EXPECT_EQ(s[2], 0);       // padding column
  EXPECT_EQ(s[32 * 4], 0);  // padding row
  // Columnwise data keeps the [rows, cols] layout.
  EXPECT_EQ(cq[0], 0x7C);
  EXPECT_EQ(cq[cols], 0x70);
  EXPECT_EQ(cq[1], 0x78);
  EXPECT_EQ(cs[0], 120);
  EXPECT_EQ(cs[1], 119);
  EXPECT_EQ(cs[63], 119);
  EXPECT_EQ(cs[64], 0);
  EXPECT_EQ(cs[128], 0);
  // Swizzled (cuBLAS's 128x4 tiles): rowwise (r, c) at (r % 32) * 16 +
  // (r / 32) * 4 + c; the columnwise scales are swizzled as their transpose
  // [128, 4], so column j's first block is at (j % 32) * 16 + (j / 32) * 4.
  std::vector<uint8_t> sw(128 * 4), csw(128 * 4);
  ASSERT_EQ(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, x.data(), rows, cols,
                                 TE_RT_FP8_E4M3, 1, q.data(), sw.data(),
                                 cq.data(), csw.data()),
            0)
      << lastError();
  EXPECT_EQ(sw[0], 120);
  EXPECT_EQ(sw[1], 119);
  EXPECT_EQ(sw[16], 119);     // (1, 0)
  EXPECT_EQ(sw[2 * 16 + 1], 0); // (2, 1): the zero block
  EXPECT_EQ(csw[0], 120);
  EXPECT_EQ(csw[16], 119);    // column 1
  EXPECT_EQ(csw[31 * 16 + 4], 119); // column 63 = (63 % 32) * 16 + 4
}

TEST_F(Abi, GemmMXFP8IsTheGemmOfTheDequantizedOperands) {
  const int64_t rows = 32, cols = 64;
  std::vector<float> x(rows * cols, 1.0f);
  x[0] = 3;
  std::vector<float> ones(rows * cols, 1.0f);
  for (int32_t swz : {0, 1}) {
    std::vector<uint8_t> q(rows * cols), s(512), cq(rows * cols), cs(512);
    std::vector<uint8_t> o(rows * cols), os(512), oc(rows * cols), ocs(512);
    ASSERT_EQ(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, x.data(), rows, cols,
                                   TE_RT_FP8_E4M3, swz, q.data(), s.data(),
                                   cq.data(), cs.data()),
              0);
    ASSERT_EQ(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, ones.data(), rows,
                                   cols, TE_RT_FP8_E4M3, swz, o.data(),
                                   os.data(), oc.data(), ocs.data()),
              0);
    // Rowwise x rowwise: d [32, 32] = x [32, 64] . ones [32, 64]^T: row
    // sums {66, 64, ...}, + bias 1.
    std::vector<float> bias(32, 1.0f), d(32 * 32, -7);
    ASSERT_EQ(te_rt_gemm_mxfp8(ctx, TE_RT_DTYPE_F32, TE_RT_FP8_E4M3, q.data(),
                               s.data(), 0, TE_RT_FP8_E4M3, o.data(), os.data(),
                               0, swz, bias.data(), d.data(), 32, 32, 64, 0),
              0)
        << lastError();
    EXPECT_EQ(d[0], 67);
    EXPECT_EQ(d[31], 67);
    EXPECT_EQ(d[32], 65);
    // Columnwise x columnwise (the wgrad form): A [64, 32] = x^T, B [64, 32]
    // = ones^T (both from [32, 64] tensors, k = 32): d = x^T . ones, column
    // sums of x: {34, 32, ...}.
    std::vector<float> dw(64 * 64, -7);
    ASSERT_EQ(te_rt_gemm_mxfp8(ctx, TE_RT_DTYPE_F32, TE_RT_FP8_E4M3, cq.data(),
                               cs.data(), 1, TE_RT_FP8_E4M3, oc.data(),
                               ocs.data(), 1, swz, nullptr, dw.data(), 64, 64,
                               32, 0),
              0)
        << lastError();
    EXPECT_EQ(dw[0], 34);
    EXPECT_EQ(dw[63], 34);
    EXPECT_EQ(dw[64], 32);
  }
}

TEST_F(Abi, MXFP8ArgumentChecks) {
  float f[64] = {};
  uint8_t q[64] = {};
  EXPECT_FAILS_WITH(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, f, 32, 48, 0,
                                         0, q, q, nullptr, nullptr),
                    "te_rt_quantize_mxfp8: cols must be a multiple of 32 "
                    "(MXFP8 blocks), got 48");
  EXPECT_FAILS_WITH(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, f, 32, 32, 0,
                                         2, q, q, nullptr, nullptr),
                    "te_rt_quantize_mxfp8: swizzled must be 0 or 1, got 2");
  EXPECT_FAILS_WITH(te_rt_quantize_mxfp8(ctx, TE_RT_DTYPE_F32, f, 32, 32, 0,
                                         0, nullptr, nullptr, nullptr, nullptr),
                    "te_rt_quantize_mxfp8: no copy requested (data and "
                    "columnwise_data are NULL)");
  EXPECT_FAILS_WITH(te_rt_gemm_mxfp8(ctx, TE_RT_DTYPE_F32, 0, q, q, 0, 0, q, q,
                                     0, 0, nullptr, f, 1, 1, 16, 0),
                    "te_rt_gemm_mxfp8: k must be a multiple of 32 (MXFP8 "
                    "blocks), got 16");
  EXPECT_FAILS_WITH(te_rt_gemm_mxfp8(ctx, TE_RT_DTYPE_F32, 1, q, q, 0, 1, q, q,
                                     0, 0, nullptr, f, 1, 1, 32, 0),
                    "te_rt_gemm_mxfp8: E5M2 x E5M2 GEMMs are not supported "
                    "(one operand must be E4M3)");
}

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
      quantize(0, 0, 16, 0, 0, 0, 0, q, q, &am, nullptr, nullptr, nullptr, f),
      msg("rows must be > 0, got 0"));
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
  EXPECT_FAILS_WITH(gemm(0, q, q, &am, q, q, &am, 0, f, 0, 1, 16, 0),
                    "te_rt_gemm_nvfp4: m must be > 0, got 0");
  EXPECT_FAILS_WITH(gemm(0, q, q, &am, q, q, &am, 0, f, 1, -1, 16, 0),
                    "te_rt_gemm_nvfp4: n must be > 0, got -1");
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

//===----------------------------------------------------------------------===//
// Error messages of the other calls
//===----------------------------------------------------------------------===//

TEST_F(Abi, ErrorMessagesNameTheCallAndTheArgument) {
  float b[16] = {}, s[4] = {};
  float *p = b;
  // The examples of the contract.
  EXPECT_FAILS_WITH(
      te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, nullptr, p, nullptr, p, 2, 2, 2),
      "te_rt_gemm_fprop: x is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p,
                                   p, p, 1e-5, 0, 2, 2, p, nullptr, s),
                    "te_rt_norm_fwd: beta must be NULL for RMSNorm");
  EXPECT_FAILS_WITH(
      te_rt_act_fwd(ctx, 42, TE_RT_DTYPE_F32, p, p, 1, 2, 0, 0, 0, nullptr),
      "te_rt_act_fwd: unknown activation 42");
  EXPECT_FAILS_WITH(
      te_rt_act_fwd(ctx, -1, TE_RT_DTYPE_F32, p, p, 1, 2, 0, 0, 0, nullptr),
      "te_rt_act_fwd: unknown activation -1");
  EXPECT_FAILS_WITH(
      te_rt_act_fwd(ctx, TE_RT_ACT_SWIGLU, TE_RT_DTYPE_F32, p, p, 1, 7, 0, 0, 0,
                    nullptr),
      "te_rt_act_fwd: gated activation swiglu needs an even number of "
      "columns, got 7");
  EXPECT_FAILS_WITH(
      te_rt_act_bwd(ctx, TE_RT_ACT_CLAMPED_SWIGLU, TE_RT_DTYPE_F32, p, p, p, 1,
                    3, 7, 1.702f, 1, nullptr),
      "te_rt_act_bwd: gated activation clamped_swiglu needs an even number "
      "of columns, got 3");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, p, 1e-5, 0, -1, 2, p, s, s),
                    "te_rt_norm_fwd: rows must be >= 0, got -1");
  EXPECT_FAILS_WITH(te_rt_add(ctx, 3, p, p, p, 2),
                    "te_rt_add: unknown dtype 3 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(
      te_rt_gemm_dgrad(nullptr, TE_RT_DTYPE_F32, p, p, p, 2, 2, 2),
      "te_rt_gemm_dgrad: ctx is NULL");

  // Normalization.
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, 2, TE_RT_DTYPE_F32, p, p, nullptr, 1e-5,
                                   0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: unknown norm kind 2 (0 layernorm, 1 "
                    "rmsnorm)");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, 7, p, p, nullptr,
                                   1e-5, 0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: unknown dtype 7 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, nullptr, 1e-5, 0, 2, 0, p, s, s),
                    "te_rt_norm_fwd: cols must be > 0, got 0");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, nullptr, NAN, 0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: eps must be finite and >= 0, got nan");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, nullptr, -0.5, 0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: eps must be finite and >= 0, got -0.5");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, nullptr, 1e-5, 2, 2, 2, p, s, s),
                    "te_rt_norm_fwd: zero_centered must be 0 or 1, got 2");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, nullptr, nullptr, 1e-5, 0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: gamma is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, nullptr, 1e-5, 0, 2, 2, p, nullptr, s),
                    "te_rt_norm_fwd: mu is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p,
                                   p, nullptr, 1e-5, 0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: mu must be NULL for RMSNorm");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p,
                                   p, nullptr, 1e-5, 0, 2, 2, p, nullptr,
                                   nullptr),
                    "te_rt_norm_fwd: rsigma is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p,
                                   p, nullptr, 1e-5, 0, int64_t(1) << 40,
                                   int64_t(1) << 40, p, nullptr, s),
                    "te_rt_norm_fwd: rows * cols = 1099511627776 * "
                    "1099511627776 is too large");
  EXPECT_FAILS_WITH(te_rt_norm_bwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, nullptr, s, p, 0, 2, 2, p, p, p),
                    "te_rt_norm_bwd: mu is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_bwd(ctx, TE_RT_NORM_LAYERNORM, TE_RT_DTYPE_F32,
                                   p, p, s, s, p, 0, 2, 2, p, nullptr, p),
                    "te_rt_norm_bwd: dgamma is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_bwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32, p,
                                   p, nullptr, s, p, 0, 2, 2, p, p, p),
                    "te_rt_norm_bwd: dbeta must be NULL for RMSNorm");
  EXPECT_FAILS_WITH(te_rt_norm_bwd(ctx, TE_RT_NORM_RMSNORM, TE_RT_DTYPE_F32,
                                   nullptr, p, nullptr, s, p, 0, 2, 2, p, p,
                                   nullptr),
                    "te_rt_norm_bwd: dz is NULL");

  // GEMMs.
  EXPECT_FAILS_WITH(
      te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, p, p, nullptr, p, -2, 2, 2),
      "te_rt_gemm_fprop: m must be >= 0, got -2");
  EXPECT_FAILS_WITH(
      te_rt_gemm_fprop(ctx, TE_RT_DTYPE_F32, p, p, nullptr, nullptr, 2, 2, 2),
      "te_rt_gemm_fprop: y is NULL");
  EXPECT_FAILS_WITH(
      te_rt_gemm_dgrad(ctx, TE_RT_DTYPE_F32, p, nullptr, p, 2, 2, 2),
      "te_rt_gemm_dgrad: w is NULL");
  EXPECT_FAILS_WITH(te_rt_gemm_dgrad(ctx, TE_RT_DTYPE_F32, p, p, p, 2, 2, -3),
                    "te_rt_gemm_dgrad: k must be >= 0, got -3");
  EXPECT_FAILS_WITH(
      te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_F32, p, p, p, nullptr, 2, 2, 2, 2),
      "te_rt_gemm_wgrad: accumulate must be 0 or 1, got 2");
  EXPECT_FAILS_WITH(
      te_rt_gemm_wgrad(ctx, TE_RT_DTYPE_F32, p, p, nullptr, p, 2, 2, 2, 0),
      "te_rt_gemm_wgrad: dw is NULL");
  EXPECT_FAILS_WITH(
      te_rt_gemm_wgrad(ctx, -1, p, p, p, p, 2, 2, 2, 0),
      "te_rt_gemm_wgrad: unknown dtype -1 (0 f32, 1 bf16, 2 f16)");

  // Activations, bias gradient, elementwise.
  EXPECT_FAILS_WITH(te_rt_act_fwd(ctx, TE_RT_ACT_CLAMPED_SWIGLU,
                                  TE_RT_DTYPE_F32, p, p, 1, 2, -1, 1.702f, 1,
                                  nullptr),
                    "te_rt_act_fwd: limit must be >= 0 for clamped_swiglu, got "
                    "-1");
  EXPECT_FAILS_WITH(te_rt_act_bwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, p,
                                  nullptr, p, 1, 2, 0, 0, 0, nullptr),
                    "te_rt_act_bwd: x is NULL");
  EXPECT_FAILS_WITH(te_rt_act_bwd(ctx, TE_RT_ACT_GELU, TE_RT_DTYPE_F32, p, p, p,
                                  1, -4, 0, 0, 0, nullptr),
                    "te_rt_act_bwd: cols must be >= 0, got -4");
  EXPECT_FAILS_WITH(te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, p, nullptr, 2, 2),
                    "te_rt_bias_grad: dbias is NULL");
  EXPECT_FAILS_WITH(te_rt_bias_grad(ctx, TE_RT_DTYPE_F32, p, p, -5, 2),
                    "te_rt_bias_grad: rows must be >= 0, got -5");
  EXPECT_FAILS_WITH(te_rt_add(ctx, TE_RT_DTYPE_F32, p, nullptr, p, 2),
                    "te_rt_add: b is NULL");
  EXPECT_FAILS_WITH(te_rt_add(ctx, TE_RT_DTYPE_F32, p, p, p, -1),
                    "te_rt_add: n must be >= 0, got -1");
  EXPECT_FAILS_WITH(te_rt_add(ctx, TE_RT_DTYPE_F32, p, p, p,
                              std::numeric_limits<int64_t>::max()),
                    "te_rt_add: n = 9223372036854775807 is too large");
  EXPECT_FAILS_WITH(te_rt_cast(ctx, 5, TE_RT_DTYPE_F32, p, p, 2),
                    "te_rt_cast: unknown src_dtype 5 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(te_rt_cast(ctx, TE_RT_DTYPE_F32, 5, p, p, 2),
                    "te_rt_cast: unknown dst_dtype 5 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(
      te_rt_cast(ctx, TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, p, nullptr, 2),
      "te_rt_cast: dst is NULL");
  EXPECT_FAILS_WITH(te_rt_transpose(ctx, TE_RT_DTYPE_F32, p, p + 1, 2, 2),
                    "te_rt_transpose: dst and src overlap");
  EXPECT_FAILS_WITH(te_rt_transpose(ctx, TE_RT_DTYPE_F32, nullptr, p, 2, 2),
                    "te_rt_transpose: src is NULL");
  EXPECT_FAILS_WITH(te_rt_transpose(nullptr, TE_RT_DTYPE_F32, p, p, 2, 2),
                    "te_rt_transpose: ctx is NULL");
}

TEST_F(Abi, FailedCallsLeaveOutputsAlone) {
  float x[4] = {1, 2, 3, 4}, y[4] = {9, 9, 9, 9};
  EXPECT_NE(te_rt_act_fwd(ctx, TE_RT_ACT_SWIGLU, TE_RT_DTYPE_F32, x, y, 1, 3, 0,
                          0, 0, nullptr),
            0);
  expectNear(y, {9, 9, 9, 9}, 0, "y");
}

//===----------------------------------------------------------------------===//
// CUDA graphs (the calls' checks; CudaAbiTest.cpp captures and replays)
//===----------------------------------------------------------------------===//

TEST_F(Abi, CudaGraphCallsNeedTheCudaBackend) {
  EXPECT_FAILS_WITH(te_rt_capture_begin(ctx),
                    "te_rt_capture_begin: CUDA graphs need the cuda backend "
                    "(this context runs on cpu)");
  te_rt_graph *graph = reinterpret_cast<te_rt_graph *>(&graph);
  EXPECT_FAILS_WITH(te_rt_capture_end(ctx, &graph),
                    "te_rt_capture_end: CUDA graphs need the cuda backend "
                    "(this context runs on cpu)");
  EXPECT_EQ(graph, nullptr); // set on failure
  te_rt_graph fake;
  fake.ctx = ctx;
  EXPECT_FAILS_WITH(te_rt_graph_launch(ctx, &fake),
                    "te_rt_graph_launch: CUDA graphs need the cuda backend "
                    "(this context runs on cpu)");
  te_rt_graph_destroy(nullptr); // a no-op
  // NULL arguments.
  EXPECT_FAILS_WITH(te_rt_capture_begin(nullptr),
                    "te_rt_capture_begin: ctx is NULL");
  graph = &fake;
  EXPECT_FAILS_WITH(te_rt_capture_end(nullptr, &graph),
                    "te_rt_capture_end: ctx is NULL");
  EXPECT_EQ(graph, nullptr);
  EXPECT_FAILS_WITH(te_rt_capture_end(ctx, nullptr),
                    "te_rt_capture_end: graph is NULL");
  EXPECT_FAILS_WITH(te_rt_graph_launch(nullptr, &fake),
                    "te_rt_graph_launch: ctx is NULL");
  EXPECT_FAILS_WITH(te_rt_graph_launch(ctx, nullptr),
                    "te_rt_graph_launch: graph is NULL");
  // The context is unaffected.
  EXPECT_EQ(te_rt_synchronize(ctx), 0);
  char host[4] = {1, 2, 3, 4}, back[4] = {};
  void *p = te_rt_alloc(ctx, 4);
  ASSERT_EQ(te_rt_copy_to_backend(ctx, p, host, 4), 0);
  ASSERT_EQ(te_rt_copy_to_host(ctx, back, p, 4), 0);
  EXPECT_EQ(std::memcmp(back, host, 4), 0);
  te_rt_free(ctx, p);
}

TEST(AbiCuda, GraphBookkeepingWithoutADevice) {
  // A cuda context built by hand (no stream, no device needed) with a
  // capture in progress set by hand: the checks and the buffer ownership
  // that involve no CUDA call.
  te_rt_context cuda;
  cuda.backend = TE_RT_BACKEND_CUDA;
  te_rt_context *ctx = &cuda;
  te_rt_graph *none = nullptr;
  EXPECT_FAILS_WITH(te_rt_capture_end(ctx, &none),
                    "te_rt_capture_end: this context is not capturing (call "
                    "te_rt_capture_begin first)");
  EXPECT_FAILS_WITH(te_rt_capture_end(ctx, nullptr),
                    "te_rt_capture_end: graph is NULL");
  EXPECT_FAILS_WITH(te_rt_graph_launch(ctx, nullptr),
                    "te_rt_graph_launch: graph is NULL");
  te_rt_context other;
  other.backend = TE_RT_BACKEND_CUDA;
  te_rt_graph foreign;
  foreign.ctx = &other;
  EXPECT_FAILS_WITH(te_rt_graph_launch(ctx, &foreign),
                    "te_rt_graph_launch: graph was captured on another "
                    "context");

  // Two buffers "allocated" before the capture (fake addresses, never
  // dereferenced).
  alignas(256) static char before[2][256];
  cuda.cudaLive[before[0]] = 256;
  cuda.cudaLive[before[1]] = 256;
  te_rt_graph *graph = new te_rt_graph;
  graph->ctx = ctx;
  cuda.capturing = graph;
  EXPECT_FAILS_WITH(te_rt_capture_begin(ctx),
                    "te_rt_capture_begin: this context is already capturing "
                    "a CUDA graph (call te_rt_capture_end first)");
  char host[8] = {};
  EXPECT_FAILS_WITH(te_rt_copy_to_host(ctx, host, before[0], 8),
                    "te_rt_copy_to_host: cannot copy to the host while "
                    "capturing a CUDA graph (call te_rt_capture_end first)");
  EXPECT_FAILS_WITH(te_rt_copy_to_backend(ctx, before[0], host, 8),
                    "te_rt_copy_to_backend: cannot copy from the host while "
                    "capturing a CUDA graph (call te_rt_capture_end first)");
  EXPECT_FAILS_WITH(te_rt_synchronize(ctx),
                    "te_rt_synchronize: cannot synchronize while capturing a "
                    "CUDA graph (call te_rt_capture_end first)");
  EXPECT_FAILS_WITH(te_rt_graph_launch(ctx, graph),
                    "te_rt_graph_launch: cannot launch a graph while "
                    "capturing a CUDA graph (call te_rt_capture_end first)");
  // Not from te_rt_alloc: cudaFree would break the capture.
  te_rt_free(ctx, host);
  EXPECT_EQ(lastError(), "te_rt_free: cannot cudaFree a buffer that "
                         "te_rt_alloc did not hand out while capturing a CUDA "
                         "graph (call te_rt_capture_end first)");
  // Freed during the capture: the graph keeps it, the cache stays empty.
  te_rt_free(ctx, before[0]);
  EXPECT_TRUE(cuda.cudaCached.empty());
  EXPECT_EQ(cuda.graphOwned.count(before[0]), 1u);
  cuda.capturing = nullptr;
  // Freed again after the capture: still the graph's.
  te_rt_free(ctx, before[0]);
  EXPECT_TRUE(cuda.cudaCached.empty());
  // Without a capture, te_rt_free parks a buffer as before.
  te_rt_free(ctx, before[1]);
  EXPECT_EQ(cuda.cudaCached.size(), 1u);
  // Destroying the graph parks its buffer; freeing it once more is an error.
  te_rt_graph_destroy(graph);
  EXPECT_TRUE(cuda.graphOwned.empty());
  EXPECT_EQ(cuda.cudaCached.size(), 2u);
  EXPECT_TRUE(cuda.cudaLive.empty());
  te_rt_free(ctx, before[0]);
  EXPECT_EQ(lastError(), "te_rt_free: ptr was already freed (or released by "
                         "te_rt_graph_destroy)");
  EXPECT_EQ(cuda.cudaCached.size(), 2u);
}

TEST(AbiCuda, ArgumentChecksComeFirstOnCuda) {
  // A context on the cuda backend, built by hand so that this runs without
  // a GPU: the primitives refuse bad arguments with the cpu path's messages
  // before queuing anything (CudaAbiTest.cpp runs them on a device).
  te_rt_context cuda;
  cuda.backend = TE_RT_BACKEND_CUDA;
  te_rt_context *ctx = &cuda;
  float b[8] = {}, s[2] = {};
  float *p = b;
  const int32_t f32 = TE_RT_DTYPE_F32;
  EXPECT_FAILS_WITH(te_rt_norm_fwd(ctx, TE_RT_NORM_LAYERNORM, f32, nullptr, p,
                                   p, 1e-5, 0, 2, 2, p, s, s),
                    "te_rt_norm_fwd: x is NULL");
  EXPECT_FAILS_WITH(te_rt_norm_bwd(ctx, TE_RT_NORM_RMSNORM, f32, p, p, s, s, p,
                                   0, 2, 2, p, p, p),
                    "te_rt_norm_bwd: dbeta must be NULL for RMSNorm");
  EXPECT_FAILS_WITH(te_rt_gemm_fprop(ctx, f32, nullptr, p, p, p, 2, 2, 2),
                    "te_rt_gemm_fprop: x is NULL");
  EXPECT_FAILS_WITH(te_rt_gemm_dgrad(ctx, f32, p, p, p, -1, 2, 2),
                    "te_rt_gemm_dgrad: m must be >= 0, got -1");
  EXPECT_FAILS_WITH(te_rt_gemm_wgrad(ctx, f32, p, p, p, p, 2, 2, 2, 2),
                    "te_rt_gemm_wgrad: accumulate must be 0 or 1, got 2");
  EXPECT_FAILS_WITH(
      te_rt_act_fwd(ctx, TE_RT_ACT_SWIGLU, f32, p, p, 1, 3, 0, 0, 0, nullptr),
      "te_rt_act_fwd: gated activation swiglu needs an even number of "
      "columns, got 3");
  EXPECT_FAILS_WITH(te_rt_act_bwd(ctx, TE_RT_ACT_GELU, f32, nullptr, p, p, 2, 2,
                                  0, 0, 0, nullptr),
                    "te_rt_act_bwd: dy is NULL");
  EXPECT_FAILS_WITH(te_rt_dbias_dact(ctx, TE_RT_ACT_GEGLU, f32, p, p, p, p, 2,
                                     2, 0, 0, 0, nullptr),
                    "te_rt_dbias_dact: gated activation geglu has no fused "
                    "dbias + dact");
  EXPECT_FAILS_WITH(te_rt_bias_grad(ctx, 7, p, p, 2, 2),
                    "te_rt_bias_grad: unknown dtype 7 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(te_rt_add(ctx, f32, p, p, nullptr, 4),
                    "te_rt_add: c is NULL");
  EXPECT_FAILS_WITH(te_rt_cast(ctx, f32, 9, p, p, 4),
                    "te_rt_cast: unknown dst_dtype 9 (0 f32, 1 bf16, 2 f16)");
  EXPECT_FAILS_WITH(te_rt_transpose(ctx, f32, p, p + 1, 2, 2),
                    "te_rt_transpose: dst and src overlap");
  EXPECT_EQ(te_rt_context_backend(ctx), TE_RT_BACKEND_CUDA);
}

TEST(AbiCuda, NVFP4NeedsBlackwell) {
  // On a cuda context (built by hand: no GPU needed, the calls refuse
  // before any CUDA call) the NVFP4 calls check their arguments, then fail
  // with a message naming the recipe, the architectures and the way out;
  // te_rt_context_set_seed and te_rt_nvfp4_random_bits work on every
  // backend.
  te_rt_context cuda;
  cuda.backend = TE_RT_BACKEND_CUDA;
  te_rt_context *ctx = &cuda;
  const std::string refusal =
      "NVFP4 is a Blackwell (sm_100+) recipe: its GEMMs need FP4 (E2M1) "
      "tensor cores with E4M3 block scales, which Hopper lacks, and this "
      "build's cuda backend targets Hopper (sm_90); use the cpu backend";
  float f[256] = {}, am = 0;
  uint8_t q[512] = {};
  EXPECT_FAILS_WITH(te_rt_quantize_nvfp4(ctx, TE_RT_DTYPE_F32, f, 16, 16, 0, 1,
                                         1, 0, 1, q, q, &am, q, q, &am),
                    "te_rt_quantize_nvfp4: " + refusal);
  EXPECT_FAILS_WITH(te_rt_gemm_nvfp4(ctx, TE_RT_DTYPE_BF16, q, q, &am, q, q,
                                     &am, 0, nullptr, f, 16, 16, 16, 0),
                    "te_rt_gemm_nvfp4: " + refusal);
  // Bad arguments are reported first, with the cpu path's messages.
  EXPECT_FAILS_WITH(te_rt_quantize_nvfp4(ctx, TE_RT_DTYPE_F32, f, 16, 16, 0, 1,
                                         0, 0, 0, q, q, &am, nullptr, nullptr,
                                         nullptr),
                    "te_rt_quantize_nvfp4: rht needs the columnwise copy "
                    "(columnwise_data is NULL): the transform applies to the "
                    "columnwise data only");
  EXPECT_FAILS_WITH(te_rt_gemm_nvfp4(ctx, TE_RT_DTYPE_F32, q, q, &am, q, q, &am,
                                     0, nullptr, f, 16, 16, 8, 0),
                    "te_rt_gemm_nvfp4: k must be a multiple of 16 (NVFP4 "
                    "blocks), got 8");
  EXPECT_EQ(te_rt_context_set_seed(ctx, 42), 0);
  EXPECT_EQ(cuda.seed, 42u);
  EXPECT_EQ(te_rt_nvfp4_random_bits(0, 0, 0, 0), 0xE220A839u);
}

} // namespace
