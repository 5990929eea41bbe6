//===- ReferenceTest.cpp - CPU reference norms and activations --*- C++ -*-===//
//
// Hand-computed values and finite-difference checks of the backward passes
// of the CPU reference kernels.
//
//===----------------------------------------------------------------------===//

#include "cpu/Reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace te::cpu;

namespace {

std::vector<float> randomVector(size_t n, unsigned seed, float lo = -2.0f,
                                float hi = 2.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

TEST(ReferenceNorm, LayerNormByHand) {
  const float x[4] = {1, 2, 3, 4}, gamma[4] = {1, 1, 1, 1};
  float z[4], mu, rs;
  normForward(Norm::LayerNorm, x, gamma, nullptr, 0.0f, false, 1, 4, z, &mu,
              &rs);
  // mean 2.5, biased variance 1.25
  EXPECT_FLOAT_EQ(mu, 2.5f);
  EXPECT_NEAR(rs, 1.0f / std::sqrt(1.25f), 1e-6);
  EXPECT_NEAR(z[0], -1.5f / std::sqrt(1.25f), 1e-6);
  EXPECT_NEAR(z[3], 1.5f / std::sqrt(1.25f), 1e-6);
  // zero-centered gamma 0 is gamma 1.
  const float zeros[4] = {0, 0, 0, 0}, beta[4] = {1, 1, 1, 1};
  float z2[4];
  normForward(Norm::LayerNorm, x, zeros, beta, 0.0f, true, 1, 4, z2, &mu, &rs);
  for (int j = 0; j < 4; ++j)
    EXPECT_NEAR(z2[j], z[j] + 1.0f, 1e-6);
}

TEST(ReferenceNorm, RMSNormByHand) {
  const float x[4] = {1, 2, 3, 4}, gamma[4] = {2, 2, 2, 2};
  float z[4], rs;
  normForward(Norm::RMSNorm, x, gamma, nullptr, 0.5f, false, 1, 4, z, nullptr,
              &rs);
  // mean(x^2) = 7.5; rs = 1/sqrt(7.5 + 0.5)
  EXPECT_NEAR(rs, 1.0f / std::sqrt(8.0f), 1e-6);
  EXPECT_NEAR(z[2], 2.0f * 3.0f / std::sqrt(8.0f), 1e-6);
}

/// loss = sum(w * norm(x)); checks dx, dgamma, dbeta against central
/// differences of the forward.
void checkNormGradients(Norm kind, bool zeroCentered) {
  const int64_t rows = 3, cols = 8;
  std::vector<float> x = randomVector(rows * cols, 1),
                     gamma = randomVector(cols, 2, 0.5f, 1.5f),
                     beta = randomVector(cols, 3),
                     w = randomVector(rows * cols, 4);
  const float eps = 1e-3f;
  const float *betaPtr = kind == Norm::LayerNorm ? beta.data() : nullptr;
  auto loss = [&](const std::vector<float> &xv, const std::vector<float> &g,
                  const std::vector<float> &b) {
    std::vector<float> z(rows * cols), mu(rows), rs(rows);
    normForward(kind, xv.data(), g.data(),
                kind == Norm::LayerNorm ? b.data() : nullptr, eps, zeroCentered,
                rows, cols, z.data(), mu.data(), rs.data());
    double l = 0;
    for (int64_t k = 0; k < rows * cols; ++k)
      l += double(w[k]) * z[k];
    return l;
  };
  std::vector<float> z(rows * cols), mu(rows), rs(rows);
  normForward(kind, x.data(), gamma.data(), betaPtr, eps, zeroCentered, rows,
              cols, z.data(), mu.data(), rs.data());
  std::vector<float> dx(rows * cols), dgamma(cols), dbeta(cols);
  normBackward(kind, w.data(), x.data(), mu.data(), rs.data(), gamma.data(),
               zeroCentered, rows, cols, dx.data(), dgamma.data(),
               kind == Norm::LayerNorm ? dbeta.data() : nullptr);
  const float h = 1e-2f;
  auto central = [&](std::vector<float> &v, size_t k) {
    float saved = v[k];
    v[k] = saved + h;
    double up = loss(x, gamma, beta);
    v[k] = saved - h;
    double down = loss(x, gamma, beta);
    v[k] = saved;
    return (up - down) / (2 * h);
  };
  for (size_t k = 0; k < x.size(); ++k)
    EXPECT_NEAR(dx[k], central(x, k), 2e-3) << "dx[" << k << "]";
  for (size_t j = 0; j < gamma.size(); ++j)
    EXPECT_NEAR(dgamma[j], central(gamma, j), 2e-3) << "dgamma[" << j << "]";
  if (kind == Norm::LayerNorm)
    for (size_t j = 0; j < beta.size(); ++j)
      EXPECT_NEAR(dbeta[j], central(beta, j), 2e-3) << "dbeta[" << j << "]";
}

TEST(ReferenceNorm, LayerNormGradients) {
  checkNormGradients(Norm::LayerNorm, false);
}
TEST(ReferenceNorm, LayerNormZeroCenteredGradients) {
  checkNormGradients(Norm::LayerNorm, true);
}
TEST(ReferenceNorm, RMSNormGradients) {
  checkNormGradients(Norm::RMSNorm, false);
}
TEST(ReferenceNorm, RMSNormZeroCenteredGradients) {
  checkNormGradients(Norm::RMSNorm, true);
}

TEST(ReferenceActivation, ValuesByHand) {
  float x = 1.0f, y;
  activationForward(Activation::GELU, &x, 1, 1, &y);
  EXPECT_NEAR(y, 0.8411920f, 1e-5); // tanh approximation
  activationForward(Activation::GELUErf, &x, 1, 1, &y);
  EXPECT_NEAR(y, 0.8413447f, 1e-5); // 0.5 (1 + erf(1/sqrt 2))
  activationForward(Activation::SiLU, &x, 1, 1, &y);
  EXPECT_NEAR(y, 0.7310586f, 1e-6);
  activationForward(Activation::QGELU, &x, 1, 1, &y);
  EXPECT_NEAR(y, 1.0f / (1.0f + std::exp(-1.702f)), 1e-6);
  float neg = -3.0f;
  activationForward(Activation::SReLU, &neg, 1, 1, &y);
  EXPECT_EQ(y, 0.0f);
  float three = 3.0f;
  activationForward(Activation::SReLU, &three, 1, 1, &y);
  EXPECT_EQ(y, 9.0f);
  // Gated: [a | b] -> f(a) * b
  const float ab[2] = {2.0f, 5.0f};
  activationForward(Activation::ReGLU, ab, 1, 2, &y);
  EXPECT_EQ(y, 10.0f);
  // Clamped SwiGLU: a clamped to 7, b clamped to [-7, 7] then + 1.
  const float big[2] = {10.0f, 10.0f};
  activationForward(Activation::ClampedSwiGLU, big, 1, 2, &y);
  EXPECT_NEAR(y, 7.0f / (1.0f + std::exp(-1.702f * 7.0f)) * 8.0f, 1e-4);
}

class ActivationGradient : public ::testing::TestWithParam<Activation> {};

TEST_P(ActivationGradient, MatchesFiniteDifferences) {
  Activation act = GetParam();
  const int64_t rows = 4, cols = 16;
  std::vector<float> x = randomVector(rows * cols, 7, -3.0f, 3.0f);
  // Stay away from the kinks of relu-like functions.
  for (float &v : x)
    if (std::fabs(v) < 0.05f)
      v = 0.3f;
  int64_t outCols = isGated(act) ? cols / 2 : cols;
  std::vector<float> dy = randomVector(rows * outCols, 8);
  std::vector<float> dx(rows * cols);
  activationBackward(act, dy.data(), x.data(), rows, cols, dx.data());
  auto loss = [&](const std::vector<float> &xv) {
    std::vector<float> y(rows * outCols);
    activationForward(act, xv.data(), rows, cols, y.data());
    double l = 0;
    for (size_t k = 0; k < y.size(); ++k)
      l += double(dy[k]) * y[k];
    return l;
  };
  const float h = 1e-3f;
  for (size_t k = 0; k < x.size(); ++k) {
    float saved = x[k];
    x[k] = saved + h;
    double up = loss(x);
    x[k] = saved - h;
    double down = loss(x);
    x[k] = saved;
    EXPECT_NEAR(dx[k], (up - down) / (2 * h), 5e-3) << "element " << k;
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllActivations, ActivationGradient,
    ::testing::Values(Activation::GELU, Activation::GEGLU, Activation::GLU,
                      Activation::QGELU, Activation::QGEGLU, Activation::ReLU,
                      Activation::ReGLU, Activation::SReLU, Activation::SReGLU,
                      Activation::SiLU, Activation::SwiGLU,
                      Activation::ClampedSwiGLU, Activation::GELUErf));

} // namespace

//===----------------------------------------------------------------------===//
// Accuracy of the norm statistics against a float64 reference
//===----------------------------------------------------------------------===//

/// x = 100 + 0.01 z, z standard normal (Box-Muller on a fixed LCG, so that
/// the values are the same everywhere): a large mean and a small spread,
/// where a plain fp32 running sum loses the statistics. With fp32 sums the
/// normalized output is off by 2-3e-3 at 8192 columns; PyTorch's CPU
/// LayerNorm by about 7e-4.
std::vector<float> offsetNormal(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed;
  auto uniform = [&] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return (double((s >> 11) + 1)) / 9007199254740993.0; // (0, 1]
  };
  for (size_t i = 0; i < n; ++i) {
    double z = std::sqrt(-2.0 * std::log(uniform())) *
               std::cos(6.283185307179586 * uniform());
    v[i] = static_cast<float>(100.0 + 0.01 * z);
  }
  return v;
}

/// Max |z - z64| of normForward against float64 math on the same fp32
/// inputs (gamma 1, beta 0, eps 1e-5).
double normForwardError(Norm kind, int64_t rows, int64_t cols,
                        double *statError) {
  std::vector<float> x = offsetNormal(size_t(rows * cols), 42);
  std::vector<float> gamma(static_cast<size_t>(cols), 1.0f), z(x.size()),
      mu(static_cast<size_t>(rows)), rs(static_cast<size_t>(rows));
  normForward(kind, x.data(), gamma.data(), nullptr, 1e-5f, false, rows, cols,
              z.data(), kind == Norm::LayerNorm ? mu.data() : nullptr,
              rs.data());
  double worst = 0, worstStat = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const float *xr = x.data() + i * cols;
    double mean = 0;
    if (kind == Norm::LayerNorm) {
      for (int64_t j = 0; j < cols; ++j)
        mean += xr[j];
      mean /= double(cols);
    }
    double var = 0;
    for (int64_t j = 0; j < cols; ++j)
      var += (xr[j] - mean) * (xr[j] - mean);
    double r = 1.0 / std::sqrt(var / double(cols) + double(1e-5f));
    for (int64_t j = 0; j < cols; ++j)
      worst = std::max(worst, std::fabs(z[i * cols + j] - (xr[j] - mean) * r));
    worstStat = std::max(worstStat, std::fabs(rs[i] - r) / r);
  }
  *statError = worstStat;
  return worst;
}

