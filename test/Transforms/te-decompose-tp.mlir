// RUN: te-opt %s --split-input-file --te-tensor-parallel="size=2 sequence-parallel" --te-generate-backward --te-decompose | FileCheck %s --check-prefix=SP
// RUN: te-opt %s --split-input-file --te-tensor-parallel="size=4" --te-generate-backward --te-decompose | FileCheck %s --check-prefix=TP
// RUN: te-opt %s --split-input-file --te-tensor-parallel="size=2 sequence-parallel reduce-param-grads" --te-generate-backward --te-decompose | FileCheck %s --check-prefix=RED
// RUN: te-opt %s --split-input-file --te-tensor-parallel="size=2 sequence-parallel" --te-generate-backward="checkpoint" --te-decompose | FileCheck %s --check-prefix=CKPT
// RUN: te-opt %s --split-input-file --te-apply-recipe="recipe=fp8-current" --te-tensor-parallel="size=2 sequence-parallel" --te-generate-backward --te-decompose | FileCheck %s --check-prefix=FP8
// RUN: te-opt %s --split-input-file --te-apply-recipe="recipe=fp8-delayed" --te-tensor-parallel="size=2 sequence-parallel" --te-generate-backward --te-thread-recipe-state --te-decompose | FileCheck %s --check-prefix=DELAYED
// te-decompose places TransformerEngine's collectives
// (reference/tensor-parallel.md §1-2) for the ops' #te.tp.

// A LayerNormMLP: FC1 column-parallel on the gathered norm output, FC2
// row-parallel with its bias added after the reduction.
// SP-LABEL: func.func @main_fwd(
// SP: %[[LN:.*]], %{{.*}}, %{{.*}} = te.norm_fwd %arg0
// SP: %[[G:.*]] = te.all_gather %[[LN]] group(2) : tensor<?x64xbf16> -> tensor<?x64xbf16>
// SP: %[[FC1:.*]] = te.gemm tn %[[G]], %arg3 bias(%arg4)
// SP: %[[ACT:.*]] = te.act gelu %[[FC1]]
// SP: %[[FC2:.*]] = te.gemm tn %[[ACT]], %arg5 :
// SP: %[[RS:.*]] = te.reduce_scatter %[[FC2]] group(2)
// SP: %[[Y:.*]] = te.bias_add %[[RS]], %arg6
// The rank's rows of the norm output are saved, FC1's output gathered.
// SP: return %[[Y]], %[[LN]], %[[FC1]], %[[ACT]],
// The backward: FC2's bias gradient from the rank's rows (partial), dy
// gathered for FC2's dgrad and wgrad, FC1's dgrad reduce-scattered, the
// saved norm output gathered again for FC1's wgrad.
// SP-LABEL: func.func @main_bwd(
// SP-SAME: %arg2: tensor<?x64xbf16> {te.saved = "layernorm_mlp_0.ln_out"}
// SP-SAME: %arg9: tensor<?x64xbf16> {te.grad_of = "output:0", te.tp_shard = "rows"}
// SP-SAME: tensor<64xbf16> {te.grad_of = "input:1", te.tp_shard = "partial"}
// SP-SAME: tensor<64xbf16> {te.grad_of = "input:6", te.tp_shard = "partial"}
// SP: %[[DY:.*]] = te.all_gather %arg9 group(2)
// SP: %[[LNG:.*]] = te.all_gather %arg2 group(2)
// SP: %[[DW2:.*]] = te.gemm nt %[[DY]], %arg5
// SP: %[[DACT:.*]] = te.gemm nn %[[DY]], %arg6
// SP: %[[DB2:.*]] = te.bias_grad %arg9
// SP: %[[DFC1:.*]] = te.dact gelu %[[DACT]], %arg4
// SP: %[[DB1:.*]] = te.bias_grad %[[DFC1]]
// SP: %[[DW1:.*]] = te.gemm nt %[[DFC1]], %[[LNG]]
// SP: %[[DLN:.*]] = te.gemm nn %[[DFC1]], %arg3
// SP: %[[DLNR:.*]] = te.reduce_scatter %[[DLN]] group(2)
// SP: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = te.norm_bwd %[[DLNR]] input(%arg0)
// SP: return %[[DX]], %[[DG]], %[[DB]], %[[DW1]], %[[DB1]], %[[DW2]], %[[DB2]]

// Without sequence parallelism: FC2's partial sums and FC1's dgrad are
// all-reduced, nothing is gathered.
// TP-LABEL: func.func @main_fwd(
// TP-NOT: te.all_gather
// TP: %[[FC2:.*]] = te.gemm tn %{{.*}}, %arg5 :
// TP: %[[AR:.*]] = te.all_reduce %[[FC2]] group(4) : tensor<?x64xbf16> -> tensor<?x64xbf16>
// TP: te.bias_add %[[AR]], %arg6
// TP-LABEL: func.func @main_bwd(
// TP-NOT: te.all_gather
// TP: %[[DLN:.*]] = te.gemm nn %{{.*}}, %arg3
// TP: %[[R:.*]] = te.all_reduce %[[DLN]] group(4)
// TP: te.norm_bwd %[[R]]

