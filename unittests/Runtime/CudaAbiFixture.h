//===- CudaAbiFixture.h - shared fixture of the cuda ABI tests -*- C++ -*-===//
//
// What every CudaAbi*Test.cpp uses: Pair (one buffer on both backends),
// the dtype helpers, the parameterized fixture CudaAbi (a cpu and a cuda
// context, random inputs, uploads and comparisons; skipped without a CUDA
// device) and BOTH. In a named namespace, so that the fixture is one type
// for all files (GoogleTest requires it per test suite). The tests:
//
// Every compute primitive on random inputs on a cuda context and on a cpu
// context, for f32, bf16 and f16: exact where the math is exact (add, cast,
// transpose, copy, zero, relu, the FP8 quantizers, per-tensor and block-
// scaled, and the delayed-scaling update), else within fp32-rounding
// tolerances (one ulp-ish of the dtype; per-tensor FP8 GEMMs within 1e-2 of
// the largest result, block-scaled ones within a relative Frobenius error
// of 1e-3 + the dtype's unit roundoff); the producers' amax (max |output|
// as stored) and the current-scaling fusion (quantization with amax_in,
// bit for bit as the unfused one); delayed scaling's fused activation-cast
// (bit for bit as the activation then the quantization); CUDA graph capture and
// replay against the same calls run eagerly; the Blackwell recipes (MXFP8,
// NVFP4) refused with a clear message. Skipped, with a message, without a
// CUDA device.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_UNITTESTS_CUDAABIFIXTURE_H
#define TE_RUNTIME_UNITTESTS_CUDAABIFIXTURE_H

#include "te/Runtime/TERuntime.h"

#include "cpu/Convert.h"
#include "cpu/Reference.h"
#include "te_kernels/formats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using te::cpu::DType;

namespace te::test {

/// One buffer on both backends: host bytes (the cpu context's buffer) and
/// a device copy.
struct Pair {
  std::vector<uint8_t> host; // at least one byte: data() is never NULL
  void *dev = nullptr;
  int64_t size = 0;
  int64_t bytes() const { return size; }
  template <typename T> T *h() { return reinterpret_cast<T *>(host.data()); }
};

inline float toFloat(int32_t dtype, const uint8_t *p, int64_t i) {
  uint16_t h;
  switch (dtype) {
  case TE_RT_DTYPE_F32: {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  }
  case TE_RT_DTYPE_BF16:
    std::memcpy(&h, p + 2 * i, 2);
    return te::cpu::bf16ToFloat(h);
  default:
    std::memcpy(&h, p + 2 * i, 2);
    return te::cpu::f16ToFloat(h);
  }
}

inline int64_t sizeOf(int32_t dtype) {
  return dtype == TE_RT_DTYPE_F32 ? 4 : 2;
}

inline const char *dtypeName(int32_t dtype) {
  return dtype == TE_RT_DTYPE_F32    ? "f32"
         : dtype == TE_RT_DTYPE_BF16 ? "bf16"
                                     : "f16";
}

/// One cuda context for a test, skipped (saying what is not exercised)
/// without a CUDA device; the buffers alloc() hands out are freed with it.
class CudaContextTest : public ::testing::Test {
protected:
  explicit CudaContextTest(const char *notExercised)
      : notExercised(notExercised) {}
  void SetUp() override {
    if (!te_rt_backend_available(TE_RT_BACKEND_CUDA))
      GTEST_SKIP() << "no CUDA device visible: " << notExercised
                   << " are not exercised here";
    gpu = te_rt_context_create(TE_RT_BACKEND_CUDA);
    ASSERT_NE(gpu, nullptr) << te_rt_last_error();
  }
  void TearDown() override {
    for (void *p : buffers)
      te_rt_free(gpu, p);
    te_rt_context_destroy(gpu);
  }
  void *alloc(int64_t bytes) {
    void *p = te_rt_alloc(gpu, bytes);
    EXPECT_NE(p, nullptr) << te_rt_last_error();
    buffers.push_back(p);
    return p;
  }
  template <typename T> void put(void *dev, const std::vector<T> &host) {
    ASSERT_EQ(te_rt_copy_to_backend(gpu, dev, host.data(),
                                    int64_t(host.size() * sizeof(T))),
              0)
        << te_rt_last_error();
  }
  /// The device bytes, after the context's queued work.
  std::vector<uint8_t> get(const void *dev, int64_t bytes) {
    std::vector<uint8_t> host(static_cast<size_t>(bytes));
    EXPECT_EQ(te_rt_synchronize(gpu), 0) << te_rt_last_error();
    EXPECT_EQ(te_rt_copy_to_host(gpu, host.data(), dev, bytes), 0)
        << te_rt_last_error();
    return host;
  }
  std::string lastError() { return te_rt_last_error(); }

