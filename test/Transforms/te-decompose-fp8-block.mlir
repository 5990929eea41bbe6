// RUN: te-opt %s --te-generate-backward --te-thread-recipe-state --te-decompose --split-input-file | FileCheck %s
// RUN: te-opt %s --te-generate-backward --te-thread-recipe-state --te-decompose --te-lower-to-runtime --cse --split-input-file | FileCheck %s --check-prefix=LLVM
// RUN: not te-opt %s --te-thread-recipe-state --te-decompose="arch=blackwell" --split-input-file 2>&1 | FileCheck %s --check-prefix=BW
// BW: error: te-decompose: fp8-block is lowered for Hopper's TN-only GEMMs (a transposed copy per columnwise operand), not for the blackwell layout asked for (te-compile --arch=sm_90a, te-opt arch=hopper)
//
// te-decompose under Float8 block scaling (reference §4.4): E4M3 for every
// tensor (gradients too), 1x128 blocks for activations and gradients,
// 128x128 (`block_2d`) for weights by default, no recipe state and no amax;
// the GEMMs read the usages TE's general_gemm reads, as for per-tensor FP8.
// Lowered: te_rt_quantize_fp8_block / te_rt_gemm_fp8_block, a qtensor is
// one buffer: columnwise data and scales, then rowwise data and scales.

// CHECK-LABEL: func.func @lnl_fwd(
// CHECK-SAME:  !te.qtensor<256x128xe4m3, #te.fp8_block<>, both, hopper, block_2d> {te.saved = "layernorm_linear_0.weight"}
// CHECK-SAME:  !te.qtensor<128x128xe4m3, #te.fp8_block<>, columnwise, hopper> {te.saved = "layernorm_linear_0.ln_out"}
// CHECK:       %[[Z:.*]], %{{.*}}, %{{.*}} = te.norm_fwd
// CHECK-NEXT:  %[[ZQ:.*]] = te.quantize %[[Z]] : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.fp8_block<>, both, hopper>{{$}}
// CHECK-NEXT:  %[[SAVE:.*]] = te.drop_usage %[[ZQ]] : {{.*}} -> !te.qtensor<128x128xe4m3, #te.fp8_block<>, columnwise, hopper>
// CHECK-NEXT:  %[[WQ:.*]] = te.quantize %arg3 {weight} : tensor<256x128xbf16> -> !te.qtensor<256x128xe4m3, #te.fp8_block<>, both, hopper, block_2d>{{$}}
// Block scaling always splits the accumulation (no fast_accumulate).
// CHECK-NEXT:  %[[Y:.*]] = te.gemm tn %[[ZQ]], %[[WQ]] bias(%arg4) : (
// CHECK-NEXT:  return %[[Y]], %[[WQ]], %[[SAVE]],
// The backward: one E4M3 quantization of dy (both copies), dgrad NN with
// the weight's columnwise copy, the bias gradient from the high-precision
// dy, the norm's backward, then (last: the saved norm output is quantized)
// the wgrad NT from the saved columnwise norm output. No te.amax.
// CHECK-LABEL: func.func @lnl_bwd(
// CHECK-NOT:   te.amax
// CHECK:       %[[DYQ:.*]] = te.quantize %arg6 : tensor<128x256xbf16> -> !te.qtensor<128x256xe4m3, #te.fp8_block<>, both, hopper>{{$}}
// CHECK-NEXT:  %[[DX:.*]] = te.gemm nn %[[DYQ]], %arg2
// CHECK-NEXT:  te.bias_grad %arg6
// CHECK-NEXT:  te.norm_bwd %[[DX]]
// CHECK-NEXT:  %[[DW:.*]] = te.gemm nt %[[DYQ]], %arg3
// CHECK-NOT:   te.amax

