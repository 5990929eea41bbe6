//===- TEPrimitiveOps.cpp - L2 primitive verifiers --------------*- C++ -*-===//
//
// Shape and dtype rules of the primitives te-decompose emits. Activation-like
// tensors are [..., features] with static features; leading dims may be
// dynamic and must agree where a primitive relates two of them.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"

using namespace mlir;
using namespace mlir::te;

namespace {
/// Shape rules shared by the primitives, with errors naming the operand.
struct Shapes {
  Operation *op;
  /// Element type given to quantized operands' logical shapes.
  Type quantizedElement = {};

  RankedTensorType type(Value v) const {
    if (auto q = dyn_cast<QuantizedTensorType>(v.getType()))
      return RankedTensorType::get(q.getShape(), quantizedElement);
    return cast<RankedTensorType>(v.getType());
  }
  /// [..., K] with static K and rank >= 2.
  FailureOr<int64_t> features(StringRef name, Value v) const {
    RankedTensorType t = type(v);
    if (t.getRank() < 2 || t.isDynamicDim(t.getRank() - 1))
      return op->emitOpError()
             << name
             << " must be [..., features] with a static feature dim, got "
             << t;
    return t.getShape().back();
  }
  static SmallVector<int64_t> withLast(RankedTensorType t, int64_t last) {
    SmallVector<int64_t> s(t.getShape());
    s.back() = last;
    return s;
  }
  static int64_t rows(RankedTensorType t) {
    int64_t m = 1;
    for (int64_t d : t.getShape().drop_back()) {
      if (ShapedType::isDynamic(d))
        return ShapedType::kDynamic;
      m *= d;
    }
    return m;
  }
  LogicalResult expect(StringRef name, Value v, Type expected) const {
    if (v.getType() != expected)
      return op->emitOpError()
             << name << " must be " << expected << ", got " << v.getType();
    return success();
  }
  LogicalResult expectShape(StringRef name, Value v, ArrayRef<int64_t> shape,
                            Type element) const {
    return expect(name, v, RankedTensorType::get(shape, element));
  }
  LogicalResult stats(RankedTensorType x, Value rsigma, Value mu,
                      NormalizationKind kind) const {
    Type f32 = Float32Type::get(op->getContext());
    if (kind == NormalizationKind::LayerNorm && !mu)
      return op->emitOpError() << "layer_norm has a mean (mu)";
    if (kind == NormalizationKind::RMSNorm && mu)
      return op->emitOpError() << "rms_norm has no mean (mu)";
    if (failed(expectShape("rsigma", rsigma, {rows(x)}, f32)))
      return failure();
    return mu ? expectShape("mu", mu, {rows(x)}, f32) : success();
  }
};

/// The activation's output features for `k` input features.
FailureOr<int64_t> activationOutput(Operation *op, ActivationAttr act,
                                    int64_t k) {
  if (!act.isGated())
    return k;
  if (k % 2 != 0)
    return op->emitOpError()
           << "gated activation " << act.getActivationName()
           << " needs an even number of input features, got " << k;
  return k / 2;
}

/// `slot` indexes the delayed-scaling state `scales`.
LogicalResult verifySlot(Operation *op, Value scales, int64_t slot) {
  int64_t n = cast<RankedTensorType>(scales.getType()).getDimSize(0);
  if (slot < 0 || (!ShapedType::isDynamic(n) && slot >= n))
    return op->emitOpError()
           << "slot " << slot << " is outside scales (" << n << " slots)";
  return success();
}
} // namespace

