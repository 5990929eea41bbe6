//===- TEBackward.cpp - Helpers of the backward rules -----------*- C++ -*-===//
//
// What the module ops' BackwardOpInterface rules share, and the rule of
// te.saved (none: a saved tensor is read by its module op's rule).
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEBackward.h"
#include "te/Dialect/TE/IR/TEOps.h"

using namespace mlir;
using namespace mlir::te;

GradientContext::~GradientContext() = default;

/// The operands of `moduleOp` its backward op has gradients for.
static SmallVector<Value> gradientOperands(Operation *moduleOp,
                                           ArrayRef<unsigned> skipped) {
  Value scales = cast<ModuleOpInterface>(moduleOp).getScalesOperand();
  SmallVector<Value> operands;
  for (OpOperand &operand : moduleOp->getOpOperands())
    if (operand.get() != scales &&
        !llvm::is_contained(skipped, operand.getOperandNumber()))
      operands.push_back(operand.get());
  return operands;
}

SmallVector<Type> mlir::te::getModuleGradientTypes(Operation *moduleOp,
                                                   ArrayRef<unsigned> skipped) {
  SmallVector<Type> types;
  for (Value v : gradientOperands(moduleOp, skipped))
    types.push_back(v.getType());
  return types;
}

LogicalResult mlir::te::finishModuleBackward(GradientContext &ctx,
                                             Operation *moduleOp,
                                             Operation *backwardOp,
                                             ArrayRef<unsigned> skipped) {
  ctx.setBackwardOp(backwardOp);
  for (auto [operand, grad] : llvm::zip(gradientOperands(moduleOp, skipped),
                                        backwardOp->getResults()))
    ctx.accumulate(operand, grad);
  return success();
}

//===----------------------------------------------------------------------===//
// SavedOp
//===----------------------------------------------------------------------===//

/// A saved tensor is not differentiated: the module op's own rule reads it.
LogicalResult SavedOp::buildBackward(GradientContext &) { return success(); }
