// probe_small_epilogues.cu - at few tokens, does cuBLASLt's GELU epilogue with
// an FP8 output (scale and amax of D) take a node off an FP8 MLP step?
//
// At the seeds' shape (tokens x hidden x ffn, default 16 x 256 x 1024) every
// kernel of a step's CUDA graph is a 2-4 us node, so what counts is the time
// of a chain in a graph, not of one kernel. For FC1's forward GEMM and FC2's
// dgrad GEMM (TN, column-major D[ffn, tokens], as gemm_fp8.cu forms them)
// this times, per link of a graph of 20 dependent links (median of 9
// replays):
//   - "gemm"        the GEMM with a bf16 D (BIAS for FC1, DEFAULT for FC2);
//   - "gemm+cast"   that GEMM, then a small kernel that reads D and writes
//                   FP8 (the activation's or its derivative's cast);
//   - "fused"       one GEMM with GELU_AUX_BIAS (FC1: E4M3 D, bf16 aux) or
//                   DGELU (FC2: E5M2 D, bf16 aux in), D scale and amax of D;
//   - "fused-noamax" the same without the amax.
// A line says whether the heuristic found an algorithm and whether it ran.
// Build: nvcc -O2 -arch=sm_90a probe_small_epilogues.cu -lcublasLt -o probe
//   usage: probe [tokens hidden ffn]
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe.cuh"

// The cast a step would run after a bf16 GEMM: scale, saturate, E4M3.
__global__ void castKernel(const __nv_bfloat16 *in, __nv_fp8_e4m3 *out,
                           int64_t n, const float *scale) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = __nv_fp8_e4m3(__bfloat162float(in[i]) * *scale);
}

struct Gemm {
  const char *name;
  int64_t M, N, K;
  cudaDataType_t a, b, fusedD;
  cublasLtEpilogue_t plain, fused;
};

static cublasLtHandle_t lt;
static void *ws;
static size_t wsBytes = 32 << 20;

// A matmul descriptor and its layouts; found = algorithms the heuristic gave.
struct Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulHeuristicResult_t heur = {};
  int found = 0;
  int status = -1;
};

static int makePlan(Plan &p, const Gemm &g, cudaDataType_t dType,
                    cublasLtEpilogue_t epi, bool amax, void *bias, void *aux,
                    float *one, float *amaxPtr) {
  CK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                 sizeof(ta));
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                 sizeof(tb));
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                 &one, sizeof(one));
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                 &one, sizeof(one));
  if (dType != CUDA_R_16BF)
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
                                   &one, sizeof(one));
  if (amax)
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER,
                                   &amaxPtr, sizeof(amaxPtr));
  cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                 sizeof(epi));
  cudaDataType_t bf = CUDA_R_16BF;
  if (epi == CUBLASLT_EPILOGUE_BIAS || epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                   &bias, sizeof(bias));
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                   &bf, sizeof(bf));
  }
  if (epi == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || epi == CUBLASLT_EPILOGUE_DGELU) {
    int64_t ldAux = g.M;
    cublasLtMatmulDescSetAttribute(
        p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux));
    cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                   &ldAux, sizeof(ldAux));
    cublasLtMatmulDescSetAttribute(
        p.op, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &bf, sizeof(bf));
  }
  CK(cublasLtMatrixLayoutCreate(&p.la, g.a, g.K, g.M, g.K));
  CK(cublasLtMatrixLayoutCreate(&p.lb, g.b, g.K, g.N, g.K));
  CK(cublasLtMatrixLayoutCreate(&p.ld, dType, g.M, g.N, g.M));
  cublasLtMatmulPreference_t pref;
  CK(cublasLtMatmulPreferenceCreate(&pref));
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes,
      sizeof(wsBytes));
  p.status = cublasLtMatmulAlgoGetHeuristic(lt, p.op, p.la, p.lb, p.ld, p.ld,
                                            pref, 1, &p.heur, &p.found);
  cublasLtMatmulPreferenceDestroy(pref);
  return 0;
}