/// The scale operand of te.quantize / te.norm_quantize: fp8-delayed casts
/// with `scale(%scales[slot])` from the recipe state, every other recipe
/// `computes` its own (the message's words) and takes none.
template <typename OpTy>
static LogicalResult verifyStateScale(OpTy op, RecipeAttrInterface recipe,
                                      StringRef computes) {
  bool delayed = isa<FP8DelayedRecipeAttr>(recipe);
  if (delayed && !op.getScales())
    return op.emitOpError() << "fp8-delayed takes its scale from the recipe "
                               "state: scale(%scales[slot]) is required";
  if (!delayed && op.getScales())
    return op.emitOpError() << recipe.getRecipeName() << " computes "
                            << computes << "; scale(...) is only for "
                            << "fp8-delayed";
  if (bool(op.getSlot()) != bool(op.getScales()))
    return op.emitOpError() << "slot must be given exactly with scales";
  if (op.getScales() && failed(verifySlot(op, op.getScales(), *op.getSlot())))
    return failure();
  return success();
}

/// The normalization forward's rules (te.norm_fwd, te.norm_quantize):
/// `input` is [..., K], gamma and beta [K] of its dtype, beta and mu only
/// for LayerNorm, per-row fp32 statistics; returns the input type.
template <typename OpTy>
static FailureOr<RankedTensorType> verifyNormFwd(OpTy op) {
  Shapes s{op};
  FailureOr<int64_t> k = s.features("input", op.getInput());
  if (failed(k))
    return failure();
  RankedTensorType x = s.type(op.getInput());
  Type e = x.getElementType();
  if (op.getBeta() && op.getNormalization() == NormalizationKind::RMSNorm)
    return op.emitOpError() << "rms_norm has no beta";
  if (failed(s.expectShape("gamma", op.getGamma(), {*k}, e)) ||
      (op.getBeta() && failed(s.expectShape("beta", op.getBeta(), {*k}, e))) ||
      failed(s.stats(x, op.getRsigma(), op.getMu(), op.getNormalization())))
    return failure();
  return x;
}

LogicalResult NormFwdOp::verify() {
  FailureOr<RankedTensorType> x = verifyNormFwd(*this);
  if (failed(x))
    return failure();
  return Shapes{*this}.expect("output", getOutput(), *x);
}

LogicalResult NormBwdOp::verify() {
  Shapes s{*this};
  FailureOr<int64_t> k = s.features("input", getInput());
  if (failed(k))
    return failure();
  RankedTensorType x = s.type(getInput());
  Type e = x.getElementType();
  if (getWithBeta() && getNormalization() == NormalizationKind::RMSNorm)
    return emitOpError() << "rms_norm has no beta to differentiate";
  if (bool(getGradBeta()) != getWithBeta())
    return emitOpError() << "grad_beta must be present exactly with with_beta";
  if (failed(s.expect("grad", getGrad(), x)) ||
      failed(s.expectShape("gamma", getGamma(), {*k}, e)) ||
      failed(s.stats(x, getRsigma(), getMu(), getNormalization())) ||
      failed(s.expect("grad_input", getGradInput(), x)) ||
      failed(s.expect("grad_gamma", getGradGamma(), getGamma().getType())) ||
      (getGradBeta() &&
       failed(s.expect("grad_beta", getGradBeta(), getGamma().getType()))))
    return failure();
  return success();
}

