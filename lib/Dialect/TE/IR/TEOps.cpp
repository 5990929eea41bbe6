//===- TEOps.cpp - TE dialect operations ------------------------*- C++ -*-===//
//
// Verifiers, shape inference (InferTypeOpInterface and
// ReifyRankedShapedTypeOpInterface) and canonicalizations of the module ops.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::te;


LogicalResult mlir::te::verifyOperandAndResultShapeBounds(Operation *op) {
  auto check = [&](Type t, StringRef kind, unsigned i) {
    auto shaped = dyn_cast<ShapedType>(t);
    if (!shaped || !shaped.hasRank())
      return success();
    std::string what = (kind + " #" + Twine(i)).str();
    return verifyShapeBounds([&] { return op->emitOpError(); },
                             shaped.getShape(), what);
  };
  for (auto [i, t] : llvm::enumerate(op->getOperandTypes()))
    if (failed(check(t, "operand", i)))
      return failure();
  for (auto [i, t] : llvm::enumerate(op->getResultTypes()))
    if (failed(check(t, "result", i)))
      return failure();
  return success();
}

LogicalResult mlir::te::verifyDelayedScales(Operation *op,
                                            RecipeAttrInterface recipe,
                                            Value scales, int64_t slots) {
  if (!scales)
    return success();
  if (!isa_and_nonnull<FP8DelayedRecipeAttr>(recipe))
    return op->emitOpError()
           << "scales are delayed-scaling state; the op's recipe is "
           << (recipe ? recipe.getRecipeName() : "bf16")
           << ", not fp8-delayed";
  auto type = cast<RankedTensorType>(scales.getType());
  if (type.getDimSize(0) != slots)
    return op->emitOpError() << "scales must have one value per quantizer "
                                "slot ("
                             << slots << "), got " << type;
  return success();
}

//===----------------------------------------------------------------------===//
// Shared verification helpers
//===----------------------------------------------------------------------===//

namespace {
/// Checks operand shapes and dtypes of a module op against the rules of
/// TransformerEngine's modules, emitting errors that name the operand.
class ModuleVerifier {
public:
  ModuleVerifier(Operation *op, Value input) : op(op), input(input) {
    inputType = cast<RankedTensorType>(input.getType());
  }

  /// The activation input: rank >= 2 and a static feature (last) dimension.
  LogicalResult verifyInput() {
    if (inputType.getRank() < 2)
      return op->emitOpError()
             << "input must have rank >= 2 ([tokens, hidden] or [batch, "
                "seq, hidden]), got rank "
             << inputType.getRank();
    if (inputType.isDynamicDim(inputType.getRank() - 1))
      return op->emitOpError()
             << "input feature dimension (the last) must be static; only "
                "leading dimensions may be dynamic";
    return success();
  }

  int64_t features() const {
    return inputType.getDimSize(inputType.getRank() - 1);
  }
  Type elementType() const { return inputType.getElementType(); }

