//===- Activation.cpp - Raising pointwise activations -----------*- C++ -*-===//
//
// The activations of an MLP (plain and gated) and their te kinds, and the
// recomposition of SiLU (x * sigmoid(x)) and the tanh GELU formula.
//
//===----------------------------------------------------------------------===//

#include "TorchToTE.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::torch_import {

bool isScalarTwo(Value v) { return constNumber(v) == 2.0; }

/// Matches act(h); every intermediate is used only inside the chain.
std::optional<ActMatch> matchActivation(Value h, std::string &why) {
  SmallVector<Operation *> users(h.getUsers());
  auto single = [](Value v) -> Operation * {
    return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
  };
  if (users.size() == 1) {
    Operation *u = users[0];
    if (isA(u, "torch.aten.gelu")) {
      auto approx = constStr(u->getOperand(1));
      if (approx == std::string("tanh"))
        return ActMatch{ActMatch::GELU, u->getResult(0), {u}};
      if (approx == std::string("none"))
        return ActMatch{ActMatch::GELUErf, u->getResult(0), {u}};
      why = "gelu(approximate='" + approx.value_or("?") +
            "') is not a known GELU variant (expected 'none' or 'tanh')";
      return std::nullopt;
    }
    if (isA(u, "torch.aten.silu"))
      return ActMatch{ActMatch::SiLU, u->getResult(0), {u}};
    if (isA(u, "torch.aten.sigmoid"))
      return ActMatch{ActMatch::Sigmoid, u->getResult(0), {u}};
    if (isA(u, "torch.aten.relu")) {
      Value r = u->getResult(0);
      Operation *sq = single(r);
      if (sq && isA(sq, "torch.aten.pow.Tensor_Scalar") &&
          isScalarTwo(sq->getOperand(1)))
        return ActMatch{ActMatch::SReLU, sq->getResult(0), {u, sq}};
      if (sq && isA(sq, "torch.aten.mul.Tensor") && sq->getOperand(0) == r &&
          sq->getOperand(1) == r)
        return ActMatch{ActMatch::SReLU, sq->getResult(0), {u, sq}};
      return ActMatch{ActMatch::ReLU, r, {u}};
    }
    return std::nullopt;
  }
  // quick-gelu: h * sigmoid(1.702 * h)
  if (users.size() == 2) {
    Operation *scale = nullptr, *mul = nullptr;
    for (Operation *u : users) {
      if (isA(u, "torch.aten.mul.Scalar") && u->getOperand(0) == h)
        scale = u;
      else if (isA(u, "torch.aten.mul.Tensor"))
        mul = u;
    }
    if (!scale || !mul)
      return std::nullopt;
    auto factor = constNumber(scale->getOperand(1));
    Operation *sig = single(scale->getResult(0));
    if (!factor || std::abs(*factor - 1.702) > 1e-6 || !sig ||
        !isA(sig, "torch.aten.sigmoid") || single(sig->getResult(0)) != mul)
      return std::nullopt;
    Value s = sig->getResult(0);
    if (!((mul->getOperand(0) == h && mul->getOperand(1) == s) ||
          (mul->getOperand(1) == h && mul->getOperand(0) == s)))
      return std::nullopt;
    return ActMatch{ActMatch::QGELU, mul->getResult(0), {scale, sig, mul}};
  }
  return std::nullopt;
}

ActivationKinds kindsOf(ActMatch::Kind k) {
  switch (k) {
  case ActMatch::GELU:
    return {ActivationKind::GELU, ActivationKind::GEGLU};
  case ActMatch::GELUErf:
    return {ActivationKind::GELUErf, ActivationKind::GEGLUErf};
  case ActMatch::QGELU:
    return {ActivationKind::QGELU, ActivationKind::QGEGLU};
  case ActMatch::ReLU:
    return {ActivationKind::ReLU, ActivationKind::ReGLU};
  case ActMatch::SReLU:
    return {ActivationKind::SReLU, ActivationKind::SReGLU};
  case ActMatch::SiLU:
    return {ActivationKind::SiLU, ActivationKind::SwiGLU};
  case ActMatch::Sigmoid:
    return {std::nullopt, ActivationKind::GLU};
  }
  return {};
}
std::optional<ActivationKind> plainKind(ActMatch::Kind k) {
  return kindsOf(k).plain;
}
std::optional<ActivationKind> gatedKind(ActMatch::Kind k) {
  return kindsOf(k).gated;
}