LogicalResult QuantizeOp::verify() {
  auto q = cast<QuantizedTensorType>(getResult().getType());
  auto x = cast<RankedTensorType>(getInput().getType());
  RecipeAttrInterface recipe = q.getRecipe();
  // Every quantizing recipe has a quantizer (the type admits no other).
  bool nvfp4 = isa<NVFP4RecipeAttr>(recipe);
  if (getStochasticRounding() && !nvfp4)
    return emitOpError() << "stochastic_rounding applies to nvfp4 (E2M1 "
                            "values), got "
                         << recipe.getRecipeName();
  if (getStochasticRounding() && q.getBlock_2d())
    return emitOpError() << "stochastic_rounding with 16x16 blocks (block_2d, "
                            "TE's weights): the two copies of a 2-D scaled "
                            "tensor must hold the same values";
  if (getFourOverSix() && (!nvfp4 || getStochasticRounding() || q.getRht()))
    return emitOpError() << "four_over_six applies to nvfp4 without "
                            "stochastic_rounding and without rht, got "
                         << recipe.getRecipeName()
                         << (getStochasticRounding()
                                 ? " with stochastic_rounding"
                             : q.getRht() ? " with rht"
                                          : "");
  if (getSeed() && !getStochasticRounding())
    return emitOpError() << "seed keys stochastic rounding; it needs "
                            "stochastic_rounding";
  if (nvfp4 && q.getRowScaled() &&
      (q.getUsage() != QuantUsage::Rowwise || getStochasticRounding() ||
       getFourOverSix() || q.getBlock_2d()))
    return emitOpError() << "row-scaled nvfp4 is quantized rowwise, with "
                            "1x16 blocks, rounding to nearest (TE's forward "
                            "input quantizer; its backward is high "
                            "precision), got "
                         << q;
  if (q.getShape() != x.getShape())
    return emitOpError() << "result shape must be the input's ("
                         << x << "), got " << q;
  bool block = isa<FP8BlockRecipeAttr, MXFP8RecipeAttr, NVFP4RecipeAttr>(recipe);
  if (failed(verifyStateScale(*this, recipe, "its scales from the tensor")))
    return failure();
  Type amax =
      RankedTensorType::get({1}, Float32Type::get(getContext()));
  if (Value in = getAmaxIn()) {
    if (!isa<FP8CurrentRecipeAttr>(recipe))
      return emitOpError() << "amax(...) supplies current scaling's amax; "
                           << recipe.getRecipeName()
                           << " takes no precomputed amax";
    if (in.getType() != amax)
      return emitOpError() << "amax(...) must be " << amax << ", got "
                           << in.getType();
    if (getAmax())
      return emitOpError() << "with amax(...) given there is no amax result "
                              "(the amax recorded is the operand)";
    return success();
  }
  if (block) {
    if (getAmax())
      return emitOpError() << recipe.getRecipeName()
                           << " records no amax (the recipe is stateless); "
                              "drop the amax result";
    return success();
  }
  if (!getAmax())
    return emitOpError() << "per-tensor FP8 records the amax: an amax "
                         << "result of type " << amax << " is required";
  if (getAmax().getType() != amax)
    return emitOpError() << "amax must be " << amax << ", got "
                         << getAmax().getType();
  return success();
}

LogicalResult DropUsageOp::verify() {
  auto in = cast<QuantizedTensorType>(getInput().getType());
  auto out = cast<QuantizedTensorType>(getResult().getType());
  if (in.getUsage() != QuantUsage::Both || out.getUsage() == QuantUsage::Both)
    return emitOpError() << "drops one usage of a 'both' tensor, got "
                         << stringifyQuantUsage(in.getUsage()) << " -> "
                         << stringifyQuantUsage(out.getUsage());
  if (out != in.withUsage(out.getUsage()))
    return emitOpError() << "result must be the input with usage "
                         << stringifyQuantUsage(out.getUsage()) << " ("
                         << in.withUsage(out.getUsage()) << "), got " << out;
  return success();
}

LogicalResult AddColumnwiseOp::verify() {
  auto in = cast<QuantizedTensorType>(getInput().getType());
  auto out = cast<QuantizedTensorType>(getResult().getType());
  if (!in.hasTransposedColumnwise())
    return emitOpError()
           << "makes the columnwise copy of per-tensor FP8 (fp8-delayed, "
              "fp8-current) on hopper, where it is the transpose of the "
              "rowwise bytes; got recipe "
           << in.getRecipe().getRecipeName() << " on "
           << stringifyTargetArch(in.getArch())
           << ", whose columnwise copy is quantized from the high-precision "
              "tensor (block scales) or is the rowwise buffer itself";
  if (in.getUsage() != QuantUsage::Rowwise)
    return emitOpError() << "input must be rowwise only (it has no "
                            "columnwise copy yet), got usage "
                         << stringifyQuantUsage(in.getUsage());
  QuantizedTensorType expected = in.withUsage(QuantUsage::Columnwise);
  if (out != expected)
    return emitOpError() << "result must be the input with usage columnwise ("
                         << expected << "), got " << out;
  return success();
}