  /// A 1-D static vector of `size` elements of the input's dtype. `what`
  /// says what the size must match, for the message.
  LogicalResult verifyVector(StringRef name, Value v, int64_t size,
                             StringRef what) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() != 1)
      return op->emitOpError()
             << name << " must be a 1-D tensor, got rank " << type.getRank();
    if (!type.hasStaticShape())
      return op->emitOpError() << name << " must have a static shape";
    if (type.getDimSize(0) != size)
      return op->emitOpError() << name << " size " << type.getDimSize(0)
                               << " does not match " << what << " " << size;
    return verifyElementType(name, type);
  }

  /// A 2-D static [out_features, in_features] weight whose in_features is
  /// `inFeatures` (what it must match is named by `inWhat`).
  LogicalResult verifyWeight(StringRef name, Value v, int64_t inFeatures,
                             StringRef inWhat) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() != 2)
      return op->emitOpError()
             << name
             << " must be a 2-D tensor [out_features, in_features], got rank "
             << type.getRank();
    if (!type.hasStaticShape())
      return op->emitOpError() << name << " must have a static shape";
    if (type.getDimSize(1) != inFeatures)
      return op->emitOpError()
             << name << " in_features " << type.getDimSize(1)
             << " does not match " << inWhat << " " << inFeatures;
    return verifyElementType(name, type);
  }

  LogicalResult verifyElementType(StringRef name, RankedTensorType type) {
    if (type.getElementType() != elementType())
      return op->emitOpError()
             << name << " element type " << type.getElementType()
             << " does not match the input element type " << elementType();
    return success();
  }

  LogicalResult verifyNorm(NormalizationKind kind, Value lnWeight, Value lnBias,
                           APFloat eps) {
    if (!eps.isFinite() || eps.isNegative())
      return op->emitOpError() << "eps must be a finite non-negative number, "
                                  "got "
                               << eps.convertToDouble();
    if (failed(verifyVector("ln_weight", lnWeight, features(),
                            "the input feature size")))
      return failure();
    if (lnBias) {
      if (kind == NormalizationKind::RMSNorm)
        return op->emitOpError()
               << "ln_bias is not allowed with rms_norm (RMSNorm has no beta)";
      if (failed(verifyVector("ln_bias", lnBias, features(),
                              "the input feature size")))
        return failure();
    }
    return success();
  }

  /// Recipe rules that depend on the activation dtype.
  LogicalResult verifyRecipe(RecipeAttrInterface recipe) {
    auto nvfp4 = dyn_cast_or_null<NVFP4RecipeAttr>(recipe);
    if (!nvfp4)
      return success();
    if (elementType().isF16())
      return op->emitOpError()
             << "recipe nvfp4 does not support f16 activations; use bf16 "
                "(or f32 with rht = false)";
    if (elementType().isF32() && nvfp4.getRht())
      return op->emitOpError()
             << "recipe nvfp4 with rht = true needs bf16 activations, got "
                "f32; set rht = false or cast the input to bf16";
    return success();
  }

  /// The optional second result must be present exactly when the
  /// return_layernorm_output flag is set.
  LogicalResult verifyNormOutputResult(bool flag, Value lnOutput) {
    if (flag && !lnOutput)
      return op->emitOpError() << "return_layernorm_output requires a second "
                                  "result (the norm output)";
    if (!flag && lnOutput)
      return op->emitOpError() << "has a second result (the norm output) but "
                                  "return_layernorm_output is not set";
    return success();
  }

private:
  Operation *op;
  Value input;
  RankedTensorType inputType;
};
} // namespace

/// The input's shape with the last dimension replaced by `lastDim`.
static RankedTensorType withLastDim(Type inputType, int64_t lastDim) {
  auto type = cast<RankedTensorType>(inputType);
  SmallVector<int64_t> shape(type.getShape());
  shape.back() = lastDim;
  return RankedTensorType::get(shape, type.getElementType());
}

/// Shared inference: [..., outFeatures] and optionally the norm output.
/// `gather` > 1 multiplies the output's dim 0 (a sequence-parallel
/// LayerNormLinear's output has the group's rows).
static LogicalResult inferModuleResults(std::optional<Location> loc,
                                        StringRef opName, Value input,
                                        Value weight, int64_t outDimIndex,
                                        bool returnNormOutput,
                                        SmallVectorImpl<Type> &inferred,
                                        int64_t gather = 1) {
  auto inputType =
      dyn_cast_or_null<RankedTensorType>(input ? input.getType() : Type());
  auto weightType =
      dyn_cast_or_null<RankedTensorType>(weight ? weight.getType() : Type());
  if (!inputType || inputType.getRank() < 1)
    return emitOptionalError(loc, "'", opName,
                             "' op cannot infer result types: input must be "
                             "a ranked tensor of rank >= 1");
  if (!weightType || weightType.getRank() != 2)
    return emitOptionalError(loc, "'", opName,
                             "' op cannot infer result types: the output "
                             "weight must be a 2-D tensor");
  RankedTensorType out =
      withLastDim(inputType, weightType.getDimSize(outDimIndex));
  if (gather > 1 && out.getRank() >= 2 && !out.isDynamicDim(0)) {
    SmallVector<int64_t> shape(out.getShape());
    shape[0] *= gather;
    out = RankedTensorType::get(shape, out.getElementType());
  }
  inferred.push_back(out);
  if (returnNormOutput)
    inferred.push_back(inputType);
  return success();
}

/// Checks the declared result types against the inferred ones, with a
/// message that says which result and why.
static LogicalResult verifyInferredResults(Operation *op, Value input,
                                           Value weight,
                                           bool returnNormOutput,
                                           int64_t gather = 1) {
  SmallVector<Type> inferred;
  if (failed(inferModuleResults(op->getLoc(), op->getName().getStringRef(),
                                input, weight, /*outDimIndex=*/0,
                                returnNormOutput, inferred, gather)))
    return failure();
  for (auto [index, actual, expected] :
       llvm::enumerate(op->getResultTypes(), inferred)) {
    if (actual == expected)
      continue;
    return op->emitOpError()
           << "result #" << index << " has type " << actual
           << " but the inferred type is " << expected
           << (index == 0 ? (gather > 1
                                 ? " ([..., out_features] with the input's "
                                   "leading dimensions, dim 0 gathered over "
                                   "the sequence-parallel group)"
                                 : " ([..., out_features] with the input's "
                                   "leading dimensions)")
                          : " (the norm output has the input's type)");
  }
  return success();
}

