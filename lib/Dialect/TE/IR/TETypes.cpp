//===- TETypes.cpp - TE dialect types ---------------------------*- C++ -*-===//
//
// The quantized tensor type: parsing, verification and its inner tensors
// (TransformerEngine's fake-tensor rules, per recipe); symbolic dimensions.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TETypes.h"
#include "te/Dialect/TE/IR/TEDialect.h"
#include "te/Dialect/TE/IR/TEQuantLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::te;

#define GET_TYPEDEF_CLASSES
#include "te/Dialect/TE/IR/TEOpsTypes.cpp.inc"

void TEDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "te/Dialect/TE/IR/TEOpsTypes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// SymDim
//===----------------------------------------------------------------------===//
//
// A symbolic SymDim is `value * (expr)`: `value` is a constant coefficient,
// so products of a symbol with constants stay readable (`d0*512`).

SymDim SymDim::symbol(StringRef name) {
  SymDim d(1);
  d.expr = name.str();
  return d;
}

SymDim SymDim::dimOf(ArrayRef<int64_t> shape, unsigned i) {
  if (ShapedType::isDynamic(shape[i]))
    return symbol("d" + std::to_string(i));
  return SymDim(shape[i]);
}

SymDim SymDim::dimOf(RankedTensorType type, unsigned i) {
  return dimOf(type.getShape(), i);
}

/// The expression with its coefficient, parenthesized when `forProduct` and
/// it is a sum.
static std::string render(const std::string &expr, bool atomic, int64_t coef,
                          bool forProduct) {
  std::string base = expr;
  if (!atomic && (coef != 1 || forProduct))
    base = "(" + base + ")";
  if (coef == 1)
    return base;
  return base + "*" + std::to_string(coef);
}

std::string SymDim::str() const {
  if (isStatic())
    return std::to_string(value);
  return render(expr, atomic, value, /*forProduct=*/false);
}

llvm::json::Value SymDim::toJSON() const {
  if (isStatic())
    return value;
  return str();
}

int64_t SymDim::toShapedDim() const {
  return isStatic() ? value : ShapedType::kDynamic;
}

// Sizes of shapes within the verifiers' bounds (kMaxDimSize, kMaxElements)
// never overflow; these saturate instead of wrapping (signed overflow is
// undefined) should an unverified shape get here.
static int64_t mulSat(int64_t a, int64_t b) {
  int64_t r;
  if (llvm::MulOverflow(a, b, r))
    return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min()
                              : std::numeric_limits<int64_t>::max();
  return r;
}
static int64_t addSat(int64_t a, int64_t b) {
  int64_t r;
  if (llvm::AddOverflow(a, b, r))
    return a < 0 ? std::numeric_limits<int64_t>::min()
                 : std::numeric_limits<int64_t>::max();
  return r;
}
static int64_t subSat(int64_t a, int64_t b) {
  int64_t r;
  if (llvm::SubOverflow(a, b, r))
    return a < 0 ? std::numeric_limits<int64_t>::min()
                 : std::numeric_limits<int64_t>::max();
  return r;
}

LogicalResult
mlir::te::verifyShapeBounds(function_ref<InFlightDiagnostic()> emitError,
                            ArrayRef<int64_t> shape, StringRef what) {
  int64_t elements = 1;
  for (int64_t d : shape) {
    if (ShapedType::isDynamic(d))
      continue;
    if (d > kMaxDimSize)
      return emitError() << what << " has dimension " << d
                         << ", above the largest supported (2^40 = "
                         << kMaxDimSize << ")";
    elements = mulSat(elements, d);
  }
  if (elements > kMaxElements)
    return emitError() << what << " has " << elements
                       << " elements, above the largest supported (2^48 = "
                       << kMaxElements << ")";
  return success();
}

SymDim SymDim::operator*(const SymDim &rhs) const {
  if (isStatic() && rhs.isStatic())
    return SymDim(mulSat(value, rhs.value));
  if (isStatic() || rhs.isStatic()) {
    const SymDim &sym = isStatic() ? rhs : *this;
    int64_t c = isStatic() ? value : rhs.value;
    if (c == 0)
      return SymDim(0);
    SymDim d = sym;
    d.value = mulSat(d.value, c);
    return d;
  }
  SymDim d(mulSat(value, rhs.value));
  d.expr = render(expr, atomic, 1, true) + "*" +
           render(rhs.expr, rhs.atomic, 1, true);
  d.atomic = true;
  return d;
}