/// The quantized-operand rules of an FP8 GEMM: both operands quantized
/// under one recipe, not both E5M2, each with the usage its layout reads.
static LogicalResult verifyQuantizedGemm(GemmOp op) {
  auto lhs = dyn_cast<QuantizedTensorType>(op.getLhs().getType());
  auto rhs = dyn_cast<QuantizedTensorType>(op.getRhs().getType());
  if (!lhs && !rhs)
    return success();
  if (!lhs || !rhs)
    return op.emitOpError() << "lhs and rhs must both be quantized or both "
                               "high precision";
  if (lhs.getRecipe() != rhs.getRecipe())
    return op.emitOpError() << "lhs and rhs are quantized under different "
                               "recipes ("
                            << lhs.getRecipe() << " and " << rhs.getRecipe()
                            << ")";
  if (lhs.getFormat() == QuantFormat::E5M2 &&
      rhs.getFormat() == QuantFormat::E5M2)
    return op.emitOpError() << "an FP8 GEMM needs one E4M3 operand (E5M2 x "
                               "E5M2 is not a GEMM TE runs)";
  if (isa<FP8BlockRecipeAttr>(lhs.getRecipe()) && lhs.getBlock_2d() &&
      rhs.getBlock_2d())
    return op.emitOpError() << "both operands use 128x128 blocks (fp8-block "
                               "multiplies at most one 2-D scaled operand)";
  if (lhs.getArch() != rhs.getArch())
    return op.emitOpError() << "lhs and rhs are laid out for different "
                               "architectures ("
                            << stringifyTargetArch(lhs.getArch()) << " and "
                            << stringifyTargetArch(rhs.getArch()) << ")";
  bool lhsRow = op.getLayout() != GemmLayout::NT;
  bool rhsRow = op.getLayout() == GemmLayout::TN;
  auto check = [&](StringRef name, QuantizedTensorType t,
                   bool row) -> LogicalResult {
    if (row ? t.hasRowwise() : t.hasColumnwise())
      return success();
    return op.emitOpError()
           << "the " << stringifyGemmLayout(op.getLayout()) << " GEMM reads "
           << name << "'s " << (row ? "rowwise" : "columnwise")
           << " copy, which " << t << " lacks";
  };
  if (failed(check("lhs", lhs, lhsRow)) || failed(check("rhs", rhs, rhsRow)))
    return failure();
  // NVFP4's Hadamard transform cancels only between two transformed
  // operands of one contraction (TE's wgrad).
  bool lhsRht = !lhsRow && lhs.getRht(), rhsRht = !rhsRow && rhs.getRht();
  if (lhsRht != rhsRht)
    return op.emitOpError()
           << "the " << stringifyGemmLayout(op.getLayout()) << " GEMM reads "
           << (lhsRht ? "lhs" : "rhs")
           << "'s Hadamard-transformed (rht) columnwise copy but an "
              "untransformed "
           << (lhsRht ? "rhs" : "lhs")
           << "; the transform cancels only when both operands carry it";
  return success();
}

/// The weight operand of an fprop (`tn`) or dgrad (`nn`) GEMM: a static
/// [N, K] matrix whose K (fprop) or N (dgrad) is the lhs's features `lhsK`;
/// returns (N, K).
static FailureOr<std::pair<int64_t, int64_t>>
verifyWeight(Operation *op, RankedTensorType rhs, int64_t lhsK, bool tn) {
  if (rhs.getRank() != 2 || !rhs.hasStaticShape())
    return op->emitOpError() << "rhs (the weight) must be a static [N, K] "
                                "matrix, got "
                             << rhs;
  int64_t n = rhs.getDimSize(0), k = rhs.getDimSize(1);
  if (lhsK != (tn ? k : n))
    return op->emitOpError()
           << "lhs features " << lhsK << " do not match the "
           << (tn ? "weight's in_features " : "weight's out_features ")
           << (tn ? k : n);
  return std::make_pair(n, k);
}

