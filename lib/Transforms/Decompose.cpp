//===- Decompose.cpp - te-decompose: module ops to primitives ---*- C++ -*-===//
//
// Rewrites module ops, their backward ops and te.recompute regions into the
// L2 primitives in TransformerEngine's kernel order (reference §1.3, §1.5,
// §2.3, §2.5): norm, GEMMs in TN/NN/NT, activation and its derivative, bias
// gradients. te.saved intermediates become the primitive values that compute
// them. Quantized recipes are not decomposed yet: an op that really runs
// quantized (not an alignment fallback) is an error naming the recipe.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEDECOMPOSEPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// Fails with an error unless `op` runs unquantized under its recipe.
LogicalResult checkUnquantized(Operation *op, RecipeAttrInterface recipe,
                               Operation *forward = nullptr) {
  if (!recipe || !recipe.isQuantized())
    return success();
  // An alignment fallback runs the bf16 path (the module op says so).
  if (auto module = dyn_cast_or_null<ModuleOpInterface>(forward)) {
    ModuleDescription d = module.describe(DescribeOptions());
    if (!d.fallback.empty())
      return success();
  }
  // Backward ops on high-precision saved tensors are a fallback too.
  if (!forward && llvm::none_of(op->getOperandTypes(), [](Type t) {
        return isa<QuantizedTensorType>(t);
      }))
    return success();
  return op->emitError() << "te-decompose: recipe " << recipe.getRecipeName()
                         << " is not decomposed yet; only the unquantized "
                            "(bf16 / fp32) path lowers to the runtime";
}

