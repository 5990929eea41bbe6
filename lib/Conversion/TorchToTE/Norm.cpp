//===- Norm.cpp - Raising LayerNorm and RMSNorm -----------------*- C++ -*-===//
//
// aten.layer_norm / aten.rms_norm over the last dim, and their recomposition
// from the decomposed forms (var_mean/rsqrt/sub/mul, pow/mean/rsqrt/mul).
//
//===----------------------------------------------------------------------===//

#include "TorchToTE.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::torch_import {

std::optional<NormMatch> matchNorm(Operation *op, std::string &why) {
  NormMatch m;
  m.op = op;
  Value x = op->getOperand(0);
  int64_t rank = rankOf(x);
  auto xType = builtinType(x.getType());
  if (!xType || rank < 2)
    return why = "the input must be a ranked tensor of rank >= 2 with a "
                 "known dtype",
           std::nullopt;
  auto shape = constIntList(op->getOperand(1));
  int64_t k = xType.getShape().back();
  if (!shape || shape->size() != 1 || (*shape)[0] != k)
    return why = "normalized_shape must be the last dimension [" +
                 std::to_string(k) +
                 "]; TransformerEngine normalizes over the hidden dimension "
                 "only",
           std::nullopt;
  m.input = x;
  bool isLayerNorm = isA(op, "torch.aten.layer_norm");
  m.kind =
      isLayerNorm ? NormalizationKind::LayerNorm : NormalizationKind::RMSNorm;
  Value weight = op->getOperand(2);
  if (!isNone(weight)) {
    // zero_centered_gamma: weight = gamma + 1.
    Operation *def = weight.getDefiningOp();
    if (isA(def, "torch.aten.add.Scalar") &&
        constNumber(def->getOperand(1)) == 1.0 &&
        constNumber(def->getOperand(2)) == 1.0 &&
        def->getResult(0).hasOneUse()) {
      m.zeroCentered = true;
      m.gamma = def->getOperand(0);
    } else {
      m.gamma = weight;
    }
  }
  Value epsValue;
  if (isLayerNorm) {
    if (!isNone(op->getOperand(3)))
      m.beta = op->getOperand(3);
    epsValue = op->getOperand(4);
  } else {
    epsValue = op->getOperand(3);
  }
  if (isNone(epsValue)) {
    // torch.nn.functional.rms_norm defaults eps to finfo(dtype).eps.
    Type elt = xType.getElementType();
    m.eps = elt.isF32()    ? 1.1920928955078125e-07
            : elt.isBF16() ? 0.0078125
                           : 0.0009765625;
  } else if (auto eps = constNumber(epsValue)) {
    m.eps = *eps;
  } else {
    return why = "eps must be a constant", std::nullopt;
  }
  return m;
}

