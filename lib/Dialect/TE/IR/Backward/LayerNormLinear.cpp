//===- LayerNormLinear.cpp - te.layernorm_linear's backward -----*- C++ -*-===//
//
// The backward of te.layernorm_linear: one te.layernorm_linear_bwd on the
// output gradient, the norm output's gradient (when the norm output is
// returned and used) and the tensors the op saved. A frozen weight (no
// gradient wanted) has no wgrad: the norm output, which only the wgrad
// reads, is neither saved nor passed, and the weight gets no gradient.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"

using namespace mlir;
using namespace mlir::te;

bool LayerNormLinearOp::needsSaved(StringRef name, GradientContext &ctx) {
  // (ln_out_rowwise: row-scaled NVFP4's quantized copy under save_rowwise.)
  return (name != "ln_out" && name != "ln_out_rowwise") ||
         ctx.wantsGradient(getWeight());
}

LogicalResult LayerNormLinearOp::buildBackward(GradientContext &ctx) {
  OpBuilder &b = ctx.getBuilder();
  FailureOr<Value> dy = ctx.getGradientOrZeros(getOutput());
  if (failed(dy))
    return failure();
  Value dLn = getLnOutput() ? ctx.getGradient(getLnOutput()) : Value();
  Value bwdScales = ctx.getBackwardScales();
  SmallVector<unsigned> skipped;
  if (!ctx.wantsGradient(getWeight()))
    skipped.push_back(getWeightMutable().getOperandNumber());
  SmallVector<Type> types = getModuleGradientTypes(*this, skipped);
  auto bwdOp = LayerNormLinearBwdOp::create(
      b, getLoc(), types, *dy, dLn, ctx.getSaved("input"),
      ctx.getSaved("ln_weight"), ctx.getSaved("mu"), ctx.getSaved("rsigma"),
      ctx.getSaved("weight"),
      skipped.empty() ? ctx.getSaved("ln_out") : Value(), bwdScales,
      getNormalization(), getZeroCenteredGamma(), bool(getLnBias()),
      bool(getBias()), getRecipeAttr(), getTpAttr());
  return finishModuleBackward(ctx, *this, bwdOp, skipped);
}
