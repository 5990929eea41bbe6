//===- Decomposer.cpp - What te-decompose's patterns share ------*- C++ -*-===//
//
// The norm, GEMM, quantization, collective and replacement builders of
// te-decompose's patterns, in TransformerEngine's kernel order and layouts
// (reference §0.1, §0.2, §4.3-§4.5).
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"
#include "te/Transforms/PassOptions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::decompose;

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

} // namespace

FailureOr<Quant> decompose::quantOf(Operation *op, RecipeAttrInterface recipe,
                                    Value scales, bool isForward,
                                    TargetArch target) {
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
                           << " is lowered for " << why << ", not for the "
                           << stringifyTargetArch(target)
                           << " layout asked for (te-compile --arch="
                           << smName(arch)
                           << ", te-opt arch=" << stringifyTargetArch(arch)
                           << ")";
  auto wrongArch = [&](Operation *at, QuantizedTensorType q) {
    return at->emitError() << "te-decompose: " << recipe.getRecipeName()
                           << " is lowered for " << why << "; " << q
                           << " has another layout (te-compile --arch="
                           << smName(arch) << ")";
  };
  for (Type t : llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
    if (auto q = dyn_cast<QuantizedTensorType>(t); q && q.getArch() != arch)
      return wrongArch(op, q);
  for (Operation *user : op->getUsers())
    if (auto saved = dyn_cast<SavedOp>(user))
      if (auto q = dyn_cast<QuantizedTensorType>(saved.getType());
          q && q.getArch() != arch)
        return wrongArch(saved, q);
  return Quant{recipe, scales};
}

Decomposer::Norm Decomposer::norm(Location loc, Value x, Value gamma,
                                  Value beta, NormalizationKind kind,
                                  APFloat eps, bool zeroCentered) {
  SmallVector<Type> types = {x.getType(), rowsVector(x)};
  if (kind == NormalizationKind::LayerNorm)
    types.push_back(rowsVector(x));
  auto op =
      NormFwdOp::create(b, loc, types, x, gamma, beta, kind, eps, zeroCentered);
  return {op.getOutput(), op.getRsigma(), op.getMu()};
}

Value Decomposer::gemm(Location loc, GemmLayout layout, Value lhs, Value rhs,
                       Value bias, Type element) {
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
                        /*bias_grad=*/Type(), lhs, rhs, bias,
                        /*accumulate=*/Value(), layout, fast)
      .getResult();
}

ArrayRef<int64_t> Decomposer::shapeOf(Value v) {
  if (auto q = dyn_cast<QuantizedTensorType>(v.getType()))
    return q.getShape();
  return cast<RankedTensorType>(v.getType()).getShape();
}

Type Decomposer::elementOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

