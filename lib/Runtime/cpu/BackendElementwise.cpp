//===- BackendElementwise.cpp - CPU backend: elementwise --------*- C++ -*-===//
//
// The CPU reference backend's activations, bias gradients and elementwise
// calls (Backend.h), after the checks of api/Elementwise.cpp.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Context.h"
#include "cpu/BackendUtil.h"
#include "cpu/Convert.h"
#include "cpu/Parallel.h"
#include "cpu/Reference.h"

#include <algorithm>
#include <cstring>

using te::cpu::DType;
using te::rt::Checker;
using te::rt::guarded;

namespace te::rt::cpu {

//===----------------------------------------------------------------------===//
// Activations and bias gradient
//===----------------------------------------------------------------------===//

int32_t act_fwd(const Checker &c, te_rt_context *ctx, int32_t act,
                int32_t dtype, const void *x, void *y, int64_t rows,
                int64_t cols, float limit, float alpha, float offset,
                float *amax) {
  // Sizes the checks (api/) found to fit.
  int64_t n = rows * cols;
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    auto kind = static_cast<te::cpu::Activation>(act);
    int64_t yCols = te::cpu::isGated(kind) ? cols / 2 : cols;
    const float *X = input(ctx, 0, t, x, n);
    float *Y = output(ctx, 1, t, y, rows * yCols);
    activationForwardRows(kind, X, Y, rows, cols, {limit, alpha, offset});
    commit(t, Y, y, rows * yCols);
    if (amax)
      amax[0] = storedAmax(t, y, rows * yCols);
  });
}

int32_t act_bwd(const Checker &c, te_rt_context *ctx, int32_t act,
                int32_t dtype, const void *dy, const void *x, void *dx,
                int64_t rows, int64_t cols, float limit, float alpha,
                float offset, float *amax) {
  // Sizes the checks (api/) found to fit.
  int64_t n = rows * cols;
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    auto kind = static_cast<te::cpu::Activation>(act);
    int64_t yCols = te::cpu::isGated(kind) ? cols / 2 : cols;
    const float *DY = input(ctx, 0, t, dy, rows * yCols);
    const float *X = input(ctx, 1, t, x, n);
    float *DX = output(ctx, 2, t, dx, n);
    activationBackwardRows(kind, DY, X, DX, rows, cols, {limit, alpha, offset});
    commit(t, DX, dx, n);
    if (amax)
      amax[0] = storedAmax(t, dx, n);
  });
}

int32_t bias_grad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                  const void *dy, void *dbias, int64_t rows, int64_t cols) {
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    float *sums = ctx->scratch(0, cols);
    dispatch(t, [&](auto e) {
      using E = decltype(e);
      const auto *in = static_cast<const typename E::T *>(dy);
      te::cpu::columnSums(
          rows, cols,
          [&](int64_t i, int64_t j) { return E::load(in[i * cols + j]); },
          sums);
    });
    commit(t, sums, dbias, cols);
  });
}

int32_t dbias_dact(const Checker &c, te_rt_context *ctx, int32_t act,
                   int32_t dtype, const void *dy, const void *x, void *dx,
                   void *dbias, int64_t rows, int64_t cols, float limit,
                   float alpha, float offset, float *amax) {
  // Sizes the checks (api/) found to fit.
  int64_t n = rows * cols;
  auto kind = static_cast<te::cpu::Activation>(act);
  return guarded(c, [&] {
    DType t = dtypeOf(dtype);
    const float *DY = input(ctx, 0, t, dy, n);
    const float *X = input(ctx, 1, t, x, n);
    float *DX = output(ctx, 2, t, dx, n);
    activationBackwardRows(kind, DY, X, DX, rows, cols, {limit, alpha, offset});
    // Column sums of the fp32 dact (thread-count independent).
    float *sums = ctx->scratch(3, cols);
    te::cpu::columnSums(
        rows, cols, [&](int64_t i, int64_t j) { return DX[i * cols + j]; },
        sums);
    commit(t, DX, dx, n);
    commit(t, sums, dbias, cols);
    if (amax)
      amax[0] = storedAmax(t, dx, n);
  });
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

int32_t add(const Checker &c, te_rt_context *ctx, int32_t dtype, const void *a,
            const void *b, void *c_, int64_t n) {
  return guarded(c, [&] {
    dispatch(dtypeOf(dtype), [&](auto e) {
      using E = decltype(e);
      using T = typename E::T;
      const T *pa = static_cast<const T *>(a), *pb = static_cast<const T *>(b);
      T *pc = static_cast<T *>(c_);
      te::cpu::parallelFor(n, 1, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
          pc[i] = E::store(E::load(pa[i]) + E::load(pb[i]));
      });
    });
  });
}

