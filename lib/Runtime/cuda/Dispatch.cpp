//===- Dispatch.cpp - te-mlir runtime: the CUDA backend's calls -*- C++ -*-===//
//
// The te_rt_* compute primitives on a cuda context, after the checks of
// api/*.cpp: the kernels of runtime-kernels/ (te_kernels/ops.h) queued on
// the context's stream, with the context's kernel state, and the backend's
// table (te::rt::cudaOps). Compiled in every build: without TE_RT_HAVE_CUDA
// a cuda context cannot exist, and these only report why.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Context.h"
#include "te_kernels/ops.h"

#include <algorithm>
#include <string>

using te::rt::Checker;

namespace {

/// Runs `launch` (a te_kernels_* call of runtime-kernels/, given the
/// context's kernel state) for a cuda context, after the checks above; its
/// error becomes the call's last error. Without CUDA built in, a cuda
/// context cannot be created, and this only reports why.
template <typename Launch>
int32_t onCuda(const Checker &c, te_rt_context *ctx, Launch launch) {
#ifdef TE_RT_HAVE_CUDA
  if (!ctx->cuda)
    if (const char *err = te_kernels_state_create(
            ctx->stream, reinterpret_cast<te_kernels_state **>(&ctx->cuda)))
      return c.fail(std::string("cannot set up the cuda backend: ") + err), 1;
  auto *state = static_cast<te_kernels_state *>(ctx->cuda);
  if (ctx->inBranch && ctx->cudaBranch && ctx->cudaBranch != ctx->cuda) {
    // A branch being captured (te_rt_branch_begin): its own stream and
    // buffers.
    state = static_cast<te_kernels_state *>(ctx->cudaBranch);
  } else {
    // The stream and workspace of this call: the caller's when given.
    te_kernels_state_bind(state, ctx->stream, ctx->workspace,
                          ctx->workspaceBytes);
  }
  if (const char *err = launch(state)) {
    if (int64_t needed = te_kernels_state_scratch_needed(state))
      ctx->workspaceNeeded = std::max(ctx->workspaceNeeded, needed);
    return c.fail(std::string("cuda backend failed: ") + err), 1;
  }
  return 0;
#else
  (void)ctx;
  (void)launch;
  return c.fail(te_rt_internal_cuda_unavailable_reason()), 1;
#endif
}

/// The cuda backend's answer to the MXFP8 calls: its kernels target Hopper.
int32_t mxfp8NeedsBlackwell(const Checker &c) {
  return c.fail("MXFP8 is a Blackwell (sm_100+) recipe: its GEMMs need "
                "cuBLASLt's E8M0 block scaling, which Hopper (sm_90, what "
                "the cuda backend targets) does not run; use the cpu backend "
                "or fp8-current / fp8-block"),
         1;
}

/// The cuda backend's answer to the NVFP4 calls: its kernels target Hopper.
int32_t nvfp4NeedsBlackwell(const Checker &c) {
  return c.fail("NVFP4 is a Blackwell (sm_100+) recipe: its GEMMs need FP4 "
                "(E2M1) tensor cores with E4M3 block scales, which Hopper "
                "lacks, and this build's cuda backend targets Hopper "
                "(sm_90); use the cpu backend"),
         1;
}

} // namespace

namespace te::rt::cuda {

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

int32_t norm_fwd(const Checker &c, te_rt_context *ctx, int32_t kind,
                 int32_t dtype, const void *x, const void *gamma,
                 const void *beta, double eps, int32_t zero_centered,
                 int64_t rows, int64_t cols, void *z, float *mu,
                 float *rsigma) {
  bool rms = kind == TE_RT_NORM_RMSNORM;
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_norm_fwd(s, rms, dtype, x, gamma, beta,
                               static_cast<float>(eps), zero_centered, rows,
                               cols, z, mu, rsigma);
  });
}

