//===- Activation.cpp - Raising pointwise activations -----------*- C++ -*-===//
//
// The activations of an MLP (plain and gated) and their te kinds, and the
// recomposition of SiLU (x * sigmoid(x)) and the tanh GELU formula.
//
//===----------------------------------------------------------------------===//

#include "TorchToTE.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::torch_import {

bool isScalarTwo(Value v) { return constNumber(v) == 2.0; }

//===----------------------------------------------------------------------===//
// The pointwise function of one value
//===----------------------------------------------------------------------===//
//
// An activation is recognised by what it computes, not by how it is
// spelled: the ops that read FC1's output h (and scalars, and each other)
// form a function g of one variable, ending in one value. g is evaluated in
// double precision at sample points and compared with each activation
// TransformerEngine fuses. Hugging Face and PyTorch spell the same GELU many
// ways (gelu_new, gelu_fast, BLOOM's rounded constants, f32 cast wrappers
// around a bf16 SiLU); all of them are within float rounding of TE's
// formula, while a near miss (a wrong constant, a different function) is
// off by orders of magnitude more and is left with the error it makes.

namespace {

/// Torch ops that compute elementwise on their tensor operands.
bool isPointwise(Operation *op) {
  static const llvm::StringSet<> names = {
      "torch.aten.mul.Tensor",     "torch.aten.add.Tensor",
      "torch.aten.sub.Tensor",     "torch.aten.div.Tensor",
      "torch.aten.mul.Scalar",     "torch.aten.add.Scalar",
      "torch.aten.sub.Scalar",     "torch.aten.rsub.Scalar",
      "torch.aten.div.Scalar",     "torch.aten.pow.Tensor_Scalar",
      "torch.aten.tanh",           "torch.aten.erf",
      "torch.aten.sigmoid",        "torch.aten.exp",
      "torch.aten.neg",            "torch.aten.relu",
      "torch.aten.sqrt",           "torch.aten.rsqrt",
      "torch.aten.reciprocal",     "torch.aten.silu",
      "torch.aten.gelu",           "torch.aten.square",
      "torch.aten.clamp_min",      "torch.prims.convert_element_type",
      "torch.aten.to.dtype"};
  return op && names.contains(op->getName().getStringRef());
}

/// The ops computing g(h), in program order, and g's result.
struct PointwiseRegion {
  SmallVector<Operation *> ops;
  Value out;
};

/// Grows the region of pointwise ops whose tensor operands are h or region
/// values, with h's shape; fails (no reason: then it is not an activation)
/// unless exactly one region value is read outside it and h is not.
std::optional<PointwiseRegion> collectRegion(Value h) {
  auto hType = builtinType(h.getType());
  if (!hType)
    return std::nullopt;
  llvm::SetVector<Value> values;
  llvm::SmallPtrSet<Operation *, 16> inRegion;
  values.insert(h);
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < values.size(); ++i) {
      for (Operation *u : values[i].getUsers()) {
        if (inRegion.contains(u) || !isPointwise(u) || u->getNumResults() != 1)
          continue;
        auto rType = builtinType(u->getResult(0).getType());
        if (!rType || rType.getShape() != hType.getShape())
          continue;
        bool operandsKnown = llvm::all_of(u->getOperands(), [&](Value v) {
          return builtinType(v.getType()) ? values.contains(v)
                                          : !v.getDefiningOp() ||
                                                v.getDefiningOp()->getName()
                                                    .getStringRef()
                                                    .starts_with(
                                                        "torch.constant.");
        });
        if (!operandsKnown)
          continue;
        inRegion.insert(u);
        values.insert(u->getResult(0));
        grew = true;
      }
    }
  }
  if (inRegion.empty())
    return std::nullopt;
  PointwiseRegion r;
  for (Value v : values) {
    bool readOutside = llvm::any_of(
        v.getUsers(), [&](Operation *u) { return !inRegion.contains(u); });
    if (!readOutside)
      continue;
    if (v == h || r.out)
      return std::nullopt; // h read elsewhere, or two results: not g(h)
    r.out = v;
  }
  if (!r.out)
    return std::nullopt;
  r.ops.assign(inRegion.begin(), inRegion.end());
  llvm::sort(r.ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return r;
}

