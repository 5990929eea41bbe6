//===- Gemm.h - CPU reference GEMMs -----------------------------*- C++ -*-===//
//
// The three GEMMs of a linear layer with TransformerEngine's layouts
// (reference §0.1), fp32 accumulation, row-major buffers, rows split across
// threads:
//   TN (fprop): y[M,N]  = x[M,K] · W[N,K]^T (+ bias[N])
//   NN (dgrad): dx[M,K] = dy[M,N] · W[N,K]
//   NT (wgrad): dW[N,K] = dy[M,N]^T · x[M,K]      (+ dbias[N] = Σ_rows dy)
//
// Every sum is built in fp32 over a chunk of terms at a time (kDotChunk for
// the GEMMs' dot products, kSumChunk for column sums such as dbias), each
// partial added into an fp64 total, and the total rounded once to fp32.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_CPU_GEMM_H
#define TE_LIB_RUNTIME_CPU_GEMM_H

#include <cstdint>

namespace te::cpu {

/// The terms of a long sum kept in one fp32 partial before it is added into
/// its fp64 total. A sequential fp32 sum of K terms carries an error that
/// grows with K; PyTorch's CPU GEMMs accumulate a block of K at a time (a
/// few hundred) and its sums are cascaded, so on long sums they were more
/// accurate than a sequential fp32 reference. Chunked, the error grows with
/// the chunk: 64 products for a dot product (an fp64 add per 64
/// multiply-adds), 16 terms for a column sum (whose terms are plain values,
/// where PyTorch's cascade is closer). The order is fixed per output, so
/// results do not depend on the thread count.
constexpr int64_t kDotChunk = 64;
constexpr int64_t kSumChunk = 16;

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
