//===- gemm.cu - The linear layer's GEMMs through cuBLASLt ----------------===//
//
// fprop (TN), dgrad (NN) and wgrad (NT) of row-major operands as
// column-major cuBLASLt matmuls: fp32 compute and scale (no TF32), f32/bf16/
// f16 buffers, the bias epilogue for fprop, BGRADB for wgrad's dbias (the
// bias-gradient kernel when cuBLASLt has no algorithm with it), beta = 1 for
// wgrad's accumulate. Zero-sized problems never reach cuBLASLt. Also the
// cuBLASLt plumbing internal.cuh declares for every GEMM of the library
// (status names, the handle and workspace, the heuristic's preferences) and
// the algorithm cache every GEMM runs through (runMatmul): one heuristic
// query per problem; with TE_RT_GEMM_TUNING=1 its candidates are timed once
// and the fastest kept (measured on the H200: at most 0.7% on a whole
// training step, so the heuristic's first choice is the default).
//
//===----------------------------------------------------------------------===//

#include "internal.cuh"

#include <algorithm>
#include <cstdlib>

using namespace te::kernels;

namespace te::kernels {

namespace {
constexpr size_t kWorkspaceBytes = size_t(32) << 20;
/// Candidates timed on a problem's first call, and timed runs of each
/// (after one untimed run).
constexpr int kTuneCandidates = 8;
constexpr int kTuneRuns = 2;
} // namespace

const char *ltError(cublasStatus_t st) {
  switch (st) {
  case CUBLAS_STATUS_SUCCESS:
    return nullptr;
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "cuBLASLt: CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "cuBLASLt: CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "cuBLASLt: CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "cuBLASLt: CUBLAS_STATUS_ARCH_MISMATCH (the GPU lacks a feature "
           "the GEMM needs; FP8 needs sm_89 or newer)";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "cuBLASLt: CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "cuBLASLt: CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "cuBLASLt: CUBLAS_STATUS_NOT_SUPPORTED";
  default:
    return "cuBLASLt: call failed";
  }
}

uint32_t alignmentOf(const void *p) {
  uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align)
    align /= 2;
  return align;
}

const char *ltReady(te_kernels_state *s) {
  if (!s->lt) {
    if (const char *err = ltError(cublasLtCreate(&s->lt)))
      return err;
    const char *env = std::getenv("TE_RT_GEMM_TUNING");
    s->tuneGemms = env && env[0] == '1';
  }
  if (!s->workspace) {
    if (const char *err = status(cudaMalloc(&s->workspace, kWorkspaceBytes)))
      return err;
    s->workspaceBytes = kWorkspaceBytes;
  }
  return nullptr;
}

void setPreferences(te_kernels_state *s, cublasLtMatmulPreference_t pref,
                    const void *A, const void *B, const void *D) {
  size_t ws = s->workspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  const uint32_t al[4] = {alignmentOf(A), alignmentOf(B), alignmentOf(D),
                          alignmentOf(D)};
  const cublasLtMatmulPreferenceAttributes_t which[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    cublasLtMatmulPreferenceSetAttribute(pref, which[i], &al[i], sizeof(al[i]));
}

namespace {

/// Queues the matmul with `algo`; C is D.
cublasStatus_t launch(te_kernels_state *s, Descriptors &g,
                      const cublasLtMatmulAlgo_t &algo, const void *A,
                      const void *B, void *D, float beta) {
  const float alpha = 1.0f;
  cublasLtMatrixLayout_t c = g.c ? g.c : g.d;
  return cublasLtMatmul(s->lt, g.op, &alpha, A, g.a, B, g.b, &beta, D, c, D,
                        g.d, &algo, s->workspace, s->workspaceBytes,
                        s->stream);
}

/// Times `candidates` (each: one untimed run, then kTuneRuns timed ones)
/// and returns the index of the fastest; candidates that fail to run are
/// skipped (0 when none ran).
const char *fastest(te_kernels_state *s, Descriptors &g,
                    const cublasLtMatmulHeuristicResult_t *candidates,
                    int count, const void *A, const void *B, void *D,
                    int *best) {
  *best = 0;
  cudaEvent_t start = nullptr, stop = nullptr;
  if (const char *err = status(cudaEventCreate(&start)))
    return err;
  if (const char *err = status(cudaEventCreate(&stop))) {
    cudaEventDestroy(start);
    return err;
  }
  float bestMs = -1;
  const char *err = nullptr;
  for (int i = 0; i < count && !err; ++i) {
    if (launch(s, g, candidates[i].algo, A, B, D, 0.0f) !=
        CUBLAS_STATUS_SUCCESS)
      continue;
    bool ran = true;
    err = status(cudaEventRecord(start, s->stream));
    for (int r = 0; r < kTuneRuns && ran && !err; ++r)
      ran = launch(s, g, candidates[i].algo, A, B, D, 0.0f) ==
            CUBLAS_STATUS_SUCCESS;
    if (!err)
      err = status(cudaEventRecord(stop, s->stream));
    if (!err)
      err = status(cudaEventSynchronize(stop));
    float ms = 0;
    if (!err)
      err = status(cudaEventElapsedTime(&ms, start, stop));
    if (!err && ran && (bestMs < 0 || ms < bestMs)) {
      bestMs = ms;
      *best = i;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return err;
}

} // namespace

const char *runMatmul(te_kernels_state *s, const GemmKey &key, Descriptors &g,
                      const void *A, const void *B, void *D, float beta,
                      bool *unsupported) {
  *unsupported = false;
  auto it = s->gemmChoices.find(key.bytes);
  if (it == s->gemmChoices.end()) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (const char *err = status(cudaStreamIsCapturing(s->stream, &capture)))
      return err;
    const bool tune = s->tuneGemms && beta == 0.0f &&
                      capture == cudaStreamCaptureStatusNone;
    if (!g.pref) {
      if (const char *err = ltError(cublasLtMatmulPreferenceCreate(&g.pref)))
        return err;
      setPreferences(s, g.pref, A, B, D);
    }
    cublasLtMatmulHeuristicResult_t heur[kTuneCandidates] = {};
    int found = 0;
    ++s->gemmHeuristicQueries;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
        s->lt, g.op, g.a, g.b, g.c ? g.c : g.d, g.d, g.pref,
        tune ? kTuneCandidates : 1, heur, &found);
    te_kernels_gemm_choice choice;
    if (st == CUBLAS_STATUS_NOT_SUPPORTED ||
        (st == CUBLAS_STATUS_SUCCESS && found == 0)) {
      choice.unsupported = true;
    } else {
      if (const char *err = ltError(st))
        return err;
      int best = 0;
      if (found > 1) {
        if (const char *err = fastest(s, g, heur, found, A, B, D, &best))
          return err;
        choice.tuned = true;
        ++s->gemmTunedProblems;
      }
      choice.algo = heur[best].algo;
    }
    it = s->gemmChoices.emplace(key.bytes, choice).first;
  }
  if (it->second.unsupported) {
    *unsupported = true;
    return nullptr;
  }
  cublasStatus_t st = launch(s, g, it->second.algo, A, B, D, beta);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED) { // nothing was queued
    *unsupported = true;
    return nullptr;
  }
  return ltError(st);
}

} // namespace te::kernels

