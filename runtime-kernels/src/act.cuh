//===- act.cuh - The activation functions of the CUDA kernels ----*- CUDA -*-===//
//
// f and f' of TransformerEngine's activations (lib/Runtime/cpu/Reference.cpp's
// formulas), shared by the activation kernels (activation.cu) and the fused
// activation-casts (quantize_act.cu).
//
//===----------------------------------------------------------------------===//

#ifndef TE_KERNELS_SRC_ACT_CUH
#define TE_KERNELS_SRC_ACT_CUH

#include "te/Runtime/TERuntime.h"

#include <type_traits>

namespace te::kernels {

inline bool isGated(int act) { return te_rt_act_is_gated(act); }

/// The pointwise function (TE_RT_ACT_FN_*) of an activation, on the device
/// (te_rt_act_fn of TERuntime.h, from the same table).
__host__ __device__ inline int actFn(int act) {
  switch (act) {
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams)                  \
  case code:                                                                   \
    return TE_RT_ACT_FN_##fn;
#include "te/Runtime/TEActivations.def"
  }
  return -1;
}

struct ActParams {
  int act;
  float limit, alpha, offset;
};

/// The sigmoid through the hardware's exp2 and reciprocal (ex2.approx,
/// rcp.approx via __expf / __fdividef): a few ulp of fp32 where libdevice's
/// expf and an IEEE division took ~20 instructions per element, which made
/// the activation kernels compute-bound (H200, 8192x16384 bf16: GELU forward
/// at 2.3 TB/s). Saturates to 0 for x < -87 (the true value is below
/// FLT_MIN there) and to 1 for large x; NaN stays NaN.
__device__ inline float sigmoidf(float x) {
  return __fdividef(1.0f, 1.0f + __expf(-x));
}

/// GELU (tanh approximation) as x * sigmoid(2u), u = sqrt(2/pi) (x +
/// 0.044715 x^3): 0.5 (1 + tanh u) = sigmoid(2u), so no tanh is needed.
/// The derivative follows from 1 - tanh(u)^2 = 4 s (1 - s):
/// f' = s + 2 x s (1 - s) u'. Agrees with the cpu backend's tanh form to a
/// few ulp of fp32 (the kernels are compared with it at tolerance).
__device__ inline float geluSigmoid(float x) {
  return sigmoidf(x * (1.5957691216f + 0.0713548163f * x * x));
}
__device__ inline float geluF(float x) { return x * geluSigmoid(x); }
__device__ inline float geluDf(float x) {
  float s = geluSigmoid(x);
  return s + x * s * (1.0f - s) * (1.5957691216f + 0.2140644488f * x * x);
}

/// f and f' of the (gate half of the) activation.
__device__ inline void pointwise(int act, float x, float &f, float &df) {
  switch (actFn(act)) {
  case TE_RT_ACT_FN_GELU_TANH: {
    float s = geluSigmoid(x);
    f = x * s;
    df = s + x * s * (1.0f - s) * (1.5957691216f + 0.2140644488f * x * x);
    return;
  }
  case TE_RT_ACT_FN_GELU_ERF:
    f = 0.5f * x * (1.0f + erff(x * 0.70710678f));
    df = 0.5f * (1.0f + erff(x * 0.70710678f)) +
         x * 0.3989422804f * expf(-0.5f * x * x);
    return;
  case TE_RT_ACT_FN_SIGMOID:
    f = sigmoidf(x), df = f * (1.0f - f);
    return;
  case TE_RT_ACT_FN_QGELU: {
    float s = sigmoidf(1.702f * x);
    f = x * s;
    df = 1.702f * x * s * (1.0f - s) + s;
    return;
  }
  case TE_RT_ACT_FN_RELU:
    f = x > 0.0f ? x : 0.0f, df = x > 0.0f ? 1.0f : 0.0f;
    return;
  case TE_RT_ACT_FN_SRELU:
    f = x > 0.0f ? x * x : 0.0f, df = fmaxf(2.0f * x, 0.0f);
    return;
  case TE_RT_ACT_FN_SILU: {
    float s = sigmoidf(x);
    f = x * s;
    df = x * s * (1.0f - s) + s;
    return;
  }
  }
  f = df = 0.0f;
}

