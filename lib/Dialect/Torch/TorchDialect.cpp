//===- TorchDialect.cpp - torch-mlir import subset --------------*- C++ -*-===//
//
// Types of torch-mlir's `torch` dialect and parse/print hooks for its
// operations, in the textual forms torch-mlir prints (reference/torch-mlir.md
// and the real exports under test/Conversion/TorchToTE/Inputs). Operations are created
// unregistered; the dialect allows unknown operations.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/Torch/TorchDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::te::torch;

#include "te/Dialect/Torch/TorchDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "te/Dialect/Torch/TorchTypes.cpp.inc"

void TorchDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "te/Dialect/Torch/TorchTypes.cpp.inc"
      >();
  allowUnknownOperations();
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

template <typename T> static RankedTensorType builtinTensorOf(T type) {
  if (!type.getHasSizes() || !type.getDtype())
    return {};
  return RankedTensorType::get(type.getSizes(), type.getDtype());
}
RankedTensorType ValueTensorType::toBuiltinTensor() const {
  return builtinTensorOf(*this);
}
RankedTensorType NonValueTensorType::toBuiltinTensor() const {
  return builtinTensorOf(*this);
}

static Type parseTorchType(AsmParser &parser, StringRef keyword);

/// An element type inside `list<...>`/`optional<...>`, written without the
/// `!torch.` prefix (`int`, `vtensor`, `vtensor<[2],f32>`, ...).
static Type parseNestedTorchType(AsmParser &parser) {
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return {};
  return parseTorchType(parser, keyword);
}

template <typename T> static Type parseTensorType(AsmParser &parser) {
  MLIRContext *ctx = parser.getContext();
  if (failed(parser.parseOptionalLess()))
    return T::get(ctx, /*hasSizes=*/false, {}, Type());
  bool hasSizes = false;
  SmallVector<int64_t> sizes;
  if (failed(parser.parseOptionalStar())) {
    hasSizes = true;
    if (parser.parseLSquare())
      return {};
    if (failed(parser.parseOptionalRSquare())) {
      do {
        if (succeeded(parser.parseOptionalQuestion())) {
          sizes.push_back(ShapedType::kDynamic);
          continue;
        }
        int64_t size;
        if (parser.parseInteger(size))
          return {};
        sizes.push_back(size);
      } while (succeeded(parser.parseOptionalComma()));
      if (parser.parseRSquare())
        return {};
    }
  }
  Type dtype;
  if (parser.parseComma())
    return {};
  if (failed(parser.parseOptionalKeyword("unk")) && parser.parseType(dtype))
    return {};
  if (parser.parseGreater())
    return {};
  return T::get(ctx, hasSizes, sizes, dtype);
}

static Type parseTorchType(AsmParser &parser, StringRef keyword) {
  MLIRContext *ctx = parser.getContext();
  if (keyword == "int")
    return IntType::get(ctx);
  if (keyword == "float")
    return TorchFloatType::get(ctx);
  if (keyword == "bool")
    return BoolType::get(ctx);
  if (keyword == "str")
    return StringType::get(ctx);
  if (keyword == "none")
    return TorchNoneType::get(ctx);
  if (keyword == "Device")
    return DeviceType::get(ctx);
  if (keyword == "number")
    return NumberType::get(ctx);
  if (keyword == "vtensor")
    return parseTensorType<ValueTensorType>(parser);
  if (keyword == "tensor")
    return parseTensorType<NonValueTensorType>(parser);
  if (keyword == "list" || keyword == "optional") {
    Type element;
    if (parser.parseLess() || !(element = parseNestedTorchType(parser)) ||
        parser.parseGreater())
      return {};
    if (keyword == "list")
      return ListType::get(ctx, element);
    return OptionalType::get(ctx, element);
  }
  parser.emitError(parser.getNameLoc(), "unknown torch type '")
      << keyword << "'";
  return {};
}

Type TorchDialect::parseType(DialectAsmParser &parser) const {
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return {};
  return parseTorchType(parser, keyword);
}

template <typename T>
static void printTensorType(T type, llvm::raw_ostream &os) {
  if (!type.getHasSizes() && !type.getDtype())
    return;
  os << "<";
  if (!type.getHasSizes()) {
    os << "*";
  } else {
    os << "[";
    llvm::interleave(
        type.getSizes(), os,
        [&](int64_t s) {
          if (ShapedType::isDynamic(s))
            os << "?";
          else
            os << s;
        },
        ",");
    os << "]";
  }
  os << ",";
  if (type.getDtype())
    os << type.getDtype();
  else
    os << "unk";
  os << ">";
}

