//===- Api.cpp - te-mlir runtime: the compute calls' checks ----*- C++ -*-===//
//
// The te_rt_* compute primitives of the ABI: every argument check, shared by
// both backends and run before anything touches memory, then the call goes
// to the context's backend (Backend.h): the CPU reference backend
// (cpu/Backend.cpp) or the CUDA kernels (cuda/Dispatch.cpp).
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Context.h"
#include "cpu/Convert.h"
#include "cpu/Quantize.h"
#include "cpu/Reference.h"

#include <cmath>
#include <cstdio>
#include <string>

using te::rt::Checker;

namespace {

//===----------------------------------------------------------------------===//
// Checks shared by several calls
//===----------------------------------------------------------------------===//

/// %g of a number, for messages.
std::string str(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

bool normKind(const Checker &c, int32_t kind) {
  if (kind == TE_RT_NORM_LAYERNORM || kind == TE_RT_NORM_RMSNORM)
    return true;
  return c.fail("unknown norm kind " + std::to_string(kind) +
                " (0 layernorm, 1 rmsnorm)");
}

const char *const kActivationNames[] = {
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams) #name,
#include "te/Runtime/TEActivations.def"
};
static_assert(sizeof(kActivationNames) / sizeof(kActivationNames[0]) ==
                  TE_RT_ACT_COUNT,
              "one name per TEActivations.def activation");

/// Checks act, and for gated activations an even `cols`.
bool activation(const Checker &c, int32_t act, int64_t cols, float limit) {
  if (act < 0 || act >= TE_RT_ACT_COUNT)
    return c.fail("unknown activation " + std::to_string(act));
  auto kind = static_cast<te::cpu::Activation>(act);
  if (te::cpu::isGated(kind) && cols % 2 != 0)
    return c.fail(std::string("gated activation ") + kActivationNames[act] +
                  " needs an even number of columns, got " +
                  std::to_string(cols));
  if (act == TE_RT_ACT_CLAMPED_SWIGLU && !(limit >= 0.0f))
    return c.fail("limit must be >= 0 for clamped_swiglu, got " + str(limit));
  return true;
}

/// Checks of the sizes shared by the three GEMMs; writes the element counts
/// of the [m,n], [m,k] and [n,k] operands.
bool gemmSizes(const Checker &c, int64_t m, int64_t n, int64_t k, int64_t *mn,
               int64_t *mk, int64_t *nk) {
  return c.nonNegative("m", m) && c.nonNegative("n", n) &&
         c.nonNegative("k", k) && c.product("m * n", m, n, 4, mn) &&
         c.product("m * k", m, k, 4, mk) && c.product("n * k", n, k, 4, nk);
}

bool fp8Format(const Checker &c, int32_t format, const char *name) {
  if (format == TE_RT_FP8_E4M3 || format == TE_RT_FP8_E5M2)
    return true;
  return c.fail("unknown " + std::string(name) + " " + std::to_string(format) +
                " (0 E4M3, 1 E5M2)");
}

/// The copies a block-scaled quantization writes: each is given as both its
/// data and its scales or neither, and at least one is requested.
bool blockCopies(const Checker &c, const void *data, const void *scale_inv,
                 const void *columnwise_data,
                 const void *columnwise_scale_inv) {
  if (bool(data) != bool(scale_inv))
    return c.fail("data and scale_inv must both be given or both be NULL");
  if (bool(columnwise_data) != bool(columnwise_scale_inv))
    return c.fail("columnwise_data and columnwise_scale_inv must both be "
                  "given or both be NULL");
  if (!data && !columnwise_data)
    return c.fail("no copy requested (data and columnwise_data are NULL)");
  return true;
}

/// The activation of a GEMM epilogue: GELU (tanh approximation) only, as
/// cuBLASLt's GELU_AUX_BIAS / DGELU compute it.
bool epilogueActivation(const Checker &c, int32_t act) {
  if (act == TE_RT_ACT_GELU)
    return true;
  std::string name = act >= 0 && act < TE_RT_ACT_COUNT
                         ? std::string(" (") + kActivationNames[act] + ")"
                         : std::string();
  return c.fail("act must be TE_RT_ACT_GELU (0), the GEMM epilogue's only "
                "activation, got " +
                std::to_string(act) + name);
}

/// The checks of the fused activation-casts beyond the activation's own.
bool fusedCastArgs(const Checker &c, int32_t format, const float *scale,
                   const void *data, const void *transpose,
                   const float *scale_inv) {
  if (!fp8Format(c, format, "format") || !c.notNull("scale_inv", scale_inv))
    return false;
  if (!scale)
    return c.fail("scale is NULL (the fused activation-cast is delayed "
                  "scaling's: the scale is known before the activation runs)");
  if (!data && !transpose)
    return c.fail("data and transpose are both NULL (nothing to write)");
  return true;
}

/// A dimension of a block-scaled recipe's tensor: a whole number of blocks
/// of `block` elements (32 for MXFP8, 16 for NVFP4).
bool wholeBlocks(const Checker &c, const char *name, int64_t v, int block,
                 const char *recipe) {
  return v % block == 0 ? true
                        : c.fail(std::string(name) + " must be a multiple of " +
                                 std::to_string(block) + " (" + recipe +
                                 " blocks), got " + std::to_string(v));
}

/// The copies te_rt_quantize_nvfp4 writes: each is given as its data, its
/// scales and its amax, or none of them; at least one is requested.
bool nvfp4Copies(const Checker &c, const void *data, const void *scale_inv,
                 const void *amax, const void *columnwise_data,
                 const void *columnwise_scale_inv,
                 const void *columnwise_amax) {
  if (!(bool(data) == bool(scale_inv) && bool(data) == bool(amax)))
    return c.fail("data, scale_inv and amax must all be given or all be "
                  "NULL");
  if (!(bool(columnwise_data) == bool(columnwise_scale_inv) &&
        bool(columnwise_data) == bool(columnwise_amax)))
    return c.fail("columnwise_data, columnwise_scale_inv and columnwise_amax "
                  "must all be given or all be NULL");
  if (!data && !columnwise_data)
    return c.fail("no copy requested (data and columnwise_data are NULL)");
  return true;
}

} // namespace

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
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::norm_fwd(c, ctx, kind, dtype, x, gamma, beta, eps,
                                  zero_centered, rows, cols, z, mu, rsigma,
                                  rms);
  return te::rt::cpu::norm_fwd(c, ctx, kind, dtype, x, gamma, beta, eps,
                               zero_centered, rows, cols, z, mu, rsigma, n,
                               rms);
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
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::norm_bwd(c, ctx, kind, dtype, dz, x, mu, rsigma, gamma,
                                  zero_centered, rows, cols, dx, dgamma, dbeta,
                                  rms);
  return te::rt::cpu::norm_bwd(c, ctx, kind, dtype, dz, x, mu, rsigma, gamma,
                               zero_centered, rows, cols, dx, dgamma, dbeta, n,
                               rms);
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
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::gemm_fprop(c, ctx, dtype, x, w, bias, y, m, n, k);
  return te::rt::cpu::gemm_fprop(c, ctx, dtype, x, w, bias, y, m, n, k, mn, mk,
                                 nk);
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
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::gemm_dgrad(c, ctx, dtype, dy, w, dx, m, n, k);
  return te::rt::cpu::gemm_dgrad(c, ctx, dtype, dy, w, dx, m, n, k, mn, mk, nk);
}

