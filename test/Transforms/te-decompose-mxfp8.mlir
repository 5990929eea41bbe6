// RUN: te-opt %s --te-generate-backward="arch=blackwell" --te-thread-recipe-state --te-decompose="arch=blackwell" | FileCheck %s
// RUN: te-opt %s --te-generate-backward="arch=blackwell" --te-thread-recipe-state --te-decompose="arch=blackwell" --te-lower-to-runtime --cse | FileCheck %s --check-prefix=LLVM
// RUN: not te-opt %s --te-thread-recipe-state --te-decompose 2>&1 | FileCheck %s --check-prefix=HOPPER
// RUN: not te-opt %s --te-generate-backward --te-thread-recipe-state --te-decompose="arch=blackwell" 2>&1 | FileCheck %s --check-prefix=SAVES
// RUN: not te-opt %s --te-decompose="arch=ampere" 2>&1 | FileCheck %s --check-prefix=ARCH
//
// te-decompose under MXFP8 (reference §4.3), a Blackwell recipe: E4M3
// everywhere, one E8M0 scale per 32 elements along the contraction dim, the
// columnwise copy a separate quantization in the tensor's own layout (not
// transposed), scales kept swizzled for the GEMM; stateless (no amax).
// Lowered: te_rt_quantize_mxfp8 / te_rt_gemm_mxfp8 with per-operand
// columnwise flags (TN: rowwise x rowwise; NN: dy rowwise x w columnwise;
// NT: dy columnwise x x columnwise).

// CHECK-LABEL: func.func @lnl_fwd(
// CHECK-SAME:  !te.qtensor<96x128xe4m3, #te.mxfp8, both, blackwell, swizzled> {te.saved = "layernorm_linear_0.weight"}
// CHECK-SAME:  !te.qtensor<64x128xe4m3, #te.mxfp8, columnwise, blackwell, swizzled> {te.saved = "layernorm_linear_0.ln_out"}
// CHECK:       %[[ZQ:.*]] = te.quantize %{{.*}} : tensor<64x128xbf16> -> !te.qtensor<64x128xe4m3, #te.mxfp8, both, blackwell, swizzled>{{$}}
// CHECK-NEXT:  te.drop_usage %[[ZQ]]
// CHECK-NEXT:  %[[WQ:.*]] = te.quantize %arg3 {weight} : tensor<96x128xbf16> -> !te.qtensor<96x128xe4m3, #te.mxfp8, both, blackwell, swizzled>{{$}}
// CHECK-NEXT:  te.gemm tn %[[ZQ]], %[[WQ]] bias(%arg4)
// CHECK-LABEL: func.func @lnl_bwd(
// CHECK-NOT:   te.amax
// CHECK:       %[[DYQ:.*]] = te.quantize %arg6 : tensor<64x96xbf16> -> !te.qtensor<64x96xe4m3, #te.mxfp8, both, blackwell, swizzled>{{$}}
// CHECK-NEXT:  te.gemm nn %[[DYQ]], %arg2
// CHECK-NEXT:  te.bias_grad %arg6
// CHECK-NEXT:  te.norm_bwd
// CHECK-NEXT:  te.gemm nt %[[DYQ]], %arg3

// (--cse leaves one constant per value: 0 and 1 as i32.)
// LLVM-LABEL: llvm.func @te_entry_lnl_fwd(
// LLVM-DAG:   %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// LLVM-DAG:   %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// The norm output: E4M3 (format 0), swizzled, both copies.
// LLVM:       llvm.call @te_rt_quantize_mxfp8(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %[[ONE]],
// LLVM:       llvm.call @te_rt_quantize_mxfp8(
// fprop: rowwise x rowwise, swizzled, no accumulation.
// LLVM:       llvm.call @te_rt_gemm_mxfp8(%{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %[[ZERO]], %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %[[ONE]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]])
// LLVM-LABEL: llvm.func @te_entry_lnl_bwd(
// LLVM-DAG:   %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// LLVM-DAG:   %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// LLVM:       llvm.call @te_rt_quantize_mxfp8(
// dgrad: dy rowwise, the weight's columnwise copy.
// LLVM:       llvm.call @te_rt_gemm_mxfp8(%{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %[[ZERO]], %{{[^,]*}}, %{{[^,]*}}, %[[ONE]], %[[ONE]],
// wgrad (last, after the norm's backward): both columnwise.
// LLVM:       llvm.call @te_rt_norm_bwd(
// LLVM:       llvm.call @te_rt_gemm_mxfp8(%{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %{{[^,]*}}, %{{[^,]*}}, %[[ONE]], %[[ZERO]], %{{[^,]*}}, %{{[^,]*}}, %[[ONE]], %[[ONE]],
// The module info: columnwise data [96, 128] (not transposed) and its
// scales [roundup(96/32, 4), roundup(128, 128)], then rowwise data and
// scales [roundup(96, 128), roundup(128/32, 4)].
// LLVM:       @te_module_info.json(
// LLVM-SAME:  \22inner\22:[{\22dtype\22:\22uint8\22,\22name\22:\22columnwise_data\22,\22shape\22:[96,128]},{\22dtype\22:\22uint8\22,\22name\22:\22columnwise_scale_inv\22,\22shape\22:[4,128]},{\22dtype\22:\22uint8\22,\22name\22:\22rowwise_data\22,\22shape\22:[96,128]},{\22dtype\22:\22uint8\22,\22name\22:\22rowwise_scale_inv\22,\22shape\22:[128,4]}],\22shape\22:[96,128],\22te.saved\22:\22layernorm_linear_0.weight\22

// The default (Hopper) layout cannot hold MXFP8, even for an inference
// entry alone; saves made in Hopper's layout cannot either.
// HOPPER: error: te-decompose: mxfp8 is lowered for Blackwell (its GEMMs do not run on Hopper), not for the hopper layout asked for (te-compile --arch=sm_100a, te-opt arch=blackwell)
// SAVES: error: te-decompose: mxfp8 is lowered for Blackwell (its GEMMs do not run on Hopper); '!te.qtensor<{{.*}}, #te.mxfp8, {{.*}}, hopper, swizzled>' has another layout (te-compile --arch=sm_100a)
// ARCH: error: te-decompose: unknown arch 'ampere' (hopper or blackwell)
func.func @lnl(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %w: tensor<96x128xbf16>, %bias: tensor<96xbf16>) -> tensor<64x96xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) recipe(#te.mxfp8) : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<96x128xbf16>, tensor<96xbf16>) -> tensor<64x96xbf16>
  return %y : tensor<64x96xbf16>
}
