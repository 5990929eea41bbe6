//===- TETrainingOps.cpp - te.saved, backward ops, te.recompute -*- C++ -*-===//
//
// Verifiers of the ops te-generate-backward emits. A saved tensor's type is
// checked against the producing op's description; backward ops check that
// their saved operands fit together (shapes, one recipe, the usages the
// backward GEMMs need) and that they produce one gradient per forward
// operand.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/InterleavedRange.h"

using namespace mlir;
using namespace mlir::te;

//===----------------------------------------------------------------------===//
// SavedOp
//===----------------------------------------------------------------------===//

static std::string aliasString(const Alias &alias) {
  return (alias.kind == Alias::Input ? "input " : "output ") +
         std::to_string(alias.index);
}

LogicalResult SavedOp::verify() {
  auto result = dyn_cast<OpResult>(getSource());
  auto module =
      result ? dyn_cast<ModuleOpInterface>(result.getOwner()) : nullptr;
  if (!module || result.getResultNumber() != 0)
    return emitOpError()
           << "source must be the output (result 0) of a te module op";

  DescribeOptions options;
  if (auto q = dyn_cast<QuantizedTensorType>(getType()))
    options.arch = q.getArch();
  ModuleDescription desc = module.describe(options);
  const SavedDesc *entry = nullptr;
  std::string available;
  for (const SavedDesc &s : desc.saved) {
    if (s.tensor.name == getName())
      entry = &s;
    if (s.alias.kind == Alias::None)
      available += (available.empty() ? "" : ", ") + s.tensor.name;
  }
  if (!entry) {
    InFlightDiagnostic diag = emitOpError()
                              << "'" << getName() << "' is not saved by "
                              << module->getName() << " under recipe "
                              << desc.effectiveRecipe;
    if (available.empty())
      diag << " (it saves only its inputs, e.g. because it is checkpointed)";
    else
      diag << "; it saves " << available;
    return diag;
  }
  if (entry->alias.kind != Alias::None)
    return emitOpError() << "'" << getName() << "' aliases "
                         << aliasString(entry->alias)
                         << " of the module op; the backward takes that value, "
                            "not a te.saved copy";
  Type expected = entry->tensor.getType(getContext());
  if (expected != getType())
    return emitOpError() << "result type " << getType()
                         << " does not match the described saved tensor '"
                         << getName() << "' of type " << expected;
  return success();
}

//===----------------------------------------------------------------------===//
// Backward op verification
//===----------------------------------------------------------------------===//

namespace {
/// Checks the operands and results of a backward op. Shapes are exact: the
/// leading dims of every activation-like tensor are the input's.
class BackwardVerifier {
public:
  /// Leading dims from `rowsOf` (default: the output gradient); `gather`
  /// is the factor of dim 0 of the gathered activations (gathered()).
  BackwardVerifier(Operation *op, RecipeAttrInterface recipe, Value gradOutput,
                   Value rowsOf = {}, int64_t gather = 1)
      : op(op), recipe(recipe), gather(gather) {
    elementType = cast<RankedTensorType>(gradOutput.getType()).getElementType();
    auto shape =
        cast<RankedTensorType>((rowsOf ? rowsOf : gradOutput).getType())
            .getShape();
    leading.assign(shape.begin(), shape.end() - 1);
    rows = 1;
    for (int64_t d : leading)
      rows = ShapedType::isDynamic(d) || ShapedType::isDynamic(rows)
                 ? ShapedType::kDynamic
                 : rows * d;
  }

  SmallVector<int64_t> act(int64_t features) const {
    SmallVector<int64_t> s(leading);
    s.push_back(features);
    return s;
  }
  /// [..., features] with dim 0 gathered over a sequence-parallel group.
  SmallVector<int64_t> gathered(int64_t features) const {
    SmallVector<int64_t> s = act(features);
    if (s.size() >= 2 && !ShapedType::isDynamic(s[0]))
      s[0] *= gather;
    return s;
  }
  RankedTensorType tensor(ArrayRef<int64_t> shape) const {
    return RankedTensorType::get(shape, elementType);
  }

