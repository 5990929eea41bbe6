//===- Linear.cpp - Raising aten.linear -------------------------*- C++ -*-===//
//
// aten.linear, and its recomposition from view/permute/mm(/add)/view and
// GPT-2's Conv1D (mm on an [in, out] weight).
//
//===----------------------------------------------------------------------===//

#include "TorchToTE.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::torch_import {

std::optional<LinearMatch> matchLinear(Operation *op) {
  // Only a 2-D weight [out, in] is a TransformerEngine Linear; other forms
  // stay unmatched and are reported.
  if (!isA(op, "torch.aten.linear") || rankOf(op->getOperand(1)) != 2 ||
      rankOf(op->getOperand(0)) < 1)
    return std::nullopt;
  LinearMatch m{op, op->getOperand(0), op->getOperand(1), Value()};
  if (!isNone(op->getOperand(2)))
    m.bias = op->getOperand(2);
  return m;
}

/// [view(x) ->] mm(x2, permute(W,[1,0]) | t(W) | W_in_out)
///   [-> mul.Scalar 1, add(mul.Scalar(b, 1)) | add.Tensor(b)] [-> view]
///   ==>  linear(x, W, b)  (a Conv1D [in, out] weight is transposed first)
LogicalResult recomposeLinear(Operation *mm, PatternRewriter &rewriter) {
  // mm on a flattened input, or matmul on the N-D input (aten.linear's
  // decomposition in torch-mlir's own pipeline).
  bool isMatmul = isA(mm, "torch.aten.matmul");
  if (!isA(mm, "torch.aten.mm") && !isMatmul)
    return failure();
  Value x2 = mm->getOperand(0), rhs = mm->getOperand(1);
  auto x2Type = builtinType(x2.getType());
  auto rhsType = builtinType(rhs.getType());
  if (!x2Type || !rhsType || rhsType.getRank() != 2 ||
      (isMatmul ? x2Type.getRank() < 2 : x2Type.getRank() != 2))
    return failure();
  SmallVector<Operation *> ops = {mm};
  Value x = x2;
  Operation *view = isMatmul ? nullptr : x2.getDefiningOp();
  if (isA(view, "torch.aten.view") && x2.hasOneUse()) {
    Value src = view->getOperand(0);
    auto srcType = builtinType(src.getType());
    if (srcType && srcType.getRank() >= 2 &&
        srcType.getShape().back() == x2Type.getShape().back()) {
      x = src;
      ops.push_back(view);
    }
  }
  Value weight; // [N, K]
  Operation *rhsDef = rhs.getDefiningOp();
  auto isSwap = [](std::optional<int64_t> a, std::optional<int64_t> b) {
    return a && b &&
           (((*a == 0 || *a == -2) && (*b == 1 || *b == -1)) ||
            ((*a == 1 || *a == -1) && (*b == 0 || *b == -2)));
  };
  bool transposedDef =
      rhs.hasOneUse() &&
      ((isA(rhsDef, "torch.aten.permute") &&
        constIntList(rhsDef->getOperand(1)) == SmallVector<int64_t>{1, 0}) ||
       isA(rhsDef, "torch.aten.t") ||
       (isA(rhsDef, "torch.aten.transpose.int") &&
        isSwap(constInt(rhsDef->getOperand(1)),
               constInt(rhsDef->getOperand(2)))));
  if (transposedDef)
    ops.push_back(rhsDef);
  Value out = mm->getResult(0), bias;
  auto scaledByOne = [](Operation *op, Value v) {
    return isA(op, "torch.aten.mul.Scalar") && op->getOperand(0) == v &&
           constNumber(op->getOperand(1)) == 1.0;
  };
  if (Operation *u = soleUser(out); scaledByOne(u, out)) {
    // addmm's decomposition: mm * 1 + bias * 1
    Operation *add = soleUser(u->getResult(0));
    Value other = add ? otherOperand(add, u->getResult(0)) : Value();
    Operation *biasScale = other ? other.getDefiningOp() : nullptr;
    if (isA(add, "torch.aten.add.Tensor") &&
        add->getOperand(0) == u->getResult(0) &&
        constNumber(add->getOperand(2)) == 1.0 && biasScale &&
        isA(biasScale, "torch.aten.mul.Scalar") &&
        constNumber(biasScale->getOperand(1)) == 1.0 && other.hasOneUse() &&
        rankOf(biasScale->getOperand(0)) == 1) {
      bias = biasScale->getOperand(0);
      ops.append({u, biasScale, add});
      out = add->getResult(0);
    } else {
      return failure();
    }
  } else if (isA(u, "torch.aten.add.Tensor") && u->getOperand(0) == out &&
             rankOf(u->getOperand(1)) == 1 &&
             constNumber(u->getOperand(2)) == 1.0) {
    bias = u->getOperand(1);
    ops.push_back(u);
    out = u->getResult(0);
  }
  // The view back to the input's leading dims.
  if (x != x2) {
    Operation *back = soleUser(out);
    auto srcType = builtinType(x.getType());
    auto backType =
        back ? builtinType(back->getResult(0).getType()) : RankedTensorType();
    if (!isA(back, "torch.aten.view") || !backType ||
        backType.getRank() != srcType.getRank() ||
        backType.getShape().drop_back() != srcType.getShape().drop_back())
      return failure();
    ops.push_back(back);
    out = back->getResult(0);
  }
  Operation *last = mm;
  for (Operation *op : ops)
    if (last->isBeforeInBlock(op))
      last = op;
  PatternRewriter &b = rewriter;
  b.setInsertionPoint(last);
  TorchBuilder tb(b, last->getLoc());
  if (transposedDef) {
    weight = rhsDef->getOperand(0);
  } else {
    // Conv1D: the weight is [in, out]; transpose it to [out, in].
    auto wt =
        RankedTensorType::get({rhsType.getDimSize(1), rhsType.getDimSize(0)},
                              rhsType.getElementType());
    weight =
        tb.create("torch.aten.t", {rhs},
                  tt::ValueTensorType::get(b.getContext(), true, wt.getShape(),
                                           wt.getElementType()));
  }
  Value linear = tb.create("torch.aten.linear",
                           {x, weight, bias ? bias : tb.none()}, out.getType());
  replaceChain(rewriter, out, linear, ops);
  return success();
}

} // namespace mlir::te::torch_import
