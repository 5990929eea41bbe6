//===- TETrainingOps.td - TE training ops ------------------*- tablegen -*-===//
//
// What te-generate-backward emits: te.saved (a module op's intermediate,
// taken for the saved-tensor bundle), the module backward ops and the
// te.recompute region of checkpointed MLPs.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TETRAININGOPS_TD
#define TE_DIALECT_TE_IR_TETRAININGOPS_TD

include "te/Dialect/TE/IR/TEBase.td"
include "te/Dialect/TE/IR/TEAttrs.td"
include "te/Dialect/TE/IR/TETypes.td"
include "te/Dialect/TE/IR/TEInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// A saved tensor: high precision, or quantized with the usages the
/// backward needs.
def TE_SavedTensor : AnyTypeOf<[TE_FloatTensor, TE_QuantizedTensorType],
                               "high-precision or quantized tensor">;

//===----------------------------------------------------------------------===//
// SavedOp
//===----------------------------------------------------------------------===//

def TE_SavedOp : TE_Op<"saved", [Pure,
    DeclareOpInterfaceMethods<TE_BackwardOpInterface>]> {
  let summary = "an intermediate a module op saves for its backward";
  let description = [{
    Names one tensor that the module op producing `source` computes on the
    way to it and saves for backward, as listed by the op's description
    (`ModuleOpInterface::describe` in training mode): `mu`, `rsigma`,
    `ln_out`, `fc1_out`, `act_out`, or the quantized workspace of a weight
    or input. Nothing is recomputed: lowering reads the value from the
    decomposed module op. The result type must be exactly the described one
    (a `!te.qtensor` keeps only the usages the backward needs).

    Saved tensors that alias an input or an output of the module op are not
    taken with `te.saved`; the backward uses those values directly.

    ```mlir
    %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) : ...
    %mu = te.saved %y["mu"] : tensor<64x128xbf16> -> tensor<64xf32>
    ```
  }];
  let arguments = (ins TE_FloatTensor:$source, StrAttr:$name);
  let results = (outs TE_SavedTensor:$result);
  let assemblyFormat = [{
    $source `[` $name `]` attr-dict `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

/// A module's backward. With `#te.fp8_delayed`, `scales` are the backward
/// quantizers' scales (`[2 * GEMMs]`, TE's slots grad_output, grad_input per
/// GEMM) from the caller's recipe state.
/// `backwardMethods` names ModuleBackwardOpInterface methods with a default
/// implementation that the op defines itself (an op without `scales`).
class TE_BackwardOp<string mnemonic, list<Trait> traits = [],
                    list<string> backwardMethods = []>
    : TE_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<TE_ModuleBackwardOpInterface,
                                  backwardMethods>])> {
  let hasVerifier = 1;
  /// Results: the gradients, one per differentiable forward operand, in
  /// forward operand order (optional ones present per the with_* flags; a
  /// weight's absent when the saved tensor its wgrad reads is).
  let results = (outs Variadic<TE_FloatTensor>:$grads);
}

def TE_LayerNormLinearBwdOp : TE_BackwardOp<"layernorm_linear_bwd",
                                                [AttrSizedOperandSegments]> {
  let summary = "backward of te.layernorm_linear";
  let description = [{
    Given the gradient of the output (and optionally of the returned norm
    output) and the saved tensors, computes the gradients of the forward
    operands in their order: input, ln_weight, ln_bias (with
    `with_ln_bias`), weight, bias (with `with_bias`). TransformerEngine's
    sequence (§1.5): dgrad GEMM (NN) with the weight's columnwise copy,
    wgrad GEMM (NT) with the saved norm output's columnwise copy and the
    bias gradient, the norm-output gradient added in, then the norm
    backward. Without `ln_out` (a frozen weight: te-generate-backward saves
    no norm output) there is no wgrad GEMM and no weight gradient, and under
    an FP8 recipe the output gradient is quantized rowwise only (TE's
    requires_grad=False weight).

    `weight` and `ln_out` are quantized (`!te.qtensor` with a columnwise
    copy, under the op's recipe) or both high precision (bf16 recipe or an
    alignment fallback). `mu` (the saved mean) is present exactly for
    `layer_norm`; `rsigma` is the saved inverse standard deviation (RMS for
    `rms_norm`).

    ```mlir
    %dx, %dg, %dw = te.layernorm_linear_bwd %dy input(%x) norm rms_norm(%g)
        rsigma(%rs) weight(%w) ln_out(%ln)
        : (tensor<64x256xbf16>, tensor<64x128xbf16>, tensor<128xbf16>,
           tensor<64xf32>, tensor<256x128xbf16>, tensor<64x128xbf16>)
        -> (tensor<64x128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>)
    ```
  }];
  let arguments = (ins
    TE_FloatTensor:$grad_output,
    Optional<TE_FloatTensor>:$grad_ln_output,
    TE_FloatTensor:$input,
    TE_FloatTensor:$ln_weight,
    Optional<TE_F32Vector>:$mu,
    TE_F32Vector:$rsigma,
    TE_SavedTensor:$weight,
    Optional<TE_SavedTensor>:$ln_out,
    Optional<TE_F32Vector>:$scales,
    TE_NormalizationKindAttr:$normalization,
    UnitAttr:$zero_centered_gamma,
    UnitAttr:$with_ln_bias,
    UnitAttr:$with_bias,
    OptionalAttr<TE_RecipeAttrInterface>:$recipe,
    OptionalAttr<TE_TensorParallelAttr>:$tp
  );
  let assemblyFormat = [{
    $grad_output (`ln_grad` `(` $grad_ln_output^ `)`)?
    `input` `(` $input `)` `norm` `` $normalization `(` $ln_weight `)`
    (`mu` `(` $mu^ `)`)? `rsigma` `(` $rsigma `)`
    `weight` `(` $weight `)` (`ln_out` `(` $ln_out^ `)`)?
    (`recipe` `(` $recipe^ `)`)? (`scales` `(` $scales^ `)`)?
    (`tp` `(` $tp^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def TE_LayerNormMLPBwdOp : TE_BackwardOp<"layernorm_mlp_bwd",
                                             [AttrSizedOperandSegments]> {
  let summary = "backward of te.layernorm_mlp";
  let description = [{
    Computes the gradients of a `te.layernorm_mlp`'s operands in their
    order: input, ln_weight, ln_bias (`with_ln_bias`), fc1_weight, fc1_bias
    (`with_fc1_bias`), fc2_weight, fc2_bias (`with_fc2_bias`). The sequence
    is TransformerEngine's (§2.5): FC2 dgrad (NN) and wgrad (NT, with the
    FC2 bias gradient), the activation's derivative from the saved FC1
    output (`fc1_out`, pre-activation, bias included) with the FC1 bias
    gradient, FC1 dgrad and wgrad, the norm-output gradient, then the norm
    backward.

    `ln_out`, `fc1_weight`, `act_out` and `fc2_weight` are quantized under
    the op's recipe or all high precision; `fc1_out` is always high
    precision. For a checkpointed MLP these operands come from a
    `te.recompute` region. The quantized ones keep their columnwise copy,
    except that a per-tensor FP8 `act_out` on Hopper may be rowwise only:
    the backward then transposes it for FC2's wgrad (`te.add_columnwise`,
    TE's `update_usage(columnwise_usage=True)`).

    Without `ln_out` (a frozen FC1 weight) there is no FC1 wgrad GEMM and no
    `fc1_weight` gradient; without `act_out` (a frozen FC2 weight) none for
    FC2. The gradient that only the left-out wgrad would read transposed
    (`dy` for FC2, the activation's gradient for FC1) is then quantized
    rowwise only under an FP8 recipe.

    With `tp` (the forward's layout) the operands are the rank's: `ln_out`
    is the rank's rows of the norm output under sequence parallelism (TE
    saves the local one and gathers it again for the FC1 wgrad), `fc1_out`
    and `act_out` have the gathered rows.
  }];
  let arguments = (ins
    TE_FloatTensor:$grad_output,
    Optional<TE_FloatTensor>:$grad_ln_output,
    TE_FloatTensor:$input,
    TE_FloatTensor:$ln_weight,
    Optional<TE_F32Vector>:$mu,
    TE_F32Vector:$rsigma,
    Optional<TE_SavedTensor>:$ln_out,
    TE_SavedTensor:$fc1_weight,
    TE_FloatTensor:$fc1_out,
    Optional<TE_SavedTensor>:$act_out,
    TE_SavedTensor:$fc2_weight,
    Optional<TE_F32Vector>:$scales,
    TE_NormalizationKindAttr:$normalization,
    TE_ActivationAttr:$activation,
    UnitAttr:$zero_centered_gamma,
    UnitAttr:$with_ln_bias,
    UnitAttr:$with_fc1_bias,
    UnitAttr:$with_fc2_bias,
    OptionalAttr<TE_RecipeAttrInterface>:$recipe,
    OptionalAttr<TE_TensorParallelAttr>:$tp
  );
  let assemblyFormat = [{
    $grad_output (`ln_grad` `(` $grad_ln_output^ `)`)?
    `input` `(` $input `)` `norm` `` $normalization `(` $ln_weight `)`
    (`mu` `(` $mu^ `)`)? `rsigma` `(` $rsigma `)`
    (`ln_out` `(` $ln_out^ `)`)? `fc1` `(` $fc1_weight `)`
    `fc1_out` `(` $fc1_out `)` `act` custom<Activation>($activation) (`act_out` `(` $act_out^ `)`)?
    `fc2` `(` $fc2_weight `)`
    (`recipe` `(` $recipe^ `)`)? (`scales` `(` $scales^ `)`)?
    (`tp` `(` $tp^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def TE_LinearBwdOp : TE_BackwardOp<"linear_bwd",
                                    [AttrSizedOperandSegments]> {
  let summary = "backward of te.linear";
  let description = [{
    Computes the gradients of a `te.linear`'s operands: input, weight, bias
    (`with_bias`). `input` is the saved GEMM input (its columnwise copy when
    quantized) and `weight` the saved weight; both quantized under the op's
    recipe or both high precision. Without `input` (a frozen weight) there
    is no wgrad GEMM and no weight gradient, and under an FP8 recipe the
    output gradient is quantized rowwise only.
  }];
  let arguments = (ins
    TE_FloatTensor:$grad_output,
    Optional<TE_SavedTensor>:$input,
    TE_SavedTensor:$weight,
    Optional<TE_F32Vector>:$scales,
    UnitAttr:$with_bias,
    OptionalAttr<TE_RecipeAttrInterface>:$recipe
  );
  let assemblyFormat = [{
    $grad_output (`input` `(` $input^ `)`)? `weight` `(` $weight `)`
    (`recipe` `(` $recipe^ `)`)? (`scales` `(` $scales^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def TE_NormalizationBwdOp : TE_BackwardOp<"normalization_bwd", [],
                                          ["getScalesOperand"]> {
  let summary = "backward of te.normalization";
  let description = [{
    Computes the gradients of a `te.normalization`'s operands in their
    order: input, ln_weight and, with `with_ln_bias`, ln_bias, from the
    output gradient, the input, gamma and the saved statistics: `mu` (the
    mean, present exactly for `layer_norm`) and `rsigma` (the inverse
    standard deviation, or RMS for `rms_norm`). TransformerEngine's norm
    backward (§1.5.8, §8): high precision under every recipe, no quantizer
    slots.

    ```mlir
    %dx, %dg, %db = te.normalization_bwd %dy input(%x) norm layer_norm(%g)
        mu(%mu) rsigma(%rs) {with_ln_bias}
        : (tensor<8x64xbf16>, tensor<8x64xbf16>, tensor<64xbf16>,
           tensor<8xf32>, tensor<8xf32>)
        -> (tensor<8x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
    ```
  }];
  let arguments = (ins
    TE_FloatTensor:$grad_output,
    TE_FloatTensor:$input,
    TE_FloatTensor:$ln_weight,
    Optional<TE_F32Vector>:$mu,
    TE_F32Vector:$rsigma,
    TE_NormalizationKindAttr:$normalization,
    UnitAttr:$zero_centered_gamma,
    UnitAttr:$with_ln_bias
  );
  let assemblyFormat = [{
    $grad_output `input` `(` $input `)` `norm` `` $normalization
    `(` $ln_weight `)` (`mu` `(` $mu^ `)`)? `rsigma` `(` $rsigma `)`
    attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Delayed scaling state
//===----------------------------------------------------------------------===//

def TE_AmaxOp : TE_Op<"amax", [Pure]> {
  let summary = "the amaxes a delayed-scaling op observed in this step";
  let description = [{
    The absolute maxima that the quantizers of the op producing `source`
    (result 0 of a module op or backward op that has `scales`) recorded
    while quantizing in this step, one per quantizer slot (TE writes them
    into row 0 of the amax history). Slots a configuration does not use
    (e.g. the GEMM output) read 0, which leaves their scale unchanged.

    ```mlir
    %y = te.linear %x weight(%w) recipe(#te.fp8_delayed<>) scales(%s) : ...
    %amax = te.amax %y : tensor<16x32xbf16> -> tensor<3xf32>
    ```
  }];
  let arguments = (ins TE_FloatTensor:$source);
  let results = (outs TE_F32Vector:$amax);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($amax)";
  let hasVerifier = 1;
}

def TE_AmaxUpdateOp : TE_Op<"amax_update", [Pure,
    AllTypesMatch<["amax_history", "new_amax_history"]>,
    AllTypesMatch<["scales", "new_scales", "amax"]>]> {
  let summary = "delayed scaling's amax history and scale update";
  let description = [{
    TransformerEngine's update after a step (§4.1): the step's `amax`
    becomes row 0 of the history; per slot the reference amax is the
    history's maximum (`max`) or that row (`most_recent`); the history is
    rolled up by one row and row 0 zeroed; the new scale is
    `(fp8_max / amax) / 2^margin` when the amax is finite and positive, else
    the old scale (an infinite scale becomes FLT_MAX). `fp8_max` is the
    format's largest value for the forward (E4M3 under HYBRID) or, with
    `backward`, the gradient format (E5M2 under HYBRID).

    ```mlir
    %h2, %s2 = te.amax_update %h, %s, %amax recipe(#te.fp8_delayed<>)
        : tensor<1024x3xf32>, tensor<3xf32>
    ```
  }];
  let arguments = (ins
    2DTensorOf<[F32]>:$amax_history,
    TE_F32Vector:$scales,
    TE_F32Vector:$amax,
    TE_RecipeAttrInterface:$recipe,
    UnitAttr:$backward
  );
  let results = (outs 2DTensorOf<[F32]>:$new_amax_history,
                      TE_F32Vector:$new_scales);
  let assemblyFormat = [{
    $amax_history `,` $scales `,` $amax `recipe` `(` $recipe `)`
    (`backward` $backward^)? attr-dict `:` type($amax_history) `,` type($scales)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// RecomputeOp
//===----------------------------------------------------------------------===//

def TE_RecomputeOp : TE_Op<"recompute", [
    IsolatedFromAbove, RecursiveMemoryEffects,
    SingleBlockImplicitTerminator<"::mlir::te::YieldOp">]> {
  let summary = "forward intermediates recomputed in the backward";
  let description = [{
    Activation checkpointing (TransformerEngine's `checkpoint=True`): the
    forward saved only the module's inputs and parameters; this region
    re-runs the forward from them (`inputs` become the block arguments) and
    yields the intermediates the backward needs. The module op inside is the
    forward op without `checkpoint`; only `te.saved` intermediates are
    yielded, so its output (and with it FC2) is dead and never computed.

    The region is isolated from above and free of side effects, and it may
    hold only forward computations (no backward op, no nested recompute):
    passes cannot hoist or CSE values across its boundary, so recomputation
    is never turned back into saving.

    ```mlir
    %ln, %f1, %act, %rs = te.recompute(%x, %g, %w1, %w2)
        : (...) -> (...) {
    ^bb0(%a: ..., %b: ..., %c: ..., %d: ...):
      %y = te.layernorm_mlp %a norm rms_norm(%b) fc1(%c) act gelu fc2(%d) : ...
      %0 = te.saved %y["ln_out"] : ...
      ...
      te.yield %0, ... : ...
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inputs);
  let results = (outs Variadic<TE_SavedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def TE_YieldOp : TE_Op<"yield", [Pure, Terminator,
                                 HasParent<"::mlir::te::RecomputeOp">]> {
  let summary = "te.recompute terminator";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = [{ ($values^ `:` type($values))? attr-dict }];
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
}

#endif // TE_DIALECT_TE_IR_TETRAININGOPS_TD