  /// A high-precision operand of exactly `shape` in the activation dtype.
  LogicalResult checkTensor(StringRef name, Value v, ArrayRef<int64_t> shape) {
    if (v.getType() != tensor(shape))
      return op->emitOpError() << name << " must be " << tensor(shape)
                               << ", got " << v.getType();
    return success();
  }

  /// A norm statistic: fp32 with one value per row.
  LogicalResult checkStat(StringRef name, Value v) {
    auto expected = RankedTensorType::get({rows}, Float32Type::get(
                                                      op->getContext()));
    if (v.getType() != expected)
      return op->emitOpError()
             << name << " must be " << expected << " (one fp32 value per row)"
             << ", got " << v.getType();
    return success();
  }

  /// `mu` exactly for LayerNorm, plus rsigma.
  LogicalResult checkStats(NormalizationKind kind, Value mu, Value rsigma,
                           bool withLnBias) {
    if (kind == NormalizationKind::LayerNorm && !mu)
      return op->emitOpError() << "layer_norm needs its saved mean: mu(...)";
    if (kind == NormalizationKind::RMSNorm && mu)
      return op->emitOpError()
             << "rms_norm saves no mean; remove mu(...)";
    if (kind == NormalizationKind::RMSNorm && withLnBias)
      return op->emitOpError()
             << "with_ln_bias is not allowed with rms_norm (no beta)";
    if (mu && failed(checkStat("mu", mu)))
      return failure();
    return checkStat("rsigma", rsigma);
  }

  /// A saved GEMM operand of logical shape `shape`: high precision, or
  /// quantized under the op's recipe with a columnwise copy when a backward
  /// GEMM reads it transposed. All GEMM operands agree on which.
  LogicalResult checkSaved(StringRef name, Value v, ArrayRef<int64_t> shape,
                           bool needsColumnwise) {
    auto q = dyn_cast<QuantizedTensorType>(v.getType());
    if (anyOperand && isQuantized != bool(q))
      return op->emitOpError()
             << "saved GEMM operands must be all quantized or all high "
                "precision: '"
             << name << "' is " << (q ? "" : "not ") << "quantized but '"
             << firstName << "' is " << (isQuantized ? "" : "not ")
             << "quantized";
    if (!anyOperand) {
      anyOperand = true;
      isQuantized = bool(q);
      firstName = name.str();
    }
    if (!q)
      return checkTensor(name, v, shape);
    if (!recipe || !recipe.isQuantized())
      return op->emitOpError() << "'" << name
                               << "' is quantized but the op's recipe is "
                               << (recipe ? recipe.getRecipeName() : "bf16");
    if (q.getRecipe() != recipe)
      return op->emitOpError() << "'" << name << "' is quantized under "
                               << q.getRecipe() << ", not the op's recipe "
                               << recipe;
    if (q.getShape() != shape)
      return op->emitOpError()
             << "'" << name << "' has logical shape ["
             << llvm::interleaved(q.getShape(), "x") << "], expected ["
             << llvm::interleaved(shape, "x") << "]";
    if (needsColumnwise && !q.hasColumnwise())
      return op->emitOpError()
             << "'" << name
             << "' must keep its columnwise copy for the backward GEMM, got "
                "usage "
             << stringifyQuantUsage(q.getUsage());
    return success();
  }

  /// The results: one gradient per forward operand, of the given types.
  LogicalResult
  checkGrads(ArrayRef<std::pair<StringRef, RankedTensorType>> expected) {
    if (op->getNumResults() != expected.size()) {
      InFlightDiagnostic diag = op->emitOpError()
                                << "expects " << expected.size()
                                << " gradients (";
      llvm::interleaveComma(expected, diag,
                            [&](auto &e) { diag << e.first; });
      return diag << "), got " << op->getNumResults();
    }
    for (auto [i, e] : llvm::enumerate(expected))
      if (op->getResult(i).getType() != e.second)
        return op->emitOpError()
               << "gradient #" << i << " (of " << e.first << ") must be "
               << e.second << ", got " << op->getResult(i).getType();
    return success();
  }

