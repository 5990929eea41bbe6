//===- TensorParallel.cpp - te-tensor-parallel: one rank's program --*- C++ -*-===//
//
// Rewrites a single-device model into one rank's program of a
// tensor-parallel group, with TransformerEngine's placements
// (reference/tensor-parallel.md §1-2, §9): LayerNormLinear column-parallel,
// LayerNormMLP FC1 column- and FC2 row-parallel, optionally sequence
// parallel. Types become the rank's shapes; arguments and results say how
// they relate to the global tensors (te.tp_shard); te-decompose places the
// collectives from the ops' #te.tp.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace mlir::te {
#define GEN_PASS_DEF_TETENSORPARALLELPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// How a rank's tensor relates to the global one.
enum class Shard { Rows, Cols, GatedRows, Replicated };

StringRef shardName(Shard s) {
  switch (s) {
  case Shard::Rows:
    return "rows";
  case Shard::Cols:
    return "cols";
  case Shard::GatedRows:
    return "gated_rows";
  case Shard::Replicated:
    return "replicated";
  }
  return "";
}

/// What the shard means, for messages.
StringRef shardMeaning(Shard s) {
  switch (s) {
  case Shard::Rows:
    return "split along dim 0";
  case Shard::Cols:
    return "split along the last dim";
  case Shard::GatedRows:
    return "each half of dim 0 split (a gated FC1)";
  case Shard::Replicated:
    return "replicated";
  }
  return "";
}

class Sharder {
public:
  Sharder(func::FuncOp func, int64_t size, bool sp, bool reduceGrads)
      : func(func), size(size), sp(sp), reduceGrads(reduceGrads) {}

  LogicalResult run();

private:
  /// `v`, used as `role` of `user`, must be `want`; a block argument takes
  /// the layout (once), a produced value must already have it.
  LogicalResult require(Value v, Shard want, Operation *user, StringRef role,
                        bool partialGrad = false);
  LogicalResult visit(Operation *op);
  /// The rank's type of `type` (a global tensor) under `s`.
  FailureOr<Type> localType(Type type, Shard s, Location loc,
                            const Twine &what);
  LogicalResult apply();

  func::FuncOp func;
  int64_t size;
  bool sp, reduceGrads;
  llvm::DenseMap<Value, Shard> layout;
  /// Arguments whose gradients are partial sums over the group.
  llvm::DenseSet<Value> partial;
  /// Where each argument's layout was decided (for conflict messages).
  llvm::DenseMap<Value, std::string> decidedBy;
};

LogicalResult Sharder::require(Value v, Shard want, Operation *user,
                               StringRef role, bool partialGrad) {
  std::string here =
      (role + " of '" + user->getName().getStringRef() + "'").str();
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto it = layout.find(v);
    if (it != layout.end() && it->second != want)
      return user->emitError()
             << "te-tensor-parallel: argument #" << arg.getArgNumber()
             << " is the " << here << " (" << shardMeaning(want)
             << ") but also the " << decidedBy[v] << " ("
             << shardMeaning(it->second) << "); one tensor cannot have both "
             << "layouts";
    if (it == layout.end()) {
      layout[v] = want;
      decidedBy[v] = here;
    }
    if (partialGrad)
      partial.insert(v);
    return success();
  }
  Operation *producer = v.getDefiningOp();
  auto it = layout.find(v);
  if (it == layout.end()) {
    // What torch-mlir exports put between a parameter and its module op
    // (te-import-torch): the layout is pulled through to the parameters.
    if (auto concat = dyn_cast<tensor::ConcatOp>(producer);
        concat && want == Shard::GatedRows && concat.getDim() == 0 &&
        concat.getInputs().size() == 2 &&
        concat.getInputs()[0].getType() == concat.getInputs()[1].getType()) {
      // A gated FC1 weight [gate; up]: each half split along its rows.
      for (auto [i, half] : llvm::enumerate(concat.getInputs()))
        if (failed(require(half, Shard::Rows, concat,
                           i == 0 ? "first half" : "second half")))
          return failure();
      layout[v] = want;
      return success();
    }
    if (auto t = dyn_cast<linalg::TransposeOp>(producer);
        t && t.getPermutation().size() == 2 && t.getPermutation()[0] == 1 &&
        (want == Shard::Rows || want == Shard::Cols) &&
        t.getInit().getDefiningOp<tensor::EmptyOp>() &&
        t.getInit().getDefiningOp()->getNumOperands() == 0 &&
        t.getInit().hasOneUse()) {
      // A transposed weight (GPT-2's Conv1D): the other dim of the source.
      if (failed(require(t.getInput(),
                         want == Shard::Rows ? Shard::Cols : Shard::Rows, t,
                         "input")))
        return failure();
      layout[v] = want;
      return success();
    }
    return user->emitError()
           << "te-tensor-parallel: the " << here << " comes from '"
           << producer->getName() << "', which is not sharded";
  }
  if (it->second != want)
    return user->emitError()
           << "te-tensor-parallel: the " << here << " must be "
           << shardMeaning(want) << ", but it comes from '"
           << producer->getName() << "' " << shardMeaning(it->second)
           << " (te-mlir places no resharding collectives)";
  return success();
}

