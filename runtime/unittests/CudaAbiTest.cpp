//===- CudaAbiTest.cpp - The cuda backend against the cpu backend -*- C++
//-*-===//
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

namespace {

/// One buffer on both backends: host bytes (the cpu context's buffer) and
/// a device copy.
struct Pair {
  std::vector<uint8_t> host; // at least one byte: data() is never NULL
  void *dev = nullptr;
  int64_t size = 0;
  int64_t bytes() const { return size; }
  template <typename T> T *h() { return reinterpret_cast<T *>(host.data()); }
};

float toFloat(int32_t dtype, const uint8_t *p, int64_t i) {
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

int64_t sizeOf(int32_t dtype) { return dtype == TE_RT_DTYPE_F32 ? 4 : 2; }

const char *dtypeName(int32_t dtype) {
  return dtype == TE_RT_DTYPE_F32    ? "f32"
         : dtype == TE_RT_DTYPE_BF16 ? "bf16"
                                     : "f16";
}

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

TEST_P(CudaAbi, Norms) {
  int32_t t = GetParam();
  // The kernels' fast path (cols a multiple of 16 bytes, up to 16384
  // bf16/f16 or 8192 f32; rows held in registers, dgamma/dbeta partials
  // per CTA) and its generic fallback (other widths): 1 to 2048 rows.
  struct Case {
    int64_t rows, cols;
  } cases[] = {{37, 1000}, {300, 4096}, {5, 7},     {1, 4096},
               {3, 1024},  {8, 768},    {3, 4104},  {4, 33},
               {2, 8192},  {2, 16384},  {2, 20000}, {2048, 1024}};
  for (Case cs : cases)
    for (int32_t kind : {TE_RT_NORM_LAYERNORM, TE_RT_NORM_RMSNORM})
      for (int32_t zc : {0, 1}) {
        bool ln = kind == TE_RT_NORM_LAYERNORM;
        int64_t n = cs.rows * cs.cols;
        Pair &x = random(t, n, -3, 5), &g = random(t, cs.cols, -1, 1);
        Pair *b = ln ? &random(t, cs.cols) : nullptr;
        Pair &z = output(n * sizeOf(t));
        Pair *mu = ln ? &output(cs.rows * 4) : nullptr;
        Pair &rs = output(cs.rows * 4);
        BOTH(te_rt_norm_fwd(cpu, kind, t, x.host.data(), g.host.data(),
                            b ? b->host.data() : nullptr, 1e-5, zc, cs.rows,
                            cs.cols, z.host.data(),
                            mu ? mu->h<float>() : nullptr, rs.h<float>()),
             te_rt_norm_fwd(gpu, kind, t, x.dev, g.dev, b ? b->dev : nullptr,
                            1e-5, zc, cs.rows, cs.cols, z.dev,
                            mu ? static_cast<float *>(mu->dev) : nullptr,
                            static_cast<float *>(rs.dev)));
        std::string tag = std::string(ln ? "layernorm" : "rmsnorm") +
                          (zc ? "+1" : "") + " " + std::to_string(cs.rows) +
                          "x" + std::to_string(cs.cols);
        expectClose((tag + " z").c_str(), t, z, ulpTol(t, 2e-5));
        if (mu)
          expectClose((tag + " mu").c_str(), TE_RT_DTYPE_F32, *mu, 1e-5);
        expectClose((tag + " rsigma").c_str(), TE_RT_DTYPE_F32, rs, 1e-5);
        // Backward from the cpu statistics (the same on both sides).
        Pair &dz = random(t, n);
        if (mu)
          upload(*mu);
        upload(rs);
        Pair &dx = output(n * sizeOf(t)), &dg = output(cs.cols * sizeOf(t));
        Pair *db = ln ? &output(cs.cols * sizeOf(t)) : nullptr;
        BOTH(te_rt_norm_bwd(cpu, kind, t, dz.host.data(), x.host.data(),
                            mu ? mu->h<float>() : nullptr, rs.h<float>(),
                            g.host.data(), zc, cs.rows, cs.cols, dx.host.data(),
                            dg.host.data(), db ? db->host.data() : nullptr),
             te_rt_norm_bwd(gpu, kind, t, dz.dev, x.dev,
                            mu ? static_cast<float *>(mu->dev) : nullptr,
                            static_cast<float *>(rs.dev), g.dev, zc, cs.rows,
                            cs.cols, dx.dev, dg.dev, db ? db->dev : nullptr));
        expectClose((tag + " dx").c_str(), t, dx, ulpTol(t, 1e-4));
        expectClose((tag + " dgamma").c_str(), t, dg, ulpTol(t, 1e-4));
        if (db)
          expectClose((tag + " dbeta").c_str(), t, *db, ulpTol(t, 1e-4));
      }
}

TEST_P(CudaAbi, Gemms) {
  int32_t t = GetParam();
  struct Case {
    int64_t m, n, k;
  } cases[] = {
      {70, 96, 130}, {256, 512, 1024}, {1, 3, 5}, {0, 8, 8}, {8, 8, 0},
      // bf16/f16 wgrad of <= 64 tokens without accumulate: the skinny
      // kernel (whole and partial 128x128 tiles and 16-token chunks; 24 x 8
      // x 300000: 2344 column tiles over ~16 blocks per SM, so blocks walk
      // two tiles, the last one partial; 65 tokens: cuBLASLt again)
      {16, 512, 1024}, {5, 136, 264}, {64, 256, 128}, {40, 8, 8},
      {24, 16384, 1000}, {24, 8, 300000}, {65, 64, 64}};
  for (Case cs : cases) {
    int64_t m = cs.m, n = cs.n, k = cs.k;
    double tol = ulpTol(t, 1e-5 * std::sqrt(double(std::max<int64_t>(k, m))));
    std::string tag =
        std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    Pair &x = random(t, m * k), &w = random(t, n * k), &bias = random(t, n);
    Pair &dy = random(t, m * n);
    for (bool withBias : {false, true}) {
      Pair &y = output(m * n * sizeOf(t));
      BOTH(te_rt_gemm_fprop(cpu, t, x.host.data(), w.host.data(),
                            withBias ? bias.host.data() : nullptr,
                            y.host.data(), m, n, k),
           te_rt_gemm_fprop(gpu, t, x.dev, w.dev, withBias ? bias.dev : nullptr,
                            y.dev, m, n, k));
      expectClose(("fprop " + tag + (withBias ? " +bias" : "")).c_str(), t, y,
                  tol);
    }
    Pair &dx = output(m * k * sizeOf(t));
    BOTH(te_rt_gemm_dgrad(cpu, t, dy.host.data(), w.host.data(), dx.host.data(),
                          m, n, k),
         te_rt_gemm_dgrad(gpu, t, dy.dev, w.dev, dx.dev, m, n, k));
    expectClose(("dgrad " + tag).c_str(), t, dx, tol);
    for (int32_t acc : {0, 1})
      for (bool withDbias : {false, true}) {
        Pair &dw = random(t, n * k);
        Pair &db = output(n * sizeOf(t));
        BOTH(te_rt_gemm_wgrad(
                 cpu, t, dy.host.data(), x.host.data(), dw.host.data(),
                 withDbias ? db.host.data() : nullptr, m, n, k, acc),
             te_rt_gemm_wgrad(gpu, t, dy.dev, x.dev, dw.dev,
                              withDbias ? db.dev : nullptr, m, n, k, acc));
        std::string wt = "wgrad " + tag + (acc ? " acc" : "");
        expectClose(wt.c_str(), t, dw, tol);
        if (withDbias)
          expectClose((wt + " dbias").c_str(), t, db, tol);
      }
  }
}

TEST_P(CudaAbi, GemmActEpilogues) {
  // GELU_AUX_BIAS / DGELU against the cpu backend's fp32 GEMM + GELU. The
  // odd shapes have no aligned epilogue algorithm and take the unfused
  // fallback; the rest run cuBLASLt's epilogue.
  int32_t t = GetParam();
  struct Case {
    int64_t m, n, k;
  } cases[] = {{70, 96, 130}, {256, 512, 1024}, {1, 3, 5}, {0, 8, 8},
               {8, 8, 0}};
  for (Case cs : cases) {
    int64_t m = cs.m, n = cs.n, k = cs.k;
    double tol = ulpTol(t, 1e-5 * std::sqrt(double(std::max<int64_t>(k, m))));
    // cuBLASLt's GELU may use a faster tanh than the cpu's tanhf.
    double actTol = std::max(tol, 2e-3);
    std::string tag =
        std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    Pair &x = random(t, m * k, -0.5f, 0.5f), &w = random(t, n * k, -0.5f, 0.5f);
    Pair &bias = random(t, n), &dy = random(t, m * n);
    Pair &pre = random(t, m * k, -3.0f, 3.0f);
    for (bool withBias : {false, true})
      for (bool withAux : {false, true}) {
        Pair &y = output(m * n * sizeOf(t)), &aux = output(m * n * sizeOf(t));
        BOTH(te_rt_gemm_fprop_act(cpu, TE_RT_ACT_GELU, t, x.host.data(),
                                  w.host.data(),
                                  withBias ? bias.host.data() : nullptr,
                                  y.host.data(),
                                  withAux ? aux.host.data() : nullptr, m, n, k),
             te_rt_gemm_fprop_act(gpu, TE_RT_ACT_GELU, t, x.dev, w.dev,
                                  withBias ? bias.dev : nullptr, y.dev,
                                  withAux ? aux.dev : nullptr, m, n, k));
        std::string ft = "fprop_act " + tag + (withBias ? " +bias" : "") +
                         (withAux ? " +aux" : "");
        expectClose(ft.c_str(), t, y, actTol);
        if (withAux)
          expectClose((ft + " aux").c_str(), t, aux, tol);
      }
    Pair &dx = output(m * k * sizeOf(t));
    BOTH(te_rt_gemm_dgrad_dact(cpu, TE_RT_ACT_GELU, t, dy.host.data(),
                               w.host.data(), pre.host.data(), dx.host.data(),
                               m, n, k),
         te_rt_gemm_dgrad_dact(gpu, TE_RT_ACT_GELU, t, dy.dev, w.dev, pre.dev,
                               dx.dev, m, n, k));
    expectClose(("dgrad_dact " + tag).c_str(), t, dx, actTol);
  }
}

const char *const kActs[] = {
    "gelu",  "geglu",  "glu",  "qgelu",  "qgeglu",         "relu",    "reglu",
    "srelu", "sreglu", "silu", "swiglu", "clamped_swiglu", "gelu_erf"};

TEST_P(CudaAbi, Activations) {
  int32_t t = GetParam();
  const int64_t rows = 33, cols = 258, n = rows * cols;
  const float limit = 1.5f, alpha = 1.702f, offset = 1.0f;
  for (int32_t act = TE_RT_ACT_GELU; act <= TE_RT_ACT_GELU_ERF; ++act) {
    bool gated = te::cpu::isGated(static_cast<te::cpu::Activation>(act));
    bool exact = act == TE_RT_ACT_RELU;
    int64_t yn = gated ? n / 2 : n;
    Pair &x = random(t, n, -4, 4), &dy = random(t, yn);
    Pair &y = output(yn * sizeOf(t)), &dx = output(n * sizeOf(t));
    BOTH(te_rt_act_fwd(cpu, act, t, x.host.data(), y.host.data(), rows, cols,
                       limit, alpha, offset, nullptr),
         te_rt_act_fwd(gpu, act, t, x.dev, y.dev, rows, cols, limit, alpha,
                       offset, nullptr));
    BOTH(te_rt_act_bwd(cpu, act, t, dy.host.data(), x.host.data(),
                       dx.host.data(), rows, cols, limit, alpha, offset,
                       nullptr),
         te_rt_act_bwd(gpu, act, t, dy.dev, x.dev, dx.dev, rows, cols, limit,
                       alpha, offset, nullptr));
    std::string name = kActs[act];
    expectClose((name + " fwd").c_str(), t, y, exact ? -1 : ulpTol(t, 1e-5));
    expectClose((name + " bwd").c_str(), t, dx, exact ? -1 : ulpTol(t, 1e-5));
    if (gated)
      continue;
    Pair &dx2 = output(n * sizeOf(t)), &db = output(cols * sizeOf(t));
    BOTH(te_rt_dbias_dact(cpu, act, t, dy.host.data(), x.host.data(),
                          dx2.host.data(), db.host.data(), rows, cols, limit,
                          alpha, offset, nullptr),
         te_rt_dbias_dact(gpu, act, t, dy.dev, x.dev, dx2.dev, db.dev, rows,
                          cols, limit, alpha, offset, nullptr));
    expectClose((name + " dbias_dact dx").c_str(), t, dx2,
                exact ? -1 : ulpTol(t, 1e-5));
    expectClose((name + " dbias_dact dbias").c_str(), t, db, ulpTol(t, 1e-4));
  }
}

/// max |value| over a buffer of `dtype` values, NaN skipped.
float storedMax(int32_t dtype, const std::vector<uint8_t> &bytes, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    float v = toFloat(dtype, bytes.data(), i);
    if (!std::isnan(v))
      m = std::max(m, std::fabs(v));
  }
  return m;
}

// The producers' amax (te_rt_act_fwd / te_rt_act_bwd / te_rt_dbias_dact),
// on the vectorized kernels (aligned rows of whole 16-byte vectors; the
// fused dbias + dact kernel with threads past the last column) and the
// element-wise ones (ragged rows): the outputs are the bytes of the same
// call without an amax, the amax is max |output| as stored, and the cpu's
// where the outputs are exact (relu: the same bits), within the outputs'
// tolerance elsewhere. Then the current-scaling fusion: the cuda
// quantization of the cuda output with its amax as amax_in gives the bytes
// and scale_inv of the unfused cuda quantization and of the cpu one (on
// the same input and amax_in).
TEST_P(CudaAbi, ProducerAmaxAndFusedQuantize) {
  int32_t t = GetParam();
  const float limit = 1.5f, alpha = 1.702f, offset = 1.0f;
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{33, 258}, {192, 1024}}) {
    const int64_t n = rows * cols;
    for (int32_t act = TE_RT_ACT_GELU; act <= TE_RT_ACT_GELU_ERF; ++act) {
      bool gated = te::cpu::isGated(static_cast<te::cpu::Activation>(act));
      bool exact = act == TE_RT_ACT_RELU;
      int64_t yn = gated ? n / 2 : n;
      std::string name = std::string(kActs[act]) + " " + std::to_string(rows) +
                         "x" + std::to_string(cols);
      Pair &x = random(t, n, -4, 4), &dy = random(t, yn);
      // One producer: with an amax on both backends, without on cuda; the
      // cuda output and amax are kept in *keep, *keepAmax when given.
      auto check = [&](const std::string &what, int64_t outN, auto call,
                       std::vector<uint8_t> *keep = nullptr,
                       float *keepAmax = nullptr) {
        Pair &o = output(outN * sizeOf(t)), &o0 = output(outN * sizeOf(t));
        Pair &am = output(4);
        BOTH(call(cpu, o.host.data(), am.h<float>()),
             call(gpu, o.dev, static_cast<float *>(am.dev)));
        ASSERT_EQ(call(gpu, o0.dev, nullptr), 0) << te_rt_last_error();
        std::vector<uint8_t> got = download(o), got0 = download(o0),
                             gotAm = download(am);
        float gpuAmax;
        std::memcpy(&gpuAmax, gotAm.data(), 4);
        EXPECT_EQ(got, got0) << what << ": the amax changed the output";
        EXPECT_EQ(gpuAmax, storedMax(t, got, outN))
            << what << ": cuda amax is not max |output|";
        if (exact) {
          expectBytes(what + " output", o);
          expectBytes(what + " amax", am);
        } else {
          float cpuAmax = am.h<float>()[0];
          EXPECT_NEAR(gpuAmax, cpuAmax, 2 * ulpTol(t, 1e-5) * cpuAmax)
              << what << " amax";
        }
        std::printf("  %-52s %-4s amax=%g (cpu %g)\n", what.c_str(),
                    dtypeName(t), gpuAmax, am.h<float>()[0]);
        if (keep)
          *keep = got, *keepAmax = gpuAmax;
      };
      std::vector<uint8_t> y;
      float yAmax = 0;
      check(
          name + " fwd", yn,
          [&](te_rt_context *c, void *out, float *amax) {
            bool g = c == gpu;
            return te_rt_act_fwd(c, act, t, g ? x.dev : x.host.data(), out,
                                 rows, cols, limit, alpha, offset, amax);
          },
          &y, &yAmax);
      check(name + " bwd", n, [&](te_rt_context *c, void *out, float *amax) {
        bool g = c == gpu;
        return te_rt_act_bwd(c, act, t, g ? dy.dev : dy.host.data(),
                             g ? x.dev : x.host.data(), out, rows, cols, limit,
                             alpha, offset, amax);
      });
      if (!gated) {
        Pair &db = output(cols * sizeOf(t));
        check(name + " dbias_dact", n,
              [&](te_rt_context *c, void *out, float *amax) {
                bool g = c == gpu;
                return te_rt_dbias_dact(c, act, t, g ? dy.dev : dy.host.data(),
                                        g ? x.dev : x.host.data(), out,
                                        g ? db.dev : db.host.data(), rows, cols,
                                        limit, alpha, offset, amax);
              });
      }
      // The fusion, on the cuda output y and its amax.
      if (HasFatalFailure())
        return;
      Pair &in = make(yn * sizeOf(t)), &given = scalar(yAmax);
      std::copy(y.begin(), y.end(), in.host.begin());
      upload(in);
      const int64_t qRows = rows, qCols = gated ? cols / 2 : cols;
      Pair &q1 = output(yn), &t1 = output(yn), &si1 = output(4);
      Pair &q2 = output(yn), &t2 = output(yn), &si2 = output(4);
      ASSERT_EQ(te_rt_quantize_fp8(gpu, t, in.dev, qRows, qCols, TE_RT_FP8_E4M3,
                                   nullptr, 0, q1.dev, t1.dev,
                                   static_cast<float *>(si1.dev), nullptr,
                                   nullptr),
                0)
          << te_rt_last_error();
      BOTH(te_rt_quantize_fp8(cpu, t, in.host.data(), qRows, qCols,
                              TE_RT_FP8_E4M3, nullptr, 0, q2.host.data(),
                              t2.host.data(), si2.h<float>(), nullptr,
                              given.h<float>()),
           te_rt_quantize_fp8(gpu, t, in.dev, qRows, qCols, TE_RT_FP8_E4M3,
                              nullptr, 0, q2.dev, t2.dev,
                              static_cast<float *>(si2.dev), nullptr,
                              static_cast<float *>(given.dev)));
      EXPECT_EQ(download(q2), download(q1)) << name << ": fused data";
      EXPECT_EQ(download(t2), download(t1)) << name << ": fused transpose";
      EXPECT_EQ(download(si2), download(si1)) << name << ": fused scale_inv";
      expectBytes(name + " fused quantize data", q2);
      expectBytes(name + " fused quantize transpose", t2);
      expectBytes(name + " fused quantize scale_inv", si2);
    }
  }
}