  /// A vector operand of `size` in the activation dtype.
  LogicalResult checkVector(StringRef name, Value v, int64_t size) {
    return checkTensor(name, v, {size});
  }

  Operation *op;
  RecipeAttrInterface recipe;
  Type elementType;
  SmallVector<int64_t> leading;
  int64_t rows;
  int64_t gather;
  bool anyOperand = false, isQuantized = false;
  std::string firstName;
};

/// The logical [out, in] shape of a saved weight, or failure with an error.
FailureOr<std::pair<int64_t, int64_t>> weightShape(Operation *op,
                                                   StringRef name, Value v) {
  ArrayRef<int64_t> shape;
  if (auto q = dyn_cast<QuantizedTensorType>(v.getType()))
    shape = q.getShape();
  else
    shape = cast<RankedTensorType>(v.getType()).getShape();
  if (shape.size() != 2 || ShapedType::isDynamicShape(shape))
    return op->emitOpError() << name << " must be a static 2-D weight";
  return std::make_pair(shape[0], shape[1]);
}

/// The feature (last) dim of an activation-like operand of rank > 1.
FailureOr<int64_t> features(Operation *op, StringRef name, Value v,
                            size_t rank) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() < 2 || size_t(type.getRank()) != rank ||
      type.isDynamicDim(type.getRank() - 1))
    return op->emitOpError()
           << name << " must have the rank of grad_output (" << rank
           << ") and a static feature dimension, got " << type;
  return type.getShape().back();
}
} // namespace

//===----------------------------------------------------------------------===//
// LayerNormLinearBwdOp
//===----------------------------------------------------------------------===//

/// A backward op's tensor-parallel layout: the forward's rules (bf16
/// only); returns the gather factor of its sequence-parallel activations.
static FailureOr<int64_t> backwardTensorParallel(Operation *op,
                                                 TensorParallelAttr tp,
                                                 RecipeAttrInterface recipe,
                                                 Value gradLnOutput) {
  if (!tp)
    return int64_t(1);
  if (!runsUnderTensorParallel(recipe))
    return op->emitOpError()
           << "tp with recipe " << recipe.getRecipeName()
           << " is not supported yet (bf16, fp8-current and fp8-delayed "
              "only)";
  if (gradLnOutput)
    return op->emitOpError()
           << "tp with a norm-output gradient is not supported (the forward "
              "cannot return the norm output under tp)";
  return tp.getSequenceParallel() ? tp.getSize() : int64_t(1);
}

/// The saved norm output: the rank's rows, or under sequence parallelism
/// with a quantized recipe the gathered ones (quantized after the gather
/// with the group's amax, saved as the wgrad reads them).
template <typename OpTy>
static SmallVector<int64_t> savedNormShapeOf(OpTy op, const BackwardVerifier &v,
                                             int64_t features) {
  return op.getLnOut() && isa<QuantizedTensorType>(op.getLnOut().getType())
             ? v.gathered(features)
             : v.act(features);
}

int64_t LayerNormLinearBwdOp::getNumSlots() { return 2; }