  const char *notExercised;
  te_rt_context *gpu = nullptr;
  std::vector<void *> buffers;
};

class CudaAbi : public ::testing::TestWithParam<int32_t> {
protected:
  void SetUp() override {
    if (!te_rt_backend_available(TE_RT_BACKEND_CUDA))
      GTEST_SKIP() << "no CUDA device visible: the cuda backend is not "
                      "compared with the cpu backend here";
    cpu = te_rt_context_create(TE_RT_BACKEND_CPU);
    gpu = te_rt_context_create(TE_RT_BACKEND_CUDA);
    ASSERT_NE(cpu, nullptr) << te_rt_last_error();
    ASSERT_NE(gpu, nullptr) << te_rt_last_error();
  }
  void TearDown() override {
    for (Pair *p : pairs)
      te_rt_free(gpu, p->dev), delete p;
    te_rt_context_destroy(gpu);
    te_rt_context_destroy(cpu);
  }

  /// A buffer of n elements of `dtype`, uniform in [lo, hi] (rounded to the
  /// dtype), the same on both backends.
  Pair &random(int32_t dtype, int64_t n, float lo = -2.0f, float hi = 2.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    Pair &p = make(n * sizeOf(dtype));
    for (int64_t i = 0; i < n; ++i) {
      float v = dist(rng);
      if (dtype == TE_RT_DTYPE_F32)
        p.h<float>()[i] = v;
      else if (dtype == TE_RT_DTYPE_BF16)
        p.h<uint16_t>()[i] = te::cpu::floatToBF16(v);
      else
        p.h<uint16_t>()[i] = te::cpu::floatToF16(v);
    }
    upload(p);
    return p;
  }
  /// Output buffers start as the same garbage (0x5a bytes) on both sides.
  Pair &output(int64_t bytes) {
    Pair &p = make(bytes);
    std::fill(p.host.begin(), p.host.end(), 0x5a);
    upload(p);
    return p;
  }
  Pair &make(int64_t bytes) {
    pairs.push_back(new Pair);
    Pair &p = *pairs.back();
    p.size = bytes;
    p.host.resize(static_cast<size_t>(std::max<int64_t>(bytes, 1)));
    p.dev = te_rt_alloc(gpu, bytes);
    EXPECT_NE(p.dev, nullptr) << te_rt_last_error();
    return p;
  }
  void upload(Pair &p) {
    EXPECT_EQ(te_rt_copy_to_backend(gpu, p.dev, p.host.data(), p.bytes()), 0)
        << te_rt_last_error();
  }

