//===- Backend.h - te-mlir runtime: the two backends ------------*- C++ -*-===//
//
// What Api.cpp calls once a te_rt_* call's arguments are checked: the same
// call on the CPU reference backend (te::rt::cpu, cpu/Backend.cpp) or on the
// CUDA kernels (te::rt::cuda, cuda/Dispatch.cpp). Each takes the call's
// Checker (for its messages), its arguments and the sizes the checks
// computed; it returns the call's result and sets its last error.
//
//===----------------------------------------------------------------------===//

#ifndef TE_RUNTIME_LIB_BACKEND_H
#define TE_RUNTIME_LIB_BACKEND_H

#include "Context.h"
#include "cpu/Reference.h"

#include <cstdint>

namespace te::rt::cpu {

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

int32_t norm_fwd(const Checker &c, te_rt_context *ctx, int32_t kind,
                 int32_t dtype, const void *x, const void *gamma,
                 const void *beta, double eps, int32_t zero_centered,
                 int64_t rows, int64_t cols, void *z, float *mu, float *rsigma,
                 int64_t n, bool rms);

int32_t norm_bwd(const Checker &c, te_rt_context *ctx, int32_t kind,
                 int32_t dtype, const void *dz, const void *x, const float *mu,
                 const float *rsigma, const void *gamma, int32_t zero_centered,
                 int64_t rows, int64_t cols, void *dx, void *dgamma,
                 void *dbeta, int64_t n, bool rms);

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

int32_t gemm_fprop(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *x, const void *w, const void *bias, void *y,
                   int64_t m, int64_t n, int64_t k, int64_t mn, int64_t mk,
                   int64_t nk);

int32_t gemm_dgrad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *dy, const void *w, void *dx, int64_t m,
                   int64_t n, int64_t k, int64_t mn, int64_t mk, int64_t nk);

int32_t gemm_wgrad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *dy, const void *x, void *dw, void *dbias,
                   int64_t m, int64_t n, int64_t k, int32_t accumulate,
                   int64_t mn, int64_t mk, int64_t nk);

int32_t gemm_fprop_act(const Checker &c, te_rt_context *ctx, int32_t act,
                       int32_t dtype, const void *x, const void *w,
                       const void *bias, void *y, void *aux, int64_t m,
                       int64_t n, int64_t k, int64_t mn, int64_t mk,
                       int64_t nk);

int32_t gemm_dgrad_dact(const Checker &c, te_rt_context *ctx, int32_t act,
                        int32_t dtype, const void *dy, const void *w,
                        const void *aux, void *dx, int64_t m, int64_t n,
                        int64_t k, int64_t mn, int64_t mk, int64_t nk);

//===----------------------------------------------------------------------===//
// Activations and bias gradient
//===----------------------------------------------------------------------===//

int32_t act_fwd(const Checker &c, te_rt_context *ctx, int32_t act,
                int32_t dtype, const void *x, void *y, int64_t rows,
                int64_t cols, float limit, float alpha, float offset,
                float *amax, int64_t n);

int32_t act_bwd(const Checker &c, te_rt_context *ctx, int32_t act,
                int32_t dtype, const void *dy, const void *x, void *dx,
                int64_t rows, int64_t cols, float limit, float alpha,
                float offset, float *amax, int64_t n);

int32_t bias_grad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                  const void *dy, void *dbias, int64_t rows, int64_t cols);

int32_t dbias_dact(const Checker &c, te_rt_context *ctx, int32_t act,
                   int32_t dtype, const void *dy, const void *x, void *dx,
                   void *dbias, int64_t rows, int64_t cols, float limit,
                   float alpha, float offset, float *amax, int64_t n,
                   te::cpu::Activation kind);

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

int32_t add(const Checker &c, te_rt_context *ctx, int32_t dtype, const void *a,
            const void *b, void *c_, int64_t n);

int32_t bias_add(const Checker &c, te_rt_context *ctx, int32_t dtype,
                 const void *x, const void *bias, void *out, int64_t rows,
                 int64_t cols);

int32_t cast(const Checker &c, te_rt_context *ctx, int32_t src_dtype,
             int32_t dst_dtype, const void *src, void *dst, int64_t n);

int32_t transpose(const Checker &c, te_rt_context *ctx, int32_t dtype,
                  const void *src, void *dst, int64_t rows, int64_t cols);

