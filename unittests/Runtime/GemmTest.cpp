//===- GemmTest.cpp - CPU reference GEMMs -----------------------*- C++ -*-===//
//
// The three layouts against a naive double-precision product, small hand
// cases, and threaded vs single-threaded results.
//
//===----------------------------------------------------------------------===//

#include "cpu/Gemm.h"

#include <gtest/gtest.h>

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

TEST(Gemm, TNIsTheSequentialDotProductBitForBit) {
  // The fprop GEMM works from transposed blocks of W, 32 outputs at a time,
  // but each output is still sum_p x[i,p] * W[j,p] accumulated in fp32 from
  // 0 in p order, then + bias: equal, bit for bit, to that plain loop. n of
  // 70 leaves a partial block; both with and without bias.
  const int64_t m = 5, n = 70, k = 131;
  auto x = random(m * k, 7), w = random(n * k, 8), b = random(n, 9);
  const std::vector<const float *> biases = {nullptr, b.data()};
  for (const float *bias : biases) {
    std::vector<float> y(m * n);
    gemmTN(x.data(), w.data(), bias, m, n, k, y.data());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        volatile float acc = 0.0f; // no reassociation, no contraction
        for (int64_t p = 0; p < k; ++p) {
          volatile float prod = x[i * k + p] * w[j * k + p];
          acc = acc + prod;
        }
        float want = bias ? acc + bias[j] : acc;
        ASSERT_EQ(y[i * n + j], want) << i << ", " << j;
      }
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
