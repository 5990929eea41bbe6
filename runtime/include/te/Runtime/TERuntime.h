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

/* Activations (the te dialect's ActivationKind order). */
enum {
  TE_RT_ACT_GELU = 0,
  TE_RT_ACT_GEGLU = 1,
  TE_RT_ACT_GLU = 2,
  TE_RT_ACT_QGELU = 3,
  TE_RT_ACT_QGEGLU = 4,
  TE_RT_ACT_RELU = 5,
  TE_RT_ACT_REGLU = 6,
  TE_RT_ACT_SRELU = 7,
  TE_RT_ACT_SREGLU = 8,
  TE_RT_ACT_SILU = 9,
  TE_RT_ACT_SWIGLU = 10,
  TE_RT_ACT_CLAMPED_SWIGLU = 11,
  TE_RT_ACT_GELU_ERF = 12
};

/* FP8 element formats of quantized data (reference §4). */
enum { TE_RT_FP8_E4M3 = 0, TE_RT_FP8_E5M2 = 1 };

/* An execution context (backend, handles, workspace); opaque. */
typedef struct te_rt_context te_rt_context;

/* A captured CUDA graph of a context's work (te_rt_capture_*); opaque. */
typedef struct te_rt_graph te_rt_graph;

#define TE_RT_FUNC(ret, name, params) ret name params;
#include "te/Runtime/TERuntime.def"

#ifdef __cplusplus
}
#endif

#endif /* TE_RUNTIME_TERUNTIME_H */