int32_t zero_ranges(const Checker &c, te_rt_context *ctx, void *const *ptrs,
                    const int64_t *bytes, int64_t count);

//===----------------------------------------------------------------------===//
// Per-tensor FP8
//===----------------------------------------------------------------------===//

int32_t quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t dtype,
                     const void *x, int64_t rows, int64_t cols, int32_t format,
                     const float *scale, int32_t pow2_scale, void *data,
                     void *transpose, float *scale_inv, float *amax,
                     const float *amax_in, int64_t n);

int32_t dbias_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t dtype,
                           const void *x, int64_t rows, int64_t cols,
                           int32_t format, const float *scale,
                           int32_t pow2_scale, void *data, void *transpose,
                           float *scale_inv, float *amax, void *dbias);

int32_t act_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t act,
                         int32_t dtype, const void *x, int64_t rows,
                         int64_t cols, float limit, float alpha, float offset,
                         int32_t format, const float *scale, void *data,
                         void *transpose, float *scale_inv, float *amax);

int32_t norm_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t kind,
                          int32_t dtype, const void *x, const void *gamma,
                          const void *beta, double eps, int32_t zero_centered,
                          int64_t rows, int64_t cols, float *mu, float *rsigma,
                          int32_t format, const float *scale,
                          int32_t pow2_scale, void *data, void *transpose,
                          float *scale_inv, float *amax, int64_t n);

int32_t dact_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t act,
                          int32_t dtype, const void *dy, const void *x,
                          void *dbias, int64_t rows, int64_t cols, float limit,
                          float alpha, float offset, int32_t format,
                          const float *scale, void *data, void *transpose,
                          float *scale_inv, float *amax, int64_t n);

int32_t gemm_fp8(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                 int32_t a_format, const void *a, const float *a_scale_inv,
                 int32_t b_format, const void *b, const float *b_scale_inv,
                 const void *bias, void *d, int64_t m, int64_t n, int64_t k,
                 int32_t accumulate, int32_t fast_accumulate, int64_t mk,
                 int64_t nk);

//===----------------------------------------------------------------------===//
// Float8 block scaling
//===----------------------------------------------------------------------===//

int32_t quantize_fp8_block(const Checker &c, te_rt_context *ctx, int32_t dtype,
                           const void *x, int64_t rows, int64_t cols,
                           int32_t block_2d, int32_t pow2_scale, void *data,
                           float *scale_inv, void *columnwise_data,
                           float *columnwise_scale_inv, int64_t n);

int32_t gemm_fp8_block(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                       const void *a, const float *a_scale_inv,
                       int32_t a_block_2d, const void *b,
                       const float *b_scale_inv, int32_t b_block_2d,
                       const void *bias, void *d, int64_t m, int64_t n,
                       int64_t k, int32_t accumulate, int64_t mk, int64_t nk);

//===----------------------------------------------------------------------===//
// MXFP8
//===----------------------------------------------------------------------===//

int32_t quantize_mxfp8(const Checker &c, te_rt_context *ctx, int32_t dtype,
                       const void *x, int64_t rows, int64_t cols,
                       int32_t format, int32_t swizzled, void *data,
                       uint8_t *scale_inv, void *columnwise_data,
                       uint8_t *columnwise_scale_inv, int64_t n);

int32_t gemm_mxfp8(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                   int32_t a_format, const void *a, const uint8_t *a_scale_inv,
                   int32_t a_columnwise, int32_t b_format, const void *b,
                   const uint8_t *b_scale_inv, int32_t b_columnwise,
                   int32_t swizzled, const void *bias, void *d, int64_t m,
                   int64_t n, int64_t k, int32_t accumulate, int64_t mk,
                   int64_t nk);

//===----------------------------------------------------------------------===//
// NVFP4
//===----------------------------------------------------------------------===//

int32_t quantize_nvfp4(const Checker &c, te_rt_context *ctx, int32_t dtype,
                       const void *x, int64_t rows, int64_t cols,
                       int32_t block_2d, int32_t rht,
                       int32_t stochastic_rounding, uint64_t seed,
                       int32_t swizzled, void *data, uint8_t *scale_inv,
                       float *amax, void *columnwise_data,
                       uint8_t *columnwise_scale_inv, float *columnwise_amax,
                       int64_t n);

