//===- TEAttrs.cpp - TE dialect attributes ----------------------*- C++ -*-===//
//
// Recipe attributes: verification, the recipe interface and default recipes.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEAttrs.h"
#include "te/Dialect/TE/IR/TEDialect.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::te;

#include "te/Dialect/TE/IR/TEEnums.cpp.inc"

#include "te/Dialect/TE/IR/TEAttrInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "te/Dialect/TE/IR/TEAttrs.cpp.inc"

void TEDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "te/Dialect/TE/IR/TEAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Recipe interface implementations
//===----------------------------------------------------------------------===//

StringRef BF16RecipeAttr::getRecipeName() const { return "bf16"; }
bool BF16RecipeAttr::isQuantized() const { return false; }

StringRef FP8DelayedRecipeAttr::getRecipeName() const { return "fp8-delayed"; }
bool FP8DelayedRecipeAttr::isQuantized() const { return true; }

StringRef FP8CurrentRecipeAttr::getRecipeName() const { return "fp8-current"; }
bool FP8CurrentRecipeAttr::isQuantized() const { return true; }

StringRef MXFP8RecipeAttr::getRecipeName() const { return "mxfp8"; }
bool MXFP8RecipeAttr::isQuantized() const { return true; }

StringRef FP8BlockRecipeAttr::getRecipeName() const { return "fp8-block"; }
bool FP8BlockRecipeAttr::isQuantized() const { return true; }

StringRef NVFP4RecipeAttr::getRecipeName() const { return "nvfp4"; }
bool NVFP4RecipeAttr::isQuantized() const { return true; }

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

bool mlir::te::runsUnderTensorParallel(RecipeAttrInterface recipe) {
  return !recipe || !recipe.isQuantized() ||
         isa<FP8CurrentRecipeAttr, FP8DelayedRecipeAttr>(recipe);
}

LogicalResult
TensorParallelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           int64_t size, bool sequenceParallel,
                           bool reduceParamGrads) {
  // NCCL's and MPI's communicators count ranks in int32.
  if (size < 2 || size > kMaxTensorParallelSize)
    return emitError() << "tp size must be in [2, " << kMaxTensorParallelSize
                       << "], got " << size;
  if (reduceParamGrads && !sequenceParallel)
    return emitError() << "tp reduce_param_grads needs sequence_parallel "
                          "(without it the norm and FC2-bias gradients are "
                          "already whole on every rank)";
  return success();
}

LogicalResult
FP8DelayedRecipeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                             int64_t margin, int64_t amaxHistoryLen,
                             AmaxComputeAlgo, FP8Format) {
  if (margin < 0)
    return emitError() << "fp8_delayed margin must be non-negative, got "
                       << margin;
  if (amaxHistoryLen < 1)
    return emitError() << "fp8_delayed amax_history_len must be at least 1, "
                          "got "
                       << amaxHistoryLen;
  // TE's default is 1024; the history is a [len, slots] fp32 tensor of
  // every delayed-scaling entry's state.
  if (amaxHistoryLen > kMaxAmaxHistoryLen)
    return emitError() << "fp8_delayed amax_history_len must be at most "
                       << kMaxAmaxHistoryLen << ", got " << amaxHistoryLen;
  if (margin > kMaxFP8Margin)
    return emitError() << "fp8_delayed margin must be at most " << kMaxFP8Margin
                       << ", got " << margin;
  return success();
}

LogicalResult
FP8BlockRecipeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                           int64_t xBlockDim, int64_t wBlockDim,
                           int64_t gradBlockDim, bool) {
  auto check = [&](StringRef name, int64_t dim) -> LogicalResult {
    if (dim == 1 || dim == 2)
      return success();
    return emitError() << "fp8_block " << name
                       << " must be 1 (1x128 blocks) or 2 (128x128 blocks), "
                          "got "
                       << dim;
  };
  if (failed(check("x_block_dim", xBlockDim)) ||
      failed(check("w_block_dim", wBlockDim)) ||
      failed(check("grad_block_dim", gradBlockDim)))
    return failure();
  // Each GEMM multiplies two of {x, w, grad}; TE rejects 2D x 2D.
  auto reject = [&](StringRef gemm, StringRef a, StringRef b) {
    return emitError() << "fp8_block " << gemm << " GEMM would multiply two "
                       << "128x128-scaled operands (" << a << " and " << b
                       << "); at most one operand may use block dim 2";
  };
  if (xBlockDim == 2 && wBlockDim == 2)
    return reject("fprop", "x", "w");
  if (gradBlockDim == 2 && wBlockDim == 2)
    return reject("dgrad", "grad", "w");
  if (xBlockDim == 2 && gradBlockDim == 2)
    return reject("wgrad", "x", "grad");
  return success();
}

/// Whether `scope` names a forward tensor that is (or is not) a weight.
static bool inScope(NVFP4Scope scope, bool weight) {
  switch (scope) {
  case NVFP4Scope::None:
    return false;
  case NVFP4Scope::Weights:
    return weight;
  case NVFP4Scope::Activations:
    return !weight;
  case NVFP4Scope::All:
    return true;
  }
  llvm_unreachable("unknown NVFP4Scope");
}