int32_t bias_add(const Checker &c, te_rt_context *ctx, int32_t dtype,
                 const void *x, const void *bias, void *out, int64_t rows,
                 int64_t cols) {
  return guarded(c, [&] {
    dispatch(dtypeOf(dtype), [&](auto e) {
      using E = decltype(e);
      using T = typename E::T;
      const T *px = static_cast<const T *>(x),
              *pb = static_cast<const T *>(bias);
      T *po = static_cast<T *>(out);
      // Rows in parallel; out may be x (each element read before written).
      te::cpu::parallelFor(rows, cols, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t j = 0; j < cols; ++j)
            po[r * cols + j] =
                E::store(E::load(px[r * cols + j]) + E::load(pb[j]));
      });
    });
  });
}

int32_t cast(const Checker &c, te_rt_context *ctx, int32_t src_dtype,
             int32_t dst_dtype, const void *src, void *dst, int64_t n) {
  return guarded(c, [&] {
    DType from = dtypeOf(src_dtype), to = dtypeOf(dst_dtype);
    if (from == to) {
      // Bits unchanged (NaN payloads included).
      if (dst != src)
        std::memmove(dst, src, static_cast<size_t>(n * te::cpu::dtypeSize(to)));
      return;
    }
    dispatch(from, [&](auto s) {
      dispatch(to, [&](auto d) {
        using S = decltype(s);
        using D = decltype(d);
        const auto *in = static_cast<const typename S::T *>(src);
        auto *out = static_cast<typename D::T *>(dst);
        // Widening to fp32 is exact, so each element is rounded once.
        te::cpu::parallelFor(n, 1, [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i)
            out[i] = D::store(S::load(in[i]));
        });
      });
    });
  });
}

int32_t transpose(const Checker &c, te_rt_context *ctx, int32_t dtype,
                  const void *src, void *dst, int64_t rows, int64_t cols) {
  return guarded(c, [&] {
    if (dtypeOf(dtype) == DType::F32)
      transposeTiled(static_cast<const uint32_t *>(src),
                     static_cast<uint32_t *>(dst), rows, cols);
    else
      transposeTiled(static_cast<const uint16_t *>(src),
                     static_cast<uint16_t *>(dst), rows, cols);
  });
}

int32_t transpose_bytes(const Checker &c, te_rt_context *ctx, const void *src,
                        void *dst, int64_t rows, int64_t cols) {
  return guarded(c, [&] {
    transposeTiled(static_cast<const uint8_t *>(src),
                   static_cast<uint8_t *>(dst), rows, cols);
  });
}

/// In order: nothing to fork (`fork` ignored).
int32_t zero_ranges(const Checker &c, te_rt_context *ctx, void *const *ptrs,
                    const int64_t *bytes, int64_t count, int32_t fork) {
  (void)c;
  (void)ctx;
  (void)fork;
  for (int64_t i = 0; i < count; ++i)
    if (bytes[i])
      std::memset(ptrs[i], 0, static_cast<size_t>(bytes[i]));
  return 0;
}

} // namespace te::rt::cpu
