//===- RuntimeInternal.h - Runtime-internal helpers -------------*- C++ -*-===//
//
// Shared between the host runtime's translation units; not part of the ABI.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_RUNTIMEINTERNAL_H
#define TE_LIB_RUNTIME_RUNTIMEINTERNAL_H

#include <string>

/// Records the message te_rt_last_error() returns on this thread.
void te_rt_internal_set_error(const std::string &message);

/// True when the CUDA backend is built in and a device is visible.
bool te_rt_internal_cuda_available();

/// Why the CUDA backend cannot run, for error messages.
const char *te_rt_internal_cuda_unavailable_reason();

#endif // TE_LIB_RUNTIME_RUNTIMEINTERNAL_H
