//===- Decompose.cpp - te-decompose: module ops to primitives ---*- C++ -*-===//
//
// Rewrites module ops, their backward ops and te.recompute regions into the
// L2 primitives in TransformerEngine's kernel order (reference §1.3, §1.5,
// §2.3, §2.5): norm, GEMMs in TN/NN/NT, activation and its derivative, bias
// gradients. te.saved intermediates become the primitive values that compute
// them. The per-tensor FP8 recipes, Float8 block scaling and MXFP8 quantize
// GEMM operands with te.quantize (reference §0.1, §0.2, §4.3, §4.4); so
// does NVFP4 (§4.5: 16x16 weight blocks, the Hadamard transform on wgrad
// copies, stochastic rounding of gradients), except row-scaled NVFP4.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEDECOMPOSEPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// The architecture class a recipe is lowered for: MXFP8 GEMMs exist on
/// Blackwell only; the FP8 recipes are lowered in Hopper's layout (TN-only
/// GEMMs: a transposed copy per columnwise use).
TargetArch archOf(RecipeAttrInterface recipe) {
  return isa<MXFP8RecipeAttr, NVFP4RecipeAttr>(recipe) ? TargetArch::Blackwell
                                                       : TargetArch::Hopper;
}

/// te-compile's --arch spelling of an architecture class.
StringRef smName(TargetArch arch) { return getTargetName(arch); }

/// How an op's GEMM operands are quantized: not at all (null recipe), or
/// under an FP8 recipe with, for delayed scaling, the op's scales.
struct Quant {
  RecipeAttrInterface recipe;
  Value scales;
  explicit operator bool() const { return bool(recipe); }
};

/// The quantization `op` runs with: none for unquantized recipes, alignment
/// fallbacks (the module op says so) and backward ops on high-precision
/// saved tensors; per-tensor FP8 and fp8-block for `target` Hopper, MXFP8
/// for Blackwell; an error otherwise.
FailureOr<Quant> quantOf(Operation *op, RecipeAttrInterface recipe,
                         Value scales, bool isForward, TargetArch target) {
  if (!recipe || !recipe.isQuantized())
    return Quant{};
  if (isForward) {
    ModuleDescription d =
        cast<ModuleOpInterface>(op).describe(DescribeOptions());
    if (!d.fallback.empty())
      return Quant{};
  } else if (llvm::none_of(op->getOperandTypes(), [](Type t) {
               return isa<QuantizedTensorType>(t);
             })) {
    return Quant{};
  }
  if (auto nvfp4 = dyn_cast<NVFP4RecipeAttr>(recipe);
      nvfp4 && nvfp4.getRowScaled())
    return op->emitError() << "te-decompose: row-scaled nvfp4 (one amax per "
                              "row, TE's high-precision backward) is not "
                              "decomposed yet; nvfp4 without row_scaled is";
  if (isa<FP8DelayedRecipeAttr>(recipe) && !scales)
    return op->emitError() << "te-decompose: an fp8-delayed op needs its "
                              "scales (the recipe state); run "
                              "te-thread-recipe-state or te-generate-backward "
                              "first (te-compile does)";
  TargetArch arch = archOf(recipe);
  StringRef why = arch == TargetArch::Hopper
                      ? "Hopper's TN-only GEMMs (a transposed copy per "
                        "columnwise operand)"
                      : "Blackwell (its GEMMs do not run on Hopper)";
  if (target != arch)
    return op->emitError() << "te-decompose: " << recipe.getRecipeName()
                           << " is lowered for " << why
                           << ", not for the " << stringifyTargetArch(target)
                           << " layout asked for (te-compile --arch="
                           << smName(arch) << ", te-opt arch="
                           << stringifyTargetArch(arch) << ")";
  auto wrongArch = [&](Operation *at, QuantizedTensorType q) {
    return at->emitError()
           << "te-decompose: " << recipe.getRecipeName() << " is lowered for "
           << why << "; " << q << " has another layout (te-compile --arch="
           << smName(arch) << ")";
  };
  for (Type t : llvm::concat<Type>(op->getOperandTypes(),
                                   op->getResultTypes()))
    if (auto q = dyn_cast<QuantizedTensorType>(t); q && q.getArch() != arch)
      return wrongArch(op, q);
  for (Operation *user : op->getUsers())
    if (auto saved = dyn_cast<SavedOp>(user))
      if (auto q = dyn_cast<QuantizedTensorType>(saved.getType());
          q && q.getArch() != arch)
        return wrongArch(saved, q);
  return Quant{recipe, scales};
}

