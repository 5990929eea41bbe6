//===- TERuntime.cpp - te-mlir runtime: ABI and backend dispatch -*- C++
//-*-===//
//
// Host side of the runtime: version, backend selection and error reporting.
// Never includes MLIR or LLVM; the CUDA backend lives in cuda/ and
// is compiled only with TE_ENABLE_CUDA.
//
//===----------------------------------------------------------------------===//

#include "te/Runtime/TERuntime.h"
#include "RuntimeInternal.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace {
thread_local std::string lastError;
} // namespace

void te_rt_internal_set_error(const std::string &message) {
  lastError = message;
}

extern "C" {

const char *te_rt_version(void) {
#ifdef TE_RT_HAVE_CUDA
  return "te-mlir 0.1.0 (cpu,cuda)";
#else
  return "te-mlir 0.1.0 (cpu)";
#endif
}

int32_t te_rt_backend_from_name(const char *name) {
  if (!name)
    return TE_RT_BACKEND_INVALID;
  if (!std::strcmp(name, "cpu"))
    return TE_RT_BACKEND_CPU;
  if (!std::strcmp(name, "cuda"))
    return TE_RT_BACKEND_CUDA;
  if (!std::strcmp(name, "auto"))
    return TE_RT_BACKEND_AUTO;
  return TE_RT_BACKEND_INVALID;
}

const char *te_rt_backend_name(int32_t backend) {
  switch (backend) {
  case TE_RT_BACKEND_CPU:
    return "cpu";
  case TE_RT_BACKEND_CUDA:
    return "cuda";
  case TE_RT_BACKEND_AUTO:
    return "auto";
  default:
    return nullptr;
  }
}

int32_t te_rt_backend_available(int32_t backend) {
  switch (backend) {
  case TE_RT_BACKEND_CPU:
  case TE_RT_BACKEND_AUTO:
    return 1;
  case TE_RT_BACKEND_CUDA:
    return te_rt_internal_cuda_available() ? 1 : 0;
  default:
    return 0;
  }
}

int32_t te_rt_select_backend(int32_t requested) {
  if (const char *env = std::getenv("TE_RT_BACKEND"); env && *env) {
    int32_t fromEnv = te_rt_backend_from_name(env);
    if (fromEnv == TE_RT_BACKEND_INVALID) {
      te_rt_internal_set_error(std::string("te_rt_select_backend: environment "
                                           "variable TE_RT_BACKEND='") +
                               env + "' is not one of cpu, cuda, auto");
      return TE_RT_BACKEND_INVALID;
    }
    requested = fromEnv;
  }
  switch (requested) {
  case TE_RT_BACKEND_CPU:
    return TE_RT_BACKEND_CPU;
  case TE_RT_BACKEND_AUTO:
    return te_rt_internal_cuda_available() ? TE_RT_BACKEND_CUDA
                                           : TE_RT_BACKEND_CPU;
  case TE_RT_BACKEND_CUDA:
    if (te_rt_internal_cuda_available())
      return TE_RT_BACKEND_CUDA;
    te_rt_internal_set_error(
        std::string("te_rt_select_backend: backend 'cuda' requested but ") +
        te_rt_internal_cuda_unavailable_reason());
    return TE_RT_BACKEND_INVALID;
  default:
    te_rt_internal_set_error("te_rt_select_backend: argument 'requested' = " +
                             std::to_string(requested) +
                             " is not a backend (0 cpu, 1 cuda, 2 auto)");
    return TE_RT_BACKEND_INVALID;
  }
}

const char *te_rt_last_error(void) { return lastError.c_str(); }

} // extern "C"

#ifndef TE_RT_HAVE_CUDA
bool te_rt_internal_cuda_available() { return false; }
const char *te_rt_internal_cuda_unavailable_reason() {
  return "this runtime was built without CUDA (TE_ENABLE_CUDA=OFF)";
}
extern "C" int32_t te_rt_cuda_selftest(void) {
  te_rt_internal_set_error(std::string("te_rt_cuda_selftest: ") +
                           te_rt_internal_cuda_unavailable_reason());
  return 1;
}

// Never reached: a CUDA context cannot be created without CUDA.
const char *te_rt_internal_cuda_stream_create(void **) {
  return te_rt_internal_cuda_unavailable_reason();
}
void te_rt_internal_cuda_stream_destroy(void *) {}
const char *te_rt_internal_cuda_alloc(int64_t, void **) {
  return te_rt_internal_cuda_unavailable_reason();
}
const char *te_rt_internal_cuda_free(void *) {
  return te_rt_internal_cuda_unavailable_reason();
}
const char *te_rt_internal_cuda_copy(void *, void *, const void *, int64_t,
                                     CudaCopy) {
  return te_rt_internal_cuda_unavailable_reason();
}
const char *te_rt_internal_cuda_zero(void *, void *, int64_t) {
  return te_rt_internal_cuda_unavailable_reason();
}
const char *te_rt_internal_cuda_synchronize(void *) {
  return te_rt_internal_cuda_unavailable_reason();
}
const char *te_rt_internal_cuda_stream_follow(void *, void *, void **) {
  return te_rt_internal_cuda_unavailable_reason();
}
void te_rt_internal_cuda_event_destroy(void *) {}
void te_rt_internal_cuda_state_destroy(void *) {}
const char *te_rt_internal_cuda_capture_begin(void *) {
  return te_rt_internal_cuda_unavailable_reason();
}
const char *te_rt_internal_cuda_capture_end(void *, void **graph) {
  *graph = nullptr;
  return te_rt_internal_cuda_unavailable_reason();
}
void te_rt_internal_cuda_graph_discard(void *) {}
const char *te_rt_internal_cuda_graph_instantiate(void *, void *,
                                                  void **exec) {
  *exec = nullptr;
  return te_rt_internal_cuda_unavailable_reason();
}
const char *te_rt_internal_cuda_graph_launch(void *, void *) {
  return te_rt_internal_cuda_unavailable_reason();
}
void te_rt_internal_cuda_graph_exec_destroy(void *) {}
bool te_rt_internal_cuda_stream_capturing(void *) { return false; }
#endif