// Delayed scaling's fused activation-cast (te_rt_act_quantize_fp8 /
// te_rt_dact_quantize_fp8): on cuda, the data, transpose, scale_inv and
// amax bytes of the producer's stored output quantized by
// te_rt_quantize_fp8 with the same scale, for every activation, forward,
// backward and dbias + backward; dbias within the bias gradient's
// tolerance of te_rt_dbias_dact's (another summation order). Shapes: whole
// 16-byte vectors with 128-row tiles (192x1024), 64-row tiles with a
// ragged column tile (40x96), ragged and misaligned rows (33x258).
TEST_P(CudaAbi, FusedActivationCastMatchesUnfused) {
  int32_t t = GetParam();
  const float limit = 1.5f, alpha = 1.702f, offset = 1.0f;
  Pair &scale = scalar(6.0f);
  const float *sc = static_cast<const float *>(scale.dev);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{192, 1024},
                            {40, 96},
                            {33, 258}}) {
    const int64_t n = rows * cols;
    for (int32_t act = TE_RT_ACT_GELU; act <= TE_RT_ACT_GELU_ERF; ++act) {
      const bool gated =
          te::cpu::isGated(static_cast<te::cpu::Activation>(act));
      Pair &x = random(t, n, -4, 4), &dy = random(t, gated ? n / 2 : n);
      for (int kind = 0; kind < 3; ++kind) { // fwd, bwd, dbias + bwd
        if (kind == 2 && gated)
          continue;
        const int32_t fmt = kind == 0 ? TE_RT_FP8_E4M3 : TE_RT_FP8_E5M2;
        const int64_t yCols = kind == 0 && gated ? cols / 2 : cols;
        const int64_t yn = rows * yCols;
        std::string what = std::string(kActs[act]) + " " +
                           std::to_string(rows) + "x" + std::to_string(cols) +
                           (kind == 0   ? " fwd"
                            : kind == 1 ? " bwd"
                                        : " dbias+bwd");
        Pair &y = output(yn * sizeOf(t)), &db0 = output(cols * sizeOf(t));
        int32_t rc =
            kind == 0
                ? te_rt_act_fwd(gpu, act, t, x.dev, y.dev, rows, cols, limit,
                                alpha, offset, nullptr)
            : kind == 1 ? te_rt_act_bwd(gpu, act, t, dy.dev, x.dev, y.dev,
                                        rows, cols, limit, alpha, offset,
                                        nullptr)
                        : te_rt_dbias_dact(gpu, act, t, dy.dev, x.dev, y.dev,
                                           db0.dev, rows, cols, limit, alpha,
                                           offset, nullptr);
        ASSERT_EQ(rc, 0) << what << ": " << te_rt_last_error();
        Pair &q0 = output(yn), &t0 = output(yn), &si0 = output(4),
             &am0 = output(4);
        ASSERT_EQ(te_rt_quantize_fp8(gpu, t, y.dev, rows, yCols, fmt, sc, 0,
                                     q0.dev, t0.dev,
                                     static_cast<float *>(si0.dev),
                                     static_cast<float *>(am0.dev), nullptr),
                  0)
            << te_rt_last_error();
        Pair &q = output(yn), &tr = output(yn), &si = output(4),
             &am = output(4), &db = output(cols * sizeOf(t));
        rc = kind == 0
                 ? te_rt_act_quantize_fp8(gpu, act, t, x.dev, rows, cols,
                                          limit, alpha, offset, fmt, sc, q.dev,
                                          tr.dev, static_cast<float *>(si.dev),
                                          static_cast<float *>(am.dev))
                 : te_rt_dact_quantize_fp8(
                       gpu, act, t, dy.dev, x.dev,
                       kind == 2 ? db.dev : nullptr, rows, cols, limit, alpha,
                       offset, fmt, sc, q.dev, tr.dev,
                       static_cast<float *>(si.dev),
                       static_cast<float *>(am.dev));
        ASSERT_EQ(rc, 0) << what << ": " << te_rt_last_error();
        EXPECT_EQ(download(q), download(q0)) << what << ": data";
        EXPECT_EQ(download(tr), download(t0)) << what << ": transpose";
        EXPECT_EQ(download(si), download(si0)) << what << ": scale_inv";
        EXPECT_EQ(download(am), download(am0)) << what << ": amax";
        if (kind == 2) {
          std::vector<uint8_t> got = download(db), want = download(db0);
          double maxRef = 0, maxErr = 0;
          for (int64_t j = 0; j < cols; ++j)
            maxRef = std::max<double>(maxRef,
                                      std::fabs(toFloat(t, want.data(), j)));
          for (int64_t j = 0; j < cols; ++j)
            maxErr = std::max<double>(maxErr,
                                      std::fabs(toFloat(t, got.data(), j) -
                                                toFloat(t, want.data(), j)));
          EXPECT_LE(maxErr, ulpTol(t, 1e-4) * maxRef) << what << ": dbias";
        }
        // Without data (transpose only) and without transpose: the same
        // bytes for the copy written.
        Pair &q2 = output(yn), &tr2 = output(yn);
        rc = kind == 0
                 ? te_rt_act_quantize_fp8(gpu, act, t, x.dev, rows, cols,
                                          limit, alpha, offset, fmt, sc,
                                          nullptr, tr2.dev,
                                          static_cast<float *>(si.dev),
                                          nullptr)
                 : te_rt_dact_quantize_fp8(
                       gpu, act, t, dy.dev, x.dev, nullptr, rows, cols, limit,
                       alpha, offset, fmt, sc, q2.dev, nullptr,
                       static_cast<float *>(si.dev), nullptr);
        ASSERT_EQ(rc, 0) << what << ": " << te_rt_last_error();
        if (kind == 0) {
          EXPECT_EQ(download(tr2), download(t0)) << what << ": transpose only";
        } else {
          EXPECT_EQ(download(q2), download(q0)) << what << ": data only";
        }
      }
    }
  }
}