int32_t te_rt_gemm_wgrad(te_rt_context *ctx, int32_t dtype, const void *dy,
                         const void *x, void *dw, void *dbias, int64_t m,
                         int64_t n, int64_t k, int32_t accumulate) {
  Checker c("te_rt_gemm_wgrad");
  int64_t mn, mk, nk;
  if (!c.context(ctx) || !c.dtype(dtype) ||
      !gemmSizes(c, m, n, k, &mn, &mk, &nk) ||
      !c.flag("accumulate", accumulate) || !c.notNull("dy", dy) ||
      !c.notNull("x", x) || !c.notNull("dw", dw))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::gemm_wgrad(c, ctx, dtype, dy, x, dw, dbias, m, n, k,
                                    accumulate);
  return te::rt::cpu::gemm_wgrad(c, ctx, dtype, dy, x, dw, dbias, m, n, k,
                                 accumulate, mn, mk, nk);
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
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::gemm_fprop_act(c, ctx, act, dtype, x, w, bias, y, aux,
                                        m, n, k);
  return te::rt::cpu::gemm_fprop_act(c, ctx, act, dtype, x, w, bias, y, aux, m,
                                     n, k, mn, mk, nk);
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
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::gemm_dgrad_dact(c, ctx, act, dtype, dy, w, aux, dx, m,
                                         n, k);
  return te::rt::cpu::gemm_dgrad_dact(c, ctx, act, dtype, dy, w, aux, dx, m, n,
                                      k, mn, mk, nk);
}

int32_t te_rt_check_multiple(te_rt_context *ctx, int64_t value,
                             int64_t multiple, const char *what) {
  Checker c("te_rt_check_multiple");
  if (!c.context(ctx) || !c.positive("multiple", multiple) ||
      !c.notNull("what", what))
    return 1;
  if (value % multiple == 0)
    return 0;
  // The message is the entry's own ("<entry>: recipe ... needs ..."), not
  // prefixed with this call's name.
  te_rt_internal_set_error(std::string(what) + ", got " +
                           std::to_string(value));
  return 1;
}