class Decomposer {
public:
  Decomposer(OpBuilder &b, TargetArch arch) : b(b), arch(arch) {}

  LogicalResult run(func::FuncOp func);

private:
  LogicalResult inlineRecompute(RecomputeOp op);
  LogicalResult forward(Operation *op);
  LogicalResult backward(Operation *op);

  struct Norm {
    Value out, rsigma, mu;
  };
  Norm norm(Location loc, Value x, Value gamma, Value beta,
            NormalizationKind kind, APFloat eps, bool zeroCentered) {
    SmallVector<Type> types = {x.getType(), rowsVector(x)};
    if (kind == NormalizationKind::LayerNorm)
      types.push_back(rowsVector(x));
    auto op = NormFwdOp::create(b, loc, types, x, gamma, beta, kind, eps,
                                zeroCentered);
    return {op.getOutput(), op.getRsigma(), op.getMu()};
  }
  /// One GEMM; its result is in `element` (default: lhs's element type,
  /// required when lhs is quantized).
  Value gemm(Location loc, GemmLayout layout, Value lhs, Value rhs,
             Value bias = {}, Type element = {}) {
    // TE's per-tensor FP8 fprop accumulates fast (use_split_accumulator
    // False for fprop; dgrad and wgrad split; block scaling always splits).
    bool fast = false;
    if (auto q = dyn_cast<QuantizedTensorType>(lhs.getType()))
      fast = layout == GemmLayout::TN &&
             isa<FP8DelayedRecipeAttr, FP8CurrentRecipeAttr>(q.getRecipe());
    ArrayRef<int64_t> l = shapeOf(lhs), r = shapeOf(rhs);
    SmallVector<int64_t> shape(l);
    switch (layout) {
    case GemmLayout::TN:
      shape.back() = r[0];
      break;
    case GemmLayout::NN:
      shape.back() = r[1];
      break;
    case GemmLayout::NT:
      shape = {l.back(), r.back()};
      break;
    }
    if (!element)
      element = cast<RankedTensorType>(lhs.getType()).getElementType();
    return GemmOp::create(b, loc, RankedTensorType::get(shape, element),
                          /*bias_grad=*/Type(), lhs, rhs, bias, layout, fast)
        .getResult();
  }
  static ArrayRef<int64_t> shapeOf(Value v) {
    if (auto q = dyn_cast<QuantizedTensorType>(v.getType()))
      return q.getShape();
    return cast<RankedTensorType>(v.getType()).getShape();
  }
  static Type elementOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  }
  /// Quantizes `x` under `q` (the backward format for gradients) at
  /// quantizer `slot`; the result type is that of the te.saved `name` of
  /// `source` when there is one (the bundle's usage), else rowwise.
  /// Appends the amax to `amaxes[slot]`.
  /// `*saveOut` (when given) is the value to save under `name`.
  Value quantize(Location loc, Value x, const Quant &q, bool grad,
                 int64_t slot, SmallVectorImpl<Value> &amaxes,
                 QuantUsage usage = QuantUsage::Rowwise, Value source = {},
                 StringRef name = {}, Value *saveOut = nullptr) {
    Type type;
    if (source)
      for (Operation *user : source.getUsers())
        if (auto saved = dyn_cast<SavedOp>(user);
            saved && saved.getName() == name)
          type = saved.getType();
    bool weight = name.ends_with("weight");
    auto nvfp4 = dyn_cast<NVFP4RecipeAttr>(q.recipe);
    if (!type) {
      // Float8 block scaling picks 1x128 or 128x128 blocks per role, NVFP4
      // 16x16 blocks for weights and the Hadamard transform for the wgrad
      // copies of the others.
      bool block2d = false, rht = false;
      if (auto block = dyn_cast<FP8BlockRecipeAttr>(q.recipe))
        block2d = (grad     ? block.getGradBlockDim()
                   : weight ? block.getWBlockDim()
                            : block.getXBlockDim()) == 2;
      if (nvfp4) {
        block2d = weight && nvfp4.getWeight_2d();
        rht = !weight && nvfp4.getRht() && usage != QuantUsage::Rowwise;
      }
      // MXFP8's and NVFP4's scales are kept in cuBLAS's order, as TE's
      // quantizers write them for GEMMs (optimize_for_gemm).
      type = QuantizedTensorType::get(
          b.getContext(), shapeOf(x),
          grad ? getBackwardFormat(q.recipe) : getForwardFormat(q.recipe),
          q.recipe, usage, arch, block2d,
          /*swizzled=*/isa<MXFP8RecipeAttr, NVFP4RecipeAttr>(q.recipe), false,
          rht);
    }
    // The GEMM here reads the usage asked for; a save that keeps only the
    // other one (TE's update_usage before saving) is a view of both.
    auto qt = cast<QuantizedTensorType>(type);
    Type produced = qt;
    if (qt.getUsage() != QuantUsage::Both && qt.getUsage() != usage)
      produced = qt.withUsage(QuantUsage::Both);
    // Per-tensor recipes record the amax; the block-scaled ones are
    // stateless.
    Type amaxType;
    if (isa<FP8DelayedRecipeAttr, FP8CurrentRecipeAttr>(q.recipe))
      amaxType = RankedTensorType::get({1}, b.getF32Type());
    // NVFP4 rounds gradients stochastically, each quantization from its
    // own stream of random bits.
    bool stochastic = grad && nvfp4 && nvfp4.getStochasticRounding();
    auto op = QuantizeOp::create(
        b, loc, produced, amaxType, x, q.scales, /*amax_in=*/Value(),
        q.scales ? b.getI64IntegerAttr(slot) : IntegerAttr(), weight,
        stochastic,
        stochastic ? b.getI64IntegerAttr(nextSeed++) : IntegerAttr());
    if (op.getAmax()) {
      if (slot >= int64_t(amaxes.size()))
        amaxes.resize(slot + 1);
      amaxes[slot] = op.getAmax();
    }
    if (saveOut)
      *saveOut = produced == type ? op.getResult()
                                  : DropUsageOp::create(b, loc, type,
                                                        op.getResult())
                                        .getResult();
    return op.getResult();
  }
  /// Replaces the te.amax users of `source` with the vector of `amaxes`
  /// (one tensor<1xf32> per quantizer slot, 0 where none was recorded).
  /// Under tensor parallelism the amaxes are the group's maximum (TE's
  /// reduce_amax over the TP group), so every rank's history and scales
  /// stay the same.
  LogicalResult replaceAmax(Value source, ArrayRef<Value> amaxes,
                            TensorParallelAttr tp = {}) {
    for (Operation *user : llvm::make_early_inc_range(source.getUsers())) {
      auto amax = dyn_cast<AmaxOp>(user);
      if (!amax)
        continue;
      int64_t n = amax.getType().getDimSize(0);
      if (int64_t(amaxes.size()) > n)
        return amax.emitError() << "te-decompose: " << amaxes.size()
                                << " quantizer slots recorded, te.amax has "
                                << n;
      b.setInsertionPoint(amax);
      auto one = RankedTensorType::get({1}, b.getF32Type());
      Value zero;
      SmallVector<Value> parts;
      for (int64_t i = 0; i < n; ++i) {
        Value v = i < int64_t(amaxes.size()) ? amaxes[i] : Value();
        if (!v) {
          if (!zero)
            zero = arith::ConstantOp::create(
                b, amax.getLoc(), DenseElementsAttr::get(one, 0.0f));
          v = zero;
        }
        parts.push_back(v);
      }
      Value all = parts.size() == 1
                      ? parts[0]
                      : tensor::ConcatOp::create(b, amax.getLoc(), 0, parts)
                            .getResult();
      if (tp) {
        placed(amax.getLoc(), "all-reduce (max)", tp,
               "the recorded amaxes, before their history update");
        all = AllReduceOp::create(b, amax.getLoc(), all.getType(), all,
                                  tp.getSize(), /*max=*/true);
      }
      amax.replaceAllUsesWith(all);
      amax.erase();
    }
    return success();
  }
  Value biasGrad(Location loc, Value dy) {
    auto t = cast<RankedTensorType>(dy.getType());
    return BiasGradOp::create(
        b, loc, RankedTensorType::get({t.getShape().back()}, t.getElementType()),
        dy);
  }
  /// Collectives of a tensor-parallel op (reference/tensor-parallel.md
  /// §1-2): dim 0 gathered from, or reduce-scattered to, the group's ranks;
  /// all-reduced sums. Identity without `tp`.
  static RankedTensorType withDim0(Value v, int64_t mul, int64_t div) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(t.getShape());
    if (!ShapedType::isDynamic(shape[0]))
      shape[0] = shape[0] / div * mul;
    return RankedTensorType::get(shape, t.getElementType());
  }
  /// Each collective placed is a remark saying what and why.
  static void placed(Location loc, StringRef collective, TensorParallelAttr tp,
                     StringRef what) {
    emitRemark(loc) << "te-decompose: " << collective << " over "
                    << tp.getSize() << " ranks: " << what;
  }
  Value allGather(Location loc, Value v, TensorParallelAttr tp,
                  StringRef what) {
    if (!tp || !tp.getSequenceParallel())
      return v;
    placed(loc, "all-gather", tp, what);
    return AllGatherOp::create(b, loc, withDim0(v, tp.getSize(), 1), v,
                               tp.getSize());
  }
  /// A row-parallel GEMM's partial sums: reduce-scattered with sequence
  /// parallelism, else all-reduced.
  Value reducePartial(Location loc, Value v, TensorParallelAttr tp,
                      StringRef what) {
    if (!tp)
      return v;
    if (tp.getSequenceParallel()) {
      placed(loc, "reduce-scatter", tp, what);
      return ReduceScatterOp::create(b, loc, withDim0(v, 1, tp.getSize()), v,
                                     tp.getSize());
    }
    placed(loc, "all-reduce", tp, what);
    return AllReduceOp::create(b, loc, v.getType(), v, tp.getSize());
  }
  /// A parameter gradient that is a partial sum under sequence parallelism:
  /// all-reduced when the layout asks for it, else returned partial.
  Value reduceParamGrad(Location loc, Value g, TensorParallelAttr tp,
                        StringRef what) {
    if (!g || !tp || !tp.getReduceParamGrads())
      return g;
    placed(loc, "all-reduce", tp, what);
    return AllReduceOp::create(b, loc, g.getType(), g, tp.getSize());
  }
  /// fp32 [rows] with the rows of `x` (dynamic if any leading dim is).
  Type rowsVector(Value x) {
    auto t = cast<RankedTensorType>(x.getType());
    int64_t m = 1;
    for (int64_t d : t.getShape().drop_back())
      m = ShapedType::isDynamic(d) || ShapedType::isDynamic(m)
              ? ShapedType::kDynamic
              : m * d;
    return RankedTensorType::get({m}, b.getF32Type());
  }
  /// Replaces the te.saved users of `source` with the named values.
  LogicalResult replaceSaved(Value source,
                             const llvm::StringMap<Value> &values) {
    for (Operation *user : llvm::make_early_inc_range(source.getUsers())) {
      auto saved = dyn_cast<SavedOp>(user);
      if (!saved)
        continue;
      Value v = values.lookup(saved.getName());
      if (!v || v.getType() != saved.getType())
        return saved.emitError() << "te-decompose: no value for saved tensor '"
                                 << saved.getName() << "'";
      saved.replaceAllUsesWith(v);
      saved.erase();
    }
    return success();
  }
  static SmallVector<Value> concat(std::initializer_list<Value> values) {
    SmallVector<Value> out;
    for (Value v : values)
      if (v)
        out.push_back(v);
    return out;
  }

  OpBuilder &b;
  /// The architecture class quantized values are laid out for.
  TargetArch arch;
  /// The seed of the function's next stochastically rounded quantization.
  int64_t nextSeed = 0;
};

