//===- Reference.h - CPU reference kernels ----------------------*- C++ -*-===//
//
// The CPU backend's reference implementations of TransformerEngine's
// LayerNorm/RMSNorm forward and backward and of the MLP activations and
// their derivatives, in fp32 as TE computes them (reference §8). Row-major
// [rows, cols] buffers; no MLIR, no CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_CPU_REFERENCE_H
#define TE_LIB_RUNTIME_CPU_REFERENCE_H

#include <cstdint>

#include "te/Runtime/TERuntime.h"

namespace te::cpu {

enum class Norm { LayerNorm, RMSNorm };

/// z = gamma~ * (x - mu) * rsigma + beta (LayerNorm) or
/// z = gamma~ * x * rsigma (RMSNorm), gamma~ = gamma + 1 when zeroCentered.
/// `beta` may be null (zero); `mu` is not written for RMSNorm (may be null).
void normForward(Norm kind, const float *x, const float *gamma,
                 const float *beta, float eps, bool zeroCentered, int64_t rows,
                 int64_t cols, float *z, float *mu, float *rsigma);

/// Gradients of normForward given dz and the saved statistics: dx [rows,
/// cols], dgamma [cols], dbeta [cols] (LayerNorm only; may be null).
void normBackward(Norm kind, const float *dz, const float *x, const float *mu,
                  const float *rsigma, const float *gamma, bool zeroCentered,
                  int64_t rows, int64_t cols, float *dx, float *dgamma,
                  float *dbeta);

/// The activations of LayerNormMLP (TEActivations.def, the te dialect's
/// ActivationKind order).
enum class Activation {
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams) Cpp = code,
#include "te/Runtime/TEActivations.def"
};

/// Parameters of clamped SwiGLU (TE defaults).
struct ClampParams {
  float limit = 7.0f, alpha = 1.702f, offset = 1.0f;
};

bool isGated(Activation act);

/// y = act(x) for x [rows, cols] (y [rows, cols]); gated: x [rows, 2n] =
/// [a | b], y [rows, n] = f(a) * b.
void activationForward(Activation act, const float *x, int64_t rows,
                       int64_t cols, float *y, ClampParams p = {});

/// dx = dy * act'(x), same layouts as activationForward (gated: dx is
/// [rows, 2n] = [da | db]).
void activationBackward(Activation act, const float *dy, const float *x,
                        int64_t rows, int64_t cols, float *dx,
                        ClampParams p = {});

} // namespace te::cpu

#endif // TE_LIB_RUNTIME_CPU_REFERENCE_H