// te_rt_norm_quantize_fp8 on cuda: the bytes (data, transpose, scale_inv,
// amax) and statistics of te_rt_norm_fwd then te_rt_quantize_fp8 on cuda,
// delayed scaling (FP8 rows from the norm kernel, byte transpose) and
// current scaling (amax from the norm kernel), LayerNorm and RMSNorm, on
// the fast kernel (192x1024, 40x96: a ragged transposed tile) and the row
// kernel (33x258), with the data left out (scratch rows) too.
TEST_P(CudaAbi, FusedNormCastMatchesUnfused) {
  int32_t t = GetParam();
  Pair &scale = scalar(3.0f);
  const float *sc = static_cast<const float *>(scale.dev);
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{192, 1024},
                            {40, 96},
                            {33, 258}}) {
    const int64_t n = rows * cols;
    Pair &x = random(t, n, -3, 3), &g = random(t, cols, 0.5f, 1.5f),
         &b = random(t, cols);
    for (int32_t kind : {TE_RT_NORM_LAYERNORM, TE_RT_NORM_RMSNORM})
      for (int mode = 0; mode < 2; ++mode) { // delayed, current
        const bool ln = kind == TE_RT_NORM_LAYERNORM;
        const float *s = mode == 0 ? sc : nullptr;
        std::string what = std::string(ln ? "layernorm " : "rmsnorm ") +
                           std::to_string(rows) + "x" + std::to_string(cols) +
                           (mode == 0 ? " delayed" : " current");
        Pair &z = output(n * sizeOf(t)), &mu0 = output(rows * 4),
             &rs0 = output(rows * 4);
        ASSERT_EQ(te_rt_norm_fwd(gpu, kind, t, x.dev, g.dev,
                                 ln ? b.dev : nullptr, 1e-5, 0, rows, cols,
                                 z.dev, ln ? static_cast<float *>(mu0.dev)
                                           : nullptr,
                                 static_cast<float *>(rs0.dev)),
                  0)
            << te_rt_last_error();
        Pair &q0 = output(n), &t0 = output(n), &si0 = output(4),
             &am0 = output(4);
        ASSERT_EQ(te_rt_quantize_fp8(gpu, t, z.dev, rows, cols, TE_RT_FP8_E4M3,
                                     s, 0, q0.dev, t0.dev,
                                     static_cast<float *>(si0.dev),
                                     static_cast<float *>(am0.dev), nullptr),
                  0)
            << te_rt_last_error();
        for (bool withData : {true, false}) {
          Pair &q = output(n), &tr = output(n), &si = output(4),
               &am = output(4), &mu = output(rows * 4), &rs = output(rows * 4);
          ASSERT_EQ(te_rt_norm_quantize_fp8(
                        gpu, kind, t, x.dev, g.dev, ln ? b.dev : nullptr, 1e-5,
                        0, rows, cols,
                        ln ? static_cast<float *>(mu.dev) : nullptr,
                        static_cast<float *>(rs.dev), TE_RT_FP8_E4M3, s, 0,
                        withData ? q.dev : nullptr, tr.dev,
                        static_cast<float *>(si.dev),
                        static_cast<float *>(am.dev)),
                    0)
              << what << ": " << te_rt_last_error();
          if (withData) {
            EXPECT_EQ(download(q), download(q0)) << what << ": data";
          }
          EXPECT_EQ(download(tr), download(t0)) << what << ": transpose";
          EXPECT_EQ(download(si), download(si0)) << what << ": scale_inv";
          EXPECT_EQ(download(am), download(am0)) << what << ": amax";
          EXPECT_EQ(download(rs), download(rs0)) << what << ": rsigma";
          if (ln) {
            EXPECT_EQ(download(mu), download(mu0)) << what << ": mu";
          }
        }
      }
  }
}

