//===- Normalization.cpp - te.normalization's backward ----------*- C++ -*-===//
//
// The backward of te.normalization: one te.normalization_bwd on the output
// gradient, the input, gamma and the saved statistics (mu for LayerNorm,
// rsigma). Nothing is quantized, so there is no recipe state to update.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"

using namespace mlir;
using namespace mlir::te;

// The norm backward reads every saved tensor, whichever operands want a
// gradient (dx needs the statistics and gamma; dgamma the input).
bool NormalizationOp::needsSaved(StringRef, GradientContext &) { return true; }

LogicalResult NormalizationOp::buildBackward(GradientContext &ctx) {
  OpBuilder &b = ctx.getBuilder();
  FailureOr<Value> dy = ctx.getGradientOrZeros(getOutput());
  if (failed(dy))
    return failure();
  SmallVector<Type> types = getModuleGradientTypes(*this);
  auto bwdOp = NormalizationBwdOp::create(
      b, getLoc(), types, *dy, ctx.getSaved("input"), ctx.getSaved("ln_weight"),
      ctx.getSaved("mu"), ctx.getSaved("rsigma"), getNormalization(),
      getZeroCenteredGamma(), bool(getLnBias()));
  return finishModuleBackward(ctx, *this, bwdOp);
}
