/*===- ops.h - te-mlir CUDA kernels: the runtime's compute primitives -*- C
-*-===*\
|*                                                                          *|
|* The CUDA backend of the te_rt_* compute primitives (norms, activations,  *|
|* GEMMs through cuBLASLt, reductions, elementwise). CUDA only, no MLIR.    *|
|* Arguments are already checked by the runtime; buffers are device memory. *|
|* Every call is queued on the state's stream and returns NULL, or a static *|
|* message when a launch or a CUDA/cuBLASLt call failed.                     *|
|*                                                                          *|
|* dtype: 0 f32, 1 bf16, 2 f16 (TE_RT_DTYPE_*); act: TE_RT_ACT_* order.     *|
|* Math is fp32; every output is rounded once, to nearest even.             *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef TE_KERNELS_OPS_H
#define TE_KERNELS_OPS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Per-context state: the stream, the cuBLASLt handle and workspace, and a
 * grow-only fp32 device scratch buffer (reduction partials). */
typedef struct te_kernels_state te_kernels_state;

const char *te_kernels_state_create(void *stream, te_kernels_state **state);
/* Binds the state to `stream` (a cudaStream_t; 0 is the legacy default
 * stream) and, when `workspace` is not NULL, to the caller's workspace
 * [workspace, workspace + bytes): the GEMM workspace (32 MiB) first, the
 * scratch after it, never grown (a larger request fails; see
 * te_kernels_state_scratch_needed). NULL: the state's own buffers. */
void te_kernels_state_bind(te_kernels_state *s, void *stream, void *workspace,
                           int64_t bytes);
/* The workspace bytes the last call refused for lack of the caller's
 * scratch needed (0 when none since the last bind). */
int64_t te_kernels_state_scratch_needed(const te_kernels_state *s);
/* Waits for the stream, then frees everything (NULL is fine). */
void te_kernels_state_destroy(te_kernels_state *state);

/* te_rt_norm_fwd / te_rt_norm_bwd; rms selects RMSNorm. */
const char *te_kernels_norm_fwd(te_kernels_state *s, int rms, int dtype,
                                const void *x, const void *gamma,
                                const void *beta, float eps, int zero_centered,
                                int64_t rows, int64_t cols, void *z, float *mu,
                                float *rsigma);
const char *te_kernels_norm_bwd(te_kernels_state *s, int rms, int dtype,
                                const void *dz, const void *x, const float *mu,
                                const float *rsigma, const void *gamma,
                                int zero_centered, int64_t rows, int64_t cols,
                                void *dx, void *dgamma, void *dbeta);

/* The three GEMMs of te_rt_gemm_* (row-major, TE's layouts). */
const char *te_kernels_gemm_fprop(te_kernels_state *s, int dtype, const void *x,
                                  const void *w, const void *bias, void *y,
                                  int64_t m, int64_t n, int64_t k);
const char *te_kernels_gemm_dgrad(te_kernels_state *s, int dtype,
                                  const void *dy, const void *w, void *dx,
                                  int64_t m, int64_t n, int64_t k);
const char *te_kernels_gemm_wgrad(te_kernels_state *s, int dtype,
                                  const void *dy, const void *x, void *dw,
                                  void *dbias, int64_t m, int64_t n, int64_t k,
                                  int accumulate);
/* dw (fp32) [+]= dy^T . x with dy, x in dtype (te_rt_gemm_wgrad_fp32). */
const char *te_kernels_gemm_wgrad_fp32(te_kernels_state *s, int dtype,
                                       const void *dy, const void *x, float *dw,
                                       int64_t m, int64_t n, int64_t k,
                                       int accumulate);
/* te_rt_gemm_fprop_act / te_rt_gemm_dgrad_dact: GELU in the GEMM's
 * epilogue (GELU_AUX_BIAS / DGELU), the unfused pair where cuBLASLt has no
 * algorithm for it. */
