//===- Elementwise.cpp - te-mlir runtime: elementwise calls -----*- C++ -*-===//
//
// The activations, the bias gradient and the elementwise calls of the ABI
// (te_rt_act_*, te_rt_bias_grad, te_rt_dbias_dact, te_rt_add, te_rt_bias_add,
// te_rt_cast, te_rt_transpose(_bytes), te_rt_zero_ranges): each call's argument
// checks, then the context's backend (ctx->ops, Backend.h).
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "api/Checks.h"
#include "cpu/Convert.h"
#include "cpu/Reference.h"

#include <string>

using namespace te::rt::api;
using te::rt::Checker;

extern "C" {

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
  return ctx->ops->act_fwd(c, ctx, act, dtype, x, y, rows, cols, limit, alpha,
                           offset, amax);
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
  return ctx->ops->act_bwd(c, ctx, act, dtype, dy, x, dx, rows, cols, limit,
                           alpha, offset, amax);
}

int32_t te_rt_bias_grad(te_rt_context *ctx, int32_t dtype, const void *dy,
                        void *dbias, int64_t rows, int64_t cols) {
  Checker c("te_rt_bias_grad");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !c.notNull("dy", dy) || !c.notNull("dbias", dbias))
    return 1;
  return ctx->ops->bias_grad(c, ctx, dtype, dy, dbias, rows, cols);
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
    return c.fail(std::string("gated activation ") + activationName(act) +
                  " has no fused dbias + dact"),
           1;
  return ctx->ops->dbias_dact(c, ctx, act, dtype, dy, x, dx, dbias, rows, cols,
                              limit, alpha, offset, amax);
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
  return ctx->ops->add(c, ctx, dtype, a, b, c_, n);
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
    int64_t bytes = n * size, biasBytes = cols * size;
    if (out != x && te::rt::overlap(out, bytes, x, bytes))
      return c.fail("out overlaps x (in place is out == x)"), 1;
    if (te::rt::overlap(out, bytes, bias, biasBytes))
      return c.fail("out overlaps bias"), 1;
  }
  return ctx->ops->bias_add(c, ctx, dtype, x, bias, out, rows, cols);
}

int32_t te_rt_cast(te_rt_context *ctx, int32_t src_dtype, int32_t dst_dtype,
                   const void *src, void *dst, int64_t n) {
  Checker c("te_rt_cast");
  if (!c.context(ctx) || !c.dtype(src_dtype, "src_dtype") ||
      !c.dtype(dst_dtype, "dst_dtype") || !c.count("n", n, 4) ||
      !c.notNull("src", src) || !c.notNull("dst", dst))
    return 1;
  return ctx->ops->cast(c, ctx, src_dtype, dst_dtype, src, dst, n);
}

int32_t te_rt_transpose(te_rt_context *ctx, int32_t dtype, const void *src,
                        void *dst, int64_t rows, int64_t cols) {
  Checker c("te_rt_transpose");
  int64_t n = 0;
  if (!c.context(ctx) || !c.dtype(dtype) || !c.matrix(rows, cols, &n) ||
      !c.notNull("src", src) || !c.notNull("dst", dst))
    return 1;
  const int64_t bytes =
      n * te::cpu::dtypeSize(static_cast<te::cpu::DType>(dtype));
  if (te::rt::overlap(dst, bytes, src, bytes))
    return c.fail("dst and src overlap"), 1;
  return ctx->ops->transpose(c, ctx, dtype, src, dst, rows, cols);
}

int32_t te_rt_transpose_bytes(te_rt_context *ctx, const void *src, void *dst,
                              int64_t rows, int64_t cols) {
  Checker c("te_rt_transpose_bytes");
  int64_t n = 0;
  if (!c.context(ctx) || !c.matrix(rows, cols, &n, 1) ||
      !c.notNull("src", src) || !c.notNull("dst", dst))
    return 1;
  if (te::rt::overlap(dst, n, src, n))
    return c.fail("dst and src overlap"), 1;
  return ctx->ops->transpose_bytes(c, ctx, src, dst, rows, cols);
}

int32_t te_rt_zero_ranges(te_rt_context *ctx, void *const *ptrs,
                          const int64_t *bytes, int64_t count) {
  return te::rt::zeroRanges(ctx, ptrs, bytes, count, false);
}

} // extern "C"

int32_t te::rt::zeroRanges(te_rt_context *ctx, void *const *ptrs,
                           const int64_t *bytes, int64_t count, bool fork) {
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
  return ctx->ops->zero_ranges(c, ctx, ptrs, bytes, count, fork ? 1 : 0);
}