int32_t norm_bwd(const Checker &c, te_rt_context *ctx, int32_t kind,
                 int32_t dtype, const void *dz, const void *x, const float *mu,
                 const float *rsigma, const void *gamma, int32_t zero_centered,
                 int64_t rows, int64_t cols, void *dx, void *dgamma,
                 void *dbeta) {
  bool rms = kind == TE_RT_NORM_RMSNORM;
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_norm_bwd(s, rms, dtype, dz, x, mu, rsigma, gamma,
                               zero_centered, rows, cols, dx, dgamma, dbeta);
  });
}

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

int32_t gemm_fprop(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *x, const void *w, const void *bias, void *y,
                   int64_t m, int64_t n, int64_t k) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_gemm_fprop(s, dtype, x, w, bias, y, m, n, k);
  });
}

int32_t gemm_dgrad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *dy, const void *w, void *dx, int64_t m,
                   int64_t n, int64_t k) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_gemm_dgrad(s, dtype, dy, w, dx, m, n, k);
  });
}

int32_t gemm_wgrad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *dy, const void *x, void *dw, void *dbias,
                   int64_t m, int64_t n, int64_t k, int32_t accumulate) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_gemm_wgrad(s, dtype, dy, x, dw, dbias, m, n, k,
                                 accumulate);
  });
}

int32_t gemm_wgrad_fp32(const Checker &c, te_rt_context *ctx, int32_t dtype,
                        const void *dy, const void *x, float *dw, int64_t m,
                        int64_t n, int64_t k, int32_t accumulate) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_gemm_wgrad_fp32(s, dtype, dy, x, dw, m, n, k, accumulate);
  });
}

int32_t gemm_fprop_act(const Checker &c, te_rt_context *ctx, int32_t act,
                       int32_t dtype, const void *x, const void *w,
                       const void *bias, void *y, void *aux, int64_t m,
                       int64_t n, int64_t k) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_gemm_fprop_act(s, act, dtype, x, w, bias, y, aux, m, n,
                                     k);
  });
}

int32_t gemm_dgrad_dact(const Checker &c, te_rt_context *ctx, int32_t act,
                        int32_t dtype, const void *dy, const void *w,
                        const void *aux, void *dx, int64_t m, int64_t n,
                        int64_t k) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_gemm_dgrad_dact(s, act, dtype, dy, w, aux, dx, m, n, k);
  });
}

//===----------------------------------------------------------------------===//
// Activations and bias gradient
//===----------------------------------------------------------------------===//

int32_t act_fwd(const Checker &c, te_rt_context *ctx, int32_t act,
                int32_t dtype, const void *x, void *y, int64_t rows,
                int64_t cols, float limit, float alpha, float offset,
                float *amax) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_act_fwd(s, act, dtype, x, y, rows, cols, limit, alpha,
                              offset, amax);
  });
}

int32_t act_bwd(const Checker &c, te_rt_context *ctx, int32_t act,
                int32_t dtype, const void *dy, const void *x, void *dx,
                int64_t rows, int64_t cols, float limit, float alpha,
                float offset, float *amax) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_act_bwd(s, act, dtype, dy, x, dx, rows, cols, limit,
                              alpha, offset, amax);
  });
}

int32_t bias_grad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                  const void *dy, void *dbias, int64_t rows, int64_t cols) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_bias_grad(s, dtype, dy, dbias, rows, cols);
  });
}

int32_t dbias_dact(const Checker &c, te_rt_context *ctx, int32_t act,
                   int32_t dtype, const void *dy, const void *x, void *dx,
                   void *dbias, int64_t rows, int64_t cols, float limit,
                   float alpha, float offset, float *amax) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_dbias_dact(s, act, dtype, dy, x, dx, dbias, rows, cols,
                                 limit, alpha, offset, amax);
  });
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

int32_t add(const Checker &c, te_rt_context *ctx, int32_t dtype, const void *a,
            const void *b, void *c_, int64_t n) {
  return onCuda(c, ctx,
                [&](auto *s) { return te_kernels_add(s, dtype, a, b, c_, n); });
}

int32_t bias_add(const Checker &c, te_rt_context *ctx, int32_t dtype,
                 const void *x, const void *bias, void *out, int64_t rows,
                 int64_t cols) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_bias_add(s, dtype, x, bias, out, rows, cols);
  });
}

