/*===- TERuntime.h - te-mlir runtime C ABI ------------------------*- C -*-===*\
|*                                                                          *|
|* The runtime library's C interface. Plain C, <stdint.h> only: no MLIR or  *|
|* LLVM header. Every symbol is listed once in TERuntime.def.               *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef TE_RUNTIME_TERUNTIME_H
#define TE_RUNTIME_TERUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Backends of te_rt_select_backend and friends. */
enum {
  TE_RT_BACKEND_INVALID = -1,
  TE_RT_BACKEND_CPU = 0,
  TE_RT_BACKEND_CUDA = 1,
  TE_RT_BACKEND_AUTO = 2
};

/* Element types of activation-dtype buffers. */
enum {
  TE_RT_DTYPE_F32 = 0,
  TE_RT_DTYPE_BF16 = 1,
  TE_RT_DTYPE_F16 = 2
};

/* Normalizations (the te dialect's NormalizationKind order). */
enum { TE_RT_NORM_LAYERNORM = 0, TE_RT_NORM_RMSNORM = 1 };

/* Activations, TE_RT_ACT_<C> = code, and their pointwise functions,
 * TE_RT_ACT_FN_<fn>, as listed in TEActivations.def (the te dialect's
 * ActivationKind is expanded from the same table). */
enum {
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams) TE_RT_ACT_##C = code,
#include "te/Runtime/TEActivations.def"
  TE_RT_ACT_COUNT
};
enum {
#define TE_ACTIVATION_FN(fn, code) TE_RT_ACT_FN_##fn = code,
#include "te/Runtime/TEActivations.def"
  TE_RT_ACT_FN_COUNT
};

/* 1 when activation `act` is gated (its input [.., 2F] is [a | b]). */
static inline int te_rt_act_is_gated(int32_t act) {
  switch (act) {
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams)                  \
  case code:                                                                   \
    return gated;
#include "te/Runtime/TEActivations.def"
  }
  return 0;
}
/* The pointwise function (TE_RT_ACT_FN_*) of activation `act`, -1 if none. */
static inline int te_rt_act_fn(int32_t act) {
  switch (act) {
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams)                  \
  case code:                                                                   \
    return TE_RT_ACT_FN_##fn;
#include "te/Runtime/TEActivations.def"
  }
  return -1;
}

/* FP8 element formats of quantized data (reference §4). */
enum { TE_RT_FP8_E4M3 = 0, TE_RT_FP8_E5M2 = 1 };

/* The ranges one launch of te_rt_zero_ranges' kernel zeroes on cuda. */
enum { TE_RT_ZERO_RANGES_PER_LAUNCH = 128 };

/* An execution context (backend, handles, workspace); opaque. */
typedef struct te_rt_context te_rt_context;

/* A captured CUDA graph of a context's work (te_rt_capture_*); opaque. */
typedef struct te_rt_graph te_rt_graph;

typedef struct te_rt_comm te_rt_comm;

enum { TE_RT_COMM_NCCL = 0, TE_RT_COMM_MPI = 1 };
enum { TE_RT_GROUP_TP = 0, TE_RT_GROUP_COUNT = 1 };
enum { TE_RT_REDUCE_SUM = 0, TE_RT_REDUCE_MAX = 1 };

/* TE_RT_API: the visibility every function of the ABI (TERuntime.def,
 * TEModule.h) is declared with. libte_runtime.so is built with hidden
 * visibility and a version script (lib/Runtime/te_runtime.map) so that it
 * exports these and nothing else; the explicit default visibility keeps them
 * exported (the definitions take it from these declarations). */
#if defined(__GNUC__) || defined(__clang__)
#define TE_RT_API __attribute__((visibility("default")))
#else
#define TE_RT_API
#endif

#define TE_RT_FUNC(ret, name, params) TE_RT_API ret name params;
#include "te/Runtime/TERuntime.def"

#ifdef __cplusplus
}
#endif

#endif /* TE_RUNTIME_TERUNTIME_H */
