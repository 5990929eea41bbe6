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

SmallVector<Type> mlir::te::getModuleGradientTypes(Operation *moduleOp) {
  Value scales = cast<ModuleOpInterface>(moduleOp).getScalesOperand();
  SmallVector<Type> types;
  for (Value v : moduleOp->getOperands())
    if (v != scales)
      types.push_back(v.getType());
  return types;
}

LogicalResult mlir::te::finishModuleBackward(GradientContext &ctx,
                                             Operation *moduleOp,
                                             Operation *backwardOp) {
  ctx.setBackwardOp(backwardOp);
  for (auto [operand, grad] :
       llvm::zip(moduleOp->getOperands(), backwardOp->getResults()))
    ctx.accumulate(operand, grad);
  return success();
}

//===----------------------------------------------------------------------===//
// SavedOp
//===----------------------------------------------------------------------===//

/// A saved tensor is not differentiated: the module op's own rule reads it.
LogicalResult SavedOp::buildBackward(GradientContext &) { return success(); }
