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