/// Prints a torch type without the `!torch.` prefix.
static void printTorchType(Type type, llvm::raw_ostream &os) {
  llvm::TypeSwitch<Type>(type)
      .Case<IntType>([&](auto) { os << "int"; })
      .Case<TorchFloatType>([&](auto) { os << "float"; })
      .Case<BoolType>([&](auto) { os << "bool"; })
      .Case<StringType>([&](auto) { os << "str"; })
      .Case<TorchNoneType>([&](auto) { os << "none"; })
      .Case<DeviceType>([&](auto) { os << "Device"; })
      .Case<NumberType>([&](auto) { os << "number"; })
      .Case<ListType>([&](ListType t) {
        os << "list<";
        printTorchType(t.getElementType(), os);
        os << ">";
      })
      .Case<OptionalType>([&](OptionalType t) {
        os << "optional<";
        printTorchType(t.getContainedType(), os);
        os << ">";
      })
      .Case<ValueTensorType>([&](ValueTensorType t) {
        os << "vtensor";
        printTensorType(t, os);
      })
      .Case<NonValueTensorType>([&](NonValueTensorType t) {
        os << "tensor";
        printTensorType(t, os);
      })
      .Default([&](Type t) { os << t; });
}

void TorchDialect::printType(Type type, DialectAsmPrinter &printer) const {
  printTorchType(type, printer.getStream());
}

//===----------------------------------------------------------------------===//
// Operation syntax
//===----------------------------------------------------------------------===//

namespace {
using Operand = OpAsmParser::UnresolvedOperand;

/// Parses `type (, type)*`.
ParseResult parseTypes(OpAsmParser &parser, SmallVectorImpl<Type> &types) {
  do {
    Type type;
    if (parser.parseType(type))
      return failure();
    types.push_back(type);
  } while (succeeded(parser.parseOptionalComma()));
  return success();
}

/// torch-mlir's default syntax (`parseDefaultTorchOp`):
///   operands attr-dict `:` operand-types (`->` result-types)?
ParseResult parseDefault(OpAsmParser &parser, OperationState &state) {
  SmallVector<Operand> operands;
  SmallVector<Type> operandTypes, resultTypes;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseOperandList(operands) ||
      parser.parseOptionalAttrDict(state.attributes))
    return failure();
  if (succeeded(parser.parseOptionalColon())) {
    if (failed(parser.parseOptionalArrow())) {
      if (parseTypes(parser, operandTypes))
        return failure();
      if (succeeded(parser.parseOptionalArrow()) &&
          parseTypes(parser, resultTypes))
        return failure();
    } else if (parseTypes(parser, resultTypes)) {
      return failure();
    }
  }
  if (parser.resolveOperands(operands, operandTypes, loc, state.operands))
    return failure();
  state.addTypes(resultTypes);
  return success();
}

void printDefault(Operation *op, OpAsmPrinter &p) {
  if (op->getNumOperands()) {
    p << " ";
    p.printOperands(op->getOperands());
  }
  p.printOptionalAttrDict(op->getAttrs());
  if (op->getNumOperands() || op->getNumResults())
    p << " :";
  if (op->getNumOperands()) {
    p << " ";
    llvm::interleaveComma(op->getOperandTypes(), p);
  }
  if (op->getNumResults()) {
    p << " -> ";
    llvm::interleaveComma(op->getResultTypes(), p);
  }
}

/// `torch.constant.<kind> value` with a fixed result type.
ParseResult parseConstant(OpAsmParser &parser, OperationState &state,
                          StringRef kind) {
  MLIRContext *ctx = parser.getContext();
  Builder b(ctx);
  Attribute value;
  Type type;
  if (kind == "int") {
    int64_t v;
    if (parser.parseInteger(v))
      return failure();
    value = b.getI64IntegerAttr(v);
    type = IntType::get(ctx);
  } else if (kind == "float") {
    double v;
    if (parser.parseFloat(v))
      return failure();
    value = b.getF64FloatAttr(v);
    type = TorchFloatType::get(ctx);
  } else if (kind == "bool") {
    if (succeeded(parser.parseOptionalKeyword("true")))
      value = b.getBoolAttr(true);
    else if (succeeded(parser.parseOptionalKeyword("false")))
      value = b.getBoolAttr(false);
    else
      return parser.emitError(parser.getCurrentLocation(),
                              "expected true or false");
    type = BoolType::get(ctx);
  } else if (kind == "str" || kind == "device") {
    std::string v;
    if (parser.parseString(&v))
      return failure();
    value = b.getStringAttr(v);
    type =
        kind == "str" ? Type(StringType::get(ctx)) : Type(DeviceType::get(ctx));
  } else if (kind == "none") {
    type = TorchNoneType::get(ctx);
  } else {
    return parser.emitError(parser.getCurrentLocation(),
                            "unknown torch constant kind '")
           << kind << "'";
  }
  if (parser.parseOptionalAttrDict(state.attributes))
    return failure();
  if (value)
    state.addAttribute("value", value);
  state.addTypes(type);
  return success();
}

