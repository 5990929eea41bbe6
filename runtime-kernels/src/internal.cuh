//===- internal.cuh - Shared internals of the compute kernels ---*- CUDA
//-*-===//
//
// The per-context state behind te_kernels_state, element loads/stores with
// one round-to-nearest-even, and the helpers shared by ops.cu and gemm.cu.
//
//===----------------------------------------------------------------------===//

#ifndef TE_KERNELS_SRC_INTERNAL_CUH
#define TE_KERNELS_SRC_INTERNAL_CUH

#include "te_kernels/ops.h"

#include <cublasLt.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

struct te_kernels_state {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr; // created by the first GEMM
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  float *scratch = nullptr; // grow-only, stream-ordered
  int64_t scratchElems = 0;
  /// Scratch buffers replaced by a larger one. A CUDA graph captured before
  /// the growth still reads the old buffer on every replay, so a retired
  /// buffer is freed only with the state (after te_kernels_state_destroy
  /// has waited for the stream, which still exists then).
  std::vector<float *> retiredScratch;

  ~te_kernels_state() {
    for (float *p : retiredScratch)
      cudaFreeAsync(p, stream);
    if (!retiredScratch.empty())
      cudaStreamSynchronize(stream);
  }
};

namespace te::kernels {

/// Null on success, else CUDA's (static) message.
inline const char *status(cudaError_t err) {
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

/// The launch error of the kernel just queued, if any.
inline const char *launched() { return status(cudaGetLastError()); }

/// A device fp32 buffer of at least `elems` elements, valid on s->stream
/// until the next call. Growing it while s->stream is capturing a CUDA
/// graph fails (run the captured work once before capturing).
const char *scratch(te_kernels_state *s, int64_t elems, float **out);

/// dbias[cols] = column sums of dy (the bias-gradient kernel), for the
/// wgrad GEMM when cuBLASLt has no BGRADB epilogue for the case.
const char *biasGrad(te_kernels_state *s, int dtype, const void *dy,
                     void *dbias, int64_t rows, int64_t cols);

/// y[rows, cols] = bias broadcast over rows (or zero when bias is null):
/// fprop with k = 0.
const char *broadcastRows(te_kernels_state *s, int dtype, const void *bias,
                          void *y, int64_t rows, int64_t cols);

} // namespace te::kernels

#endif // TE_KERNELS_SRC_INTERNAL_CUH