LogicalResult Sharder::visit(Operation *op) {
  Shard acts = sp ? Shard::Rows : Shard::Replicated;
  // Under sequence parallelism the norm weights (and FC2's bias) see only
  // the rank's rows: their gradients are partial sums.
  bool partialParams = sp && !reduceGrads;
  if (auto ln = dyn_cast<LayerNormLinearOp>(op)) {
    if (failed(require(ln.getInput(), acts, op, "input")) ||
        failed(require(ln.getLnWeight(), Shard::Replicated, op, "ln_weight",
                       partialParams)) ||
        (ln.getLnBias() && failed(require(ln.getLnBias(), Shard::Replicated,
                                          op, "ln_bias", partialParams))) ||
        failed(require(ln.getWeight(), Shard::Rows, op, "weight")) ||
        (ln.getBias() &&
         failed(require(ln.getBias(), Shard::Rows, op, "bias"))) ||
        (ln.getScales() && failed(require(ln.getScales(), Shard::Replicated,
                                          op, "scales"))))
      return failure();
    for (Value r : op->getResults())
      layout[r] = Shard::Cols;
    return success();
  }
  if (auto mlp = dyn_cast<LayerNormMLPOp>(op)) {
    Shard fc1 = mlp.isGated() ? Shard::GatedRows : Shard::Rows;
    if (failed(require(mlp.getInput(), acts, op, "input")) ||
        failed(require(mlp.getLnWeight(), Shard::Replicated, op, "ln_weight",
                       partialParams)) ||
        (mlp.getLnBias() &&
         failed(require(mlp.getLnBias(), Shard::Replicated, op, "ln_bias",
                        partialParams))) ||
        failed(require(mlp.getFc1Weight(), fc1, op, "fc1_weight")) ||
        (mlp.getFc1Bias() &&
         failed(require(mlp.getFc1Bias(), fc1, op, "fc1_bias"))) ||
        failed(require(mlp.getFc2Weight(), Shard::Cols, op, "fc2_weight")) ||
        (mlp.getFc2Bias() &&
         failed(require(mlp.getFc2Bias(), Shard::Replicated, op, "fc2_bias",
                        partialParams))) ||
        (mlp.getScales() && failed(require(mlp.getScales(), Shard::Replicated,
                                           op, "scales"))))
      return failure();
    for (Value r : op->getResults())
      layout[r] = acts;
    return success();
  }
  if (isa<LinearOp, NormalizationOp>(op))
    return op->emitError()
           << "te-tensor-parallel: " << op->getName().getStringRef()
           << " is not sharded yet (only te.layernorm_linear and "
              "te.layernorm_mlp are)";
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    // The same on every rank.
    layout[c.getResult()] = Shard::Replicated;
    return success();
  }
  if (isa<func::ReturnOp>(op)) {
    for (Value v : op->getOperands()) {
      if (layout.count(v))
        continue;
      if (!isa<BlockArgument>(v))
        return op->emitError() << "te-tensor-parallel: a result comes from '"
                               << v.getDefiningOp()->getName()
                               << "', which is not sharded";
      layout[v] = Shard::Replicated; // returned as it came
    }
    return success();
  }
  // Shaped by the module op that reads them (require()), or an error there.
  if (isa<tensor::EmptyOp, tensor::ConcatOp, linalg::TransposeOp>(op))
    return success();
  if (op->hasTrait<OpTrait::Elementwise>() && op->getNumResults() == 1) {
    // All operands in one layout (a residual add of a sequence-parallel
    // input and an MLP's output); arguments not seen yet take it.
    std::optional<Shard> common;
    for (Value v : op->getOperands()) {
      auto it = layout.find(v);
      if (it == layout.end())
        continue;
      if (common && *common != it->second)
        return op->emitError()
               << "te-tensor-parallel: operands of '" << op->getName()
               << "' have different layouts (" << shardMeaning(*common)
               << ", " << shardMeaning(it->second) << ")";
      common = it->second;
    }
    Shard s = common.value_or(Shard::Replicated);
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (failed(require(v, s, op, ("operand #" + Twine(i)).str())))
        return failure();
    layout[op->getResult(0)] = s;
    return success();
  }
  if (op->getNumResults() == 0 && op->getNumOperands() == 0)
    return success();
  return op->emitError() << "te-tensor-parallel: cannot shard through '"
                         << op->getName()
                         << "' (module ops, elementwise ops and constants "
                            "only)";
}

