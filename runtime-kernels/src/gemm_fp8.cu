//===- gemm_fp8.cu - Per-tensor FP8 GEMM ----------------------------------===//
//
// The CUDA side of te_rt_gemm_fp8 (per-tensor scales): cuBLASLt's FP8 TN
// matmul (fp32 compute; split accumulation unless the caller asks for fast
// accumulation, TE's fprop default) with the operands' scale_inv as its A/B
// scale pointers; bias through the BIAS epilogue for bf16/f16 output and a
// kernel for f32 output (cuBLASLt's FP8 kernels take a bf16 bias there).
// Descriptors and the heuristic are built per call, as in gemm.cu. The
// matmul (fp8Matmul), the f32 bias, k = 0 and the dequantized fp32
// fallback are shared with the block-scaled GEMM of fp8_block.cu
// (internal.cuh).
//
//===----------------------------------------------------------------------===//

#include "launch.cuh"

#include <algorithm>

using namespace te::kernels;

namespace {

cudaDataType_t fp8Type(int format) {
  return format == kE4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
}

/// d[i, j] = d[i, j] + bias[j] over [rows, cols], rounded once.
template <typename E>
__global__ void addBiasKernel(const typename E::T *bias, typename E::T *d,
                              int64_t rows, int64_t cols) {
  gridWait();
  for (int64_t i = blockIdx.y; i < rows; i += gridDim.y)
    for (int64_t j =
             static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         j < cols; j += static_cast<int64_t>(gridDim.x) * blockDim.x)
      d[i * cols + j] = E::store(E::load(d[i * cols + j]) + E::load(bias[j]));
}

/// x[i] = fp8(q[i]) * scale_inv[0], in fp32.
__global__ void dequantizeKernel(const uint8_t *q, const float *scaleInv,
                                 int format, int64_t n, float *x) {
  gridWait();
  float si = *scaleInv;
  for (int64_t i = globalId(); i < n; i += globalStride())
    x[i] = (format == kE4M3 ? te::formats::e4m3ToFloat(q[i])
                            : te::formats::e5m2ToFloat(q[i])) *
           si;
}

const char *dequantize(te_kernels_state *s, const void *q,
                       const float *scaleInv, int format, int64_t n, float *x) {
  int64_t blocks = std::min<int64_t>((n + 255) / 256, 65535);
  launchKernel(s, dequantizeKernel, unsigned(std::max<int64_t>(blocks, 1)), 256,
               0, static_cast<const uint8_t *>(q), scaleInv, format, n, x);
  return launched();
}

/// Sets one attribute of a matmul descriptor.
template <typename V>
const char *setAttr(cublasLtMatmulDesc_t op,
                    cublasLtMatmulDescAttributes_t which, const V &value) {
  return ltError(
      cublasLtMatmulDescSetAttribute(op, which, &value, sizeof(value)));
}

} // namespace