// reduce-param-grads: the partial gradients are all-reduced in the entry.
// RED-LABEL: func.func @main_bwd(
// RED-SAME: tensor<64xbf16> {te.grad_of = "input:1", te.tp_shard = "replicated"}
// RED: %[[DB2:.*]] = te.bias_grad %arg9
// RED: %[[DB2R:.*]] = te.all_reduce %[[DB2]] group(2)
// RED: %{{.*}}, %[[DG:.*]], %[[DB:.*]] = te.norm_bwd
// RED: %[[DGR:.*]] = te.all_reduce %[[DG]] group(2)
// RED: %[[DBR:.*]] = te.all_reduce %[[DB]] group(2)
// RED: return %{{.*}}, %[[DGR]], %[[DBR]], %{{.*}}, %{{.*}}, %{{.*}}, %[[DB2R]]

// Checkpointed: the recompute gathers the norm output again and FC2 (with
// its reduce-scatter) is not recomputed.
// CKPT-LABEL: func.func @main_bwd(
// CKPT: %[[LN:.*]], %{{.*}}, %{{.*}} = te.norm_fwd %arg0
// CKPT: %[[G:.*]] = te.all_gather %[[LN]] group(2)
// CKPT: te.gemm tn %[[G]], %arg3 bias(%arg4)
// CKPT-NOT: te.bias_add
// CKPT: te.all_gather %arg{{[0-9]+}} group(2)
// CKPT: te.reduce_scatter

// fp8-current: the norm output and the output gradient are quantized after
// their gathers (the amax of the gathered rows is the group's, as TE
// reduces it before the scale); the quantized norm output is saved
// gathered (its columnwise copy) and not gathered again.
// FP8-LABEL: func.func @main_fwd(
// FP8: %[[LN:.*]], %{{.*}}, %{{.*}} = te.norm_fwd %arg0
// FP8: %[[G:.*]] = te.all_gather %[[LN]] group(2) : tensor<?x64xbf16> -> tensor<?x64xbf16>
// FP8: %[[Q:.*]], %{{.*}} = te.quantize %[[G]] : tensor<?x64xbf16> -> !te.qtensor<?x64xe4m3, #te.fp8_current<>, both, hopper>
// FP8: te.gemm tn %[[Q]], %{{.*}} bias(%arg4)
// FP8-LABEL: func.func @main_bwd(
// FP8-SAME: %arg2: !te.qtensor<?x64xe4m3, #te.fp8_current<>, columnwise, hopper> {te.saved = "layernorm_mlp_0.ln_out"}
// FP8: %[[DY:.*]] = te.all_gather %arg{{[0-9]+}} group(2)
// FP8: te.quantize %[[DY]] : tensor<?x64xbf16> -> !te.qtensor<?x64xe5m2, #te.fp8_current<>, both, hopper>
// FP8: te.gemm nt %{{.*}}, %arg2 :
// FP8: te.reduce_scatter

// fp8-delayed: the amaxes recorded in a step are the group's maximum
// before their history update (TE's reduce_amax), forward and backward.
// DELAYED-LABEL: func.func @main_fwd(
// DELAYED: %[[A:.*]] = tensor.concat dim(0)
// DELAYED: %[[R:.*]] = te.all_reduce %[[A]] group(2) max : tensor<6xf32> -> tensor<6xf32>
// DELAYED: te.amax_update %{{.*}}, %{{.*}}, %[[R]]
// DELAYED-LABEL: func.func @main_bwd(
// DELAYED: %[[B:.*]] = tensor.concat dim(0)
// DELAYED: %[[S:.*]] = te.all_reduce %[[B]] group(2) max : tensor<4xf32> -> tensor<4xf32>
// DELAYED: te.amax_update %{{.*}}, %{{.*}}, %[[S]] recipe(#te.fp8_delayed<>) backward
func.func @main(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %beta: tensor<64xbf16>,
                %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>,
                %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %beta) fc1(%w1, %b1) act gelu fc2(%w2, %b2)
      : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>,
         tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// A LayerNormLinear: the norm output gathered before the GEMM, no forward
// collective after it; the dgrad reduce-scattered, the saved norm output
// gathered for the wgrad.
// SP-LABEL: func.func @ln_linear_fwd(
// SP: %[[LN:.*]], %{{.*}} = te.norm_fwd %arg0
// SP: %[[G:.*]] = te.all_gather %[[LN]] group(2) : tensor<8x64xbf16> -> tensor<16x64xbf16>
// SP: %[[Y:.*]] = te.gemm tn %[[G]], %arg2 bias(%arg3) : (tensor<16x64xbf16>, tensor<48x64xbf16>, tensor<48xbf16>) -> tensor<16x48xbf16>
// SP-NOT: te.reduce_scatter
// SP: return %[[Y]], %[[LN]]
// SP-LABEL: func.func @ln_linear_bwd(
// SP: %[[LNG:.*]] = te.all_gather %arg3 group(2) : tensor<8x64xbf16> -> tensor<16x64xbf16>
// SP: te.gemm nt %arg5, %[[LNG]]
// SP: %[[DLN:.*]] = te.gemm nn %arg5, %arg2 : (tensor<16x48xbf16>, tensor<48x64xbf16>) -> tensor<16x64xbf16>
// SP: %[[RS:.*]] = te.reduce_scatter %[[DLN]] group(2) : tensor<16x64xbf16> -> tensor<8x64xbf16>
// SP: te.norm_bwd %[[RS]]
func.func @ln_linear(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %w: tensor<96x64xbf16>, %b: tensor<96xbf16>) -> tensor<16x96xbf16> {
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w, %b) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<96x64xbf16>, tensor<96xbf16>) -> tensor<16x96xbf16>
  return %y : tensor<16x96xbf16>
}