FailureOr<Type> Sharder::localType(Type type, Shard s, Location loc,
                                   const Twine &what) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (s == Shard::Replicated)
    return type;
  if (!t || t.getRank() < 1)
    return emitError(loc) << "te-tensor-parallel: " << what
                          << " must be a ranked tensor to be "
                          << shardMeaning(s);
  SmallVector<int64_t> shape(t.getShape());
  unsigned dim = s == Shard::Cols ? shape.size() - 1 : 0;
  if (ShapedType::isDynamic(shape[dim])) {
    if (s != Shard::Rows)
      return emitError(loc) << "te-tensor-parallel: " << what << " (" << t
                            << ") must have a static dim " << dim
                            << " to be " << shardMeaning(s);
    return type; // the rank's rows, whatever the caller gives
  }
  int64_t parts = s == Shard::GatedRows ? 2 * size : size;
  if (shape[dim] % parts != 0)
    return emitError(loc) << "te-tensor-parallel: " << what << " (" << t
                          << ") is " << shardMeaning(s) << " over " << size
                          << " ranks, but dim " << dim << " (" << shape[dim]
                          << ") is not a multiple of " << parts;
  shape[dim] /= size;
  return Type(RankedTensorType::get(shape, t.getElementType()));
}

LogicalResult Sharder::apply() {
  MLIRContext *ctx = func.getContext();
  Block &body = func.getBody().front();
  // The rank's argument types.
  for (BlockArgument arg : body.getArguments()) {
    Shard s = layout.lookup(arg);
    if (!layout.count(arg))
      layout[arg] = s = Shard::Replicated;
    FailureOr<Type> t = localType(arg.getType(), s, func.getLoc(),
                                  "argument #" + Twine(arg.getArgNumber()));
    if (failed(t))
      return failure();
    arg.setType(*t);
  }
  auto tp = TensorParallelAttr::get(ctx, size, sp, sp && reduceGrads);
  for (Operation &op : body.without_terminator()) {
    if (isa<LayerNormLinearOp, LayerNormMLPOp>(op)) {
      op.setAttr("tp", tp);
      SmallVector<Type> types;
      if (failed(cast<InferTypeOpInterface>(op).inferReturnTypes(
              ctx, op.getLoc(), op.getOperands(),
              op.getRawDictionaryAttrs(), op.getPropertiesStorage(),
              op.getRegions(), types)))
        return failure();
      for (auto [r, t] : llvm::zip(op.getResults(), types))
        r.setType(t);
    } else if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
      if (!layout.count(concat.getResult()))
        continue;
      auto in = cast<RankedTensorType>(concat.getInputs()[0].getType());
      SmallVector<int64_t> shape(in.getShape());
      shape[0] *= 2;
      concat.getResult().setType(
          RankedTensorType::get(shape, in.getElementType()));
    } else if (auto t = dyn_cast<linalg::TransposeOp>(op)) {
      if (!layout.count(t->getResult(0)))
        continue;
      auto in = cast<RankedTensorType>(t.getInput().getType());
      auto type = RankedTensorType::get({in.getDimSize(1), in.getDimSize(0)},
                                        in.getElementType());
      t.getInit().setType(type);
      t->getResult(0).setType(type);
    } else if (op.hasTrait<OpTrait::Elementwise>() &&
               op.getNumResults() == 1) {
      auto in = cast<RankedTensorType>(op.getOperand(0).getType());
      auto out = cast<RankedTensorType>(op.getResult(0).getType());
      op.getResult(0).setType(
          RankedTensorType::get(in.getShape(), out.getElementType()));
    }
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  func.setFunctionType(FunctionType::get(ctx, body.getArgumentTypes(),
                                         ret.getOperandTypes()));
  auto str = [&](StringRef s) { return StringAttr::get(ctx, s); };
  for (BlockArgument arg : body.getArguments()) {
    func.setArgAttr(arg.getArgNumber(), "te.tp_shard",
                    str(shardName(layout.lookup(arg))));
    if (partial.contains(arg))
      func.setArgAttr(arg.getArgNumber(), "te.tp_grad", str("partial"));
  }
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    func.setResultAttr(i, "te.tp_shard",
                       str(shardName(layout.lookup(v))));
  func->setAttr("te.tp", str(std::to_string(size)));
  func->setAttr("te.sequence_parallel", str(sp ? "true" : "false"));
  return success();
}

LogicalResult Sharder::run() {
  if (func.isExternal())
    return success();
  if (!func.getBody().hasOneBlock())
    return func.emitError("te-tensor-parallel: functions of one block only");
  for (Operation &op : func.getBody().front())
    if (failed(visit(&op)))
      return failure();
  return apply();
}

struct TETensorParallelPass
    : public te::impl::TETensorParallelPassBase<TETensorParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    if (size < 2 || size > kMaxTensorParallelSize) {
      getOperation().emitError()
          << "te-tensor-parallel: size must be in [2, "
          << kMaxTensorParallelSize << "], got " << int64_t(size);
      return signalPassFailure();
    }
    if (reduceParamGrads && !sequenceParallel) {
      getOperation().emitError()
          << "te-tensor-parallel: reduce-param-grads needs sequence-parallel "
             "(without it those gradients are whole on every rank)";
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func->hasAttr("te.tp")) {
        func.emitError() << "te-tensor-parallel: @" << func.getSymName()
                         << " is already sharded (te.tp = "
                         << func->getAttr("te.tp") << ")";
        return signalPassFailure();
      }
      Sharder s(func, size, sequenceParallel, reduceParamGrads);
      if (failed(s.run()))
        return signalPassFailure();
    }
  }
};

} // namespace
