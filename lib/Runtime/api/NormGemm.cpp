//===- NormGemm.cpp - te-mlir runtime: norms and GEMMs ----------*- C++ -*-===//
//
// te_rt_norm_* and the GEMMs of the ABI (te_rt_gemm_fprop/dgrad/wgrad and
// their activation epilogues): each call's argument checks, shared by both
// backends and run before anything touches memory, then the context's
// backend (ctx->ops, Backend.h).
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "api/Checks.h"

#include <cmath>
#include <string>

using namespace te::rt::api;
using te::rt::Checker;

extern "C" {

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

int32_t te_rt_norm_fwd(te_rt_context *ctx, int32_t kind, int32_t dtype,
                       const void *x, const void *gamma, const void *beta,
                       double eps, int32_t zero_centered, int64_t rows,
                       int64_t cols, void *z, float *mu, float *rsigma) {
  Checker c("te_rt_norm_fwd");
  int64_t n = 0;
  if (!c.context(ctx) || !normKind(c, kind) || !c.dtype(dtype) ||
      !c.nonNegative("rows", rows) || !c.positive("cols", cols) ||
      !c.product("rows * cols", rows, cols, 4, &n))
    return 1;
  bool rms = kind == TE_RT_NORM_RMSNORM;
  if (!(std::isfinite(eps) && eps >= 0.0))
    return c.fail("eps must be finite and >= 0, got " + str(eps)), 1;
  if (!c.flag("zero_centered", zero_centered) || !c.notNull("x", x) ||
      !c.notNull("gamma", gamma) ||
      (rms && !c.mustBeNull("beta", beta, "for RMSNorm")) ||
      !c.notNull("z", z) ||
      (rms ? !c.mustBeNull("mu", mu, "for RMSNorm") : !c.notNull("mu", mu)) ||
      !c.notNull("rsigma", rsigma))
    return 1;
  return ctx->ops->norm_fwd(c, ctx, kind, dtype, x, gamma, beta, eps,
                            zero_centered, rows, cols, z, mu, rsigma);
}

int32_t te_rt_norm_bwd(te_rt_context *ctx, int32_t kind, int32_t dtype,
                       const void *dz, const void *x, const float *mu,
                       const float *rsigma, const void *gamma,
                       int32_t zero_centered, int64_t rows, int64_t cols,
                       void *dx, void *dgamma, void *dbeta) {
  Checker c("te_rt_norm_bwd");
  int64_t n = 0;
  if (!c.context(ctx) || !normKind(c, kind) || !c.dtype(dtype) ||
      !c.nonNegative("rows", rows) || !c.positive("cols", cols) ||
      !c.product("rows * cols", rows, cols, 4, &n))
    return 1;
  bool rms = kind == TE_RT_NORM_RMSNORM;
  // mu is unused by RMSNorm and may be anything there.
  if (!c.flag("zero_centered", zero_centered) || !c.notNull("dz", dz) ||
      !c.notNull("x", x) || (!rms && !c.notNull("mu", mu)) ||
      !c.notNull("rsigma", rsigma) || !c.notNull("gamma", gamma) ||
      !c.notNull("dx", dx) || !c.notNull("dgamma", dgamma) ||
      (rms && !c.mustBeNull("dbeta", dbeta, "for RMSNorm")))
    return 1;
  return ctx->ops->norm_bwd(c, ctx, kind, dtype, dz, x, mu, rsigma, gamma,
                            zero_centered, rows, cols, dx, dgamma, dbeta);
}

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

int32_t te_rt_gemm_fprop(te_rt_context *ctx, int32_t dtype, const void *x,
                         const void *w, const void *bias, void *y, int64_t m,
                         int64_t n, int64_t k) {
  Checker c("te_rt_gemm_fprop");
  int64_t mn, mk, nk;
  if (!c.context(ctx) || !c.dtype(dtype) ||
      !gemmSizes(c, m, n, k, &mn, &mk, &nk) || !c.notNull("x", x) ||
      !c.notNull("w", w) || !c.notNull("y", y))
    return 1;
  return ctx->ops->gemm_fprop(c, ctx, dtype, x, w, bias, y, m, n, k);
}

int32_t te_rt_gemm_dgrad(te_rt_context *ctx, int32_t dtype, const void *dy,
                         const void *w, void *dx, int64_t m, int64_t n,
                         int64_t k) {
  Checker c("te_rt_gemm_dgrad");
  int64_t mn, mk, nk;
  if (!c.context(ctx) || !c.dtype(dtype) ||
      !gemmSizes(c, m, n, k, &mn, &mk, &nk) || !c.notNull("dy", dy) ||
      !c.notNull("w", w) || !c.notNull("dx", dx))
    return 1;
  return ctx->ops->gemm_dgrad(c, ctx, dtype, dy, w, dx, m, n, k);
}

/// The checks both wgrad GEMMs share.
static bool wgradArgs(Checker &c, te_rt_context *ctx, int32_t dtype,
                      const void *dy, const void *x, const void *dw, int64_t m,
                      int64_t n, int64_t k, int32_t accumulate) {
  int64_t mn, mk, nk;
  return c.context(ctx) && c.dtype(dtype) &&
         gemmSizes(c, m, n, k, &mn, &mk, &nk) &&
         c.flag("accumulate", accumulate) && c.notNull("dy", dy) &&
         c.notNull("x", x) && c.notNull("dw", dw);
}

int32_t te_rt_gemm_wgrad(te_rt_context *ctx, int32_t dtype, const void *dy,
                         const void *x, void *dw, void *dbias, int64_t m,
                         int64_t n, int64_t k, int32_t accumulate) {
  Checker c("te_rt_gemm_wgrad");
  if (!wgradArgs(c, ctx, dtype, dy, x, dw, m, n, k, accumulate))
    return 1;
  return ctx->ops->gemm_wgrad(c, ctx, dtype, dy, x, dw, dbias, m, n, k,
                              accumulate);
}

int32_t te_rt_gemm_wgrad_fp32(te_rt_context *ctx, int32_t dtype, const void *dy,
                              const void *x, float *dw, int64_t m, int64_t n,
                              int64_t k, int32_t accumulate) {
  Checker c("te_rt_gemm_wgrad_fp32");
  if (!wgradArgs(c, ctx, dtype, dy, x, dw, m, n, k, accumulate))
    return 1;
  return ctx->ops->gemm_wgrad_fp32(c, ctx, dtype, dy, x, dw, m, n, k,
                                   accumulate);
}

int32_t te_rt_gemm_fprop_act(te_rt_context *ctx, int32_t act, int32_t dtype,
                             const void *x, const void *w, const void *bias,
                             void *y, void *aux, int64_t m, int64_t n,
                             int64_t k) {
  Checker c("te_rt_gemm_fprop_act");
  int64_t mn, mk, nk;
  if (!c.context(ctx) || !epilogueActivation(c, act) || !c.dtype(dtype) ||
      !gemmSizes(c, m, n, k, &mn, &mk, &nk) || !c.notNull("x", x) ||
      !c.notNull("w", w) || !c.notNull("y", y))
    return 1;
  return ctx->ops->gemm_fprop_act(c, ctx, act, dtype, x, w, bias, y, aux, m, n,
                                  k);
}

int32_t te_rt_gemm_dgrad_dact(te_rt_context *ctx, int32_t act, int32_t dtype,
                              const void *dy, const void *w, const void *aux,
                              void *dx, int64_t m, int64_t n, int64_t k) {
  Checker c("te_rt_gemm_dgrad_dact");
  int64_t mn, mk, nk;
  if (!c.context(ctx) || !epilogueActivation(c, act) || !c.dtype(dtype) ||
      !gemmSizes(c, m, n, k, &mn, &mk, &nk) || !c.notNull("dy", dy) ||
      !c.notNull("w", w) || !c.notNull("aux", aux) || !c.notNull("dx", dx))
    return 1;
  return ctx->ops->gemm_dgrad_dact(c, ctx, act, dtype, dy, w, aux, dx, m, n, k);
}

} // extern "C"
