//===- TEFakeTensors.h - Fake-tensor descriptions ---------------*- C++ -*-===//
//
// Data-free descriptions of tensors: symbolic dimensions, the inner tensors
// of a quantized tensor, and what a module op produces, saves and consumes
// (the te-describe report).
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEFAKETENSORS_H
#define TE_DIALECT_TE_IR_TEFAKETENSORS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "te/Dialect/TE/IR/TEAttrs.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace mlir::te {

/// The largest static dimension the dialect accepts (2^40).
constexpr int64_t kMaxDimSize = int64_t(1) << 40;
/// The largest static element count of one tensor (2^48): with it, byte
/// sizes, inner-tensor layouts and arena offsets stay far inside int64.
constexpr int64_t kMaxElements = int64_t(1) << 48;

/// Fails (through `emitError`) when a static dimension of `shape` exceeds
/// kMaxDimSize or the product of its static dimensions exceeds kMaxElements.
/// `what` names the value in the message (e.g. "operand #1").
LogicalResult
verifyShapeBounds(llvm::function_ref<InFlightDiagnostic()> emitError,
                  llvm::ArrayRef<int64_t> shape, llvm::StringRef what);

/// A tensor dimension or size: a constant, or a symbolic expression over the
/// dynamic dimensions of an op's input (`d0`, `d1`, ... by position).
class SymDim {
public:
  SymDim(int64_t value = 0) : value(value) {}
  /// A named symbol, e.g. `d0`.
  static SymDim symbol(llvm::StringRef name);
  /// Dimension `i` of `type`: its size, or the symbol `d<i>` when dynamic.
  static SymDim dimOf(RankedTensorType type, unsigned i);
  /// Dimension `i` of `shape` (kDynamic becomes `d<i>`).
  static SymDim dimOf(llvm::ArrayRef<int64_t> shape, unsigned i);

  bool isStatic() const { return expr.empty(); }
  int64_t getValue() const { return value; }
  /// For a symbolic dim, the constant factor it is known to carry.
  int64_t getCoefficient() const { return value; }
  /// `64`, or the expression (e.g. `roundup(d0*8, 128)`).
  std::string str() const;
  /// A JSON number when static, a string otherwise.
  llvm::json::Value toJSON() const;
  /// The MLIR size: the value, or ShapedType::kDynamic.
  int64_t toShapedDim() const;

  SymDim operator*(const SymDim &rhs) const;
  SymDim operator+(const SymDim &rhs) const;
  SymDim operator-(const SymDim &rhs) const;
  /// Exact division by a positive constant (the caller knows it divides).
  SymDim exactDiv(int64_t divisor) const;
  SymDim ceilDiv(int64_t divisor) const;
  /// Smallest multiple of `multiple` not below this.
  SymDim roundUp(int64_t multiple) const;

private:
  int64_t value;
  std::string expr;
  /// True when `expr` is a single token or a call, needing no parentheses.
  bool atomic = true;
};

/// Product of a list of dims.
SymDim product(llvm::ArrayRef<SymDim> dims);

/// One buffer of a quantized tensor, as TransformerEngine allocates it.
struct InnerTensor {
  std::string name; ///< TE's name without underscore, e.g. `rowwise_scale_inv`
  llvm::SmallVector<SymDim> shape;
  std::string dtype; ///< `uint8` or `float32`
  unsigned elementBytes = 1;

  SymDim bytes() const;
  llvm::json::Value toJSON() const;
};

/// A tensor in a module op's description: high precision (dtype is the
/// element type) or quantized (then `quantized` is set).
struct TensorDesc {
  std::string name;
  llvm::SmallVector<SymDim> shape;
  std::string dtype;
  unsigned elementBytes = 0;
  /// A QuantizedTensorType, or null for high-precision tensors.
  Type quantized;

  SymDim bytes() const;
  llvm::json::Object toJSON() const;
  /// The MLIR type of the tensor: the quantized type, or a ranked tensor
  /// whose symbolic dims are dynamic.
  Type getType(MLIRContext *context) const;
  /// The description of a value of `type` (a ranked float tensor or a
  /// quantized tensor); dynamic dims become `d<i>` by position.
  static TensorDesc fromType(llvm::StringRef name, Type type);
};

/// Where a saved tensor comes from: a fresh buffer, or an op input/output
/// that the caller already holds (and that need not be saved again).
struct Alias {
  enum Kind { None, Input, Output } kind = None;
  unsigned index = 0;
  llvm::json::Value toJSON() const;
};

struct SavedDesc {
  TensorDesc tensor;
  Alias alias;
};

/// A gradient flowing into (of an output) or out of (of an input) the op.
struct GradDesc {
  TensorDesc tensor;
  std::string of;        ///< the output or input it is the gradient of
  bool optional = false; ///< the caller may pass none (norm output)
};

/// Recipe state carried across steps (delayed scaling's amax history).
struct StateDesc {
  TensorDesc tensor;
};

/// Options of a description.
struct DescribeOptions {
  TargetArch arch = TargetArch::Hopper;
  bool training = true;
};

/// Everything a module op produces, saves and consumes for one recipe,
/// architecture and mode, without running anything.
struct ModuleDescription {
  std::string recipe;          ///< the op's recipe
  std::string effectiveRecipe; ///< `bf16` after an alignment fallback
  std::string fallback;        ///< why the op falls back, empty if not
  llvm::SmallVector<std::string> runtimeChecks;
  llvm::SmallVector<TensorDesc> outputs;
  /// Quantized GEMM operands (forward and, in training, backward), with the
  /// usage each needs.
  llvm::SmallVector<std::pair<std::string, TensorDesc>>
      quantized; // (role, tensor)
  llvm::SmallVector<SavedDesc> saved;
  llvm::SmallVector<GradDesc> gradsIn;
  llvm::SmallVector<GradDesc> gradsOut;
  llvm::SmallVector<StateDesc> state;
  SymDim workspaceBytes = 0;
  /// Buffers the backward makes from saved tensors and frees before it
  /// returns (the columnwise copy of a rowwise-saved act_out), beyond the
  /// saved set.
  SymDim backwardWorkspaceBytes = 0;

  /// Bytes of the saved set, aliases excluded.
  SymDim savedBytes() const;
};

} // namespace mlir::te

#endif // TE_DIALECT_TE_IR_TEFAKETENSORS_H
