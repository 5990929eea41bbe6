//===- TEAttrs.h - TE dialect attributes ------------------------*- C++ -*-===//
//
// Enums, the recipe attribute interface and the recipe attributes.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEATTRS_H
#define TE_DIALECT_TE_IR_TEATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

#include "te/Dialect/TE/IR/TEActivation.h"

#include "llvm/ADT/SmallVector.h"

#include "te/Dialect/TE/IR/TEEnums.h.inc"

namespace mlir::te {
/// TE's default parameters of `kind` (TEActivations.def), in order.
llvm::SmallVector<double> defaultActivationParams(ActivationKind kind);
} // namespace mlir::te

#include "te/Dialect/TE/IR/TEAttrInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "te/Dialect/TE/IR/TEAttrs.h.inc"

namespace mlir::te {

/// The longest delayed-scaling amax history the dialect accepts (TE's
/// default is 1024).
constexpr int64_t kMaxAmaxHistoryLen = int64_t(1) << 20;
/// The largest tensor-parallel group a te op is compiled for (ranks beyond
/// one node's GPUs are data- or pipeline-parallel in practice).
constexpr int64_t kMaxTensorParallelSize = 1024;
/// The largest delayed-scaling margin (scales are divided by 2^margin).
constexpr int64_t kMaxFP8Margin = 64;

/// Builds the recipe attribute named as `te-compile --recipe` spells it
/// (`bf16`, `fp8-delayed`, `fp8-current`, `fp8-block`, `mxfp8`, `nvfp4`),
/// with TransformerEngine's default parameters, or parses a recipe attribute
/// in the dialect's syntax (`#te.nvfp4<rht = false>`) for non-default
/// parameters. Returns null for an unknown name or an invalid attribute
/// (then, when `why` is given, the attribute parser's first error in it).
RecipeAttrInterface getDefaultRecipe(MLIRContext *ctx, llvm::StringRef name,
                                     std::string *why = nullptr);

/// The recipe names accepted by getDefaultRecipe, in a stable order.
llvm::ArrayRef<llvm::StringRef> getRecipeNames();

/// True for the recipes a tensor-parallel (`#te.tp`) module op and its
/// backward run: none (bf16), fp8-current (quantized after the gather, the
/// group's amax) and fp8-delayed (amaxes reduced over the group before the
/// history update). Block scaling and FP4 would need their own gathers.
bool runsUnderTensorParallel(RecipeAttrInterface recipe);

/// The `custom<Activation>` directive of the ops that carry an activation:
/// `gelu`, `clamped_swiglu<limit = 5.0>` (the #te.act body without its
/// wrapper; parameters at their defaults are not printed).
ParseResult parseActivation(OpAsmParser &parser, ActivationAttr &act);
void printActivation(OpAsmPrinter &printer, Operation *op, ActivationAttr act);

/// Rejects, on an op carrying `act`, the attributes that spelled activation
/// parameters before they were part of the activation (`{limit = 5.0}`
/// would otherwise be kept as an unused attribute).
LogicalResult verifyNoLooseActivationParams(Operation *op);

} // namespace mlir::te

#endif // TE_DIALECT_TE_IR_TEATTRS_H
