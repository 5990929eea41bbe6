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
      m.weightOps.push_back(def);
      // Gemma computes `1 + weight.float()` in f32 for its bf16 norm.
      Operation *up = m.gamma.getDefiningOp();
      if (up && isUpcast(up) && up->getResult(0).hasOneUse() &&
          elementTypeOf(castSource(up)) == xType.getElementType()) {
        m.gamma = castSource(up);
        m.weightOps.push_back(up);
      }
    } else {
      m.gamma = weight;
    }
    if (elementTypeOf(m.gamma) != xType.getElementType()) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << "the weight's dtype " << elementTypeOf(m.gamma)
         << " differs from the input's " << xType.getElementType()
         << "; TransformerEngine's norm weights have the input's dtype";
      why = s;
      return std::nullopt;
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
  // T5 scales the narrow input by the f32 rstd (promoted to f32): the same
  // as scaling its exact upcast.
  Value scaled = scale ? otherOperand(scale, rsqrt->getResult(0)) : Value();
  Operation *xDef = x.getDefiningOp();
  bool narrowInput = scaled && xDef && isUpcast(xDef) &&
                     scaled == castSource(xDef) &&
                     scale->getResult(0).getType() == x.getType();
  if (!isA(scale, "torch.aten.mul.Tensor") || (scaled != x && !narrowInput))
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

/// The mean of v over its last dim, keeping it: `mean.dim(v, [-1], true,
/// none)` or `sum.dim_IntList(v, [-1], true, none) / K`, rooted at `op`
/// (the mean.dim, or the sum); returns the ops (last: the mean's value).
static SmallVector<Operation *> matchMeanAt(Operation *op) {
  if (isA(op, "torch.aten.mean.dim")) {
    Value v = op->getOperand(0);
    if (isLastDimList(op->getOperand(1), rankOf(v)) &&
        isTrue(op->getOperand(2)) && isNone(op->getOperand(3)))
      return {op};
    return {};
  }
  if (isA(op, "torch.aten.sum.dim_IntList")) {
    auto [sum, div] = matchMeanOverLast(op->getOperand(0));
    if (sum == op)
      return {sum, div};
  }
  return {};
}

/// The mean over the last dim among v's users (either form).
static SmallVector<Operation *> findMeanOf(Value v) {
  for (Operation *u : v.getUsers())
    if (u->getOperand(0) == v)
      if (SmallVector<Operation *> ops = matchMeanAt(u); !ops.empty())
        return ops;
  return {};
}

/// The same-dtype variance (torch-mlir's decomposition of native_layer_norm,
/// and LayerNorms written out by hand, e.g. Cohere's):
///   mean = mean(x) | sum(x)/K; c = x - mean; var = mean(c*c | c^2)
/// (c may be computed twice) ==> var, mean = var_mean.correction(x, [-1], 0,
/// keepdim)
LogicalResult recomposeVarMeanSameDtype(Operation *meanOp,
                                        PatternRewriter &rewriter) {
  SmallVector<Operation *> meanOps = matchMeanAt(meanOp);
  if (meanOps.empty())
    return failure();
  Value x = meanOp->getOperand(0);
  if (rankOf(x) < 2)
    return failure();
  Value mean = meanOps.back()->getResult(0);
  // x - mean, for the variance.
  Operation *square = nullptr;
  SmallVector<Operation *> varOps;
  for (Operation *sub : mean.getUsers()) {
    if (!isA(sub, "torch.aten.sub.Tensor") || sub->getOperand(0) != x ||
        sub->getOperand(1) != mean || constNumber(sub->getOperand(2)) != 1.0)
      continue;
    Value c = sub->getResult(0);
    for (Operation *u : c.getUsers()) {
      bool isSquare =
          (isA(u, "torch.aten.mul.Tensor") && u->getOperand(0) == c &&
           u->getOperand(1) == c) ||
          (isA(u, "torch.aten.pow.Tensor_Scalar") && u->getOperand(0) == c &&
           isScalarTwo(u->getOperand(1)));
      if (!isSquare || !u->getResult(0).hasOneUse())
        continue;
      SmallVector<Operation *> ops = findMeanOf(u->getResult(0));
      if (ops.empty())
        continue;
      square = u;
      varOps = {sub, u};
      varOps.append(ops.begin(), ops.end());
      break;
    }
    if (square)
      break;
  }
  if (!square)
    return failure();
  Value var = varOps.back()->getResult(0);
  PatternRewriter &b = rewriter;
  if (Operation *def = x.getDefiningOp())
    b.setInsertionPointAfter(def);
  else
    b.setInsertionPointToStart(cast<BlockArgument>(x).getOwner());
  Location loc = varOps.back()->getLoc();
  TorchBuilder tb(b, loc);
  OperationState state(loc, "torch.aten.var_mean.correction");
  state.addOperands(
      {x, tb.intList({rankOf(x) - 1}), tb.intConst(0), tb.boolConst(true)});
  state.addTypes({var.getType(), mean.getType()});
  Operation *vm = b.create(state);
  rewriter.replaceAllUsesWith(var, vm->getResult(0));
  rewriter.replaceAllUsesWith(mean, vm->getResult(1));
  SmallVector<Operation *> dead(llvm::reverse(varOps));
  dead.append(meanOps.rbegin(), meanOps.rend());
  for (Operation *op : dead)
    if (op->use_empty())
      rewriter.eraseOp(op);
  return success();
}

/// A norm without weight (and, for LayerNorm, without bias) times a weight
/// vector [plus a bias vector] in the norm's dtype:
///   mul(norm(x, none[, none]), w) [+ b]  ==>  norm(x, w[, b])
LogicalResult absorbNormAffine(Operation *mul, PatternRewriter &rewriter) {
  if (!isA(mul, "torch.aten.mul.Tensor"))
    return failure();
  for (int i = 0; i < 2; ++i) {
    Value n = mul->getOperand(i), w = mul->getOperand(1 - i);
    Operation *norm = n.getDefiningOp();
    bool isLN = isA(norm, "torch.aten.layer_norm");
    if ((!isLN && !isA(norm, "torch.aten.rms_norm")) || !n.hasOneUse() ||
        !isNone(norm->getOperand(2)) || (isLN && !isNone(norm->getOperand(3))))
      continue;
    auto nType = builtinType(n.getType());
    auto wType = builtinType(w.getType());
    if (!nType || !wType || wType.getRank() != 1 ||
        wType.getShape()[0] != nType.getShape().back() ||
        wType.getElementType() != nType.getElementType() ||
        mul->getResult(0).getType() != n.getType())
      continue;
    SmallVector<Value> operands(norm->getOperands());
    operands[2] = w;
    SmallVector<Operation *> ops = {norm, mul};
    Value out = mul->getResult(0);
    if (Operation *add = soleUser(out);
        isLN && isA(add, "torch.aten.add.Tensor") && add->getOperand(0) == out &&
        constNumber(add->getOperand(2)) == 1.0 &&
        builtinType(add->getOperand(1).getType()) &&
        builtinType(add->getOperand(1).getType()) == wType &&
        add->getResult(0).getType() == n.getType()) {
      operands[3] = add->getOperand(1);
      ops.push_back(add);
      out = add->getResult(0);
    }
    Operation *last = ops.back();
    rewriter.setInsertionPoint(last);
    TorchBuilder tb(rewriter, last->getLoc());
    Value fused =
        tb.create(norm->getName().getStringRef(), operands, out.getType());
    replaceChain(rewriter, out, fused, ops);
    return success();
  }
  return failure();
}

} // namespace mlir::te::torch_import