int32_t gemm_nvfp4(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                   const void *a, const uint8_t *a_scale_inv,
                   const float *a_amax, const void *b,
                   const uint8_t *b_scale_inv, const float *b_amax,
                   int32_t swizzled, const void *bias, void *d, int64_t m,
                   int64_t n, int64_t k, int32_t accumulate, int64_t mk,
                   int64_t nk);

int32_t amax_update(const Checker &c, te_rt_context *ctx, const float *history,
                    const float *scale, const float *amax, int64_t len,
                    int64_t n, float fp8_max, int32_t margin,
                    int32_t most_recent, float *new_history, float *new_scale,
                    int64_t count);

} // namespace te::rt::cpu

namespace te::rt::cuda {

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

int32_t norm_fwd(const Checker &c, te_rt_context *ctx, int32_t kind,
                 int32_t dtype, const void *x, const void *gamma,
                 const void *beta, double eps, int32_t zero_centered,
                 int64_t rows, int64_t cols, void *z, float *mu, float *rsigma,
                 bool rms);

int32_t norm_bwd(const Checker &c, te_rt_context *ctx, int32_t kind,
                 int32_t dtype, const void *dz, const void *x, const float *mu,
                 const float *rsigma, const void *gamma, int32_t zero_centered,
                 int64_t rows, int64_t cols, void *dx, void *dgamma,
                 void *dbeta, bool rms);

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

int32_t gemm_fprop(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *x, const void *w, const void *bias, void *y,
                   int64_t m, int64_t n, int64_t k);

int32_t gemm_dgrad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *dy, const void *w, void *dx, int64_t m,
                   int64_t n, int64_t k);

int32_t gemm_wgrad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                   const void *dy, const void *x, void *dw, void *dbias,
                   int64_t m, int64_t n, int64_t k, int32_t accumulate);

int32_t gemm_fprop_act(const Checker &c, te_rt_context *ctx, int32_t act,
                       int32_t dtype, const void *x, const void *w,
                       const void *bias, void *y, void *aux, int64_t m,
                       int64_t n, int64_t k);

int32_t gemm_dgrad_dact(const Checker &c, te_rt_context *ctx, int32_t act,
                        int32_t dtype, const void *dy, const void *w,
                        const void *aux, void *dx, int64_t m, int64_t n,
                        int64_t k);

//===----------------------------------------------------------------------===//
// Activations and bias gradient
//===----------------------------------------------------------------------===//

int32_t act_fwd(const Checker &c, te_rt_context *ctx, int32_t act,
                int32_t dtype, const void *x, void *y, int64_t rows,
                int64_t cols, float limit, float alpha, float offset,
                float *amax);

int32_t act_bwd(const Checker &c, te_rt_context *ctx, int32_t act,
                int32_t dtype, const void *dy, const void *x, void *dx,
                int64_t rows, int64_t cols, float limit, float alpha,
                float offset, float *amax);

int32_t bias_grad(const Checker &c, te_rt_context *ctx, int32_t dtype,
                  const void *dy, void *dbias, int64_t rows, int64_t cols);

int32_t dbias_dact(const Checker &c, te_rt_context *ctx, int32_t act,
                   int32_t dtype, const void *dy, const void *x, void *dx,
                   void *dbias, int64_t rows, int64_t cols, float limit,
                   float alpha, float offset, float *amax);

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

int32_t add(const Checker &c, te_rt_context *ctx, int32_t dtype, const void *a,
            const void *b, void *c_, int64_t n);

int32_t bias_add(const Checker &c, te_rt_context *ctx, int32_t dtype,
                 const void *x, const void *bias, void *out, int64_t rows,
                 int64_t cols);

int32_t cast(const Checker &c, te_rt_context *ctx, int32_t src_dtype,
             int32_t dst_dtype, const void *src, void *dst, int64_t n);

int32_t transpose(const Checker &c, te_rt_context *ctx, int32_t dtype,
                  const void *src, void *dst, int64_t rows, int64_t cols);

int32_t zero_ranges(const Checker &c, te_rt_context *ctx, void *const *ptrs,
                    const int64_t *bytes, int64_t count);

//===----------------------------------------------------------------------===//
// Per-tensor FP8
//===----------------------------------------------------------------------===//

int32_t quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t dtype,
                     const void *x, int64_t rows, int64_t cols, int32_t format,
                     const float *scale, int32_t pow2_scale, void *data,
                     void *transpose, float *scale_inv, float *amax,
                     const float *amax_in);