/// Reifies [..., lastDim] from the input's (possibly dynamic) leading dims.
static void reifyLike(OpBuilder &b, Location loc, Value input, int64_t lastDim,
                      ReifiedRankedShapedTypeDims &shapes, int64_t gather = 1) {
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<OpFoldResult> dims;
  for (int64_t i = 0, e = type.getRank() - 1; i < e; ++i) {
    int64_t factor = i == 0 ? gather : 1;
    if (type.isDynamicDim(i)) {
      Value d = tensor::DimOp::create(b, loc, input, i).getResult();
      if (factor > 1)
        d = arith::MulIOp::create(
            b, loc, d, arith::ConstantIndexOp::create(b, loc, factor));
      dims.push_back(d);
    } else {
      dims.push_back(b.getIndexAttr(type.getDimSize(i) * factor));
    }
  }
  dims.push_back(b.getIndexAttr(lastDim));
  shapes.push_back(std::move(dims));
}

static RecipeAttrInterface recipeOrDefault(MLIRContext *ctx,
                                           RecipeAttrInterface recipe) {
  return recipe ? recipe : RecipeAttrInterface(BF16RecipeAttr::get(ctx));
}

namespace {
/// Drops the norm output of a module op when nothing uses it, so that the
/// lowering may fuse quantization into the norm (TE does the same when
/// return_layernorm_output is off).
template <typename OpTy>
struct DropUnusedNormOutput : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Value lnOutput = op.getLnOutput();
    if (!lnOutput || !lnOutput.use_empty())
      return failure();
    OperationState state(op.getLoc(), op->getName());
    state.addOperands(op->getOperands());
    state.addTypes(op.getOutput().getType());
    typename OpTy::Properties props = op.getProperties();
    props.return_layernorm_output = nullptr;
    state.useProperties(props);
    state.addAttributes(llvm::to_vector(op->getDiscardableAttrs()));
    Operation *newOp = rewriter.create(state);
    rewriter.replaceAllUsesWith(op.getOutput(), newOp->getResult(0));
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

/// The rows a module op's output gathers: the group size for a
/// sequence-parallel LayerNormLinear, else 1.
static int64_t gatheredRows(TensorParallelAttr tp) {
  return tp && tp.getSequenceParallel() ? tp.getSize() : 1;
}

/// What a tensor-parallel module op cannot do yet, each with the reason.
static LogicalResult verifyTensorParallel(Operation *op, TensorParallelAttr tp,
                                          RecipeAttrInterface recipe,
                                          bool returnNormOutput) {
  if (!tp)
    return success();
  if (!runsUnderTensorParallel(recipe))
    return op->emitOpError()
           << "tp with recipe " << recipe.getRecipeName()
           << " is not supported yet: tensor parallelism runs bf16, "
              "fp8-current and fp8-delayed";
  if (returnNormOutput)
    return op->emitOpError()
           << "tp with return_layernorm_output is not supported: the norm "
              "output would be the gathered one (TE's "
              "return_layernorm_output_gathered)";
  return success();
}

//===----------------------------------------------------------------------===//
// LayerNormLinearOp
//===----------------------------------------------------------------------===//

int64_t LayerNormLinearOp::getNumForwardSlots() { return 3; }
int64_t LayerNormLinearOp::getNumBackwardSlots() { return 2; }

RecipeAttrInterface LayerNormLinearOp::getRecipeOrDefault() {
  return recipeOrDefault(getContext(), getRecipeAttr());
}

LogicalResult LayerNormLinearOp::verify() {
  ModuleVerifier v(*this, getInput());
  if (failed(v.verifyInput()) ||
      failed(v.verifyNorm(getNormalization(), getLnWeight(), getLnBias(),
                          getEps())) ||
      failed(v.verifyWeight("weight", getWeight(), v.features(),
                            "the input feature size")))
    return failure();
  int64_t outFeatures = getWeight().getType().getDimSize(0);
  if (getBias() && failed(v.verifyVector("bias", getBias(), outFeatures,
                                         "weight out_features")))
    return failure();
  if (failed(v.verifyRecipe(getRecipeAttr())) ||
      failed(
          v.verifyNormOutputResult(getReturnLayernormOutput(), getLnOutput())) ||
      failed(verifyDelayedScales(*this, getRecipeAttr(), getScales(), 3)) ||
      failed(verifyTensorParallel(*this, getTpAttr(), getRecipeAttr(),
                                  getReturnLayernormOutput())))
    return failure();
  return verifyInferredResults(*this, getInput(), getWeight(),
                               getReturnLayernormOutput(),
                               gatheredRows(getTpAttr()));
}

LogicalResult LayerNormLinearOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attributes, properties, regions);
  return inferModuleResults(loc, getOperationName(), adaptor.getInput(),
                            adaptor.getWeight(), /*outDimIndex=*/0,
                            adaptor.getReturnLayernormOutput(), inferred,
                            gatheredRows(adaptor.getTpAttr()));
}