// PyTorch's error on this input is about 7e-4; fp32 running sums (the
// reference before float64 accumulation) give 3.2e-2 for z and 4.5e-4 for
// rsigma at 8192 columns, float64 accumulation 2e-7 and 4e-8.
TEST(ReferenceNorm, LayerNormAccurateForLargeMean) {
  double statError;
  double error = normForwardError(Norm::LayerNorm, 4, 8192, &statError);
  EXPECT_LT(error, 1e-5) << "max |z - z_float64|";
  EXPECT_LT(statError, 1e-6) << "max relative error of rsigma";
}

TEST(ReferenceNorm, RMSNormAccurateForLargeMean) {
  double statError;
  double error = normForwardError(Norm::RMSNorm, 4, 8192, &statError);
  // z is about 1 here (x / rms(x)): no cancellation, but fp32 sums of
  // squares still give 8.7e-7 (z) and 8.2e-7 (rsigma); float64 6e-8, 3e-8.
  EXPECT_LT(error, 2e-7) << "max |z - z_float64|";
  EXPECT_LT(statError, 2e-7) << "max relative error of rsigma";
}

// The backward's row reductions (mean(g), mean(g * y)) and the dgamma /
// dbeta column sums, against float64 on the same fp32 inputs and saved
// statistics.
TEST(ReferenceNorm, LayerNormBackwardAccurateForLargeMean) {
  const int64_t rows = 64, cols = 4096;
  std::vector<float> x = offsetNormal(size_t(rows * cols), 7);
  std::vector<float> dz = offsetNormal(size_t(rows * cols), 8);
  std::vector<float> gamma(static_cast<size_t>(cols), 1.0f), z(x.size()),
      mu(static_cast<size_t>(rows)), rs(static_cast<size_t>(rows)),
      dx(x.size()), dgamma(static_cast<size_t>(cols)),
      dbeta(static_cast<size_t>(cols));
  normForward(Norm::LayerNorm, x.data(), gamma.data(), nullptr, 1e-5f, false,
              rows, cols, z.data(), mu.data(), rs.data());
  normBackward(Norm::LayerNorm, dz.data(), x.data(), mu.data(), rs.data(),
               gamma.data(), false, rows, cols, dx.data(), dgamma.data(),
               dbeta.data());
  std::vector<double> dg(static_cast<size_t>(cols), 0.0),
      db(static_cast<size_t>(cols), 0.0);
  double worstDx = 0, maxDx = 0;
  for (int64_t i = 0; i < rows; ++i) {
    double m1 = 0, m2 = 0;
    for (int64_t j = 0; j < cols; ++j) {
      double y = (double(x[i * cols + j]) - mu[i]) * rs[i];
      m1 += dz[i * cols + j];
      m2 += dz[i * cols + j] * y;
      dg[j] += dz[i * cols + j] * y;
      db[j] += dz[i * cols + j];
    }
    m1 /= double(cols), m2 /= double(cols);
    for (int64_t j = 0; j < cols; ++j) {
      double y = (double(x[i * cols + j]) - mu[i]) * rs[i];
      double ref = rs[i] * (dz[i * cols + j] - (m2 * y + m1));
      worstDx = std::max(worstDx, std::fabs(dx[i * cols + j] - ref));
      maxDx = std::max(maxDx, std::fabs(ref));
    }
  }
  double worstDg = 0, worstDb = 0;
  for (int64_t j = 0; j < cols; ++j) {
    worstDg = std::max(worstDg, std::fabs(dgamma[j] - dg[j]) / rows);
    worstDb = std::max(worstDb, std::fabs(dbeta[j] - db[j]) / db[j]);
  }
  // dz ~ 100 with a 0.01 spread: mean(g) cancels against g. fp32 sums:
  // 3.0e-5 (dx, relative), 1.0e-5 (dgamma per row), 4.7e-7 (dbeta,
  // relative); float64 accumulation: 1.8e-6, 2.0e-6, 3.8e-8.
  EXPECT_LT(worstDx / maxDx, 5e-6) << "max |dx - dx_float64| / max |dx|";
  EXPECT_LT(worstDg, 4e-6) << "dgamma (per row)";
  EXPECT_LT(worstDb, 1e-7) << "relative dbeta error";
}