namespace te::kernels {

const char *addBias(te_kernels_state *s, int dtype, const void *bias, void *d,
                    int64_t rows, int64_t cols) {
  return byDtype(dtype, [&](auto e) {
    using E = decltype(e);
    using T = typename E::T;
    dim3 grid(static_cast<unsigned>(
                  std::min<int64_t>((cols + kThreads - 1) / kThreads, 1024)),
              static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
    launchKernel(s, addBiasKernel<E>, grid, kThreads, 0,
                 static_cast<const T *>(bias), static_cast<T *>(d), rows, cols);
    return launched();
  });
}

const char *gemmWithoutK(te_kernels_state *s, int out_dtype, const void *bias,
                         void *d, int64_t m, int64_t n, int accumulate) {
  return accumulate ? (bias ? addBias(s, out_dtype, bias, d, m, n) : nullptr)
                    : broadcastRows(s, out_dtype, bias, d, m, n);
}

const char *dequantizedGemm(te_kernels_state *s, int out_dtype,
                            const DequantizeOperands &dequantizeOperands,
                            const void *bias, void *d, int64_t m, int64_t n,
                            int64_t k, int accumulate) {
  const int64_t mk = m * k, nk = n * k, mn = m * n;
  float *buf = nullptr;
  if (const char *err = scratch(s, mk + nk + 2 * mn + n, &buf))
    return err;
  float *A = buf, *B = A + mk, *D = B + nk, *Old = D + mn, *Bias = Old + mn;
  if (const char *err = dequantizeOperands(A, B))
    return err;
  if (bias)
    if (const char *err = te_kernels_cast(s, out_dtype, 0, bias, Bias, n))
      return err;
  if (const char *err =
          te_kernels_gemm_fprop(s, 0, A, B, bias ? Bias : nullptr, D, m, n, k))
    return err;
  if (accumulate) {
    if (const char *err = te_kernels_cast(s, out_dtype, 0, d, Old, mn))
      return err;
    if (const char *err = te_kernels_add(s, 0, D, Old, D, mn))
      return err;
  }
  return te_kernels_cast(s, 0, out_dtype, D, d, mn);
}

// Row-major D[m, n] is column-major D^T[n, m] = B[n, k] . A[m, k]^T: the
// cuBLASLt A is our b (column-major [k, n], op T), its B our a (column-major
// [k, m], op N), the TN form Hopper's FP8 kernels require; fprop in gemm.cu
// is the same call. The scales follow their operands: cuBLASLt's A scale
// (and scale mode) is b's, its B scale a's.
const char *fp8Matmul(te_kernels_state *s, int out_dtype, const Fp8Operand &a,
                      const Fp8Operand &b, const void *bias, void *d, int64_t m,
                      int64_t n, int64_t k, int accumulate, bool *unsupported,
                      bool fastAccumulate) {
  *unsupported = false;
  if (const char *err = ltReady(s))
    return err;
  const cudaDataType_t t = cudaTypeOf(out_dtype);
  const bool epilogueBias = bias && out_dtype != 0;
  Descriptors g;
  if (const char *err = ltError(
          cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F)))
    return err;
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  // Split accumulation (fast accumulation off) is TE's choice for dgrad and
  // wgrad and for every block-scaled GEMM; fprop under the per-tensor
  // recipes accumulates fast (use_split_accumulator False).
  const int8_t fastAccum = fastAccumulate ? 1 : 0;
  if (const char *err = setAttr(g.op, CUBLASLT_MATMUL_DESC_TRANSA, ta))
    return err;
  if (const char *err = setAttr(g.op, CUBLASLT_MATMUL_DESC_TRANSB, tb))
    return err;
  if (const char *err =
          setAttr(g.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fastAccum))
    return err;
  if (const char *err =
          setAttr(g.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, b.scaleInv))
    return err;
  if (const char *err =
          setAttr(g.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a.scaleInv))
    return err;
  if (a.scaleMode != kPerTensorScale || b.scaleMode != kPerTensorScale) {
    // Block scales: the scale-mode attributes and the 128-element modes
    // exist from cuBLAS 12.9 on (older libraries: the caller's fallback).
#if CUBLAS_VERSION >= 120900
    if (cublasLtGetVersion() < 120900) {
      *unsupported = true;
      return nullptr;
    }
    auto mode = [](int scaleMode) {
      return scaleMode == kPerTensorScale
                 ? CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F
                 : static_cast<cublasLtMatmulMatrixScale_t>(scaleMode);
    };
    const cublasLtMatmulMatrixScale_t modeA = mode(b.scaleMode),
                                      modeB = mode(a.scaleMode);
    if (cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
                                       &modeA, sizeof(modeA)) !=
            CUBLAS_STATUS_SUCCESS ||
        cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
                                       &modeB, sizeof(modeB)) !=
            CUBLAS_STATUS_SUCCESS) {
      *unsupported = true;
      return nullptr;
    }
#else
    *unsupported = true;
    return nullptr;
#endif
  }
  if (epilogueBias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    if (const char *err = setAttr(g.op, CUBLASLT_MATMUL_DESC_EPILOGUE, epi))
      return err;
    if (const char *err =
            setAttr(g.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias))
      return err;
    if (const char *err = setAttr(g.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, t))
      return err;
  }
  if (const char *err =
          ltError(cublasLtMatrixLayoutCreate(&g.a, b.type, k, n, k)))
    return err;
  if (const char *err =
          ltError(cublasLtMatrixLayoutCreate(&g.b, a.type, k, m, k)))
    return err;
  if (const char *err = ltError(cublasLtMatrixLayoutCreate(&g.c, t, n, m, n)))
    return err;
  if (const char *err = ltError(cublasLtMatrixLayoutCreate(&g.d, t, n, m, n)))
    return err;
  GemmKey key;
  key.add(1 /* FP8 */).add(out_dtype).add(a.type).add(b.type);
  key.add(a.scaleMode).add(b.scaleMode).add(m).add(n).add(k).add(fastAccum);
  key.add(epilogueBias).add(accumulate != 0).add(alignmentOf(b.data));
  key.add(alignmentOf(a.data)).add(alignmentOf(d));
  key.add(epilogueBias ? alignmentOf(bias) : 0);
  if (const char *err = runMatmul(s, key, g, b.data, a.data, d,
                                  accumulate ? 1.0f : 0.0f, unsupported))
    return err;
  if (*unsupported)
    return nullptr;
  return bias && !epilogueBias ? addBias(s, out_dtype, bias, d, m, n) : nullptr;
}

} // namespace te::kernels

extern "C" {

const char *te_kernels_gemm_fp8(te_kernels_state *s, int out_dtype,
                                int a_format, const void *a,
                                const float *a_scale_inv, int b_format,
                                const void *b, const float *b_scale_inv,
                                const void *bias, void *d, int64_t m, int64_t n,
                                int64_t k, int accumulate,
                                int fast_accumulate) {
  if (a_format == kE5M2 && b_format == kE5M2)
    return "FP8 GEMM: E5M2 x E5M2 is not supported by cuBLASLt (one operand "
           "must be E4M3)";
  if (m == 0 || n == 0)
    return nullptr;
  if (k == 0)
    return gemmWithoutK(s, out_dtype, bias, d, m, n, accumulate);
  // Shapes cuBLASLt's FP8 kernels do not take (a dim not a multiple of 16,
  // e.g. 8 tokens): the fp32 GEMM of the dequantized operands.
  if (m % 16 || n % 16 || k % 16)
    return dequantizedGemm(
        s, out_dtype,
        [&](float *A, float *B) -> const char * {
          if (const char *err =
                  dequantize(s, a, a_scale_inv, a_format, m * k, A))
            return err;
          return dequantize(s, b, b_scale_inv, b_format, n * k, B);
        },
        bias, d, m, n, k, accumulate);
  bool unsupported = false;
  if (const char *err = fp8Matmul(
          s, out_dtype, {a, fp8Type(a_format), a_scale_inv, kPerTensorScale},
          {b, fp8Type(b_format), b_scale_inv, kPerTensorScale}, bias, d, m, n,
          k, accumulate, &unsupported, fast_accumulate != 0))
    return err;
  return unsupported ? "cuBLASLt has no FP8 algorithm for this GEMM (FP8 "
                       "needs sm_89 or newer)"
                     : nullptr;
}

} // extern "C"