/// var_mean(x, [-1], correction 0, keepdim) -> add.Scalar(eps) -> rsqrt;
/// sub(x, mean) * rstd [* gamma] [+ beta]  ==>  layer_norm
LogicalResult recomposeLayerNorm(Operation *varMean, PatternRewriter &rewriter) {
  if (!isA(varMean, "torch.aten.var_mean.correction") ||
      varMean->getNumResults() != 2)
    return failure();
  Value x = varMean->getOperand(0);
  int64_t rank = rankOf(x);
  // keepdim must be set: [.., 1] statistics broadcast along the features.
  if (rank < 2 || !isLastDimList(varMean->getOperand(1), rank) ||
      !isTrue(varMean->getOperand(3)) ||
      constNumber(varMean->getOperand(2)) != 0.0)
    return failure();
  Value var = varMean->getResult(0), mean = varMean->getResult(1);
  Operation *addEps = soleUser(var);
  if (!isA(addEps, "torch.aten.add.Scalar") ||
      constNumber(addEps->getOperand(2)) != 1.0)
    return failure();
  auto eps = constNumber(addEps->getOperand(1));
  Operation *rsqrt = soleUser(addEps->getResult(0));
  Operation *sub = soleUser(mean);
  if (!eps || !isA(rsqrt, "torch.aten.rsqrt") ||
      !isA(sub, "torch.aten.sub.Tensor") || sub->getOperand(0) != x ||
      sub->getOperand(1) != mean || constNumber(sub->getOperand(2)) != 1.0)
    return failure();
  Operation *norm = soleUser(sub->getResult(0));
  if (!isA(norm, "torch.aten.mul.Tensor") ||
      otherOperand(norm, sub->getResult(0)) != rsqrt->getResult(0) ||
      !rsqrt->getResult(0).hasOneUse())
    return failure();
  SmallVector<Operation *> ops = {varMean, addEps, rsqrt, sub, norm};
  Value out = norm->getResult(0), gamma, beta;
  auto isVector = [&](Value v) { return v && rankOf(v) == 1; };
  if (Operation *mulW = soleUser(out);
      isA(mulW, "torch.aten.mul.Tensor") && isVector(otherOperand(mulW, out))) {
    gamma = otherOperand(mulW, out);
    ops.push_back(mulW);
    out = mulW->getResult(0);
    if (Operation *addB = soleUser(out);
        isA(addB, "torch.aten.add.Tensor") && addB->getOperand(0) == out &&
        isVector(addB->getOperand(1)) &&
        constNumber(addB->getOperand(2)) == 1.0) {
      beta = addB->getOperand(1);
      ops.push_back(addB);
      out = addB->getResult(0);
    }
  }
  Operation *last = ops.back();
  PatternRewriter &b = rewriter;
  b.setInsertionPoint(last);
  TorchBuilder tb(b, last->getLoc());
  int64_t k = builtinType(x.getType()).getShape().back();
  Value ln = tb.create("torch.aten.layer_norm",
                       {x, tb.intList({k}), gamma ? gamma : tb.none(),
                        beta ? beta : tb.none(), tb.floatConst(*eps),
                        tb.boolConst(false)},
                       out.getType());
  replaceChain(rewriter, out, ln, ops);
  return success();
}

/// pow(x, 2) | x*x -> mean over the last dim (mean.dim, or sum.dim_IntList
/// then div.Scalar K) -> add.Scalar(eps) -> rsqrt; x * rstd [* gamma]
///   ==>  rms_norm
LogicalResult recomposeRMSNorm(Operation *square, PatternRewriter &rewriter) {
  Value x;
  if (isA(square, "torch.aten.pow.Tensor_Scalar") &&
      constNumber(square->getOperand(1)) == 2.0)
    x = square->getOperand(0);
  else if (isA(square, "torch.aten.mul.Tensor") &&
           square->getOperand(0) == square->getOperand(1))
    x = square->getOperand(0);
  else
    return failure();
  int64_t rank = rankOf(x);
  Value sq = square->getResult(0);
  if (rank < 2)
    return failure();
  SmallVector<Operation *> meanOps;
  Value meanOut;
  if (Operation *m = soleUser(sq);
      isA(m, "torch.aten.mean.dim") && isLastDimList(m->getOperand(1), rank) &&
      isTrue(m->getOperand(2)) && isNone(m->getOperand(3))) {
    meanOps = {m};
    meanOut = m->getResult(0);
  } else if (auto [sum, div] = matchMeanOverLast(sq); div && sq.hasOneUse()) {
    meanOps = {sum, div};
    meanOut = div->getResult(0);
  } else {
    return failure();
  }
  Operation *pow = square;
  Operation *mean = meanOps.back();
  Operation *addEps = soleUser(mean->getResult(0));
  if (!isA(addEps, "torch.aten.add.Scalar") ||
      constNumber(addEps->getOperand(2)) != 1.0)
    return failure();
  auto eps = constNumber(addEps->getOperand(1));
  Operation *rsqrt = soleUser(addEps->getResult(0));
  if (!eps || !isA(rsqrt, "torch.aten.rsqrt"))
    return failure();
  Operation *scale = soleUser(rsqrt->getResult(0));
  if (!isA(scale, "torch.aten.mul.Tensor") ||
      otherOperand(scale, rsqrt->getResult(0)) != x)
    return failure();
  SmallVector<Operation *> ops = {pow};
  ops.append(meanOps.begin(), meanOps.end());
  ops.append({addEps, rsqrt, scale});
  Value out = scale->getResult(0), gamma;
  // Users other than shape assertions.
  auto realUser = [](Value v) -> Operation * {
    Operation *found = nullptr;
    for (Operation *u : v.getUsers()) {
      if (isA(u, "torch.aten._assert_tensor_metadata"))
        continue;
      if (found)
        return nullptr;
      found = u;
    }
    return found;
  };
  if (Operation *mulW = realUser(out); isA(mulW, "torch.aten.mul.Tensor")) {
    Value w = otherOperand(mulW, out);
    if (w && rankOf(w) == 1) {
      gamma = w;
      ops.push_back(mulW);
      out = mulW->getResult(0);
    }
  }
  // Shape assertions on intermediates go with them.
  for (Operation *op : ArrayRef<Operation *>(ops).drop_back())
    for (Operation *u : llvm::make_early_inc_range(op->getResult(0).getUsers()))
      if (isA(u, "torch.aten._assert_tensor_metadata"))
        rewriter.eraseOp(u);
  Operation *last = ops.back();
  PatternRewriter &b = rewriter;
  b.setInsertionPoint(last);
  TorchBuilder tb(b, last->getLoc());
  int64_t k = builtinType(x.getType()).getShape().back();
  Value rms = tb.create(
      "torch.aten.rms_norm",
      {x, tb.intList({k}), gamma ? gamma : tb.none(), tb.floatConst(*eps)},
      out.getType());
  replaceChain(rewriter, out, rms, ops);
  return success();
}

