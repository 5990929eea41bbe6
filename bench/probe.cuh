// probe.cuh - what the standalone GPU probes of bench/ (probe_*.cu, each
// built alone with nvcc) share.
#pragma once

#include <cstdio>

/// Returns 1 from the enclosing function (main, or a helper returning int)
/// with the file and line when a CUDA or cuBLAS(Lt) call returns nonzero.
#define CK(x)                                                                  \
  do {                                                                         \
    auto e = (x);                                                              \
    if (e != 0) {                                                              \
      std::printf("error %d at %s:%d\n", int(e), __FILE__, __LINE__);          \
      return 1;                                                                \
    }                                                                          \
  } while (0)

#include <cuda_runtime.h>

/// kernel<<<grid, block, 0, st>>>(args...), queued as a programmatic
/// dependent launch (cudaLaunchAttributeProgrammaticStreamSerialization)
/// when pdl: the kernel may start while its predecessor on the stream ends
/// and must wait for it itself (griddepcontrol.wait).
template <typename... P, typename... A>
cudaError_t launchMaybePdl(cudaStream_t st, dim3 grid, dim3 block, bool pdl,
                           void (*kernel)(P...), A... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.stream = st;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}