/// f alone (the forward needs no derivative; same formulas as pointwise).
__device__ inline float actF(int act, float x) {
  switch (actFn(act)) {
  case TE_RT_ACT_FN_GELU_TANH:
    return geluF(x);
  case TE_RT_ACT_FN_RELU:
    return x > 0.0f ? x : 0.0f;
  case TE_RT_ACT_FN_SRELU:
    return x > 0.0f ? x * x : 0.0f;
  case TE_RT_ACT_FN_SILU:
    return x * sigmoidf(x);
  default: {
    float f, df;
    pointwise(act, x, f, df);
    return f;
  }
  }
}

/// f' alone (non-gated backward; same formulas as pointwise).
__device__ inline float actDf(int act, float x) {
  switch (actFn(act)) {
  case TE_RT_ACT_FN_GELU_TANH:
    return geluDf(x);
  case TE_RT_ACT_FN_RELU:
    return x > 0.0f ? 1.0f : 0.0f;
  default: {
    float f, df;
    pointwise(act, x, f, df);
    return df;
  }
  }
}

/// A gated activation's output from its halves a (activated) and b.
__device__ inline float gatedF(const ActParams &p, float a, float b) {
  if (actFn(p.act) == TE_RT_ACT_FN_CLAMPED_SILU) {
    float ac = fminf(a, p.limit);
    float bc = fminf(fmaxf(b, -p.limit), p.limit) + p.offset;
    return ac * sigmoidf(p.alpha * ac) * bc;
  }
  return actF(p.act, a) * b;
}

/// A gated activation's input gradients da, db given dy = g.
__device__ inline void gatedDf(const ActParams &p, float a, float b, float g,
                               float &da, float &db) {
  if (actFn(p.act) == TE_RT_ACT_FN_CLAMPED_SILU) {
    float ac = fminf(a, p.limit);
    float bc = fminf(fmaxf(b, -p.limit), p.limit) + p.offset;
    float s = sigmoidf(p.alpha * ac);
    float dsw = p.alpha * ac * s * (1.0f - s) + s;
    da = a <= p.limit ? dsw * g * bc : 0.0f;
    db = fabsf(b) <= p.limit ? g * ac * s : 0.0f;
    return;
  }
  float f, df;
  pointwise(p.act, a, f, df);
  da = df * g * b;
  db = g * f;
}

/// Calls body(std::integral_constant<int, A>{}) once, where A is an
/// activation code with the pointwise function `fn` (te_rt_act_fn, worked
/// out on the host) for the functions real models use (GELU tanh: GELU;
/// SiLU: SiLU), else -1. A body that evaluates the act.cuh functions with
/// act = A where A >= 0 gets them with actFn's switch folded away: a kernel
/// that loops over elements then branches once per vector instead of once
/// per element (the switches had made the fused activation-casts
/// instruction-bound: ~500 branches in each unrolled tile body, 40-60
/// instructions per element).
template <typename Body> __device__ inline void byActFn(int fn, Body &&body) {
  switch (fn) {
  case TE_RT_ACT_FN_GELU_TANH:
    body(std::integral_constant<int, TE_RT_ACT_GELU>{});
    return;
  case TE_RT_ACT_FN_SILU:
    body(std::integral_constant<int, TE_RT_ACT_SILU>{});
    return;
  default:
    body(std::integral_constant<int, -1>{});
  }
}

/// p with its activation replaced by kAct when kAct >= 0 (byActFn's
/// constant: an activation with p's pointwise function).
template <int kAct> __device__ inline ActParams withAct(const ActParams &p) {
  return kAct >= 0 ? ActParams{kAct, p.limit, p.alpha, p.offset} : p;
}

} // namespace te::kernels

#endif // TE_KERNELS_SRC_ACT_CUH