const char *te_kernels_gemm_fprop_act(te_kernels_state *s, int act, int dtype,
                                      const void *x, const void *w,
                                      const void *bias, void *y, void *aux,
                                      int64_t m, int64_t n, int64_t k);
const char *te_kernels_gemm_dgrad_dact(te_kernels_state *s, int act,
                                       int dtype, const void *dy,
                                       const void *w, const void *aux,
                                       void *dx, int64_t m, int64_t n,
                                       int64_t k);
/* How many te_kernels_gemm_fprop_act / _dgrad_dact calls took the unfused
 * fallback (cuBLASLt had no epilogue algorithm, or the aux leading dim is
 * not a multiple of 8), for tests. */
int64_t te_kernels_gemm_act_fallbacks(te_kernels_state *s);
/* te_rt_act_quantize_fp8 / te_rt_dact_quantize_fp8: the activation (or its
 * derivative, with dbias its bias gradient) cast to FP8 with a given scale
 * in one pass, data and transpose from the same tile, without storing the
 * high-precision tensor. */
const char *te_kernels_act_quantize_fp8(te_kernels_state *s, int act,
                                        int dtype, const void *x, int64_t rows,
                                        int64_t cols, float limit, float alpha,
                                        float offset, int format,
                                        const float *scale, void *data,
                                        void *transpose, float *scale_inv,
                                        float *amax);
const char *te_kernels_dact_quantize_fp8(
    te_kernels_state *s, int act, int dtype, const void *dy, const void *x,
    void *dbias, int64_t rows, int64_t cols, float limit, float alpha,
    float offset, int format, const float *scale, void *data, void *transpose,
    float *scale_inv, float *amax);
/* te_rt_norm_quantize_fp8: the normalization cast to FP8 without storing z
 * (delayed scaling: the FP8 rows from the norm kernel, the transposed copy
 * from them; current scaling: z in the scratch with its amax taken by the
 * norm kernel, then the cast). */
const char *te_kernels_norm_quantize_fp8(
    te_kernels_state *s, int rms, int dtype, const void *x, const void *gamma,
    const void *beta, float eps, int zero_centered, int64_t rows, int64_t cols,
    float *mu, float *rsigma, int format, const float *scale, int pow2_scale,
    void *data, void *transpose, float *scale_inv, float *amax);
/* The GEMM algorithm cache of the state (every cuBLASLt GEMM): problems
 * seen, heuristic queries made, problems whose candidates were timed. A
 * problem is queried once and keeps the heuristic's first choice; with
 * TE_RT_GEMM_TUNING=1 its first call (outside a graph capture, beta 0)
 * times up to eight candidates and keeps the fastest: within a process
 * every call then writes the same bytes, but another process may time its
 * way to another algorithm (other rounding), so tuned results are not
 * reproducible across processes. */
void te_kernels_gemm_cache_stats(te_kernels_state *s, int64_t *problems,
                                 int64_t *queries, int64_t *tuned);

/* te_rt_act_fwd / te_rt_act_bwd / te_rt_dbias_dact (non-gated act).
 * amax (a device float, or NULL): max |output| as stored (NaN skipped),
 * reduced by the kernel that writes the output (the cell is zeroed on the
 * stream first); nothing extra runs without it. */
const char *te_kernels_act_fwd(te_kernels_state *s, int act, int dtype,
                               const void *x, void *y, int64_t rows,
                               int64_t cols, float limit, float alpha,
                               float offset, float *amax);
const char *te_kernels_act_bwd(te_kernels_state *s, int act, int dtype,
                               const void *dy, const void *x, void *dx,
                               int64_t rows, int64_t cols, float limit,
                               float alpha, float offset, float *amax);
const char *te_kernels_dbias_dact(te_kernels_state *s, int act, int dtype,
                                  const void *dy, const void *x, void *dx,
                                  void *dbias, int64_t rows, int64_t cols,
                                  float limit, float alpha, float offset,
                                  float *amax);