LogicalResult Decomposer::inlineRecompute(RecomputeOp op) {
  Block &body = op.getBody().front();
  IRMapping map;
  for (auto [arg, input] : llvm::zip(body.getArguments(), op.getInputs()))
    map.map(arg, input);
  b.setInsertionPoint(op);
  for (Operation &inner : body.without_terminator())
    b.clone(inner, map);
  auto yield = cast<YieldOp>(body.getTerminator());
  for (auto [result, value] : llvm::zip(op.getResults(), yield.getValues()))
    result.replaceAllUsesWith(map.lookup(value));
  op.erase();
  return success();
}

LogicalResult Decomposer::forward(Operation *op) {
  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  llvm::StringMap<Value> saved;
  SmallVector<Value> results, amaxes;
  Value source = op->getResult(0);
  // TE's forward quantizer slots (§0.2): GEMM1 input, weight, output, then
  // GEMM2's.
  if (auto ln = dyn_cast<LayerNormLinearOp>(op)) {
    FailureOr<Quant> q =
        quantOf(op, ln.getRecipeAttr(), ln.getScales(), true, arch);
    if (failed(q))
      return failure();
    Norm n = norm(loc, ln.getInput(), ln.getLnWeight(), ln.getLnBias(),
                  ln.getNormalization(), ln.getEps(), ln.getZeroCenteredGamma());
    // Column-parallel (§2): the sequence-parallel norm output is gathered
    // before the GEMM; the rank's rows are what is saved.
    Value lhs = allGather(loc, n.out, ln.getTpAttr(),
                          "the norm output's rows, before the GEMM"),
          w = ln.getWeight(),
          lnSaved = n.out, wSaved = w;
    if (*q) {
      // Quantized after the gather: the amax is the group's (TE reduces it
      // over the group before the scale); saved gathered.
      lhs = quantize(loc, lhs, *q, false, 0, amaxes, QuantUsage::Rowwise,
                     source, "ln_out", &lnSaved);
      w = quantize(loc, w, *q, false, 1, amaxes, QuantUsage::Rowwise, source,
                   "weight", &wSaved);
    }
    Value y = gemm(loc, GemmLayout::TN, lhs, w, ln.getBias(),
                   elementOf(n.out));
    saved = {{"ln_out", lnSaved}, {"weight", wSaved}, {"rsigma", n.rsigma},
             {"mu", n.mu}};
    results = concat({y, ln.getLnOutput() ? n.out : Value()});
  } else if (auto mlp = dyn_cast<LayerNormMLPOp>(op)) {
    FailureOr<Quant> q =
        quantOf(op, mlp.getRecipeAttr(), mlp.getScales(), true, arch);
    if (failed(q))
      return failure();
    Norm n = norm(loc, mlp.getInput(), mlp.getLnWeight(), mlp.getLnBias(),
                  mlp.getNormalization(), mlp.getEps(),
                  mlp.getZeroCenteredGamma());
    Type element = elementOf(n.out);
    TensorParallelAttr tp = mlp.getTpAttr();
    // FC1 column-parallel on the gathered rows, FC2 row-parallel (§1).
    Value lhs = allGather(loc, n.out, tp,
                          "the norm output's rows, before FC1"),
          w1 = mlp.getFc1Weight(),
          w2 = mlp.getFc2Weight();
    Value lnSaved = n.out, w1Saved = w1, w2Saved = w2;
    if (*q) {
      // Quantized after the gather, with the group's amax; saved gathered.
      lhs = quantize(loc, lhs, *q, false, 0, amaxes, QuantUsage::Rowwise,
                     source, "ln_out", &lnSaved);
      w1 = quantize(loc, w1, *q, false, 1, amaxes, QuantUsage::Rowwise, source,
                    "fc1_weight", &w1Saved);
    }
    Value fc1 = gemm(loc, GemmLayout::TN, lhs, w1, mlp.getFc1Bias(), element);
    auto fc1Type = cast<RankedTensorType>(fc1.getType());
    SmallVector<int64_t> actShape(fc1Type.getShape());
    actShape.back() = mlp.getFfnSize();
    Value act = ActOp::create(
        b, loc, RankedTensorType::get(actShape, element), /*amax=*/Type(), fc1,
        mlp.getActivation()).getResult();
    Value act2 = act, actSaved = act;
    if (*q) {
      act2 = quantize(loc, act, *q, false, 3, amaxes, QuantUsage::Rowwise,
                      source, "act_out", &actSaved);
      w2 = quantize(loc, w2, *q, false, 4, amaxes, QuantUsage::Rowwise, source,
                    "fc2_weight", &w2Saved);
    }
    Value y;
    if (tp) {
      // The bias is added after the reduction of the partial sums (TE's
      // gemm_bias_unfused_add).
      y = reducePartial(loc, gemm(loc, GemmLayout::TN, act2, w2, {}, element),
                        tp, "FC2's partial sums (its bias added after)");
      if (Value b2 = mlp.getFc2Bias())
        y = BiasAddOp::create(b, loc, y.getType(), y, b2);
    } else {
      y = gemm(loc, GemmLayout::TN, act2, w2, mlp.getFc2Bias(), element);
    }
    saved = {{"ln_out", lnSaved},   {"fc1_weight", w1Saved},
             {"fc1_out", fc1},      {"act_out", actSaved},
             {"fc2_weight", w2Saved}, {"rsigma", n.rsigma}, {"mu", n.mu}};
    results = concat({y, mlp.getLnOutput() ? n.out : Value()});
  } else if (auto lin = dyn_cast<LinearOp>(op)) {
    FailureOr<Quant> q =
        quantOf(op, lin.getRecipeAttr(), lin.getScales(), true, arch);
    if (failed(q))
      return failure();
    Value x = lin.getInput(), w = lin.getWeight(), xSaved = x, wSaved = w;
    Type element = elementOf(x);
    if (*q) {
      x = quantize(loc, x, *q, false, 0, amaxes, QuantUsage::Rowwise, source,
                   "input", &xSaved);
      w = quantize(loc, w, *q, false, 1, amaxes, QuantUsage::Rowwise, source,
                   "weight", &wSaved);
    }
    saved = {{"input", xSaved}, {"weight", wSaved}};
    results = {gemm(loc, GemmLayout::TN, x, w, lin.getBias(), element)};
  }
  if (failed(replaceSaved(source, saved)) ||
      failed(replaceAmax(source, amaxes,
                         op->getAttrOfType<TensorParallelAttr>("tp"))))
    return failure();
  op->replaceAllUsesWith(results);
  op->erase();
  return success();
}