// LLVM-LABEL: llvm.func @te_entry_lnl_fwd(
// LLVM:       llvm.call @te_rt_norm_fwd(
// LLVM:       llvm.call @te_rt_quantize_fp8_block(
// LLVM:       llvm.call @te_rt_quantize_fp8_block(
// LLVM:       llvm.call @te_rt_gemm_fp8_block(
// LLVM-NOT:   llvm.call @te_rt_quantize
// LLVM-LABEL: llvm.func @te_entry_lnl_bwd(
// LLVM:       llvm.call @te_rt_quantize_fp8_block(
// LLVM-NOT:   llvm.call @te_rt_quantize
// LLVM:       llvm.call @te_rt_gemm_fp8_block(
// LLVM:       llvm.call @te_rt_bias_grad(
// LLVM:       llvm.call @te_rt_norm_bwd(
// LLVM:       llvm.call @te_rt_gemm_fp8_block(
// The module info lists the inner tensors in buffer order with TE's
// shapes: the 2-D weight [256, 128] has columnwise data [128, 256] and
// scales [ceil(128/128), roundup(ceil(256/128), 4)] = [1, 4], rowwise
// [256, 128] and [2, 4]; the saved columnwise norm output [128, 128] keeps
// data [128, 128] and 1x128 scales [ceil(128/128), roundup(128, 4)].
// LLVM:       @te_module_info.json(
// LLVM-SAME:  \22inner\22:[{\22dtype\22:\22uint8\22,\22name\22:\22columnwise_data\22,\22shape\22:[128,256]},{\22dtype\22:\22float32\22,\22name\22:\22columnwise_scale_inv\22,\22shape\22:[1,4]},{\22dtype\22:\22uint8\22,\22name\22:\22rowwise_data\22,\22shape\22:[256,128]},{\22dtype\22:\22float32\22,\22name\22:\22rowwise_scale_inv\22,\22shape\22:[2,4]}],\22shape\22:[256,128],\22te.saved\22:\22layernorm_linear_0.weight\22,\22type\22:\22!te.qtensor<256x128xe4m3, #te.fp8_block<>, both, hopper, block_2d>\22}
// LLVM-SAME:  \22inner\22:[{\22dtype\22:\22uint8\22,\22name\22:\22columnwise_data\22,\22shape\22:[128,128]},{\22dtype\22:\22float32\22,\22name\22:\22columnwise_scale_inv\22,\22shape\22:[1,128]}],\22shape\22:[128,128],\22te.saved\22:\22layernorm_linear_0.ln_out\22
func.func @lnl(%x: tensor<128x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %w: tensor<256x128xbf16>, %bias: tensor<256xbf16>) -> tensor<128x256xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) recipe(#te.fp8_block<>) : (tensor<128x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<256xbf16>) -> tensor<128x256xbf16>
  return %y : tensor<128x256xbf16>
}

// -----

// Non-default block dims: 128x128 activations, 1x128 weights and
// gradients; fp32 scales. The inference entry quantizes rowwise only.
// CHECK-LABEL: func.func @lin(
// CHECK:       te.quantize %arg0 : tensor<256x128xf32> -> !te.qtensor<256x128xe4m3, #te.fp8_block<x_block_dim = 2, w_block_dim = 1, fp32_scales = true>, rowwise, hopper, block_2d>{{$}}
// CHECK-NEXT:  te.quantize %arg1 {weight} : tensor<128x128xf32> -> !te.qtensor<128x128xe4m3, #te.fp8_block<x_block_dim = 2, w_block_dim = 1, fp32_scales = true>, rowwise, hopper>{{$}}
// CHECK-LABEL: func.func @lin_bwd(
// CHECK:       te.quantize %{{.*}} : tensor<256x128xf32> -> !te.qtensor<256x128xe4m3, #te.fp8_block<x_block_dim = 2, w_block_dim = 1, fp32_scales = true>, both, hopper>{{$}}
// LLVM-LABEL: llvm.func @te_entry_lin(
// The input: block_2d 1, fp32 scales (pow2_scale 0), rowwise copy only
// (null columnwise pointers). (--cse leaves one constant of each value.)
// LLVM-DAG:   %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// LLVM-DAG:   %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// LLVM-DAG:   %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// LLVM:       llvm.call @te_rt_quantize_fp8_block(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ONE]], %[[ZERO]], %{{[^,]*}}, %{{[^,]*}}, %[[NULL]], %[[NULL]])
// The weight: 1x128 blocks, rowwise.
// LLVM:       llvm.call @te_rt_quantize_fp8_block(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %[[ZERO]], %{{[^,]*}}, %{{[^,]*}}, %[[NULL]], %[[NULL]])
// The GEMM: a (x) 2-D, b (w) 1-D, no bias, no accumulation.
// LLVM:       llvm.call @te_rt_gemm_fp8_block(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ONE]], %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %[[NULL]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]])
func.func @lin(%x: tensor<256x128xf32>, %w: tensor<128x128xf32>) -> tensor<256x128xf32> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_block<x_block_dim = 2, w_block_dim = 1, fp32_scales = true>) : (tensor<256x128xf32>, tensor<128x128xf32>) -> tensor<256x128xf32>
  return %y : tensor<256x128xf32>
}