SymDim SymDim::operator+(const SymDim &rhs) const {
  if (isStatic() && rhs.isStatic())
    return SymDim(addSat(value, rhs.value));
  if (isStatic() && value == 0)
    return rhs;
  if (rhs.isStatic() && rhs.value == 0)
    return *this;
  SymDim d(1);
  d.expr = str() + " + " + rhs.str();
  d.atomic = false;
  return d;
}

SymDim SymDim::operator-(const SymDim &rhs) const {
  if (isStatic() && rhs.isStatic())
    return SymDim(subSat(value, rhs.value));
  if (rhs.isStatic() && rhs.value == 0)
    return *this;
  SymDim d(1);
  d.expr = str() + " - " +
           render(rhs.expr.empty() ? std::to_string(rhs.value) : rhs.expr,
                  rhs.atomic, rhs.isStatic() ? 1 : rhs.value, true);
  d.atomic = false;
  return d;
}

SymDim SymDim::exactDiv(int64_t divisor) const {
  if (divisor == 1)
    return *this;
  if (isStatic())
    return SymDim(value / divisor);
  if (value % divisor == 0) {
    SymDim d = *this;
    d.value /= divisor;
    return d;
  }
  SymDim d(1);
  d.expr = render(expr, atomic, value, true) + "/" + std::to_string(divisor);
  d.atomic = true;
  return d;
}

SymDim SymDim::ceilDiv(int64_t divisor) const {
  if (isStatic())
    return SymDim(llvm::divideCeilSigned(value, divisor));
  if (divisor == 1)
    return *this;
  SymDim d(1);
  d.expr = "ceildiv(" + str() + ", " + std::to_string(divisor) + ")";
  return d;
}

SymDim SymDim::roundUp(int64_t multiple) const {
  if (isStatic())
    return SymDim(mulSat(llvm::divideCeilSigned(value, multiple), multiple));
  if (multiple == 1)
    return *this;
  SymDim d(1);
  d.expr = "roundup(" + str() + ", " + std::to_string(multiple) + ")";
  return d;
}

SymDim mlir::te::product(ArrayRef<SymDim> dims) {
  SymDim p(1);
  for (const SymDim &d : dims)
    p = p * d;
  return p;
}

//===----------------------------------------------------------------------===//
// Descriptions: sizes and JSON
//===----------------------------------------------------------------------===//

SymDim InnerTensor::bytes() const {
  return product(shape) * SymDim(elementBytes);
}

static llvm::json::Array shapeToJSON(ArrayRef<SymDim> shape) {
  llvm::json::Array a;
  for (const SymDim &d : shape)
    a.push_back(d.toJSON());
  return a;
}

llvm::json::Value InnerTensor::toJSON() const {
  return llvm::json::Object{
      {"name", name}, {"shape", shapeToJSON(shape)}, {"dtype", dtype}};
}

SymDim TensorDesc::bytes() const {
  if (auto q = dyn_cast_or_null<QuantizedTensorType>(quantized)) {
    SymDim total(0);
    for (const InnerTensor &t : q.getInnerTensors())
      total = total + t.bytes();
    return total;
  }
  return product(shape) * SymDim(elementBytes);
}

llvm::json::Object TensorDesc::toJSON() const {
  llvm::json::Object o{
      {"name", name}, {"shape", shapeToJSON(shape)}, {"dtype", dtype}};
  if (auto q = dyn_cast_or_null<QuantizedTensorType>(quantized)) {
    std::string typeStr;
    llvm::raw_string_ostream os(typeStr);
    os << q;
    o["type"] = typeStr;
    o["usage"] = stringifyQuantUsage(q.getUsage()).str();
    llvm::json::Array inner;
    for (const InnerTensor &t : q.getInnerTensors())
      inner.push_back(t.toJSON());
    o["inner"] = std::move(inner);
  }
  o["bytes"] = bytes().toJSON();
  return o;
}

Type TensorDesc::getType(MLIRContext *context) const {
  if (quantized)
    return quantized;
  SmallVector<int64_t> dims;
  for (const SymDim &d : shape)
    dims.push_back(d.toShapedDim());
  Builder b(context);
  Type element = dtype == "float32"    ? b.getF32Type()
                 : dtype == "bfloat16" ? b.getBF16Type()
                 : dtype == "float16"  ? b.getF16Type()
                                       : Type(b.getIntegerType(8));
  return RankedTensorType::get(dims, element);
}

