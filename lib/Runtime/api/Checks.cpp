//===- Checks.cpp - te-mlir runtime: checks shared by the calls -*- C++ -*-===//
//
// The argument checks several compute calls share (Checks.h), and the two
// checks the ABI exports for te-compile'd entries: te_rt_check_multiple and
// te_rt_check_range.
//
//===----------------------------------------------------------------------===//

#include "api/Checks.h"
#include "cpu/Reference.h"

#include <cstdio>
#include <string>

namespace {

const char *const kActivationNames[] = {
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams) #name,
#include "te/Runtime/TEActivations.def"
};
static_assert(sizeof(kActivationNames) / sizeof(kActivationNames[0]) ==
                  TE_RT_ACT_COUNT,
              "one name per TEActivations.def activation");

} // namespace

namespace te::rt::api {

const char *activationName(int32_t act) { return kActivationNames[act]; }

/// %g of a number, for messages.
std::string str(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

bool normKind(const Checker &c, int32_t kind) {
  if (kind == TE_RT_NORM_LAYERNORM || kind == TE_RT_NORM_RMSNORM)
    return true;
  return c.fail("unknown norm kind " + std::to_string(kind) +
                " (0 layernorm, 1 rmsnorm)");
}

/// Checks act, and for gated activations an even `cols`.
bool activation(const Checker &c, int32_t act, int64_t cols, float limit) {
  if (act < 0 || act >= TE_RT_ACT_COUNT)
    return c.fail("unknown activation " + std::to_string(act));
  auto kind = static_cast<te::cpu::Activation>(act);
  if (te::cpu::isGated(kind) && cols % 2 != 0)
    return c.fail(std::string("gated activation ") + activationName(act) +
                  " needs an even number of columns, got " +
                  std::to_string(cols));
  if (act == TE_RT_ACT_CLAMPED_SWIGLU && !(limit >= 0.0f))
    return c.fail("limit must be >= 0 for clamped_swiglu, got " + str(limit));
  return true;
}

/// Checks of the sizes shared by the three GEMMs; writes the element counts
/// of the [m,n], [m,k] and [n,k] operands.
bool gemmSizes(const Checker &c, int64_t m, int64_t n, int64_t k, int64_t *mn,
               int64_t *mk, int64_t *nk) {
  return c.nonNegative("m", m) && c.nonNegative("n", n) &&
         c.nonNegative("k", k) && c.product("m * n", m, n, 4, mn) &&
         c.product("m * k", m, k, 4, mk) && c.product("n * k", n, k, 4, nk);
}

bool fp8Format(const Checker &c, int32_t format, const char *name) {
  if (format == TE_RT_FP8_E4M3 || format == TE_RT_FP8_E5M2)
    return true;
  return c.fail("unknown " + std::string(name) + " " + std::to_string(format) +
                " (0 E4M3, 1 E5M2)");
}

/// The copies a block-scaled quantization writes: each is given as both its
/// data and its scales or neither, and at least one is requested.
bool blockCopies(const Checker &c, const void *data, const void *scale_inv,
                 const void *columnwise_data,
                 const void *columnwise_scale_inv) {
  if (bool(data) != bool(scale_inv))
    return c.fail("data and scale_inv must both be given or both be NULL");
  if (bool(columnwise_data) != bool(columnwise_scale_inv))
    return c.fail("columnwise_data and columnwise_scale_inv must both be "
                  "given or both be NULL");
  if (!data && !columnwise_data)
    return c.fail("no copy requested (data and columnwise_data are NULL)");
  return true;
}

/// The activation of a GEMM epilogue: GELU (tanh approximation) only, as
/// cuBLASLt's GELU_AUX_BIAS / DGELU compute it.
bool epilogueActivation(const Checker &c, int32_t act) {
  if (act == TE_RT_ACT_GELU)
    return true;
  std::string name = act >= 0 && act < TE_RT_ACT_COUNT
                         ? std::string(" (") + activationName(act) + ")"
                         : std::string();
  return c.fail("act must be TE_RT_ACT_GELU (0), the GEMM epilogue's only "
                "activation, got " +
                std::to_string(act) + name);
}

bool fp8CastOutputs(const Checker &c, const float *scale, int32_t pow2_scale,
                    const void *data, const void *transpose) {
  if (!data && !transpose)
    return c.fail("data and transpose are both NULL (nothing to write)");
  if (scale && pow2_scale)
    return c.fail("pow2_scale applies to current scaling only (scale must "
                  "be NULL)");
  return true;
}

/// The checks of the fused activation-casts beyond the activation's own.
bool fusedCastArgs(const Checker &c, int32_t format, const float *scale,
                   const void *data, const void *transpose,
                   const float *scale_inv) {
  if (!fp8Format(c, format, "format") || !c.notNull("scale_inv", scale_inv))
    return false;
  if (!scale)
    return c.fail("scale is NULL (the fused activation-cast is delayed "
                  "scaling's: the scale is known before the activation runs)");
  if (!data && !transpose)
    return c.fail("data and transpose are both NULL (nothing to write)");
  return true;
}

/// A dimension of a block-scaled recipe's tensor: a whole number of blocks
/// of `block` elements (32 for MXFP8, 16 for NVFP4).
bool wholeBlocks(const Checker &c, const char *name, int64_t v, int block,
                 const char *recipe) {
  return v % block == 0 ? true
                        : c.fail(std::string(name) + " must be a multiple of " +
                                 std::to_string(block) + " (" + recipe +
                                 " blocks), got " + std::to_string(v));
}

bool nvfp4Input(const Checker &c, te_rt_context *ctx, int32_t dtype,
                int64_t rows, int64_t cols) {
  int64_t n = 0;
  return c.context(ctx) && c.dtype(dtype) && c.nonNegative("rows", rows) &&
         c.positive("cols", cols) &&
         wholeBlocks(c, "rows", rows, 16, "NVFP4") &&
         wholeBlocks(c, "cols", cols, 16, "NVFP4") &&
         c.product("rows * cols", rows, cols, 4, &n);
}

/// The copies te_rt_quantize_nvfp4 writes: each is given as its data, its
/// scales and its amax, or none of them; at least one is requested.
bool nvfp4Copies(const Checker &c, const void *data, const void *scale_inv,
                 const void *amax, const void *columnwise_data,
                 const void *columnwise_scale_inv,
                 const void *columnwise_amax) {
  if (!(bool(data) == bool(scale_inv) && bool(data) == bool(amax)))
    return c.fail("data, scale_inv and amax must all be given or all be "
                  "NULL");
  if (!(bool(columnwise_data) == bool(columnwise_scale_inv) &&
        bool(columnwise_data) == bool(columnwise_amax)))
    return c.fail("columnwise_data, columnwise_scale_inv and columnwise_amax "
                  "must all be given or all be NULL");
  if (!data && !columnwise_data)
    return c.fail("no copy requested (data and columnwise_data are NULL)");
  return true;
}

} // namespace te::rt::api

using te::rt::Checker;

extern "C" {

//===----------------------------------------------------------------------===//
// Checks of te-compile'd entries
//===----------------------------------------------------------------------===//

int32_t te_rt_check_multiple(te_rt_context *ctx, int64_t value,
                             int64_t multiple, const char *what) {
  Checker c("te_rt_check_multiple");
  if (!c.context(ctx) || !c.positive("multiple", multiple) ||
      !c.notNull("what", what))
    return 1;
  if (value % multiple == 0)
    return 0;
  // The message is the entry's own ("<entry>: recipe ... needs ..."), not
  // prefixed with this call's name.
  te_rt_internal_set_error(std::string(what) + ", got " +
                           std::to_string(value));
  return 1;
}

int32_t te_rt_check_range(te_rt_context *ctx, int64_t value, int64_t lo,
                          int64_t hi, const char *what) {
  Checker c("te_rt_check_range");
  if (!c.context(ctx) || !c.notNull("what", what))
    return 1;
  if (lo <= value && value <= hi)
    return 0;
  te_rt_internal_set_error(std::string(what) + " must be in [" +
                           std::to_string(lo) + ", " + std::to_string(hi) +
                           "], got " + std::to_string(value));
  return 1;
}

} // extern "C"
