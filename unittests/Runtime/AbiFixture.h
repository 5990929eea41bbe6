//===- AbiFixture.h - shared fixture of the runtime ABI tests ---*- C++ -*-===//
//
// What every Abi*Test.cpp uses: the cpu-context fixture `Abi`, ScopedEnv,
// bf16/f16 conversions of test vectors, exactly representable random
// inputs, the byte helpers of the amax and quantize tests and
// EXPECT_FAILS_WITH. In a named namespace, so that the fixture is one type
// for all files (GoogleTest requires it per test suite). The tests:
// The te_rt_* context, buffer and compute calls through the C ABI:
// hand-computed cases of every primitive, bf16/f16 rounding, reduced-
// precision results equal to the fp32 result rounded once, and the exact
// message of every argument check.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_UNITTESTS_ABIFIXTURE_H
#define TE_RUNTIME_UNITTESTS_ABIFIXTURE_H

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

namespace te::test {

using namespace te::cpu;

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

inline std::string lastError() { return te_rt_last_error(); }

inline std::vector<uint16_t> toBF16(const std::vector<float> &v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = floatToBF16(v[i]);
  return out;
}
inline std::vector<uint16_t> toF16(const std::vector<float> &v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = floatToF16(v[i]);
  return out;
}
inline std::vector<float> fromBF16(const std::vector<uint16_t> &v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = bf16ToFloat(v[i]);
  return out;
}
inline std::vector<float> fromF16(const std::vector<uint16_t> &v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    out[i] = f16ToFloat(v[i]);
  return out;
}

/// Random values that bf16 and f16 both represent exactly (8 significant
/// bits, small exponent range), so the f32 and 16-bit calls see the same
/// inputs.
inline std::vector<float> exactRandom(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> mant(-255, 255), exp(-8, 1);
  std::vector<float> v(n);
  for (float &x : v)
    x = std::ldexp(static_cast<float>(mant(gen)), exp(gen) - 7);
  return v;
}

inline void expectNear(const float *got, std::vector<float> want, float tol,
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

/// Bytes of `v` in dtype t (rounded to nearest even for bf16/f16).
inline std::vector<uint8_t> bytesOf(int32_t t, const std::vector<float> &v) {
  // (No memcpy of an empty vector: its data() may be NULL, which memcpy
  // must not be given even for 0 bytes.)
  if (t == TE_RT_DTYPE_F32) {
    std::vector<uint8_t> b(v.size() * 4);
    if (!b.empty())
      std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  std::vector<uint16_t> h = t == TE_RT_DTYPE_BF16 ? toBF16(v) : toF16(v);
  std::vector<uint8_t> b(h.size() * 2);
  if (!b.empty())
    std::memcpy(b.data(), h.data(), b.size());
  return b;
}

/// Value i of a buffer of dtype t.
inline float valueAt(int32_t t, const void *p, size_t i) {
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
inline float storedMax(int32_t t, const void *p, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    float v = valueAt(t, p, i);
    if (!std::isnan(v))
      m = std::max(m, std::fabs(v));
  }
  return m;
}

inline const char *dtypeNameOf(int32_t t) {
  return t == TE_RT_DTYPE_F32 ? "f32" : t == TE_RT_DTYPE_BF16 ? "bf16" : "f16";
}

} // namespace te::test

#endif // TE_RUNTIME_UNITTESTS_ABIFIXTURE_H