double sigmoidOf(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double geluTanh(double x) {
  return 0.5 * x *
         (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
double geluErf(double x) { return 0.5 * x * (1.0 + std::erf(x / M_SQRT2)); }

/// g(x) for the region, in double precision (casts are exact here: TE
/// computes activations in fp32), or none for an op it cannot evaluate.
std::optional<double> evaluate(const PointwiseRegion &r, Value h, double x) {
  llvm::DenseMap<Value, double> env;
  env[h] = x;
  for (Operation *op : r.ops) {
    StringRef n = op->getName().getStringRef();
    auto in = [&](unsigned i) { return env.lookup(op->getOperand(i)); };
    auto num = [&](unsigned i) { return constNumber(op->getOperand(i)); };
    std::optional<double> v;
    double a = in(0);
    if (n == "torch.aten.mul.Tensor")
      v = a * in(1);
    else if (n == "torch.aten.div.Tensor")
      v = a / in(1);
    else if (n == "torch.aten.add.Tensor" || n == "torch.aten.sub.Tensor") {
      if (auto alpha = num(2))
        v = n == "torch.aten.add.Tensor" ? a + *alpha * in(1)
                                         : a - *alpha * in(1);
    } else if (n == "torch.aten.mul.Scalar") {
      if (auto s = num(1))
        v = a * *s;
    } else if (n == "torch.aten.div.Scalar") {
      if (auto s = num(1))
        v = a / *s;
    } else if (n == "torch.aten.add.Scalar" || n == "torch.aten.sub.Scalar" ||
               n == "torch.aten.rsub.Scalar") {
      auto s = num(1), alpha = num(2);
      if (s && alpha)
        v = n == "torch.aten.add.Scalar"   ? a + *alpha * *s
            : n == "torch.aten.sub.Scalar" ? a - *alpha * *s
                                           : *s - *alpha * a;
    } else if (n == "torch.aten.pow.Tensor_Scalar") {
      if (auto e = num(1))
        v = std::pow(a, *e);
    } else if (n == "torch.aten.clamp_min") {
      if (auto lo = num(1))
        v = std::max(a, *lo);
    } else if (n == "torch.aten.tanh")
      v = std::tanh(a);
    else if (n == "torch.aten.erf")
      v = std::erf(a);
    else if (n == "torch.aten.sigmoid")
      v = sigmoidOf(a);
    else if (n == "torch.aten.exp")
      v = std::exp(a);
    else if (n == "torch.aten.neg")
      v = -a;
    else if (n == "torch.aten.relu")
      v = std::max(a, 0.0);
    else if (n == "torch.aten.sqrt")
      v = std::sqrt(a);
    else if (n == "torch.aten.rsqrt")
      v = 1.0 / std::sqrt(a);
    else if (n == "torch.aten.reciprocal")
      v = 1.0 / a;
    else if (n == "torch.aten.square")
      v = a * a;
    else if (n == "torch.aten.silu")
      v = a * sigmoidOf(a);
    else if (n == "torch.aten.gelu") {
      auto approx = constStr(op->getOperand(1));
      if (approx == std::string("tanh"))
        v = geluTanh(a);
      else if (approx == std::string("none"))
        v = geluErf(a);
    } else if (n == "torch.prims.convert_element_type" ||
               n == "torch.aten.to.dtype")
      v = a;
    if (!v)
      return std::nullopt;
    env[op->getResult(0)] = *v;
  }
  return env.lookup(r.out);
}

struct Candidate {
  ActMatch::Kind kind;
  const char *name;
  double (*fn)(double);
};

const Candidate kCandidates[] = {
    {ActMatch::GELU, "gelu (tanh approximation)", geluTanh},
    {ActMatch::GELUErf, "gelu (erf)", geluErf},
    {ActMatch::QGELU, "quick-gelu x*sigmoid(1.702x)",
     [](double x) { return x * sigmoidOf(1.702 * x); }},
    {ActMatch::ReLU, "relu", [](double x) { return std::max(x, 0.0); }},
    {ActMatch::SReLU, "squared relu",
     [](double x) { return std::max(x, 0.0) * std::max(x, 0.0); }},
    {ActMatch::SiLU, "silu", [](double x) { return x * sigmoidOf(x); }},
    {ActMatch::Sigmoid, "sigmoid", sigmoidOf},
};

/// Sample points: dense where the activations differ, sparse in the tails.
SmallVector<double> samplePoints() {
  SmallVector<double> xs;
  for (int i = -64; i <= 64; ++i)
    xs.push_back(i / 8.0 + 1.0 / 1024);
  for (double x : {-30.0, -16.0, -12.0, 12.0, 16.0, 30.0, 0.0})
    xs.push_back(x);
  return xs;
}

} // namespace

std::optional<ActMatch> matchActivation(Value h, std::string &why) {
  std::optional<PointwiseRegion> region = collectRegion(h);
  if (!region)
    return std::nullopt;
  // Casts alone are not an activation (a cast between modules), nor is a
  // function whose result goes anywhere but into FC2 or a gate's product
  // (e.g. OPT's query scaling `q_proj(x) * scaling`): no reason then, the
  // linear is a LayerNormLinear.
  if (llvm::all_of(region->ops, [](Operation *op) { return castSource(op); }))
    return std::nullopt;
  Operation *next = soleUser(region->out);
  if (!isA(next, "torch.aten.linear") && !isA(next, "torch.aten.mul.Tensor"))
    return std::nullopt;
  Type inElt = elementTypeOf(h), outElt = elementTypeOf(region->out);
  if (inElt != outElt) {
    auto str = [](Type t) {
      std::string s;
      llvm::raw_string_ostream os(s);
      os << t;
      return s;
    };
    why = "the pointwise function of the linear's output returns " +
          str(outElt) + " for a " + str(inElt) +
          " input; a TransformerEngine activation keeps the dtype (cast it "
          "back, as Hugging Face's modules do)";
    return std::nullopt;
  }
  SmallVector<double> xs = samplePoints();
  SmallVector<double> g;
  for (double x : xs) {
    std::optional<double> v = evaluate(*region, h, x);
    if (!v) {
      why = "the pointwise function of the linear's output could not be "
            "evaluated";
      return std::nullopt;
    }
    g.push_back(*v);
  }
  const Candidate *best = nullptr;
  double bestErr = INFINITY, bestAt = 0;
  for (const Candidate &c : kCandidates) {
    double err = 0, at = 0;
    for (auto [x, gx] : llvm::zip(xs, g)) {
      double f = c.fn(x);
      double e = std::abs(gx - f) / std::max(1.0, std::abs(f));
      if (!(e <= err)) { // NaN counts as the worst error
        err = std::isnan(e) ? INFINITY : e;
        at = x;
      }
    }
    if (err < bestErr) {
      bestErr = err;
      bestAt = at;
      best = &c;
    }
  }
  if (best && bestErr <= kActivationTolerance)
    return ActMatch{best->kind, region->out, region->ops};
  // Name the ops and the closest activation, so that a near miss is seen
  // as one.
  std::string ops;
  llvm::StringSet<> seen;
  for (Operation *op : region->ops) {
    StringRef n = op->getName().getStringRef();
    n.consume_front("torch.");
    if (seen.insert(n).second)
      ops += (ops.empty() ? "" : ", ") + n.str();
  }
  why = "the pointwise function of the linear's output (" + ops +
        ") is not an activation TransformerEngine fuses: the closest, " +
        std::string(best ? best->name : "none") + ", differs by " +
        llvm::formatv("{0:e2}", bestErr).str() + " at x = " +
        llvm::formatv("{0}", bestAt).str() + " (accepted: within " +
        llvm::formatv("{0:e0}", kActivationTolerance).str() +
        ", float rounding of its constants)";
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