int32_t dbias_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t dtype,
                           const void *x, int64_t rows, int64_t cols,
                           int32_t format, const float *scale,
                           int32_t pow2_scale, void *data, void *transpose,
                           float *scale_inv, float *amax, void *dbias);

int32_t act_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t act,
                         int32_t dtype, const void *x, int64_t rows,
                         int64_t cols, float limit, float alpha, float offset,
                         int32_t format, const float *scale, void *data,
                         void *transpose, float *scale_inv, float *amax);

int32_t norm_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t kind,
                          int32_t dtype, const void *x, const void *gamma,
                          const void *beta, double eps, int32_t zero_centered,
                          int64_t rows, int64_t cols, float *mu, float *rsigma,
                          int32_t format, const float *scale,
                          int32_t pow2_scale, void *data, void *transpose,
                          float *scale_inv, float *amax, bool rms);

int32_t dact_quantize_fp8(const Checker &c, te_rt_context *ctx, int32_t act,
                          int32_t dtype, const void *dy, const void *x,
                          void *dbias, int64_t rows, int64_t cols, float limit,
                          float alpha, float offset, int32_t format,
                          const float *scale, void *data, void *transpose,
                          float *scale_inv, float *amax);

int32_t gemm_fp8(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                 int32_t a_format, const void *a, const float *a_scale_inv,
                 int32_t b_format, const void *b, const float *b_scale_inv,
                 const void *bias, void *d, int64_t m, int64_t n, int64_t k,
                 int32_t accumulate, int32_t fast_accumulate);

//===----------------------------------------------------------------------===//
// Float8 block scaling
//===----------------------------------------------------------------------===//

int32_t quantize_fp8_block(const Checker &c, te_rt_context *ctx, int32_t dtype,
                           const void *x, int64_t rows, int64_t cols,
                           int32_t block_2d, int32_t pow2_scale, void *data,
                           float *scale_inv, void *columnwise_data,
                           float *columnwise_scale_inv);

int32_t gemm_fp8_block(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                       const void *a, const float *a_scale_inv,
                       int32_t a_block_2d, const void *b,
                       const float *b_scale_inv, int32_t b_block_2d,
                       const void *bias, void *d, int64_t m, int64_t n,
                       int64_t k, int32_t accumulate);

//===----------------------------------------------------------------------===//
// MXFP8
//===----------------------------------------------------------------------===//

int32_t quantize_mxfp8(const Checker &c, te_rt_context *ctx, int32_t dtype,
                       const void *x, int64_t rows, int64_t cols,
                       int32_t format, int32_t swizzled, void *data,
                       uint8_t *scale_inv, void *columnwise_data,
                       uint8_t *columnwise_scale_inv);

int32_t gemm_mxfp8(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                   int32_t a_format, const void *a, const uint8_t *a_scale_inv,
                   int32_t a_columnwise, int32_t b_format, const void *b,
                   const uint8_t *b_scale_inv, int32_t b_columnwise,
                   int32_t swizzled, const void *bias, void *d, int64_t m,
                   int64_t n, int64_t k, int32_t accumulate);

//===----------------------------------------------------------------------===//
// NVFP4
//===----------------------------------------------------------------------===//

int32_t quantize_nvfp4(const Checker &c, te_rt_context *ctx, int32_t dtype,
                       const void *x, int64_t rows, int64_t cols,
                       int32_t block_2d, int32_t rht,
                       int32_t stochastic_rounding, uint64_t seed,
                       int32_t swizzled, void *data, uint8_t *scale_inv,
                       float *amax, void *columnwise_data,
                       uint8_t *columnwise_scale_inv, float *columnwise_amax);

int32_t gemm_nvfp4(const Checker &c, te_rt_context *ctx, int32_t out_dtype,
                   const void *a, const uint8_t *a_scale_inv,
                   const float *a_amax, const void *b,
                   const uint8_t *b_scale_inv, const float *b_amax,
                   int32_t swizzled, const void *bias, void *d, int64_t m,
                   int64_t n, int64_t k, int32_t accumulate);

int32_t amax_update(const Checker &c, te_rt_context *ctx, const float *history,
                    const float *scale, const float *amax, int64_t len,
                    int64_t n, float fp8_max, int32_t margin,
                    int32_t most_recent, float *new_history, float *new_scale);

} // namespace te::rt::cuda

#endif // TE_RUNTIME_LIB_BACKEND_H
