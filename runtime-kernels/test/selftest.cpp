//===- selftest.cpp - Runs the CUDA kernel self-test ----------------------===//
//
// Prints the device and runs te_kernels_selftest. Exit 0 on success, 1 on a
// failure, 77 (skipped, printed as such) when no CUDA device is visible.
//
//===----------------------------------------------------------------------===//

#include "te_kernels/te_kernels.h"

#include <cstdio>

int main() {
  int count = 0;
  const char *err = te_kernels_device_count(&count);
  if (err || count == 0) {
    std::printf("te-kernels-selftest: SKIPPED (no CUDA device: %s)\n",
                err ? err : "none visible");
    return 77;
  }
  char name[256];
  int major = 0, minor = 0;
  if ((err = te_kernels_device_info(name, sizeof(name), &major, &minor))) {
    std::printf("te-kernels-selftest: FAILED device query: %s\n", err);
    return 1;
  }
  std::printf("te-kernels-selftest: device '%s' sm_%d%d, %d visible\n", name,
              major, minor, count);
  if ((err = te_kernels_selftest())) {
    std::printf("te-kernels-selftest: FAILED: %s\n", err);
    return 1;
  }
  std::printf("te-kernels-selftest: PASSED\n");
  return 0;
}
