//===- Reference.cpp - CPU reference kernels --------------------*- C++ -*-===//
//
// fp32 reference implementations of the norm and activation kernels; the
// formulas are TransformerEngine's (reference §8.1-8.3).
//
//===----------------------------------------------------------------------===//

#include "Reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace te::cpu {

namespace {

float gammaTilde(const float *gamma, int64_t j, bool zeroCentered) {
  return zeroCentered ? gamma[j] + 1.0f : gamma[j];
}

} // namespace

// The statistics are stored in fp32, as TE does, but accumulated in
// float64: a plain fp32 running sum over a row loses most of the variance
// of an input with a large mean (x = 100 + 0.01 z: z off by 3e-2 at 8192
// columns, PyTorch's fp32 kernels 7e-4), and the centered second pass only
// helps when the mean it subtracts is accurate. Sequential sums: the
// results are deterministic and independent of the thread count (rows are
// split across threads, never a row).
void normForward(Norm kind, const float *x, const float *gamma,
                 const float *beta, float eps, bool zeroCentered, int64_t rows,
                 int64_t cols, float *z, float *mu, float *rsigma) {
  const double rn = 1.0 / static_cast<double>(cols);
  for (int64_t i = 0; i < rows; ++i) {
    const float *xr = x + i * cols;
    float *zr = z + i * cols;
    double mean = 0.0;
    if (kind == Norm::LayerNorm) {
      for (int64_t j = 0; j < cols; ++j)
        mean += xr[j];
      mean *= rn;
    }
    // Two-pass: the centered sum of squares (the sum of squares for
    // RMSNorm, whose "mean" is 0).
    double m2 = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      double c = xr[j] - mean;
      m2 += c * c;
    }
    double rs = 1.0 / std::sqrt(m2 * rn + static_cast<double>(eps));
    for (int64_t j = 0; j < cols; ++j) {
      float y = static_cast<float>((xr[j] - mean) * rs);
      float v = gammaTilde(gamma, j, zeroCentered) * y;
      if (kind == Norm::LayerNorm && beta)
        v += beta[j];
      zr[j] = v;
    }
    if (kind == Norm::LayerNorm && mu)
      mu[i] = static_cast<float>(mean);
    rsigma[i] = static_cast<float>(rs);
  }
}

void normBackward(Norm kind, const float *dz, const float *x, const float *mu,
                  const float *rsigma, const float *gamma, bool zeroCentered,
                  int64_t rows, int64_t cols, float *dx, float *dgamma,
                  float *dbeta) {
  const double rn = 1.0 / static_cast<double>(cols);
  // dgamma and dbeta sum over rows: float64 accumulators, stored once.
  std::vector<double> dg(static_cast<size_t>(cols), 0.0),
      db(dbeta ? static_cast<size_t>(cols) : 0, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    const float *xr = x + i * cols, *dzr = dz + i * cols;
    float *dxr = dx + i * cols;
    float mean = kind == Norm::LayerNorm ? mu[i] : 0.0f;
    float rs = rsigma[i];
    // g = gamma~ * dz; m1 = mean(g) (LayerNorm only); m2 = mean(g * y)
    double m1 = 0.0, m2 = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      float y = (xr[j] - mean) * rs;
      float g = gammaTilde(gamma, j, zeroCentered) * dzr[j];
      m1 += g;
      m2 += static_cast<double>(g) * y;
      dg[j] += static_cast<double>(dzr[j]) * y;
      if (dbeta)
        db[j] += dzr[j];
    }
    m1 *= rn;
    m2 *= rn;
    if (kind == Norm::RMSNorm)
      m1 = 0.0;
    for (int64_t j = 0; j < cols; ++j) {
      float y = (xr[j] - mean) * rs;
      float g = gammaTilde(gamma, j, zeroCentered) * dzr[j];
      dxr[j] = static_cast<float>(rs * (g - (m2 * y + m1)));
    }
  }
  for (int64_t j = 0; j < cols; ++j) {
    dgamma[j] = static_cast<float>(dg[j]);
    if (dbeta)
      dbeta[j] = static_cast<float>(db[j]);
  }
}

bool isGated(Activation act) {
  return te_rt_act_is_gated(static_cast<int32_t>(act));
}

namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// tanh-GELU as TE's kernel writes it (reference §8.3).
float gelu(float x) {
  return x * (0.5f + 0.5f * std::tanh(x * (0.79788456f + 0.03567741f * x * x)));
}
float dgelu(float x) {
  float t = std::tanh(0.79788456f * x * (1.0f + 0.044715f * x * x));
  return 0.5f * x * ((1.0f - t * t) * (0.79788456f + 0.1070322243f * x * x)) +
         0.5f * (1.0f + t);
}
float geluErf(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678f)); }
float dgeluErf(float x) {
  const float kInvSqrt2Pi = 0.3989422804f;
  return 0.5f * (1.0f + std::erf(x * 0.70710678f)) +
         x * kInvSqrt2Pi * std::exp(-0.5f * x * x);
}
float qgelu(float x) { return x * sigmoid(1.702f * x); }
float dqgelu(float x) {
  float s = sigmoid(1.702f * x);
  return 1.702f * x * s * (1.0f - s) + s;
}
float relu(float x) { return x > 0.0f ? x : 0.0f; }
float drelu(float x) { return x > 0.0f ? 1.0f : 0.0f; }
float srelu(float x) { return x > 0.0f ? x * x : 0.0f; }
float dsrelu(float x) { return std::max(2.0f * x, 0.0f); }
float silu(float x) { return x * sigmoid(x); }
float dsilu(float x) {
  float s = sigmoid(x);
  return x * s * (1.0f - s) + s;
}

/// f and f' of the (gate half of the) activation: its pointwise function
/// (TEActivations.def).
void pointwise(Activation act, float x, float &f, float &df) {
  switch (te_rt_act_fn(static_cast<int32_t>(act))) {
  case TE_RT_ACT_FN_GELU_TANH:
    f = gelu(x), df = dgelu(x);
    return;
  case TE_RT_ACT_FN_GELU_ERF:
    f = geluErf(x), df = dgeluErf(x);
    return;
  case TE_RT_ACT_FN_SIGMOID:
    f = sigmoid(x), df = f * (1.0f - f);
    return;
  case TE_RT_ACT_FN_QGELU:
    f = qgelu(x), df = dqgelu(x);
    return;
  case TE_RT_ACT_FN_RELU:
    f = relu(x), df = drelu(x);
    return;
  case TE_RT_ACT_FN_SRELU:
    f = srelu(x), df = dsrelu(x);
    return;
  case TE_RT_ACT_FN_SILU:
    f = silu(x), df = dsilu(x);
    return;
  case TE_RT_ACT_FN_CLAMPED_SILU:
    break; // handled by the callers (it also transforms the linear half)
  }
  f = df = 0.0f;
}

} // namespace

void activationForward(Activation act, const float *x, int64_t rows,
                       int64_t cols, float *y, ClampParams p) {
  if (!isGated(act)) {
    for (int64_t k = 0; k < rows * cols; ++k) {
      float f, df;
      pointwise(act, x[k], f, df);
      y[k] = f;
    }
    return;
  }
  int64_t n = cols / 2;
  const bool clamped = te_rt_act_fn(static_cast<int32_t>(act)) ==
                       TE_RT_ACT_FN_CLAMPED_SILU;
  for (int64_t i = 0; i < rows; ++i) {
    const float *a = x + i * cols, *b = a + n;
    float *yr = y + i * n;
    for (int64_t j = 0; j < n; ++j) {
      if (clamped) {
        float ac = std::min(a[j], p.limit);
        float bc = std::clamp(b[j], -p.limit, p.limit) + p.offset;
        yr[j] = ac * sigmoid(p.alpha * ac) * bc;
        continue;
      }
      float f, df;
      pointwise(act, a[j], f, df);
      yr[j] = f * b[j];
    }
  }
}

void activationBackward(Activation act, const float *dy, const float *x,
                        int64_t rows, int64_t cols, float *dx, ClampParams p) {
  if (!isGated(act)) {
    for (int64_t k = 0; k < rows * cols; ++k) {
      float f, df;
      pointwise(act, x[k], f, df);
      dx[k] = dy[k] * df;
    }
    return;
  }
  int64_t n = cols / 2;
  const bool clamped = te_rt_act_fn(static_cast<int32_t>(act)) ==
                       TE_RT_ACT_FN_CLAMPED_SILU;
  for (int64_t i = 0; i < rows; ++i) {
    const float *a = x + i * cols, *b = a + n, *dyr = dy + i * n;
    float *da = dx + i * cols, *db = da + n;
    for (int64_t j = 0; j < n; ++j) {
      if (clamped) {
        float ac = std::min(a[j], p.limit);
        float bc = std::clamp(b[j], -p.limit, p.limit) + p.offset;
        float s = sigmoid(p.alpha * ac);
        float dsw = p.alpha * ac * s * (1.0f - s) + s;
        da[j] = a[j] <= p.limit ? dsw * dyr[j] * bc : 0.0f;
        db[j] = std::fabs(b[j]) <= p.limit ? dyr[j] * ac * s : 0.0f;
        continue;
      }
      float f, df;
      pointwise(act, a[j], f, df);
      da[j] = df * dyr[j] * b[j];
      db[j] = dyr[j] * f;
    }
  }
}

} // namespace te::cpu
