//===- LayerNormLinear.cpp - te.layernorm_linear's backward -----*- C++ -*-===//
//
// The backward of te.layernorm_linear: one te.layernorm_linear_bwd on the
// output gradient, the norm output's gradient (when the norm output is
// returned and used) and the tensors the op saved.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"

using namespace mlir;
using namespace mlir::te;

LogicalResult LayerNormLinearOp::buildBackward(GradientContext &ctx) {
  OpBuilder &b = ctx.getBuilder();
  FailureOr<Value> dy = ctx.getGradientOrZeros(getOutput());
  if (failed(dy))
    return failure();
  Value dLn = getLnOutput() ? ctx.getGradient(getLnOutput()) : Value();
  Value bwdScales = ctx.getBackwardScales();
  SmallVector<Type> types = getModuleGradientTypes(*this);
  auto bwdOp = LayerNormLinearBwdOp::create(
      b, getLoc(), types, *dy, dLn, ctx.getSaved("input"),
      ctx.getSaved("ln_weight"), ctx.getSaved("mu"), ctx.getSaved("rsigma"),
      ctx.getSaved("weight"), ctx.getSaved("ln_out"), bwdScales,
      getNormalization(), getZeroCenteredGamma(), bool(getLnBias()),
      bool(getBias()), getRecipeAttr(), getTpAttr());
  return finishModuleBackward(ctx, *this, bwdOp);
}