LogicalResult
LayerNormLinearOp::reifyResultShapes(OpBuilder &b,
                                     ReifiedRankedShapedTypeDims &shapes) {
  reifyLike(b, getLoc(), getInput(), getWeight().getType().getDimSize(0),
            shapes, gatheredRows(getTpAttr()));
  if (getLnOutput())
    reifyLike(b, getLoc(), getInput(), getInput().getType().getShape().back(),
              shapes);
  return success();
}

void LayerNormLinearOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                    MLIRContext *context) {
  results.add<DropUnusedNormOutput<LayerNormLinearOp>>(context);
}

//===----------------------------------------------------------------------===//
// LayerNormMLPOp
//===----------------------------------------------------------------------===//

int64_t LayerNormMLPOp::getNumForwardSlots() { return 6; }
int64_t LayerNormMLPOp::getNumBackwardSlots() { return 4; }

RecipeAttrInterface LayerNormMLPOp::getRecipeOrDefault() {
  return recipeOrDefault(getContext(), getRecipeAttr());
}

bool LayerNormMLPOp::isGated() { return getActivation().isGated(); }

int64_t LayerNormMLPOp::getFfnSize() {
  return getFc2Weight().getType().getDimSize(1);
}

LogicalResult LayerNormMLPOp::verify() {
  ModuleVerifier v(*this, getInput());
  if (failed(v.verifyInput()) ||
      failed(v.verifyNorm(getNormalization(), getLnWeight(), getLnBias(),
                          getEps())) ||
      failed(v.verifyWeight("fc1_weight", getFc1Weight(), v.features(),
                            "the input feature size")))
    return failure();

  // fc2_weight is [H, F]: its out_features is the hidden size.
  auto fc2Type = getFc2Weight().getType();
  if (fc2Type.getRank() != 2)
    return emitOpError() << "fc2_weight must be a 2-D tensor [out_features, "
                            "in_features], got rank "
                         << fc2Type.getRank();
  if (!fc2Type.hasStaticShape())
    return emitOpError() << "fc2_weight must have a static shape";
  if (fc2Type.getDimSize(0) != v.features())
    return emitOpError() << "fc2_weight out_features " << fc2Type.getDimSize(0)
                         << " does not match the input feature size "
                         << v.features();
  if (failed(v.verifyElementType("fc2_weight", fc2Type)))
    return failure();

  int64_t ffn = fc2Type.getDimSize(1);
  int64_t fc1Out = getFc1Weight().getType().getDimSize(0);
  StringRef act = getActivation().getActivationName();
  if (isGated() && fc1Out != 2 * ffn)
    return emitOpError() << "fc1_weight out_features " << fc1Out
                         << " must be twice fc2_weight in_features (2 x " << ffn
                         << " = " << 2 * ffn << ") for gated activation "
                         << act;
  if (!isGated() && fc1Out != ffn)
    return emitOpError() << "fc1_weight out_features " << fc1Out
                         << " does not match fc2_weight in_features " << ffn
                         << " for activation " << act;

  if (getFc1Bias() && failed(v.verifyVector("fc1_bias", getFc1Bias(), fc1Out,
                                            "fc1_weight out_features")))
    return failure();
  if (getFc2Bias() &&
      failed(v.verifyVector("fc2_bias", getFc2Bias(), v.features(),
                            "fc2_weight out_features")))
    return failure();

  // The activation's parameters are in #te.act (verified there).
  if (failed(verifyNoLooseActivationParams(*this)))
    return failure();

  if (failed(v.verifyRecipe(getRecipeAttr())) ||
      failed(
          v.verifyNormOutputResult(getReturnLayernormOutput(), getLnOutput())) ||
      failed(verifyDelayedScales(*this, getRecipeAttr(), getScales(), 6)) ||
      failed(verifyTensorParallel(*this, getTpAttr(), getRecipeAttr(),
                                  getReturnLayernormOutput())))
    return failure();
  return verifyInferredResults(*this, getInput(), getFc2Weight(),
                               getReturnLayernormOutput());
}