namespace {

/// Column-major D[M, N] = op(A) . op(B) (+ beta * D) with epilogue `epi`
/// (bias: the epilogue's vector). *unsupported is set, with no error, when
/// cuBLASLt offers no algorithm.
const char *matmul(te_kernels_state *s, int dtype, cublasOperation_t ta,
                   cublasOperation_t tb, int64_t M, int64_t N, int64_t K,
                   const void *A, int64_t lda, const void *B, int64_t ldb,
                   void *D, int64_t ldd, float beta, cublasLtEpilogue_t epi,
                   const void *bias, bool *unsupported,
                   const void *aux = nullptr, int64_t ldaux = 0) {
  *unsupported = false;
  if (const char *err = ltReady(s))
    return err;
  cudaDataType_t t = cudaTypeOf(dtype);
  Descriptors g;
  if (const char *err = ltError(
          cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F)))
    return err;
  cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                 sizeof(ta));
  cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                 sizeof(tb));
  if (epi != CUBLASLT_EPILOGUE_DEFAULT) {
    cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                   sizeof(epi));
    cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                   &bias, sizeof(bias));
    cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                   &t, sizeof(t));
  }
  if (aux) { // GELU_AUX* writes it, DGELU reads it; same dtype as D
    cublasLtMatmulDescSetAttribute(
        g.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux));
    cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                   &ldaux, sizeof(ldaux));
  }
  bool aN = ta == CUBLAS_OP_N, bN = tb == CUBLAS_OP_N;
  if (const char *err = ltError(
          cublasLtMatrixLayoutCreate(&g.a, t, aN ? M : K, aN ? K : M, lda)))
    return err;
  if (const char *err = ltError(
          cublasLtMatrixLayoutCreate(&g.b, t, bN ? K : N, bN ? N : K, ldb)))
    return err;
  if (const char *err = ltError(cublasLtMatrixLayoutCreate(&g.d, t, M, N, ldd)))
    return err;
  GemmKey key;
  key.add(0 /* high precision */).add(dtype).add(ta).add(tb).add(M).add(N);
  key.add(K).add(lda).add(ldb).add(ldd).add(epi).add(beta != 0.0f);
  key.add(alignmentOf(A)).add(alignmentOf(B)).add(alignmentOf(D));
  key.add(bias ? alignmentOf(bias) : 0);
  key.add(aux ? alignmentOf(aux) : 0).add(ldaux);
  return runMatmul(s, key, g, A, B, D, beta, unsupported);
}

