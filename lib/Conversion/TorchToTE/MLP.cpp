//===- MLP.cpp - Raising LayerNormMLP blocks --------------------*- C++ -*-===//
//
// Grows a linear on a norm output into an MLP: FC1 (one linear or a
// split/two-linear gated form), the activation, FC2.
//
//===----------------------------------------------------------------------===//

#include "TorchToTE.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::torch_import {

/// `a * b` with `actOut` one of the factors: returns the other factor.
Value otherFactor(Operation *mul, Value actOut) {
  if (!isA(mul, "torch.aten.mul.Tensor"))
    return {};
  if (mul->getOperand(0) == actOut)
    return mul->getOperand(1);
  if (mul->getOperand(1) == actOut)
    return mul->getOperand(0);
  return {};
}

namespace {

/// FC2: a linear that is the sole user of the activation's output `actOut`.
bool matchDownProjection(Group &g, Value actOut) {
  Operation *u = soleUser(actOut);
  auto fc2 = u ? matchLinear(u) : std::nullopt;
  if (!fc2 || fc2->input != actOut)
    return false;
  g.fc2 = *fc2;
  return true;
}

/// The two halves of a split FC1 combined as act(a) * b (either half may
/// be the activated one), then FC2; `splitOps` are the ops that split it.
bool matchGatedHalves(Group &g, Value lo, Value hi,
                      ArrayRef<Operation *> splitOps, std::string &why) {
  Value halves[2] = {lo, hi};
  std::string reason;
  for (int first = 0; first < 2; ++first) {
    Value a = halves[first], b = halves[1 - first];
    std::string actWhy;
    // matchActivation checks that a's users are exactly the activation
    // (quick-GELU reads a twice).
    auto act = matchActivation(a, actWhy);
    if (act && !gatedKind(act->kind) && reason.empty())
      reason = "the activation of one half has no gated form in "
               "TransformerEngine (gated activations: TEActivations.def)";
    if (!act && !actWhy.empty() && reason.empty())
      reason = actWhy;
    if (!act || !gatedKind(act->kind))
      continue;
    Operation *mul = soleUser(act->out);
    if (!mul || otherFactor(mul, act->out) != b || !b.hasOneUse() ||
        !matchDownProjection(g, mul->getResult(0)))
      continue;
    g.kind = Group::NormMLP;
    g.activation = *gatedKind(act->kind);
    g.swapHalves = first == 1;
    g.ops = {g.fc1.op};
    g.ops.append(splitOps.begin(), splitOps.end());
    g.ops.append(act->ops.begin(), act->ops.end());
    g.ops.push_back(mul);
    g.ops.push_back(g.fc2.op);
    return true;
  }
  why = reason.empty() ? "the halves of FC1's output must combine as "
                         "act(a) * b, then FC2"
                       : reason;
  return false;
}

/// Slice form (torch-mlir's `torch` output): FC1's output `h` read by two
/// slices, h[..., :F] and h[..., F:].
bool matchSlicedUpProjection(Group &g, Value h, ArrayRef<Operation *> users,
                             std::string &why) {
  int64_t width = builtinType(h.getType()).getShape().back();
  int64_t rank = rankOf(h);
  Value halves[2];
  for (Operation *u : users) {
    auto dim = constInt(u->getOperand(1));
    auto start = constInt(u->getOperand(2));
    auto end = constInt(u->getOperand(3));
    auto step = constInt(u->getOperand(4));
    if (!dim || (*dim != -1 && *dim != rank - 1) || !start || !end ||
        step != 1) {
      why = "FC1's output must be sliced in two halves along the last dim";
      return false;
    }
    if (*start == 0 && *end == width / 2)
      halves[0] = u->getResult(0);
    else if (*start == width / 2 && (*end == width || *end >= width))
      halves[1] = u->getResult(0);
  }
  if (!halves[0] || !halves[1] || width % 2) {
    why = "FC1's output must be split into two equal halves";
    return false;
  }
  return matchGatedHalves(g, halves[0], halves[1], {users[0], users[1]}, why);
}

bool isSplit(Operation *op) {
  return isA(op, "torch.aten.split.Tensor") ||
         isA(op, "torch.aten.split_with_sizes") || isA(op, "torch.aten.chunk");
}

/// Split form: one FC1 (output `h`) split into [a | b] halves by `split`.
bool matchSplitUpProjection(Group &g, Value h, Operation *split,
                            std::string &why) {
  auto dim = constInt(split->getOperand(2));
  int64_t rank = rankOf(h);
  Operation *unpack = soleUser(split->getResult(0));
  // Three or more parts are not a gated FC1 (e.g. attention's fused QKV
  // projection): the linear is a LayerNormLinear, its split left.
  if (unpack && isA(unpack, "torch.prim.ListUnpack") &&
      unpack->getNumResults() > 2)
    return false;
  if (!dim || (*dim != -1 && *dim != rank - 1) || !unpack ||
      !isA(unpack, "torch.prim.ListUnpack") || unpack->getNumResults() != 2) {
    why = "a split of FC1's output must be two halves along the last dim";
    return false;
  }
  int64_t width = builtinType(h.getType()).getShape().back();
  SmallVector<int64_t> halves;
  if (isA(split, "torch.aten.split_with_sizes")) {
    auto sizes = constIntList(split->getOperand(1));
    if (sizes)
      halves = *sizes;
  } else if (isA(split, "torch.aten.split.Tensor")) {
    if (auto s = constInt(split->getOperand(1)))
      halves = {*s, width - *s};
  } else if (constInt(split->getOperand(1)) == 2) {
    halves = {width / 2, width / 2};
  }
  if (halves.size() != 2 || halves[0] != halves[1] || halves[0] * 2 != width) {
    why = "FC1's output must be split into two equal halves";
    return false;
  }
  return matchGatedHalves(g, unpack->getResult(0), unpack->getResult(1),
                          {split, unpack}, why);
}

/// The activation on FC1's whole output `h`: act(h), then FC2, or the
/// two-linear gated form act(fc1a) * fc1b (fc1b also on `normOut`), then
/// FC2.
bool matchActivatedUpProjection(Group &g, Value h, Value normOut,
                                std::string &why) {
  std::string actWhy;
  auto act = matchActivation(h, actWhy);
  if (!act) {
    why = actWhy;
    return false;
  }
  Operation *next = soleUser(act->out);
  // Two-linear gated form: act(fc1a) * fc1b.
  if (Value other = next ? otherFactor(next, act->out) : Value()) {
    Operation *otherDef = other.getDefiningOp();
    auto fc1b = otherDef ? matchLinear(otherDef) : std::nullopt;
    if (fc1b && fc1b->input == normOut && other.hasOneUse() &&
        !gatedKind(act->kind)) {
      why = "the activation has no gated form in te (gated activations: "
            "TEActivations.def)";
      return false;
    }
    if (fc1b && fc1b->input == normOut && other.hasOneUse() &&
        matchDownProjection(g, next->getResult(0))) {
      g.kind = Group::NormMLP;
      g.fc1b = *fc1b;
      g.activation = *gatedKind(act->kind);
      g.ops = {g.fc1.op, fc1b->op};
      g.ops.append(act->ops.begin(), act->ops.end());
      g.ops.push_back(next);
      g.ops.push_back(g.fc2.op);
      return true;
    }
  }
  auto kind = plainKind(act->kind);
  if (!kind || !matchDownProjection(g, act->out))
    return false;
  g.kind = Group::NormMLP;
  g.activation = *kind;
  g.ops = {g.fc1.op};
  g.ops.append(act->ops.begin(), act->ops.end());
  g.ops.push_back(g.fc2.op);
  return true;
}

} // namespace

/// Tries to grow `fc1` (a linear on the norm output) into an MLP.
bool matchMLP(Group &g, Value normOut, std::string &why) {
  Value h = g.fc1.op->getResult(0);
  if (!builtinType(h.getType()))
    return false; // unknown shape or dtype: not a module we can describe
  if (SmallVector<Operation *> users(h.getUsers());
      users.size() == 2 && llvm::all_of(users, [](Operation *u) {
        return isA(u, "torch.aten.slice.Tensor");
      }))
    return matchSlicedUpProjection(g, h, users, why);
  if (Operation *split = soleUser(h); split && isSplit(split))
    return matchSplitUpProjection(g, h, split, why);
  return matchActivatedUpProjection(g, h, normOut, why);
}

} // namespace mlir::te::torch_import