LogicalResult LayerNormLinearBwdOp::verify() {
  FailureOr<int64_t> gather = backwardTensorParallel(
      *this, getTpAttr(), getRecipeAttr(), getGradLnOutput());
  if (failed(gather))
    return failure();
  // Under tp the leading dims are the input's (the rank's rows); the output
  // gradient has the gathered rows with sequence parallelism.
  BackwardVerifier v(*this, getRecipeAttr(), getGradOutput(),
                     getTpAttr() ? getInput() : Value(), *gather);
  size_t rank = getGradOutput().getType().getRank();
  FailureOr<int64_t> k = features(*this, "input", getInput(), rank);
  FailureOr<std::pair<int64_t, int64_t>> w =
      weightShape(*this, "weight", getWeight());
  if (failed(k) || failed(w))
    return failure();
  auto [n, wk] = *w;
  if (wk != *k)
    return emitOpError() << "weight in_features " << wk
                         << " does not match the input feature size " << *k;
  if (failed(v.checkTensor("grad_output", getGradOutput(), v.gathered(n))) ||
      failed(v.checkTensor("input", getInput(), v.act(*k))) ||
      (getGradLnOutput() &&
       failed(v.checkTensor("grad_ln_output", getGradLnOutput(), v.act(*k)))) ||
      failed(v.checkVector("ln_weight", getLnWeight(), *k)) ||
      failed(v.checkStats(getNormalization(), getMu(), getRsigma(),
                          getWithLnBias())) ||
      failed(v.checkSaved("weight", getWeight(), {n, *k}, true)) ||
      (getLnOut() &&
       failed(v.checkSaved("ln_out", getLnOut(),
                           savedNormShapeOf(*this, v, *k), true))))
    return failure();

  if (failed(verifyDelayedScales(*this, getRecipeAttr(), getScales(), 2)))
    return failure();
  SmallVector<std::pair<StringRef, RankedTensorType>> grads = {
      {"input", v.tensor(v.act(*k))}, {"ln_weight", v.tensor({*k})}};
  if (getWithLnBias())
    grads.push_back({"ln_bias", v.tensor({*k})});
  // No wgrad without the saved norm output (a frozen weight).
  if (getLnOut())
    grads.push_back({"weight", v.tensor({n, *k})});
  if (getWithBias())
    grads.push_back({"bias", v.tensor({n})});
  return v.checkGrads(grads);
}

//===----------------------------------------------------------------------===//
// LayerNormMLPBwdOp
//===----------------------------------------------------------------------===//

int64_t LayerNormMLPBwdOp::getNumSlots() { return 4; }

/// A rowwise per-tensor FP8 act_out on Hopper: the backward transposes it
/// for FC2's wgrad (te.add_columnwise, TE's update_usage, §2.5).
static bool derivesColumnwise(Value actOut) {
  auto q = dyn_cast<QuantizedTensorType>(actOut.getType());
  return q && q.getUsage() == QuantUsage::Rowwise &&
         q.hasTransposedColumnwise();
}

LogicalResult LayerNormMLPBwdOp::verify() {
  FailureOr<int64_t> gather = backwardTensorParallel(
      *this, getTpAttr(), getRecipeAttr(), getGradLnOutput());
  if (failed(gather))
    return failure();
  // Under sequence parallelism fc1_out and act_out have the gathered rows.
  BackwardVerifier v(*this, getRecipeAttr(), getGradOutput(), Value(),
                     *gather);
  size_t rank = getGradOutput().getType().getRank();
  FailureOr<int64_t> h = features(*this, "input", getInput(), rank);
  FailureOr<std::pair<int64_t, int64_t>> w1 =
      weightShape(*this, "fc1_weight", getFc1Weight());
  FailureOr<std::pair<int64_t, int64_t>> w2 =
      weightShape(*this, "fc2_weight", getFc2Weight());
  if (failed(h) || failed(w1) || failed(w2))
    return failure();
  auto [f1, w1In] = *w1;
  auto [w2Out, f] = *w2;
  bool gated = getActivation().isGated();
  if (w1In != *h)
    return emitOpError() << "fc1_weight in_features " << w1In
                         << " does not match the input feature size " << *h;
  if (w2Out != *h)
    return emitOpError() << "fc2_weight out_features " << w2Out
                         << " does not match the input feature size " << *h;
  if (f1 != (gated ? 2 * f : f))
    return emitOpError() << "fc1_weight out_features " << f1 << " must be "
                         << (gated ? "twice " : "") << "the FFN size " << f
                         << " for activation "
                         << getActivation().getActivationName();
  if (failed(verifyNoLooseActivationParams(*this)))
    return failure();
  if (failed(v.checkTensor("grad_output", getGradOutput(), v.act(*h))) ||
      failed(v.checkTensor("input", getInput(), v.act(*h))) ||
      (getGradLnOutput() &&
       failed(v.checkTensor("grad_ln_output", getGradLnOutput(), v.act(*h)))) ||
      failed(v.checkVector("ln_weight", getLnWeight(), *h)) ||
      failed(v.checkStats(getNormalization(), getMu(), getRsigma(),
                          getWithLnBias())) ||
      failed(v.checkTensor("fc1_out", getFc1Out(), v.gathered(f1))) ||
      (getLnOut() &&
       failed(v.checkSaved("ln_out", getLnOut(),
                           savedNormShapeOf(*this, v, *h), true))) ||
      failed(v.checkSaved("fc1_weight", getFc1Weight(), {f1, *h}, true)) ||
      (getActOut() &&
       failed(v.checkSaved("act_out", getActOut(), v.gathered(f),
                           !derivesColumnwise(getActOut())))) ||
      failed(v.checkSaved("fc2_weight", getFc2Weight(), {*h, f}, true)))
    return failure();

  if (failed(verifyDelayedScales(*this, getRecipeAttr(), getScales(), 4)))
    return failure();
  SmallVector<std::pair<StringRef, RankedTensorType>> grads = {
      {"input", v.tensor(v.act(*h))}, {"ln_weight", v.tensor({*h})}};
  if (getWithLnBias())
    grads.push_back({"ln_bias", v.tensor({*h})});
  // No wgrad of a weight whose wgrad operand is not saved (frozen).
  if (getLnOut())
    grads.push_back({"fc1_weight", v.tensor({f1, *h})});
  if (getWithFc1Bias())
    grads.push_back({"fc1_bias", v.tensor({f1})});
  if (getActOut())
    grads.push_back({"fc2_weight", v.tensor({*h, f})});
  if (getWithFc2Bias())
    grads.push_back({"fc2_bias", v.tensor({*h})});
  return v.checkGrads(grads);
}

