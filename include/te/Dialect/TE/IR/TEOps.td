//===- TEOps.td - TE dialect operations --------------------*- tablegen -*-===//
//
// L1 module ops: te.layernorm_linear, te.layernorm_mlp, te.linear,
// te.normalization.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEOPS_TD
#define TE_DIALECT_TE_IR_TEOPS_TD

include "te/Dialect/TE/IR/TEBase.td"
include "te/Dialect/TE/IR/TEAttrs.td"
include "te/Dialect/TE/IR/TEInterfaces.td"
include "te/Dialect/TE/IR/TETypes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// Traits shared by the module ops: value semantics, optional operands and
/// results inferred from the operands, a description and a backward rule.
/// `moduleMethods` names ModuleOpInterface methods with a default
/// implementation that the op defines itself (an op without `scales`).
class TE_ModuleOp<string mnemonic, list<Trait> traits = [],
                  list<string> moduleMethods = []>
    : TE_Op<mnemonic, !listconcat(traits, [
        Pure,
        DeclareOpInterfaceMethods<TE_ModuleOpInterface, moduleMethods>,
        DeclareOpInterfaceMethods<TE_BackwardOpInterface, ["needsSaved"]>,
        DeclareOpInterfaceMethods<InferTypeOpInterface>,
        DeclareOpInterfaceMethods<ReifyRankedShapedTypeOpInterface,
                                  ["reifyResultShapes"]>])> {
  let hasVerifier = 1;
  code extraModuleClassDeclaration = "";
}

//===----------------------------------------------------------------------===//
// LayerNormLinearOp
//===----------------------------------------------------------------------===//

