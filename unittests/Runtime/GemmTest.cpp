//===- GemmTest.cpp - CPU reference GEMMs -----------------------*- C++ -*-===//
//
// The three layouts against a naive double-precision product, small hand
// cases, and threaded vs single-threaded results.
//
//===----------------------------------------------------------------------===//

#include "cpu/Gemm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

using namespace te::cpu;

namespace {

std::vector<float> random(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = d(gen);
  return v;
}

TEST(Gemm, HandComputedTN) {
  // x [1,2] = [1, 2]; W [2,2] = [[1, 0], [3, 4]]; bias [10, 20]
  const float x[2] = {1, 2}, w[4] = {1, 0, 3, 4}, b[2] = {10, 20};
  float y[2];
  gemmTN(x, w, b, 1, 2, 2, y);
  EXPECT_EQ(y[0], 11.0f); // 1*1 + 2*0 + 10
  EXPECT_EQ(y[1], 31.0f); // 1*3 + 2*4 + 20
}

TEST(Gemm, LayoutsMatchNaiveProducts) {
  const int64_t m = 37, n = 19, k = 23;
  auto x = random(m * k, 1), w = random(n * k, 2), dy = random(m * n, 3),
       b = random(n, 4);
  std::vector<float> y(m * n), dx(m * k), dw(n * k), db(n);
  gemmTN(x.data(), w.data(), b.data(), m, n, k, y.data());
  gemmNN(dy.data(), w.data(), m, n, k, dx.data());
  gemmNT(dy.data(), x.data(), m, n, k, dw.data(), db.data());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = b[j];
      for (int64_t p = 0; p < k; ++p)
        ref += double(x[i * k + p]) * w[j * k + p];
      EXPECT_NEAR(y[i * n + j], ref, 1e-5);
    }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      double ref = 0;
      for (int64_t j = 0; j < n; ++j)
        ref += double(dy[i * n + j]) * w[j * k + p];
      EXPECT_NEAR(dx[i * k + p], ref, 1e-5);
    }
  for (int64_t j = 0; j < n; ++j) {
    double refB = 0;
    for (int64_t i = 0; i < m; ++i)
      refB += dy[i * n + j];
    EXPECT_NEAR(db[j], refB, 1e-5);
    for (int64_t p = 0; p < k; ++p) {
      double ref = 0;
      for (int64_t i = 0; i < m; ++i)
        ref += double(dy[i * n + j]) * x[i * k + p];
      EXPECT_NEAR(dw[j * k + p], ref, 1e-5);
    }
  }
}

TEST(Gemm, TNIsTheChunkedDotProductBitForBit) {
  // The fprop GEMM works from transposed blocks of W, 32 outputs at a time,
  // but each output is still sum_p x[i,p] * W[j,p] as fp32 partials of
  // kDotChunk products in p order, each added into an fp64 total, then +
  // bias and one rounding: equal, bit for bit, to that plain loop. n of 70
  // leaves a partial block, k of 131 a partial chunk; with and without bias.
  for (const int64_t k : {40, 331}) { // one partial, several
    const int64_t m = 5, n = 70;
    auto x = random(m * k, 7), w = random(n * k, 8), b = random(n, 9);
    const std::vector<const float *> biases = {nullptr, b.data()};
    for (const float *bias : biases) {
      std::vector<float> y(m * n);
      gemmTN(x.data(), w.data(), bias, m, n, k, y.data());
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double total = 0.0;
          for (int64_t p0 = 0; p0 < k; p0 += kDotChunk) {
            volatile float acc = 0.0f; // no reassociation, no contraction
            for (int64_t p = p0; p < std::min(k, p0 + kDotChunk); ++p) {
              volatile float prod = x[i * k + p] * w[j * k + p];
              acc = acc + prod;
            }
            total += acc;
          }
          float want = static_cast<float>(bias ? total + bias[j] : total);
          ASSERT_EQ(y[i * n + j], want) << k << ": " << i << ", " << j;
        }
    }
  }
}