int32_t te_rt_check_range(te_rt_context *ctx, int64_t value, int64_t lo,
                          int64_t hi, const char *what) {
  Checker c("te_rt_check_range");
  if (!c.context(ctx) || !c.notNull("what", what))
    return 1;
  if (lo <= value && value <= hi)
    return 0;
  te_rt_internal_set_error(std::string(what) + " must be in [" +
                           std::to_string(lo) + ", " + std::to_string(hi) +
                           "], got " + std::to_string(value));
  return 1;
}

//===----------------------------------------------------------------------===//
// Activations and bias gradient
//===----------------------------------------------------------------------===//

int32_t te_rt_act_fwd(te_rt_context *ctx, int32_t act, int32_t dtype,
                      const void *x, void *y, int64_t rows, int64_t cols,
                      float limit, float alpha, float offset, float *amax) {
  Checker c("te_rt_act_fwd");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !activation(c, act, cols, limit) || !c.notNull("x", x) ||
      !c.notNull("y", y))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::act_fwd(c, ctx, act, dtype, x, y, rows, cols, limit,
                                 alpha, offset, amax);
  return te::rt::cpu::act_fwd(c, ctx, act, dtype, x, y, rows, cols, limit,
                              alpha, offset, amax, n);
}

int32_t te_rt_act_bwd(te_rt_context *ctx, int32_t act, int32_t dtype,
                      const void *dy, const void *x, void *dx, int64_t rows,
                      int64_t cols, float limit, float alpha, float offset,
                      float *amax) {
  Checker c("te_rt_act_bwd");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !activation(c, act, cols, limit) || !c.notNull("dy", dy) ||
      !c.notNull("x", x) || !c.notNull("dx", dx))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::act_bwd(c, ctx, act, dtype, dy, x, dx, rows, cols,
                                 limit, alpha, offset, amax);
  return te::rt::cpu::act_bwd(c, ctx, act, dtype, dy, x, dx, rows, cols, limit,
                              alpha, offset, amax, n);
}

int32_t te_rt_bias_grad(te_rt_context *ctx, int32_t dtype, const void *dy,
                        void *dbias, int64_t rows, int64_t cols) {
  Checker c("te_rt_bias_grad");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !c.notNull("dy", dy) || !c.notNull("dbias", dbias))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::bias_grad(c, ctx, dtype, dy, dbias, rows, cols);
  return te::rt::cpu::bias_grad(c, ctx, dtype, dy, dbias, rows, cols);
}

int32_t te_rt_dbias_dact(te_rt_context *ctx, int32_t act, int32_t dtype,
                         const void *dy, const void *x, void *dx, void *dbias,
                         int64_t rows, int64_t cols, float limit, float alpha,
                         float offset, float *amax) {
  Checker c("te_rt_dbias_dact");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !activation(c, act, cols, limit) || !c.notNull("dy", dy) ||
      !c.notNull("x", x) || !c.notNull("dx", dx) || !c.notNull("dbias", dbias))
    return 1;
  auto kind = static_cast<te::cpu::Activation>(act);
  if (te::cpu::isGated(kind))
    return c.fail(std::string("gated activation ") + kActivationNames[act] +
                  " has no fused dbias + dact"),
           1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::dbias_dact(c, ctx, act, dtype, dy, x, dx, dbias, rows,
                                    cols, limit, alpha, offset, amax);
  return te::rt::cpu::dbias_dact(c, ctx, act, dtype, dy, x, dx, dbias, rows,
                                 cols, limit, alpha, offset, amax, n, kind);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

int32_t te_rt_add(te_rt_context *ctx, int32_t dtype, const void *a,
                  const void *b, void *c_, int64_t n) {
  Checker c("te_rt_add");
  if (!c.context(ctx) || !c.dtype(dtype) || !c.count("n", n, 4) ||
      !c.notNull("a", a) || !c.notNull("b", b) || !c.notNull("c", c_))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::add(c, ctx, dtype, a, b, c_, n);
  return te::rt::cpu::add(c, ctx, dtype, a, b, c_, n);
}

int32_t te_rt_bias_add(te_rt_context *ctx, int32_t dtype, const void *x,
                       const void *bias, void *out, int64_t rows,
                       int64_t cols) {
  Checker c("te_rt_bias_add");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !c.notNull("x", x) || !c.notNull("bias", bias) || !c.notNull("out", out))
    return 1;
  // out may be x (in place); any other overlap would read what it wrote.
  if (n > 0) { // (then cols <= n, and both byte counts fit)
    int64_t size = te::cpu::dtypeSize(static_cast<te::cpu::DType>(dtype));
    uintptr_t o = reinterpret_cast<uintptr_t>(out),
              xs = reinterpret_cast<uintptr_t>(x),
              b = reinterpret_cast<uintptr_t>(bias);
    uint64_t bytes = uint64_t(n * size), biasBytes = uint64_t(cols * size);
    if (o != xs && o < xs + bytes && xs < o + bytes)
      return c.fail("out overlaps x (in place is out == x)"), 1;
    if (o < b + biasBytes && b < o + bytes)
      return c.fail("out overlaps bias"), 1;
  }
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::bias_add(c, ctx, dtype, x, bias, out, rows, cols);
  return te::rt::cpu::bias_add(c, ctx, dtype, x, bias, out, rows, cols);
}

