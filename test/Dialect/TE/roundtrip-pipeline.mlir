// Round trips of every op the passes produce (the primitives and the
// training ops, not only the module ops of ops.mlir): the IR after each
// stage, per recipe, printed, parsed and printed again (custom and generic
// forms, --verify-roundtrip), and checked to hold the ops it is meant to.
//
// Training ops: te.saved, the three *_bwd ops, te.recompute / te.yield,
// te.amax / te.amax_update (delayed scaling).
// RUN: te-opt %s --te-apply-recipe=recipe=fp8-delayed --te-generate-backward=checkpoint=true --te-thread-recipe-state \
// RUN:   | te-opt --verify-roundtrip | FileCheck %s --check-prefix=TRAIN
// TRAIN-DAG: te.saved
// TRAIN-DAG: te.layernorm_linear_bwd
// TRAIN-DAG: te.layernorm_mlp_bwd
// TRAIN-DAG: te.linear_bwd
// TRAIN-DAG: te.recompute
// TRAIN-DAG: te.yield
// TRAIN-DAG: te.amax_update
//
// Primitives under per-tensor FP8, before and after the fusions.
// RUN: te-opt %s --te-apply-recipe=recipe=fp8-delayed --te-generate-backward --te-thread-recipe-state --te-decompose \
// RUN:   | te-opt --verify-roundtrip | FileCheck %s --check-prefix=FP8
// FP8-DAG: te.norm_fwd
// FP8-DAG: te.norm_bwd
// FP8-DAG: te.quantize
// FP8-DAG: te.gemm tn
// FP8-DAG: te.gemm nn
// FP8-DAG: te.gemm nt
// FP8-DAG: te.act
// FP8-DAG: te.dact
// FP8-DAG: te.bias_grad
// FP8-DAG: te.amax
// RUN: te-opt %s --te-apply-recipe=recipe=fp8-delayed --te-generate-backward --te-thread-recipe-state --te-decompose \
// RUN:   --te-fuse-gemm-epilogues --te-fuse-dbias-dact --te-fuse-norm-quantize --te-fuse-quantize-amax --te-fuse-dbias-quantize --te-fuse-act-quantize \
// RUN:   | te-opt --verify-roundtrip | FileCheck %s --check-prefix=FUSED
// FUSED-DAG: te.norm_quantize
// FUSED-DAG: te.act_quantize
// FUSED-DAG: te.dact_quantize
// FUSED-DAG: te.dbias_quantize
// RUN: te-opt %s --te-apply-recipe=recipe=fp8-current --te-generate-backward --te-decompose \
// RUN:   --te-fuse-gemm-epilogues --te-fuse-dbias-dact --te-fuse-norm-quantize --te-fuse-quantize-amax --te-fuse-dbias-quantize --te-fuse-act-quantize \
// RUN:   | te-opt --verify-roundtrip | FileCheck %s --check-prefix=CURRENT
// CURRENT-DAG: te.norm_quantize
// CURRENT-DAG: te.dbias_dact
// CURRENT-DAG: te.dbias_quantize
//
// bf16 with the GELU GEMM epilogues.
// RUN: te-opt %s --te-generate-backward --te-decompose --te-fuse-gemm-epilogues=act-epilogues=on --te-fuse-dbias-dact \
// RUN:   | te-opt --verify-roundtrip | FileCheck %s --check-prefix=EPI
// EPI-DAG: te.gemm_act
// EPI-DAG: te.gemm_dact
//
// Block-scaled recipes: fp8-block (Hopper), mxfp8 and nvfp4 (Blackwell
// layouts, te.drop_usage for the forward-only copies).
// RUN: te-opt %s --te-apply-recipe=recipe=fp8-block --te-generate-backward --te-decompose | te-opt --verify-roundtrip \
// RUN:   | FileCheck %s --check-prefix=BLOCK
// BLOCK: te.quantize {{.*}}#te.fp8_block
// RUN: te-opt %s --te-apply-recipe=recipe=mxfp8 --te-generate-backward=arch=blackwell --te-decompose=arch=blackwell \
// RUN:   | te-opt --verify-roundtrip | FileCheck %s --check-prefix=MX
// MX: te.quantize {{.*}}#te.mxfp8
// MX: te.drop_usage
// RUN: te-opt %s "--te-apply-recipe=recipe='#te.nvfp4<rht = false>'" --te-generate-backward=arch=blackwell --te-decompose=arch=blackwell \
// RUN:   | te-opt --verify-roundtrip | FileCheck %s --check-prefix=NV
// NV: te.quantize {{.*}}#te.nvfp4

func.func @block(%x: tensor<128x256xbf16>, %attn: tensor<128x256xbf16>,
                 %ln1_g: tensor<256xbf16>, %ln1_b: tensor<256xbf16>,
                 %qkv_w: tensor<768x256xbf16>, %qkv_b: tensor<768xbf16>,
                 %ln2_g: tensor<256xbf16>, %ln2_b: tensor<256xbf16>,
                 %fc1_w: tensor<1024x256xbf16>, %fc1_b: tensor<1024xbf16>,
                 %fc2_w: tensor<256x1024xbf16>, %fc2_b: tensor<256xbf16>,
                 %proj_w: tensor<256x256xbf16>)
    -> (tensor<128x768xbf16>, tensor<128x256xbf16>) {
  %qkv = te.layernorm_linear %x norm layer_norm(%ln1_g, %ln1_b) weight(%qkv_w, %qkv_b)
      : (tensor<128x256xbf16>, tensor<256xbf16>, tensor<256xbf16>, tensor<768x256xbf16>, tensor<768xbf16>) -> tensor<128x768xbf16>
  %proj = te.linear %attn weight(%proj_w) : (tensor<128x256xbf16>, tensor<256x256xbf16>) -> tensor<128x256xbf16>
  %h = arith.addf %x, %proj : tensor<128x256xbf16>
  %mlp = te.layernorm_mlp %h norm layer_norm(%ln2_g, %ln2_b) fc1(%fc1_w, %fc1_b) act gelu fc2(%fc2_w, %fc2_b)
      : (tensor<128x256xbf16>, tensor<256xbf16>, tensor<256xbf16>, tensor<1024x256xbf16>, tensor<1024xbf16>, tensor<256x1024xbf16>, tensor<256xbf16>) -> tensor<128x256xbf16>
  %out = arith.addf %h, %mlp : tensor<128x256xbf16>
  return %qkv, %out : tensor<128x768xbf16>, tensor<128x256xbf16>
}