int32_t cast(const Checker &c, te_rt_context *ctx, int32_t src_dtype,
             int32_t dst_dtype, const void *src, void *dst, int64_t n) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_cast(s, src_dtype, dst_dtype, src, dst, n);
  });
}

int32_t transpose(const Checker &c, te_rt_context *ctx, int32_t dtype,
                  const void *src, void *dst, int64_t rows, int64_t cols) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_transpose(s, dtype, src, dst, rows, cols);
  });
}

int32_t transpose_bytes(const Checker &c, te_rt_context *ctx, const void *src,
                        void *dst, int64_t rows, int64_t cols) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_transpose_bytes(s, src, dst, rows, cols);
  });
}

int32_t zero_ranges(const Checker &c, te_rt_context *ctx, void *const *ptrs,
                    const int64_t *bytes, int64_t count, int32_t fork) {
  return onCuda(c, ctx, [&](auto *s) {
    return (fork ? te_kernels_zero_ranges_fork
                 : te_kernels_zero_ranges)(s, ptrs, bytes, count);
  });
}

//===----------------------------------------------------------------------===//
// Per-tensor FP8
//===----------------------------------------------------------------------===//

int32_t quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t dtype,
                     const void *x, int64_t rows, int64_t cols, int32_t format,
                     const float *scale, int32_t pow2_scale, void *data,
                     void *transpose, float *scale_inv, float *amax,
                     const float *amax_in) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_quantize_fp8(s, dtype, x, rows, cols, format, scale,
                                   pow2_scale, data, transpose, scale_inv, amax,
                                   amax_in);
  });
}

int32_t add_columnwise_fp8(const Checker &c, te_rt_context *ctx,
                           const void *data, const float *scale_inv,
                           int64_t rows, int64_t cols, void *transpose,
                           float *scale_inv_out) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_add_columnwise_fp8(s, data, scale_inv, rows, cols,
                                         transpose, scale_inv_out);
  });
}

int32_t dbias_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t dtype,
                           const void *x, int64_t rows, int64_t cols,
                           int32_t format, const float *scale,
                           int32_t pow2_scale, void *data, void *transpose,
                           float *scale_inv, float *amax, void *dbias) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_dbias_quantize_fp8(s, dtype, x, rows, cols, format, scale,
                                         pow2_scale, data, transpose, scale_inv,
                                         amax, dbias);
  });
}

int32_t act_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t act,
                         int32_t dtype, const void *x, int64_t rows,
                         int64_t cols, float limit, float alpha, float offset,
                         int32_t format, const float *scale, void *data,
                         void *transpose, float *scale_inv, float *amax) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_act_quantize_fp8(s, act, dtype, x, rows, cols, limit,
                                       alpha, offset, format, scale, data,
                                       transpose, scale_inv, amax);
  });
}

int32_t norm_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t kind,
                          int32_t dtype, const void *x, const void *gamma,
                          const void *beta, double eps, int32_t zero_centered,
                          int64_t rows, int64_t cols, float *mu, float *rsigma,
                          int32_t format, const float *scale,
                          int32_t pow2_scale, void *data, void *transpose,
                          float *scale_inv, float *amax) {
  bool rms = kind == TE_RT_NORM_RMSNORM;
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_norm_quantize_fp8(
        s, rms, dtype, x, gamma, beta, static_cast<float>(eps), zero_centered,
        rows, cols, mu, rsigma, format, scale, pow2_scale, data, transpose,
        scale_inv, amax);
  });
}

int32_t dact_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t act,
                          int32_t dtype, const void *dy, const void *x,
                          void *dbias, int64_t rows, int64_t cols, float limit,
                          float alpha, float offset, int32_t format,
                          const float *scale, void *data, void *transpose,
                          float *scale_inv, float *amax) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_dact_quantize_fp8(s, act, dtype, dy, x, dbias, rows, cols,
                                        limit, alpha, offset, format, scale,
                                        data, transpose, scale_inv, amax);
  });
}