int32_t te_rt_cast(te_rt_context *ctx, int32_t src_dtype, int32_t dst_dtype,
                   const void *src, void *dst, int64_t n) {
  Checker c("te_rt_cast");
  if (!c.context(ctx) || !c.dtype(src_dtype, "src_dtype") ||
      !c.dtype(dst_dtype, "dst_dtype") || !c.count("n", n, 4) ||
      !c.notNull("src", src) || !c.notNull("dst", dst))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::cast(c, ctx, src_dtype, dst_dtype, src, dst, n);
  return te::rt::cpu::cast(c, ctx, src_dtype, dst_dtype, src, dst, n);
}

int32_t te_rt_transpose(te_rt_context *ctx, int32_t dtype, const void *src,
                        void *dst, int64_t rows, int64_t cols) {
  Checker c("te_rt_transpose");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !c.notNull("src", src) || !c.notNull("dst", dst))
    return 1;
  int64_t bytes = n * te::cpu::dtypeSize(static_cast<te::cpu::DType>(dtype));
  uintptr_t d = reinterpret_cast<uintptr_t>(dst),
            s = reinterpret_cast<uintptr_t>(src);
  if (bytes && d < s + bytes && s < d + bytes)
    return c.fail("dst and src overlap"), 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::transpose(c, ctx, dtype, src, dst, rows, cols);
  return te::rt::cpu::transpose(c, ctx, dtype, src, dst, rows, cols);
}

int32_t te_rt_zero_ranges(te_rt_context *ctx, void *const *ptrs,
                          const int64_t *bytes, int64_t count) {
  Checker c("te_rt_zero_ranges");
  if (!c.context(ctx) || !c.nonNegative("count", count))
    return 1;
  if (count && (!c.notNull("ptrs", ptrs) || !c.notNull("bytes", bytes)))
    return 1;
  // No machine addresses 2^48 bytes (te_rt_alloc's limit): a larger range
  // is a size computed wrong upstream.
  constexpr int64_t kMaxBytes = int64_t(1) << 48;
  for (int64_t i = 0; i < count; ++i) {
    std::string at = "[" + std::to_string(i) + "]";
    int64_t n = bytes[i];
    uintptr_t end;
    if (n < 0)
      return c.fail("bytes" + at + " must be >= 0, got " + std::to_string(n)),
             1;
    if (n > kMaxBytes)
      return c.fail("bytes" + at + " = " + std::to_string(n) +
                    " is too large (the limit is 2^48)"),
             1;
    if (n && !ptrs[i])
      return c.fail("ptrs" + at + " is NULL (bytes" + at + " = " +
                    std::to_string(n) + ")"),
             1;
    if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(ptrs[i]),
                               static_cast<uintptr_t>(n), &end))
      return c.fail("ptrs" + at + " + bytes" + at +
                    " overflows the address space"),
             1;
  }
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::zero_ranges(c, ctx, ptrs, bytes, count);
  return te::rt::cpu::zero_ranges(c, ctx, ptrs, bytes, count);
}

//===----------------------------------------------------------------------===//
// Per-tensor FP8
//===----------------------------------------------------------------------===//

int32_t te_rt_quantize_fp8(te_rt_context *ctx, int32_t dtype, const void *x,
                           int64_t rows, int64_t cols, int32_t format,
                           const float *scale, int32_t pow2_scale, void *data,
                           void *transpose, float *scale_inv, float *amax,
                           const float *amax_in) {
  Checker c("te_rt_quantize_fp8");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !fp8Format(c, format, "format") || !c.flag("pow2_scale", pow2_scale) ||
      !c.notNull("x", x) || !c.notNull("scale_inv", scale_inv))
    return 1;
  if (!data && !transpose)
    return c.fail("data and transpose are both NULL (nothing to write)"), 1;
  if (scale && pow2_scale)
    return c.fail("pow2_scale applies to current scaling only (scale must "
                  "be NULL)"),
           1;
  // A precomputed amax replaces current scaling's amax pass; it is then the
  // amax, so there is none to write.
  if ((scale && !c.mustBeNull("amax_in", amax_in,
                              "with delayed scaling (scale given)")) ||
      (amax_in && !c.mustBeNull("amax", amax,
                                "when amax_in is given (amax_in is the amax)")))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::quantize_fp8(c, ctx, dtype, x, rows, cols, format,
                                      scale, pow2_scale, data, transpose,
                                      scale_inv, amax, amax_in);
  return te::rt::cpu::quantize_fp8(c, ctx, dtype, x, rows, cols, format, scale,
                                   pow2_scale, data, transpose, scale_inv, amax,
                                   amax_in, n);
}

