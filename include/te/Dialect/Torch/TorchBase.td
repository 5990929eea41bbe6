//===- TorchBase.td - torch-mlir import subset -------------*- tablegen -*-===//
//
// The part of torch-mlir's `torch` dialect that te-mlir reads: its types,
// parsed and printed exactly as torch-mlir prints them. Operations are not
// defined one by one: the dialect accepts any `torch.*` operation in
// torch-mlir's textual forms (see TorchDialect.cpp), and te-import-torch
// decides what it can raise.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TORCH_TORCHBASE_TD
#define TE_DIALECT_TORCH_TORCHBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Torch_Dialect : Dialect {
  let name = "torch";
  let cppNamespace = "::mlir::te::torch";
  let summary = "Subset of torch-mlir's torch dialect, for import";
  let description = [{
    Parses the output of `torch_mlir.fx.export_and_import` (both `raw` and
    `torch` output types): `!torch.vtensor<[dims],dtype>` and the scalar,
    list and device types, `torch.constant.*`, `torch.prim.ListConstruct`,
    `torch.prim.ListUnpack`, `torch.vtensor.literal`, `torch.symbolic_int`,
    `torch.bind_symbolic_shape`, `torch.operator "..."` and every
    `torch.aten.*` / `torch.prims.*` operation in torch-mlir's default
    syntax. Operations stay unregistered: the importer matches them by name.
  }];
  let useDefaultTypePrinterParser = 0;
  let extraClassDeclaration = [{
    ::mlir::Type parseType(::mlir::DialectAsmParser &parser) const override;
    void printType(::mlir::Type type,
                   ::mlir::DialectAsmPrinter &printer) const override;
    std::optional<ParseOpHook>
    getParseOperationHook(::llvm::StringRef opName) const override;
    ::llvm::unique_function<void(::mlir::Operation *, ::mlir::OpAsmPrinter &)>
    getOperationPrinter(::mlir::Operation *op) const override;
  }];
}

// Parsed and printed by TorchDialect::parseType/printType as
// `!torch.<typeMnemonic>`, not by ODS.
class Torch_Type<string name, string typeMnemonic> : TypeDef<Torch_Dialect, name> {
  let typeName = "torch." # typeMnemonic;
}

def Torch_IntType : Torch_Type<"Int", "int"> { let summary = "!torch.int"; }
def Torch_FloatType : Torch_Type<"TorchFloat", "float"> { let summary = "!torch.float"; }
def Torch_BoolType : Torch_Type<"Bool", "bool"> { let summary = "!torch.bool"; }
def Torch_StringType : Torch_Type<"String", "str"> { let summary = "!torch.str"; }
def Torch_NoneType : Torch_Type<"TorchNone", "none"> { let summary = "!torch.none"; }
def Torch_DeviceType : Torch_Type<"Device", "Device"> { let summary = "!torch.Device"; }
def Torch_NumberType : Torch_Type<"Number", "number"> { let summary = "!torch.number"; }

def Torch_ListType : Torch_Type<"List", "list"> {
  let summary = "!torch.list<T>";
  let parameters = (ins "::mlir::Type":$elementType);
}

def Torch_OptionalType : Torch_Type<"Optional", "optional"> {
  let summary = "!torch.optional<T>";
  let parameters = (ins "::mlir::Type":$containedType);
}

class Torch_TensorTypeBase<string name, string typeMnemonic>
    : Torch_Type<name, typeMnemonic> {
  let parameters = (ins
    "bool":$hasSizes,
    ArrayRefParameter<"int64_t">:$sizes,
    "::mlir::Type":$dtype
  );
  let extraClassDeclaration = [{
    /// The builtin tensor type with the same shape and dtype, or null when
    /// the sizes or dtype are unknown.
    ::mlir::RankedTensorType toBuiltinTensor() const;
  }];
}

def Torch_ValueTensorType : Torch_TensorTypeBase<"ValueTensor", "vtensor"> {
  let summary = "!torch.vtensor<[dims],dtype>: a value-semantic tensor";
}
def Torch_NonValueTensorType : Torch_TensorTypeBase<"NonValueTensor", "tensor"> {
  let summary = "!torch.tensor<[dims],dtype>: a mutable tensor";
}

#endif // TE_DIALECT_TORCH_TORCHBASE_TD