class Decomposer {
public:
  explicit Decomposer(OpBuilder &b) : b(b) {}

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
  Value gemm(Location loc, GemmLayout layout, Value lhs, Value rhs,
             Value bias = {}) {
    auto l = cast<RankedTensorType>(lhs.getType());
    auto r = cast<RankedTensorType>(rhs.getType());
    SmallVector<int64_t> shape(l.getShape());
    switch (layout) {
    case GemmLayout::TN:
      shape.back() = r.getDimSize(0);
      break;
    case GemmLayout::NN:
      shape.back() = r.getDimSize(1);
      break;
    case GemmLayout::NT:
      shape = {l.getShape().back(), r.getShape().back()};
      break;
    }
    return GemmOp::create(b, loc,
                          RankedTensorType::get(shape, l.getElementType()),
                          /*bias_grad=*/Type(), lhs, rhs, bias, layout)
        .getResult();
  }
  Value biasGrad(Location loc, Value dy) {
    auto t = cast<RankedTensorType>(dy.getType());
    return BiasGradOp::create(
        b, loc, RankedTensorType::get({t.getShape().back()}, t.getElementType()),
        dy);
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
  SmallVector<Value> results;
  if (auto ln = dyn_cast<LayerNormLinearOp>(op)) {
    if (failed(checkUnquantized(op, ln.getRecipeAttr(), op)))
      return failure();
    Norm n = norm(loc, ln.getInput(), ln.getLnWeight(), ln.getLnBias(),
                  ln.getNormalization(), ln.getEps(), ln.getZeroCenteredGamma());
    Value y = gemm(loc, GemmLayout::TN, n.out, ln.getWeight(), ln.getBias());
    saved = {{"ln_out", n.out}, {"rsigma", n.rsigma}, {"mu", n.mu}};
    results = concat({y, ln.getLnOutput() ? n.out : Value()});
  } else if (auto mlp = dyn_cast<LayerNormMLPOp>(op)) {
    if (failed(checkUnquantized(op, mlp.getRecipeAttr(), op)))
      return failure();
    Norm n = norm(loc, mlp.getInput(), mlp.getLnWeight(), mlp.getLnBias(),
                  mlp.getNormalization(), mlp.getEps(),
                  mlp.getZeroCenteredGamma());
    Value fc1 =
        gemm(loc, GemmLayout::TN, n.out, mlp.getFc1Weight(), mlp.getFc1Bias());
    auto fc1Type = cast<RankedTensorType>(fc1.getType());
    SmallVector<int64_t> actShape(fc1Type.getShape());
    actShape.back() = mlp.getFfnSize();
    Value act = ActOp::create(
        b, loc, RankedTensorType::get(actShape, fc1Type.getElementType()), fc1,
        mlp.getActivation(), mlp.getLimitAttr(), mlp.getAlphaAttr(),
        mlp.getGluLinearOffsetAttr());
    Value y =
        gemm(loc, GemmLayout::TN, act, mlp.getFc2Weight(), mlp.getFc2Bias());
    saved = {{"ln_out", n.out}, {"fc1_out", fc1}, {"act_out", act},
             {"rsigma", n.rsigma}, {"mu", n.mu}};
    results = concat({y, mlp.getLnOutput() ? n.out : Value()});
  } else if (auto lin = dyn_cast<LinearOp>(op)) {
    if (failed(checkUnquantized(op, lin.getRecipeAttr(), op)))
      return failure();
    results = {gemm(loc, GemmLayout::TN, lin.getInput(), lin.getWeight(),
                    lin.getBias())};
  }
  if (failed(replaceSaved(op->getResult(0), saved)))
    return failure();
  op->replaceAllUsesWith(results);
  op->erase();
  return success();
}

LogicalResult Decomposer::backward(Operation *op) {
  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  SmallVector<Value> grads;
  if (auto ln = dyn_cast<LayerNormLinearBwdOp>(op)) {
    if (failed(checkUnquantized(op, ln.getRecipeAttr())))
      return failure();
    Value dy = ln.getGradOutput();
    Value dLn = gemm(loc, GemmLayout::NN, dy, ln.getWeight());
    Value dW = gemm(loc, GemmLayout::NT, dy, ln.getLnOut());
    Value dBias = ln.getWithBias() ? biasGrad(loc, dy) : Value();
    if (Value extra = ln.getGradLnOutput())
      dLn = arith::AddFOp::create(b, loc, dLn, extra);
    auto nb = NormBwdOp::create(
        b, loc,
        TypeRange(ln->getResultTypes()).take_front(ln.getWithLnBias() ? 3 : 2),
        dLn, ln.getInput(), ln.getLnWeight(), ln.getRsigma(), ln.getMu(),
        ln.getNormalization(), ln.getZeroCenteredGamma(), ln.getWithLnBias());
    llvm::append_range(grads, nb.getResults());
    grads.push_back(dW);
    if (dBias)
      grads.push_back(dBias);
  } else if (auto mlp = dyn_cast<LayerNormMLPBwdOp>(op)) {
    if (failed(checkUnquantized(op, mlp.getRecipeAttr())))
      return failure();
    Value dy = mlp.getGradOutput();
    Value dAct = gemm(loc, GemmLayout::NN, dy, mlp.getFc2Weight());
    Value dW2 = gemm(loc, GemmLayout::NT, dy, mlp.getActOut());
    Value dB2 = mlp.getWithFc2Bias() ? biasGrad(loc, dy) : Value();
    Value dFc1 = DActOp::create(b, loc, mlp.getFc1Out().getType(), dAct,
                                mlp.getFc1Out(), mlp.getActivation(),
                                mlp.getLimitAttr(), mlp.getAlphaAttr(),
                                mlp.getGluLinearOffsetAttr());
    Value dB1 = mlp.getWithFc1Bias() ? biasGrad(loc, dFc1) : Value();
    Value dLn = gemm(loc, GemmLayout::NN, dFc1, mlp.getFc1Weight());
    Value dW1 = gemm(loc, GemmLayout::NT, dFc1, mlp.getLnOut());
    if (Value extra = mlp.getGradLnOutput())
      dLn = arith::AddFOp::create(b, loc, dLn, extra);
    auto nb = NormBwdOp::create(
        b, loc,
        TypeRange(mlp->getResultTypes())
            .take_front(mlp.getWithLnBias() ? 3 : 2),
        dLn, mlp.getInput(), mlp.getLnWeight(), mlp.getRsigma(), mlp.getMu(),
        mlp.getNormalization(), mlp.getZeroCenteredGamma(),
        mlp.getWithLnBias());
    llvm::append_range(grads, nb.getResults());
    llvm::append_range(grads, concat({dW1, dB1, dW2, dB2}));
  } else if (auto lin = dyn_cast<LinearBwdOp>(op)) {
    if (failed(checkUnquantized(op, lin.getRecipeAttr())))
      return failure();
    Value dy = lin.getGradOutput();
    grads = concat({gemm(loc, GemmLayout::NN, dy, lin.getWeight()),
                    gemm(loc, GemmLayout::NT, dy, lin.getInput()),
                    lin.getWithBias() ? biasGrad(loc, dy) : Value()});
  }
  op->replaceAllUsesWith(grads);
  op->erase();
  return success();
}

LogicalResult Decomposer::run(func::FuncOp func) {
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
  void runOnOperation() override {
    OpBuilder b(&getContext());
    Decomposer d(b);
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (failed(d.run(func)))
        return signalPassFailure();
  }
};

} // namespace