LogicalResult LayerNormMLPOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attributes, properties, regions);
  // The output is [..., H] with H = fc2_weight's out_features.
  return inferModuleResults(loc, getOperationName(), adaptor.getInput(),
                            adaptor.getFc2Weight(), /*outDimIndex=*/0,
                            adaptor.getReturnLayernormOutput(), inferred);
}

LogicalResult
LayerNormMLPOp::reifyResultShapes(OpBuilder &b,
                                  ReifiedRankedShapedTypeDims &shapes) {
  reifyLike(b, getLoc(), getInput(), getFc2Weight().getType().getDimSize(0),
            shapes);
  if (getLnOutput())
    reifyLike(b, getLoc(), getInput(), getInput().getType().getShape().back(),
              shapes);
  return success();
}

void LayerNormMLPOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                 MLIRContext *context) {
  results.add<DropUnusedNormOutput<LayerNormMLPOp>>(context);
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

int64_t LinearOp::getNumForwardSlots() { return 3; }
int64_t LinearOp::getNumBackwardSlots() { return 2; }

RecipeAttrInterface LinearOp::getRecipeOrDefault() {
  return recipeOrDefault(getContext(), getRecipeAttr());
}

LogicalResult LinearOp::verify() {
  ModuleVerifier v(*this, getInput());
  if (failed(v.verifyInput()) ||
      failed(v.verifyWeight("weight", getWeight(), v.features(),
                            "the input feature size")))
    return failure();
  int64_t outFeatures = getWeight().getType().getDimSize(0);
  if (getBias() && failed(v.verifyVector("bias", getBias(), outFeatures,
                                         "weight out_features")))
    return failure();
  if (failed(v.verifyRecipe(getRecipeAttr())) ||
      failed(verifyDelayedScales(*this, getRecipeAttr(), getScales(), 3)))
    return failure();
  return verifyInferredResults(*this, getInput(), getWeight(),
                               /*returnNormOutput=*/false);
}

LogicalResult
LinearOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                           ValueRange operands, DictionaryAttr attributes,
                           OpaqueProperties properties, RegionRange regions,
                           SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attributes, properties, regions);
  return inferModuleResults(loc, getOperationName(), adaptor.getInput(),
                            adaptor.getWeight(), /*outDimIndex=*/0,
                            /*returnNormOutput=*/false, inferred);
}

LogicalResult LinearOp::reifyResultShapes(OpBuilder &b,
                                          ReifiedRankedShapedTypeDims &shapes) {
  reifyLike(b, getLoc(), getInput(), getWeight().getType().getDimSize(0),
            shapes);
  return success();
}

//===----------------------------------------------------------------------===//
// NormalizationOp
//===----------------------------------------------------------------------===//

// No GEMM, nothing quantized: no quantizer slots, no delayed-scaling state,
// and the recipe (accepted, see the op's description) runs as bf16.
int64_t NormalizationOp::getNumForwardSlots() { return 0; }
int64_t NormalizationOp::getNumBackwardSlots() { return 0; }

RecipeAttrInterface NormalizationOp::getRecipeOrDefault() {
  return BF16RecipeAttr::get(getContext());
}

Value NormalizationOp::getScalesOperand() { return {}; }

void NormalizationOp::setScalesOperand(Value scales) {
  (void)scales;
  assert(!scales && "te.normalization has no delayed-scaling state");
}

LogicalResult NormalizationOp::verify() {
  ModuleVerifier v(*this, getInput());
  if (failed(v.verifyInput()) ||
      failed(v.verifyNorm(getNormalization(), getLnWeight(), getLnBias(),
                          getEps())))
    return failure();
  if (getOutput().getType() != getInput().getType())
    return emitOpError() << "result #0 has type " << getOutput().getType()
                         << " but the inferred type is " << getInput().getType()
                         << " (the norm output has the input's type)";
  return success();
}

LogicalResult NormalizationOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<Type> &inferred) {
  Adaptor adaptor(operands, attributes, properties, regions);
  Value input = adaptor.getInput();
  if (!input || !isa<RankedTensorType>(input.getType()))
    return emitOptionalError(loc, "'", getOperationName(),
                             "' op cannot infer result types: input must be "
                             "a ranked tensor");
  inferred.push_back(input.getType());
  return success();
}

LogicalResult
NormalizationOp::reifyResultShapes(OpBuilder &b,
                                   ReifiedRankedShapedTypeDims &shapes) {
  reifyLike(b, getLoc(), getInput(), getInput().getType().getShape().back(),
            shapes);
  return success();
}

#define GET_OP_CLASSES
#include "te/Dialect/TE/IR/TEOps.cpp.inc"