/// `div.Scalar(sum.dim_IntList(v, [-1], keepdim, none), K)`: the mean of v
/// over its last dim K; returns the two ops or nulls.
std::pair<Operation *, Operation *> matchMeanOverLast(Value v) {
  int64_t rank = rankOf(v);
  auto type = builtinType(v.getType());
  if (!type)
    return {};
  for (Operation *sum : v.getUsers()) {
    if (!isA(sum, "torch.aten.sum.dim_IntList") || sum->getOperand(0) != v ||
        !isLastDimList(sum->getOperand(1), rank) ||
        !isTrue(sum->getOperand(2)) || !isNone(sum->getOperand(3)) ||
        !sum->getResult(0).hasOneUse())
      continue;
    Operation *div = *sum->getResult(0).getUsers().begin();
    if (isA(div, "torch.aten.div.Scalar") &&
        constNumber(div->getOperand(1)) ==
            static_cast<double>(type.getShape().back()))
      return {sum, div};
  }
  return {};
}

/// torch-mlir's `torch` output computes LayerNorm's variance in f64:
///   x64 = to.dtype(x, f64); m64 = mean(x64); c = x64 - m64;
///   var = to.dtype(mean(c * c), dtype(x)); mean = mean(x)
/// ==> var, mean = var_mean.correction(x, [-1], 0, keepdim)
LogicalResult recomposeVarMean(Operation *up, PatternRewriter &rewriter) {
  if (!isA(up, "torch.aten.to.dtype") || !elementTypeOf(up->getResult(0)) ||
      !elementTypeOf(up->getResult(0)).isF64())
    return failure();
  Value x = up->getOperand(0), x64 = up->getResult(0);
  auto [sum64, mean64] = matchMeanOverLast(x64);
  if (!mean64 || !mean64->getResult(0).hasOneUse())
    return failure();
  Operation *sub = *mean64->getResult(0).getUsers().begin();
  if (!isA(sub, "torch.aten.sub.Tensor") || sub->getOperand(0) != x64 ||
      constNumber(sub->getOperand(2)) != 1.0)
    return failure();
  Value c = sub->getResult(0);
  Operation *sq = soleUser(c);
  if (!sq && !c.use_empty()) {
    // c is used twice by the same mul: c * c.
    Operation *first = *c.getUsers().begin();
    if (llvm::all_of(c.getUsers(), [&](Operation *u) { return u == first; }))
      sq = first;
  }
  if (!isA(sq, "torch.aten.mul.Tensor") || sq->getOperand(0) != c ||
      sq->getOperand(1) != c)
    return failure();
  auto [sumSq, var64] = matchMeanOverLast(sq->getResult(0));
  if (!var64 || !var64->getResult(0).hasOneUse())
    return failure();
  Operation *down = *var64->getResult(0).getUsers().begin();
  if (!isA(down, "torch.aten.to.dtype") ||
      elementTypeOf(down->getResult(0)) != elementTypeOf(x))
    return failure();
  auto [sumX, mean] = matchMeanOverLast(x);
  if (!mean)
    return failure();
  // x64 must feed only the two reductions above.
  for (Operation *u : x64.getUsers())
    if (u != sum64 && u != sub)
      return failure();
  // Right after x's definition, so that it dominates every use it takes over.
  PatternRewriter &b = rewriter;
  if (Operation *def = x.getDefiningOp())
    b.setInsertionPointAfter(def);
  else
    b.setInsertionPointToStart(cast<BlockArgument>(x).getOwner());
  TorchBuilder tb(b, down->getLoc());
  int64_t rank = rankOf(x);
  OperationState state(down->getLoc(), "torch.aten.var_mean.correction");
  state.addOperands(
      {x, tb.intList({rank - 1}), tb.intConst(0), tb.boolConst(true)});
  state.addTypes({down->getResult(0).getType(), mean->getResult(0).getType()});
  Operation *vm = b.create(state);
  rewriter.replaceAllUsesWith(down->getResult(0), vm->getResult(0));
  rewriter.replaceAllUsesWith(mean->getResult(0), vm->getResult(1));
  SmallVector<Operation *> dead = {down,   var64, sumSq, sq,   sub,
                                   mean64, sum64, up,    mean, sumX};
  for (Operation *op : dead)
    if (op->use_empty())
      rewriter.eraseOp(op);
  return success();
}

