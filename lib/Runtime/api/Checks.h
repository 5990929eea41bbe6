//===- Checks.h - te-mlir runtime: checks shared by the calls ---*- C++ -*-===//
//
// The argument checks that several te_rt_* compute calls (api/*.cpp) share,
// beyond the Checker's own (Context.h). Each returns true when the
// arguments are fine; otherwise it records the message as the call's last
// error and returns false.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_API_CHECKS_H
#define TE_LIB_RUNTIME_API_CHECKS_H

#include "Context.h"

#include <cstdint>
#include <string>

namespace te::rt::api {

/// %g of a number, for messages.
std::string str(double v);

/// The name of activation `act` (TEActivations.def), which must be valid.
const char *activationName(int32_t act);

/// TE_RT_NORM_LAYERNORM or TE_RT_NORM_RMSNORM.
bool normKind(const Checker &c, int32_t kind);

/// Checks act, and for gated activations an even `cols`.
bool activation(const Checker &c, int32_t act, int64_t cols, float limit);

/// Checks of the sizes shared by the GEMMs; writes the element counts of
/// the [m,n], [m,k] and [n,k] operands.
bool gemmSizes(const Checker &c, int64_t m, int64_t n, int64_t k, int64_t *mn,
               int64_t *mk, int64_t *nk);

/// A TE_RT_FP8_*; `name` is the argument's.
bool fp8Format(const Checker &c, int32_t format, const char *name);

/// The copies a block-scaled quantization writes: each is given as both its
/// data and its scales or neither, and at least one is requested.
bool blockCopies(const Checker &c, const void *data, const void *scale_inv,
                 const void *columnwise_data, const void *columnwise_scale_inv);

/// The activation of a GEMM epilogue: GELU (tanh approximation) only, as
/// cuBLASLt's GELU_AUX_BIAS / DGELU compute it.
bool epilogueActivation(const Checker &c, int32_t act);

/// The outputs and scaling mode of a per-tensor FP8 cast: at least one of
/// data and transpose, and pow2_scale only under current scaling (no scale).
bool fp8CastOutputs(const Checker &c, const float *scale, int32_t pow2_scale,
                    const void *data, const void *transpose);

/// The checks of the fused activation-casts beyond the activation's own.
bool fusedCastArgs(const Checker &c, int32_t format, const float *scale,
                   const void *data, const void *transpose,
                   const float *scale_inv);

/// A dimension of a block-scaled recipe's tensor: a whole number of blocks
/// of `block` elements (32 for MXFP8, 16 for NVFP4).
bool wholeBlocks(const Checker &c, const char *name, int64_t v, int block,
                 const char *recipe);

/// The copies te_rt_quantize_nvfp4 writes: each is given as its data, its
/// scales and its amax, or none of them; at least one is requested.
bool nvfp4Copies(const Checker &c, const void *data, const void *scale_inv,
                 const void *amax, const void *columnwise_data,
                 const void *columnwise_scale_inv, const void *columnwise_amax);

/// The context, dtype and sizes of an NVFP4 quantization's input x [rows,
/// cols]: rows >= 0 (zero-token steps), cols > 0, both whole 16-element
/// blocks, rows * cols elements of 4 bytes addressable.
bool nvfp4Input(const Checker &c, te_rt_context *ctx, int32_t dtype,
                int64_t rows, int64_t cols);

} // namespace te::rt::api

#endif // TE_LIB_RUNTIME_API_CHECKS_H
