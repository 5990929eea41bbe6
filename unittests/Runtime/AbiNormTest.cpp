//===- AbiNormTest.cpp - runtime ABI: normalization -------------*- C++ -*-===//
//
// The te_rt_* calls through the C ABI (split from AbiTest.cpp by family;
// the fixture is AbiFixture.h): normalization.
//
//===----------------------------------------------------------------------===//

#include "AbiFixture.h"

using namespace te::test;

namespace {

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

} // namespace