/// The same-dtype variance (torch-mlir's decomposition of native_layer_norm):
///   mean = sum(x)/K; c = x - mean; var = sum(c*c)/K
/// ==> var, mean = var_mean.correction(x, [-1], 0, keepdim)
LogicalResult recomposeVarMeanSameDtype(Operation *sum, PatternRewriter &rewriter) {
  if (!isA(sum, "torch.aten.sum.dim_IntList"))
    return failure();
  Value x = sum->getOperand(0);
  auto [sumX, mean] = matchMeanOverLast(x);
  if (sumX != sum || !mean)
    return failure();
  Operation *sub = nullptr;
  for (Operation *u : mean->getResult(0).getUsers())
    if (isA(u, "torch.aten.sub.Tensor") && u->getOperand(0) == x &&
        u->getOperand(1) == mean->getResult(0) &&
        constNumber(u->getOperand(2)) == 1.0)
      sub = u;
  if (!sub || !mean->getResult(0).hasOneUse())
    return failure();
  Value c = sub->getResult(0);
  Operation *sq = nullptr;
  for (Operation *u : c.getUsers())
    if (isA(u, "torch.aten.mul.Tensor") && u->getOperand(0) == c &&
        u->getOperand(1) == c)
      sq = u;
  if (!sq || !sq->getResult(0).hasOneUse())
    return failure();
  auto [sumSq, var] = matchMeanOverLast(sq->getResult(0));
  if (!var)
    return failure();
  PatternRewriter &b = rewriter;
  if (Operation *def = x.getDefiningOp())
    b.setInsertionPointAfter(def);
  else
    b.setInsertionPointToStart(cast<BlockArgument>(x).getOwner());
  TorchBuilder tb(b, var->getLoc());
  OperationState state(var->getLoc(), "torch.aten.var_mean.correction");
  state.addOperands(
      {x, tb.intList({rankOf(x) - 1}), tb.intConst(0), tb.boolConst(true)});
  state.addTypes({var->getResult(0).getType(), mean->getResult(0).getType()});
  Operation *vm = b.create(state);
  rewriter.replaceAllUsesWith(var->getResult(0), vm->getResult(0));
  // The centered value now reads the var_mean's mean.
  rewriter.modifyOpInPlace(sub, [&] { sub->setOperand(1, vm->getResult(1)); });
  for (Operation *op : {var, sumSq, sq, mean, sum})
    if (op->use_empty())
      rewriter.eraseOp(op);
  return success();
}

} // namespace mlir::te::torch_import
