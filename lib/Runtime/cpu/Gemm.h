//===- Gemm.h - CPU reference GEMMs -----------------------------*- C++ -*-===//
//
// The three GEMMs of a linear layer with TransformerEngine's layouts
// (reference §0.1), fp32 accumulation, row-major buffers, rows split across
// threads:
//   TN (fprop): y[M,N]  = x[M,K] · W[N,K]^T (+ bias[N])
//   NN (dgrad): dx[M,K] = dy[M,N] · W[N,K]
//   NT (wgrad): dW[N,K] = dy[M,N]^T · x[M,K]      (+ dbias[N] = Σ_rows dy)
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_CPU_GEMM_H
#define TE_LIB_RUNTIME_CPU_GEMM_H

#include <cstdint>

namespace te::cpu {

void gemmTN(const float *x, const float *w, const float *bias, int64_t m,
            int64_t n, int64_t k, float *y);
void gemmNN(const float *dy, const float *w, int64_t m, int64_t n, int64_t k,
            float *dx);
/// `dbias` may be null.
void gemmNT(const float *dy, const float *x, int64_t m, int64_t n, int64_t k,
            float *dw, float *dbias);

/// Threads used by the CPU kernels (hardware concurrency, at least 1, asked
/// once per process; TE_RT_CPU_THREADS, read at each call, overrides).
int cpuThreads();

} // namespace te::cpu

#endif // TE_LIB_RUNTIME_CPU_GEMM_H
