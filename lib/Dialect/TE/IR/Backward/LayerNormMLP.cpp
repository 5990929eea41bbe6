//===- LayerNormMLP.cpp - te.layernorm_mlp's backward -----------*- C++ -*-===//
//
// The backward of te.layernorm_mlp: one te.layernorm_mlp_bwd on the output
// gradient, the norm output's gradient and the saved tensors. A
// checkpointed MLP saved only its inputs: its backward first re-runs the op
// (without checkpointing) in a te.recompute region that yields the
// intermediates the non-checkpointed op would have saved. A frozen FC1
// (FC2) weight has no wgrad: the norm output (activation output), which only
// that wgrad reads, is neither saved nor passed, and the weight gets no
// gradient.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::te;

/// The te.recompute of a checkpointed `mlp`: its inputs (the backward's
/// copies of the op's operands, in order), a body that re-runs the op and
/// yields its saved intermediates. Sets them, and the saved tensors that
/// alias the op's inputs, in `values`.
static void recompute(LayerNormMLPOp mlp, GradientContext &ctx,
                      llvm::StringMap<Value> &values) {
  OpBuilder &b = ctx.getBuilder();
  Location loc = mlp.getLoc();
  DescribeOptions options;
  options.arch = ctx.getArch();
  SmallVector<Value> inputs;
  for (Value operand : mlp->getOperands())
    inputs.push_back(ctx.lookupBackward(operand));
  // Build the body in a result-less op, then move it into the final one.
  auto scratch = RecomputeOp::create(b, loc, TypeRange{}, inputs);
  Block *body = new Block();
  scratch.getBody().push_back(body);
  IRMapping map;
  for (Value operand : mlp->getOperands())
    map.map(operand, body->addArgument(operand.getType(), loc));
  OpBuilder rb = OpBuilder::atBlockBegin(body);
  OperationState state(loc, mlp->getName());
  for (Value operand : mlp->getOperands())
    state.addOperands(map.lookup(operand));
  state.addTypes(mlp.getOutput().getType());
  LayerNormMLPOp::Properties props = mlp.getProperties();
  props.checkpoint = nullptr;
  props.return_layernorm_output = nullptr;
  state.useProperties(props);
  auto inner = cast<LayerNormMLPOp>(rb.create(state));
  ModuleDescription desc = inner.describe(options);
  SmallVector<Value> yielded;
  SmallVector<std::string> names;
  for (const SavedDesc &sd : desc.saved) {
    if (sd.alias.kind != Alias::None)
      continue;
    yielded.push_back(SavedOp::create(rb, loc,
                                      sd.tensor.getType(b.getContext()),
                                      inner.getOutput(), sd.tensor.name));
    names.push_back(sd.tensor.name);
  }
  YieldOp::create(rb, loc, yielded);
  // Now that the body is known, create the op with its results.
  SmallVector<Type> types;
  for (Value v : yielded)
    types.push_back(v.getType());
  auto op = RecomputeOp::create(b, loc, types, inputs);
  op.getBody().takeBody(scratch.getBody());
  scratch.erase();
  for (auto [name, result] : llvm::zip(names, op.getResults()))
    values[name] = result;
  // Aliased saves of the non-checkpointed op are the inputs themselves.
  for (const SavedDesc &sd : desc.saved)
    if (sd.alias.kind == Alias::Input)
      values[sd.tensor.name] =
          ctx.lookupBackward(mlp->getOperand(sd.alias.index));
}

bool LayerNormMLPOp::needsSaved(StringRef name, GradientContext &ctx) {
  if (name == "ln_out")
    return ctx.wantsGradient(getFc1Weight());
  if (name == "act_out")
    return ctx.wantsGradient(getFc2Weight());
  return true;
}

LogicalResult LayerNormMLPOp::buildBackward(GradientContext &ctx) {
  OpBuilder &b = ctx.getBuilder();
  FailureOr<Value> dy = ctx.getGradientOrZeros(getOutput());
  if (failed(dy))
    return failure();
  Value dLn = getLnOutput() ? ctx.getGradient(getLnOutput()) : Value();
  Value bwdScales = ctx.getBackwardScales();
  llvm::StringMap<Value> values = ctx.getAllSaved();
  if (getCheckpoint())
    recompute(*this, ctx, values);
  // A frozen weight's wgrad operand is not passed (recomputed or not).
  SmallVector<unsigned> skipped;
  if (!ctx.wantsGradient(getFc1Weight())) {
    skipped.push_back(getFc1WeightMutable().getOperandNumber());
    values.erase("ln_out");
  }
  if (!ctx.wantsGradient(getFc2Weight())) {
    skipped.push_back(getFc2WeightMutable().getOperandNumber());
    values.erase("act_out");
  }
  SmallVector<Type> types = getModuleGradientTypes(*this, skipped);
  auto bwdOp = LayerNormMLPBwdOp::create(
      b, getLoc(), types, *dy, dLn, values.lookup("input"),
      values.lookup("ln_weight"), values.lookup("mu"), values.lookup("rsigma"),
      values.lookup("ln_out"), values.lookup("fc1_weight"),
      values.lookup("fc1_out"), values.lookup("act_out"),
      values.lookup("fc2_weight"), bwdScales, getNormalization(),
      getActivation(), getZeroCenteredGamma(), bool(getLnBias()),
      bool(getFc1Bias()), bool(getFc2Bias()), getRecipeAttr(), getTpAttr());
  return finishModuleBackward(ctx, *this, bwdOp, skipped);
}