// Median us per link of a graph of `links` launches of `link`.
template <typename F>
static double timeChain(cudaStream_t s, int links, F link) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  for (int i = 0; i < links; ++i)
    link();
  if (cudaStreamEndCapture(s, &graph) != cudaSuccess)
    return -1;
  if (cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess)
    return -1;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<float> t;
  for (int r = 0; r < 12; ++r) {
    cudaEventRecord(e0, s);
    cudaGraphLaunch(exec, s);
    cudaEventRecord(e1, s);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r >= 3)
      t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return t[t.size() / 2] * 1000.0 / links;
}

int main(int argc, char **argv) {
  int64_t T = argc > 1 ? std::atoll(argv[1]) : 16;
  int64_t H = argc > 2 ? std::atoll(argv[2]) : 256;
  int64_t F = argc > 3 ? std::atoll(argv[3]) : 1024;
  CK(cublasLtCreate(&lt));
  void *A, *B, *D, *D8, *aux, *bias;
  float *one, *amax;
  size_t big = size_t(std::max(H, F)) * std::max(T, std::max(H, F)) * 2;
  CK(cudaMalloc(&A, big));
  CK(cudaMalloc(&B, big));
  CK(cudaMalloc(&D, big));
  CK(cudaMalloc(&D8, big));
  CK(cudaMalloc(&aux, big));
  CK(cudaMalloc(&bias, F * 2));
  CK(cudaMalloc(&ws, wsBytes));
  CK(cudaMalloc(&one, 4));
  CK(cudaMalloc(&amax, 4));
  CK(cudaMemset(A, 0x11, big));
  CK(cudaMemset(B, 0x11, big));
  CK(cudaMemset(aux, 0x11, big));
  CK(cudaMemset(bias, 0, F * 2));
  float h1 = 1.0f;
  CK(cudaMemcpy(one, &h1, 4, cudaMemcpyHostToDevice));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  Gemm gemms[] = {
      {"fc1 fprop", F, T, H, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3,
       CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_GELU_AUX_BIAS},
      {"fc2 dgrad", F, T, H, CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUDA_R_8F_E5M2,
       CUBLASLT_EPILOGUE_DEFAULT, CUBLASLT_EPILOGUE_DGELU},
  };
  std::printf("tokens %lld hidden %lld ffn %lld: us per link of a 20-link "
              "graph\n",
              (long long)T, (long long)H, (long long)F);
  for (const Gemm &g : gemms) {
    Plan plain, fused, fusedNoAmax;
    if (makePlan(plain, g, CUDA_R_16BF, g.plain, false, bias, aux, one,
                 amax) ||
        makePlan(fused, g, g.fusedD, g.fused, true, bias, aux, one, amax) ||
        makePlan(fusedNoAmax, g, g.fusedD, g.fused, false, bias, aux, one,
                 amax))
      return 1;
    float alpha = 1, beta = 0;
    auto run = [&](Plan &plan, void *d) {
      Plan *p = &plan;
      return [&, p, d] {
        cublasLtMatmul(lt, p->op, &alpha, A, p->la, B, p->lb, &beta, d, p->ld,
                       d, p->ld, &p->heur.algo, ws, wsBytes, s);
      };
    };
    int64_t n = g.M * g.N;
    auto gemm = run(plain, D);
    auto cast = [&] {
      castKernel<<<unsigned((n + 255) / 256), 256, 0, s>>>(
          static_cast<__nv_bfloat16 *>(D), static_cast<__nv_fp8_e4m3 *>(D8),
          n, one);
    };
    auto report = [&](const char *what, Plan &p, double us) {
      std::printf("%-10s %-13s heuristic=%d found=%d  %.2f us\n", g.name, what,
                  p.status, p.found, us);
    };
    report("gemm", plain, plain.found ? timeChain(s, 20, gemm) : -1);
    report("gemm+cast", plain, plain.found ? timeChain(s, 20, [&] {
      gemm();
      cast();
    })
                                           : -1);
    report("fused", fused,
           fused.found ? timeChain(s, 20, run(fused, D8)) : -1);
    report("fused-noamax", fusedNoAmax,
           fusedNoAmax.found ? timeChain(s, 20, run(fusedNoAmax, D8)) : -1);
    std::printf("%-10s last error: %s\n", g.name,
                cudaGetErrorString(cudaGetLastError()));
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