int32_t te_rt_dbias_quantize_fp8(te_rt_context *ctx, int32_t dtype,
                                 const void *x, int64_t rows, int64_t cols,
                                 int32_t format, const float *scale,
                                 int32_t pow2_scale, void *data,
                                 void *transpose, float *scale_inv, float *amax,
                                 void *dbias) {
  Checker c("te_rt_dbias_quantize_fp8");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !fp8Format(c, format, "format") || !c.flag("pow2_scale", pow2_scale) ||
      !c.notNull("x", x) || !c.notNull("scale_inv", scale_inv) ||
      !c.notNull("dbias", dbias))
    return 1;
  if (!data && !transpose)
    return c.fail("data and transpose are both NULL (nothing to write)"), 1;
  if (scale && pow2_scale)
    return c.fail("pow2_scale applies to current scaling only (scale must "
                  "be NULL)"),
           1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::dbias_quantize_fp8(c, ctx, dtype, x, rows, cols,
                                            format, scale, pow2_scale, data,
                                            transpose, scale_inv, amax, dbias);
  return te::rt::cpu::dbias_quantize_fp8(c, ctx, dtype, x, rows, cols, format,
                                         scale, pow2_scale, data, transpose,
                                         scale_inv, amax, dbias);
}

int32_t te_rt_act_quantize_fp8(te_rt_context *ctx, int32_t act, int32_t dtype,
                               const void *x, int64_t rows, int64_t cols,
                               float limit, float alpha, float offset,
                               int32_t format, const float *scale, void *data,
                               void *transpose, float *scale_inv, float *amax) {
  Checker c("te_rt_act_quantize_fp8");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !activation(c, act, cols, limit) || !c.notNull("x", x) ||
      !fusedCastArgs(c, format, scale, data, transpose, scale_inv))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::act_quantize_fp8(c, ctx, act, dtype, x, rows, cols,
                                          limit, alpha, offset, format, scale,
                                          data, transpose, scale_inv, amax);
  return te::rt::cpu::act_quantize_fp8(c, ctx, act, dtype, x, rows, cols, limit,
                                       alpha, offset, format, scale, data,
                                       transpose, scale_inv, amax);
}

int32_t te_rt_norm_quantize_fp8(te_rt_context *ctx, int32_t kind, int32_t dtype,
                                const void *x, const void *gamma,
                                const void *beta, double eps,
                                int32_t zero_centered, int64_t rows,
                                int64_t cols, float *mu, float *rsigma,
                                int32_t format, const float *scale,
                                int32_t pow2_scale, void *data, void *transpose,
                                float *scale_inv, float *amax) {
  Checker c("te_rt_norm_quantize_fp8");
  int64_t n = 0;
  if (!c.context(ctx) || !normKind(c, kind) || !c.dtype(dtype) ||
      !c.nonNegative("rows", rows) || !c.positive("cols", cols) ||
      !c.product("rows * cols", rows, cols, 4, &n))
    return 1;
  const bool rms = kind == TE_RT_NORM_RMSNORM;
  if (!(std::isfinite(eps) && eps >= 0.0))
    return c.fail("eps must be finite and >= 0, got " + str(eps)), 1;
  if (!c.flag("zero_centered", zero_centered) || !c.notNull("x", x) ||
      !c.notNull("gamma", gamma) ||
      (rms && !c.mustBeNull("beta", beta, "for RMSNorm")) ||
      (rms ? !c.mustBeNull("mu", mu, "for RMSNorm") : !c.notNull("mu", mu)) ||
      !c.notNull("rsigma", rsigma) || !fp8Format(c, format, "format") ||
      !c.flag("pow2_scale", pow2_scale) || !c.notNull("scale_inv", scale_inv))
    return 1;
  if (!data && !transpose)
    return c.fail("data and transpose are both NULL (nothing to write)"), 1;
  if (scale && pow2_scale)
    return c.fail("pow2_scale applies to current scaling only (scale must "
                  "be NULL)"),
           1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::norm_quantize_fp8(
        c, ctx, kind, dtype, x, gamma, beta, eps, zero_centered, rows, cols, mu,
        rsigma, format, scale, pow2_scale, data, transpose, scale_inv, amax,
        rms);
  return te::rt::cpu::norm_quantize_fp8(
      c, ctx, kind, dtype, x, gamma, beta, eps, zero_centered, rows, cols, mu,
      rsigma, format, scale, pow2_scale, data, transpose, scale_inv, amax, n);
}