TensorDesc TensorDesc::fromType(StringRef name, Type type) {
  TensorDesc t;
  t.name = name.str();
  ArrayRef<int64_t> shape;
  if (auto q = dyn_cast<QuantizedTensorType>(type)) {
    shape = q.getShape();
    t.dtype = stringifyQuantFormat(q.getFormat()).str();
    t.quantized = q;
  } else {
    auto rt = cast<RankedTensorType>(type);
    shape = rt.getShape();
    Type e = rt.getElementType();
    t.dtype = e.isF32()    ? "float32"
              : e.isBF16() ? "bfloat16"
              : e.isF16()  ? "float16"
                           : "uint8";
    t.elementBytes = std::max(1u, e.getIntOrFloatBitWidth() / 8);
  }
  for (unsigned i = 0; i < shape.size(); ++i)
    t.shape.push_back(SymDim::dimOf(shape, i));
  return t;
}

llvm::json::Value Alias::toJSON() const {
  switch (kind) {
  case None:
    return nullptr;
  case Input:
    return "input:" + std::to_string(index);
  case Output:
    return "output:" + std::to_string(index);
  }
  llvm_unreachable("unknown alias kind");
}

SymDim ModuleDescription::savedBytes() const {
  SymDim total(0);
  for (const SavedDesc &s : saved)
    if (s.alias.kind == Alias::None)
      total = total + s.tensor.bytes();
  return total;
}

//===----------------------------------------------------------------------===//
// Recipe helpers
//===----------------------------------------------------------------------===//

RecipeAlignment mlir::te::getRecipeAlignment(RecipeAttrInterface recipe) {
  return llvm::TypeSwitch<Attribute, RecipeAlignment>(recipe)
      .Case<FP8DelayedRecipeAttr, FP8CurrentRecipeAttr>([](auto) {
        return RecipeAlignment{8, 16};
      })
      .Case<MXFP8RecipeAttr>([](auto) {
        return RecipeAlignment{32, 32};
      })
      .Case<NVFP4RecipeAttr>([](auto) {
        return RecipeAlignment{16, 16};
      })
      .Case<FP8BlockRecipeAttr>([](auto) {
        return RecipeAlignment{128, 128};
      })
      .Default([](Attribute) {
        return RecipeAlignment{1, 1};
      });
}

static QuantFormat fromFP8Format(FP8Format format, bool backward) {
  switch (format) {
  case FP8Format::E4M3:
    return QuantFormat::E4M3;
  case FP8Format::E5M2:
    return QuantFormat::E5M2;
  case FP8Format::Hybrid:
    return backward ? QuantFormat::E5M2 : QuantFormat::E4M3;
  }
  llvm_unreachable("unknown FP8 format");
}

static QuantFormat formatFor(RecipeAttrInterface recipe, bool backward) {
  return llvm::TypeSwitch<Attribute, QuantFormat>(recipe)
      .Case<FP8DelayedRecipeAttr, FP8CurrentRecipeAttr>(
          [&](auto r) { return fromFP8Format(r.getFormat(), backward); })
      .Case<NVFP4RecipeAttr>([](auto) { return QuantFormat::E2M1; })
      .Default([](Attribute) { return QuantFormat::E4M3; });
}

QuantFormat mlir::te::getForwardFormat(RecipeAttrInterface recipe) {
  return formatFor(recipe, /*backward=*/false);
}
QuantFormat mlir::te::getBackwardFormat(RecipeAttrInterface recipe) {
  return formatFor(recipe, /*backward=*/true);
}

//===----------------------------------------------------------------------===//
// QuantizedTensorType
//===----------------------------------------------------------------------===//

