//===- TorchConversion.cpp - torch-mlir's torch_c bridge ops ----*- C++ -*-===//
//
// `torch_c.to_builtin_tensor` / `torch_c.from_builtin_tensor` in torch-mlir's
// syntax (`$operand attr-dict : type($operand) -> type($result)`).
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/TorchConversion.h"

#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/Operation.h"

using namespace mlir;
using namespace mlir::te::torch_c;

MLIR_DEFINE_EXPLICIT_TYPE_ID(mlir::te::torch_c::TorchConversionDialect)

TorchConversionDialect::TorchConversionDialect(MLIRContext *context)
    : Dialect(getDialectNamespace(), context,
              TypeID::get<TorchConversionDialect>()) {
  allowUnknownOperations();
}

static ParseResult parseBridge(OpAsmParser &parser, OperationState &state) {
  OpAsmParser::UnresolvedOperand operand;
  Type from, to;
  if (parser.parseOperand(operand) ||
      parser.parseOptionalAttrDict(state.attributes) || parser.parseColon() ||
      parser.parseType(from) || parser.parseArrow() || parser.parseType(to) ||
      parser.resolveOperand(operand, from, state.operands))
    return failure();
  state.addTypes(to);
  return success();
}

static void printBridge(Operation *op, OpAsmPrinter &p) {
  p << " " << op->getOperand(0);
  p.printOptionalAttrDict(op->getAttrs());
  p << " : " << op->getOperand(0).getType() << " -> "
    << op->getResult(0).getType();
}

static bool isBridgeName(StringRef name) {
  return name == kToBuiltinTensor || name == kFromBuiltinTensor;
}

std::optional<Dialect::ParseOpHook>
TorchConversionDialect::getParseOperationHook(StringRef opName) const {
  if (isBridgeName(opName))
    return ParseOpHook(parseBridge);
  return std::nullopt;
}

llvm::unique_function<void(Operation *, OpAsmPrinter &)>
TorchConversionDialect::getOperationPrinter(Operation *op) const {
  if (isBridgeName(op->getName().getStringRef()) && op->getNumOperands() == 1 &&
      op->getNumResults() == 1 && op->getNumRegions() == 0)
    return printBridge;
  return {}; // the generic form
}

static Value createBridge(OpBuilder &builder, Location loc, StringRef name,
                          Value v, Type type) {
  OperationState state(loc, name);
  state.addOperands(v);
  state.addTypes(type);
  return builder.create(state)->getResult(0);
}

Value mlir::te::torch_c::createToBuiltinTensor(OpBuilder &builder, Location loc,
                                               Value vtensor,
                                               Type builtinType) {
  builder.getContext()->getOrLoadDialect<TorchConversionDialect>();
  return createBridge(builder, loc, kToBuiltinTensor, vtensor, builtinType);
}

Value mlir::te::torch_c::createFromBuiltinTensor(OpBuilder &builder,
                                                 Location loc, Value tensor,
                                                 Type vtensorType) {
  builder.getContext()->getOrLoadDialect<TorchConversionDialect>();
  return createBridge(builder, loc, kFromBuiltinTensor, tensor, vtensorType);
}

bool mlir::te::torch_c::isBridge(Operation *op) {
  return op && isBridgeName(op->getName().getStringRef());
}

void mlir::te::torch_c::registerTorchConversionDialect(
    DialectRegistry &registry) {
  registry.insert<TorchConversionDialect>();
}