bool NVFP4RecipeAttr::fourOverSix(bool weight) const {
  return inScope(getFourOverSix(), weight);
}

float NVFP4RecipeAttr::fourOverSixE4M3Max(bool weight) const {
  return fourOverSix(weight) && inScope(getFourOverSixE4m3Use_256(), weight)
             ? 256.0f
             : 448.0f;
}

LogicalResult
NVFP4RecipeAttr::verify(function_ref<InFlightDiagnostic()> emitError, bool rht,
                        bool, bool, bool rowScaled, NVFP4Scope fourOverSix,
                        NVFP4Scope, NVFP4ErrMode) {
  // TE builds no quantizer that combines 4-over-6 with the Hadamard
  // transform, which NVFP4 applies to the wgrad copy of activations.
  if (rht && inScope(fourOverSix, /*weight=*/false))
    return emitError() << "nvfp4 four_over_six = "
                       << stringifyNVFP4Scope(fourOverSix)
                       << " needs rht = false (4-over-6 activations cannot "
                          "be Hadamard-transformed, as in TE)";
  if (rowScaled && fourOverSix != NVFP4Scope::None)
    return emitError() << "nvfp4 four_over_six is not implemented with "
                          "row_scaled";
  return success();
}

//===----------------------------------------------------------------------===//
// Default recipes
//===----------------------------------------------------------------------===//

ArrayRef<StringRef> mlir::te::getRecipeNames() {
  static const StringRef names[] = {"bf16",      "fp8-delayed", "fp8-current",
                                    "fp8-block", "mxfp8",       "nvfp4"};
  return names;
}

RecipeAttrInterface mlir::te::getDefaultRecipe(MLIRContext *ctx, StringRef name,
                                               std::string *why) {
  ctx->getOrLoadDialect<TEDialect>();
  if (name == "bf16")
    return BF16RecipeAttr::get(ctx);
  if (name == "fp8-delayed")
    return FP8DelayedRecipeAttr::get(ctx, /*margin=*/0, /*amaxHistoryLen=*/1024,
                                     AmaxComputeAlgo::Max, FP8Format::Hybrid);
  if (name == "fp8-current")
    return FP8CurrentRecipeAttr::get(ctx, FP8Format::Hybrid,
                                     /*power2Scales=*/false);
  if (name == "fp8-block")
    return FP8BlockRecipeAttr::get(ctx, /*xBlockDim=*/1, /*wBlockDim=*/2,
                                   /*gradBlockDim=*/1, /*fp32Scales=*/false);
  if (name == "mxfp8")
    return MXFP8RecipeAttr::get(ctx);
  if (name == "nvfp4")
    return NVFP4RecipeAttr::get(ctx, /*rht=*/true, /*stochasticRounding=*/true,
                                /*weight2d=*/true, /*rowScaled=*/false,
                                NVFP4Scope::None, NVFP4Scope::All,
                                NVFP4ErrMode::MAE);
  if (name.starts_with("#te.")) {
    // The caller reports the failure; the parser's own diagnostic would
    // point into a buffer the user never wrote.
    // The first error says what is wrong (a bad value, a verifier's rule).
    ScopedDiagnosticHandler quiet(ctx, [&](Diagnostic &diag) {
      if (why && why->empty() &&
          diag.getSeverity() == DiagnosticSeverity::Error)
        *why = diag.str();
      return success();
    });
    return dyn_cast_or_null<RecipeAttrInterface>(parseAttribute(name, ctx));
  }
  return {};
}

//===----------------------------------------------------------------------===//
// #te.act
//===----------------------------------------------------------------------===//

namespace {
/// Parses `name` then, when present, `,`-separated (leading: `, `; in an
/// op: `<...>`) `param = value` pairs into `params` (defaults for those
/// left out).
ParseResult parseActivationParts(AsmParser &parser, bool inOp,
                                 ActivationKind &kind,
                                 SmallVector<double> &params) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef name;
  if (parser.parseKeyword(&name))
    return failure();
  std::optional<ActivationKind> k = symbolizeActivationKind(name);
  if (!k) {
    std::string names;
    for (const ActivationInfo &a : getActivations())
      names += (names.empty() ? "" : ", ") + a.name.str();
    return parser.emitError(loc) << "unknown activation '" << name
                                 << "' (expected one of " << names << ")";
  }
  kind = *k;
  const ActivationInfo &info = getActivationInfo(kind);
  params = defaultActivationParams(kind);
  SmallVector<bool> seen(params.size(), false);
  auto parseOne = [&]() -> ParseResult {
    SMLoc ploc = parser.getCurrentLocation();
    StringRef pname;
    double value;
    if (parser.parseKeyword(&pname) || parser.parseEqual())
      return failure();
    if (parser.parseFloat(value))
      return failure();
    auto it = llvm::find_if(info.params, [&](const ActivationParamInfo &p) {
      return p.name == pname;
    });
    if (it == info.params.end()) {
      InFlightDiagnostic d = parser.emitError(ploc)
                             << "activation " << info.name
                             << " has no parameter '" << pname << "'";
      if (info.params.empty())
        d << " (it takes none)";
      return d;
    }
    size_t i = it - info.params.begin();
    if (seen[i])
      return parser.emitError(ploc)
             << "parameter '" << pname << "' of " << info.name
             << " is given twice";
    seen[i] = true;
    params[i] = value;
    return success();
  };
  if (inOp) {
    if (succeeded(parser.parseOptionalLess())) {
      if (parser.parseCommaSeparatedList(parseOne) || parser.parseGreater())
        return failure();
    }
    return success();
  }
  while (succeeded(parser.parseOptionalComma()))
    if (parseOne())
      return failure();
  return success();
}