void printConstant(Operation *op, OpAsmPrinter &p) {
  Attribute value = op->getAttr("value");
  if (auto i = dyn_cast_or_null<IntegerAttr>(value)) {
    if (i.getType().isInteger(1))
      p << (i.getValue().getBoolValue() ? " true" : " false");
    else
      p << " " << i.getInt();
  } else if (auto f = dyn_cast_or_null<FloatAttr>(value)) {
    p << " ";
    p.printFloat(f.getValue());
  } else if (auto s = dyn_cast_or_null<StringAttr>(value)) {
    p << " ";
    p.printString(s.getValue());
  } else if (auto bl = dyn_cast_or_null<BoolAttr>(value)) {
    p << (bl.getValue() ? " true" : " false");
  }
  p.printOptionalAttrDict(op->getAttrs(), {"value"});
}

/// `torch.vtensor.literal(attr) : type`
ParseResult parseLiteral(OpAsmParser &parser, OperationState &state) {
  Attribute value;
  Type type;
  if (parser.parseLParen() || parser.parseAttribute(value) ||
      parser.parseRParen() || parser.parseOptionalAttrDict(state.attributes) ||
      parser.parseColonType(type))
    return failure();
  state.addAttribute("value", value);
  state.addTypes(type);
  return success();
}

void printLiteral(Operation *op, OpAsmPrinter &p) {
  p << "(" << op->getAttr("value") << ")";
  p.printOptionalAttrDict(op->getAttrs(), {"value"});
  p << " : " << op->getResultTypes();
}

/// `torch.prim.ListConstruct operands : (types) -> type`
ParseResult parseListConstruct(OpAsmParser &parser, OperationState &state) {
  SmallVector<Operand> operands;
  SmallVector<Type> types;
  Type resultType;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseOperandList(operands) ||
      parser.parseOptionalAttrDict(state.attributes) || parser.parseColon() ||
      parser.parseLParen())
    return failure();
  if (failed(parser.parseOptionalRParen()) &&
      (parseTypes(parser, types) || parser.parseRParen()))
    return failure();
  if (parser.parseArrow() || parser.parseType(resultType) ||
      parser.resolveOperands(operands, types, loc, state.operands))
    return failure();
  state.addTypes(resultType);
  return success();
}

void printListConstruct(Operation *op, OpAsmPrinter &p) {
  if (op->getNumOperands()) {
    p << " ";
    p.printOperands(op->getOperands());
  }
  p.printOptionalAttrDict(op->getAttrs());
  p << " : (";
  llvm::interleaveComma(op->getOperandTypes(), p);
  p << ") -> " << op->getResultTypes();
}

/// `torch.symbolic_int "s0" {min_val = 0, max_val = 10} : !torch.int`
ParseResult parseSymbolicInt(OpAsmParser &parser, OperationState &state) {
  std::string name;
  Type type;
  if (parser.parseString(&name) ||
      parser.parseOptionalAttrDict(state.attributes) ||
      parser.parseColonType(type))
    return failure();
  state.addAttribute("symbol_name", parser.getBuilder().getStringAttr(name));
  state.addTypes(type);
  return success();
}

void printSymbolicInt(Operation *op, OpAsmPrinter &p) {
  p << " ";
  p.printString(cast<StringAttr>(op->getAttr("symbol_name")).getValue());
  p.printOptionalAttrDict(op->getAttrs(), {"symbol_name"});
  p << " : " << op->getResultTypes();
}

/// `torch.bind_symbolic_shape %t, [%s0, ...], affine_map<...> : type`
ParseResult parseBindSymbolicShape(OpAsmParser &parser, OperationState &state) {
  Operand tensor;
  SmallVector<Operand> symbols;
  Attribute map;
  Type tensorType;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseOperand(tensor) || parser.parseComma() ||
      parser.parseOperandList(symbols, OpAsmParser::Delimiter::Square) ||
      parser.parseComma() || parser.parseAttribute(map) ||
      parser.parseOptionalAttrDict(state.attributes) ||
      parser.parseColonType(tensorType))
    return failure();
  state.addAttribute("shape_expressions", map);
  SmallVector<Type> symbolTypes(symbols.size(),
                                IntType::get(parser.getContext()));
  if (parser.resolveOperand(tensor, tensorType, state.operands) ||
      parser.resolveOperands(symbols, symbolTypes, loc, state.operands))
    return failure();
  return success();
}

