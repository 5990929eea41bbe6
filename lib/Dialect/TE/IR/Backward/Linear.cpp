//===- Linear.cpp - te.linear's backward ------------------------*- C++ -*-===//
//
// The backward of te.linear: one te.linear_bwd on the output gradient and
// the saved input and weight.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"

using namespace mlir;
using namespace mlir::te;

LogicalResult LinearOp::buildBackward(GradientContext &ctx) {
  OpBuilder &b = ctx.getBuilder();
  FailureOr<Value> dy = ctx.getGradientOrZeros(getOutput());
  if (failed(dy))
    return failure();
  Value bwdScales = ctx.getBackwardScales();
  SmallVector<Type> types = getModuleGradientTypes(*this);
  auto bwdOp = LinearBwdOp::create(
      b, getLoc(), types, *dy, ctx.getSaved("input"), ctx.getSaved("weight"),
      bwdScales, bool(getBias()), getRecipeAttr());
  return finishModuleBackward(ctx, *this, bwdOp);
}
