//===- BackendNormGemm.cpp - CPU backend: norms, GEMMs ----------*- C++ -*-===//
//
// The CPU reference backend's norms and GEMMs (Backend.h), after the
// checks of api/NormGemm.cpp: operands converted to fp32 (BackendUtil.h),
// the fp32 kernels of Reference.h and Gemm.h, one rounding back.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Context.h"
#include "cpu/BackendUtil.h"
#include "cpu/Gemm.h"
#include "cpu/Parallel.h"
#include "cpu/Reference.h"

#include <algorithm>

using te::cpu::DType;
using te::rt::Checker;
using te::rt::guarded;

namespace {

/// Rows per chunk of the norm backward's dgamma/dbeta reduction: fixed, so
/// that the sums do not depend on the thread count.
constexpr int64_t kNormBwdChunk = 256;

} // namespace

namespace te::rt::cpu {

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

int32_t norm_fwd(const Checker &c, te_rt_context *ctx, int32_t kind,
                 int32_t dtype, const void *x, const void *gamma,
                 const void *beta, double eps, int32_t zero_centered,
                 int64_t rows, int64_t cols, void *z, float *mu,
                 float *rsigma) {
  // Sizes the checks (api/) found to fit.
  int64_t n = rows * cols;
  bool rms = kind == TE_RT_NORM_RMSNORM;
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *X = input(ctx, 0, t, x, n);
    const float *G = input(ctx, 1, t, gamma, cols);
    const float *B = beta ? input(ctx, 2, t, beta, cols) : nullptr;
    float *Z = output(ctx, 3, t, z, n);
    auto normKindOf = rms ? te::cpu::Norm::RMSNorm : te::cpu::Norm::LayerNorm;
    te::cpu::parallelFor(rows, 8 * cols, [&](int64_t r0, int64_t r1) {
      te::cpu::normForward(normKindOf, X + r0 * cols, G, B,
                           static_cast<float>(eps), zero_centered, r1 - r0,
                           cols, Z + r0 * cols, mu ? mu + r0 : nullptr,
                           rsigma + r0);
    });
    commit(t, Z, z, n);
  });
}

int32_t norm_bwd(const Checker &c, te_rt_context *ctx, int32_t kind,
                 int32_t dtype, const void *dz, const void *x, const float *mu,
                 const float *rsigma, const void *gamma, int32_t zero_centered,
                 int64_t rows, int64_t cols, void *dx, void *dgamma,
                 void *dbeta) {
  // Sizes the checks (api/) found to fit.
  int64_t n = rows * cols;
  bool rms = kind == TE_RT_NORM_RMSNORM;
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *DZ = input(ctx, 0, t, dz, n);
    const float *X = input(ctx, 1, t, x, n);
    const float *G = input(ctx, 2, t, gamma, cols);
    float *DX = output(ctx, 3, t, dx, n);
    float *DG = output(ctx, 4, t, dgamma, cols);
    float *DB = dbeta ? output(ctx, 5, t, dbeta, cols) : nullptr;
    auto normKindOf = rms ? te::cpu::Norm::RMSNorm : te::cpu::Norm::LayerNorm;
    const float *MU = rms ? nullptr : mu;
    int64_t chunks = (rows + kNormBwdChunk - 1) / kNormBwdChunk;
    if (chunks <= 1) {
      te::cpu::normBackward(normKindOf, DZ, X, MU, rsigma, G, zero_centered,
                            rows, cols, DX, DG, DB);
    } else {
      // Per-chunk partial dgamma (and dbeta), summed in chunk order.
      int64_t per = DB ? 2 * cols : cols;
      float *partial = ctx->scratch(6, chunks * per);
      te::cpu::parallelFor(
          chunks, kNormBwdChunk * cols * 16, [&](int64_t c0, int64_t c1) {
            for (int64_t ch = c0; ch < c1; ++ch) {
              int64_t r0 = ch * kNormBwdChunk;
              int64_t r1 = std::min(rows, r0 + kNormBwdChunk);
              float *pg = partial + ch * per;
              te::cpu::normBackward(
                  normKindOf, DZ + r0 * cols, X + r0 * cols,
                  MU ? MU + r0 : nullptr, rsigma + r0, G, zero_centered,
                  r1 - r0, cols, DX + r0 * cols, pg, DB ? pg + cols : nullptr);
            }
          });
      te::cpu::parallelFor(cols, chunks * 2, [&](int64_t j0, int64_t j1) {
        for (int64_t j = j0; j < j1; ++j) {
          float g = 0.0f, b = 0.0f;
          for (int64_t ch = 0; ch < chunks; ++ch) {
            g += partial[ch * per + j];
            if (DB)
              b += partial[ch * per + cols + j];
          }
          DG[j] = g;
          if (DB)
            DB[j] = b;
        }
      });
    }
    commit(t, DX, dx, n);
    commit(t, DG, dgamma, cols);
    if (DB)
      commit(t, DB, dbeta, cols);
  });
}

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