void printBindSymbolicShape(Operation *op, OpAsmPrinter &p) {
  p << " " << op->getOperand(0) << ", [";
  p.printOperands(op->getOperands().drop_front());
  p << "], " << op->getAttr("shape_expressions");
  p.printOptionalAttrDict(op->getAttrs(), {"shape_expressions"});
  p << " : " << op->getOperand(0).getType();
}

/// `torch.operator "name"(operands) attr-dict : (types) -> results`
ParseResult parseOperator(OpAsmParser &parser, OperationState &state) {
  std::string name;
  SmallVector<Operand> operands;
  FunctionType type;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseString(&name) ||
      parser.parseOperandList(operands, OpAsmParser::Delimiter::Paren) ||
      parser.parseOptionalAttrDict(state.attributes) || parser.parseColon() ||
      parser.parseType(type) ||
      parser.resolveOperands(operands, type.getInputs(), loc, state.operands))
    return failure();
  state.addAttribute("name", parser.getBuilder().getStringAttr(name));
  state.addTypes(type.getResults());
  return success();
}

void printOperator(Operation *op, OpAsmPrinter &p) {
  p << " ";
  p.printString(cast<StringAttr>(op->getAttr("name")).getValue());
  p << "(";
  p.printOperands(op->getOperands());
  p << ")";
  p.printOptionalAttrDict(op->getAttrs(), {"name"});
  p << " : ";
  p.printFunctionalType(op);
}

enum class Syntax {
  Default,
  Constant,
  Literal,
  ListConstruct,
  SymbolicInt,
  BindSymbolicShape,
  Operator
};

Syntax syntaxOf(StringRef name) {
  if (name.starts_with("torch.constant."))
    return Syntax::Constant;
  return llvm::StringSwitch<Syntax>(name)
      .Case("torch.vtensor.literal", Syntax::Literal)
      .Case("torch.prim.ListConstruct", Syntax::ListConstruct)
      .Case("torch.symbolic_int", Syntax::SymbolicInt)
      .Case("torch.bind_symbolic_shape", Syntax::BindSymbolicShape)
      .Case("torch.operator", Syntax::Operator)
      .Default(Syntax::Default);
}

#define TE_TORCH_CONSTANT_HOOK(KIND)                                           \
  ParseResult parseConstant_##KIND(OpAsmParser &parser,                        \
                                   OperationState &state) {                    \
    return parseConstant(parser, state, #KIND);                                \
  }
TE_TORCH_CONSTANT_HOOK(int)
TE_TORCH_CONSTANT_HOOK(float)
TE_TORCH_CONSTANT_HOOK(bool)
TE_TORCH_CONSTANT_HOOK(str)
TE_TORCH_CONSTANT_HOOK(none)
TE_TORCH_CONSTANT_HOOK(device)
#undef TE_TORCH_CONSTANT_HOOK

ParseResult parseUnknownConstant(OpAsmParser &parser, OperationState &state) {
  return parser.emitError(parser.getNameLoc(), "unsupported torch constant '")
         << state.name.getStringRef() << "'";
}
} // namespace

std::optional<Dialect::ParseOpHook>
TorchDialect::getParseOperationHook(StringRef opName) const {
  switch (syntaxOf(opName)) {
  case Syntax::Constant:
    return llvm::StringSwitch<ParseOpHook>(opName)
        .Case("torch.constant.int", parseConstant_int)
        .Case("torch.constant.float", parseConstant_float)
        .Case("torch.constant.bool", parseConstant_bool)
        .Case("torch.constant.str", parseConstant_str)
        .Case("torch.constant.none", parseConstant_none)
        .Case("torch.constant.device", parseConstant_device)
        .Default(parseUnknownConstant);
  case Syntax::Literal:
    return ParseOpHook(parseLiteral);
  case Syntax::ListConstruct:
    return ParseOpHook(parseListConstruct);
  case Syntax::SymbolicInt:
    return ParseOpHook(parseSymbolicInt);
  case Syntax::BindSymbolicShape:
    return ParseOpHook(parseBindSymbolicShape);
  case Syntax::Operator:
    return ParseOpHook(parseOperator);
  case Syntax::Default:
    return ParseOpHook(parseDefault);
  }
  llvm_unreachable("unknown syntax");
}

llvm::unique_function<void(Operation *, OpAsmPrinter &)>
TorchDialect::getOperationPrinter(Operation *op) const {
  switch (syntaxOf(op->getName().getStringRef())) {
  case Syntax::Constant:
    return printConstant;
  case Syntax::Literal:
    return printLiteral;
  case Syntax::ListConstruct:
    return printListConstruct;
  case Syntax::SymbolicInt:
    return printSymbolicInt;
  case Syntax::BindSymbolicShape:
    return printBindSymbolicShape;
  case Syntax::Operator:
    return printOperator;
  case Syntax::Default:
    return printDefault;
  }
  llvm_unreachable("unknown syntax");
}