TEST_P(CudaAbi, BiasGradAndElementwise) {
  int32_t t = GetParam();
  for (int64_t rows : {0, 1, 1000}) {
    const int64_t cols = 77;
    Pair &dy = random(t, rows * cols), &db = output(cols * sizeOf(t));
    BOTH(te_rt_bias_grad(cpu, t, dy.host.data(), db.host.data(), rows, cols),
         te_rt_bias_grad(gpu, t, dy.dev, db.dev, rows, cols));
    expectClose(("bias_grad rows=" + std::to_string(rows)).c_str(), t, db,
                ulpTol(t, 1e-4));
  }
  for (int64_t n : {1, 4099, 1 << 20}) {
    Pair &a = random(t, n), &b = random(t, n), &c = output(n * sizeOf(t));
    BOTH(te_rt_add(cpu, t, a.host.data(), b.host.data(), c.host.data(), n),
         te_rt_add(gpu, t, a.dev, b.dev, c.dev, n));
    expectClose(("add n=" + std::to_string(n)).c_str(), t, c, -1);
    for (int32_t to : {TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16}) {
      Pair &o = output(n * sizeOf(to));
      BOTH(te_rt_cast(cpu, t, to, a.host.data(), o.host.data(), n),
           te_rt_cast(gpu, t, to, a.dev, o.dev, n));
      expectClose((std::string("cast to ") + dtypeName(to)).c_str(), to, o, -1);
    }
  }
  // f32 -> bf16/f16 with values that round (ties, overflow, subnormals).
  if (t == TE_RT_DTYPE_F32) {
    const int64_t n = 1 << 16;
    Pair &a = make(n * 4);
    for (int64_t i = 0; i < n; ++i) {
      uint32_t bits = static_cast<uint32_t>(rng());
      float f;
      std::memcpy(&f, &bits, 4);
      a.h<float>()[i] = f;
    }
    upload(a);
    for (int32_t to : {TE_RT_DTYPE_BF16, TE_RT_DTYPE_F16}) {
      Pair &o = output(n * 2);
      BOTH(te_rt_cast(cpu, t, to, a.host.data(), o.host.data(), n),
           te_rt_cast(gpu, t, to, a.dev, o.dev, n));
      expectClose("cast of random bit patterns", to, o, -1);
    }
  }
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{33, 65}, {1024, 512}, {1, 9}}) {
    Pair &s = random(t, rows * cols), &d = output(rows * cols * sizeOf(t));
    BOTH(te_rt_transpose(cpu, t, s.host.data(), d.host.data(), rows, cols),
         te_rt_transpose(gpu, t, s.dev, d.dev, rows, cols));
    expectClose("transpose", t, d, -1);
  }
  Pair &s = random(t, 999), &d = output(999 * sizeOf(t));
  BOTH(te_rt_copy(cpu, d.host.data(), s.host.data(), d.bytes()),
       te_rt_copy(gpu, d.dev, s.dev, d.bytes()));
  expectClose("copy", t, d, -1);
  BOTH(te_rt_zero(cpu, d.host.data(), 501), te_rt_zero(gpu, d.dev, 501));
  expectClose("zero", t, d, -1);
}

//===----------------------------------------------------------------------===//
// Per-tensor FP8
//===----------------------------------------------------------------------===//

// Current scaling (with and without pow2 scales; with a precomputed amax,
// amax_in, instead of the amax pass) and delayed scaling with a scale that
// saturates the largest inputs, both formats, data and/or transpose, odd
// and aligned shapes, NaN/inf inputs: the cuda bytes, scale_inv and amax
// equal the cpu ones bit for bit.
TEST_P(CudaAbi, QuantizeFp8) {
  int32_t t = GetParam();
  struct Shape {
    int64_t rows, cols;
  } shapes[] = {{33, 47}, {1, 1}, {128, 4096}, {64, 96}, {130, 80}, {256, 200}};
  enum { Current, CurrentPow2, Delayed, GivenAmax };
  enum { Both, DataOnly, TransposeOnly };
  for (Shape sh : shapes)
    for (int32_t fmt : {TE_RT_FP8_E4M3, TE_RT_FP8_E5M2})
      for (int mode : {Current, CurrentPow2, Delayed, GivenAmax})
        for (int outs : {Both, DataOnly, TransposeOnly})
          for (bool specials : {false, true}) {
            if (specials && (outs != Both || mode == CurrentPow2))
              continue;
            const int64_t n = sh.rows * sh.cols;
            Pair &x = random(t, n, -4, 4);
            if (specials && n >= 4) {
              // NaN, +inf, -inf and the largest finite value of the dtype.
              const float v[4] = {NAN, INFINITY, -INFINITY,
                                  t == TE_RT_DTYPE_F16 ? 65504.0f : 3e38f};
              for (int i = 0; i < 4; ++i) {
                int64_t at = (i + 1) * n / 5;
                if (t == TE_RT_DTYPE_F32)
                  x.h<float>()[at] = v[i];
                else if (t == TE_RT_DTYPE_BF16)
                  x.h<uint16_t>()[at] = te::cpu::floatToBF16(v[i]);
                else
                  x.h<uint16_t>()[at] = te::cpu::floatToF16(v[i]);
              }
              upload(x);
            }
            // Delayed: |x * scale| reaches ~2.7x the format's maximum.
            Pair &scale = scalar(fmt == TE_RT_FP8_E4M3 ? 300.0f : 38000.0f);
            bool delayed = mode == Delayed;
            bool wantData = outs != TransposeOnly, wantT = outs != DataOnly;
            // GivenAmax: an amax_in below max |x| (~4): saturating values.
            Pair &given = scalar(2.5f);
            bool hasIn = mode == GivenAmax;
            bool wantAmax = ((mode + outs) % 2 == 0 || specials) && !hasIn;
            Pair &data = output(n), &tr = output(n), &si = output(4),
                 &am = output(4);
            BOTH(te_rt_quantize_fp8(
                     cpu, t, x.host.data(), sh.rows, sh.cols, fmt,
                     delayed ? scale.h<float>() : nullptr, mode == CurrentPow2,
                     wantData ? data.host.data() : nullptr,
                     wantT ? tr.host.data() : nullptr, si.h<float>(),
                     wantAmax ? am.h<float>() : nullptr,
                     hasIn ? given.h<float>() : nullptr),
                 te_rt_quantize_fp8(
                     gpu, t, x.dev, sh.rows, sh.cols, fmt,
                     delayed ? static_cast<float *>(scale.dev) : nullptr,
                     mode == CurrentPow2, wantData ? data.dev : nullptr,
                     wantT ? tr.dev : nullptr, static_cast<float *>(si.dev),
                     wantAmax ? static_cast<float *>(am.dev) : nullptr,
                     hasIn ? static_cast<float *>(given.dev) : nullptr));
            std::string tag = std::string("quantize ") +
                              (fmt == TE_RT_FP8_E4M3 ? "e4m3 " : "e5m2 ") +
                              (mode == Current       ? "current "
                               : mode == CurrentPow2 ? "current-pow2 "
                               : mode == GivenAmax   ? "current-amax_in "
                                                     : "delayed ") +
                              std::to_string(sh.rows) + "x" +
                              std::to_string(sh.cols) +
                              (specials ? " nan/inf" : "");
            expectBytes(tag + " data", data);
            expectBytes(tag + " transpose", tr);
            expectBytes(tag + " scale_inv", si);
            expectBytes(tag + " amax", am);
          }
}