Type QuantizedTensorType::parse(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  SmallVector<int64_t> shape;
  StringRef formatName;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/true,
                                /*withTrailingX=*/true))
    return {};
  SMLoc formatLoc = parser.getCurrentLocation();
  if (parser.parseKeyword(&formatName))
    return {};
  std::optional<QuantFormat> format = symbolizeQuantFormat(formatName);
  if (!format) {
    parser.emitError(formatLoc, "expected element format e4m3, e5m2 or e2m1, "
                                "got '")
        << formatName << "'";
    return {};
  }
  Attribute recipeAttr;
  SMLoc recipeLoc;
  if (parser.parseComma())
    return {};
  recipeLoc = parser.getCurrentLocation();
  if (parser.parseAttribute(recipeAttr))
    return {};
  auto recipe = dyn_cast<RecipeAttrInterface>(recipeAttr);
  if (!recipe) {
    parser.emitError(recipeLoc, "expected a recipe attribute, got ")
        << recipeAttr;
    return {};
  }
  auto parseEnum = [&](auto symbolize, StringRef what,
                       StringRef choices) -> std::optional<uint32_t> {
    StringRef word;
    SMLoc wordLoc = parser.getCurrentLocation();
    if (parser.parseComma() || parser.parseKeyword(&word))
      return std::nullopt;
    if (auto value = symbolize(word))
      return static_cast<uint32_t>(*value);
    parser.emitError(wordLoc, "expected ")
        << what << " (" << choices << "), got '" << word << "'";
    return std::nullopt;
  };
  auto usage = parseEnum([](StringRef s) { return symbolizeQuantUsage(s); },
                         "usage", "rowwise, columnwise or both");
  if (!usage)
    return {};
  auto arch = parseEnum([](StringRef s) { return symbolizeTargetArch(s); },
                        "architecture", "hopper or blackwell");
  if (!arch)
    return {};
  bool block2d = false, swizzled = false, rowScaled = false, rht = false;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef flag;
    SMLoc flagLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&flag))
      return {};
    bool *slot = llvm::StringSwitch<bool *>(flag)
                     .Case("block_2d", &block2d)
                     .Case("swizzled", &swizzled)
                     .Case("row_scaled", &rowScaled)
                     .Case("rht", &rht)
                     .Default(nullptr);
    if (!slot) {
      parser.emitError(flagLoc, "unknown qtensor flag '")
          << flag << "'; expected block_2d, swizzled, row_scaled or rht";
      return {};
    }
    if (*slot) {
      parser.emitError(flagLoc, "duplicate qtensor flag '") << flag << "'";
      return {};
    }
    *slot = true;
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); }, parser.getContext(),
                    shape, *format, recipe, static_cast<QuantUsage>(*usage),
                    static_cast<TargetArch>(*arch), block2d, swizzled,
                    rowScaled, rht);
}

void QuantizedTensorType::print(AsmPrinter &printer) const {
  printer << "<";
  printer.printDimensionList(getShape());
  printer << "x" << stringifyQuantFormat(getFormat()) << ", " << getRecipe()
          << ", " << stringifyQuantUsage(getUsage()) << ", "
          << stringifyTargetArch(getArch());
  if (getBlock_2d())
    printer << ", block_2d";
  if (getSwizzled())
    printer << ", swizzled";
  if (getRowScaled())
    printer << ", row_scaled";
  if (getRht())
    printer << ", rht";
  printer << ">";
}