Value Decomposer::quantize(Location loc, Value x, const Quant &q, bool grad,
                           int64_t slot, SmallVectorImpl<Value> &amaxes,
                           QuantUsage usage, Value source, StringRef name,
                           Value *saveOut) {
  // The saved copy's quantized type (a high-precision save, as row-scaled
  // NVFP4's, keeps the caller's unquantized value in *saveOut).
  Type type;
  if (source)
    for (Operation *user : source.getUsers())
      if (auto saved = dyn_cast<SavedOp>(user);
          saved && saved.getName() == name &&
          isa<QuantizedTensorType>(saved.getType()))
        type = saved.getType();
  bool savedQuantized = bool(type);
  bool weight = name.ends_with("weight");
  auto nvfp4 = dyn_cast<NVFP4RecipeAttr>(q.recipe);
  if (!type) {
    // Float8 block scaling picks 1x128 or 128x128 blocks per role, NVFP4
    // 16x16 blocks for weights and the Hadamard transform for the wgrad
    // copies of the others.
    bool block2d = false, rht = false, rowScaled = false;
    if (auto block = dyn_cast<FP8BlockRecipeAttr>(q.recipe))
      block2d = (grad     ? block.getGradBlockDim()
                 : weight ? block.getWBlockDim()
                          : block.getXBlockDim()) == 2;
    if (nvfp4) {
      block2d = weight && nvfp4.getWeight_2d();
      rht = !weight && nvfp4.getRht() && usage != QuantUsage::Rowwise;
      // Row-scaled NVFP4: the forward's activations get one amax per row
      // (their backward is high precision: rowwise only).
      rowScaled = nvfp4.getRowScaled() && !weight && !grad &&
                  usage == QuantUsage::Rowwise;
    }
    // MXFP8's and NVFP4's scales are kept in cuBLAS's order, as TE's
    // quantizers write them for GEMMs (optimize_for_gemm).
    type = QuantizedTensorType::get(
        b.getContext(), shapeOf(x),
        grad ? getBackwardFormat(q.recipe) : getForwardFormat(q.recipe),
        q.recipe, usage, state.arch, block2d,
        /*swizzled=*/isa<MXFP8RecipeAttr, NVFP4RecipeAttr>(q.recipe),
        rowScaled, rht);
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
  // NVFP4's 4-over-6 block scales for the forward tensors the recipe names
  // (TE never applies them to gradients).
  bool fourOverSix = !grad && nvfp4 && nvfp4.fourOverSix(weight);
  auto op = QuantizeOp::create(
      b, loc, produced, amaxType, x, q.scales, /*amax_in=*/Value(),
      q.scales ? b.getI64IntegerAttr(slot) : IntegerAttr(), weight, stochastic,
      stochastic ? b.getI64IntegerAttr(state.nextSeed++) : IntegerAttr(),
      fourOverSix);
  if (op.getAmax()) {
    if (slot >= int64_t(amaxes.size()))
      amaxes.resize(slot + 1);
    amaxes[slot] = op.getAmax();
  }
  if (saveOut && savedQuantized)
    *saveOut =
        produced == type
            ? op.getResult()
            : DropUsageOp::create(b, loc, type, op.getResult()).getResult();
  return op.getResult();
}

LogicalResult Decomposer::replaceAmax(Value source, ArrayRef<Value> amaxes,
                                      TensorParallelAttr tp) {
  for (Operation *user : llvm::make_early_inc_range(source.getUsers())) {
    auto amax = dyn_cast<AmaxOp>(user);
    if (!amax)
      continue;
    int64_t n = amax.getType().getDimSize(0);
    if (int64_t(amaxes.size()) > n)
      return amax.emitError() << "te-decompose: " << amaxes.size()
                              << " quantizer slots recorded, te.amax has " << n;
    b.setInsertionPoint(amax);
    auto one = RankedTensorType::get({1}, b.getF32Type());
    Value zero;
    SmallVector<Value> parts;
    for (int64_t i = 0; i < n; ++i) {
      Value v = i < int64_t(amaxes.size()) ? amaxes[i] : Value();
      if (!v) {
        if (!zero)
          zero = arith::ConstantOp::create(b, amax.getLoc(),
                                           DenseElementsAttr::get(one, 0.0f));
        v = zero;
      }
      parts.push_back(v);
    }
    Value all =
        parts.size() == 1
            ? parts[0]
            : tensor::ConcatOp::create(b, amax.getLoc(), 0, parts).getResult();
    if (tp) {
      placed(amax.getLoc(), "all-reduce (max)", tp,
             "the recorded amaxes, before their history update");
      all = AllReduceOp::create(b, amax.getLoc(), all.getType(), all,
                                tp.getSize(), /*max=*/true);
    }
    b.replaceOp(amax, all);
  }
  return success();
}

Value Decomposer::biasGrad(Location loc, Value dy) {
  auto t = cast<RankedTensorType>(dy.getType());
  return BiasGradOp::create(
      b, loc, RankedTensorType::get({t.getShape().back()}, t.getElementType()),
      dy);
}

RankedTensorType Decomposer::withDim0(Value v, int64_t mul, int64_t div) {
  auto t = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  if (!ShapedType::isDynamic(shape[0]))
    shape[0] = shape[0] / div * mul;
  return RankedTensorType::get(shape, t.getElementType());
}

void Decomposer::placed(Location loc, StringRef collective,
                        TensorParallelAttr tp, StringRef what) {
  emitRemark(loc) << "te-decompose: " << collective << " over " << tp.getSize()
                  << " ranks: " << what;
}

Value Decomposer::allGather(Location loc, Value v, TensorParallelAttr tp,
                            StringRef what) {
  if (!tp || !tp.getSequenceParallel())
    return v;
  placed(loc, "all-gather", tp, what);
  return AllGatherOp::create(b, loc, withDim0(v, tp.getSize(), 1), v,
                             tp.getSize());
}

Value Decomposer::reducePartial(Location loc, Value v, TensorParallelAttr tp,
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

Value Decomposer::reduceParamGrad(Location loc, Value g, TensorParallelAttr tp,
                                  StringRef what) {
  if (!g || !tp || !tp.getReduceParamGrads())
    return g;
  placed(loc, "all-reduce", tp, what);
  return AllReduceOp::create(b, loc, g.getType(), g, tp.getSize());
}

Type Decomposer::rowsVector(Value x) {
  auto t = cast<RankedTensorType>(x.getType());
  int64_t m = 1;
  for (int64_t d : t.getShape().drop_back())
    m = ShapedType::isDynamic(d) || ShapedType::isDynamic(m)
            ? ShapedType::kDynamic
            : m * d;
  return RankedTensorType::get({m}, b.getF32Type());
}

LogicalResult Decomposer::replaceSaved(Value source,
                                       const llvm::StringMap<Value> &values) {
  for (Operation *user : llvm::make_early_inc_range(source.getUsers())) {
    auto saved = dyn_cast<SavedOp>(user);
    if (!saved)
      continue;
    Value v = values.lookup(saved.getName());
    if (!v || v.getType() != saved.getType())
      return saved.emitError() << "te-decompose: no value for saved tensor '"
                               << saved.getName() << "'";
    b.replaceOp(saved, v);
  }
  return success();
}

SmallVector<Value> Decomposer::concat(std::initializer_list<Value> values) {
  SmallVector<Value> out;
  for (Value v : values)
    if (v)
      out.push_back(v);
  return out;
}

Value Decomposer::quantizeGrad(Location loc, Value g, const Quant &q,
                               int64_t slot, SmallVectorImpl<Value> &amaxes,
                               bool wgrad) {
  return q ? quantize(loc, g, q, true, slot, amaxes,
                      wgrad ? QuantUsage::Both : QuantUsage::Rowwise)
           : g;
}

LogicalResult Decomposer::finishForward(Operation *op,
                                        const llvm::StringMap<Value> &saved,
                                        ArrayRef<Value> amaxes,
                                        ValueRange results) {
  Value source = op->getResult(0);
  if (failed(replaceSaved(source, saved)) ||
      failed(replaceAmax(source, amaxes,
                         op->getAttrOfType<TensorParallelAttr>("tp"))))
    return failure();
  b.replaceOp(op, results);
  return success();
}

LogicalResult Decomposer::finishBackward(Operation *op, ArrayRef<Value> amaxes,
                                         ValueRange grads) {
  if (failed(replaceAmax(op->getResult(0), amaxes,
                         op->getAttrOfType<TensorParallelAttr>("tp"))))
    return failure();
  b.replaceOp(op, grads);
  return success();
}
