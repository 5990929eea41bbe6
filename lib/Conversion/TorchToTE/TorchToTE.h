//===- TorchToTE.h - te-import-torch internals ------------------*- C++ -*-===//
//
// What the files of the importer share: reading torch constants, the
// matches of the blocks it raises, the recomposition rewrites and the
// signature check (lib/Conversion/TorchToTE, private).
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_CONVERSION_TORCHTOTE_TORCHTOTE_H
#define TE_LIB_CONVERSION_TORCHTOTE_TORCHTOTE_H

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Dialect/Torch/TorchDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <optional>
#include <string>

namespace mlir::te::torch_import {
namespace tt = mlir::te::torch;

inline const char *kSupported =
    "supported: aten.layer_norm / aten.rms_norm over the last dim followed by "
    "aten.linear (LayerNormLinear), or by linear + gelu / relu / silu / "
    "quick-gelu / squared-relu / gated act(a)*b + linear (LayerNormMLP); a "
    "lone aten.linear; aten.add.Tensor with alpha 1";

inline bool isA(Operation *op, StringRef name) {
  return op && op->getName().getStringRef() == name;
}
inline bool isA(Value v, StringRef name) { return isA(v.getDefiningOp(), name); }

//===----------------------------------------------------------------------===//
// Torch constants
//===----------------------------------------------------------------------===//

inline std::optional<int64_t> constInt(Value v) {
  Operation *op = v.getDefiningOp();
  if (!isA(op, "torch.constant.int"))
    return std::nullopt;
  return cast<IntegerAttr>(op->getAttr("value")).getInt();
}

inline std::optional<double> constNumber(Value v) {
  Operation *op = v.getDefiningOp();
  if (isA(op, "torch.constant.float"))
    return cast<FloatAttr>(op->getAttr("value")).getValueAsDouble();
  if (auto i = constInt(v))
    return static_cast<double>(*i);
  return std::nullopt;
}

inline std::optional<std::string> constStr(Value v) {
  Operation *op = v.getDefiningOp();
  if (!isA(op, "torch.constant.str"))
    return std::nullopt;
  return cast<StringAttr>(op->getAttr("value")).getValue().str();
}

inline bool isNone(Value v) { return isA(v, "torch.constant.none"); }

inline bool isTrue(Value v) {
  Operation *op = v.getDefiningOp();
  return isA(op, "torch.constant.bool") &&
         cast<BoolAttr>(op->getAttr("value")).getValue();
}

inline std::optional<SmallVector<int64_t>> constIntList(Value v) {
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

inline RankedTensorType builtinType(Type t) {
  if (auto vt = dyn_cast<tt::ValueTensorType>(t))
    return vt.toBuiltinTensor();
  return {};
}

inline int64_t rankOf(Value v) {
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
  /// Ops computing the weight operand that the module takes over: the
  /// `gamma + 1` of zero_centered_gamma and, in f32, gamma's upcast.
  SmallVector<Operation *> weightOps;
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
inline InFlightDiagnostic unsupported(Operation *op, const Twine &why) {
  return op->emitError() << "te-import-torch: cannot import '" << op->getName()
                         << "': " << why;
}

/// A pointwise activation applied to `h`, ending in `out`.
struct ActMatch {
  enum Kind { GELU, GELUErf, QGELU, ReLU, SReLU, SiLU, Sigmoid } kind;
  Value out;
  SmallVector<Operation *> ops;
};

/// The te activation for a matched pointwise activation, applied alone
/// (`plain`) or to one half of a gated FC1 (`gated`); none where
/// TransformerEngine has no such activation (sigmoid alone, gated erf GELU).
struct ActivationKinds {
  std::optional<ActivationKind> plain, gated;
};

//===----------------------------------------------------------------------===//
// Recognition of the blocks (Norm.cpp, Linear.cpp, Activation.cpp, MLP.cpp)
//===----------------------------------------------------------------------===//

/// Matches a norm op; on failure `why` says why (nothing is emitted).
std::optional<NormMatch> matchNorm(Operation *op, std::string &why);

std::optional<LinearMatch> matchLinear(Operation *op);

/// How far (relative, or absolute below 1) a spelled activation may be from
/// TransformerEngine's formula: a few float32 roundings of its constants
/// (2^-23 = 1.2e-7 each). A constant off in its fourth digit is 100x more.
inline constexpr double kActivationTolerance = 1e-6;

/// Matches act(h): the pointwise ops reading h (and each other) compute,
/// within kActivationTolerance, an activation TransformerEngine fuses. Every
/// intermediate is used only inside; casts (f32 wrappers) are included.
/// Without a match, `why` says what the ops compute when they are a
/// pointwise function of h, and stays empty when they are not one.
std::optional<ActMatch> matchActivation(Value h, std::string &why);

ActivationKinds kindsOf(ActMatch::Kind k);

std::optional<ActivationKind> plainKind(ActMatch::Kind k);

std::optional<ActivationKind> gatedKind(ActMatch::Kind k);

/// `a * b` with `actOut` one of the factors: returns the other factor.
Value otherFactor(Operation *mul, Value actOut);

/// A specific reason why `op` (a torch op no recognised module takes) is not
/// raised, for the ops real models have around their LN modules (attention,
/// post-MLP norms, scalar multipliers, MLPs without a norm, split
/// projections); empty when there is none more specific than "not part of
/// a recognized module" (Explain.cpp).
std::string explainUnraised(Operation *op);

/// Tries to grow `fc1` (a linear on the norm output) into an MLP.
bool matchMLP(Group &g, Value normOut, std::string &why);

bool isScalarTwo(Value v);

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

inline Operation *soleUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

/// The other operand of a binary op whose operand is `v` (or null).
inline Value otherOperand(Operation *op, Value v) {
  if (!op || op->getNumOperands() < 2)
    return {};
  if (op->getOperand(0) == v)
    return op->getOperand(1);
  if (op->getOperand(1) == v)
    return op->getOperand(0);
  return {};
}

inline bool nearly(std::optional<double> v, double expected, double rel = 1e-4) {
  return v && std::abs(*v - expected) <= rel * std::abs(expected);
}

/// Is `dims` the single last dim of a rank-`rank` tensor?
inline bool isLastDimList(Value list, int64_t rank) {
  auto dims = constIntList(list);
  return dims && dims->size() == 1 &&
         ((*dims)[0] == -1 || (*dims)[0] == rank - 1);
}

/// Replaces `root`'s result by `replacement` and erases the now-dead ops of
/// the pattern (in reverse program order).
void replaceChain(PatternRewriter &rewriter, Value root, Value replacement,
                  ArrayRef<Operation *> ops);

/// var_mean(x, [-1], correction 0, keepdim) -> add.Scalar(eps) -> rsqrt;
/// sub(x, mean) * rstd [* gamma] [+ beta]  ==>  layer_norm
LogicalResult recomposeLayerNorm(Operation *varMean, PatternRewriter &rewriter);

/// pow(x, 2) | x*x -> mean over the last dim (mean.dim, or sum.dim_IntList
/// then div.Scalar K) -> add.Scalar(eps) -> rsqrt; x * rstd [* gamma]
///   ==>  rms_norm
LogicalResult recomposeRMSNorm(Operation *square, PatternRewriter &rewriter);

/// [view(x) ->] mm(x2, permute(W,[1,0]) | t(W) | W_in_out)
///   [-> mul.Scalar 1, add(mul.Scalar(b, 1)) | add.Tensor(b)] [-> view]
///   ==>  linear(x, W, b)  (a Conv1D [in, out] weight is transposed first)
LogicalResult recomposeLinear(Operation *mm, PatternRewriter &rewriter);

/// x * sigmoid(x)  ==>  silu(x)
LogicalResult recomposeSiLU(Operation *sigmoid, PatternRewriter &rewriter);

/// 0.5x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))  ==>  gelu(x, "tanh")
LogicalResult recomposeGeluTanh(Operation *tanh, PatternRewriter &rewriter);

/// `prims.convert_element_type` / `aten.to.dtype` / `aten.type_as` of a
/// tensor: returns the source value, or null when `op` is not a cast.
Value castSource(Operation *op);

/// cast(v) to v's own type ==> v
LogicalResult dropIdentityCast(Operation *op, PatternRewriter &rewriter);

Type elementTypeOf(Value v);

/// An f32 upcast of a narrower float (bf16/f16) tensor.
bool isUpcast(Operation *op);

/// A cast from f32 down to bf16/f16.
bool isDowncast(Operation *op);

tt::ValueTensorType withElementType(Type torchType, Type element);

/// PyTorch's bf16/f16 modules run their norms and GEMMs in f32 between
/// casts. Casts are moved next to the computation (upcasts above views and
/// permutes, downcasts below views), so that the patterns above match, and
/// a norm or linear sandwiched between an upcast of all its tensor inputs
/// and a downcast of its result becomes the op in the narrow dtype (TE
/// computes in fp32 internally, with narrow inputs and outputs).
LogicalResult moveCast(Operation *op, PatternRewriter &rewriter);

/// downcast(norm|linear(upcast(x), ...)) -> norm|linear(x, ...) in x's dtype.
LogicalResult removeCastSandwich(Operation *down, PatternRewriter &rewriter);

/// `div.Scalar(sum.dim_IntList(v, [-1], keepdim, none), K)`: the mean of v
/// over its last dim K; returns the two ops or nulls.
std::pair<Operation *, Operation *> matchMeanOverLast(Value v);

/// torch-mlir's `torch` output computes LayerNorm's variance in f64:
///   x64 = to.dtype(x, f64); m64 = mean(x64); c = x64 - m64;
///   var = to.dtype(mean(c * c), dtype(x)); mean = mean(x)
/// ==> var, mean = var_mean.correction(x, [-1], 0, keepdim)
LogicalResult recomposeVarMean(Operation *up, PatternRewriter &rewriter);

/// `broadcast_to` feeding only elementwise binary ops is implicit in torch
/// semantics: use the source directly.
LogicalResult stripBroadcast(Operation *op, PatternRewriter &rewriter);

/// The same-dtype variance (torch-mlir's decomposition of native_layer_norm,
/// and LayerNorms written out by hand, e.g. Cohere's):
///   mean = mean(x) | sum(x)/K; c = x - mean; var = mean(c*c | c^2)
/// (c may be computed twice) ==> var, mean = var_mean.correction(x, [-1], 0,
/// keepdim)
LogicalResult recomposeVarMeanSameDtype(Operation *meanOp,
                                        PatternRewriter &rewriter);

/// A norm without weight (and, for LayerNorm, without bias) times a weight
/// vector [plus a bias vector] in the norm's dtype: Hugging Face's RMSNorm
/// multiplies by its weight after casting back, `w * norm(x).to(dtype)`.
///   mul(norm(x, none[, none]), w) [+ b]  ==>  norm(x, w[, b])
/// TransformerEngine applies the weight in fp32 before rounding, so this
/// is one rounding fewer than PyTorch's bf16 product.
LogicalResult absorbNormAffine(Operation *mul, PatternRewriter &rewriter);

/// An error at each torch op whose operand or result count (or constant
/// value) is not torch-mlir's: the patterns may rely on them afterwards.
LogicalResult verifyTorchSignatures(func::FuncOp func);

/// Dead scalar bookkeeping left by the rewrites (sizes of views).
bool isDeadBookkeeping(Operation &op);

/// The rewrites of decomposed forms, in the order recomposeDecomposedForms
/// tries them on each op.
void populateRecomposeTorchPatterns(RewritePatternSet &patterns);

/// Puts torch-mlir's high-level ops back in `func` (first matching rewrite,
/// then again from the top, until none applies), then drops the scalar ops
/// left dead.
void recomposeDecomposedForms(func::FuncOp func);

} // namespace mlir::te::torch_import

#endif // TE_LIB_CONVERSION_TORCHTOTE_TORCHTOTE_H
