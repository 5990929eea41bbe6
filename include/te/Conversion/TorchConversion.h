//===- TorchConversion.h - torch-mlir's torch_c bridge ops ------*- C++ -*-===//
//
// The two ops of torch-mlir's `torch_c` (TorchConversion) dialect that a
// partially raised function needs where a torch value meets a builtin
// tensor: `torch_c.to_builtin_tensor` and `torch_c.from_builtin_tensor`,
// parsed and printed exactly as torch-mlir prints them. The ops are
// unregistered (the dialect allows unknown operations), like the `torch`
// import subset.
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_TORCHCONVERSION_H
#define TE_CONVERSION_TORCHCONVERSION_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/TypeID.h"

namespace mlir::te::torch_c {

/// The `torch_c` dialect (torch-mlir's TorchConversion), bridge ops only.
class TorchConversionDialect : public Dialect {
public:
  explicit TorchConversionDialect(MLIRContext *context);
  static constexpr StringLiteral getDialectNamespace() { return "torch_c"; }

  std::optional<ParseOpHook>
  getParseOperationHook(StringRef opName) const override;
  llvm::unique_function<void(Operation *, OpAsmPrinter &)>
  getOperationPrinter(Operation *op) const override;
};

inline constexpr StringLiteral kToBuiltinTensor = "torch_c.to_builtin_tensor";
inline constexpr StringLiteral kFromBuiltinTensor =
    "torch_c.from_builtin_tensor";

/// `torch_c.to_builtin_tensor %v : !torch.vtensor<...> -> tensor<...>`.
Value createToBuiltinTensor(OpBuilder &builder, Location loc, Value vtensor,
                            Type builtinType);

/// `torch_c.from_builtin_tensor %v : tensor<...> -> !torch.vtensor<...>`.
Value createFromBuiltinTensor(OpBuilder &builder, Location loc, Value tensor,
                              Type vtensorType);

/// True for either bridge op.
bool isBridge(Operation *op);

/// Adds the dialect to `registry`.
void registerTorchConversionDialect(DialectRegistry &registry);

} // namespace mlir::te::torch_c

MLIR_DECLARE_EXPLICIT_TYPE_ID(mlir::te::torch_c::TorchConversionDialect)

#endif // TE_CONVERSION_TORCHCONVERSION_H
