//===- TEOps.h - TE dialect operations --------------------------*- C++ -*-===//
//
// Declares the `te` operations.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEOPS_H
#define TE_DIALECT_TE_IR_TEOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "te/Dialect/TE/IR/TEAttrs.h"
#include "te/Dialect/TE/IR/TEBackward.h"
#include "te/Dialect/TE/IR/TEDialect.h"
#include "te/Dialect/TE/IR/TEFakeTensors.h"
#include "te/Dialect/TE/IR/TETypes.h"

#include "te/Dialect/TE/IR/TEOpInterfaces.h.inc"

namespace mlir::te {

/// Checks a delayed-scaling `scales` operand: allowed only with
/// `#te.fp8_delayed` and then `slots` fp32 values (TE's quantizer slots:
/// 3 per GEMM forward, 2 per GEMM backward).
LogicalResult verifyDelayedScales(Operation *op, RecipeAttrInterface recipe,
                                  Value scales, int64_t slots);

/// verifyShapeBounds over every ranked operand and result of `op`.
LogicalResult verifyOperandAndResultShapeBounds(Operation *op);

} // namespace mlir::te

namespace mlir::OpTrait::te {
/// Bounds every static dimension and element count of an op's operands and
/// results (kMaxDimSize, kMaxElements); on every `te` op.
template <typename ConcreteType>
class BoundedShapes
    : public mlir::OpTrait::TraitBase<ConcreteType, BoundedShapes> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return mlir::te::verifyOperandAndResultShapeBounds(op);
  }
};
} // namespace mlir::OpTrait::te

#define GET_OP_CLASSES
#include "te/Dialect/TE/IR/TEOps.h.inc"

#endif // TE_DIALECT_TE_IR_TEOPS_H