LogicalResult Decomposer::backward(Operation *op) {
  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  SmallVector<Value> grads, amaxes;
  // TE's backward quantizer slots (§0.2): GRAD_OUTPUT1, GRAD_INPUT1, then
  // GRAD_OUTPUT2, GRAD_INPUT2 (FC2's in an MLP). Gradients are quantized
  // with both usages: the dgrad GEMM reads them rowwise, wgrad columnwise.
  auto quantizeGrad = [&](Value g, const Quant &q, int64_t slot) {
    return q ? quantize(loc, g, q, true, slot, amaxes, QuantUsage::Both) : g;
  };
  if (auto ln = dyn_cast<LayerNormLinearBwdOp>(op)) {
    FailureOr<Quant> q =
        quantOf(op, ln.getRecipeAttr(), ln.getScales(), false, arch);
    if (failed(q))
      return failure();
    Value dy = ln.getGradOutput();
    Type element = elementOf(dy);
    TensorParallelAttr tp = ln.getTpAttr();
    Value dyq = quantizeGrad(dy, *q, 0);
    // The wgrad reads the norm output gathered again from the saved rows
    // (§2; issued first, as TE's async gather); the dgrad is a partial sum
    // over the ranks' features.
    Value lnOut = isa<QuantizedTensorType>(ln.getLnOut().getType())
                      ? ln.getLnOut() // saved gathered
                      : allGather(loc, ln.getLnOut(), tp,
                                  "the saved norm output's rows, for the "
                                  "wgrad");
    Value dLn = reducePartial(
        loc, gemm(loc, GemmLayout::NN, dyq, ln.getWeight(), {}, element), tp,
        "the dgrad's partial sums");
    Value dW = gemm(loc, GemmLayout::NT, dyq, lnOut, {}, element);
    Value dBias = ln.getWithBias() ? biasGrad(loc, dy) : Value();
    if (Value extra = ln.getGradLnOutput())
      dLn = arith::AddFOp::create(b, loc, dLn, extra);
    auto nb = NormBwdOp::create(
        b, loc,
        TypeRange(ln->getResultTypes()).take_front(ln.getWithLnBias() ? 3 : 2),
        dLn, ln.getInput(), ln.getLnWeight(), ln.getRsigma(), ln.getMu(),
        ln.getNormalization(), ln.getZeroCenteredGamma(), ln.getWithLnBias());
    grads.push_back(nb.getResult(0));
    for (Value g : nb->getResults().drop_front())
      grads.push_back(reduceParamGrad(loc, g, tp,
                                      "a norm weight's partial gradient"));
    grads.push_back(dW);
    if (dBias)
      grads.push_back(dBias);
  } else if (auto mlp = dyn_cast<LayerNormMLPBwdOp>(op)) {
    FailureOr<Quant> q =
        quantOf(op, mlp.getRecipeAttr(), mlp.getScales(), false, arch);
    if (failed(q))
      return failure();
    Value dy = mlp.getGradOutput();
    Type element = elementOf(dy);
    TensorParallelAttr tp = mlp.getTpAttr();
    // Row-parallel FC2 (§1): its GEMMs on the gathered dy, its bias
    // gradient from the rank's rows (a partial sum under sequence
    // parallelism).
    Value dyRows = dy;
    dy = allGather(loc, dy, tp, "the output gradient's rows, before FC2's "
                                "dgrad and wgrad");
    // The saved norm output's rows gathered again for FC1's wgrad, issued
    // first as TE issues it (async) before FC2's GEMMs: the recomputed
    // (checkpointed) backward has it as early, so both fuse the same way.
    Value lnOut = isa<QuantizedTensorType>(mlp.getLnOut().getType())
                      ? mlp.getLnOut() // saved gathered
                      : allGather(loc, mlp.getLnOut(), tp,
                                  "the saved norm output's rows, for FC1's "
                                  "wgrad");
    Value dyq = quantizeGrad(dy, *q, 2);
    Value dAct = gemm(loc, GemmLayout::NN, dyq, mlp.getFc2Weight(), {}, element);
    Value dW2 = gemm(loc, GemmLayout::NT, dyq, mlp.getActOut(), {}, element);
    Value dB2 = mlp.getWithFc2Bias()
                    ? reduceParamGrad(loc, biasGrad(loc, dyRows), tp,
                                      "FC2's partial bias gradient")
                    : Value();
    Value dFc1 = DActOp::create(b, loc, mlp.getFc1Out().getType(),
                                /*amax=*/Type(), dAct,
                                mlp.getFc1Out(), mlp.getActivation())
                     .getResult();
    Value dB1 = mlp.getWithFc1Bias() ? biasGrad(loc, dFc1) : Value();
    Value dFc1q = quantizeGrad(dFc1, *q, 0);
    // FC1's dgrad is a partial sum; its wgrad reads the norm output
    // gathered again from the saved rows.
    Value dLn = reducePartial(
        loc,
        gemm(loc, GemmLayout::NN, dFc1q, mlp.getFc1Weight(), {}, element), tp,
        "FC1's dgrad partial sums");
    Value dW1 = gemm(loc, GemmLayout::NT, dFc1q, lnOut, {}, element);
    if (Value extra = mlp.getGradLnOutput())
      dLn = arith::AddFOp::create(b, loc, dLn, extra);
    auto nb = NormBwdOp::create(
        b, loc,
        TypeRange(mlp->getResultTypes())
            .take_front(mlp.getWithLnBias() ? 3 : 2),
        dLn, mlp.getInput(), mlp.getLnWeight(), mlp.getRsigma(), mlp.getMu(),
        mlp.getNormalization(), mlp.getZeroCenteredGamma(),
        mlp.getWithLnBias());
    grads.push_back(nb.getResult(0));
    for (Value g : nb->getResults().drop_front())
      grads.push_back(reduceParamGrad(loc, g, tp,
                                      "a norm weight's partial gradient"));
    llvm::append_range(grads, concat({dW1, dB1, dW2, dB2}));
  } else if (auto lin = dyn_cast<LinearBwdOp>(op)) {
    FailureOr<Quant> q =
        quantOf(op, lin.getRecipeAttr(), lin.getScales(), false, arch);
    if (failed(q))
      return failure();
    Value dy = lin.getGradOutput();
    Type element = elementOf(dy);
    Value dyq = quantizeGrad(dy, *q, 0);
    grads = concat(
        {gemm(loc, GemmLayout::NN, dyq, lin.getWeight(), {}, element),
         gemm(loc, GemmLayout::NT, dyq, lin.getInput(), {}, element),
         lin.getWithBias() ? biasGrad(loc, dy) : Value()});
  }
  if (failed(replaceAmax(op->getResult(0), amaxes,
                         op->getAttrOfType<TensorParallelAttr>("tp"))))
    return failure();
  op->replaceAllUsesWith(grads);
  op->erase();
  return success();
}