int32_t te_rt_dact_quantize_fp8(te_rt_context *ctx, int32_t act, int32_t dtype,
                                const void *dy, const void *x, void *dbias,
                                int64_t rows, int64_t cols, float limit,
                                float alpha, float offset, int32_t format,
                                const float *scale, void *data, void *transpose,
                                float *scale_inv, float *amax) {
  Checker c("te_rt_dact_quantize_fp8");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !activation(c, act, cols, limit) || !c.notNull("dy", dy) ||
      !c.notNull("x", x) ||
      !fusedCastArgs(c, format, scale, data, transpose, scale_inv))
    return 1;
  if (dbias && te::cpu::isGated(static_cast<te::cpu::Activation>(act)))
    return c.fail(std::string("gated activation ") + kActivationNames[act] +
                  " has no fused dbias + dact (dbias must be NULL)"),
           1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::dact_quantize_fp8(
        c, ctx, act, dtype, dy, x, dbias, rows, cols, limit, alpha, offset,
        format, scale, data, transpose, scale_inv, amax);
  return te::rt::cpu::dact_quantize_fp8(
      c, ctx, act, dtype, dy, x, dbias, rows, cols, limit, alpha, offset,
      format, scale, data, transpose, scale_inv, amax, n);
}

int32_t te_rt_gemm_fp8(te_rt_context *ctx, int32_t out_dtype, int32_t a_format,
                       const void *a, const float *a_scale_inv,
                       int32_t b_format, const void *b,
                       const float *b_scale_inv, const void *bias, void *d,
                       int64_t m, int64_t n, int64_t k, int32_t accumulate,
                       int32_t fast_accumulate) {
  Checker c("te_rt_gemm_fp8");
  int64_t mn, mk, nk;
  if (!c.context(ctx) || !c.dtype(out_dtype, "out_dtype") ||
      !fp8Format(c, a_format, "a_format") ||
      !fp8Format(c, b_format, "b_format") ||
      !gemmSizes(c, m, n, k, &mn, &mk, &nk) ||
      !c.flag("accumulate", accumulate) ||
      !c.flag("fast_accumulate", fast_accumulate) || !c.notNull("a", a) ||
      !c.notNull("a_scale_inv", a_scale_inv) || !c.notNull("b", b) ||
      !c.notNull("b_scale_inv", b_scale_inv) || !c.notNull("d", d))
    return 1;
  if (a_format == TE_RT_FP8_E5M2 && b_format == TE_RT_FP8_E5M2)
    return c.fail("E5M2 x E5M2 GEMMs are not supported (one operand must be "
                  "E4M3, as in TE's HYBRID format)"),
           1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::gemm_fp8(c, ctx, out_dtype, a_format, a, a_scale_inv,
                                  b_format, b, b_scale_inv, bias, d, m, n, k,
                                  accumulate, fast_accumulate);
  return te::rt::cpu::gemm_fp8(c, ctx, out_dtype, a_format, a, a_scale_inv,
                               b_format, b, b_scale_inv, bias, d, m, n, k,
                               accumulate, fast_accumulate, mk, nk);
}

//===----------------------------------------------------------------------===//
// Float8 block scaling
//===----------------------------------------------------------------------===//

int32_t te_rt_quantize_fp8_block(te_rt_context *ctx, int32_t dtype,
                                 const void *x, int64_t rows, int64_t cols,
                                 int32_t block_2d, int32_t pow2_scale,
                                 void *data, float *scale_inv,
                                 void *columnwise_data,
                                 float *columnwise_scale_inv) {
  Checker c("te_rt_quantize_fp8_block");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !c.flag("block_2d", block_2d) || !c.flag("pow2_scale", pow2_scale) ||
      !c.notNull("x", x))
    return 1;
  if (!blockCopies(c, data, scale_inv, columnwise_data, columnwise_scale_inv))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::quantize_fp8_block(
        c, ctx, dtype, x, rows, cols, block_2d, pow2_scale, data, scale_inv,
        columnwise_data, columnwise_scale_inv);
  return te::rt::cpu::quantize_fp8_block(
      c, ctx, dtype, x, rows, cols, block_2d, pow2_scale, data, scale_inv,
      columnwise_data, columnwise_scale_inv, n);
}

int32_t te_rt_gemm_fp8_block(te_rt_context *ctx, int32_t out_dtype,
                             const void *a, const float *a_scale_inv,
                             int32_t a_block_2d, const void *b,
                             const float *b_scale_inv, int32_t b_block_2d,
                             const void *bias, void *d, int64_t m, int64_t n,
                             int64_t k, int32_t accumulate) {
  Checker c("te_rt_gemm_fp8_block");
  int64_t mn, mk, nk;
  if (!c.context(ctx) || !c.dtype(out_dtype, "out_dtype") ||
      !gemmSizes(c, m, n, k, &mn, &mk, &nk) ||
      !c.flag("a_block_2d", a_block_2d) || !c.flag("b_block_2d", b_block_2d) ||
      !c.flag("accumulate", accumulate) || !c.notNull("a", a) ||
      !c.notNull("a_scale_inv", a_scale_inv) || !c.notNull("b", b) ||
      !c.notNull("b_scale_inv", b_scale_inv) || !c.notNull("d", d))
    return 1;
  if (a_block_2d && b_block_2d)
    return c.fail("both operands use 128x128 blocks (at most one may, as in "
                  "TransformerEngine)"),
           1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::gemm_fp8_block(c, ctx, out_dtype, a, a_scale_inv,
                                        a_block_2d, b, b_scale_inv, b_block_2d,
                                        bias, d, m, n, k, accumulate);
  return te::rt::cpu::gemm_fp8_block(c, ctx, out_dtype, a, a_scale_inv,
                                     a_block_2d, b, b_scale_inv, b_block_2d,
                                     bias, d, m, n, k, accumulate, mk, nk);
}

