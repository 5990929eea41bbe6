//===- Linear.cpp - te.linear's backward ------------------------*- C++ -*-===//
//
// The backward of te.linear: one te.linear_bwd on the output gradient and
// the saved input and weight. A frozen weight (no gradient wanted) has no
// wgrad: the input, which only the wgrad reads, is neither saved nor
// passed, and the weight gets no gradient.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"

using namespace mlir;
using namespace mlir::te;

bool LinearOp::needsSaved(StringRef name, GradientContext &ctx) {
  return (name != "input" && name != "input_rowwise") ||
         ctx.wantsGradient(getWeight());
}

LogicalResult LinearOp::buildBackward(GradientContext &ctx) {
  OpBuilder &b = ctx.getBuilder();
  FailureOr<Value> dy = ctx.getGradientOrZeros(getOutput());
  if (failed(dy))
    return failure();
  Value bwdScales = ctx.getBackwardScales();
  SmallVector<unsigned> skipped;
  if (!ctx.wantsGradient(getWeight()))
    skipped.push_back(getWeightMutable().getOperandNumber());
  SmallVector<Type> types = getModuleGradientTypes(*this, skipped);
  Value input = skipped.empty() ? ctx.getSaved("input") : Value();
  auto bwdOp = LinearBwdOp::create(b, getLoc(), types, *dy, input,
                                   ctx.getSaved("weight"), bwdScales,
                                   bool(getBias()), getRecipeAttr());
  return finishModuleBackward(ctx, *this, bwdOp, skipped);
}