int32_t gemm_fp8(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                 int32_t a_format, const void *a, const float *a_scale_inv,
                 int32_t b_format, const void *b, const float *b_scale_inv,
                 const void *bias, void *d, int64_t m, int64_t n, int64_t k,
                 int32_t accumulate, int32_t fast_accumulate) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_gemm_fp8(s, out_dtype, a_format, a, a_scale_inv, b_format,
                               b, b_scale_inv, bias, d, m, n, k, accumulate,
                               fast_accumulate);
  });
}

//===----------------------------------------------------------------------===//
// Float8 block scaling
//===----------------------------------------------------------------------===//

int32_t quantize_fp8_block(const Checker &c, te_rt_context *ctx, int32_t dtype,
                           const void *x, int64_t rows, int64_t cols,
                           int32_t block_2d, int32_t pow2_scale, void *data,
                           float *scale_inv, void *columnwise_data,
                           float *columnwise_scale_inv) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_quantize_fp8_block(s, dtype, x, rows, cols, block_2d,
                                         pow2_scale, data, scale_inv,
                                         columnwise_data, columnwise_scale_inv);
  });
}

int32_t gemm_fp8_block(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                       const void *a, const float *a_scale_inv,
                       int32_t a_block_2d, const void *b,
                       const float *b_scale_inv, int32_t b_block_2d,
                       const void *bias, void *d, int64_t m, int64_t n,
                       int64_t k, int32_t accumulate) {
  return onCuda(c, ctx, [&](auto *s) {
    return te_kernels_gemm_fp8_block(s, out_dtype, a, a_scale_inv, a_block_2d,
                                     b, b_scale_inv, b_block_2d, bias, d, m, n,
                                     k, accumulate);
  });
}

//===----------------------------------------------------------------------===//
// MXFP8
//===----------------------------------------------------------------------===//

int32_t quantize_mxfp8(const Checker &c, te_rt_context *ctx, int32_t dtype,
                       const void *x, int64_t rows, int64_t cols,
                       int32_t format, int32_t swizzled, void *data,
                       uint8_t *scale_inv, void *columnwise_data,
                       uint8_t *columnwise_scale_inv) {
  return mxfp8NeedsBlackwell(c);
}

int32_t gemm_mxfp8(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                   int32_t a_format, const void *a, const uint8_t *a_scale_inv,
                   int32_t a_columnwise, int32_t b_format, const void *b,
                   const uint8_t *b_scale_inv, int32_t b_columnwise,
                   int32_t swizzled, const void *bias, void *d, int64_t m,
                   int64_t n, int64_t k, int32_t accumulate) {
  return mxfp8NeedsBlackwell(c);
}

//===----------------------------------------------------------------------===//
// NVFP4
//===----------------------------------------------------------------------===//

int32_t quantize_nvfp4(const Checker &c, te_rt_context *ctx, int32_t dtype,
                       const void *x, int64_t rows, int64_t cols,
                       int32_t block_2d, int32_t rht,
                       int32_t stochastic_rounding, uint64_t seed,
                       int32_t swizzled, void *data, uint8_t *scale_inv,
                       float *amax, void *columnwise_data,
                       uint8_t *columnwise_scale_inv, float *columnwise_amax) {
  return nvfp4NeedsBlackwell(c);
}

int32_t quantize_nvfp4_4over6(const Checker &c, te_rt_context *ctx,
                              int32_t dtype, const void *x, int64_t rows,
                              int64_t cols, int32_t block_2d, int32_t err_mode,
                              int32_t e4m3_max, int32_t swizzled, void *data,
                              uint8_t *scale_inv, float *amax,
                              void *columnwise_data,
                              uint8_t *columnwise_scale_inv,
                              float *columnwise_amax) {
  return nvfp4NeedsBlackwell(c);
}

int32_t gemm_nvfp4(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                   const void *a, const uint8_t *a_scale_inv,
                   const float *a_amax, const void *b,
                   const uint8_t *b_scale_inv, const float *b_amax,
                   int32_t swizzled, const void *bias, void *d, int64_t m,
                   int64_t n, int64_t k, int32_t accumulate) {
  return nvfp4NeedsBlackwell(c);
}