int32_t gemm_fprop(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *x, const void *w, const void *bias, void *y,
                   int64_t m, int64_t n, int64_t k) {
  // Sizes the checks (api/) found to fit.
  int64_t mn = m * n, mk = m * k, nk = n * k;
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *X = input(ctx, 0, t, x, mk);
    const float *W = input(ctx, 1, t, w, nk);
    const float *B = bias ? input(ctx, 2, t, bias, n) : nullptr;
    float *Y = output(ctx, 3, t, y, mn);
    te::cpu::gemmTN(X, W, B, m, n, k, Y);
    commit(t, Y, y, mn);
  });
}

int32_t gemm_dgrad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *dy, const void *w, void *dx, int64_t m,
                   int64_t n, int64_t k) {
  // Sizes the checks (api/) found to fit.
  int64_t mn = m * n, mk = m * k, nk = n * k;
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *DY = input(ctx, 0, t, dy, mn);
    const float *W = input(ctx, 1, t, w, nk);
    float *DX = output(ctx, 2, t, dx, mk);
    te::cpu::gemmNN(DY, W, m, n, k, DX);
    commit(t, DX, dx, mk);
  });
}

/// dw[n,k] (in `out`) = [dw +] dy^T . x (operands and dbias in `t`): the
/// product in fp32, with accumulate added to dw in fp32, rounded once into
/// dw. The two wgrad calls: `out` is `t` (te_rt_gemm_wgrad) or f32
/// (te_rt_gemm_wgrad_fp32, a main_grad).
static int32_t wgrad(const Checker &c, te_rt_context *ctx, DType t, DType out,
                     const void *dy, const void *x, void *dw, void *dbias,
                     int64_t m, int64_t n, int64_t k, int32_t accumulate) {
  // Sizes the checks (api/) found to fit.
  int64_t mn = m * n, mk = m * k, nk = n * k;
  return guarded(c, [&] {
    const float *DY = input(ctx, 0, t, dy, mn);
    const float *X = input(ctx, 1, t, x, mk);
    // With accumulate the product goes to staging, then dw = dw + product
    // in fp32, rounded once.
    float *DW = accumulate ? ctx->scratch(2, nk) : output(ctx, 2, out, dw, nk);
    float *DB = dbias ? output(ctx, 3, t, dbias, n) : nullptr;
    te::cpu::gemmNT(DY, X, m, n, k, DW, DB);
    if (accumulate) {
      const float *old = input(ctx, 4, out, dw, nk);
      te::cpu::parallelFor(nk, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          DW[i] = old[i] + DW[i];
      });
    }
    commit(out, DW, dw, nk);
    if (DB)
      commit(t, DB, dbias, n);
  });
}

int32_t gemm_wgrad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *dy, const void *x, void *dw, void *dbias,
                   int64_t m, int64_t n, int64_t k, int32_t accumulate) {
  DType t = dtypeOf(dtype);
  return wgrad(c, ctx, t, t, dy, x, dw, dbias, m, n, k, accumulate);
}

int32_t gemm_wgrad_fp32(const Checker &c, te_rt_context *ctx, int32_t dtype,
                        const void *dy, const void *x, float *dw, int64_t m,
                        int64_t n, int64_t k, int32_t accumulate) {
  return wgrad(c, ctx, dtypeOf(dtype), DType::F32, dy, x, dw, nullptr, m, n, k,
               accumulate);
}

int32_t gemm_fprop_act(const Checker &c, te_rt_context *ctx, int32_t act,
                       int32_t dtype, const void *x, const void *w,
                       const void *bias, void *y, void *aux, int64_t m,
                       int64_t n, int64_t k) {
  // Sizes the checks (api/) found to fit.
  int64_t mn = m * n, mk = m * k, nk = n * k;
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *X = input(ctx, 0, t, x, mk);
    const float *W = input(ctx, 1, t, w, nk);
    const float *B = bias ? input(ctx, 2, t, bias, n) : nullptr;
    // The pre-activation stays in fp32 (staging even for f32: y is not it).
    float *pre = ctx->scratch(3, mn);
    te::cpu::gemmTN(X, W, B, m, n, k, pre);
    if (aux)
      commit(t, pre, aux, mn); // rounds into aux; pre keeps its fp32 values
    float *Y = output(ctx, 4, t, y, mn);
    activationForwardRows(te::cpu::Activation::GELU, pre, Y, m, n);
    commit(t, Y, y, mn);
  });
}

int32_t gemm_dgrad_dact(const Checker &c, te_rt_context *ctx, int32_t act,
                        int32_t dtype, const void *dy, const void *w,
                        const void *aux, void *dx, int64_t m, int64_t n,
                        int64_t k) {
  // Sizes the checks (api/) found to fit.
  int64_t mn = m * n, mk = m * k, nk = n * k;
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *DY = input(ctx, 0, t, dy, mn);
    const float *W = input(ctx, 1, t, w, nk);
    const float *AUX = input(ctx, 2, t, aux, mk);
    float *dh = ctx->scratch(3, mk); // dy . w, not rounded
    te::cpu::gemmNN(DY, W, m, n, k, dh);
    float *DX = output(ctx, 4, t, dx, mk);
    activationBackwardRows(te::cpu::Activation::GELU, dh, AUX, DX, m, k);
    commit(t, DX, dx, mk);
  });
}

} // namespace te::rt::cpu
