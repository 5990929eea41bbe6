//===- TETypes.h - TE dialect types -----------------------------*- C++ -*-===//
//
// The quantized tensor type.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TETYPES_H
#define TE_DIALECT_TE_IR_TETYPES_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"
#include "te/Dialect/TE/IR/TEAttrs.h"
#include "te/Dialect/TE/IR/TEFakeTensors.h"

#define GET_TYPEDEF_CLASSES
#include "te/Dialect/TE/IR/TEOpsTypes.h.inc"

namespace mlir::te {

/// The alignment a recipe needs of both flattened dims of a quantized
/// operand: MXFP8 32, NVFP4 16, Float8 block scaling 128, per-tensor FP8
/// rows 8 and columns 16 (TE's assert_dim_for_fp8_exec), 1 for bf16.
struct RecipeAlignment {
  int64_t rows = 1;
  int64_t cols = 1;
};
RecipeAlignment getRecipeAlignment(RecipeAttrInterface recipe);

/// The element format of forward tensors (activations, weights) and of
/// gradients under `recipe` (HYBRID is E4M3 forward, E5M2 backward).
QuantFormat getForwardFormat(RecipeAttrInterface recipe);
QuantFormat getBackwardFormat(RecipeAttrInterface recipe);

} // namespace mlir::te

#endif // TE_DIALECT_TE_IR_TETYPES_H