//===----------------------------------------------------------------------===//
// MXFP8
//===----------------------------------------------------------------------===//

int32_t te_rt_quantize_mxfp8(te_rt_context *ctx, int32_t dtype, const void *x,
                             int64_t rows, int64_t cols, int32_t format,
                             int32_t swizzled, void *data, uint8_t *scale_inv,
                             void *columnwise_data,
                             uint8_t *columnwise_scale_inv) {
  Checker c("te_rt_quantize_mxfp8");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !wholeBlocks(c, "rows", rows, 32, "MXFP8") ||
      !wholeBlocks(c, "cols", cols, 32, "MXFP8") ||
      !fp8Format(c, format, "format") || !c.flag("swizzled", swizzled) ||
      !c.notNull("x", x))
    return 1;
  if (!blockCopies(c, data, scale_inv, columnwise_data, columnwise_scale_inv))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::quantize_mxfp8(c, ctx, dtype, x, rows, cols, format,
                                        swizzled, data, scale_inv,
                                        columnwise_data, columnwise_scale_inv);
  return te::rt::cpu::quantize_mxfp8(c, ctx, dtype, x, rows, cols, format,
                                     swizzled, data, scale_inv, columnwise_data,
                                     columnwise_scale_inv, n);
}

int32_t te_rt_gemm_mxfp8(te_rt_context *ctx, int32_t out_dtype,
                         int32_t a_format, const void *a,
                         const uint8_t *a_scale_inv, int32_t a_columnwise,
                         int32_t b_format, const void *b,
                         const uint8_t *b_scale_inv, int32_t b_columnwise,
                         int32_t swizzled, const void *bias, void *d, int64_t m,
                         int64_t n, int64_t k, int32_t accumulate) {
  Checker c("te_rt_gemm_mxfp8");
  int64_t mn, mk, nk;
  if (!c.context(ctx) || !c.dtype(out_dtype, "out_dtype") ||
      !fp8Format(c, a_format, "a_format") ||
      !fp8Format(c, b_format, "b_format") ||
      !gemmSizes(c, m, n, k, &mn, &mk, &nk) ||
      !wholeBlocks(c, "k", k, 32, "MXFP8") ||
      !c.flag("a_columnwise", a_columnwise) ||
      !c.flag("b_columnwise", b_columnwise) || !c.flag("swizzled", swizzled) ||
      !c.flag("accumulate", accumulate) || !c.notNull("a", a) ||
      !c.notNull("a_scale_inv", a_scale_inv) || !c.notNull("b", b) ||
      !c.notNull("b_scale_inv", b_scale_inv) || !c.notNull("d", d))
    return 1;
  if (a_format == TE_RT_FP8_E5M2 && b_format == TE_RT_FP8_E5M2)
    return c.fail("E5M2 x E5M2 GEMMs are not supported (one operand must be "
                  "E4M3)"),
           1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::gemm_mxfp8(
        c, ctx, out_dtype, a_format, a, a_scale_inv, a_columnwise, b_format, b,
        b_scale_inv, b_columnwise, swizzled, bias, d, m, n, k, accumulate);
  return te::rt::cpu::gemm_mxfp8(c, ctx, out_dtype, a_format, a, a_scale_inv,
                                 a_columnwise, b_format, b, b_scale_inv,
                                 b_columnwise, swizzled, bias, d, m, n, k,
                                 accumulate, mk, nk);
}

//===----------------------------------------------------------------------===//
// NVFP4
//===----------------------------------------------------------------------===//

uint32_t te_rt_nvfp4_random_bits(uint64_t context_seed, uint64_t seed,
                                 int32_t copy, int64_t index) {
  return te::cpu::nvfp4RandomBits(context_seed, seed, copy, index);
}

