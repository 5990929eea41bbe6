//===- TEAttrs.td - TE dialect attributes ------------------*- tablegen -*-===//
//
// Enums (normalization, FP8 format), the activation attribute and the quantization recipe
// attributes, one per TransformerEngine recipe, with TE's defaults.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEATTRS_TD
#define TE_DIALECT_TE_IR_TEATTRS_TD

include "te/Dialect/TE/IR/TEBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def TE_NormalizationKind : I32EnumAttr<"NormalizationKind",
    "normalization applied before the first GEMM", [
      I32EnumAttrCase<"LayerNorm", 0, "layer_norm">,
      I32EnumAttrCase<"RMSNorm", 1, "rms_norm">
    ]> {
  let cppNamespace = "::mlir::te";
  let genSpecializedAttr = 0;
}
def TE_NormalizationKindAttr
    : EnumAttr<TE_Dialect, TE_NormalizationKind, "normalization">;

def TE_FP8Format : I32EnumAttr<"FP8Format",
    "FP8 element format (hybrid: E4M3 forward, E5M2 backward)", [
      I32EnumAttrCase<"E4M3", 0, "e4m3">,
      I32EnumAttrCase<"E5M2", 1, "e5m2">,
      I32EnumAttrCase<"Hybrid", 2, "hybrid">
    ]> {
  let cppNamespace = "::mlir::te";
  let genSpecializedAttr = 0;
}

def TE_QuantFormat : I32EnumAttr<"QuantFormat",
    "element format of a quantized tensor", [
      I32EnumAttrCase<"E4M3", 0, "e4m3">,
      I32EnumAttrCase<"E5M2", 1, "e5m2">,
      I32EnumAttrCase<"E2M1", 2, "e2m1">
    ]> {
  let cppNamespace = "::mlir::te";
  let genSpecializedAttr = 0;
}

def TE_QuantUsage : I32EnumAttr<"QuantUsage",
    "which copies of a quantized tensor exist: rowwise (for TN operands), "
    "columnwise (for the transposed use in backward GEMMs) or both", [
      I32EnumAttrCase<"Rowwise", 0, "rowwise">,
      I32EnumAttrCase<"Columnwise", 1, "columnwise">,
      I32EnumAttrCase<"Both", 2, "both">
    ]> {
  let cppNamespace = "::mlir::te";
  let genSpecializedAttr = 0;
}

def TE_TargetArch : I32EnumAttr<"TargetArch",
    "GPU architecture class; Hopper-like GPUs need a transposed FP8 copy for "
    "non-TN GEMMs, Blackwell-like ones use one buffer for both", [
      I32EnumAttrCase<"Hopper", 0, "hopper">,
      I32EnumAttrCase<"Blackwell", 1, "blackwell">
    ]> {
  let cppNamespace = "::mlir::te";
  let genSpecializedAttr = 0;
}

def TE_AmaxComputeAlgo : I32EnumAttr<"AmaxComputeAlgo",
    "how delayed scaling reduces the amax history", [
      I32EnumAttrCase<"Max", 0, "max">,
      I32EnumAttrCase<"MostRecent", 1, "most_recent">
    ]> {
  let cppNamespace = "::mlir::te";
  let genSpecializedAttr = 0;
}

def TE_NVFP4Scope : I32EnumAttr<"NVFP4Scope",
    "NVFP4 tensor scope", [
      I32EnumAttrCase<"None", 0, "none">,
      I32EnumAttrCase<"Weights", 1, "weights">,
      I32EnumAttrCase<"Activations", 2, "activations">,
      I32EnumAttrCase<"All", 3, "all">
    ]> {
  let cppNamespace = "::mlir::te";
  let genSpecializedAttr = 0;
}