LogicalResult GemmOp::verify() {
  if (failed(verifyQuantizedGemm(*this)))
    return failure();
  if (getFastAccumulate()) {
    auto lhs = dyn_cast<QuantizedTensorType>(getLhs().getType());
    if (!lhs || !isa<FP8DelayedRecipeAttr, FP8CurrentRecipeAttr>(
                    lhs.getRecipe()))
      return emitOpError() << "fast_accumulate applies to per-tensor FP8 "
                              "GEMMs (TE forces split accumulation for the "
                              "others)";
  }
  Shapes s{*this};
  s.quantizedElement = getResult().getType().getElementType();
  RankedTensorType lhs = s.type(getLhs()), rhs = s.type(getRhs());
  Type e = lhs.getElementType();
  FailureOr<int64_t> lhsK = s.features("lhs", getLhs());
  if (failed(lhsK))
    return failure();
  if (rhs.getElementType() != e)
    return emitOpError() << "rhs element type " << rhs.getElementType()
                         << " does not match lhs " << e;
  if (getBias() && getLayout() != GemmLayout::TN)
    return emitOpError() << "only the tn (fprop) GEMM takes a bias";
  if (getAccumulate() && getLayout() != GemmLayout::NT)
    return emitOpError() << "only the nt (wgrad) GEMM accumulates into "
                            "main_grad";
  if (getBiasGrad() && getLayout() != GemmLayout::NT)
    return emitOpError() << "only the nt (wgrad) GEMM produces a bias "
                            "gradient";
  if (getBiasGrad() &&
      failed(s.expectShape("bias_grad", getBiasGrad(), {*lhsK}, e)))
    return failure();
  switch (getLayout()) {
  case GemmLayout::TN:
  case GemmLayout::NN: {
    bool tn = getLayout() == GemmLayout::TN;
    FailureOr<std::pair<int64_t, int64_t>> nk =
        verifyWeight(*this, rhs, *lhsK, tn);
    if (failed(nk))
      return failure();
    auto [n, k] = *nk;
    if (getBias() && failed(s.expectShape("bias", getBias(), {n}, e)))
      return failure();
    return s.expectShape("result", getResult(),
                         Shapes::withLast(lhs, tn ? n : k), e);
  }
  case GemmLayout::NT: {
    FailureOr<int64_t> k = s.features("rhs", getRhs());
    if (failed(k))
      return failure();
    if (lhs.getShape().drop_back() != rhs.getShape().drop_back())
      return emitOpError() << "lhs (dy) and rhs (x) must have the same "
                              "leading dims, got "
                           << lhs << " and " << rhs;
    if (getAccumulate()) {
      // main + dy^T . x in fp32 (Megatron's main_grad).
      Type f32 = Float32Type::get(getContext());
      if (getBiasGrad())
        return emitOpError() << "a GEMM accumulating into main_grad produces "
                                "no bias gradient";
      if (failed(
              s.expectShape("accumulate", getAccumulate(), {*lhsK, *k}, f32)))
        return failure();
      return s.expectShape("result", getResult(), {*lhsK, *k}, f32);
    }
    return s.expectShape("result", getResult(), {*lhsK, *k}, e);
  }
  }
  llvm_unreachable("unknown layout");
}