/// x * sigmoid(x)  ==>  silu(x)
LogicalResult recomposeSiLU(Operation *sigmoid, PatternRewriter &rewriter) {
  if (!isA(sigmoid, "torch.aten.sigmoid"))
    return failure();
  Value x = sigmoid->getOperand(0), s = sigmoid->getResult(0);
  Operation *mul = soleUser(s);
  if (!isA(mul, "torch.aten.mul.Tensor") || otherOperand(mul, s) != x)
    return failure();
  PatternRewriter &b = rewriter;
  b.setInsertionPoint(mul);
  TorchBuilder tb(b, mul->getLoc());
  Value silu = tb.create("torch.aten.silu", {x}, mul->getResult(0).getType());
  replaceChain(rewriter, mul->getResult(0), silu, {sigmoid, mul});
  return success();
}

/// 0.5x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))  ==>  gelu(x, "tanh")
LogicalResult recomposeGeluTanh(Operation *tanh, PatternRewriter &rewriter) {
  if (!isA(tanh, "torch.aten.tanh"))
    return failure();
  Operation *scale = tanh->getOperand(0).getDefiningOp();
  if (!isA(scale, "torch.aten.mul.Scalar") ||
      !nearly(constNumber(scale->getOperand(1)), 0.7978845608028654) ||
      !scale->getResult(0).hasOneUse())
    return failure();
  Operation *inner = scale->getOperand(0).getDefiningOp();
  if (!isA(inner, "torch.aten.add.Tensor") ||
      constNumber(inner->getOperand(2)) != 1.0 ||
      !inner->getResult(0).hasOneUse())
    return failure();
  Value x = inner->getOperand(0);
  Operation *cubic = inner->getOperand(1).getDefiningOp();
  if (!isA(cubic, "torch.aten.mul.Scalar") ||
      !nearly(constNumber(cubic->getOperand(1)), 0.044715) ||
      !cubic->getResult(0).hasOneUse())
    return failure();
  Operation *pow = cubic->getOperand(0).getDefiningOp();
  if (!isA(pow, "torch.aten.pow.Tensor_Scalar") || pow->getOperand(0) != x ||
      constNumber(pow->getOperand(1)) != 3.0 || !pow->getResult(0).hasOneUse())
    return failure();
  Operation *plusOne = soleUser(tanh->getResult(0));
  if (!isA(plusOne, "torch.aten.add.Scalar") ||
      constNumber(plusOne->getOperand(1)) != 1.0 ||
      constNumber(plusOne->getOperand(2)) != 1.0)
    return failure();
  Operation *mul = soleUser(plusOne->getResult(0));
  Value half = mul ? otherOperand(mul, plusOne->getResult(0)) : Value();
  Operation *halfOp = half ? half.getDefiningOp() : nullptr;
  if (!isA(mul, "torch.aten.mul.Tensor") ||
      !isA(halfOp, "torch.aten.mul.Scalar") || halfOp->getOperand(0) != x ||
      constNumber(halfOp->getOperand(1)) != 0.5 || !half.hasOneUse())
    return failure();
  PatternRewriter &b = rewriter;
  b.setInsertionPoint(mul);
  TorchBuilder tb(b, mul->getLoc());
  Value gelu = tb.create("torch.aten.gelu", {x, tb.strConst("tanh")},
                         mul->getResult(0).getType());
  replaceChain(rewriter, mul->getResult(0), gelu,
               {halfOp, pow, cubic, inner, scale, tanh, plusOne, mul});
  return success();
}

} // namespace mlir::te::torch_import