// FP8 TN GEMMs for the three supported format pairs with output `dtype`,
// with and without bias and accumulation, against the cpu backend's fp32
// GEMM of the dequantized operands.
TEST_P(CudaAbi, GemmFp8) {
  int32_t t = GetParam();
  struct Case {
    int64_t m, n, k;
  } cases[] = {{16, 32, 48}, {256, 512, 1024}, {8, 32, 64}, {64, 32, 8}};
  const int32_t pairs[][2] = {{TE_RT_FP8_E4M3, TE_RT_FP8_E4M3},
                              {TE_RT_FP8_E4M3, TE_RT_FP8_E5M2},
                              {TE_RT_FP8_E5M2, TE_RT_FP8_E4M3}};
  for (Case cs : cases)
    for (auto &pr : pairs) {
      Pair &a = randomFp8(pr[0], cs.m * cs.k),
           &b = randomFp8(pr[1], cs.n * cs.k);
      Pair &sa = scalar(0.0625f * 1.3f), &sb = scalar(0.37f);
      Pair &bias = random(t, cs.n);
      for (bool withBias : {false, true})
        for (int32_t acc : {0, 1}) {
          Pair &d = random(t, cs.m * cs.n);
          BOTH(te_rt_gemm_fp8(cpu, t, pr[0], a.host.data(), sa.h<float>(),
                              pr[1], b.host.data(), sb.h<float>(),
                              withBias ? bias.host.data() : nullptr,
                              d.host.data(), cs.m, cs.n, cs.k, acc, 0),
               te_rt_gemm_fp8(gpu, t, pr[0], a.dev,
                              static_cast<float *>(sa.dev), pr[1], b.dev,
                              static_cast<float *>(sb.dev),
                              withBias ? bias.dev : nullptr, d.dev, cs.m, cs.n,
                              cs.k, acc, /*fast_accumulate=*/withBias));
          std::string tag = std::string("gemm_fp8 ") +
                            (pr[0] == TE_RT_FP8_E4M3 ? "e4m3" : "e5m2") + "x" +
                            (pr[1] == TE_RT_FP8_E4M3 ? "e4m3 " : "e5m2 ") +
                            std::to_string(cs.m) + "x" + std::to_string(cs.n) +
                            "x" + std::to_string(cs.k) +
                            (withBias ? " +bias" : "") + (acc ? " acc" : "");
          expectGemmClose(tag, t, d);
        }
    }
  // E5M2 x E5M2 is refused on both backends.
  Pair &e5 = randomFp8(TE_RT_FP8_E5M2, 16 * 16), &s1 = scalar(1.0f);
  Pair &d = output(16 * 16 * sizeOf(t));
  EXPECT_NE(te_rt_gemm_fp8(cpu, t, TE_RT_FP8_E5M2, e5.host.data(),
                           s1.h<float>(), TE_RT_FP8_E5M2, e5.host.data(),
                           s1.h<float>(), nullptr, d.host.data(), 16, 16, 16,
                           0, 0),
            0);
  EXPECT_NE(te_rt_gemm_fp8(gpu, t, TE_RT_FP8_E5M2, e5.dev,
                           static_cast<float *>(s1.dev), TE_RT_FP8_E5M2, e5.dev,
                           static_cast<float *>(s1.dev), nullptr, d.dev, 16, 16,
                           16, 0, 0),
            0);
}

//===----------------------------------------------------------------------===//
// Float8 block scaling
//===----------------------------------------------------------------------===//

/// Bytes of the scale_inv of a rowwise [rows, cols] block-scaled copy.
int64_t blockScaleBytes(int64_t rows, int64_t cols, int32_t block2d) {
  const int64_t rowBlocks = (rows + 127) / 128, colBlocks = (cols + 127) / 128;
  return 4 * (block2d ? rowBlocks * ((colBlocks + 3) / 4 * 4)
                      : colBlocks * ((rows + 3) / 4 * 4));
}

/// Sets element i of a host buffer of `dtype` (rounded to the dtype).
void setValue(int32_t dtype, Pair &p, int64_t i, float v) {
  if (dtype == TE_RT_DTYPE_F32)
    p.h<float>()[i] = v;
  else if (dtype == TE_RT_DTYPE_BF16)
    p.h<uint16_t>()[i] = te::cpu::floatToBF16(v);
  else
    p.h<uint16_t>()[i] = te::cpu::floatToF16(v);
}

// 1x128 and 128x128 blocks, pow2 and fp32 scales, both copies and each
// alone, partial tiles, rows of odd length; for the larger shapes an
// all-zero tile, a row block of the dtype's smallest subnormal (f32/bf16:
// the scale overflows to FLT_MAX), +inf, NaN and the largest finite value:
// the cuda data, scale_inv (padding included) and columnwise copy equal the
// cpu ones bit for bit.
TEST_P(CudaAbi, QuantizeFp8Block) {
  int32_t t = GetParam();
  struct Shape {
    int64_t rows, cols;
  } shapes[] = {{200, 300}, {256, 384}, {1, 1}, {130, 7}, {16, 200}};
  enum { Both, RowwiseOnly, ColumnwiseOnly };
  const float big = t == TE_RT_DTYPE_F16 ? 65504.0f : 3e38f;
  for (Shape sh : shapes)
    for (int32_t block2d : {0, 1})
      for (int32_t pow2 : {0, 1})
        for (int copies : {Both, RowwiseOnly, ColumnwiseOnly}) {
          const int64_t rows = sh.rows, cols = sh.cols, n = rows * cols;
          Pair &x = random(t, n, -4, 4);
          const bool specials = rows > 128 && cols > 256;
          if (specials) {
            for (int64_t i = 0; i < 128; ++i)
              for (int64_t j = 0; j < 128; ++j)
                setValue(t, x, i * cols + j, 0.0f); // tile (0, 0)
            for (int64_t j = 256; j < cols; ++j) {  // row 140, block 2
              if (t == TE_RT_DTYPE_F32)
                x.h<uint32_t>()[140 * cols + j] = 1;
              else
                x.h<uint16_t>()[140 * cols + j] = 1;
            }
            setValue(t, x, 129 * cols + 129, INFINITY);
            setValue(t, x, 130 * cols + 131, NAN);
            setValue(t, x, (rows - 1) * cols + 255, big);
            upload(x);
          }
          const bool wantRow = copies != ColumnwiseOnly,
                     wantCol = copies != RowwiseOnly;
          Pair &q = output(n),
               &si = output(blockScaleBytes(rows, cols, block2d));
          Pair &qt = output(n),
               &sit = output(blockScaleBytes(cols, rows, block2d));
          BOTH(te_rt_quantize_fp8_block(cpu, t, x.host.data(), rows, cols,
                                        block2d, pow2,
                                        wantRow ? q.host.data() : nullptr,
                                        wantRow ? si.h<float>() : nullptr,
                                        wantCol ? qt.host.data() : nullptr,
                                        wantCol ? sit.h<float>() : nullptr),
               te_rt_quantize_fp8_block(
                   gpu, t, x.dev, rows, cols, block2d, pow2,
                   wantRow ? q.dev : nullptr,
                   wantRow ? static_cast<float *>(si.dev) : nullptr,
                   wantCol ? qt.dev : nullptr,
                   wantCol ? static_cast<float *>(sit.dev) : nullptr));
          std::string tag = std::string("quantize_fp8_block ") +
                            (block2d ? "128x128 " : "1x128 ") +
                            (pow2 ? "pow2 " : "") + std::to_string(rows) + "x" +
                            std::to_string(cols) +
                            (copies == RowwiseOnly      ? " rowwise"
                             : copies == ColumnwiseOnly ? " columnwise"
                                                        : "") +
                            (specials ? " specials" : "");
          expectBytes(tag + " data", q);
          expectBytes(tag + " scale_inv", si);
          expectBytes(tag + " columnwise data", qt);
          expectBytes(tag + " columnwise scale_inv", sit);
        }
}