/// The rules te.gemm_act and te.gemm_dact share: gelu only (cuBLASLt's
/// epilogues), high-precision operands of one element type, the weight a
/// static [N, K] matrix matching the lhs's features (`tn`: fprop, x
/// [..., K]; otherwise dgrad, dy [..., N]); returns (N, K).
template <typename OpTy>
static FailureOr<std::pair<int64_t, int64_t>> verifyGemmEpilogue(OpTy op,
                                                                 bool tn) {
  if (failed(verifyNoLooseActivationParams(op)))
    return failure();
  if (!op.getActivation().hasGemmEpilogue())
    return op.emitOpError()
           << "activation must be gelu (cuBLASLt's GEMM epilogue computes "
              "GELU, the tanh approximation, only), got "
           << op.getActivation().getActivationName();
  Shapes s{op};
  FailureOr<int64_t> lhsK = s.features("lhs", op.getLhs());
  if (failed(lhsK))
    return failure();
  RankedTensorType lhs = s.type(op.getLhs()), rhs = s.type(op.getRhs());
  if (rhs.getElementType() != lhs.getElementType())
    return op.emitOpError() << "rhs element type " << rhs.getElementType()
                            << " does not match lhs " << lhs.getElementType();
  return verifyWeight(op, rhs, *lhsK, tn);
}

LogicalResult GemmActOp::verify() {
  FailureOr<std::pair<int64_t, int64_t>> nk =
      verifyGemmEpilogue(*this, /*tn=*/true);
  if (failed(nk))
    return failure();
  Shapes s{*this};
  RankedTensorType x = s.type(getLhs());
  Type e = x.getElementType();
  int64_t n = nk->first;
  if ((getBias() && failed(s.expectShape("bias", getBias(), {n}, e))) ||
      failed(s.expectShape("result", getResult(), Shapes::withLast(x, n), e)))
    return failure();
  return getPre() ? s.expect("pre", getPre(), getResult().getType())
                  : success();
}

LogicalResult GemmDActOp::verify() {
  FailureOr<std::pair<int64_t, int64_t>> nk =
      verifyGemmEpilogue(*this, /*tn=*/false);
  if (failed(nk))
    return failure();
  Shapes s{*this};
  RankedTensorType dy = s.type(getLhs());
  Type e = dy.getElementType();
  if (failed(
          s.expectShape("pre", getPre(), Shapes::withLast(dy, nk->second), e)))
    return failure();
  return s.expect("result", getResult(), getPre().getType());
}

/// The activation ops' shared rules: `input` is [..., K], the parameters
/// belong to clamped_swiglu; returns the input type and the activation's
/// output shape ([..., K/2] for gated activations).
template <typename OpTy>
static FailureOr<std::pair<RankedTensorType, SmallVector<int64_t>>>
verifyActivationOp(OpTy op) {
  Shapes s{op};
  FailureOr<int64_t> k = s.features("input", op.getInput());
  if (failed(k) || failed(verifyNoLooseActivationParams(op)))
    return failure();
  FailureOr<int64_t> f = activationOutput(op, op.getActivation(), *k);
  if (failed(f))
    return failure();
  RankedTensorType x = s.type(op.getInput());
  return std::make_pair(x, Shapes::withLast(x, *f));
}

/// The optional `amax` result of a producer op: max |result| as one fp32.
static LogicalResult verifyAmaxResult(Operation *op, Value amax) {
  if (!amax)
    return success();
  Type expected = RankedTensorType::get({1}, Float32Type::get(op->getContext()));
  if (amax.getType() != expected)
    return op->emitOpError() << "amax result must be " << expected << ", got "
                             << amax.getType();
  return success();
}

LogicalResult ActOp::verify() {
  auto v = verifyActivationOp(*this);
  if (failed(v) || failed(verifyAmaxResult(*this, getAmax())))
    return failure();
  auto [x, out] = *v;
  return Shapes{*this}.expectShape("result", getResult(), out,
                                   x.getElementType());
}

