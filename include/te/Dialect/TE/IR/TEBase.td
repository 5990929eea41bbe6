//===- TEBase.td - TE dialect definition -------------------*- tablegen -*-===//
//
// The `te` dialect: TransformerEngine-style fused LayerNorm modules, their
// primitives and the recipes they are quantized with.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEBASE_TD
#define TE_DIALECT_TE_IR_TEBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def TE_Dialect : Dialect {
  let name = "te";
  let cppNamespace = "::mlir::te";
  let summary = "TransformerEngine-style fused LayerNorm modules";
  let description = [{
    The `te` dialect models the modules of NVIDIA TransformerEngine that fuse a
    normalization with one or two GEMMs (`LayerNormLinear`, `LayerNormMLP`)
    and the plain `Linear`, as first-class operations on ranked tensors. Each
    op carries the module's options (normalization, eps, zero-centered gamma,
    bias, returned norm output, activation, checkpointing) and the
    quantization recipe it runs under, so that shape inference, fake-tensor
    descriptions, backward generation and lowering all read one definition.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();
  }];
}

/// Every static dimension of an operand or result is at most 2^40 and every
/// static element count at most 2^48, so that the size arithmetic of shape
/// inference, fake tensors and memory planning cannot overflow int64.
def TE_BoundedShapes : NativeOpTrait<"BoundedShapes"> {
  let cppNamespace = "::mlir::OpTrait::te";
}

/// Base class of every `te` operation.
class TE_Op<string mnemonic, list<Trait> traits = []>
    : Op<TE_Dialect, mnemonic, !listconcat(traits, [TE_BoundedShapes])>;

/// Base class of every `te` attribute.
class TE_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<TE_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

/// Activation dtypes TransformerEngine's modules run in.
def TE_FloatTensor : RankedTensorOf<[F32, BF16, F16]>;

/// Per-row statistics and per-slot scaling state.
def TE_F32Vector : 1DTensorOf<[F32]>;

#endif // TE_DIALECT_TE_IR_TEBASE_TD
