//===- TEPrimitiveOps.td - L2 primitives -------------------*- tablegen -*-===//
//
// What te-decompose turns module ops into: normalization, GEMM, activation
// and bias-gradient primitives on tensors, one per TransformerEngine kernel
// (reference §1.3, §1.5, §2.3, §2.5), lowered one-to-one to te_rt_* calls.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEPRIMITIVEOPS_TD
#define TE_DIALECT_TE_IR_TEPRIMITIVEOPS_TD

include "te/Dialect/TE/IR/TEBase.td"
include "te/Dialect/TE/IR/TEAttrs.td"
include "te/Dialect/TE/IR/TETypes.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class TE_PrimitiveOp<string mnemonic, list<Trait> traits = []>
    : TE_Op<mnemonic, !listconcat(traits, [Pure])> {
  let hasVerifier = 1;
}

def TE_NormFwdOp : TE_PrimitiveOp<"norm_fwd"> {
  let summary = "LayerNorm / RMSNorm forward over the last dimension";
  let description = [{
    `z = gamma~ * (x - mu) * rsigma + beta` (LayerNorm) or
    `z = gamma~ * x * rsigma` (RMSNorm), `gamma~ = gamma + 1` with
    `zero_centered_gamma` (§8.1, §8.2); statistics in fp32, one per row
    (`rsigma`, and `mu` for LayerNorm). Kernel: `te_rt_norm_fwd`.
  }];
  let arguments = (ins TE_FloatTensor:$input, TE_FloatTensor:$gamma,
                       Optional<TE_FloatTensor>:$beta,
                       TE_NormalizationKindAttr:$normalization,
                       F64Attr:$eps, UnitAttr:$zero_centered_gamma);
  let results = (outs TE_FloatTensor:$output, TE_F32Vector:$rsigma,
                      Optional<TE_F32Vector>:$mu);
  let assemblyFormat = [{
    $input `norm` `` $normalization `(` $gamma (`,` $beta^)? `)`
    attr-dict `:` functional-type(operands, results)
  }];
}