LogicalResult DActOp::verify() {
  auto v = verifyActivationOp(*this);
  if (failed(v) || failed(verifyAmaxResult(*this, getAmax())))
    return failure();
  auto [x, out] = *v;
  Shapes s{*this};
  if (failed(s.expectShape("grad", getGrad(), out, x.getElementType())))
    return failure();
  return s.expect("result", getResult(), x);
}

LogicalResult DBiasDActOp::verify() {
  if (!getActivation().hasDbiasFusion())
    return emitOpError() << "has no fused form for gated activation "
                         << getActivation().getActivationName();
  auto v = verifyActivationOp(*this);
  if (failed(v) || failed(verifyAmaxResult(*this, getAmax())))
    return failure();
  RankedTensorType x = v->first;
  Shapes s{*this};
  if (failed(s.expect("grad", getGrad(), x)) ||
      failed(s.expect("result", getResult(), x)))
    return failure();
  return s.expectShape("bias_grad", getBiasGrad(), {x.getShape().back()},
                       x.getElementType());
}

/// The result of a fused activation + delayed-scaling cast: a per-tensor
/// FP8 tensor under #te.fp8_delayed of the activation's output shape `out`
/// (element type `e` only for messages), scaled by `scales[slot]`.
template <typename OpTy>
static LogicalResult verifyDelayedCast(OpTy op, ArrayRef<int64_t> out, Type e) {
  auto q = cast<QuantizedTensorType>(op.getResult().getType());
  RecipeAttrInterface recipe = q.getRecipe();
  if (isa<FP8CurrentRecipeAttr>(recipe))
    return op.emitOpError()
           << "casts with fp8-delayed's given scale, got "
           << recipe.getRecipeName()
           << ": current scaling computes its scale from the amax first; "
              "te-fuse-quantize-amax handles it";
  if (!isa<FP8DelayedRecipeAttr>(recipe))
    return op.emitOpError()
           << "casts with fp8-delayed's given scale, got "
           << recipe.getRecipeName()
           << ", which scales blocks (use te.quantize of the activation)";
  if (q.getShape() != out)
    return op.emitOpError() << "result shape must be the activation's output ("
                            << RankedTensorType::get(out, e) << "), got " << q;
  if (failed(verifySlot(op, op.getScales(), op.getSlot())))
    return failure();
  return verifyAmaxResult(op, op.getAmax());
}

LogicalResult ActQuantizeOp::verify() {
  auto v = verifyActivationOp(*this);
  if (failed(v))
    return failure();
  auto [x, out] = *v;
  return verifyDelayedCast(*this, out, x.getElementType());
}

LogicalResult DActQuantizeOp::verify() {
  auto v = verifyActivationOp(*this);
  if (failed(v))
    return failure();
  auto [x, out] = *v;
  Shapes s{*this};
  if (failed(s.expectShape("grad", getGrad(), out, x.getElementType())) ||
      failed(verifyDelayedCast(*this, x.getShape(), x.getElementType())))
    return failure();
  if (!getBiasGrad())
    return success();
  if (!getActivation().hasDbiasFusion())
    return emitOpError() << "bias_grad is only for non-gated activations "
                            "(gated activation "
                         << getActivation().getActivationName()
                         << " has no fused dbias+dact kernel)";
  return s.expectShape("bias_grad", getBiasGrad(), {x.getShape().back()},
                       x.getElementType());
}

LogicalResult DBiasQuantizeOp::verify() {
  Shapes s{*this};
  FailureOr<int64_t> n = s.features("input", getInput());
  if (failed(n))
    return failure();
  RankedTensorType x = s.type(getInput());
  auto q = cast<QuantizedTensorType>(getResult().getType());
  RecipeAttrInterface recipe = q.getRecipe();
  if (!isa<FP8DelayedRecipeAttr, FP8CurrentRecipeAttr>(recipe))
    return emitOpError() << "casts to per-tensor FP8 (fp8-delayed or "
                            "fp8-current), got "
                         << recipe.getRecipeName()
                         << ", which scales blocks (use te.quantize and "
                            "te.bias_grad)";
  if (q.getShape() != x.getShape())
    return emitOpError() << "result shape must be the input's (" << x
                         << "), got " << q;
  if (failed(verifyStateScale(*this, recipe, "its scale from the amax")) ||
      failed(verifyAmaxResult(*this, getAmax())))
    return failure();
  return s.expectShape("bias_grad", getBiasGrad(), {*n}, x.getElementType());
}