int32_t quantize_nvfp4_row_scaled(const Checker &c, te_rt_context *ctx,
                                  int32_t dtype, const void *x, int64_t rows,
                                  int64_t cols, int32_t swizzled, void *data,
                                  uint8_t *scale_inv, float *amax) {
  return nvfp4NeedsBlackwell(c);
}

int32_t gemm_nvfp4_row_scaled(const Checker &c, te_rt_context *ctx,
                              int32_t out_dtype, const void *a,
                              const uint8_t *a_scale_inv, const float *a_amax,
                              const void *b, const uint8_t *b_scale_inv,
                              const float *b_amax, int32_t swizzled,
                              const void *bias, void *d, int64_t m, int64_t n,
                              int64_t k, int32_t accumulate) {
  return nvfp4NeedsBlackwell(c);
}

int32_t amax_update(const Checker &c, te_rt_context *ctx, const float *history,
                    const float *scale, const float *amax, int64_t len,
                    int64_t n, float fp8_max, int32_t margin,
                    int32_t most_recent, int64_t unused, float *new_history,
                    float *new_scale, int32_t fork) {
  return onCuda(c, ctx, [&](auto *s) {
    return (fork ? te_kernels_amax_update_fork : te_kernels_amax_update)(
        s, history, scale, amax, len, n, fp8_max, margin, most_recent, unused,
        new_history, new_scale);
  });
}

} // namespace te::rt::cuda

void te::rt::joinForks(te_rt_context *ctx) {
  if (!ctx)
    return;
  // (An entry that failed inside a branch left it open: closed here.)
  ctx->inBranch = false;
  ctx->cudaBranch = nullptr;
#ifdef TE_RT_HAVE_CUDA
  if (ctx->backend == TE_RT_BACKEND_CUDA && ctx->cuda)
    te_kernels_join(static_cast<te_kernels_state *>(ctx->cuda));
#endif
}

int32_t te::rt::beginBranch(const Checker &c, te_rt_context *ctx) {
  if (ctx->inBranch)
    return c.fail("a branch is already open (te_rt_branch_end closes it; "
                  "branches do not nest)"),
           1;
  ctx->cudaBranch = nullptr;
  if (ctx->backend != TE_RT_BACKEND_CUDA) {
    ctx->inBranch = true; // in order
    return 0;
  }
  // The branch forks from the stream the context's calls use now: bind it
  // first (as onCuda does).
  // (Generic lambdas, as everywhere here: without CUDA built in they are
  // never instantiated.)
  return onCuda(c, ctx, [&](auto *s) -> const char * {
    te_kernels_state *branch = nullptr;
    if (const char *err = te_kernels_branch_begin(s, &branch))
      return err;
    ctx->cudaBranch = branch;
    ctx->inBranch = true;
    return nullptr;
  });
}

int32_t te::rt::endBranch(const Checker &c, te_rt_context *ctx) {
  auto *branch = ctx->cudaBranch;
  ctx->inBranch = false;
  ctx->cudaBranch = nullptr;
  if (ctx->backend != TE_RT_BACKEND_CUDA || !ctx->cuda ||
      branch == ctx->cuda)
    return 0; // in order
  return onCuda(c, ctx, [](auto *s) { return te_kernels_branch_end(s); });
}

int32_t te::rt::joinBranch(const Checker &c, te_rt_context *ctx,
                           int64_t run) {
  if (ctx->inBranch)
    return c.fail("the branch is still open (te_rt_branch_end first)"), 1;
  if (ctx->backend != TE_RT_BACKEND_CUDA || !ctx->cuda)
    return 0;
  return onCuda(c, ctx,
                [run](auto *s) { return te_kernels_branch_join(s, run); });
}

const te::rt::BackendOps te::rt::cudaOps = {
    "cuda",
#define TE_RT_BACKEND_CALL(Name, Ret, Params) &te::rt::cuda::Name,
#include "BackendCalls.def"
};