  /// Compares the device result with the host one: |g - c| <= tol * (|c| +
  /// max|c|) elementwise, or bit for bit when tol < 0. Prints the errors.
  void expectClose(const char *what, int32_t dtype, Pair &p, double tol) {
    std::vector<uint8_t> got(p.host.size());
    got[0] = p.host[0]; // when empty, the byte no call writes
    ASSERT_EQ(te_rt_synchronize(gpu), 0) << te_rt_last_error();
    ASSERT_EQ(te_rt_copy_to_host(gpu, got.data(), p.dev, p.bytes()), 0)
        << te_rt_last_error();
    int64_t n = p.bytes() / sizeOf(dtype);
    if (tol < 0) {
      int64_t diff = 0;
      for (size_t i = 0; i < got.size(); ++i)
        diff += got[i] != p.host[i];
      EXPECT_EQ(diff, 0) << what << " (" << dtypeName(dtype)
                         << "): bytes differ from the cpu backend";
      std::printf("  %-28s %-4s n=%-8lld exact: %s\n", what, dtypeName(dtype),
                  static_cast<long long>(n), diff ? "NO" : "yes");
      return;
    }
    double maxRef = 0, maxAbs = 0, maxRel = 0;
    for (int64_t i = 0; i < n; ++i)
      maxRef =
          std::max(maxRef, std::fabs(double(toFloat(dtype, p.host.data(), i))));
    int64_t bad = 0, firstBad = -1;
    for (int64_t i = 0; i < n; ++i) {
      double c = toFloat(dtype, p.host.data(), i);
      double g = toFloat(dtype, got.data(), i);
      double err = std::fabs(g - c);
      if (!(err <= tol * (std::fabs(c) + maxRef))) {
        if (!bad++)
          firstBad = i;
      }
      maxAbs = std::max(maxAbs, err);
      maxRel = std::max(maxRel, err / (std::fabs(c) + 1e-30));
    }
    std::printf("  %-28s %-4s n=%-8lld max|err|=%.3g (max|ref|=%.3g, "
                "max err/|ref|=%.3g)\n",
                what, dtypeName(dtype), static_cast<long long>(n), maxAbs,
                maxRef, maxRel);
    EXPECT_EQ(bad, 0)
        << what << " (" << dtypeName(dtype) << "): " << bad << " of " << n
        << " elements off; first at " << firstBad << ": cpu "
        << toFloat(dtype, p.host.data(), firstBad >= 0 ? firstBad : 0)
        << " cuda " << toFloat(dtype, got.data(), firstBad >= 0 ? firstBad : 0);
  }

  /// About one ulp of the dtype after fp32 math that differs in order.
  double ulpTol(int32_t dtype, double f32Tol) {
    return dtype == TE_RT_DTYPE_F32    ? f32Tol
           : dtype == TE_RT_DTYPE_BF16 ? 1.0 / 128
                                       : 1.0 / 1024;
  }

  /// Compares the device bytes with the host ones, bit for bit.
  void expectBytes(const std::string &what, Pair &p) {
    std::vector<uint8_t> got(p.host.size());
    got[0] = p.host[0];
    ASSERT_EQ(te_rt_synchronize(gpu), 0) << te_rt_last_error();
    ASSERT_EQ(te_rt_copy_to_host(gpu, got.data(), p.dev, p.bytes()), 0)
        << te_rt_last_error();
    int64_t diff = 0, first = -1;
    for (int64_t i = 0; i < p.bytes(); ++i)
      if (got[i] != p.host[i] && !diff++)
        first = i;
    EXPECT_EQ(diff, 0) << what << ": " << diff << " of " << p.bytes()
                       << " bytes differ from the cpu backend; first at "
                       << first << ": cpu "
                       << int(p.host[first >= 0 ? first : 0]) << " cuda "
                       << int(got[first >= 0 ? first : 0]);
    std::printf("  %-52s bytes=%-8lld exact: %s\n", what.c_str(),
                static_cast<long long>(p.bytes()), diff ? "NO" : "yes");
  }

  /// FP8 GEMM results: max |g - c| <= 1e-2 * max |c| (+ 1e-6), no NaN.
  void expectGemmClose(const std::string &what, int32_t dtype, Pair &p) {
    std::vector<uint8_t> got(p.host.size());
    ASSERT_EQ(te_rt_synchronize(gpu), 0) << te_rt_last_error();
    ASSERT_EQ(te_rt_copy_to_host(gpu, got.data(), p.dev, p.bytes()), 0)
        << te_rt_last_error();
    int64_t n = p.bytes() / sizeOf(dtype);
    double maxRef = 0, maxAbs = 0;
    int64_t nans = 0;
    for (int64_t i = 0; i < n; ++i) {
      double c = toFloat(dtype, p.host.data(), i);
      double g = toFloat(dtype, got.data(), i);
      maxRef = std::max(maxRef, std::fabs(c));
      if (std::isnan(g) || std::isnan(c))
        ++nans;
      else
        maxAbs = std::max(maxAbs, std::fabs(g - c));
    }
    std::printf("  %-52s %-4s max|err|=%.3g (max|ref|=%.3g)\n", what.c_str(),
                dtypeName(dtype), maxAbs, maxRef);
    EXPECT_EQ(nans, 0) << what << ": NaN results";
    EXPECT_LE(maxAbs, 1e-2 * maxRef + 1e-6)
        << what << " (" << dtypeName(dtype) << ")";
  }

