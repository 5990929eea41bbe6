//===- TETypes.td - TE dialect types -----------------------*- tablegen -*-===//
//
// The quantized tensor type, whose inner tensors (data, scales, amaxes) are
// TransformerEngine's fake-tensor description of a quantized value.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TETYPES_TD
#define TE_DIALECT_TE_IR_TETYPES_TD

include "te/Dialect/TE/IR/TEBase.td"
include "te/Dialect/TE/IR/TEAttrs.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

def TE_QuantizedTensorType : TypeDef<TE_Dialect, "QuantizedTensor"> {
  let mnemonic = "qtensor";
  let summary = "a tensor quantized under a TransformerEngine recipe";
  let description = [{
    A quantized value of logical shape `shape` (leading dims may be `?`),
    element format `e4m3`, `e5m2` or `e2m1`, quantized under `recipe`, with
    the copies named by `usage` (`rowwise`, `columnwise` or `both`) for the
    GPU class `arch` (`hopper` keeps a transposed copy of per-tensor FP8 data
    for non-TN GEMMs; `blackwell` serves both uses from one buffer).
    Optional flags: `block_2d` (2-D blocks, as for weights: 128x128 under
    Float8 block scaling, 16x16 under NVFP4), `swizzled` (MXFP8/NVFP4 scales
    in the cuBLAS tile order; shapes are unchanged), `row_scaled` (NVFP4
    with one amax per row) and `rht` (NVFP4: the columnwise copy holds the
    random Hadamard transform of the data along the contracted dim, as TE
    quantizes wgrad operands; only a GEMM whose other operand is transformed
    alike may read it).

    Its inner tensors, the buffers TransformerEngine allocates for it, are
    derived from these parameters alone (`getInnerTensors()`), following TE's
    C++ allocator (`csrc/quantizer.cpp`):

    ```mlir
    !te.qtensor<?x8x64xe4m3, #te.fp8_delayed<>, both, hopper>
    !te.qtensor<256x128xe4m3, #te.fp8_block<>, columnwise, hopper, block_2d>
    !te.qtensor<64x64xe2m1, #te.nvfp4<>, rowwise, blackwell, row_scaled>
    !te.qtensor<64x64xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$shape,
    "::mlir::te::QuantFormat":$format,
    "::mlir::te::RecipeAttrInterface":$recipe,
    "::mlir::te::QuantUsage":$usage,
    "::mlir::te::TargetArch":$arch,
    DefaultValuedParameter<"bool", "false">:$block_2d,
    DefaultValuedParameter<"bool", "false">:$swizzled,
    DefaultValuedParameter<"bool", "false">:$row_scaled,
    DefaultValuedParameter<"bool", "false">:$rht
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool hasRowwise() const {
      return getUsage() != ::mlir::te::QuantUsage::Columnwise;
    }
    bool hasColumnwise() const {
      return getUsage() != ::mlir::te::QuantUsage::Rowwise;
    }
    /// The same tensor with another usage.
    QuantizedTensorType withUsage(::mlir::te::QuantUsage usage) const;
    /// Whether the columnwise copy is a transpose of the rowwise bytes with
    /// the same scale (per-tensor FP8 on Hopper: TE's `_transpose`), so that
    /// a rowwise tensor can make it later (`update_usage(columnwise_usage=
    /// True)`, te.add_columnwise) instead of quantizing it up front.
    bool hasTransposedColumnwise() const;
    /// The buffers TransformerEngine allocates for this tensor, in TE's
    /// `_INNER_TENSORS` order, with symbolic sizes for dynamic dims.
    ::llvm::SmallVector<::mlir::te::InnerTensor> getInnerTensors() const;
  }];
}

#endif // TE_DIALECT_TE_IR_TETYPES_TD