def TE_NormBwdOp : TE_PrimitiveOp<"norm_bwd"> {
  let summary = "LayerNorm / RMSNorm backward";
  let description = [{
    Given `grad` (dz) and the saved `rsigma` (and `mu` for LayerNorm),
    computes `dx`, `dgamma` and, with `with_beta`, `dbeta` (§8.1, §8.2).
    Kernel: `te_rt_norm_bwd`.
  }];
  let arguments = (ins TE_FloatTensor:$grad, TE_FloatTensor:$input,
                       TE_FloatTensor:$gamma, TE_F32Vector:$rsigma,
                       Optional<TE_F32Vector>:$mu,
                       TE_NormalizationKindAttr:$normalization,
                       UnitAttr:$zero_centered_gamma, UnitAttr:$with_beta);
  let results = (outs TE_FloatTensor:$grad_input, TE_FloatTensor:$grad_gamma,
                      Optional<TE_FloatTensor>:$grad_beta);
  let assemblyFormat = [{
    $grad `input` `(` $input `)` `norm` `` $normalization `(` $gamma `)`
    `rsigma` `(` $rsigma `)` (`mu` `(` $mu^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

/// A GEMM operand: high precision, or quantized under a recipe.
def TE_GemmOperand : AnyTypeOf<[TE_FloatTensor, TE_QuantizedTensorType],
    "a float tensor or a quantized tensor">;

def TE_QuantizeOp : TE_PrimitiveOp<"quantize", [AttrSizedOperandSegments]> {
  let summary = "quantize a tensor under an FP8 or NVFP4 recipe";
  let description = [{
    Quantizes `input [..., K]` into `result`, a `!te.qtensor` of the same
    logical shape whose recipe, format and usage say what is produced.

    Per-tensor FP8 (reference §4.1, §4.2): the FP8 data for `rowwise`, its
    transposed copy for `columnwise` on Hopper, both for `both`, always with
    the fp32 `scale_inv`; `amax` is `max |input|`, the value
    TransformerEngine records. The scale is the current one
    (`#te.fp8_current`: from the tensor's own amax, optionally a power of
    two) or, for `#te.fp8_delayed`, element `slot` of the op's `scales`
    vector (`scale(%s[slot])`), the state te-generate-backward threads
    through the step. Under current scaling `amax(%a)` supplies the amax
    that the kernel producing the input computed (te-fuse-quantize-amax):
    the quantization then skips its amax pass and has no `amax` result (the
    amax recorded is `%a`). Kernel: `te_rt_quantize_fp8`.

    Float8 block scaling (`#te.fp8_block`, §4.4): one fp32 scale per 1x128
    block, or per 128x128 block when the type says `block_2d`; the
    columnwise copy is quantized from the input's transpose (independently
    of the rowwise one for 1x128 blocks). The recipe is stateless: there is
    no `scale(...)` and no `amax` result. Kernel:
    `te_rt_quantize_fp8_block`.

    MXFP8 (`#te.mxfp8`, §4.3, Blackwell layout): one E8M0 scale per 32
    elements along the rows (rowwise) or down the columns (columnwise, data
    not transposed), scales in cuBLAS's swizzled order; stateless like
    fp8-block. Kernel: `te_rt_quantize_mxfp8`.

    NVFP4 (`#te.nvfp4`, §4.5, Blackwell layout): packed E2M1 values, one
    E4M3 scale per 16 elements (per 16x16 tile with `block_2d`), an fp32
    global amax per copy inside the qtensor (not a separate result);
    columnwise data transposed, Hadamard-transformed when the type says
    `rht`. `stochastic_rounding` rounds E2M1 values stochastically (TE's
    gradients) from random bits keyed by the runtime context's seed, `seed`
    (default 0: te-decompose numbers the stochastically rounded quantizations
    of a function 0, 1, ... in program order) and the element's position.
    Kernel: `te_rt_quantize_nvfp4`. `four_over_six` selects, per block, the
    scale mapping the block amax to 6 or to 4 (the recipe's
    `four_over_six_err_mode` and `four_over_six_e4m3_use_256`, the latter
    for a weight when `weight` is set, else for an activation); not with
    `rht` nor `stochastic_rounding`. Kernel: `te_rt_quantize_nvfp4_4over6`.

    `weight` marks the quantization of a module op's weight (what TE's FP8
    weight cache keeps across micro-batches; see te-weight-cache).

    ```mlir
    %q, %amax = te.quantize %x : tensor<16x32xbf16>
        -> !te.qtensor<16x32xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
    %q2, %a2 = te.quantize %dy scale(%s[2]) : tensor<16x32xbf16>, tensor<4xf32>
        -> !te.qtensor<16x32xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
    %w = te.quantize %w {weight} : tensor<256x128xbf16>
        -> !te.qtensor<256x128xe4m3, #te.fp8_block<>, both, hopper, block_2d>
    %g = te.quantize %dy {seed = 1 : i64, stochastic_rounding} : tensor<64x32xbf16>
        -> !te.qtensor<64x32xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>
    %a = te.quantize %y amax(%amax) : tensor<64x256xbf16> amax tensor<1xf32>
        -> !te.qtensor<64x256xe4m3, #te.fp8_current<>, both, hopper>
    ```
  }];
  let arguments = (ins TE_FloatTensor:$input, Optional<TE_F32Vector>:$scales,
                       Optional<TE_F32Vector>:$amax_in,
                       OptionalAttr<I64Attr>:$slot, UnitAttr:$weight,
                       UnitAttr:$stochastic_rounding,
                       OptionalAttr<I64Attr>:$seed,
                       UnitAttr:$four_over_six);
  let results = (outs TE_QuantizedTensorType:$result,
                      Optional<TE_F32Vector>:$amax);
  let assemblyFormat = [{
    $input (`scale` `(` $scales^ `[` $slot `]` `)`)? (`amax` `(` $amax_in^ `)`)?
    attr-dict `:` type($input) (`,` type($scales)^)? (`amax` type($amax_in)^)?
    `->` qualified(type($result)) (`,` type($amax)^)?
  }];
}

def TE_DropUsageOp : TE_PrimitiveOp<"drop_usage"> {
  let summary = "keep one usage of a quantized tensor";
  let description = [{
    The same quantized value with fewer copies: from `both` to `rowwise`
    or `columnwise`, as TE's `update_usage` drops what the backward does not
    read before saving (§0.3). The bytes kept are unchanged. In the
    runtime's buffer layout (shared parts, then the columnwise copy, then
    the rowwise one) keeping the columnwise copy is a view of the prefix.

    ```mlir
    %saved = te.drop_usage %q : !te.qtensor<16x32xe4m3, #te.fp8_current<>, both, hopper>
        -> !te.qtensor<16x32xe4m3, #te.fp8_current<>, columnwise, hopper>
    ```
  }];
  let arguments = (ins TE_QuantizedTensorType:$input);
  let results = (outs TE_QuantizedTensorType:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
}

def TE_AddColumnwiseOp : TE_PrimitiveOp<"add_columnwise"> {
  let summary = "make the columnwise copy of a rowwise per-tensor FP8 tensor";
  let description = [{
    The columnwise copy of a rowwise-only per-tensor FP8 tensor (fp8-delayed,
    fp8-current) on Hopper, where that copy is the transpose of the rowwise
    bytes under the same scale: TE's `update_usage(columnwise_usage=True)`,
    which LayerNormMLP's backward calls on the saved FC2 input just before
    FC2's wgrad GEMM (§2.5). The bytes are those that a `both` quantization
    writes, so the GEMM reads exactly what it would have read. The result
    keeps the columnwise usage only (`transpose` and `scale_inv`, a new
    buffer); the input is unchanged. Other recipes and Blackwell have no
    such copy: their columnwise data is quantized from the high-precision
    tensor (block scales along the other dim) or is the rowwise buffer.

    ```mlir
    %col = te.add_columnwise %act : !te.qtensor<64x256xe4m3, #te.fp8_current<>, rowwise, hopper>
        -> !te.qtensor<64x256xe4m3, #te.fp8_current<>, columnwise, hopper>
    ```
  }];
  let arguments = (ins TE_QuantizedTensorType:$input);
  let results = (outs TE_QuantizedTensorType:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` qualified(type($result))";
}

def TE_GemmOp : TE_PrimitiveOp<"gemm", [AttrSizedOperandSegments]> {
  let summary = "one GEMM of a linear layer in TransformerEngine's layouts";
  let description = [{
    The three GEMMs of a linear layer (§0.1), on row-major operands whose
    leading dims are flattened:

    - `tn` (fprop): `lhs = x [..., K]`, `rhs = w [N, K]`:
      `y [..., N] = x . w^T (+ bias [N])`
    - `nn` (dgrad): `lhs = dy [..., N]`, `rhs = w [N, K]`:
      `dx [..., K] = dy . w`
    - `nt` (wgrad): `lhs = dy [..., N]`, `rhs = x [..., K]`:
      `dw [N, K] = dy^T . x`

    Accumulation is fp32. The wgrad GEMM may also produce the bias
    gradient `bias_grad [N] = sum over rows of dy` in its epilogue (cuBLASLt's
    BGRADB; te-fuse-gemm-epilogues folds a `te.bias_grad` of the same `dy`
    into it). Kernels: `te_rt_gemm_fprop`, `_dgrad`, `_wgrad`.

    With quantized operands (both `!te.qtensor` under one FP8 recipe) it is
    an FP8 GEMM: each operand is read in the usage TE's `general_gemm`
    reads it (§0.1): `tn` lhs and rhs rowwise, `nn` lhs rowwise and rhs
    columnwise, `nt` both columnwise. The result is in the activation
    dtype, the GEMM of the dequantized operands accumulated in fp32.
    `fast_accumulate` (per-tensor FP8 only) lets the GPU accumulate without
    periodic promotion to fp32, TE's default for fprop
    (`use_split_accumulator` False); te-decompose sets it there. Kernels:
    `te_rt_gemm_fp8`, `te_rt_gemm_fp8_block`, `te_rt_gemm_mxfp8`.

    `accumulate(%main)` (wgrad only, Megatron's `main_grad`): the result is
    `main + dy^T . x` in fp32, the product added to `main` in the GEMM's
    epilogue before any rounding (TE's `fuse_wgrad_accumulation`: cuBLASLt's
    C = D with beta 1). `main` and the result are fp32 `[N, K]`; no bias
    gradient comes with it. te-fuse-gemm-epilogues makes it from
    `main + extf(wgrad)` (what te-generate-backward emits for an argument
    marked `te.main_grad`). A caller may pass `main`'s buffer as the result's
    (`te.main_grad_of`): the GEMM then accumulates in place.

    ```mlir
    %dw = te.gemm nt %dy, %x accumulate(%main)
        : (tensor<16x64xbf16>, tensor<16x32xbf16>, tensor<64x32xf32>)
          -> tensor<64x32xf32>
    ```
  }];
  let arguments = (ins TE_GemmOperand:$lhs, TE_GemmOperand:$rhs,
                       Optional<TE_FloatTensor>:$bias,
                       Optional<TE_FloatTensor>:$accumulate,
                       TE_GemmLayoutAttr:$layout, UnitAttr:$fast_accumulate);
  let results = (outs TE_FloatTensor:$result,
                      Optional<TE_FloatTensor>:$bias_grad);
  let assemblyFormat = [{
    `` $layout $lhs `,` $rhs (`bias` `(` $bias^ `)`)?
    (`accumulate` `(` $accumulate^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def TE_GemmActOp : TE_PrimitiveOp<"gemm_act"> {
  let summary = "the fprop GEMM with the activation in its epilogue";
  let description = [{
    `te.gemm tn` followed by `te.act` of its result in one GEMM (cuBLASLt's
    GELU_AUX_BIAS epilogue): with `lhs = x [..., K]`, `rhs = w [N, K]`,
    `pre [..., N] = x . w^T (+ bias [N])` in fp32, `result = act(pre)` from
    the fp32 value, rounded once to the dtype. The optional `pre` result is
    the pre-activation rounded to the dtype (the epilogue's aux output),
    what the backward's `te.gemm_dact` reads; inference has none.
    High-precision operands only, and only `gelu` (the tanh approximation:
    the only activation cuBLASLt's epilogue computes). Made by
    te-fuse-gemm-epilogues with `act-epilogues`. Kernel:
    `te_rt_gemm_fprop_act`.

    ```mlir
    %y, %pre = te.gemm_act gelu %x, %w bias(%b)
        : (tensor<16x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>)
        -> (tensor<16x128xbf16>, tensor<16x128xbf16>)
    ```
  }];
  let arguments = (ins TE_FloatTensor:$lhs, TE_FloatTensor:$rhs,
                       Optional<TE_FloatTensor>:$bias,
                       TE_ActivationAttr:$activation);
  let results = (outs TE_FloatTensor:$result, Optional<TE_FloatTensor>:$pre);
  let assemblyFormat = [{
    custom<Activation>($activation) $lhs `,` $rhs (`bias` `(` $bias^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def TE_GemmDActOp : TE_PrimitiveOp<"gemm_dact"> {
  let summary = "the dgrad GEMM with the activation's derivative in its epilogue";
  let description = [{
    `te.gemm nn` followed by `te.dact` of its result in one GEMM (cuBLASLt's
    DGELU epilogue): with `lhs = dy [..., N]`, `rhs = w [N, K]` and the
    saved pre-activation `pre [..., K]`,
    `result [..., K] = (dy . w) * act'(pre)`, the product in fp32 rounded
    once to the dtype. High-precision operands only, and only `gelu` (the
    tanh approximation). Made by te-fuse-gemm-epilogues with
    `act-epilogues`. Kernel: `te_rt_gemm_dgrad_dact`.

    ```mlir
    %dx = te.gemm_dact gelu %dy, %w2 pre(%pre)
        : (tensor<16x64xbf16>, tensor<64x128xbf16>, tensor<16x128xbf16>)
        -> tensor<16x128xbf16>
    ```
  }];
  let arguments = (ins TE_FloatTensor:$lhs, TE_FloatTensor:$rhs,
                       TE_FloatTensor:$pre, TE_ActivationAttr:$activation);
  let results = (outs TE_FloatTensor:$result);
  let assemblyFormat = [{
    custom<Activation>($activation) $lhs `,` $rhs `pre` `(` $pre `)`
    attr-dict `:` functional-type(operands, results)
  }];
}

def TE_ActOp : TE_PrimitiveOp<"act"> {
  let summary = "an MLP activation (gated ones halve the last dim)";
  let description = [{
    `y = act(x)` (§8.3) in fp32; gated activations split `x [..., 2F]` as
    `[a | b]` and give `f(a) * b [..., F]`. Kernel: `te_rt_act_fwd`.
    With an `amax` result the kernel also gives `max |result|` over the
    values as stored, for a current-scaling `te.quantize` of the result to
    take instead of running its own amax pass (te-fuse-quantize-amax).

    ```mlir
    %y, %amax = te.act gelu %x : (tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<1xf32>)
    ```
  }];
  let arguments = (ins TE_FloatTensor:$input, TE_ActivationAttr:$activation);
  let results = (outs TE_FloatTensor:$result, Optional<TE_F32Vector>:$amax);
  let assemblyFormat = [{
    custom<Activation>($activation) $input attr-dict `:` functional-type(operands, results)
  }];
}

def TE_DActOp : TE_PrimitiveOp<"dact"> {
  let summary = "an MLP activation's derivative";
  let description = [{
    `dx = dy * act'(x)` with `x` the saved pre-activation (`[..., 2F]`
    for gated activations, whose `dx` is `[da | db]`). Kernel:
    `te_rt_act_bwd`.
    With an `amax` result the kernel also gives `max |result|` over the
    values as stored, for a current-scaling `te.quantize` of the result to
    take instead of running its own amax pass (te-fuse-quantize-amax).
  }];
  let arguments = (ins TE_FloatTensor:$grad, TE_FloatTensor:$input,
                       TE_ActivationAttr:$activation);
  let results = (outs TE_FloatTensor:$result, Optional<TE_F32Vector>:$amax);
  let assemblyFormat = [{
    custom<Activation>($activation) $grad `,` $input attr-dict `:` functional-type(operands, results)
  }];
}

def TE_DBiasDActOp : TE_PrimitiveOp<"dbias_dact"> {
  let summary = "an activation's derivative fused with the bias gradient";
  let description = [{
    `dx = dy * act'(x)` and `dbias = sum over rows of dx` in one pass
    (TransformerEngine's `dbias_d<act>` kernels, for the non-gated
    activations), summed in fp32 before `dx` is rounded. Made by
    te-fuse-dbias-dact from `te.dact` + `te.bias_grad`. Kernel:
    `te_rt_dbias_dact`.
    With an `amax` result the kernel also gives `max |result|` over the
    values as stored, for a current-scaling `te.quantize` of the result to
    take instead of running its own amax pass (te-fuse-quantize-amax).
  }];
  let arguments = (ins TE_FloatTensor:$grad, TE_FloatTensor:$input,
                       TE_ActivationAttr:$activation);
  let results = (outs TE_FloatTensor:$result, TE_FloatTensor:$bias_grad,
                      Optional<TE_F32Vector>:$amax);
  let assemblyFormat = [{
    custom<Activation>($activation) $grad `,` $input attr-dict `:` functional-type(operands, results)
  }];
}

def TE_ActQuantizeOp : TE_PrimitiveOp<"act_quantize"> {
  let summary = "an MLP activation fused with its delayed-scaling FP8 cast";
  let description = [{
    `te.act` followed by a per-tensor FP8 `te.quantize` of its result under
    `#te.fp8_delayed`, in one kernel (TransformerEngine's fused
    activation-cast): `result` and `amax` are what `te.act` followed by
    `te.quantize ... scale(%scales[slot])` would give (the activation
    rounded to the input's dtype, then cast with element `slot` of
    `scales`; `amax` is max |activation| as rounded), but the
    high-precision activation is never stored. `result` has the
    activation's output shape (`[..., K/2]` for gated activations).
    Current scaling cannot fuse this way: it computes its scale from the
    amax first (te-fuse-quantize-amax shares the activation's amax
    instead). Made by te-fuse-act-quantize. Kernel:
    `te_rt_act_quantize_fp8`.

    ```mlir
    %q, %a = te.act_quantize gelu %x scale(%s[3]) : tensor<64x256xbf16>, tensor<6xf32>
        -> !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
    ```
  }];
  let arguments = (ins TE_FloatTensor:$input, TE_F32Vector:$scales,
                       I64Attr:$slot, TE_ActivationAttr:$activation);
  let results = (outs TE_QuantizedTensorType:$result, TE_F32Vector:$amax);
  let assemblyFormat = [{
    custom<Activation>($activation) $input `scale` `(` $scales `[` $slot `]` `)` attr-dict
    `:` type($input) `,` type($scales)
    `->` qualified(type($result)) `,` type($amax)
  }];
}

def TE_DActQuantizeOp : TE_PrimitiveOp<"dact_quantize"> {
  let summary = "an activation's derivative (+ bias gradient) fused with its "
                "delayed-scaling FP8 cast";
  let description = [{
    `te.dact` (or, with a `bias_grad` result, `te.dbias_dact`) followed by a
    per-tensor FP8 `te.quantize` of its result under `#te.fp8_delayed`, in
    one kernel (TransformerEngine's fused `dbias_d<act>` + cast): `result`
    and `amax` are what the quantization with element `slot` of `scales`
    would give for `dx = dy * act'(x)` rounded to the input's dtype, and
    `bias_grad` the fp32 column sums of `dx` before rounding; `dx` itself is
    never stored. `result` has the input's shape (`[da | db]` for gated
    activations, whose `grad` is `[..., K/2]`); `bias_grad [K]` only for
    the non-gated activations. The optional `bias_grad` is the last result
    (after `amax`), so the op needs no result-segment attribute. Made by
    te-fuse-act-quantize. Kernel: `te_rt_dact_quantize_fp8`.

    ```mlir
    %q, %a, %db = te.dact_quantize gelu %dy, %x scale(%s[4])
        : tensor<64x256xbf16>, tensor<64x256xbf16>, tensor<6xf32>
        -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>
    ```
  }];
  let arguments = (ins TE_FloatTensor:$grad, TE_FloatTensor:$input,
                       TE_F32Vector:$scales, I64Attr:$slot,
                       TE_ActivationAttr:$activation);
  let results = (outs TE_QuantizedTensorType:$result, TE_F32Vector:$amax,
                      Optional<TE_FloatTensor>:$bias_grad);
  let assemblyFormat = [{
    custom<Activation>($activation) $grad `,` $input `scale` `(` $scales `[` $slot `]` `)`
    attr-dict `:` type($grad) `,` type($input) `,` type($scales)
    `->` qualified(type($result)) `,` type($amax) (`,` type($bias_grad)^)?
  }];
}

def TE_DBiasQuantizeOp : TE_PrimitiveOp<"dbias_quantize"> {
  let summary = "a gradient's per-tensor FP8 cast (+ transpose) fused with "
                "its bias gradient";
  let description = [{
    `te.bias_grad %x` and a per-tensor FP8 `te.quantize %x` of the same
    value in one pass over `x [..., N]` (TransformerEngine's
    `cast_transpose_dbias`, `tex.bgrad_quantize`, §3.2): `result` and `amax`
    are what that `te.quantize` gives (same usages and layout rules, the
    data and, on Hopper, its transposed copy), `bias_grad [N]` (x's dtype)
    what `te.bias_grad` gives: the column sums of `x` summed in fp32 and
    rounded once. Under `#te.fp8_delayed` the scale is element `slot` of
    `scales` (`scale(%s[slot])`); under `#te.fp8_current` (no `scale(...)`)
    the amax pass runs first, then the fused cast. `amax` is `max |x|`, the
    value TE records. The block-scaled recipes (fp8-block, MXFP8, NVFP4)
    are not fused this way. Made by te-fuse-dbias-quantize. Kernel:
    `te_rt_dbias_quantize_fp8`.

    ```mlir
    %q, %a, %db = te.dbias_quantize %dy scale(%s[2]) : tensor<16x32xbf16>, tensor<4xf32>
        -> !te.qtensor<16x32xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<32xbf16>
    %q2, %a2, %db2 = te.dbias_quantize %dy : tensor<16x32xbf16>
        -> !te.qtensor<16x32xe5m2, #te.fp8_current<>, both, hopper>, tensor<1xf32>, tensor<32xbf16>
    ```
  }];
  let arguments = (ins TE_FloatTensor:$input, Optional<TE_F32Vector>:$scales,
                       OptionalAttr<I64Attr>:$slot);
  let results = (outs TE_QuantizedTensorType:$result, TE_F32Vector:$amax,
                      TE_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input (`scale` `(` $scales^ `[` $slot `]` `)`)?
    attr-dict `:` type($input) (`,` type($scales)^)?
    `->` qualified(type($result)) `,` type($amax) `,` type($bias_grad)
  }];
}

def TE_NormQuantizeOp : TE_PrimitiveOp<"norm_quantize",
                                       [AttrSizedOperandSegments]> {
  let summary = "LayerNorm / RMSNorm forward fused with its per-tensor FP8 cast";
  let description = [{
    `te.norm_fwd` followed by a per-tensor FP8 `te.quantize` of its output,
    in one kernel (TransformerEngine's normalization with an FP8 output,
    §1.3): `result` and `amax` are what `te.quantize` of the normalized
    tensor (rounded to the input's dtype) would give, `rsigma` and `mu` what
    `te.norm_fwd` gives; the high-precision output is never stored.
    `result` has the input's shape. Under `#te.fp8_delayed` the scale is
    element `slot` of `scales` (`scale(%s[slot])`); under `#te.fp8_current`
    (no `scale(...)`) it is computed from the amax the kernel takes while
    normalizing (a power of two with the recipe's `power_2_scales`).
    `amax` is `max |output|`, the value TE records. The optional `mu`
    (LayerNorm) is the last result, so the op needs no result-segment
    attribute. Made by te-fuse-norm-quantize. Kernel:
    `te_rt_norm_quantize_fp8`.

    ```mlir
    %q, %rs, %a, %mu = te.norm_quantize %x norm layer_norm(%g, %b) scale(%s[0])
        {eps = 1.0e-05 : f64}
        : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<6xf32>)
        -> (!te.qtensor<64x128xe4m3, #te.fp8_delayed<>, both, hopper>,
            tensor<64xf32>, tensor<1xf32>, tensor<64xf32>)
    %q2, %rs2, %a2 = te.norm_quantize %x norm rms_norm(%g) {eps = 1.0e-05 : f64}
        : (tensor<64x128xbf16>, tensor<128xbf16>)
        -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>,
            tensor<64xf32>, tensor<1xf32>)
    ```
  }];
  let arguments = (ins TE_FloatTensor:$input, TE_FloatTensor:$gamma,
                       Optional<TE_FloatTensor>:$beta,
                       Optional<TE_F32Vector>:$scales,
                       TE_NormalizationKindAttr:$normalization,
                       F64Attr:$eps, UnitAttr:$zero_centered_gamma,
                       OptionalAttr<I64Attr>:$slot);
  let results = (outs TE_QuantizedTensorType:$result, TE_F32Vector:$rsigma,
                      TE_F32Vector:$amax, Optional<TE_F32Vector>:$mu);
  let assemblyFormat = [{
    $input `norm` `` $normalization `(` $gamma (`,` $beta^)? `)`
    (`scale` `(` $scales^ `[` $slot `]` `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def TE_BiasGradOp : TE_PrimitiveOp<"bias_grad"> {
  let summary = "the bias gradient: column sums of dy";
  let description = [{
    `db [N] = sum over rows of dy [..., N]`, summed in fp32. Kernel:
    `te_rt_bias_grad` (a later fusion folds it into the wgrad GEMM's
    epilogue or the dact kernel).
  }];
  let arguments = (ins TE_FloatTensor:$grad);
  let results = (outs TE_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Tensor-parallel collectives (reference/tensor-parallel.md §1-3)
//===----------------------------------------------------------------------===//

/// A collective over the op's tensor-parallel group (`group_size` ranks,
/// the communicator of group `tp` on the runtime context). Every rank runs
/// the same program, so the collectives are issued in the same order on
/// every rank; they have value semantics like the other primitives.
class TE_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : TE_PrimitiveOp<mnemonic, traits> {
  let arguments = (ins TE_FloatTensor:$input, I64Attr:$group_size);
  let results = (outs TE_FloatTensor:$result);
  let assemblyFormat = [{
    $input `group` `(` $group_size `)` attr-dict `:` type($input) `->`
    type($result)
  }];
}

def TE_AllGatherOp : TE_CollectiveOp<"all_gather"> {
  let summary = "concatenate the ranks' tensors along dim 0";
  let description = [{
    `result [size * m, ...]` holds every rank's `input [m, ...]` in rank
    order: the sequence-parallel gather of the norm output before FC1 (and
    of the saved norm output and the output gradient in the backward).
    Kernel: `te_rt_all_gather` (bytes).

    ```mlir
    %g = te.all_gather %ln group(2) : tensor<?x64xbf16> -> tensor<?x64xbf16>
    ```
  }];
}

def TE_ReduceScatterOp : TE_CollectiveOp<"reduce_scatter"> {
  let summary = "sum over the ranks, each keeping its block of dim 0";
  let description = [{
    `result [m / size, ...]` is block `rank` (along dim 0) of the sum over
    the ranks of `input [m, ...]`: the sequence-parallel reduction of a
    row-parallel GEMM's partial sums (FC2 forward, dgrads backward). Kernel:
    `te_rt_reduce_scatter`.
  }];
}

def TE_AllReduceOp : TE_CollectiveOp<"all_reduce"> {
  let summary = "sum (or max) over the ranks";
  let description = [{
    `result` is the sum over the ranks of `input` (same type): the reduction
    of a row-parallel GEMM's partial sums without sequence parallelism, and
    of the partial norm-weight gradients when the backward reduces them.
    With `max`, the maximum: delayed scaling's amaxes, reduced over the
    group before their history update (TE's `reduce_amax`) so that every
    rank keeps the same scales. Kernel: `te_rt_all_reduce`.

    ```mlir
    %a = te.all_reduce %amaxes group(2) max : tensor<6xf32> -> tensor<6xf32>
    ```
  }];
  let arguments = (ins TE_FloatTensor:$input, I64Attr:$group_size,
                       UnitAttr:$max);
  let assemblyFormat = [{
    $input `group` `(` $group_size `)` (`max` $max^)? attr-dict `:`
    type($input) `->` type($result)
  }];
}

def TE_BiasAddOp : TE_PrimitiveOp<"bias_add"> {
  let summary = "add a bias to every row";
  let description = [{
    `result [..., N] = input [..., N] + bias [N]`, in fp32 rounded once: the
    bias of a row-parallel GEMM, added after the reduction of its partial
    sums (TE's `gemm_bias_unfused_add`). Kernel: `te_rt_bias_add`.
  }];
  let arguments = (ins TE_FloatTensor:$input, TE_FloatTensor:$bias);
  let results = (outs TE_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $bias attr-dict `:` functional-type(operands, results)
  }];
}

#endif // TE_DIALECT_TE_IR_TEPRIMITIVEOPS_TD