// Block-scaled FP8 GEMMs, 1-D x 1-D, 1-D x 2-D and 2-D x 1-D, with output
// `dtype`, with and without bias and accumulation. The operands are
// quantized by the cpu backend from data whose magnitude changes by row and
// by 128-column block (so every block has its own scale), the same bytes
// on both backends; shapes: cuBLASLt's block-scaled path on Hopper
// (multiples of 16, one with a partial last 128-block of k) and the
// dequantized fallback (40x72x136). Against the cpu backend's fp32 GEMM of
// the dequantized operands: relative Frobenius error <= 1e-3 + the
// dtype's unit roundoff (see expectNormClose), no NaN.
TEST_P(CudaAbi, GemmFp8Block) {
  int32_t t = GetParam();
  struct Case {
    int64_t m, n, k;
  } cases[] = {{256, 384, 512}, {40, 72, 136}, {128, 256, 208}};
  const int32_t kinds[][2] = {{0, 0}, {0, 1}, {1, 0}};
  for (Case cs : cases)
    for (auto &kd : kinds) {
      // x [rows, k] in f32, quantized on the cpu context (pow2 scales for a,
      // fp32 scales for b), uploaded as is.
      auto operand = [&](int64_t rows, int32_t block2d, int32_t pow2, Pair *&q,
                         Pair *&si) {
        Pair &x = random(TE_RT_DTYPE_F32, rows * cs.k, -4, 4);
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cs.k; ++j)
            x.h<float>()[i * cs.k + j] *=
                std::ldexp(1.0f, int((i * 7 + j / 128 * 3) % 9) - 7);
        q = &make(rows * cs.k);
        si = &make(blockScaleBytes(rows, cs.k, block2d));
        EXPECT_EQ(te_rt_quantize_fp8_block(
                      cpu, TE_RT_DTYPE_F32, x.host.data(), rows, cs.k, block2d,
                      pow2, q->host.data(), si->h<float>(), nullptr, nullptr),
                  0)
            << te_rt_last_error();
        upload(*q);
        upload(*si);
      };
      Pair *a = nullptr, *sa = nullptr, *b = nullptr, *sb = nullptr;
      operand(cs.m, kd[0], 1, a, sa);
      operand(cs.n, kd[1], 0, b, sb);
      Pair &bias = random(t, cs.n);
      for (bool withBias : {false, true})
        for (int32_t acc : {0, 1}) {
          Pair &d = random(t, cs.m * cs.n);
          BOTH(
              te_rt_gemm_fp8_block(cpu, t, a->host.data(), sa->h<float>(),
                                   kd[0], b->host.data(), sb->h<float>(), kd[1],
                                   withBias ? bias.host.data() : nullptr,
                                   d.host.data(), cs.m, cs.n, cs.k, acc),
              te_rt_gemm_fp8_block(
                  gpu, t, a->dev, static_cast<float *>(sa->dev), kd[0], b->dev,
                  static_cast<float *>(sb->dev), kd[1],
                  withBias ? bias.dev : nullptr, d.dev, cs.m, cs.n, cs.k, acc));
          std::string tag =
              std::string("gemm_fp8_block ") + (kd[0] ? "2d" : "1d") + "x" +
              (kd[1] ? "2d " : "1d ") + std::to_string(cs.m) + "x" +
              std::to_string(cs.n) + "x" + std::to_string(cs.k) +
              (withBias ? " +bias" : "") + (acc ? " acc" : "");
          expectNormClose(tag, t, d, 1e-3);
        }
    }
  // 128x128 blocks on both operands are refused on both backends.
  Pair &q = output(16 * 16), &si = output(4 * 4), &d = output(16 * 16 * 4);
  EXPECT_NE(te_rt_gemm_fp8_block(cpu, t, q.host.data(), si.h<float>(), 1,
                                 q.host.data(), si.h<float>(), 1, nullptr,
                                 d.host.data(), 16, 16, 16, 0),
            0);
  EXPECT_NE(te_rt_gemm_fp8_block(gpu, t, q.dev, static_cast<float *>(si.dev), 1,
                                 q.dev, static_cast<float *>(si.dev), 1,
                                 nullptr, d.dev, 16, 16, 16, 0),
            0);
}

// MXFP8 is a Blackwell recipe: on the (Hopper) cuda backend both calls
// fail with a message naming the recipe and the architecture, before any
// device work; the cpu backend runs them.
TEST_P(CudaAbi, MXFP8NeedsBlackwell) {
  if (GetParam() != TE_RT_DTYPE_F32)
    return;
  Pair &x = random(TE_RT_DTYPE_F32, 32 * 32, -1, 1);
  Pair &q = output(32 * 32), &s = output(128 * 4);
  EXPECT_NE(te_rt_quantize_mxfp8(gpu, TE_RT_DTYPE_F32, x.dev, 32, 32,
                                 TE_RT_FP8_E4M3, 1, q.dev,
                                 static_cast<uint8_t *>(s.dev), nullptr,
                                 nullptr),
            0);
  EXPECT_NE(std::string(te_rt_last_error()).find("MXFP8 is a Blackwell (sm_100+) recipe"),
            std::string::npos)
      << te_rt_last_error();
  Pair &d = output(32 * 32 * 4);
  EXPECT_NE(te_rt_gemm_mxfp8(gpu, TE_RT_DTYPE_F32, TE_RT_FP8_E4M3, q.dev,
                             static_cast<uint8_t *>(s.dev), 0, TE_RT_FP8_E4M3,
                             q.dev, static_cast<uint8_t *>(s.dev), 0, 1,
                             nullptr, d.dev, 32, 32, 32, 0),
            0);
  EXPECT_NE(std::string(te_rt_last_error()).find("Hopper (sm_90"),
            std::string::npos)
      << te_rt_last_error();
  EXPECT_EQ(te_rt_quantize_mxfp8(cpu, TE_RT_DTYPE_F32, x.host.data(), 32, 32,
                                 TE_RT_FP8_E4M3, 1, q.host.data(),
                                 reinterpret_cast<uint8_t *>(s.host.data()),
                                 nullptr, nullptr),
            0)
      << te_rt_last_error();
}

// NVFP4 is a Blackwell recipe too: on the (Hopper) cuda backend both calls
// fail with a message naming the recipe and the architecture, before any
// device work; the seed calls work; the cpu backend runs them.
TEST_P(CudaAbi, NVFP4NeedsBlackwell) {
  if (GetParam() != TE_RT_DTYPE_F32)
    return;
  Pair &x = random(TE_RT_DTYPE_F32, 32 * 32, -1, 1);
  Pair &q = output(32 * 16), &s = output(128 * 4), &am = output(4);
  EXPECT_EQ(te_rt_context_set_seed(gpu, 7), 0) << te_rt_last_error();
  EXPECT_NE(te_rt_quantize_nvfp4(gpu, TE_RT_DTYPE_F32, x.dev, 32, 32, 0, 0, 1,
                                 3, 1, q.dev, static_cast<uint8_t *>(s.dev),
                                 static_cast<float *>(am.dev), nullptr, nullptr,
                                 nullptr),
            0);
  EXPECT_NE(std::string(te_rt_last_error())
                .find("NVFP4 is a Blackwell (sm_100+) recipe"),
            std::string::npos)
      << te_rt_last_error();
  Pair &d = output(32 * 32 * 4);
  EXPECT_NE(te_rt_gemm_nvfp4(
                gpu, TE_RT_DTYPE_F32, q.dev, static_cast<uint8_t *>(s.dev),
                static_cast<float *>(am.dev), q.dev,
                static_cast<uint8_t *>(s.dev), static_cast<float *>(am.dev), 1,
                nullptr, d.dev, 32, 32, 32, 0),
            0);
  EXPECT_NE(std::string(te_rt_last_error()).find("Hopper (sm_90"),
            std::string::npos)
      << te_rt_last_error();
  EXPECT_EQ(te_rt_quantize_nvfp4(cpu, TE_RT_DTYPE_F32, x.host.data(), 32, 32, 0,
                                 0, 1, 3, 1, q.host.data(),
                                 reinterpret_cast<uint8_t *>(s.host.data()),
                                 am.h<float>(), nullptr, nullptr, nullptr),
            0)
      << te_rt_last_error();
}