LogicalResult Decomposer::run(func::FuncOp func) {
  nextSeed = 0;
  SmallVector<RecomputeOp> recomputes;
  func.walk([&](RecomputeOp op) { recomputes.push_back(op); });
  for (RecomputeOp op : recomputes)
    if (failed(inlineRecompute(op)))
      return failure();

  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<ModuleOpInterface, LayerNormLinearBwdOp, LayerNormMLPBwdOp,
            LinearBwdOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops)
    if (failed(isa<ModuleOpInterface>(op) ? forward(op) : backward(op)))
      return failure();

  // What recomputation does not need (FC2 of a recomputed MLP) is dead.
  SmallVector<Operation *> dead;
  bool changed = true;
  while (changed) {
    changed = false;
    func.walk<WalkOrder::PostOrder>([&](Operation *op) {
      if (op != func && op->use_empty() && isMemoryEffectFree(op) &&
          !op->hasTrait<OpTrait::IsTerminator>() && !isa<func::FuncOp>(op)) {
        op->erase();
        changed = true;
        return WalkResult::skip();
      }
      return WalkResult::advance();
    });
  }
  return success();
}

struct TEDecomposePass
    : public te::impl::TEDecomposePassBase<TEDecomposePass> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<TargetArch> target;
    if (arch.isValid())
      target = *arch;
    if (!target) {
      getOperation().emitError() << "te-decompose: unknown arch '"
                                 << arch.spelling()
                                 << "' (hopper or blackwell)";
      return signalPassFailure();
    }
    // A recipe that falls back is said without --remarks: the user asked
    // for it.
    // (Once per source op: --train copies module ops into the forward, a
    // recompute region and the weight-cache entry.)
    bool fellBack = false;
    llvm::DenseSet<Location> said;
    getOperation().walk([&](ModuleOpInterface op) {
      ModuleDescription desc = op.describe(DescribeOptions());
      if (desc.fallback.empty() || !said.insert(op->getLoc()).second)
        return;
      fellBack = true;
      (strictRecipe ? op->emitError() : op->emitWarning())
          << "te-decompose: " << desc.fallback
          << (strictRecipe ? "" : " (strict-recipe makes this an error)");
    });
    if (strictRecipe && fellBack)
      return signalPassFailure();
    OpBuilder b(&getContext());
    Decomposer d(b, *target);
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(d.run(func)))
        return signalPassFailure();
  }
};

} // namespace