/* dbias[cols] = column sums of dy [rows, cols] (fp32, deterministic). */
const char *te_kernels_bias_grad(te_kernels_state *s, int dtype, const void *dy,
                                 void *dbias, int64_t rows, int64_t cols);
const char *te_kernels_add(te_kernels_state *s, int dtype, const void *a,
                           const void *b, void *c, int64_t n);
/* out[rows, cols] = x + bias[cols] broadcast over the rows (out may be x). */
const char *te_kernels_bias_add(te_kernels_state *s, int dtype, const void *x,
                                const void *bias, void *out, int64_t rows,
                                int64_t cols);
const char *te_kernels_cast(te_kernels_state *s, int src_dtype, int dst_dtype,
                            const void *src, void *dst, int64_t n);
const char *te_kernels_transpose(te_kernels_state *s, int dtype,
                                 const void *src, void *dst, int64_t rows,
                                 int64_t cols);
/* dst[cols, rows] = src[rows, cols]^T of 1-byte elements (FP8 data). */
const char *te_kernels_transpose_bytes(te_kernels_state *s, const void *src,
                                       void *dst, int64_t rows, int64_t cols);
/* te_rt_add_columnwise_fp8: transpose = data^T (as te_kernels_transpose_bytes)
 * and *scale_inv_out = *scale_inv, in one launch (the transpose kernel's
 * first block copies the scale; a copy alone when data is empty). */
const char *te_kernels_add_columnwise_fp8(te_kernels_state *s, const void *data,
                                          const float *scale_inv, int64_t rows,
                                          int64_t cols, void *transpose,
                                          float *scale_inv_out);
/* te_rt_zero_ranges: bytes[i] zero bytes from ptrs[i], i < count (checked
 * by the runtime: no negative size, no NULL pointer of a non-empty range).
 * One launch per TE_RT_ZERO_RANGES_PER_LAUNCH non-empty ranges, passed by
 * value in the kernel's parameters; none when every range is empty. */
const char *te_kernels_zero_ranges(te_kernels_state *s, void *const *ptrs,
                                   const int64_t *bytes, int64_t count);
/* te_kernels_zero_ranges forked as te_kernels_amax_update_fork is: while
 * s->stream is capturing, on the side stream beside what s->stream queues
 * next, until te_kernels_join; otherwise on s->stream, in order. (The
 * module runner's zeroing of result padding no entry writes.) */
const char *te_kernels_zero_ranges_fork(te_kernels_state *s, void *const *ptrs,
                                        const int64_t *bytes, int64_t count);

/* Per-tensor FP8 (te_rt_quantize_fp8, te_rt_gemm_fp8, te_rt_amax_update;
 * format: 0 E4M3, 1 E5M2). scale NULL: current scaling (amax reduced on
 * the device, the scale computed there, no host synchronization); with
 * amax_in (a device float: the producer's amax; scale and amax NULL) the
 * amax pass is skipped and the scale computed from amax_in[0]. The
 * GEMM is cuBLASLt's FP8 TN GEMM with the scale_inv pointers as A/B scales
 * (fp32 compute; bias in out_dtype, for f32 output added by a kernel). */
const char *te_kernels_quantize_fp8(te_kernels_state *s, int dtype,
                                    const void *x, int64_t rows, int64_t cols,
                                    int format, const float *scale,
                                    int pow2_scale, void *data, void *transpose,
                                    float *scale_inv, float *amax,
                                    const float *amax_in);
/* te_rt_dbias_quantize_fp8: te_kernels_quantize_fp8 of x (amax_in NULL)
 * with dbias [cols] (dtype) = the fp32 column sums of x, rounded once, from
 * the same pass (TE's cast_transpose_dbias): each tile-row band's column
 * sums into the scratch, then one reduction kernel (colFinish). Current
 * scaling (scale NULL) reduces the amax first, as te_kernels_quantize_fp8
 * does. */