def TE_LayerNormLinearOp : TE_ModuleOp<"layernorm_linear",
                                        [AttrSizedOperandSegments]> {
  let summary = "normalization followed by a linear layer (TE LayerNormLinear)";
  let description = [{
    Normalizes `input` (shape `[..., K]`) over its last dimension with
    LayerNorm or RMSNorm, then applies `y = ln_out * weight^T + bias` with
    `weight : [N, K]`, giving `[..., N]`. Leading dimensions may be dynamic;
    feature dimensions are static.

    - `ln_weight` (gamma, `[K]`) is applied as `gamma + 1` when
      `zero_centered_gamma` is set.
    - `ln_bias` (beta, `[K]`) is allowed only with `layer_norm`; an absent
      beta is zero.
    - `bias` (`[N]`) is optional.
    - With `return_layernorm_output` the op has a second result, the norm
      output `[..., K]`, as TransformerEngine returns it.
    - `recipe` selects the quantization recipe; none means `#te.bf16`.
    - `tp` (a `#te.tp`) makes the op one rank's column-parallel part of a
      tensor-parallel group: `weight`/`bias` hold `N / size` features and,
      with sequence parallelism, `input` holds the rank's `M / size` rows
      while the output has the gathered `M` (TransformerEngine gathers the
      norm output before the GEMM).
    - `scales` (delayed scaling only) are the forward quantizers' scales,
      `[3 * GEMMs]` fp32 in TE's slot order (input, weight, output per
      GEMM), taken from the caller's recipe state; te-generate-backward
      threads them (and the amax history) through the training step.
    - `save_rowwise`: under a quantized recipe the saved norm output keeps
      its rowwise copy beside the columnwise one the wgrad reads: TE's
      `backward_override="dequantized"` runs an unquantized backward over
      the forward's rowwise quantization, dequantized. Under row-scaled
      NVFP4 (high-precision backward) the forward saves the GEMM's rowwise
      operands as `ln_out_rowwise` and `weight_rowwise` beside the
      high-precision tensors.

    ```mlir
    %y, %ln = te.layernorm_linear %x norm layer_norm(%gamma, %beta)
        weight(%w, %b) recipe(#te.fp8_delayed<>)
        {eps = 1.0e-05 : f64, return_layernorm_output}
        : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>,
           tensor<128x64xbf16>, tensor<128xbf16>)
        -> (tensor<?x128xbf16>, tensor<?x64xbf16>)
    ```
  }];
  let arguments = (ins
    TE_FloatTensor:$input,
    TE_FloatTensor:$ln_weight,
    Optional<TE_FloatTensor>:$ln_bias,
    TE_FloatTensor:$weight,
    Optional<TE_FloatTensor>:$bias,
    Optional<TE_F32Vector>:$scales,
    TE_NormalizationKindAttr:$normalization,
    DefaultValuedAttr<F64Attr, "1.0e-5">:$eps,
    UnitAttr:$zero_centered_gamma,
    UnitAttr:$return_layernorm_output,
    OptionalAttr<TE_RecipeAttrInterface>:$recipe,
    OptionalAttr<TE_TensorParallelAttr>:$tp,
    UnitAttr:$save_rowwise
  );
  let results = (outs
    TE_FloatTensor:$output,
    Optional<TE_FloatTensor>:$ln_output
  );
  let assemblyFormat = [{
    $input `norm` `` $normalization `(` $ln_weight (`,` $ln_bias^)? `)`
    `weight` `(` $weight (`,` $bias^)? `)`
    (`recipe` `(` $recipe^ `)`)? (`scales` `(` $scales^ `)`)?
    (`tp` `(` $tp^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasCanonicalizer = 1;
  let extraClassDeclaration = extraModuleClassDeclaration;
}

//===----------------------------------------------------------------------===//
// LayerNormMLPOp
//===----------------------------------------------------------------------===//

def TE_LayerNormMLPOp : TE_ModuleOp<"layernorm_mlp",
                                     [AttrSizedOperandSegments]> {
  let summary = "normalization, FC1, activation, FC2 (TE LayerNormMLP)";
  let description = [{
    Normalizes `input` (`[..., H]`) as `te.layernorm_linear` does, then
    computes `fc2(act(fc1(ln_out)))` with `fc1_weight : [F1, H]` and
    `fc2_weight : [H, F]`, giving `[..., H]`. For the gated activations
    (`geglu`, `glu`, `qgeglu`, `reglu`, `sreglu`, `swiglu`,
    `clamped_swiglu`) FC1 is twice as wide (`F1 = 2F`) and its output splits
    as `[act_input | linear_input]`; otherwise `F1 = F`.

    - `checkpoint` asks for TransformerEngine's selective recompute: the
      backward recomputes norm, FC1 and the activation instead of saving them.
    - the activation is a `#te.act` (written without the wrapper:
      `act gelu`); `clamped_swiglu<limit = 5.0, alpha = 1.702,
      glu_linear_offset = 1.0>` takes TE's parameters (defaults 7.0, 1.702,
      1.0), which other activations reject.
    - `return_layernorm_output` adds the norm output as a second result.
    - `tp` (a `#te.tp`) makes the op one rank's part of a tensor-parallel
      group: FC1 column-parallel (`F / size` features, per half when gated),
      FC2 row-parallel (`[H, F / size]`); with sequence parallelism `input`
      and the output hold the rank's `M / size` rows.

    ```mlir
    %y = te.layernorm_mlp %x norm rms_norm(%gamma) fc1(%w1) act swiglu
        fc2(%w2) recipe(#te.mxfp8) {checkpoint}
        : (tensor<4x32x64xbf16>, tensor<64xbf16>, tensor<512x64xbf16>,
           tensor<64x256xbf16>) -> tensor<4x32x64xbf16>
    ```
  }];
  let arguments = (ins
    TE_FloatTensor:$input,
    TE_FloatTensor:$ln_weight,
    Optional<TE_FloatTensor>:$ln_bias,
    TE_FloatTensor:$fc1_weight,
    Optional<TE_FloatTensor>:$fc1_bias,
    TE_FloatTensor:$fc2_weight,
    Optional<TE_FloatTensor>:$fc2_bias,
    Optional<TE_F32Vector>:$scales,
    TE_NormalizationKindAttr:$normalization,
    TE_ActivationAttr:$activation,
    DefaultValuedAttr<F64Attr, "1.0e-5">:$eps,
    UnitAttr:$zero_centered_gamma,
    UnitAttr:$return_layernorm_output,
    UnitAttr:$checkpoint,
    OptionalAttr<TE_RecipeAttrInterface>:$recipe,
    OptionalAttr<TE_TensorParallelAttr>:$tp
  );
  let results = (outs
    TE_FloatTensor:$output,
    Optional<TE_FloatTensor>:$ln_output
  );
  let assemblyFormat = [{
    $input `norm` `` $normalization `(` $ln_weight (`,` $ln_bias^)? `)`
    `fc1` `(` $fc1_weight (`,` $fc1_bias^)? `)`
    `act` custom<Activation>($activation)
    `fc2` `(` $fc2_weight (`,` $fc2_bias^)? `)`
    (`recipe` `(` $recipe^ `)`)? (`scales` `(` $scales^ `)`)?
    (`tp` `(` $tp^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasCanonicalizer = 1;
  let extraClassDeclaration = extraModuleClassDeclaration # [{
    /// True for the activations whose FC1 output is [act_input | linear_input].
    bool isGated();
    /// FFN width F (the second dimension of fc2_weight).
    int64_t getFfnSize();
  }];
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

def TE_LinearOp : TE_ModuleOp<"linear", [AttrSizedOperandSegments]> {
  let summary = "a linear layer (TE Linear)";
  let description = [{
    Computes `input * weight^T + bias` with `input : [..., K]`,
    `weight : [N, K]` and an optional `bias : [N]`, giving `[..., N]`, under
    the given recipe (the GEMM input is quantized from `input` itself).
    With `save_rowwise` the saved quantized input keeps its rowwise copy
    too (TE's `backward_override="dequantized"`, as te.layernorm_linear;
    row-scaled NVFP4: `input_rowwise` and `weight_rowwise` saved beside
    the high-precision tensors).

    ```mlir
    %y = te.linear %x weight(%w, %b) recipe(#te.fp8_current<>)
        : (tensor<?x8x64xf32>, tensor<32x64xf32>, tensor<32xf32>)
        -> tensor<?x8x32xf32>
    ```
  }];
  let arguments = (ins
    TE_FloatTensor:$input,
    TE_FloatTensor:$weight,
    Optional<TE_FloatTensor>:$bias,
    Optional<TE_F32Vector>:$scales,
    OptionalAttr<TE_RecipeAttrInterface>:$recipe,
    UnitAttr:$save_rowwise
  );
  let results = (outs TE_FloatTensor:$output);
  let assemblyFormat = [{
    $input `weight` `(` $weight (`,` $bias^)? `)`
    (`recipe` `(` $recipe^ `)`)? (`scales` `(` $scales^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = extraModuleClassDeclaration;
}

//===----------------------------------------------------------------------===//
// NormalizationOp
//===----------------------------------------------------------------------===//

def TE_NormalizationOp : TE_ModuleOp<"normalization", [],
    ["getScalesOperand", "setScalesOperand"]> {
  let summary = "a standalone LayerNorm or RMSNorm (TE LayerNorm, RMSNorm)";
  let description = [{
    Normalizes `input` (`[..., K]`) over its last dimension with LayerNorm
    or RMSNorm, as the norm of `te.layernorm_linear` does, and returns the
    result in the input's dtype (TransformerEngine's `te.LayerNorm` and
    `te.RMSNorm` modules).

    - `ln_weight` (gamma, `[K]`) is applied as `gamma + 1` when
      `zero_centered_gamma` is set.
    - `ln_bias` (beta, `[K]`) is allowed only with `layer_norm`; an absent
      beta is zero.
    - `recipe` is accepted and ignored by design: the op has no GEMM, so
      nothing is quantized and the output is high precision under every
      recipe, as TransformerEngine's standalone norm modules give it inside
      an FP8 autocast. te-apply-recipe may set it like on any module op; no
      fallback is reported and the op has no delayed-scaling state (hence
      no `scales` operand).

    ```mlir
    %y = te.normalization %x norm layer_norm(%gamma, %beta)
        {eps = 1.0e-05 : f64, zero_centered_gamma}
        : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
        -> tensor<?x64xbf16>
    ```
  }];
  let arguments = (ins
    TE_FloatTensor:$input,
    TE_FloatTensor:$ln_weight,
    Optional<TE_FloatTensor>:$ln_bias,
    TE_NormalizationKindAttr:$normalization,
    DefaultValuedAttr<F64Attr, "1.0e-5">:$eps,
    UnitAttr:$zero_centered_gamma,
    OptionalAttr<TE_RecipeAttrInterface>:$recipe
  );
  let results = (outs TE_FloatTensor:$output);
  let assemblyFormat = [{
    $input `norm` `` $normalization `(` $ln_weight (`,` $ln_bias^)? `)`
    (`recipe` `(` $recipe^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = extraModuleClassDeclaration;
}

include "te/Dialect/TE/IR/TETrainingOps.td"
include "te/Dialect/TE/IR/TEPrimitiveOps.td"

#endif // TE_DIALECT_TE_IR_TEOPS_TD
