//===- RuntimeABI.cpp - The te_rt_* ABI as the lowering sees it --*- C++ -*-===//
//
// The runtime's codes (dtypes, FP8 formats, norms, activations) and the
// LLVM types of its functions, from TERuntime.def.
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"
#include "te/Runtime/TERuntime.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::runtime_lowering {

/// te_rt dtype codes (TERuntime.h).
std::optional<int32_t> dtypeCode(Type element) {
  if (element.isF32())
    return TE_RT_DTYPE_F32;
  if (element.isBF16())
    return TE_RT_DTYPE_BF16;
  if (element.isF16())
    return TE_RT_DTYPE_F16;
  return std::nullopt;
}

/// TE_RT_FP8_* codes.
int32_t fp8Code(QuantFormat f) {
  return f == QuantFormat::E4M3 ? TE_RT_FP8_E4M3 : TE_RT_FP8_E5M2;
}

// The codes the lowering passes as bare integers are the runtime's.
static_assert(int32_t(NormalizationKind::LayerNorm) == TE_RT_NORM_LAYERNORM &&
                  int32_t(NormalizationKind::RMSNorm) == TE_RT_NORM_RMSNORM,
              "te.normalization and TE_RT_NORM_* disagree");
// ActivationKind and TE_RT_ACT_* are both expanded from TEActivations.def.
#define TE_ACTIVATION(Cpp, C, name, code, gated, fn, nparams)                  \
  static_assert(int32_t(ActivationKind::Cpp) == TE_RT_ACT_##C,                 \
                "te activation " #name " and TE_RT_ACT_" #C " disagree");
#include "te/Runtime/TEActivations.def"
static_assert(getMaxEnumValForActivationKind() + 1 == TE_RT_ACT_COUNT,
              "te activations and TE_RT_ACT_* differ in number");

namespace {
/// The LLVM type of a C parameter or result of the ABI.
template <typename T> Type llvmTypeOf(MLIRContext *ctx) {
  if constexpr (std::is_pointer_v<T>)
    return LLVM::LLVMPointerType::get(ctx);
  else if constexpr (std::is_void_v<T>)
    return LLVM::LLVMVoidType::get(ctx);
  else if constexpr (std::is_same_v<T, float>)
    return Float32Type::get(ctx);
  else if constexpr (std::is_same_v<T, double>)
    return Float64Type::get(ctx);
  else {
    static_assert(std::is_integral_v<T>, "an ABI type with no LLVM mapping");
    return IntegerType::get(ctx, 8 * sizeof(T));
  }
}
template <typename R, typename... A>
LLVM::LLVMFunctionType llvmFunctionTypeOf(MLIRContext *ctx, R (*)(A...)) {
  return LLVM::LLVMFunctionType::get(llvmTypeOf<R>(ctx),
                                     {llvmTypeOf<A>(ctx)...});
}
} // namespace

LLVM::LLVMFunctionType runtimeFunctionType(MLIRContext *ctx, StringRef name) {
#define TE_RT_FUNC(ret, fn, params)                                            \
  if (name == #fn)                                                             \
    return llvmFunctionTypeOf(ctx, static_cast<decltype(&fn)>(nullptr));
#include "te/Runtime/TERuntime.def"
#undef TE_RT_FUNC
  return {};
}

StringRef dtypeName(Type element) {
  return element.isF32()    ? "float32"
         : element.isBF16() ? "bfloat16"
         : element.isF16()  ? "float16"
                            : "unknown";
}

llvm::StringMap<LLVM::LLVMFuncOp> declareRuntimeFunctions(ModuleOp module,
                                                          OpBuilder &b) {
  MLIRContext *ctx = module.getContext();
  // The subset of TERuntime.def the lowering calls, typed from the ABI's
  // own prototypes (runtimeFunctionType), declared in this order.
  llvm::StringMap<LLVM::LLVMFuncOp> runtime;
  for (StringRef name : {
           "te_rt_alloc",
           "te_rt_free",
           "te_rt_arena_acquire",
           "te_rt_arena_release",
           "te_rt_copy_to_backend",
           "te_rt_norm_fwd",
           "te_rt_norm_bwd",
           "te_rt_gemm_fprop",
           "te_rt_gemm_dgrad",
           "te_rt_gemm_wgrad",
           "te_rt_gemm_wgrad_fp32",
           "te_rt_gemm_fprop_act",
           "te_rt_gemm_dgrad_dact",
           "te_rt_act_fwd",
           "te_rt_act_bwd",
           "te_rt_bias_grad",
           "te_rt_dbias_dact",
           "te_rt_add",
           "te_rt_bias_add",
           "te_rt_all_gather",
           "te_rt_reduce_scatter",
           "te_rt_all_reduce",
           "te_rt_cast",
           "te_rt_transpose",
           "te_rt_transpose_bytes",
           "te_rt_add_columnwise_fp8",
           "te_rt_copy",
           "te_rt_zero",
           "te_rt_quantize_fp8",
           "te_rt_dbias_quantize_fp8",
           "te_rt_act_quantize_fp8",
           "te_rt_dact_quantize_fp8",
           "te_rt_gemm_fp8",
           "te_rt_quantize_fp8_block",
           "te_rt_gemm_fp8_block",
           "te_rt_quantize_mxfp8",
           "te_rt_gemm_mxfp8",
           "te_rt_quantize_nvfp4",
           "te_rt_quantize_nvfp4_4over6",
           "te_rt_gemm_nvfp4",
           "te_rt_quantize_nvfp4_row_scaled",
           "te_rt_gemm_nvfp4_row_scaled",
           "te_rt_norm_quantize_fp8",
           "te_rt_check_multiple",
           "te_rt_check_range",
           "te_rt_amax_update",
           "te_rt_amax_update_unused",
           "te_rt_amax_update_fork",
           "te_rt_branch_begin",
           "te_rt_branch_end",
           "te_rt_branch_join",
       }) {
    LLVM::LLVMFunctionType type = runtimeFunctionType(ctx, name);
    assert(type && "not a TERuntime.def function");
    runtime[name] = LLVM::LLVMFuncOp::create(b, module.getLoc(), name, type);
  }
  return runtime;
}

} // namespace mlir::te::runtime_lowering
