//===- CudaBackend.cpp - te-mlir runtime: CUDA backend ----------*- C++ -*-===//
//
// Host side of the CUDA backend: device discovery and the kernel self-test.
// Compiled only with TE_ENABLE_CUDA; the kernels live in runtime-kernels/.
//
//===----------------------------------------------------------------------===//

#include "RuntimeInternal.h"
#include "te/Runtime/TERuntime.h"
#include "te_kernels/te_kernels.h"

#include <string>

namespace {
std::string unavailableReason;

/// Queried once: device count (or the CUDA error that prevented it).
int deviceCount() {
  static int count = [] {
    int n = 0;
    const char *err = te_kernels_device_count(&n);
    if (err) {
      unavailableReason = std::string("no CUDA device is usable: ") + err;
      return 0;
    }
    if (n == 0)
      unavailableReason = "no CUDA device is visible";
    return n;
  }();
  return count;
}
} // namespace

bool te_rt_internal_cuda_available() { return deviceCount() > 0; }

const char *te_rt_internal_cuda_unavailable_reason() {
  deviceCount();
  return unavailableReason.c_str();
}

extern "C" int32_t te_rt_cuda_selftest(void) {
  if (!te_rt_internal_cuda_available()) {
    te_rt_internal_set_error(std::string("te_rt_cuda_selftest: ") +
                             unavailableReason);
    return 1;
  }
  if (const char *err = te_kernels_selftest()) {
    te_rt_internal_set_error(std::string("te_rt_cuda_selftest: ") + err);
    return 1;
  }
  return 0;
}