//===----------------------------------------------------------------------===//
// LinearBwdOp
//===----------------------------------------------------------------------===//

int64_t LinearBwdOp::getNumSlots() { return 2; }

LogicalResult LinearBwdOp::verify() {
  BackwardVerifier v(*this, getRecipeAttr(), getGradOutput());
  FailureOr<std::pair<int64_t, int64_t>> w =
      weightShape(*this, "weight", getWeight());
  if (failed(w))
    return failure();
  auto [n, k] = *w;
  if (failed(v.checkTensor("grad_output", getGradOutput(), v.act(n))) ||
      (getInput() &&
       failed(v.checkSaved("input", getInput(), v.act(k), true))) ||
      failed(v.checkSaved("weight", getWeight(), {n, k}, true)))
    return failure();
  if (failed(verifyDelayedScales(*this, getRecipeAttr(), getScales(), 2)))
    return failure();
  SmallVector<std::pair<StringRef, RankedTensorType>> grads = {
      {"input", v.tensor(v.act(k))}};
  // No wgrad without the saved input (a frozen weight).
  if (getInput())
    grads.push_back({"weight", v.tensor({n, k})});
  if (getWithBias())
    grads.push_back({"bias", v.tensor({n})});
  return v.checkGrads(grads);
}

//===----------------------------------------------------------------------===//
// NormalizationBwdOp
//===----------------------------------------------------------------------===//

// High precision under every recipe: no quantizer slots, no scales.
int64_t NormalizationBwdOp::getNumSlots() { return 0; }
Value NormalizationBwdOp::getScalesOperand() { return {}; }

LogicalResult NormalizationBwdOp::verify() {
  BackwardVerifier v(*this, RecipeAttrInterface(), getGradOutput());
  size_t rank = getGradOutput().getType().getRank();
  FailureOr<int64_t> k = features(*this, "input", getInput(), rank);
  if (failed(k))
    return failure();
  if (failed(v.checkTensor("grad_output", getGradOutput(), v.act(*k))) ||
      failed(v.checkTensor("input", getInput(), v.act(*k))) ||
      failed(v.checkVector("ln_weight", getLnWeight(), *k)) ||
      failed(v.checkStats(getNormalization(), getMu(), getRsigma(),
                          getWithLnBias())))
    return failure();
  SmallVector<std::pair<StringRef, RankedTensorType>> grads = {
      {"input", v.tensor(v.act(*k))}, {"ln_weight", v.tensor({*k})}};
  if (getWithLnBias())
    grads.push_back({"ln_bias", v.tensor({*k})});
  return v.checkGrads(grads);
}