  /// Block-scaled FP8 GEMM results: ||g - c||_F <= (tol + u) * ||c||_F, u
  /// the dtype's unit roundoff (bf16 2^-8, f16 2^-11, f32 0: both results
  /// are rounded once, but where they differ slightly a rounding may
  /// flip), and no NaN. The cpu value is the exact fp32 GEMM of the
  /// dequantized operands; the cuda one sums in another order, on Hopper
  /// in the tensor cores' block-scaled FP8 accumulation (fewer accumulator
  /// bits within a 128-deep block, ~2^-14 relative), so tol = 1e-3 leaves
  /// a margin while a misplaced block scale gives errors of order one.
  void expectNormClose(const std::string &what, int32_t dtype, Pair &p,
                       double tol) {
    std::vector<uint8_t> got(p.host.size());
    ASSERT_EQ(te_rt_synchronize(gpu), 0) << te_rt_last_error();
    ASSERT_EQ(te_rt_copy_to_host(gpu, got.data(), p.dev, p.bytes()), 0)
        << te_rt_last_error();
    int64_t n = p.bytes() / sizeOf(dtype), nans = 0;
    double errSq = 0, refSq = 0;
    for (int64_t i = 0; i < n; ++i) {
      double c = toFloat(dtype, p.host.data(), i);
      double g = toFloat(dtype, got.data(), i);
      if (std::isnan(g) || std::isnan(c))
        ++nans;
      else
        errSq += (g - c) * (g - c), refSq += c * c;
    }
    const double u = dtype == TE_RT_DTYPE_F32    ? 0.0
                     : dtype == TE_RT_DTYPE_BF16 ? 1.0 / 256
                                                 : 1.0 / 2048;
    const double rel = std::sqrt(errSq / std::max(refSq, 1e-300));
    std::printf("  %-52s %-4s ||err||/||ref||=%.3g (bound %.3g)\n",
                what.c_str(), dtypeName(dtype), rel, tol + u);
    EXPECT_EQ(nans, 0) << what << ": NaN results";
    EXPECT_LE(rel, tol + u) << what << " (" << dtypeName(dtype) << ")";
  }

  /// n random finite FP8 codes of `format` with |value| <= 16.
  Pair &randomFp8(int32_t format, int64_t n) {
    Pair &p = make(n);
    for (int64_t i = 0; i < n; ++i)
      for (;;) {
        uint8_t b = static_cast<uint8_t>(rng());
        float v = format == TE_RT_FP8_E4M3 ? te::formats::e4m3ToFloat(b)
                                           : te::formats::e5m2ToFloat(b);
        if (std::isfinite(v) && std::fabs(v) <= 16.0f) {
          p.host[i] = b;
          break;
        }
      }
    upload(p);
    return p;
  }

  /// The device bytes of p (after the queued work).
  std::vector<uint8_t> download(const Pair &p) {
    std::vector<uint8_t> got(p.host.size());
    EXPECT_EQ(te_rt_synchronize(gpu), 0) << te_rt_last_error();
    EXPECT_EQ(te_rt_copy_to_host(gpu, got.data(), p.dev, p.bytes()), 0)
        << te_rt_last_error();
    return got;
  }

  /// One fp32 value on both backends.
  Pair &scalar(float v) {
    Pair &p = make(4);
    std::memcpy(p.host.data(), &v, 4);
    upload(p);
    return p;
  }

  te_rt_context *cpu = nullptr, *gpu = nullptr;
  std::mt19937 rng{1234};
  std::vector<Pair *> pairs;
};

#define BOTH(call_cpu, call_gpu)                                               \
  do {                                                                         \
    ASSERT_EQ(call_cpu, 0) << te_rt_last_error();                              \
    ASSERT_EQ(call_gpu, 0) << te_rt_last_error();                              \
  } while (0)

} // namespace te::test

#endif // TE_RUNTIME_UNITTESTS_CUDAABIFIXTURE_H
