//===- ImportTorch.cpp - Raise torch-mlir exports to te ---------*- C++ -*-===//
//
// Implements --te-import-torch: recognizes LayerNorm/RMSNorm + Linear and
// LayerNorm/RMSNorm + MLP blocks in torch-mlir's output and rebuilds each
// function on builtin tensors with te ops. Unrecognized operations are
// errors: a graph is never partially or silently mis-compiled.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Dialect/Torch/TorchDialect.h"
#include "te/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEIMPORTTORCHPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
namespace tt = mlir::te::torch;

namespace {

const char *kSupported =
    "supported: aten.layer_norm / aten.rms_norm over the last dim followed by "
    "aten.linear (LayerNormLinear), or by linear + gelu / relu / silu / "
    "quick-gelu / squared-relu / gated act(a)*b + linear (LayerNormMLP); a "
    "lone aten.linear; aten.add.Tensor with alpha 1";

bool isA(Operation *op, StringRef name) {
  return op && op->getName().getStringRef() == name;
}
bool isA(Value v, StringRef name) { return isA(v.getDefiningOp(), name); }

//===----------------------------------------------------------------------===//
// Torch constants
//===----------------------------------------------------------------------===//

std::optional<int64_t> constInt(Value v) {
  Operation *op = v.getDefiningOp();
  if (!isA(op, "torch.constant.int"))
    return std::nullopt;
  return cast<IntegerAttr>(op->getAttr("value")).getInt();
}

std::optional<double> constNumber(Value v) {
  Operation *op = v.getDefiningOp();
  if (isA(op, "torch.constant.float"))
    return cast<FloatAttr>(op->getAttr("value")).getValueAsDouble();
  if (auto i = constInt(v))
    return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<std::string> constStr(Value v) {
  Operation *op = v.getDefiningOp();
  if (!isA(op, "torch.constant.str"))
    return std::nullopt;
  return cast<StringAttr>(op->getAttr("value")).getValue().str();
}

bool isNone(Value v) { return isA(v, "torch.constant.none"); }

bool isTrue(Value v) {
  Operation *op = v.getDefiningOp();
  return isA(op, "torch.constant.bool") &&
         cast<BoolAttr>(op->getAttr("value")).getValue();
}

std::optional<SmallVector<int64_t>> constIntList(Value v) {
  Operation *op = v.getDefiningOp();
  if (!isA(op, "torch.prim.ListConstruct"))
    return std::nullopt;
  SmallVector<int64_t> values;
  for (Value e : op->getOperands()) {
    auto i = constInt(e);
    if (!i)
      return std::nullopt;
    values.push_back(*i);
  }
  return values;
}

RankedTensorType builtinType(Type t) {
  if (auto vt = dyn_cast<tt::ValueTensorType>(t))
    return vt.toBuiltinTensor();
  return {};
}

int64_t rankOf(Value v) {
  auto t = builtinType(v.getType());
  return t ? t.getRank() : -1;
}

//===----------------------------------------------------------------------===//
// Matching
//===----------------------------------------------------------------------===//

/// A normalization feeding the module.
struct NormMatch {
  Operation *op = nullptr;
  NormalizationKind kind = NormalizationKind::LayerNorm;
  Value input, gamma, beta; // torch values; beta may be null
  bool zeroCentered = false;
  double eps = 1e-5;
};

/// An aten.linear.
struct LinearMatch {
  Operation *op = nullptr;
  Value input, weight, bias; // bias may be null
};

/// A recognized module: a norm (optional) with one linear, or an MLP.
struct Group {
  enum Kind { LinearOnly, NormLinear, NormMLP } kind;
  NormMatch norm;
  LinearMatch fc1, fc1b;   // fc1b: second half of a two-linear gated FC1
  bool swapHalves = false; // split form with the activation on the 2nd half
  ActivationKind activation = ActivationKind::GELU;
  LinearMatch fc2;
  SmallVector<Operation *> ops; // every torch op the group replaces
  Operation *anchor = nullptr;  // where the te op is emitted
  bool returnsNorm = false;
  Value normResult; // torch value of the norm output, when returned
};

/// Builds a diagnostic at `op` naming it.
InFlightDiagnostic unsupported(Operation *op, const Twine &why) {
  return op->emitError() << "te-import-torch: cannot import '" << op->getName()
                         << "': " << why;
}

FailureOr<NormMatch> matchNorm(Operation *op) {
  NormMatch m;
  m.op = op;
  Value x = op->getOperand(0);
  int64_t rank = rankOf(x);
  auto xType = builtinType(x.getType());
  if (!xType || rank < 2)
    return unsupported(op, "the input must be a ranked tensor of rank >= 2 "
                           "with a known dtype"),
           failure();
  auto shape = constIntList(op->getOperand(1));
  int64_t k = xType.getShape().back();
  if (!shape || shape->size() != 1 || (*shape)[0] != k)
    return unsupported(op, "normalized_shape must be the last dimension [" +
                               Twine(k) +
                               "]; TransformerEngine normalizes over the "
                               "hidden dimension only"),
           failure();
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
    return unsupported(op, "eps must be a constant"), failure();
  }
  return m;
}

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

/// A pointwise activation applied to `h`, ending in `out`.
struct ActMatch {
  enum Kind { GELU, GELUErf, QGELU, ReLU, SReLU, SiLU, Sigmoid } kind;
  Value out;
  SmallVector<Operation *> ops;
};

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

/// The te activation for a matched pointwise activation, applied alone
/// (`plain`) or to one half of a gated FC1 (`gated`); none where
/// TransformerEngine has no such activation (sigmoid alone, gated erf GELU).
struct ActivationKinds {
  std::optional<ActivationKind> plain, gated;
};
ActivationKinds kindsOf(ActMatch::Kind k) {
  switch (k) {
  case ActMatch::GELU:
    return {ActivationKind::GELU, ActivationKind::GEGLU};
  case ActMatch::GELUErf:
    return {ActivationKind::GELUErf, std::nullopt};
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

/// Tries to grow `fc1` (a linear on the norm output) into an MLP.
bool matchMLP(Group &g, Value normOut, std::string &why) {
  Value h = g.fc1.op->getResult(0);
  if (!builtinType(h.getType()))
    return false; // unknown shape or dtype: not a module we can describe
  auto single = [](Value v) -> Operation * {
    return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
  };
  auto finishWithFc2 = [&](Value actOut) -> bool {
    Operation *u = single(actOut);
    auto fc2 = u ? matchLinear(u) : std::nullopt;
    if (!fc2 || fc2->input != actOut)
      return false;
    g.fc2 = *fc2;
    return true;
  };

  // The two halves of a split FC1 combined as act(a) * b (either half may
  // be the activated one), then FC2.
  auto matchGatedHalves = [&](Value lo, Value hi,
                              ArrayRef<Operation *> splitOps) -> bool {
    Value halves[2] = {lo, hi};
    for (int first = 0; first < 2; ++first) {
      Value a = halves[first], b = halves[1 - first];
      std::string actWhy;
      // matchActivation checks that a's users are exactly the activation
      // (quick-GELU reads a twice).
      auto act = matchActivation(a, actWhy);
      if (!act || !gatedKind(act->kind))
        continue;
      Operation *mul = single(act->out);
      if (!mul || otherFactor(mul, act->out) != b || !b.hasOneUse() ||
          !finishWithFc2(mul->getResult(0)))
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
    why = "the halves of FC1's output must combine as act(a) * b";
    return false;
  };

  // Slice form (torch-mlir's `torch` output): h[..., :F] and h[..., F:].
  if (SmallVector<Operation *> users(h.getUsers());
      users.size() == 2 && llvm::all_of(users, [](Operation *u) {
        return isA(u, "torch.aten.slice.Tensor");
      })) {
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
    return matchGatedHalves(halves[0], halves[1], {users[0], users[1]});
  }

  // Split form: one FC1 split into [a | b] halves.
  if (Operation *split = single(h)) {
    bool isSplit = isA(split, "torch.aten.split.Tensor") ||
                   isA(split, "torch.aten.split_with_sizes") ||
                   isA(split, "torch.aten.chunk");
    if (isSplit) {
      auto dim = constInt(split->getOperand(2));
      int64_t rank = rankOf(h);
      Operation *unpack = single(split->getResult(0));
      if (!dim || (*dim != -1 && *dim != rank - 1) || !unpack ||
          !isA(unpack, "torch.prim.ListUnpack") ||
          unpack->getNumResults() != 2) {
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
      if (halves.size() != 2 || halves[0] != halves[1] ||
          halves[0] * 2 != width) {
        why = "FC1's output must be split into two equal halves";
        return false;
      }
      return matchGatedHalves(unpack->getResult(0), unpack->getResult(1),
                              {split, unpack});
    }
  }

  std::string actWhy;
  auto act = matchActivation(h, actWhy);
  if (!act) {
    why = actWhy;
    return false;
  }
  Operation *next = single(act->out);
  // Two-linear gated form: act(fc1a) * fc1b.
  if (Value other = next ? otherFactor(next, act->out) : Value()) {
    Operation *otherDef = other.getDefiningOp();
    auto fc1b = otherDef ? matchLinear(otherDef) : std::nullopt;
    if (fc1b && fc1b->input == normOut && other.hasOneUse() &&
        !gatedKind(act->kind)) {
      why = "a gated erf GELU has no TransformerEngine activation (GeGLU "
            "uses the tanh GELU; use approximate='tanh')";
      return false;
    }
    if (fc1b && fc1b->input == normOut && other.hasOneUse() &&
        finishWithFc2(next->getResult(0))) {
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
  if (!kind || !finishWithFc2(act->out))
    return false;
  g.kind = Group::NormMLP;
  g.activation = *kind;
  g.ops = {g.fc1.op};
  g.ops.append(act->ops.begin(), act->ops.end());
  g.ops.push_back(g.fc2.op);
  return true;
}

//===----------------------------------------------------------------------===//
// Recomposition of decomposed forms
//===----------------------------------------------------------------------===//
//
// torch-mlir's default `raw` output comes from PyTorch's core-ATen
// decompositions: LayerNorm is var_mean/rsqrt/sub/mul(/mul/add), Linear is
// view/permute/mm(/mul.Scalar 1/add)/view, SiLU is x*sigmoid(x); GPT-2's
// Conv1D is mm on an [in, out] weight, its gelu_new is the tanh formula, and
// LLaMA's RMSNorm is pow/mean/rsqrt/mul/mul. These rewrites put the
// high-level torch ops back (as torch-mlir's own recompose-complex-ops
// does), so that the raising below sees one form. Each rewrite only fires
// when every intermediate is used inside the pattern alone.

/// Creates torch ops (unregistered) with an OpBuilder.
class TorchBuilder {
public:
  TorchBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value create(StringRef name, ValueRange operands, Type result,
               ArrayRef<NamedAttribute> attrs = {}) {
    OperationState state(loc, name);
    state.addOperands(operands);
    if (result)
      state.addTypes(result);
    state.addAttributes(attrs);
    Operation *op = b.create(state);
    return result ? op->getResult(0) : Value();
  }
  Value intConst(int64_t v) {
    return create("torch.constant.int", {}, tt::IntType::get(ctx()),
                  {b.getNamedAttr("value", b.getI64IntegerAttr(v))});
  }
  Value floatConst(double v) {
    return create("torch.constant.float", {}, tt::TorchFloatType::get(ctx()),
                  {b.getNamedAttr("value", b.getF64FloatAttr(v))});
  }
  Value boolConst(bool v) {
    return create("torch.constant.bool", {}, tt::BoolType::get(ctx()),
                  {b.getNamedAttr("value", b.getBoolAttr(v))});
  }
  Value strConst(StringRef v) {
    return create("torch.constant.str", {}, tt::StringType::get(ctx()),
                  {b.getNamedAttr("value", b.getStringAttr(v))});
  }
  Value none() {
    return create("torch.constant.none", {}, tt::TorchNoneType::get(ctx()));
  }
  Value intList(ArrayRef<int64_t> values) {
    SmallVector<Value> elements;
    for (int64_t v : values)
      elements.push_back(intConst(v));
    return create("torch.prim.ListConstruct", elements,
                  tt::ListType::get(ctx(), tt::IntType::get(ctx())));
  }

private:
  MLIRContext *ctx() { return b.getContext(); }
  OpBuilder &b;
  Location loc;
};

Operation *soleUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

/// The other operand of a binary op whose operand is `v` (or null).
Value otherOperand(Operation *op, Value v) {
  if (!op || op->getNumOperands() < 2)
    return {};
  if (op->getOperand(0) == v)
    return op->getOperand(1);
  if (op->getOperand(1) == v)
    return op->getOperand(0);
  return {};
}

bool nearly(std::optional<double> v, double expected, double rel = 1e-4) {
  return v && std::abs(*v - expected) <= rel * std::abs(expected);
}

/// Is `dims` the single last dim of a rank-`rank` tensor?
bool isLastDimList(Value list, int64_t rank) {
  auto dims = constIntList(list);
  return dims && dims->size() == 1 &&
         ((*dims)[0] == -1 || (*dims)[0] == rank - 1);
}

std::pair<Operation *, Operation *> matchMeanOverLast(Value v);

/// Replaces `root`'s result by `replacement` and erases the now-dead ops of
/// the pattern (in reverse program order).
void replaceChain(Value root, Value replacement, ArrayRef<Operation *> ops) {
  root.replaceAllUsesWith(replacement);
  SmallVector<Operation *> sorted(ops.begin(), ops.end());
  llvm::sort(sorted,
             [](Operation *a, Operation *b) { return b->isBeforeInBlock(a); });
  for (Operation *op : sorted)
    if (op->use_empty())
      op->erase();
}

/// var_mean(x, [-1], correction 0, keepdim) -> add.Scalar(eps) -> rsqrt;
/// sub(x, mean) * rstd [* gamma] [+ beta]  ==>  layer_norm
bool recomposeLayerNorm(Operation *varMean) {
  if (!isA(varMean, "torch.aten.var_mean.correction") ||
      varMean->getNumResults() != 2)
    return false;
  Value x = varMean->getOperand(0);
  int64_t rank = rankOf(x);
  // keepdim must be set: [.., 1] statistics broadcast along the features.
  if (rank < 2 || !isLastDimList(varMean->getOperand(1), rank) ||
      !isTrue(varMean->getOperand(3)) ||
      constNumber(varMean->getOperand(2)) != 0.0)
    return false;
  Value var = varMean->getResult(0), mean = varMean->getResult(1);
  Operation *addEps = soleUser(var);
  if (!isA(addEps, "torch.aten.add.Scalar") ||
      constNumber(addEps->getOperand(2)) != 1.0)
    return false;
  auto eps = constNumber(addEps->getOperand(1));
  Operation *rsqrt = soleUser(addEps->getResult(0));
  Operation *sub = soleUser(mean);
  if (!eps || !isA(rsqrt, "torch.aten.rsqrt") ||
      !isA(sub, "torch.aten.sub.Tensor") || sub->getOperand(0) != x ||
      sub->getOperand(1) != mean || constNumber(sub->getOperand(2)) != 1.0)
    return false;
  Operation *norm = soleUser(sub->getResult(0));
  if (!isA(norm, "torch.aten.mul.Tensor") ||
      otherOperand(norm, sub->getResult(0)) != rsqrt->getResult(0) ||
      !rsqrt->getResult(0).hasOneUse())
    return false;
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
  OpBuilder b(last);
  TorchBuilder tb(b, last->getLoc());
  int64_t k = builtinType(x.getType()).getShape().back();
  Value ln = tb.create("torch.aten.layer_norm",
                       {x, tb.intList({k}), gamma ? gamma : tb.none(),
                        beta ? beta : tb.none(), tb.floatConst(*eps),
                        tb.boolConst(false)},
                       out.getType());
  replaceChain(out, ln, ops);
  return true;
}

/// pow(x, 2) | x*x -> mean over the last dim (mean.dim, or sum.dim_IntList
/// then div.Scalar K) -> add.Scalar(eps) -> rsqrt; x * rstd [* gamma]
///   ==>  rms_norm
bool recomposeRMSNorm(Operation *square) {
  Value x;
  if (isA(square, "torch.aten.pow.Tensor_Scalar") &&
      constNumber(square->getOperand(1)) == 2.0)
    x = square->getOperand(0);
  else if (isA(square, "torch.aten.mul.Tensor") &&
           square->getOperand(0) == square->getOperand(1))
    x = square->getOperand(0);
  else
    return false;
  int64_t rank = rankOf(x);
  Value sq = square->getResult(0);
  if (rank < 2)
    return false;
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
    return false;
  }
  Operation *pow = square;
  Operation *mean = meanOps.back();
  Operation *addEps = soleUser(mean->getResult(0));
  if (!isA(addEps, "torch.aten.add.Scalar") ||
      constNumber(addEps->getOperand(2)) != 1.0)
    return false;
  auto eps = constNumber(addEps->getOperand(1));
  Operation *rsqrt = soleUser(addEps->getResult(0));
  if (!eps || !isA(rsqrt, "torch.aten.rsqrt"))
    return false;
  Operation *scale = soleUser(rsqrt->getResult(0));
  if (!isA(scale, "torch.aten.mul.Tensor") ||
      otherOperand(scale, rsqrt->getResult(0)) != x)
    return false;
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
        u->erase();
  Operation *last = ops.back();
  OpBuilder b(last);
  TorchBuilder tb(b, last->getLoc());
  int64_t k = builtinType(x.getType()).getShape().back();
  Value rms = tb.create(
      "torch.aten.rms_norm",
      {x, tb.intList({k}), gamma ? gamma : tb.none(), tb.floatConst(*eps)},
      out.getType());
  replaceChain(out, rms, ops);
  return true;
}

/// [view(x) ->] mm(x2, permute(W,[1,0]) | t(W) | W_in_out)
///   [-> mul.Scalar 1, add(mul.Scalar(b, 1)) | add.Tensor(b)] [-> view]
///   ==>  linear(x, W, b)  (a Conv1D [in, out] weight is transposed first)
bool recomposeLinear(Operation *mm) {
  // mm on a flattened input, or matmul on the N-D input (aten.linear's
  // decomposition in torch-mlir's own pipeline).
  bool isMatmul = isA(mm, "torch.aten.matmul");
  if (!isA(mm, "torch.aten.mm") && !isMatmul)
    return false;
  Value x2 = mm->getOperand(0), rhs = mm->getOperand(1);
  auto x2Type = builtinType(x2.getType());
  auto rhsType = builtinType(rhs.getType());
  if (!x2Type || !rhsType || rhsType.getRank() != 2 ||
      (isMatmul ? x2Type.getRank() < 2 : x2Type.getRank() != 2))
    return false;
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
      return false;
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
      return false;
    ops.push_back(back);
    out = back->getResult(0);
  }
  Operation *last = mm;
  for (Operation *op : ops)
    if (last->isBeforeInBlock(op))
      last = op;
  OpBuilder b(last);
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
  replaceChain(out, linear, ops);
  return true;
}

/// x * sigmoid(x)  ==>  silu(x)
bool recomposeSiLU(Operation *sigmoid) {
  if (!isA(sigmoid, "torch.aten.sigmoid"))
    return false;
  Value x = sigmoid->getOperand(0), s = sigmoid->getResult(0);
  Operation *mul = soleUser(s);
  if (!isA(mul, "torch.aten.mul.Tensor") || otherOperand(mul, s) != x)
    return false;
  OpBuilder b(mul);
  TorchBuilder tb(b, mul->getLoc());
  Value silu = tb.create("torch.aten.silu", {x}, mul->getResult(0).getType());
  replaceChain(mul->getResult(0), silu, {sigmoid, mul});
  return true;
}

/// 0.5x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))  ==>  gelu(x, "tanh")
bool recomposeGeluTanh(Operation *tanh) {
  if (!isA(tanh, "torch.aten.tanh"))
    return false;
  Operation *scale = tanh->getOperand(0).getDefiningOp();
  if (!isA(scale, "torch.aten.mul.Scalar") ||
      !nearly(constNumber(scale->getOperand(1)), 0.7978845608028654) ||
      !scale->getResult(0).hasOneUse())
    return false;
  Operation *inner = scale->getOperand(0).getDefiningOp();
  if (!isA(inner, "torch.aten.add.Tensor") ||
      constNumber(inner->getOperand(2)) != 1.0 ||
      !inner->getResult(0).hasOneUse())
    return false;
  Value x = inner->getOperand(0);
  Operation *cubic = inner->getOperand(1).getDefiningOp();
  if (!isA(cubic, "torch.aten.mul.Scalar") ||
      !nearly(constNumber(cubic->getOperand(1)), 0.044715) ||
      !cubic->getResult(0).hasOneUse())
    return false;
  Operation *pow = cubic->getOperand(0).getDefiningOp();
  if (!isA(pow, "torch.aten.pow.Tensor_Scalar") || pow->getOperand(0) != x ||
      constNumber(pow->getOperand(1)) != 3.0 || !pow->getResult(0).hasOneUse())
    return false;
  Operation *plusOne = soleUser(tanh->getResult(0));
  if (!isA(plusOne, "torch.aten.add.Scalar") ||
      constNumber(plusOne->getOperand(1)) != 1.0 ||
      constNumber(plusOne->getOperand(2)) != 1.0)
    return false;
  Operation *mul = soleUser(plusOne->getResult(0));
  Value half = mul ? otherOperand(mul, plusOne->getResult(0)) : Value();
  Operation *halfOp = half ? half.getDefiningOp() : nullptr;
  if (!isA(mul, "torch.aten.mul.Tensor") ||
      !isA(halfOp, "torch.aten.mul.Scalar") || halfOp->getOperand(0) != x ||
      constNumber(halfOp->getOperand(1)) != 0.5 || !half.hasOneUse())
    return false;
  OpBuilder b(mul);
  TorchBuilder tb(b, mul->getLoc());
  Value gelu = tb.create("torch.aten.gelu", {x, tb.strConst("tanh")},
                         mul->getResult(0).getType());
  replaceChain(mul->getResult(0), gelu,
               {halfOp, pow, cubic, inner, scale, tanh, plusOne, mul});
  return true;
}

/// `prims.convert_element_type` / `aten.to.dtype` of a tensor: returns the
/// source value, or null when `op` is not a cast.
Value castSource(Operation *op) {
  if (isA(op, "torch.prims.convert_element_type") ||
      isA(op, "torch.aten.to.dtype"))
    return op->getOperand(0);
  return {};
}

Type elementTypeOf(Value v) {
  auto t = builtinType(v.getType());
  return t ? t.getElementType() : Type();
}

/// An f32 upcast of a narrower float (bf16/f16) tensor.
bool isUpcast(Operation *op) {
  Value src = castSource(op);
  if (!src)
    return false;
  Type from = elementTypeOf(src), to = elementTypeOf(op->getResult(0));
  return from && to && to.isF32() && (from.isBF16() || from.isF16());
}

/// A cast from f32 down to bf16/f16.
bool isDowncast(Operation *op) {
  Value src = castSource(op);
  if (!src)
    return false;
  Type from = elementTypeOf(src), to = elementTypeOf(op->getResult(0));
  return from && to && from.isF32() && (to.isBF16() || to.isF16());
}

tt::ValueTensorType withElementType(Type torchType, Type element) {
  auto vt = cast<tt::ValueTensorType>(torchType);
  return tt::ValueTensorType::get(vt.getContext(), vt.getHasSizes(),
                                  vt.getSizes(), element);
}

/// PyTorch's bf16/f16 modules run their norms and GEMMs in f32 between
/// casts. Casts are moved next to the computation (upcasts above views and
/// permutes, downcasts below views), so that the patterns above match, and
/// a norm or linear sandwiched between an upcast of all its tensor inputs
/// and a downcast of its result becomes the op in the narrow dtype (TE
/// computes in fp32 internally, with narrow inputs and outputs).
bool moveCast(Operation *op) {
  // upcast(view|permute(v)) -> view|permute(upcast(v))
  if (isUpcast(op)) {
    Operation *shape = castSource(op).getDefiningOp();
    if ((isA(shape, "torch.aten.view") || isA(shape, "torch.aten.permute")) &&
        shape->getResult(0).hasOneUse()) {
      OpBuilder b(op);
      TorchBuilder tb(b, op->getLoc());
      Type f32 = elementTypeOf(op->getResult(0));
      Value v = shape->getOperand(0);
      Value up = tb.create(op->getName().getStringRef(), {v, op->getOperand(1)},
                           withElementType(v.getType(), f32));
      Value moved =
          tb.create(shape->getName().getStringRef(), {up, shape->getOperand(1)},
                    op->getResult(0).getType());
      replaceChain(op->getResult(0), moved, {op, shape});
      return true;
    }
  }
  // view(downcast(v)) -> downcast(view(v))
  if (isA(op, "torch.aten.view")) {
    Operation *down = op->getOperand(0).getDefiningOp();
    if (down && isDowncast(down) && down->getResult(0).hasOneUse()) {
      OpBuilder b(op);
      TorchBuilder tb(b, op->getLoc());
      Value v = castSource(down);
      Value view = tb.create(
          "torch.aten.view", {v, op->getOperand(1)},
          withElementType(op->getResult(0).getType(), elementTypeOf(v)));
      Value cast =
          tb.create(down->getName().getStringRef(), {view, down->getOperand(1)},
                    op->getResult(0).getType());
      replaceChain(op->getResult(0), cast, {op, down});
      return true;
    }
  }
  return false;
}

/// downcast(norm|linear(upcast(x), ...)) -> norm|linear(x, ...) in x's dtype.
bool removeCastSandwich(Operation *down) {
  if (!isDowncast(down))
    return false;
  Operation *op = castSource(down).getDefiningOp();
  bool isNorm =
      isA(op, "torch.aten.layer_norm") || isA(op, "torch.aten.rms_norm");
  bool isLinear = isA(op, "torch.aten.linear");
  if ((!isNorm && !isLinear) || !op->getResult(0).hasOneUse())
    return false;
  Type narrow = elementTypeOf(down->getResult(0));
  // Every tensor operand: an upcast from `narrow`, or already `narrow`
  // (PyTorch promotes bf16 parameters against f32 activations).
  SmallVector<Value> operands;
  SmallVector<Operation *> upcasts;
  for (Value v : op->getOperands()) {
    if (!builtinType(v.getType())) {
      operands.push_back(v);
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def && isUpcast(def) && elementTypeOf(castSource(def)) == narrow) {
      operands.push_back(castSource(def));
      upcasts.push_back(def);
    } else if (elementTypeOf(v) == narrow) {
      operands.push_back(v);
    } else {
      return false;
    }
  }
  // The activation input itself must have been narrow.
  if (elementTypeOf(operands[0]) != narrow)
    return false;
  OpBuilder b(down);
  TorchBuilder tb(b, down->getLoc());
  // rms_norm's default eps is finfo(dtype).eps of the dtype it ran in: f32.
  if (isA(op, "torch.aten.rms_norm") && isNone(operands[3]))
    operands[3] = tb.floatConst(1.1920928955078125e-07);
  Value narrowOp = tb.create(op->getName().getStringRef(), operands,
                             down->getResult(0).getType());
  SmallVector<Operation *> dead = {down, op};
  dead.append(upcasts.begin(), upcasts.end());
  replaceChain(down->getResult(0), narrowOp, dead);
  return true;
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
bool recomposeVarMean(Operation *up) {
  if (!isA(up, "torch.aten.to.dtype") || !elementTypeOf(up->getResult(0)) ||
      !elementTypeOf(up->getResult(0)).isF64())
    return false;
  Value x = up->getOperand(0), x64 = up->getResult(0);
  auto [sum64, mean64] = matchMeanOverLast(x64);
  if (!mean64 || !mean64->getResult(0).hasOneUse())
    return false;
  Operation *sub = *mean64->getResult(0).getUsers().begin();
  if (!isA(sub, "torch.aten.sub.Tensor") || sub->getOperand(0) != x64 ||
      constNumber(sub->getOperand(2)) != 1.0)
    return false;
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
    return false;
  auto [sumSq, var64] = matchMeanOverLast(sq->getResult(0));
  if (!var64 || !var64->getResult(0).hasOneUse())
    return false;
  Operation *down = *var64->getResult(0).getUsers().begin();
  if (!isA(down, "torch.aten.to.dtype") ||
      elementTypeOf(down->getResult(0)) != elementTypeOf(x))
    return false;
  auto [sumX, mean] = matchMeanOverLast(x);
  if (!mean)
    return false;
  // x64 must feed only the two reductions above.
  for (Operation *u : x64.getUsers())
    if (u != sum64 && u != sub)
      return false;
  // Right after x's definition, so that it dominates every use it takes over.
  OpBuilder b(up->getContext());
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
  down->getResult(0).replaceAllUsesWith(vm->getResult(0));
  mean->getResult(0).replaceAllUsesWith(vm->getResult(1));
  SmallVector<Operation *> dead = {down,   var64, sumSq, sq,   sub,
                                   mean64, sum64, up,    mean, sumX};
  for (Operation *op : dead)
    if (op->use_empty())
      op->erase();
  return true;
}

/// `broadcast_to` feeding only elementwise binary ops is implicit in torch
/// semantics: use the source directly.
bool stripBroadcast(Operation *op) {
  if (!isA(op, "torch.aten.broadcast_to") || op->use_empty())
    return false;
  for (Operation *u : op->getResult(0).getUsers())
    if (!isA(u, "torch.aten.sub.Tensor") && !isA(u, "torch.aten.mul.Tensor") &&
        !isA(u, "torch.aten.add.Tensor") && !isA(u, "torch.aten.div.Tensor"))
      return false;
  op->getResult(0).replaceAllUsesWith(op->getOperand(0));
  op->erase();
  return true;
}

/// The same-dtype variance (torch-mlir's decomposition of native_layer_norm):
///   mean = sum(x)/K; c = x - mean; var = sum(c*c)/K
/// ==> var, mean = var_mean.correction(x, [-1], 0, keepdim)
bool recomposeVarMeanSameDtype(Operation *sum) {
  if (!isA(sum, "torch.aten.sum.dim_IntList"))
    return false;
  Value x = sum->getOperand(0);
  auto [sumX, mean] = matchMeanOverLast(x);
  if (sumX != sum || !mean)
    return false;
  Operation *sub = nullptr;
  for (Operation *u : mean->getResult(0).getUsers())
    if (isA(u, "torch.aten.sub.Tensor") && u->getOperand(0) == x &&
        u->getOperand(1) == mean->getResult(0) &&
        constNumber(u->getOperand(2)) == 1.0)
      sub = u;
  if (!sub || !mean->getResult(0).hasOneUse())
    return false;
  Value c = sub->getResult(0);
  Operation *sq = nullptr;
  for (Operation *u : c.getUsers())
    if (isA(u, "torch.aten.mul.Tensor") && u->getOperand(0) == c &&
        u->getOperand(1) == c)
      sq = u;
  if (!sq || !sq->getResult(0).hasOneUse())
    return false;
  auto [sumSq, var] = matchMeanOverLast(sq->getResult(0));
  if (!var)
    return false;
  OpBuilder b(sum->getContext());
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
  var->getResult(0).replaceAllUsesWith(vm->getResult(0));
  // The centered value now reads the var_mean's mean.
  sub->setOperand(1, vm->getResult(1));
  for (Operation *op : {var, sumSq, sq, mean, sum})
    if (op->use_empty())
      op->erase();
  return true;
}

//===----------------------------------------------------------------------===//
// Signatures of the torch ops the importer reads
//===----------------------------------------------------------------------===//

/// The operand and result counts (and the constant's `value` attribute) of
/// every torch op the patterns look into, as torch-mlir's ODS defines them.
/// torch ops are unregistered here, so nothing else checks them: the
/// patterns read operands by position and would read past a short list.
struct TorchSignature {
  StringRef name;
  int operands; // -1: variadic
  int results;  // -1: variadic (at least one)
};

constexpr TorchSignature kTorchSignatures[] = {
    {"torch.aten.layer_norm", 6, 1},
    {"torch.aten.rms_norm", 4, 1},
    {"torch.aten.linear", 3, 1},
    {"torch.aten.mm", 2, 1},
    {"torch.aten.matmul", 2, 1},
    {"torch.aten.t", 1, 1},
    {"torch.aten.transpose.int", 3, 1},
    {"torch.aten.permute", 2, 1},
    {"torch.aten.mul.Tensor", 2, 1},
    {"torch.aten.mul.Scalar", 2, 1},
    {"torch.aten.div.Tensor", 2, 1},
    {"torch.aten.div.Scalar", 2, 1},
    {"torch.aten.add.Tensor", 3, 1},
    {"torch.aten.add.Scalar", 3, 1},
    {"torch.aten.sub.Tensor", 3, 1},
    {"torch.aten.pow.Tensor_Scalar", 2, 1},
    {"torch.aten.sum.dim_IntList", 4, 1},
    {"torch.aten.mean.dim", 4, 1},
    {"torch.aten.var_mean.correction", 4, 2},
    {"torch.aten.rsqrt", 1, 1},
    {"torch.aten.sigmoid", 1, 1},
    {"torch.aten.silu", 1, 1},
    {"torch.aten.relu", 1, 1},
    {"torch.aten.tanh", 1, 1},
    {"torch.aten.gelu", 2, 1},
    {"torch.aten.to.dtype", 5, 1},
    {"torch.prims.convert_element_type", 2, 1},
    {"torch.aten.view", 2, 1},
    {"torch.aten.reshape", 2, 1},
    {"torch.aten._unsafe_view", 2, 1},
    {"torch.aten.broadcast_to", 2, 1},
    {"torch.aten.split.Tensor", 3, -1},
    {"torch.aten.split_with_sizes", 3, -1},
    {"torch.aten.chunk", 3, -1},
    {"torch.aten.slice.Tensor", 5, 1},
    {"torch.aten.size.int", 2, 1},
    {"torch.aten.mul.int", 2, 1},
    {"torch.prim.ListConstruct", -1, 1},
    {"torch.prim.ListUnpack", 1, -1},
    {"torch.vtensor.literal", 0, 1},
    {"torch.constant.int", 0, 1},
    {"torch.constant.float", 0, 1},
    {"torch.constant.str", 0, 1},
    {"torch.constant.bool", 0, 1},
    {"torch.constant.none", 0, 1},
};

/// An error at each torch op whose operand or result count (or constant
/// value) is not torch-mlir's: the patterns may rely on them afterwards.
LogicalResult verifyTorchSignatures(func::FuncOp func) {
  static const llvm::StringMap<TorchSignature> table = [] {
    llvm::StringMap<TorchSignature> t;
    for (const TorchSignature &s : kTorchSignatures)
      t[s.name] = s;
    return t;
  }();
  auto count = [](int n) {
    return n == 1 ? std::string("1 ") : std::to_string(n) + " ";
  };
  WalkResult r = func.walk([&](Operation *op) {
    auto it = table.find(op->getName().getStringRef());
    if (it == table.end())
      return WalkResult::advance();
    const TorchSignature &s = it->second;
    int operands = op->getNumOperands(), results = op->getNumResults();
    if (s.operands >= 0 && operands != s.operands) {
      op->emitError() << "te-import-torch: '" << s.name << "' takes "
                      << count(s.operands)
                      << (s.operands == 1 ? "operand" : "operands") << ", got "
                      << operands;
      return WalkResult::interrupt();
    }
    if ((s.results >= 0 && results != s.results) || results == 0) {
      op->emitError() << "te-import-torch: '" << s.name << "' has "
                      << (s.results >= 0 ? count(s.results)
                                         : std::string("at least 1 "))
                      << (s.results == 1 || s.results < 0 ? "result"
                                                          : "results")
                      << ", got " << results;
      return WalkResult::interrupt();
    }
    // Constants carry their value as an attribute of the right kind.
    StringRef name = s.name;
    Attribute value = op->getAttr("value");
    bool ok = true;
    if (name == "torch.constant.int")
      ok = isa_and_nonnull<IntegerAttr>(value);
    else if (name == "torch.constant.float")
      ok = isa_and_nonnull<FloatAttr>(value);
    else if (name == "torch.constant.str")
      ok = isa_and_nonnull<StringAttr>(value);
    else if (name == "torch.constant.bool")
      ok = isa_and_nonnull<BoolAttr>(value);
    if (!ok) {
      op->emitError() << "te-import-torch: '" << name
                      << "' needs a 'value' attribute of its type";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

/// Dead scalar bookkeeping left by the rewrites (sizes of views).
bool isDeadBookkeeping(Operation &op) {
  StringRef name = op.getName().getStringRef();
  if (op.getNumResults() == 0 || !op.use_empty())
    return false;
  return name.starts_with("torch.constant.") ||
         name == "torch.prim.ListConstruct" || name == "torch.aten.size.int" ||
         name == "torch.aten.mul.int" || name == "torch.symbolic_int";
}

void recomposeDecomposedForms(func::FuncOp func) {
  // Shape bookkeeping would make every intermediate look multiply used;
  // the importer does not need it (shapes are in the types).
  for (Operation &op : llvm::make_early_inc_range(func.getBody().front()))
    if (isA(&op, "torch.bind_symbolic_shape") ||
        isA(&op, "torch.aten._assert_tensor_metadata"))
      op.erase();
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(func.getBody().front())) {
      if (stripBroadcast(&op) || moveCast(&op) || recomposeVarMean(&op) ||
          recomposeVarMeanSameDtype(&op) || recomposeLayerNorm(&op) ||
          recomposeRMSNorm(&op) || recomposeLinear(&op) || recomposeSiLU(&op) ||
          recomposeGeluTanh(&op) || removeCastSandwich(&op)) {
        changed = true;
        break;
      }
    }
  }
  // Drop dead scalar ops, repeatedly (lists keep their constants alive).
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation &op :
         llvm::make_early_inc_range(llvm::reverse(func.getBody().front())))
      if (isDeadBookkeeping(op)) {
        op.erase();
        erased = true;
      }
  }
}

//===----------------------------------------------------------------------===//
// Rewriting one function
//===----------------------------------------------------------------------===//

class FunctionImporter {
public:
  FunctionImporter(func::FuncOp func, RecipeAttrInterface recipe)
      : func(func), recipe(recipe), builder(func.getContext()) {}

  LogicalResult run();

private:
  LogicalResult findGroups();
  LogicalResult emitGroup(Group &g);
  FailureOr<Value> lookup(Operation *user, Value torchValue);
  FailureOr<Type> convertType(Operation *where, Type t);
  Value concatRows(Location loc, Value a, Value b);
  Value zeros(Location loc, RankedTensorType type);
  Value ones(Location loc, RankedTensorType type);

  func::FuncOp func;
  RecipeAttrInterface recipe;
  OpBuilder builder;
  IRMapping mapping;
  std::vector<Group> groups;
  llvm::DenseMap<Operation *, Group *> anchors;
  llvm::DenseSet<Operation *> consumed;
  /// Linears on a norm output that is also a module's returned norm output.
  llvm::DenseMap<Operation *, Value> linearsOnNorm;
};

FailureOr<Type> FunctionImporter::convertType(Operation *where, Type t) {
  if (!isa<tt::ValueTensorType, tt::NonValueTensorType>(t) &&
      t.getDialect().getNamespace() != "torch")
    return t;
  auto vt = dyn_cast<tt::ValueTensorType>(t);
  RankedTensorType builtin = vt ? vt.toBuiltinTensor() : RankedTensorType();
  if (!builtin ||
      !isa<Float32Type, BFloat16Type, Float16Type>(builtin.getElementType())) {
    where->emitError() << "te-import-torch: unsupported type " << t
                       << "; function arguments and results must be "
                          "!torch.vtensor with known sizes and an f32, bf16 "
                          "or f16 dtype";
    return failure();
  }
  return Type(builtin);
}

FailureOr<Value> FunctionImporter::lookup(Operation *user, Value v) {
  if (Value mapped = mapping.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  unsupported(user, "operand #" +
                        Twine(llvm::find(user->getOperands(), v) -
                              user->getOperands().begin()) +
                        " comes from '" +
                        (def ? def->getName().getStringRef() : "an argument") +
                        "', which could not be imported; " + kSupported);
  return failure();
}

LogicalResult FunctionImporter::findGroups() {
  Block &body = func.getBody().front();
  // Norm-based modules first, in program order.
  for (Operation &op : body) {
    if (!isA(&op, "torch.aten.layer_norm") && !isA(&op, "torch.aten.rms_norm"))
      continue;
    FailureOr<NormMatch> norm = matchNorm(&op);
    if (failed(norm))
      return failure();
    Value out = op.getResult(0);
    bool otherUsers = false;
    // Users in program order; shape bookkeeping is not a use of the value.
    SmallVector<Operation *> users(out.getUsers());
    llvm::sort(users, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    users.erase(llvm::unique(users), users.end());
    SmallVector<LinearMatch> linears;
    for (Operation *user : users) {
      if (consumed.contains(user) || isA(user, "torch.bind_symbolic_shape") ||
          isA(user, "torch.aten._assert_tensor_metadata"))
        continue;
      auto lin = matchLinear(user);
      if (lin && lin->input == out)
        linears.push_back(*lin);
      else
        otherUsers = true;
    }
    if (linears.empty())
      return unsupported(&op, "a normalization must feed an aten.linear "
                              "(TransformerEngine has no standalone norm "
                              "module); " +
                                  Twine(kSupported));
    // Any of the linears may be FC1 of an MLP (in a two-linear gated MLP the
    // activated one need not come first); otherwise the first linear is the
    // LayerNormLinear.
    Group g{Group::NormLinear};
    g.norm = *norm;
    bool isMLP = false;
    std::string nearMiss;
    Operation *nearMissAt = nullptr;
    for (const LinearMatch &lin : linears) {
      Group candidate = g;
      candidate.fc1 = lin;
      std::string why;
      if (matchMLP(candidate, out, why)) {
        g = candidate;
        isMLP = true;
        break;
      }
      if (!why.empty() && nearMiss.empty()) {
        Value h = lin.op->getResult(0);
        nearMiss = why;
        nearMissAt = h.hasOneUse() ? *h.getUsers().begin() : lin.op;
      }
    }
    if (!isMLP) {
      // A near miss (e.g. a gated erf GELU): report it rather than import
      // the linear alone and fail later on the activation.
      if (!nearMiss.empty())
        return unsupported(nearMissAt, nearMiss);
      g.fc1 = linears.front();
      g.ops = {g.fc1.op};
    }
    g.ops.push_back(&op);
    if (norm->zeroCentered)
      g.ops.push_back(op.getOperand(2).getDefiningOp());
    for (Operation *o : g.ops)
      consumed.insert(o);
    // Linears the module does not take read its returned norm output.
    for (const LinearMatch &lin : linears) {
      if (consumed.contains(lin.op))
        continue;
      linearsOnNorm[lin.op] = out;
      otherUsers = true;
    }
    if (otherUsers) {
      g.returnsNorm = true;
      g.normResult = out;
    }
    groups.push_back(std::move(g));
  }
  // Anchor each group at its last op.
  for (Group &g : groups) {
    g.anchor = g.ops.front();
    for (Operation *o : g.ops)
      if (g.anchor->isBeforeInBlock(o))
        g.anchor = o;
    anchors[g.anchor] = &g;
  }
  return success();
}

Value FunctionImporter::concatRows(Location loc, Value a, Value b) {
  return tensor::ConcatOp::create(builder, loc, /*dim=*/0, ValueRange{a, b});
}

Value FunctionImporter::zeros(Location loc, RankedTensorType type) {
  return arith::ConstantOp::create(
      builder, loc,
      DenseElementsAttr::get(type, builder.getZeroAttr(type.getElementType())));
}

Value FunctionImporter::ones(Location loc, RankedTensorType type) {
  return arith::ConstantOp::create(
      builder, loc,
      DenseElementsAttr::get(type,
                             builder.getFloatAttr(type.getElementType(), 1.0)));
}

LogicalResult FunctionImporter::emitGroup(Group &g) {
  Location loc = g.anchor->getLoc();
  auto get = [&](Value v) -> FailureOr<Value> { return lookup(g.anchor, v); };
  FailureOr<Value> x = get(g.norm.op ? g.norm.input : g.fc1.input);
  if (failed(x))
    return failure();
  auto xType = cast<RankedTensorType>(x->getType());
  auto vec =
      RankedTensorType::get({xType.getShape().back()}, xType.getElementType());
  Value gamma, beta;
  if (g.norm.op) {
    if (g.norm.gamma) {
      FailureOr<Value> v = get(g.norm.gamma);
      if (failed(v))
        return failure();
      gamma = *v;
    } else {
      gamma = ones(loc, vec);
    }
    if (g.norm.beta) {
      FailureOr<Value> v = get(g.norm.beta);
      if (failed(v))
        return failure();
      beta = *v;
    }
  }
  auto getOpt = [&](Value v) -> FailureOr<Value> {
    if (!v)
      return Value();
    return get(v);
  };
  FailureOr<Value> w1 = get(g.fc1.weight), b1 = getOpt(g.fc1.bias);
  if (failed(w1) || failed(b1))
    return failure();
  Value fc1W = *w1, fc1B = *b1;
  if (g.fc1b.op) {
    FailureOr<Value> w1b = get(g.fc1b.weight), b1b = getOpt(g.fc1b.bias);
    if (failed(w1b) || failed(b1b))
      return failure();
    fc1W = concatRows(loc, fc1W, *w1b);
    if (fc1B || *b1b) {
      auto half = [&](Value b, Value w) {
        return b ? b
                 : zeros(
                       loc,
                       RankedTensorType::get(
                           {cast<RankedTensorType>(w.getType()).getDimSize(0)},
                           xType.getElementType()));
      };
      fc1B = concatRows(loc, half(fc1B, *w1), half(*b1b, *w1b));
    }
  } else if (g.swapHalves) {
    // The activation reads the second half: move it first.
    auto wType = cast<RankedTensorType>(fc1W.getType());
    int64_t half = wType.getDimSize(0) / 2;
    auto slice = [&](Value v, int64_t offset) -> Value {
      auto t = cast<RankedTensorType>(v.getType());
      SmallVector<OpFoldResult> offsets(t.getRank(), builder.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes,
          strides(t.getRank(), builder.getIndexAttr(1));
      offsets[0] = builder.getIndexAttr(offset);
      for (int64_t d : t.getShape())
        sizes.push_back(builder.getIndexAttr(d));
      sizes[0] = builder.getIndexAttr(half);
      return tensor::ExtractSliceOp::create(builder, loc, v, offsets, sizes,
                                            strides);
    };
    fc1W = concatRows(loc, slice(fc1W, half), slice(fc1W, 0));
    if (fc1B)
      fc1B = concatRows(loc, slice(fc1B, half), slice(fc1B, 0));
  }

  Operation *created = nullptr;
  FloatAttr eps = builder.getF64FloatAttr(g.norm.eps);
  UnitAttr zc = g.norm.zeroCentered ? builder.getUnitAttr() : UnitAttr();
  UnitAttr ret = g.returnsNorm ? builder.getUnitAttr() : UnitAttr();
  auto normAttr = NormalizationKindAttr::get(builder.getContext(), g.norm.kind);
  SmallVector<Type> inferred;
  if (g.kind == Group::NormLinear) {
    OperationState state(loc, LayerNormLinearOp::getOperationName());
    LayerNormLinearOp::build(builder, state, *x, gamma, beta, fc1W, fc1B,
                             /*scales=*/Value(), normAttr, eps, zc, ret,
                             recipe);
    created = builder.create(state);
  } else {
    FailureOr<Value> w2 = get(g.fc2.weight), b2 = getOpt(g.fc2.bias);
    if (failed(w2) || failed(b2))
      return failure();
    OperationState state(loc, LayerNormMLPOp::getOperationName());
    LayerNormMLPOp::build(
        builder, state, *x, gamma, beta, fc1W, fc1B, *w2, *b2,
        /*scales=*/Value(), normAttr,
        ActivationAttr::get(builder.getContext(), g.activation), eps, zc,
        ret, UnitAttr(), recipe);
    created = builder.create(state);
  }
  if (failed(mlir::verify(created))) {
    created->erase();
    return unsupported(g.anchor,
                       "the recognized module does not satisfy the te op's "
                       "rules (see the error above)");
  }
  Operation *last = g.kind == Group::NormMLP ? g.fc2.op : g.fc1.op;
  mapping.map(last->getResult(0), created->getResult(0));
  if (g.returnsNorm)
    mapping.map(g.normResult, created->getResult(1));
  return success();
}

LogicalResult FunctionImporter::run() {
  if (!func.getBody().hasOneBlock())
    return func.emitError("te-import-torch: functions must have one block");
  if (failed(verifyTorchSignatures(func)))
    return failure();
  recomposeDecomposedForms(func);
  if (failed(findGroups()))
    return failure();

  // The new signature.
  SmallVector<Type> inputs, results;
  for (Type t : func.getArgumentTypes()) {
    FailureOr<Type> c = convertType(func, t);
    if (failed(c))
      return failure();
    inputs.push_back(*c);
  }
  for (Type t : func.getResultTypes()) {
    FailureOr<Type> c = convertType(func, t);
    if (failed(c))
      return failure();
    results.push_back(*c);
  }

  Block &oldBody = func.getBody().front();
  auto newBlock = std::make_unique<Block>();
  for (auto [arg, type] : llvm::zip(oldBody.getArguments(), inputs))
    mapping.map(arg, newBlock->addArgument(type, arg.getLoc()));
  builder.setInsertionPointToStart(newBlock.get());

  for (Operation &op : oldBody) {
    StringRef name = op.getName().getStringRef();
    if (auto it = anchors.find(&op); it != anchors.end()) {
      if (failed(emitGroup(*it->second)))
        return failure();
      continue;
    }
    if (consumed.contains(&op))
      continue;
    if (isa<func::ReturnOp>(op)) {
      SmallVector<Value> values;
      for (Value v : op.getOperands()) {
        FailureOr<Value> m = lookup(&op, v);
        if (failed(m))
          return failure();
        values.push_back(*m);
      }
      func::ReturnOp::create(builder, op.getLoc(), values);
      continue;
    }
    // Scalars, lists and shape bookkeeping: read by the patterns above.
    if (name.starts_with("torch.constant.") ||
        name == "torch.prim.ListConstruct" || name == "torch.symbolic_int" ||
        name == "torch.bind_symbolic_shape" ||
        name == "torch.aten._assert_tensor_metadata")
      continue;
    if (name == "torch.vtensor.literal") {
      auto value = dyn_cast<ElementsAttr>(op.getAttr("value"));
      FailureOr<Type> type = convertType(&op, op.getResult(0).getType());
      if (!value || failed(type) || value.getType() != *type)
        return unsupported(&op, "the literal must be a dense tensor of the "
                                "result's shape and dtype");
      mapping.map(op.getResult(0),
                  arith::ConstantOp::create(builder, op.getLoc(),
                                            cast<TypedAttr>(value)));
      continue;
    }
    if (auto linMatch = matchLinear(&op)) {
      LinearMatch lin = *linMatch;
      FailureOr<Value> x = lookup(&op, lin.input), w = lookup(&op, lin.weight);
      if (failed(x) || failed(w))
        return failure();
      Value b;
      if (lin.bias) {
        FailureOr<Value> bm = lookup(&op, lin.bias);
        if (failed(bm))
          return failure();
        b = *bm;
      }
      OperationState state(op.getLoc(), LinearOp::getOperationName());
      LinearOp::build(builder, state, *x, *w, b, /*scales=*/Value(), recipe);
      Operation *created = builder.create(state);
      if (failed(mlir::verify(created))) {
        created->erase();
        return unsupported(&op, "its operands do not form a TransformerEngine "
                                "Linear (see the error above)");
      }
      mapping.map(op.getResult(0), created->getResult(0));
      continue;
    }
    if (name == "torch.aten.view" || name == "torch.aten.reshape" ||
        name == "torch.aten._unsafe_view") {
      // A reshape between modules (static shapes).
      FailureOr<Value> src = lookup(&op, op.getOperand(0));
      FailureOr<Type> type = convertType(&op, op.getResult(0).getType());
      if (failed(src) || failed(type))
        return failure();
      auto resultType = cast<RankedTensorType>(*type);
      if (!resultType.hasStaticShape() ||
          !cast<RankedTensorType>(src->getType()).hasStaticShape())
        return unsupported(&op, "a reshape between modules needs static "
                                "shapes (dynamic ones are supported inside "
                                "recognized modules only)");
      auto shapeType =
          RankedTensorType::get({resultType.getRank()}, builder.getI64Type());
      Value shape = arith::ConstantOp::create(
          builder, op.getLoc(),
          DenseElementsAttr::get(shapeType, resultType.getShape()));
      mapping.map(op.getResult(0),
                  tensor::ReshapeOp::create(builder, op.getLoc(), resultType,
                                            *src, shape));
      continue;
    }
    if (name == "torch.prims.convert_element_type" ||
        name == "torch.aten.to.dtype") {
      // A float cast between modules.
      FailureOr<Value> src = lookup(&op, op.getOperand(0));
      FailureOr<Type> type = convertType(&op, op.getResult(0).getType());
      if (failed(src) || failed(type))
        return failure();
      auto from = cast<RankedTensorType>(src->getType()).getElementType();
      auto to = cast<RankedTensorType>(*type).getElementType();
      Value v = *src;
      if (from.getIntOrFloatBitWidth() < to.getIntOrFloatBitWidth())
        v = arith::ExtFOp::create(builder, op.getLoc(), *type, v);
      else if (from != to &&
               from.getIntOrFloatBitWidth() > to.getIntOrFloatBitWidth())
        v = arith::TruncFOp::create(builder, op.getLoc(), *type, v);
      else if (from != to)
        return unsupported(&op, "casts between bf16 and f16 are not supported");
      mapping.map(op.getResult(0), v);
      continue;
    }
    if (name == "torch.aten.t" && rankOf(op.getOperand(0)) == 2) {
      // A transposed weight (GPT-2's Conv1D stores [in, out]).
      FailureOr<Value> w = lookup(&op, op.getOperand(0));
      if (failed(w))
        return failure();
      auto wType = cast<RankedTensorType>(w->getType());
      Value init = tensor::EmptyOp::create(
          builder, op.getLoc(),
          SmallVector<int64_t>{wType.getDimSize(1), wType.getDimSize(0)},
          wType.getElementType());
      auto transpose = linalg::TransposeOp::create(
          builder, op.getLoc(), *w, init, SmallVector<int64_t>{1, 0});
      mapping.map(op.getResult(0), transpose->getResult(0));
      continue;
    }
    if (name == "torch.aten.add.Tensor" &&
        constNumber(op.getOperand(2)) == 1.0) {
      FailureOr<Value> a = lookup(&op, op.getOperand(0)),
                       b = lookup(&op, op.getOperand(1));
      if (failed(a) || failed(b))
        return failure();
      if (a->getType() != b->getType())
        return unsupported(&op, "both operands must have the same tensor type "
                                "(broadcasting adds are not supported)");
      mapping.map(op.getResult(0),
                  arith::AddFOp::create(builder, op.getLoc(), *a, *b));
      continue;
    }
    if (name.starts_with("torch."))
      return unsupported(&op, Twine("not part of a recognized module; ") +
                                  kSupported);
    return unsupported(&op, "only torch operations are expected here");
  }

  // Swap in the new body and signature.
  func.getBody().front().dropAllDefinedValueUses();
  func.getBody().front().erase();
  func.getBody().push_back(newBlock.release());
  func.setType(FunctionType::get(func.getContext(), inputs, results));
  return success();
}

/// True when the function's signature or body uses the torch dialect.
bool usesTorch(func::FuncOp func) {
  auto isTorch = [](Type t) { return t.getDialect().getNamespace() == "torch"; };
  if (llvm::any_of(func.getArgumentTypes(), isTorch) ||
      llvm::any_of(func.getResultTypes(), isTorch))
    return true;
  return func
      .walk([&](Operation *op) {
        if (op->getDialect() && op->getDialect()->getNamespace() == "torch")
          return WalkResult::interrupt();
        if (llvm::any_of(op->getResultTypes(), isTorch))
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

struct TEImportTorchPass
    : public mlir::te::impl::TEImportTorchPassBase<TEImportTorchPass> {
  using Base::Base;

  void runOnOperation() override {
    RecipeAttrInterface recipeAttr;
    if (!recipe.empty()) {
      recipeAttr = getDefaultRecipe(&getContext(), recipe);
      if (!recipeAttr) {
        getOperation().emitError()
            << "te-import-torch: unknown recipe '" << recipe
            << "'; expected one of: " << llvm::join(getRecipeNames(), ", ")
            << ", or a recipe attribute such as '#te.nvfp4<rht = false>'";
        return signalPassFailure();
      }
    }
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal() || !usesTorch(func))
        continue; // already te IR (or plain tensors): nothing to import
      FunctionImporter importer(func, recipeAttr);
      if (failed(importer.run()))
        return signalPassFailure();
    }
  }
};

} // namespace