// Delayed scaling's update, both algorithms, margins 0 and 1, separate
// outputs and in place, with a zero slot, an infinite amax, a NaN amax, a
// NaN in the history and a tiny amax whose scale overflows to FLT_MAX:
// bit-identical histories and scales. Histories up to 8192 rows take the
// block-per-slot kernel (the column in shared memory), longer ones the
// thread-per-slot one: 9000 rows covers the second. Independent of the
// dtype: runs once.
TEST_P(CudaAbi, AmaxUpdate) {
  if (GetParam() != TE_RT_DTYPE_F32)
    return;
  struct Case {
    int64_t len, n;
  } cases[] = {{1, 1}, {16, 7}, {1024, 300}, {3, 5}, {1024, 6}, {9000, 5}};
  for (Case cs : cases)
    for (int32_t recent : {0, 1})
      for (int32_t margin : {0, 1})
        for (bool inPlace : {false, true}) {
          const int64_t len = cs.len, n = cs.n;
          Pair &h = random(TE_RT_DTYPE_F32, len * n, 0, 500);
          Pair &sc = random(TE_RT_DTYPE_F32, n, 0.5f, 4);
          Pair &am = random(TE_RT_DTYPE_F32, n, 0, 500);
          float *H = h.h<float>(), *A = am.h<float>();
          A[0] = 0.0f;
          for (int64_t r = 1; r < len; ++r)
            H[r * n] = 0.0f; // slot 0: all zero, the scale is kept
          if (n > 1)
            A[1] = INFINITY;
          if (n > 2)
            A[2] = NAN;
          if (n > 3 && len > 2)
            H[2 * n + 3] = NAN;
          if (n > 4) {
            A[4] = 1e-39f; // 448 / 1e-39 overflows: FLT_MAX
            for (int64_t r = 1; r < len; ++r)
              H[r * n + 4] = 0.0f;
          }
          upload(h);
          upload(am);
          Pair &nh = inPlace ? h : output(len * n * 4);
          Pair &ns = inPlace ? sc : output(n * 4);
          BOTH(te_rt_amax_update(cpu, h.h<float>(), sc.h<float>(),
                                 am.h<float>(), len, n, 448.0f, margin, recent,
                                 nh.h<float>(), ns.h<float>()),
               te_rt_amax_update(gpu, static_cast<float *>(h.dev),
                                 static_cast<float *>(sc.dev),
                                 static_cast<float *>(am.dev), len, n, 448.0f,
                                 margin, recent, static_cast<float *>(nh.dev),
                                 static_cast<float *>(ns.dev)));
          std::string tag = "amax_update len=" + std::to_string(len) +
                            " n=" + std::to_string(n) +
                            (recent ? " most_recent" : " max") +
                            " margin=" + std::to_string(margin) +
                            (inPlace ? " in place" : "");
          expectBytes(tag + " history", nh);
          expectBytes(tag + " scale", ns);
        }
}

// te_rt_free parks CUDA buffers and te_rt_alloc reuses one of the same
// rounded size (no cudaMalloc/cudaFree per call); a different size gets a
// different buffer, and both stay usable.
TEST(CudaBuffers, FreedBuffersAreReused) {
  if (!te_rt_backend_available(TE_RT_BACKEND_CUDA))
    GTEST_SKIP() << "no CUDA device visible: the cuda buffer cache is not "
                    "exercised here";
  te_rt_context *gpu = te_rt_context_create(TE_RT_BACKEND_CUDA);
  ASSERT_NE(gpu, nullptr) << te_rt_last_error();
  void *a = te_rt_alloc(gpu, 3 << 20);
  ASSERT_NE(a, nullptr);
  te_rt_free(gpu, a);
  void *b = te_rt_alloc(gpu, (3 << 20) - 100); // same 1 MiB granule
  EXPECT_EQ(a, b);
  void *c = te_rt_alloc(gpu, 1000);
  EXPECT_NE(c, b);
  std::vector<uint8_t> in(1000, 7), out(1000, 0);
  ASSERT_EQ(te_rt_copy_to_backend(gpu, c, in.data(), 1000), 0);
  ASSERT_EQ(te_rt_copy_to_host(gpu, out.data(), c, 1000), 0);
  EXPECT_EQ(in, out);
  te_rt_free(gpu, b);
  te_rt_free(gpu, c);
  te_rt_context_destroy(gpu); // releases the cache
}

//===----------------------------------------------------------------------===//
// CUDA graphs
//===----------------------------------------------------------------------===//