/// The parameters that differ from TE's defaults, as `name = value`.
void printNonDefaultParams(AsmPrinter &printer, ActivationKind kind,
                           ArrayRef<double> params, StringRef open,
                           StringRef close) {
  ArrayRef<ActivationParamInfo> info = getActivationInfo(kind).params;
  bool first = true;
  for (auto [p, v] : llvm::zip(info, params)) {
    if (v == p.defaultValue)
      continue;
    printer << (first ? open : StringRef(", ")) << p.name << " = ";
    printer.printFloat(llvm::APFloat(v));
    first = false;
  }
  if (!first)
    printer << close;
}
} // namespace

Attribute ActivationAttr::parse(AsmParser &parser, Type) {
  ActivationKind kind;
  SmallVector<double> params;
  if (parser.parseLess() ||
      parseActivationParts(parser, /*inOp=*/false, kind, params) ||
      parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), kind,
                    DenseF64ArrayAttr::get(parser.getContext(), params));
}

void ActivationAttr::print(AsmPrinter &printer) const {
  printer << "<" << getActivationName();
  printNonDefaultParams(printer, getKind(), getParamValues(), ", ", "");
  printer << ">";
}

LogicalResult
ActivationAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       ActivationKind kind, DenseF64ArrayAttr paramsAttr) {
  if (!paramsAttr)
    return emitError() << "activation parameters missing";
  ArrayRef<double> params = paramsAttr.asArrayRef();
  if (static_cast<uint32_t>(kind) > getMaxEnumValForActivationKind())
    return emitError() << "activation code " << static_cast<uint32_t>(kind)
                       << " is not an activation";
  const ActivationInfo &info = getActivationInfo(kind);
  if (params.size() != info.params.size())
    return emitError() << "activation " << info.name << " takes "
                       << info.params.size() << " parameters, got "
                       << params.size();
  for (auto [p, v] : llvm::zip(info.params, params)) {
    if (!std::isfinite(v))
      return emitError() << p.name << " must be finite";
    if (p.positive && v <= 0)
      return emitError() << p.name << " must be positive, got " << v;
  }
  return success();
}

std::optional<double> ActivationAttr::getParam(StringRef name) const {
  for (auto [p, v] : llvm::zip(getActivationInfo(getKind()).params, getParamValues()))
    if (p.name == name)
      return v;
  return std::nullopt;
}

StringRef ActivationAttr::getActivationName() const {
  return stringifyActivationKind(getKind());
}
bool ActivationAttr::isGated() const { return isGatedActivation(getKind()); }
ArrayRef<double> ActivationAttr::getParamValues() const {
  return getParams().asArrayRef();
}
int32_t ActivationAttr::getRuntimeCode() const {
  return static_cast<int32_t>(getKind());
}
bool ActivationAttr::hasGemmEpilogue() const {
  const ActivationInfo &info = getActivationInfo(getKind());
  return !info.gated && info.fn == ActivationFn::GELU_TANH;
}
bool ActivationAttr::hasDbiasFusion() const { return !isGated(); }

//===----------------------------------------------------------------------===//
// custom<Activation> and the loose-parameter check
//===----------------------------------------------------------------------===//

ParseResult mlir::te::parseActivation(OpAsmParser &parser,
                                      ActivationAttr &act) {
  SMLoc loc = parser.getCurrentLocation();
  ActivationKind kind;
  SmallVector<double> params;
  if (parseActivationParts(parser, /*inOp=*/true, kind, params))
    return failure();
  act = ActivationAttr::getChecked([&] { return parser.emitError(loc); },
                                   parser.getContext(), kind,
                                   DenseF64ArrayAttr::get(parser.getContext(),
                                                          params));
  return success(bool(act));
}

void mlir::te::printActivation(OpAsmPrinter &printer, Operation *,
                               ActivationAttr act) {
  printer << act.getActivationName();
  printNonDefaultParams(printer, act.getKind(), act.getParamValues(), "<", ">");
}

LogicalResult mlir::te::verifyNoLooseActivationParams(Operation *op) {
  for (const ActivationInfo &a : getActivations())
    for (const ActivationParamInfo &p : a.params)
      if (op->hasAttr(p.name))
        return op->emitOpError()
               << "'" << p.name << "' is a parameter of the activation: write "
               << a.name << "<" << p.name << " = ...> after `act` (or after "
               << "the op name), not an attribute";
  return success();
}