int32_t te_rt_quantize_nvfp4(te_rt_context *ctx, int32_t dtype, const void *x,
                             int64_t rows, int64_t cols, int32_t block_2d,
                             int32_t rht, int32_t stochastic_rounding,
                             uint64_t seed, int32_t swizzled, void *data,
                             uint8_t *scale_inv, float *amax,
                             void *columnwise_data,
                             uint8_t *columnwise_scale_inv,
                             float *columnwise_amax) {
  Checker c("te_rt_quantize_nvfp4");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.positive("rows", rows) ||
      !c.positive("cols", cols) || !wholeBlocks(c, "rows", rows, 16, "NVFP4") ||
      !wholeBlocks(c, "cols", cols, 16, "NVFP4") ||
      !c.product("rows * cols", rows, cols, 4, &n) ||
      !c.flag("block_2d", block_2d) || !c.flag("rht", rht) ||
      !c.flag("stochastic_rounding", stochastic_rounding) ||
      !c.flag("swizzled", swizzled) || !c.notNull("x", x))
    return 1;
  if (!nvfp4Copies(c, data, scale_inv, amax, columnwise_data,
                   columnwise_scale_inv, columnwise_amax))
    return 1;
  if (rht && !columnwise_data)
    return c.fail("rht needs the columnwise copy (columnwise_data is NULL): "
                  "the transform applies to the columnwise data only"),
           1;
  if (rht && block_2d)
    return c.fail("rht and block_2d cannot be combined (the transform is "
                  "for 1-D blocks, TE's wgrad operands; 16x16 blocks are "
                  "for weights)"),
           1;
  if (stochastic_rounding && block_2d)
    return c.fail("stochastic_rounding and block_2d cannot be combined "
                  "(16x16 tiles are for weights, whose two copies must hold "
                  "the same values; TE rounds gradients stochastically)"),
           1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::quantize_nvfp4(
        c, ctx, dtype, x, rows, cols, block_2d, rht, stochastic_rounding, seed,
        swizzled, data, scale_inv, amax, columnwise_data, columnwise_scale_inv,
        columnwise_amax);
  return te::rt::cpu::quantize_nvfp4(c, ctx, dtype, x, rows, cols, block_2d,
                                     rht, stochastic_rounding, seed, swizzled,
                                     data, scale_inv, amax, columnwise_data,
                                     columnwise_scale_inv, columnwise_amax, n);
}

int32_t te_rt_gemm_nvfp4(te_rt_context *ctx, int32_t out_dtype, const void *a,
                         const uint8_t *a_scale_inv, const float *a_amax,
                         const void *b, const uint8_t *b_scale_inv,
                         const float *b_amax, int32_t swizzled,
                         const void *bias, void *d, int64_t m, int64_t n,
                         int64_t k, int32_t accumulate) {
  Checker c("te_rt_gemm_nvfp4");
  int64_t mn, mk, nk;
  if (!c.context(ctx) || !c.dtype(out_dtype, "out_dtype") ||
      !c.positive("m", m) || !c.positive("n", n) ||
      !gemmSizes(c, m, n, k, &mn, &mk, &nk) ||
      !wholeBlocks(c, "k", k, 16, "NVFP4") || !c.flag("swizzled", swizzled) ||
      !c.flag("accumulate", accumulate) || !c.notNull("a", a) ||
      !c.notNull("a_scale_inv", a_scale_inv) || !c.notNull("a_amax", a_amax) ||
      !c.notNull("b", b) || !c.notNull("b_scale_inv", b_scale_inv) ||
      !c.notNull("b_amax", b_amax) || !c.notNull("d", d))
    return 1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::gemm_nvfp4(c, ctx, out_dtype, a, a_scale_inv, a_amax,
                                    b, b_scale_inv, b_amax, swizzled, bias, d,
                                    m, n, k, accumulate);
  return te::rt::cpu::gemm_nvfp4(c, ctx, out_dtype, a, a_scale_inv, a_amax, b,
                                 b_scale_inv, b_amax, swizzled, bias, d, m, n,
                                 k, accumulate, mk, nk);
}

int32_t te_rt_amax_update(te_rt_context *ctx, const float *history,
                          const float *scale, const float *amax, int64_t len,
                          int64_t n, float fp8_max, int32_t margin,
                          int32_t most_recent, float *new_history,
                          float *new_scale) {
  Checker c("te_rt_amax_update");
  int64_t count = 0;
  if (!c.context(ctx) || !c.positive("len", len) || !c.nonNegative("n", n) ||
      !c.product("len * n", len, n, 4, &count) ||
      !c.flag("most_recent", most_recent) || !c.notNull("history", history) ||
      !c.notNull("scale", scale) || !c.notNull("amax", amax) ||
      !c.notNull("new_history", new_history) ||
      !c.notNull("new_scale", new_scale))
    return 1;
  if (!(fp8_max > 0.0f) || !std::isfinite(fp8_max))
    return c.fail("fp8_max must be finite and > 0, got " + str(fp8_max)), 1;
  if (margin < 0 || margin > 126)
    return c.fail("margin must be in [0, 126], got " + std::to_string(margin)),
           1;
  if (ctx->backend == TE_RT_BACKEND_CUDA)
    return te::rt::cuda::amax_update(c, ctx, history, scale, amax, len, n,
                                     fp8_max, margin, most_recent, new_history,
                                     new_scale);
  return te::rt::cpu::amax_update(c, ctx, history, scale, amax, len, n, fp8_max,
                                  margin, most_recent, new_history, new_scale,
                                  count);
}

} // extern "C"