def TE_NVFP4ErrMode : I32EnumAttr<"NVFP4ErrMode",
    "NVFP4 4-over-6 error mode", [
      I32EnumAttrCase<"MAE", 0, "mae">,
      I32EnumAttrCase<"MSE", 1, "mse">
    ]> {
  let cppNamespace = "::mlir::te";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Recipe attribute interface
//===----------------------------------------------------------------------===//

// The layouts of TransformerEngine's three GEMMs of a linear layer (§0.1).
def TE_GemmLayout : I32EnumAttr<"GemmLayout",
    "TransformerEngine's GEMM layouts of a linear layer", [
      I32EnumAttrCase<"TN", 0, "tn">,
      I32EnumAttrCase<"NN", 1, "nn">,
      I32EnumAttrCase<"NT", 2, "nt">
    ]> {
  let cppNamespace = "::mlir::te";
  let genSpecializedAttr = 0;
}
def TE_GemmLayoutAttr : EnumAttr<TE_Dialect, TE_GemmLayout, "gemm_layout">;

def TE_RecipeAttrInterface : AttrInterface<"RecipeAttrInterface"> {
  let cppNamespace = "::mlir::te";
  let description = [{
    A TransformerEngine quantization recipe. Every `te` module op may carry
    one; an op without one runs in its activation dtype (the `bf16` recipe).
  }];
  let methods = [
    InterfaceMethod<
      "Name of the recipe as spelled by `te-compile --recipe`.",
      "::llvm::StringRef", "getRecipeName">,
    InterfaceMethod<
      "True when GEMM operands are quantized under this recipe.",
      "bool", "isQuantized">
  ];
}

class TE_RecipeAttr<string name, string attrMnemonic>
    : TE_Attr<name, attrMnemonic,
              [DeclareAttrInterfaceMethods<TE_RecipeAttrInterface>]>;

def TE_BF16RecipeAttr : TE_RecipeAttr<"BF16Recipe", "bf16"> {
  let summary = "no quantization: GEMMs run in the activation dtype";
  let description = [{
    The high-precision recipe: TransformerEngine's modules outside
    `te.autocast`. Despite the name, GEMMs run in whatever activation dtype
    the op has (f32, bf16 or f16).

    ```mlir
    #te.bf16
    ```
  }];
}

def TE_FP8DelayedRecipeAttr : TE_RecipeAttr<"FP8DelayedRecipe", "fp8_delayed"> {
  let summary = "per-tensor FP8 with scales from an amax history (DelayedScaling)";
  let description = [{
    TransformerEngine's `DelayedScaling`: one fp32 scale per tensor computed
    from the history of amaxes of previous steps,
    `scale = (fp8_max / amax) / 2^margin`. Defaults follow TE: margin 0,
    history length 1024, `max` over the history, HYBRID format.

    ```mlir
    #te.fp8_delayed<amax_history_len = 16, amax_compute_algo = most_recent>
    ```
  }];
  let parameters = (ins
    DefaultValuedParameter<"int64_t", "0">:$margin,
    DefaultValuedParameter<"int64_t", "1024">:$amax_history_len,
    DefaultValuedParameter<"::mlir::te::AmaxComputeAlgo",
                           "::mlir::te::AmaxComputeAlgo::Max">:$amax_compute_algo,
    DefaultValuedParameter<"::mlir::te::FP8Format",
                           "::mlir::te::FP8Format::Hybrid">:$format
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def TE_FP8CurrentRecipeAttr : TE_RecipeAttr<"FP8CurrentRecipe", "fp8_current"> {
  let summary = "per-tensor FP8 with a scale from the current amax (Float8CurrentScaling)";
  let description = [{
    TransformerEngine's `Float8CurrentScaling`: the scale of each quantized
    tensor is computed from its own amax, optionally rounded down to a power
    of two. Defaults: HYBRID format, no power-of-two rounding.

    ```mlir
    #te.fp8_current<format = e4m3, power_2_scales = true>
    ```
  }];
  let parameters = (ins
    DefaultValuedParameter<"::mlir::te::FP8Format",
                           "::mlir::te::FP8Format::Hybrid">:$format,
    DefaultValuedParameter<"bool", "false">:$power_2_scales
  );
  let assemblyFormat = "`<` struct(params) `>`";
}

def TE_MXFP8RecipeAttr : TE_RecipeAttr<"MXFP8Recipe", "mxfp8"> {
  let summary = "MXFP8: E4M3 data with one E8M0 scale per 32 elements (MXFP8BlockScaling)";
  let description = [{
    TransformerEngine's `MXFP8BlockScaling`: E4M3 values, one power-of-two
    (E8M0) scale per 1x32 block, rowwise and columnwise copies quantized
    independently. GEMMs need a Blackwell-class GPU.

    ```mlir
    #te.mxfp8
    ```
  }];
}

def TE_FP8BlockRecipeAttr : TE_RecipeAttr<"FP8BlockRecipe", "fp8_block"> {
  let summary = "DeepSeek-style FP8 block scaling (Float8BlockScaling)";
  let description = [{
    TransformerEngine's `Float8BlockScaling`: E4M3 values with fp32 scales per
    1x128 (block dim 1) or 128x128 (block dim 2) block. Defaults: activations
    and gradients 1x128, weights 128x128, power-of-two scales. A GEMM whose
    two operands are both 2-D scaled is rejected, as in TE.

    ```mlir
    #te.fp8_block<x_block_dim = 1, w_block_dim = 2, grad_block_dim = 1>
    ```
  }];
  let parameters = (ins
    DefaultValuedParameter<"int64_t", "1">:$x_block_dim,
    DefaultValuedParameter<"int64_t", "2">:$w_block_dim,
    DefaultValuedParameter<"int64_t", "1">:$grad_block_dim,
    DefaultValuedParameter<"bool", "false">:$fp32_scales
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def TE_NVFP4RecipeAttr : TE_RecipeAttr<"NVFP4Recipe", "nvfp4"> {
  let summary = "NVFP4: packed E2M1 with E4M3 block scales and an fp32 global scale";
  let description = [{
    TransformerEngine's `NVFP4BlockScaling`: two-level scaling with one E4M3
    scale per 16 elements and a per-tensor fp32 scale. Defaults follow TE:
    the random Hadamard transform on wgrad operands (`rht`), stochastic
    rounding of gradients, and 16x16 blocks for weights (`weight_2d`).
    `row_scaled` is TE's row-scaled activation variant (one global amax per
    row of an activation); TE runs it with a high-precision backward.

    `four_over_six` is TE's `nvfp4_4over6`: for the forward tensors it
    names (never gradients) each block is quantized twice, with its E4M3
    scale mapping the block amax to 6 and to 4, and keeps the candidate
    with the lower `four_over_six_err_mode` error (MAE or MSE; ties keep
    6); the scale byte alone records the choice.
    `four_over_six_e4m3_use_256` (TE's `nvfp4_4over6_e4m3_use_256`, default
    all) names the 4-over-6 tensors whose global scale maps the amax to
    6 * 256 instead of 6 * 448. Like TE, 4-over-6 activations need
    `rht = false`.

    ```mlir
    #te.nvfp4<rht = false>
    #te.nvfp4<rht = false, four_over_six = all, four_over_six_err_mode = mse>
    ```
  }];
  let parameters = (ins
    DefaultValuedParameter<"bool", "true">:$rht,
    DefaultValuedParameter<"bool", "true">:$stochastic_rounding,
    DefaultValuedParameter<"bool", "true">:$weight_2d,
    DefaultValuedParameter<"bool", "false">:$row_scaled,
    DefaultValuedParameter<"::mlir::te::NVFP4Scope",
                           "::mlir::te::NVFP4Scope::None">:$four_over_six,
    DefaultValuedParameter<"::mlir::te::NVFP4Scope",
                           "::mlir::te::NVFP4Scope::All">:$four_over_six_e4m3_use_256,
    DefaultValuedParameter<"::mlir::te::NVFP4ErrMode",
                           "::mlir::te::NVFP4ErrMode::MAE">:$four_over_six_err_mode
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether 4-over-6 applies to a forward tensor (a weight or not).
    bool fourOverSix(bool weight) const;
    /// The E4M3 bound of the global scale of such a tensor: 256 or 448.
    float fourOverSixE4M3Max(bool weight) const;
  }];
}


//===----------------------------------------------------------------------===//
// Activations
//===----------------------------------------------------------------------===//

def TE_ActivationAttrInterface : AttrInterface<"ActivationAttrInterface"> {
  let cppNamespace = "::mlir::te";
  let description = [{
    An MLP activation with its parameters, as every pass and the lowering
    ask about it: whether it is gated (FC1's output `[..., 2F]` is
    `[a | b]` and the result `f(a) * b`), its parameters, the runtime code,
    and which fused derivatives exist for it (the bias gradient fused into
    the derivative is for non-gated activations; cuBLASLt's GEMM epilogues
    compute only TE's tanh GELU and its derivative).
  }];
  let methods = [
    InterfaceMethod<"The kind of activation.",
      "::mlir::te::ActivationKind", "getKind">,
    InterfaceMethod<"Its IR name (`gelu`, `clamped_swiglu`, ...).",
      "::llvm::StringRef", "getActivationName">,
    InterfaceMethod<"True for the gated activations.", "bool", "isGated">,
    InterfaceMethod<"Its parameters, in TEActivations.def order.",
      "::llvm::ArrayRef<double>", "getParamValues">,
    InterfaceMethod<"The TE_RT_ACT_* code the runtime takes.",
      "int32_t", "getRuntimeCode">,
    InterfaceMethod<"True when cuBLASLt's GEMM epilogue computes it (and "
      "its derivative): TE's tanh GELU.", "bool", "hasGemmEpilogue">,
    InterfaceMethod<"True when its derivative can produce the bias gradient "
      "in the same pass (te.dbias_dact): non-gated activations.",
      "bool", "hasDbiasFusion">
  ];
}

def TE_ActivationAttr : TE_Attr<"Activation", "act",
    [DeclareAttrInterfaceMethods<TE_ActivationAttrInterface>]> {
  let summary = "an MLP activation and its parameters";
  let description = [{
    One of the activations of te/Runtime/TEActivations.def (TE's twelve and
    `gelu_erf`), with its parameters: `#te.act<gelu>`,
    `#te.act<clamped_swiglu, limit = 7.0, alpha = 1.702>`. Parameters left
    out take TE's defaults (clamped_swiglu: limit 7.0, alpha 1.702,
    glu_linear_offset 1.0) and print only when they differ from them.
    Inside an op the `#te.act` wrapper is left out: `act gelu`,
    `act clamped_swiglu<limit = 5.0>`.
  }];
  let parameters = (ins "::mlir::te::ActivationKind":$kind,
                        "::mlir::DenseF64ArrayAttr":$params);
  let builders = [
    AttrBuilder<(ins "::mlir::te::ActivationKind":$kind), [{
      return $_get($_ctxt, kind, ::mlir::DenseF64ArrayAttr::get($_ctxt,
          ::mlir::te::defaultActivationParams(kind)));
    }]>,
    AttrBuilder<(ins "::mlir::te::ActivationKind":$kind,
                     "::llvm::ArrayRef<double>":$values), [{
      return $_get($_ctxt, kind, ::mlir::DenseF64ArrayAttr::get($_ctxt, values));
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The parameter `name` (TEActivations.def), or nullopt when the
    /// activation has none of that name.
    std::optional<double> getParam(::llvm::StringRef name) const;
  }];
}

//===----------------------------------------------------------------------===//
// Tensor-parallel layout
//===----------------------------------------------------------------------===//

def TE_TensorParallelAttr : TE_Attr<"TensorParallel", "tp"> {
  let summary = "a module op's tensor-parallel layout (TransformerEngine's)";
  let description = [{
    The op runs on one rank of a tensor-parallel group of `size` ranks, with
    the placements TransformerEngine fixes (reference/tensor-parallel.md
    §1-2): `te.layernorm_linear` is column-parallel (its weight and bias
    hold `N / size` output features), `te.layernorm_mlp` is FC1
    column-parallel and FC2 row-parallel (FC1 holds `F / size` features, per
    half for the gated activations; FC2 `[H, F / size]`). The op's types are
    the rank's (local) shapes.

    With `sequence_parallel` the norm runs on the rank's rows (`[M / size,
    H]`): the norm output is all-gathered before the first GEMM and FC2's
    partial sums are reduce-scattered; without it the rows are replicated
    and FC2 (and every dgrad) is all-reduced. Under sequence parallelism the
    gradients of the norm weights and of FC2's bias are partial sums over
    the group (Megatron-LM's contract: the caller sums them) unless
    `reduce_param_grads` asks the backward to all-reduce them.

    ```mlir
    #te.tp<size = 2, sequence_parallel = true>
    ```
  }];
  let parameters = (ins
    "int64_t":$size,
    DefaultValuedParameter<"bool", "false">:$sequence_parallel,
    DefaultValuedParameter<"bool", "false">:$reduce_param_grads
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // TE_DIALECT_TE_IR_TEATTRS_TD