/// max |got - ref| over the elements.
double maxError(const std::vector<float> &got, const std::vector<double> &ref) {
  double e = 0;
  for (size_t i = 0; i < got.size(); ++i)
    e = std::max(e, std::fabs(double(got[i]) - ref[i]));
  return e;
}

TEST(Gemm, LongSumsStayAccurate) {
  // Sums of 8192 terms, all positive on average (operands in [-0.5, 1.5)),
  // so a sequential fp32 sum's error grows with its partial sums. Each
  // layout's reduction (fprop over k, dgrad over n, wgrad and dbias over m)
  // must stay at least 8x closer to the fp64 result than that sequential
  // fp32 sum (which is what the kernels computed before the chunks).
  const int64_t big = 8192, small = 6;
  auto shifted = [](size_t count, unsigned seed) {
    auto v = random(count, seed);
    for (float &f : v)
      f = f + 0.5f;
    return v;
  };
  // One sum per output: out[o] = sum_t a(o, t) * b(o, t) for t < big.
  auto check = [&](const char *what, const std::vector<float> &got, auto a,
                   auto b) {
    std::vector<double> ref(got.size());
    std::vector<float> seq(got.size());
    for (size_t o = 0; o < got.size(); ++o) {
      double r = 0;
      volatile float s = 0.0f;
      for (int64_t t = 0; t < big; ++t) {
        r += double(a(o, t)) * b(o, t);
        volatile float prod = a(o, t) * b(o, t);
        s = s + prod;
      }
      ref[o] = r;
      seq[o] = s;
    }
    double e = maxError(got, ref), eSeq = maxError(seq, ref);
    EXPECT_GT(eSeq, 0.0) << what;
    EXPECT_LE(e * 8, eSeq) << what << ": error " << e
                           << " against the sequential fp32 sum's " << eSeq;
  };
  auto one = [](size_t, int64_t) { return 1.0f; };
  { // fprop: k = big
    auto x = shifted(small * big, 11), w = shifted(small * big, 12);
    std::vector<float> y(small * small);
    gemmTN(x.data(), w.data(), nullptr, small, small, big, y.data());
    check(
        "TN", y, [&](size_t o, int64_t t) { return x[(o / small) * big + t]; },
        [&](size_t o, int64_t t) { return w[(o % small) * big + t]; });
  }
  { // dgrad: n = big (dy [small, big], W [big, small])
    auto dy = shifted(small * big, 13), w = shifted(big * small, 14);
    std::vector<float> dx(small * small);
    gemmNN(dy.data(), w.data(), small, big, small, dx.data());
    check(
        "NN", dx,
        [&](size_t o, int64_t t) { return dy[(o / small) * big + t]; },
        [&](size_t o, int64_t t) { return w[t * small + o % small]; });
  }
  { // wgrad and dbias: m = big (dy [big, small], x [big, small])
    auto dy = shifted(big * small, 15), x = shifted(big * small, 16);
    std::vector<float> dw(small * small), db(small);
    gemmNT(dy.data(), x.data(), big, small, small, dw.data(), db.data());
    check(
        "NT", dw,
        [&](size_t o, int64_t t) { return dy[t * small + o / small]; },
        [&](size_t o, int64_t t) { return x[t * small + o % small]; });
    check(
        "NT dbias", db, [&](size_t o, int64_t t) { return dy[t * small + o]; },
        one);
  }
}

TEST(Gemm, ThreadsGiveTheSameBits) {
  // Large enough to be split across threads; each output row is summed in
  // the same order whatever the split, so the results are bit-identical.
  const int64_t m = 256, n = 128, k = 96;
  auto x = random(m * k, 5), w = random(n * k, 6);
  std::vector<float> one(m * n), many(m * n);
  setenv("TE_RT_CPU_THREADS", "1", 1);
  gemmTN(x.data(), w.data(), nullptr, m, n, k, one.data());
  setenv("TE_RT_CPU_THREADS", "4", 1);
  gemmTN(x.data(), w.data(), nullptr, m, n, k, many.data());
  unsetenv("TE_RT_CPU_THREADS");
  EXPECT_EQ(one, many);
}

} // namespace