//===----------------------------------------------------------------------===//
// AmaxOp / AmaxUpdateOp
//===----------------------------------------------------------------------===//

/// The quantizer slots and scales operand of a delayed-scaling op, or 0.
static std::pair<int64_t, Value> delayedSlots(Operation *op) {
  if (auto m = dyn_cast<ModuleOpInterface>(op))
    return {m.getNumForwardSlots(), m.getScalesOperand()};
  if (auto b = dyn_cast<ModuleBackwardOpInterface>(op))
    return {b.getNumSlots(), b.getScalesOperand()};
  return {0, Value()};
}

LogicalResult AmaxOp::verify() {
  auto result = dyn_cast<OpResult>(getSource());
  if (!result || result.getResultNumber() != 0)
    return emitOpError() << "source must be result 0 of a te module or "
                            "backward op";
  Operation *owner = result.getOwner();
  auto [slots, scales] = delayedSlots(owner);
  if (slots == 0 && isa<ModuleOpInterface, ModuleBackwardOpInterface>(owner))
    return emitOpError() << "source op '" << owner->getName()
                         << "' quantizes nothing (no quantizer slots), so it "
                            "records no amaxes";
  if (slots == 0)
    return emitOpError() << "source must be result 0 of a te module or "
                            "backward op";
  if (!scales)
    return emitOpError() << "source op has no delayed-scaling scales, so it "
                            "records no amaxes";
  if (getType().getDimSize(0) != slots)
    return emitOpError() << "result must have one amax per quantizer slot ("
                         << slots << "), got " << getType();
  return success();
}

LogicalResult AmaxUpdateOp::verify() {
  auto delayed = dyn_cast<FP8DelayedRecipeAttr>(getRecipe());
  if (!delayed)
    return emitOpError() << "updates delayed-scaling state; the recipe must "
                            "be #te.fp8_delayed, got "
                         << getRecipe();
  auto history = getAmaxHistory().getType();
  int64_t slots = getScales().getType().getDimSize(0);
  if (history.getDimSize(0) != delayed.getAmaxHistoryLen() ||
      history.getDimSize(1) != slots)
    return emitOpError() << "amax_history must be [amax_history_len = "
                         << delayed.getAmaxHistoryLen() << ", slots = "
                         << slots << "], got " << history;
  return success();
}

//===----------------------------------------------------------------------===//
// RecomputeOp
//===----------------------------------------------------------------------===//

LogicalResult RecomputeOp::verify() {
  Block &body = getBody().front();
  if (body.getArgumentTypes() != getInputs().getTypes())
    return emitOpError() << "region arguments must match the inputs' types";
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError()
           << "te.yield operand types must match the result types";
  if (getNumResults() == 0)
    return emitOpError() << "recomputes nothing (no results)";
  return success();
}

LogicalResult RecomputeOp::verifyRegions() {
  Block &body = getBody().front();
  for (Operation &op : body.without_terminator()) {
    if (isa<ModuleBackwardOpInterface, RecomputeOp>(op))
      return op.emitOpError()
             << "is not allowed in a te.recompute region, which re-runs "
                "forward computations only";
    if (auto mlp = dyn_cast<LayerNormMLPOp>(op); mlp && mlp.getCheckpoint())
      return op.emitOpError()
             << "inside a te.recompute region must not be checkpointed "
                "itself";
    if (!isMemoryEffectFree(&op))
      return op.emitOpError() << "has side effects, which a te.recompute "
                                 "region must not have";
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  for (auto [i, value] : llvm::enumerate(yield.getValues()))
    if (!value.getDefiningOp<SavedOp>())
      return emitOpError() << "must yield only forward intermediates taken "
                              "with te.saved; value #"
                           << i << " is not";
  return success();
}