const char *te_kernels_dbias_quantize_fp8(
    te_kernels_state *s, int dtype, const void *x, int64_t rows, int64_t cols,
    int format, const float *scale, int pow2_scale, void *data, void *transpose,
    float *scale_inv, float *amax, void *dbias);
const char *te_kernels_gemm_fp8(te_kernels_state *s, int out_dtype,
                                int a_format, const void *a,
                                const float *a_scale_inv, int b_format,
                                const void *b, const float *b_scale_inv,
                                const void *bias, void *d, int64_t m,
                                int64_t n, int64_t k, int accumulate,
                                int fast_accumulate);
/* te_rt_amax_update_unused (unused = 0: te_rt_amax_update): a slot whose
 * bit is set takes 0 as its step amax, amax[s] not read (the mask checked
 * by the runtime: no bit at or above n, nonzero only with n <= 64). */
const char *te_kernels_amax_update(te_kernels_state *s, const float *history,
                                   const float *scale, const float *amax,
                                   int64_t len, int64_t n, float fp8_max,
                                   int margin, int most_recent, int64_t unused,
                                   float *new_history, float *new_scale);
/* te_rt_amax_update_fork: while s->stream is capturing a CUDA graph,
 * te_kernels_amax_update queued on the state's side stream, forked from
 * s->stream after the work queued there so far: in the graph, a branch
 * beside whatever is queued on s->stream after it, until te_kernels_join.
 * Otherwise (no capture, or nothing to update) te_kernels_amax_update on
 * s->stream, in order. */
const char *te_kernels_amax_update_fork(te_kernels_state *s,
                                        const float *history,
                                        const float *scale, const float *amax,
                                        int64_t len, int64_t n, float fp8_max,
                                        int margin, int most_recent,
                                        int64_t unused, float *new_history,
                                        float *new_scale);
/* Makes the stream the pending fork left (te_kernels_amax_update_fork)
 * wait for everything queued on the side stream, and joins a pending
 * branch (te_kernels_branch_join); nothing when neither is pending. */
const char *te_kernels_join(te_kernels_state *s);
/* te_rt_branch_begin: while s->stream is capturing a CUDA graph, forks the
 * state's branch from it after the work queued there so far and sets
 * *branch to the branch's state: calls given that state run beside what
 * is queued on s->stream after the fork, with their own stream, GEMM
 * workspace, scratch and amax ticket, and the GEMM algorithms s chose,
 * until te_kernels_branch_join. Otherwise (no capture) *branch is s: in
 * order. */
const char *te_kernels_branch_begin(te_kernels_state *s,
                                    te_kernels_state **branch);
/* te_rt_branch_end: marks the end of a run of the pending branch (an
 * event on its stream); nothing when no branch is pending (in order). */
const char *te_kernels_branch_end(te_kernels_state *s);
/* Makes the stream a pending branch left wait for the branch's runs up to
 * `run` (counted from 0 since the branch was forked; run < 0, or a run
 * not ended yet: everything queued on the branch, which also ends the
 * branch); nothing when no branch is pending. */
const char *te_kernels_branch_join(te_kernels_state *s, int64_t run);

/* Float8 block scaling (te_rt_quantize_fp8_block, te_rt_gemm_fp8_block;
 * layouts and semantics as documented there; arguments already checked). */
const char *te_kernels_quantize_fp8_block(te_kernels_state *s, int dtype,
                                          const void *x, int64_t rows,
                                          int64_t cols, int block_2d,
                                          int pow2_scale, void *data,
                                          float *scale_inv,
                                          void *columnwise_data,
                                          float *columnwise_scale_inv);
const char *te_kernels_gemm_fp8_block(te_kernels_state *s, int out_dtype,
                                      const void *a, const float *a_scale_inv,
                                      int a_block_2d, const void *b,
                                      const float *b_scale_inv, int b_block_2d,
                                      const void *bias, void *d, int64_t m,
                                      int64_t n, int64_t k, int accumulate);

#ifdef __cplusplus
}
#endif

#endif /* TE_KERNELS_OPS_H */