/// matmul, where "no algorithm" is an error.
const char *matmulOrFail(te_kernels_state *s, int dtype, cublasOperation_t ta,
                         cublasOperation_t tb, int64_t M, int64_t N, int64_t K,
                         const void *A, int64_t lda, const void *B, int64_t ldb,
                         void *D, int64_t ldd, float beta,
                         cublasLtEpilogue_t epi, const void *bias) {
  bool unsupported = false;
  if (const char *err = matmul(s, dtype, ta, tb, M, N, K, A, lda, B, ldb, D,
                               ldd, beta, epi, bias, &unsupported))
    return err;
  return unsupported ? "cuBLASLt has no algorithm for this GEMM" : nullptr;
}

int64_t elemBytes(int dtype) { return dtype == 0 ? 4 : 2; }

} // namespace

extern "C" {

void te_kernels_gemm_cache_stats(te_kernels_state *s, int64_t *problems,
                                 int64_t *queries, int64_t *tuned) {
  *problems = static_cast<int64_t>(s->gemmChoices.size());
  *queries = s->gemmHeuristicQueries;
  *tuned = s->gemmTunedProblems;
}

// Row-major Y[m, n] is column-major Y^T[n, m]: every GEMM below computes the
// transposed product column-major.

const char *te_kernels_gemm_fprop(te_kernels_state *s, int dtype, const void *x,
                                  const void *w, const void *bias, void *y,
                                  int64_t m, int64_t n, int64_t k) {
  if (m == 0 || n == 0)
    return nullptr;
  if (k == 0)
    return broadcastRows(s, dtype, bias, y, m, n);
  // Y^T[n, m] = W[k, n]^T (col-major) . X^T[k, m] (+ bias[n] per row).
  return matmulOrFail(
      s, dtype, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, w, k, x, k, y, n, 0.0f,
      bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT, bias);
}

const char *te_kernels_gemm_dgrad(te_kernels_state *s, int dtype,
                                  const void *dy, const void *w, void *dx,
                                  int64_t m, int64_t n, int64_t k) {
  if (m == 0 || k == 0)
    return nullptr;
  if (n == 0)
    return status(cudaMemsetAsync(dx, 0, m * k * elemBytes(dtype), s->stream));
  // DX^T[k, m] = W^T[k, n] (col-major view of w) . DY^T[n, m].
  return matmulOrFail(s, dtype, CUBLAS_OP_N, CUBLAS_OP_N, k, m, n, w, k, dy, n,
                      dx, k, 0.0f, CUBLASLT_EPILOGUE_DEFAULT, nullptr);
}

const char *te_kernels_gemm_wgrad(te_kernels_state *s, int dtype,
                                  const void *dy, const void *x, void *dw,
                                  void *dbias, int64_t m, int64_t n, int64_t k,
                                  int accumulate) {
  if (n == 0)
    return nullptr;
  if (m == 0 || k == 0) {
    if (m == 0 && !accumulate && k > 0)
      if (const char *err = status(
              cudaMemsetAsync(dw, 0, n * k * elemBytes(dtype), s->stream)))
        return err;
    return dbias ? biasGrad(s, dtype, dy, dbias, m, n) : nullptr;
  }
  // DW^T[k, n] = X^T[k, m] . DY[m, n] (op T of the col-major DY^T[n, m]);
  // BGRADB sums op(B) = DY over m: dbias[n].
  float beta = accumulate ? 1.0f : 0.0f;
  if (dbias) {
    bool unsupported = false;
    if (const char *err =
            matmul(s, dtype, CUBLAS_OP_N, CUBLAS_OP_T, k, n, m, x, k, dy, n, dw,
                   k, beta, CUBLASLT_EPILOGUE_BGRADB, dbias, &unsupported))
      return err;
    if (!unsupported)
      return nullptr;
  }
  if (const char *err =
          matmulOrFail(s, dtype, CUBLAS_OP_N, CUBLAS_OP_T, k, n, m, x, k, dy, n,
                       dw, k, beta, CUBLASLT_EPILOGUE_DEFAULT, nullptr))
    return err;
  return dbias ? biasGrad(s, dtype, dy, dbias, m, n) : nullptr;
}

// GELU in the epilogue (te_rt_gemm_fprop_act / te_rt_gemm_dgrad_dact).
// Where cuBLASLt has no algorithm with it, the plain GEMM and the activation
// kernel run instead (in place on the output: the kernels are elementwise),
// which rounds the product once more.

const char *te_kernels_gemm_fprop_act(te_kernels_state *s, int act, int dtype,
                                      const void *x, const void *w,
                                      const void *bias, void *y, void *aux,
                                      int64_t m, int64_t n, int64_t k) {
  if (m == 0 || n == 0)
    return nullptr;
  if (k > 0) {
    cublasLtEpilogue_t epi =
        aux ? (bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX)
            : (bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU);
    bool unsupported = false;
    if (const char *err = matmul(s, dtype, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, w,
                                 k, x, k, y, n, 0.0f, epi, bias, &unsupported,
                                 aux, n))
      return err;
    if (!unsupported)
      return nullptr;
  }
  void *pre = aux ? aux : y;
  if (const char *err = te_kernels_gemm_fprop(s, dtype, x, w, bias, pre, m, n, k))
    return err;
  return te_kernels_act_fwd(s, act, dtype, pre, y, m, n, 0.0f, 0.0f, 0.0f,
                            nullptr);
}

const char *te_kernels_gemm_dgrad_dact(te_kernels_state *s, int act,
                                       int dtype, const void *dy,
                                       const void *w, const void *aux,
                                       void *dx, int64_t m, int64_t n,
                                       int64_t k) {
  if (m == 0 || k == 0)
    return nullptr;
  if (n > 0) {
    bool unsupported = false;
    if (const char *err = matmul(s, dtype, CUBLAS_OP_N, CUBLAS_OP_N, k, m, n, w,
                                 k, dy, n, dx, k, 0.0f, CUBLASLT_EPILOGUE_DGELU,
                                 nullptr, &unsupported, aux, k))
      return err;
    if (!unsupported)
      return nullptr;
  }
  if (const char *err = te_kernels_gemm_dgrad(s, dtype, dy, w, dx, m, n, k))
    return err;
  return te_kernels_act_bwd(s, act, dtype, dx, aux, dx, m, k, 0.0f, 0.0f, 0.0f,
                            nullptr);
}

} // extern "C"
