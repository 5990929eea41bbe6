// probe_epilogues.cu - which cuBLASLt GEMM epilogues exist on this GPU for
// the MLP's GEMMs, and what they cost.
//
// For the FC1 forward GEMM and the FC2 dgrad GEMM of LN-MLP 8192x4096x16384
// (column-major D[16384, 8192] = op(A)[16384, 4096] . B[4096, 8192], TN as
// every Hopper FP8 GEMM), in bf16 and FP8 (E4M3 x E4M3 forward, E4M3 x E5M2
// backward, bf16 output), asks the heuristic for DEFAULT, BIAS,
// GELU_AUX_BIAS, DGELU, DGELU_BGRAD, each with and without an amax of D,
// and times the heuristic's first algorithm (median of 20 launches, CUDA
// events). Prints one line per combination: found algorithms, median us.
// Then every algorithm the heuristic offers (up to 16, in its order) for each
// GEMM of the step, in gemm.cu's forms: median us per algorithm.
// Build: nvcc -O2 -arch=sm_90a probe_epilogues.cu -lcublasLt -o probe
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "probe.cuh"

struct Config {
  const char *name;
  cudaDataType_t a, b;
};

int main() {
  const int64_t M = 16384, N = 8192, K = 4096;
  cublasLtHandle_t lt;
  CK(cublasLtCreate(&lt));
  void *A, *B, *D, *aux, *bias, *ws;
  float *amax, *one;
  size_t wsBytes = 32 << 20;
  CK(cudaMalloc(&A, M * K * 2));
  CK(cudaMalloc(&B, N * K * 2));
  CK(cudaMalloc(&D, M * N * 2));
  CK(cudaMalloc(&aux, M * N * 2));
  CK(cudaMalloc(&bias, M * 4));
  CK(cudaMalloc(&amax, 4));
  CK(cudaMalloc(&one, 4));
  CK(cudaMalloc(&ws, wsBytes));
  CK(cudaMemset(A, 0x11, M * K * 2));
  CK(cudaMemset(B, 0x11, N * K * 2));
  CK(cudaMemset(aux, 0x11, M * N * 2));
  CK(cudaMemset(bias, 0, M * 4));
  float h1 = 1.0f;
  CK(cudaMemcpy(one, &h1, 4, cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);

  Config configs[] = {{"bf16", CUDA_R_16BF, CUDA_R_16BF},
                      {"fp8 e4m3 x e4m3", CUDA_R_8F_E4M3, CUDA_R_8F_E4M3},
                      {"fp8 e4m3 x e5m2", CUDA_R_8F_E4M3, CUDA_R_8F_E5M2}};
  struct Epi {
    const char *name;
    cublasLtEpilogue_t e;
  } epis[] = {{"DEFAULT", CUBLASLT_EPILOGUE_DEFAULT},
              {"BIAS", CUBLASLT_EPILOGUE_BIAS},
              {"GELU_BIAS", CUBLASLT_EPILOGUE_GELU_BIAS},
              {"GELU_AUX_BIAS", CUBLASLT_EPILOGUE_GELU_AUX_BIAS},
              {"GELU_AUX", CUBLASLT_EPILOGUE_GELU_AUX},
              {"DGELU", CUBLASLT_EPILOGUE_DGELU},
              {"DGELU_BGRAD", CUBLASLT_EPILOGUE_DGELU_BGRAD}};
  for (const Config &c : configs) {
    bool fp8 = c.a != CUDA_R_16BF;
    for (const Epi &epi : epis) {
      for (int withAmax = 0; withAmax < 2; ++withAmax) {
        cublasLtMatmulDesc_t op;
        CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                       sizeof(ta));
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                       sizeof(tb));
        if (fp8) {
          cublasLtMatmulDescSetAttribute(
              op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &one, sizeof(one));
          cublasLtMatmulDescSetAttribute(
              op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &one, sizeof(one));
        }
        cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                       &epi.e, sizeof(epi.e));
        cudaDataType_t bf = CUDA_R_16BF;
        if (epi.e != CUBLASLT_EPILOGUE_DEFAULT &&
            epi.e != CUBLASLT_EPILOGUE_GELU_AUX &&
            epi.e != CUBLASLT_EPILOGUE_DGELU) {
          cublasLtMatmulDescSetAttribute(
              op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
          cudaDataType_t bt =
              epi.e == CUBLASLT_EPILOGUE_DGELU_BGRAD ? CUDA_R_16BF : CUDA_R_16BF;
          cublasLtMatmulDescSetAttribute(
              op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt));
        }
        if (epi.e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS ||
            epi.e == CUBLASLT_EPILOGUE_GELU_AUX ||
            epi.e == CUBLASLT_EPILOGUE_DGELU ||
            epi.e == CUBLASLT_EPILOGUE_DGELU_BGRAD) {
          cublasLtMatmulDescSetAttribute(
              op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux));
          int64_t ld = M;
          cublasLtMatmulDescSetAttribute(
              op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof(ld));
          cublasLtMatmulDescSetAttribute(
              op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &bf, sizeof(bf));
        }
        if (withAmax)
          cublasLtMatmulDescSetAttribute(
              op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &amax, sizeof(amax));
        cublasLtMatrixLayout_t la, lb, ld;
        CK(cublasLtMatrixLayoutCreate(&la, c.a, K, M, K));
        CK(cublasLtMatrixLayoutCreate(&lb, c.b, K, N, K));
        CK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, M, N, M));
        cublasLtMatmulPreference_t pref;
        CK(cublasLtMatmulPreferenceCreate(&pref));
        cublasLtMatmulPreferenceSetAttribute(
            pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes,
            sizeof(wsBytes));
        cublasLtMatmulHeuristicResult_t heur[8] = {};
        int found = 0;
        cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
            lt, op, la, lb, ld, ld, pref, 8, heur, &found);
        double med = -1;
        int runStatus = -1;
        if (st == CUBLAS_STATUS_SUCCESS && found > 0) {
          float alpha = 1, beta = 0;
          std::vector<float> t;
          for (int i = 0; i < 23; ++i) {
            cudaEventRecord(e0, stream);
            runStatus = cublasLtMatmul(lt, op, &alpha, A, la, B, lb, &beta, D,
                                       ld, D, ld, &heur[0].algo, ws, wsBytes,
                                       stream);
            cudaEventRecord(e1, stream);
            cudaEventSynchronize(e1);
            float ms = 0;
            cudaEventElapsedTime(&ms, e0, e1);
            if (i >= 3)
              t.push_back(ms);
          }
          std::sort(t.begin(), t.end());
          med = t[t.size() / 2] * 1000;
        }
        std::printf("%-16s %-14s amax=%d  heuristic=%d found=%d run=%d  "
                    "median %.1f us\n",
                    c.name, epi.name, withAmax, int(st), found, runStatus, med);
        cublasLtMatmulPreferenceDestroy(pref);
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(ld);
        cublasLtMatmulDescDestroy(op);
      }
    }
  }
  CK(cudaDeviceSynchronize());
  std::printf("\n-- every heuristic algorithm for the LN-MLP step's GEMMs --\n");
  // (name, ta, tb, M, N, K, lda, ldb, ldd, fp8, epilogue) in gemm.cu's forms.
  struct Shape {
    const char *name;
    cublasOperation_t ta, tb;
    int64_t M, N, K, lda, ldb, ldd;
    bool fp8;
    cublasLtEpilogue_t epi;
  };
  const int64_t T = 8192, H = 4096, F = 16384;
  const cublasOperation_t OT = CUBLAS_OP_T, ON = CUBLAS_OP_N;
  Shape shapes[] = {
      {"bf16 fc1 fprop BIAS", OT, ON, F, T, H, H, H, F, false, CUBLASLT_EPILOGUE_BIAS},
      {"bf16 fc1 fprop GELU_AUX_BIAS", OT, ON, F, T, H, H, H, F, false, CUBLASLT_EPILOGUE_GELU_AUX_BIAS},
      {"bf16 fc2 fprop BIAS", OT, ON, H, T, F, F, F, H, false, CUBLASLT_EPILOGUE_BIAS},
      {"bf16 fc2 fprop DEFAULT", OT, ON, H, T, F, F, F, H, false, CUBLASLT_EPILOGUE_DEFAULT},
      {"bf16 fc2 dgrad", ON, ON, F, T, H, F, H, F, false, CUBLASLT_EPILOGUE_DEFAULT},
      {"bf16 fc1 dgrad", ON, ON, H, T, F, H, F, H, false, CUBLASLT_EPILOGUE_DEFAULT},
      {"bf16 fc2 wgrad BGRADB", ON, OT, F, H, T, F, H, F, false, CUBLASLT_EPILOGUE_BGRADB},
      {"bf16 fc2 wgrad DEFAULT", ON, OT, F, H, T, F, H, F, false, CUBLASLT_EPILOGUE_DEFAULT},
      {"bf16 fc1 wgrad BGRADB", ON, OT, H, F, T, H, F, H, false, CUBLASLT_EPILOGUE_BGRADB},
      {"fp8 fc1 fprop BIAS", OT, ON, F, T, H, H, H, F, true, CUBLASLT_EPILOGUE_BIAS},
      {"fp8 fc2 fprop BIAS", OT, ON, H, T, F, F, F, H, true, CUBLASLT_EPILOGUE_BIAS},
      {"fp8 fc2 dgrad", OT, ON, F, T, H, H, H, F, true, CUBLASLT_EPILOGUE_DEFAULT},
      {"fp8 fc1 dgrad", OT, ON, H, T, F, F, F, H, true, CUBLASLT_EPILOGUE_DEFAULT},
      {"fp8 fc2 wgrad", OT, ON, H, F, T, T, T, H, true, CUBLASLT_EPILOGUE_DEFAULT},
      {"fp8 fc1 wgrad", OT, ON, F, H, T, T, T, F, true, CUBLASLT_EPILOGUE_DEFAULT},
  };
  void *big, *big2;
  CK(cudaMalloc(&big, size_t(F) * T * 2));
  CK(cudaMalloc(&big2, size_t(F) * T * 2));
  CK(cudaMemset(big, 0x11, size_t(F) * T * 2));
  CK(cudaMemset(big2, 0x11, size_t(F) * T * 2));
  for (const Shape &s : shapes) {
    cublasLtMatmulDesc_t op;
    CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &s.ta, sizeof(s.ta));
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &s.tb, sizeof(s.tb));
    cudaDataType_t bf = CUDA_R_16BF;
    if (s.fp8) {
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &one, sizeof(one));
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &one, sizeof(one));
    }
    if (s.epi != CUBLASLT_EPILOGUE_DEFAULT) {
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &s.epi, sizeof(s.epi));
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bf, sizeof(bf));
    }
    if (s.epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux));
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &s.ldd, sizeof(s.ldd));
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &bf, sizeof(bf));
    }
    cudaDataType_t at = s.fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    bool aN = s.ta == CUBLAS_OP_N, bN = s.tb == CUBLAS_OP_N;
    cublasLtMatrixLayout_t la, lb, ld;
    CK(cublasLtMatrixLayoutCreate(&la, at, aN ? s.M : s.K, aN ? s.K : s.M, s.lda));
    CK(cublasLtMatrixLayoutCreate(&lb, at, bN ? s.K : s.N, bN ? s.N : s.K, s.ldb));
    CK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, s.M, s.N, s.ldd));
    cublasLtMatmulPreference_t pref;
    CK(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes, sizeof(wsBytes));
    cublasLtMatmulHeuristicResult_t heur[16] = {};
    int found = 0;
    cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 16, heur, &found);
    std::printf("%-30s found %2d:", s.name, found);
    for (int h = 0; h < found; ++h) {
      float alpha = 1, beta = 0;
      std::vector<float> t;
      for (int i = 0; i < 13; ++i) {
        cudaEventRecord(e0, stream);
        cublasStatus_t rs = cublasLtMatmul(lt, op, &alpha, big, la, big2, lb, &beta, D, ld, D, ld,
                       &heur[h].algo, ws, wsBytes, stream);
        cudaEventRecord(e1, stream);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (rs != CUBLAS_STATUS_SUCCESS) { ms = -1; }
        if (i >= 3) t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      std::printf(" %.0f", t[t.size() / 2] * 1000);
    }
    std::printf("\n");
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(op);
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