LogicalResult QuantizedTensorType::verify(
    function_ref<InFlightDiagnostic()> emitError, ArrayRef<int64_t> shape,
    QuantFormat format, RecipeAttrInterface recipe, QuantUsage usage,
    TargetArch arch, bool block2d, bool swizzled, bool rowScaled, bool rht) {
  if (!recipe)
    return emitError() << "qtensor needs a recipe";
  if (!recipe.isQuantized())
    return emitError() << "qtensor recipe " << recipe
                       << " does not quantize; use a plain tensor type";
  if (shape.empty())
    return emitError() << "qtensor must have rank >= 1";
  for (int64_t d : shape)
    if (d < 0 && !ShapedType::isDynamic(d))
      return emitError() << "qtensor dimensions must be non-negative";
  if (failed(verifyShapeBounds(emitError, shape, "qtensor")))
    return failure();

  StringRef fmt = stringifyQuantFormat(format);
  StringRef name = recipe.getRecipeName();
  LogicalResult formatOk =
      llvm::TypeSwitch<Attribute, LogicalResult>(recipe)
          .Case<NVFP4RecipeAttr>(
              [&](auto) { return success(format == QuantFormat::E2M1); })
          .Case<MXFP8RecipeAttr>(
              [&](auto) { return success(format != QuantFormat::E2M1); })
          .Case<FP8BlockRecipeAttr>(
              [&](auto) { return success(format == QuantFormat::E4M3); })
          .Case<FP8DelayedRecipeAttr, FP8CurrentRecipeAttr>([&](auto r) {
            if (r.getFormat() == FP8Format::Hybrid)
              return success(format != QuantFormat::E2M1);
            return success(format == fromFP8Format(r.getFormat(), false));
          })
          .Default([](Attribute) { return failure(); });
  if (failed(formatOk))
    return emitError() << "qtensor element format " << fmt
                       << " is not produced by recipe " << recipe;

  if (block2d && !isa<FP8BlockRecipeAttr, NVFP4RecipeAttr>(recipe))
    return emitError() << "qtensor flag block_2d applies only to recipes "
                          "fp8-block (128x128 blocks) and nvfp4 (16x16), got "
                       << name;
  if (rht) {
    if (!isa<NVFP4RecipeAttr>(recipe))
      return emitError() << "qtensor flag rht applies only to recipe nvfp4, "
                            "got "
                         << name;
    if (usage == QuantUsage::Rowwise)
      return emitError() << "qtensor flag rht transforms the columnwise copy; "
                            "a rowwise-only qtensor has none";
    if (block2d)
      return emitError() << "qtensor flags rht and block_2d exclude each "
                            "other (TE transforms 1-D scaled wgrad operands, "
                            "not 2-D scaled weights)";
  }
  if (swizzled && !isa<MXFP8RecipeAttr, NVFP4RecipeAttr>(recipe))
    return emitError() << "qtensor flag swizzled applies only to recipes "
                          "mxfp8 and nvfp4 (block scales), got "
                       << name;
  if (rowScaled) {
    if (!isa<NVFP4RecipeAttr>(recipe))
      return emitError() << "qtensor flag row_scaled applies only to recipe "
                            "nvfp4, got "
                         << name;
    if (usage == QuantUsage::Columnwise)
      return emitError() << "row-scaled nvfp4 qtensor needs rowwise usage "
                            "(TE allocates per-row amaxes with the rowwise "
                            "copy)";
  }

  // TE's allocator refuses MXFP8 and NVFP4 tensors whose flattened dims are
  // not multiples of the block size.
  if (isa<MXFP8RecipeAttr, NVFP4RecipeAttr>(recipe)) {
    int64_t block = isa<MXFP8RecipeAttr>(recipe) ? 32 : 16;
    int64_t k = shape.back();
    bool rowsStatic = true;
    int64_t m = 1;
    for (int64_t d : shape.drop_back()) {
      if (ShapedType::isDynamic(d))
        rowsStatic = false;
      else
        m *= d;
    }
    if (!ShapedType::isDynamic(k) && k % block != 0)
      return emitError() << "recipe " << name << " needs the last dim "
                         << "divisible by " << block << ", got " << k;
    if (rowsStatic && m % block != 0)
      return emitError() << "recipe " << name << " needs the flattened "
                         << "leading dims divisible by " << block << ", got "
                         << m;
  }
  return success();
}

QuantizedTensorType QuantizedTensorType::withUsage(QuantUsage usage) const {
  // A rowwise-only copy has no transformed data left.
  return get(getContext(), getShape(), getFormat(), getRecipe(), usage,
             getArch(), getBlock_2d(), getSwizzled(), getRowScaled(),
             getRht() && usage != QuantUsage::Rowwise);
}

bool QuantizedTensorType::hasTransposedColumnwise() const {
  return isa<FP8DelayedRecipeAttr, FP8CurrentRecipeAttr>(getRecipe()) &&
         getArch() != TargetArch::Blackwell;
}

SmallVector<InnerTensor> QuantizedTensorType::getInnerTensors() const {
  ArrayRef<int64_t> shape = getShape();
  SmallVector<SymDim> dims;
  for (unsigned i = 0, e = shape.size(); i < e; ++i)
    dims.push_back(SymDim::dimOf(shape, i));
  SmallVector<InnerTensor> inner;
  for (InnerTensorOf<SymDim> &t : getInnerTensorsOf<SymDim>(*this, dims))
    inner.push_back(InnerTensor{std::move(t.name), std::move(t.shape),
                                std::move(t.dtype), t.elementBytes});
  return inner;
}
