//===- TEAttrs.cpp - TE dialect attributes ----------------------*- C++ -*-===//
//
// Recipe attributes: verification, the recipe interface and default recipes.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEAttrs.h"
#include "te/Dialect/TE/IR/TEDialect.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::te;

#include "te/Dialect/TE/IR/TEEnums.cpp.inc"

#include "te/Dialect/TE/IR/TEAttrInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "te/Dialect/TE/IR/TEAttrs.cpp.inc"

void TEDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "te/Dialect/TE/IR/TEAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Recipe interface implementations
//===----------------------------------------------------------------------===//

StringRef BF16RecipeAttr::getRecipeName() const { return "bf16"; }
bool BF16RecipeAttr::isQuantized() const { return false; }

StringRef FP8DelayedRecipeAttr::getRecipeName() const { return "fp8-delayed"; }
bool FP8DelayedRecipeAttr::isQuantized() const { return true; }

StringRef FP8CurrentRecipeAttr::getRecipeName() const { return "fp8-current"; }
bool FP8CurrentRecipeAttr::isQuantized() const { return true; }

StringRef MXFP8RecipeAttr::getRecipeName() const { return "mxfp8"; }
bool MXFP8RecipeAttr::isQuantized() const { return true; }

StringRef FP8BlockRecipeAttr::getRecipeName() const { return "fp8-block"; }
bool FP8BlockRecipeAttr::isQuantized() const { return true; }

StringRef NVFP4RecipeAttr::getRecipeName() const { return "nvfp4"; }
bool NVFP4RecipeAttr::isQuantized() const { return true; }

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

LogicalResult
FP8DelayedRecipeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                             int64_t margin, int64_t amaxHistoryLen,
                             AmaxComputeAlgo, FP8Format) {
  if (margin < 0)
    return emitError() << "fp8_delayed margin must be non-negative, got "
                       << margin;
  if (amaxHistoryLen < 1)
    return emitError() << "fp8_delayed amax_history_len must be at least 1, "
                          "got "
                       << amaxHistoryLen;
  // TE's default is 1024; the history is a [len, slots] fp32 tensor of
  // every delayed-scaling entry's state.
  if (amaxHistoryLen > kMaxAmaxHistoryLen)
    return emitError() << "fp8_delayed amax_history_len must be at most "
                       << kMaxAmaxHistoryLen << ", got " << amaxHistoryLen;
  if (margin > kMaxFP8Margin)
    return emitError() << "fp8_delayed margin must be at most " << kMaxFP8Margin
                       << ", got " << margin;
  return success();
}

LogicalResult
FP8BlockRecipeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           int64_t xBlockDim, int64_t wBlockDim,
                           int64_t gradBlockDim, bool) {
  auto check = [&](StringRef name, int64_t dim) -> LogicalResult {
    if (dim == 1 || dim == 2)
      return success();
    return emitError() << "fp8_block " << name
                       << " must be 1 (1x128 blocks) or 2 (128x128 blocks), "
                          "got "
                       << dim;
  };
  if (failed(check("x_block_dim", xBlockDim)) ||
      failed(check("w_block_dim", wBlockDim)) ||
      failed(check("grad_block_dim", gradBlockDim)))
    return failure();
  // Each GEMM multiplies two of {x, w, grad}; TE rejects 2D x 2D.
  auto reject = [&](StringRef gemm, StringRef a, StringRef b) {
    return emitError() << "fp8_block " << gemm << " GEMM would multiply two "
                       << "128x128-scaled operands (" << a << " and " << b
                       << "); at most one operand may use block dim 2";
  };
  if (xBlockDim == 2 && wBlockDim == 2)
    return reject("fprop", "x", "w");
  if (gradBlockDim == 2 && wBlockDim == 2)
    return reject("dgrad", "grad", "w");
  if (xBlockDim == 2 && gradBlockDim == 2)
    return reject("wgrad", "x", "grad");
  return success();
}

//===----------------------------------------------------------------------===//
// Default recipes
//===----------------------------------------------------------------------===//

ArrayRef<StringRef> mlir::te::getRecipeNames() {
  static const StringRef names[] = {"bf16",      "fp8-delayed", "fp8-current",
                                    "fp8-block", "mxfp8",       "nvfp4"};
  return names;
}

RecipeAttrInterface mlir::te::getDefaultRecipe(MLIRContext *ctx,
                                               StringRef name) {
  ctx->getOrLoadDialect<TEDialect>();
  if (name == "bf16")
    return BF16RecipeAttr::get(ctx);
  if (name == "fp8-delayed")
    return FP8DelayedRecipeAttr::get(ctx, /*margin=*/0, /*amaxHistoryLen=*/1024,
                                     AmaxComputeAlgo::Max, FP8Format::Hybrid);
  if (name == "fp8-current")
    return FP8CurrentRecipeAttr::get(ctx, FP8Format::Hybrid,
                                     /*power2Scales=*/false);
  if (name == "fp8-block")
    return FP8BlockRecipeAttr::get(ctx, /*xBlockDim=*/1, /*wBlockDim=*/2,
                                   /*gradBlockDim=*/1, /*fp32Scales=*/false);
  if (name == "mxfp8")
    return MXFP8RecipeAttr::get(ctx);
  if (name == "nvfp4")
    return NVFP4RecipeAttr::get(ctx, /*rht=*/true, /*stochasticRounding=*/true,
                                /*weight2d=*/true, /*rowScaled=*/false);
  if (name.starts_with("#te.")) {
    // The caller reports the failure; the parser's own diagnostic would
    // point into a buffer the user never wrote.
    ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
    return dyn_cast_or_null<RecipeAttrInterface>(parseAttribute(name, ctx));
  }
  return {};
}
