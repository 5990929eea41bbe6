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

#define TE_RT_FUNC(ret, name, params) ret name params;
#include "te/Runtime/TERuntime.def"

#ifdef __cplusplus
}
#endif

#endif /* TE_RUNTIME_TERUNTIME_H */