/// A cuda context for the graph tests, destroyed at the end of the scope.
class CudaGraphs : public ::testing::Test {
protected:
  void SetUp() override {
    if (!te_rt_backend_available(TE_RT_BACKEND_CUDA))
      GTEST_SKIP() << "no CUDA device visible: CUDA graph capture and "
                      "replay are not exercised here";
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
  /// n random bf16 values in [-2, 2).
  std::vector<uint16_t> randomBF16(int64_t n) {
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<uint16_t> v(static_cast<size_t>(n));
    for (uint16_t &h : v)
      h = te::cpu::floatToBF16(dist(rng));
    return v;
  }
  template <typename T> void put(void *dev, const std::vector<T> &host) {
    ASSERT_EQ(te_rt_copy_to_backend(gpu, dev, host.data(),
                                    int64_t(host.size() * sizeof(T))),
              0)
        << te_rt_last_error();
  }
  std::vector<uint8_t> get(const void *dev, int64_t bytes) {
    std::vector<uint8_t> host(static_cast<size_t>(bytes));
    EXPECT_EQ(te_rt_synchronize(gpu), 0) << te_rt_last_error();
    EXPECT_EQ(te_rt_copy_to_host(gpu, host.data(), dev, bytes), 0)
        << te_rt_last_error();
    return host;
  }
  std::string lastError() { return te_rt_last_error(); }

  te_rt_context *gpu = nullptr;
  std::mt19937 rng{77};
  std::vector<void *> buffers;
};

// LayerNorm -> fprop GEMM (+bias) -> GELU captured once (the GELU's output
// allocated inside the capture) and launched on new inputs copied in before
// each launch: every result equals the eager calls' bit for bit. Host
// copies, synchronization and a second capture are refused meanwhile
// without breaking the capture.
TEST_F(CudaGraphs, ReplaysMatchEagerCallsBitForBit) {
  const int32_t t = TE_RT_DTYPE_BF16;
  const int64_t rows = 64, cols = 1024, n = 768;
  const int64_t zBytes = rows * cols * 2, yBytes = rows * n * 2;
  // Odd extra bytes: the buffer's rounded size is used by no other buffer.
  const int64_t outBytes = yBytes + 1000;
  void *x = alloc(zBytes), *gamma = alloc(cols * 2), *beta = alloc(cols * 2);
  void *w = alloc(n * cols * 2), *bias = alloc(n * 2);
  void *z = alloc(zBytes), *mu = alloc(rows * 4), *rs = alloc(rows * 4);
  void *y = alloc(yBytes), *eagerOut = alloc(outBytes);
  put(gamma, randomBF16(cols));
  put(beta, randomBF16(cols));
  put(w, randomBF16(n * cols));
  put(bias, randomBF16(n));
  auto queue = [&](void *out) {
    ASSERT_EQ(te_rt_norm_fwd(gpu, TE_RT_NORM_LAYERNORM, t, x, gamma, beta,
                             1e-5, 0, rows, cols, z, static_cast<float *>(mu),
                             static_cast<float *>(rs)),
              0)
        << te_rt_last_error();
    ASSERT_EQ(te_rt_gemm_fprop(gpu, t, z, w, bias, y, rows, n, cols), 0)
        << te_rt_last_error();
    ASSERT_EQ(te_rt_act_fwd(gpu, TE_RT_ACT_GELU, t, y, out, rows, n, 0, 0, 0,
                            nullptr),
              0)
        << te_rt_last_error();
  };
  struct Results {
    std::vector<uint8_t> z, mu, rs, y, out;
  };
  auto results = [&](void *out) {
    return Results{get(z, zBytes), get(mu, rows * 4), get(rs, rows * 4),
                   get(y, yBytes), get(out, yBytes)};
  };
  // Eager runs (also the warm-up: kernel state, cuBLASLt, scratch).
  std::vector<uint16_t> inputs[2] = {randomBF16(rows * cols),
                                     randomBF16(rows * cols)};
  Results eager[2];
  for (int i = 0; i < 2; ++i) {
    put(x, inputs[i]);
    queue(eagerOut);
    eager[i] = results(eagerOut);
  }

  ASSERT_EQ(te_rt_capture_begin(gpu), 0) << te_rt_last_error();
  void *out = te_rt_alloc(gpu, outBytes); // belongs to the graph
  ASSERT_NE(out, nullptr) << te_rt_last_error();
  queue(out);
  std::vector<uint8_t> host(16);
  EXPECT_NE(te_rt_copy_to_host(gpu, host.data(), out, 16), 0);
  EXPECT_EQ(lastError(), "te_rt_copy_to_host: cannot copy to the host while "
                         "capturing a CUDA graph (call te_rt_capture_end "
                         "first)");
  EXPECT_NE(te_rt_copy_to_backend(gpu, x, host.data(), 16), 0);
  EXPECT_EQ(lastError(), "te_rt_copy_to_backend: cannot copy from the host "
                         "while capturing a CUDA graph (call "
                         "te_rt_capture_end first)");
  EXPECT_NE(te_rt_synchronize(gpu), 0);
  EXPECT_EQ(lastError(), "te_rt_synchronize: cannot synchronize while "
                         "capturing a CUDA graph (call te_rt_capture_end "
                         "first)");
  EXPECT_NE(te_rt_capture_begin(gpu), 0);
  EXPECT_EQ(lastError(), "te_rt_capture_begin: this context is already "
                         "capturing a CUDA graph (call te_rt_capture_end "
                         "first)");
  te_rt_graph *graph = nullptr, *none = graph;
  ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << te_rt_last_error();
  ASSERT_NE(graph, nullptr);
  EXPECT_NE(te_rt_capture_end(gpu, &none), 0);
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(lastError(), "te_rt_capture_end: this context is not capturing "
                         "(call te_rt_capture_begin first)");

  // Replays, the second input first: nothing ran during the capture.
  for (int i : {1, 0}) {
    put(x, inputs[i]);
    ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << te_rt_last_error();
    Results got = results(out);
    EXPECT_EQ(got.z, eager[i].z) << "input " << i;
    EXPECT_EQ(got.mu, eager[i].mu) << "input " << i;
    EXPECT_EQ(got.rs, eager[i].rs) << "input " << i;
    EXPECT_EQ(got.y, eager[i].y) << "input " << i;
    EXPECT_EQ(got.out, eager[i].out) << "input " << i;
  }

  // Freed before the graph is destroyed: the graph keeps the buffer, so
  // te_rt_alloc does not hand it out again, and replays still write it.
  te_rt_free(gpu, out);
  void *other = alloc(outBytes);
  EXPECT_NE(other, out);
  put(x, inputs[1]);
  ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << te_rt_last_error();
  EXPECT_EQ(get(out, yBytes), eager[1].out);
  te_rt_free(gpu, out); // again: still the graph's, nothing happens
  // Destroyed: its buffer is released (parked for reuse).
  te_rt_graph_destroy(graph);
  te_rt_graph_destroy(nullptr);
  void *again = alloc(outBytes);
  EXPECT_EQ(again, out);
}

// The current-scaling fusion in a graph: GELU with its amax, then the FP8
// quantization with that amax as amax_in, captured once; replays equal the
// eager calls bit for bit (the amax cell is zeroed again on every replay:
// the smaller input after the larger one gets its own amax).
TEST_F(CudaGraphs, FusedAmaxQuantizeReplays) {
  const int32_t t = TE_RT_DTYPE_BF16;
  const int64_t rows = 64, cols = 1024, n = rows * cols;
  void *x = alloc(n * 2), *y = alloc(n * 2), *amax = alloc(4);
  void *q = alloc(n), *qt = alloc(n), *si = alloc(4);
  auto queue = [&] {
    ASSERT_EQ(te_rt_act_fwd(gpu, TE_RT_ACT_GELU, t, x, y, rows, cols, 0, 0, 0,
                            static_cast<float *>(amax)),
              0)
        << te_rt_last_error();
    ASSERT_EQ(te_rt_quantize_fp8(gpu, t, y, rows, cols, TE_RT_FP8_E4M3, nullptr,
                                 0, q, qt, static_cast<float *>(si), nullptr,
                                 static_cast<const float *>(amax)),
              0)
        << te_rt_last_error();
  };
  auto results = [&] {
    return std::vector<std::vector<uint8_t>>{get(y, n * 2), get(amax, 4),
                                             get(q, n), get(qt, n), get(si, 4)};
  };
  // Input 1 is input 0 halved: a smaller amax.
  std::vector<uint16_t> inputs[2] = {randomBF16(n), {}};
  for (uint16_t h : inputs[0])
    inputs[1].push_back(te::cpu::floatToBF16(0.5f * te::cpu::bf16ToFloat(h)));
  std::vector<std::vector<uint8_t>> eager[2];
  for (int i = 0; i < 2; ++i) {
    put(x, inputs[i]);
    queue();
    eager[i] = results();
  }
  ASSERT_NE(eager[0][1], eager[1][1]); // the amaxes differ
  ASSERT_EQ(te_rt_capture_begin(gpu), 0) << te_rt_last_error();
  queue();
  te_rt_graph *graph = nullptr;
  ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << te_rt_last_error();
  for (int i : {0, 1, 0, 1}) {
    put(x, inputs[i]);
    ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << te_rt_last_error();
    EXPECT_EQ(results(), eager[i]) << "input " << i;
  }
  te_rt_graph_destroy(graph);
}

// A graph launched on another context is refused; a capture left open is
// ended by te_rt_context_destroy.
TEST_F(CudaGraphs, GraphsBelongToTheirContext) {
  void *a = alloc(4096);
  ASSERT_EQ(te_rt_zero(gpu, a, 4096), 0);
  ASSERT_EQ(te_rt_capture_begin(gpu), 0) << te_rt_last_error();
  ASSERT_EQ(te_rt_zero(gpu, a, 4096), 0) << te_rt_last_error();
  te_rt_graph *graph = nullptr;
  ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << te_rt_last_error();
  te_rt_context *other = te_rt_context_create(TE_RT_BACKEND_CUDA);
  ASSERT_NE(other, nullptr);
  EXPECT_NE(te_rt_graph_launch(other, graph), 0);
  EXPECT_EQ(lastError(),
            "te_rt_graph_launch: graph was captured on another context");
  ASSERT_EQ(te_rt_capture_begin(other), 0) << te_rt_last_error();
  void *inside = te_rt_alloc(other, 100);
  ASSERT_NE(inside, nullptr) << te_rt_last_error();
  ASSERT_EQ(te_rt_zero(other, inside, 100), 0) << te_rt_last_error();
  te_rt_context_destroy(other); // ends the capture
  ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << te_rt_last_error();
  ASSERT_EQ(te_rt_synchronize(gpu), 0) << te_rt_last_error();
  te_rt_graph_destroy(graph);
}

// The kernels' scratch buffer: a capture that would grow it fails with a
// clear message (the eager call before capturing is the cure); a graph
// captured before a growth keeps reading the old, retired buffer, and its
// results stay right.
TEST_F(CudaGraphs, ScratchGrowthAndRetiredScratch) {
  const int32_t t = TE_RT_DTYPE_F32;
  const int64_t cols = 96, smallRows = 256, bigRows = 65536;
  void *dy = alloc(bigRows * cols * 4), *db = alloc(cols * 4);
  void *dbBig = alloc(cols * 4);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(bigRows * cols));
  for (float &f : v)
    f = dist(rng);
  put(dy, v);
  // A fresh context has no scratch yet: the capture refuses to grow it
  // (the call fails; the capture itself goes on).
  ASSERT_EQ(te_rt_capture_begin(gpu), 0) << te_rt_last_error();
  ASSERT_EQ(te_rt_zero(gpu, db, cols * 4), 0) << te_rt_last_error();
  EXPECT_NE(te_rt_bias_grad(gpu, t, dy, db, smallRows, cols), 0);
  EXPECT_NE(lastError().find("the scratch buffer would grow while a CUDA "
                             "graph is being captured (run the captured "
                             "work once before capturing)"),
            std::string::npos)
      << lastError();
  te_rt_graph *graph = nullptr;
  ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << te_rt_last_error();
  te_rt_graph_destroy(graph);

  // Eager first, then captured.
  ASSERT_EQ(te_rt_bias_grad(gpu, t, dy, db, smallRows, cols), 0)
      << te_rt_last_error();
  std::vector<uint8_t> eagerSmall = get(db, cols * 4);
  ASSERT_EQ(te_rt_zero(gpu, db, cols * 4), 0);
  ASSERT_EQ(te_rt_capture_begin(gpu), 0) << te_rt_last_error();
  ASSERT_EQ(te_rt_bias_grad(gpu, t, dy, db, smallRows, cols), 0)
      << te_rt_last_error();
  ASSERT_EQ(te_rt_capture_end(gpu, &graph), 0) << te_rt_last_error();
  // A larger eager call grows (replaces) the scratch buffer.
  ASSERT_EQ(te_rt_bias_grad(gpu, t, dy, dbBig, bigRows, cols), 0)
      << te_rt_last_error();
  ASSERT_EQ(te_rt_synchronize(gpu), 0) << te_rt_last_error();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(te_rt_zero(gpu, db, cols * 4), 0);
    ASSERT_EQ(te_rt_graph_launch(gpu, graph), 0) << te_rt_last_error();
    EXPECT_EQ(get(db, cols * 4), eagerSmall) << "launch " << i;
  }
  te_rt_graph_destroy(graph);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaAbi,
                         ::testing::Values(TE_RT_DTYPE_F32, TE_RT_DTYPE_BF16,
                                           TE_RT_DTYPE_F16),
                         [](const auto &info) {
                           return std::string(dtypeName(info.param));
                         });

} // namespace