LogicalResult NormQuantizeOp::verify() {
  FailureOr<RankedTensorType> x = verifyNormFwd(*this);
  if (failed(x))
    return failure();
  auto q = cast<QuantizedTensorType>(getResult().getType());
  RecipeAttrInterface recipe = q.getRecipe();
  if (!isa<FP8DelayedRecipeAttr, FP8CurrentRecipeAttr>(recipe))
    return emitOpError() << "casts to per-tensor FP8 (fp8-delayed or "
                            "fp8-current), got "
                         << recipe.getRecipeName()
                         << ", which scales blocks (use te.quantize of the "
                            "norm output)";
  if (q.getShape() != x->getShape())
    return emitOpError() << "result shape must be the input's (" << *x
                         << "), got " << q;
  if (failed(
          verifyStateScale(*this, recipe, "its scale from the output's amax")))
    return failure();
  return verifyAmaxResult(*this, getAmax());
}

LogicalResult BiasGradOp::verify() {
  Shapes s{*this};
  FailureOr<int64_t> n = s.features("grad", getGrad());
  if (failed(n))
    return failure();
  return s.expectShape("result", getResult(), {*n},
                       s.type(getGrad()).getElementType());
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

namespace {
/// The rules of a collective: a group of 2..kMaxTensorParallelSize ranks, a
/// ranked input of rank >= 1 and a result of the same element type whose
/// dims past the first are the input's. Dim 0 of the result is
/// `in * mul / div` (static when the input's is, dynamic otherwise).
LogicalResult verifyCollective(Operation *op, Value input, Value result,
                               int64_t size, int64_t mul, int64_t div) {
  if (size < 2 || size > kMaxTensorParallelSize)
    return op->emitOpError() << "group size must be in [2, "
                             << kMaxTensorParallelSize << "], got " << size;
  auto in = cast<RankedTensorType>(input.getType());
  auto out = cast<RankedTensorType>(result.getType());
  if (in.getRank() < 1)
    return op->emitOpError() << "input must have rank >= 1, got " << in;
  SmallVector<int64_t> shape(in.getShape());
  if (!ShapedType::isDynamic(shape[0])) {
    if (shape[0] % div != 0)
      return op->emitOpError()
             << "input dim 0 (" << shape[0] << ") must be a multiple of the "
             << "group size " << size;
    shape[0] = shape[0] / div * mul;
  }
  auto expected = RankedTensorType::get(shape, in.getElementType());
  if (out != expected)
    return op->emitOpError() << "result must be " << expected << ", got "
                             << out;
  return success();
}
} // namespace

LogicalResult AllGatherOp::verify() {
  return verifyCollective(*this, getInput(), getResult(), getGroupSize(),
                          getGroupSize(), 1);
}

LogicalResult ReduceScatterOp::verify() {
  return verifyCollective(*this, getInput(), getResult(), getGroupSize(), 1,
                          getGroupSize());
}

LogicalResult AllReduceOp::verify() {
  return verifyCollective(*this, getInput(), getResult(), getGroupSize(), 1,
                          1);
}

LogicalResult BiasAddOp::verify() {
  Shapes s{*this};
  FailureOr<int64_t> n = s.features("input", getInput());
  if (failed(n))
    return failure();
  Type element = s.type(getInput()).getElementType();
  if (failed(s.expectShape("bias", getBias(), {*n}, element)))
    return failure();
  return s.expect("result", getResult(), getInput().getType());
}
