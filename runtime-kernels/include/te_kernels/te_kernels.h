/*===- te_kernels.h - te-mlir CUDA kernels: host entry points -----*- C -*-===*\
|*                                                                          *|
|* Host-callable entry points of the CUDA kernel library. CUDA only, no     *|
|* MLIR or LLVM. Functions return NULL on success, or a static message.     *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef TE_KERNELS_TE_KERNELS_H
#define TE_KERNELS_TE_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Number of visible CUDA devices in *count (0 when there is no driver or
 * device; the message then says why). */
const char *te_kernels_device_count(int *count);

/* Name and compute capability of the current device. */
const char *te_kernels_device_info(char *name, int name_len, int *major,
                                   int *minor);

/* Launches a vectorized (16-byte) kernel on the current device, including a
 * ragged tail, and checks its result on the host; NULL when it matched. */
const char *te_kernels_selftest(void);

#ifdef __cplusplus
}
#endif

#endif /* TE_KERNELS_TE_KERNELS_H */
