// RUN: te-opt %s --te-generate-backward="arch=blackwell" --te-thread-recipe-state --te-decompose="arch=blackwell" | FileCheck %s
// RUN: te-opt %s --te-generate-backward="arch=blackwell" --te-thread-recipe-state --te-decompose="arch=blackwell" --te-lower-to-runtime --cse | FileCheck %s --check-prefix=LLVM
// RUN: not te-opt %s --te-thread-recipe-state --te-decompose 2>&1 | FileCheck %s --check-prefix=HOPPER
//
// te-decompose under NVFP4 (reference §4.5), a Blackwell recipe with TE's
// defaults: E2M1 everywhere with E4M3 block scales (swizzled for the GEMM)
// and an fp32 global amax per copy inside the qtensor; weights in 16x16
// tiles (block_2d), the Hadamard transform on the columnwise (wgrad) copies
// of activations and gradients (rht), stochastic rounding of gradients,
// each SR quantization numbered (seed) in program order. Lowered:
// te_rt_quantize_nvfp4 (block_2d, rht, stochastic_rounding, seed, swizzled)
// and te_rt_gemm_nvfp4 in the TN form with each operand's global amax.

// Inference: rowwise copies only, so no transform.
// CHECK-LABEL: func.func @mlp(
// CHECK:       te.quantize %{{.*}} : tensor<64x128xbf16> -> !te.qtensor<64x128xe2m1, #te.nvfp4<>, rowwise, blackwell, swizzled>{{$}}
// CHECK-NEXT:  te.quantize %arg3 {weight} : tensor<256x128xbf16> -> !te.qtensor<256x128xe2m1, #te.nvfp4<>, rowwise, blackwell, block_2d, swizzled>{{$}}

// Forward (training): the norm output and the activation keep a transformed
// columnwise copy for the wgrad GEMMs (the norm output's saved alone); the
// weights are 16x16-tiled.
// CHECK-LABEL: func.func @mlp_fwd(
// CHECK:       %[[ZQ:.*]] = te.quantize %{{.*}} : tensor<64x128xbf16> -> !te.qtensor<64x128xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>{{$}}
// CHECK-NEXT:  te.drop_usage %[[ZQ]] : {{.*}} -> !te.qtensor<64x128xe2m1, #te.nvfp4<>, columnwise, blackwell, swizzled, rht>{{$}}
// CHECK-NEXT:  %[[W1:.*]] = te.quantize %arg3 {weight} : tensor<256x128xbf16> -> !te.qtensor<256x128xe2m1, #te.nvfp4<>, both, blackwell, block_2d, swizzled>{{$}}
// CHECK-NEXT:  %[[FC1:.*]] = te.gemm tn %[[ZQ]], %[[W1]] bias(%arg4)
// CHECK-NEXT:  %[[A:.*]] = te.act gelu %[[FC1]]
// CHECK-NEXT:  %[[AQ:.*]] = te.quantize %[[A]] : tensor<64x256xbf16> -> !te.qtensor<64x256xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>{{$}}
// CHECK-NEXT:  %[[W2:.*]] = te.quantize %arg5 {weight} : tensor<128x256xbf16> -> !te.qtensor<128x256xe2m1, #te.nvfp4<>, both, blackwell, block_2d, swizzled>{{$}}
// CHECK-NEXT:  te.gemm tn %[[AQ]], %[[W2]] bias(%arg6)
// Backward: dy, then dfc1, rounded stochastically (seeds 0 and 1); dgrad
// reads the untransformed weight copies, wgrad two transformed copies.
// CHECK-LABEL: func.func @mlp_bwd(
// CHECK-NOT:   te.amax
// CHECK:       %[[DY:.*]] = te.quantize %arg9 {seed = 0 : i64, stochastic_rounding} : tensor<64x128xbf16> -> !te.qtensor<64x128xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>{{$}}
// CHECK-NEXT:  te.gemm nt %[[DY]], %arg5
// CHECK-NEXT:  te.gemm nn %[[DY]], %arg6
// CHECK:       %[[DFC1:.*]] = te.quantize %{{.*}} {seed = 1 : i64, stochastic_rounding} : tensor<64x256xbf16> -> !te.qtensor<64x256xe2m1, #te.nvfp4<>, both, blackwell, swizzled, rht>{{$}}
// CHECK-NEXT:  te.gemm nt %[[DFC1]], %arg2
// CHECK-NEXT:  te.gemm nn %[[DFC1]], %arg3

// (--cse leaves one constant per value.)
// te_rt_quantize_nvfp4(ctx, dtype, x, rows, cols, block_2d, rht, sr, seed,
// swizzled, data, scale_inv, amax, col_data, col_scale_inv, col_amax)
// LLVM-LABEL: llvm.func @te_entry_mlp_fwd(
// LLVM-DAG:   %[[S0:.*]] = llvm.mlir.constant(0 : i64) : i64
// LLVM-DAG:   %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// LLVM-DAG:   %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// The norm output: 1-D, transformed columnwise copy, nearest rounding.
// LLVM:       llvm.call @te_rt_quantize_nvfp4(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %[[ONE]], %[[ZERO]], %[[S0]], %[[ONE]],
// The weight: 16x16 tiles, no transform.
// LLVM:       llvm.call @te_rt_quantize_nvfp4(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ONE]], %[[ZERO]], %[[ZERO]], %[[S0]], %[[ONE]],
// fprop: the two rowwise copies with their amaxes, swizzled, the bias.
// LLVM:       llvm.call @te_rt_gemm_nvfp4(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ONE]], %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]])
// LLVM-LABEL: llvm.func @te_entry_mlp_bwd(
// LLVM-DAG:   %[[S0:.*]] = llvm.mlir.constant(0 : i64) : i64
// LLVM-DAG:   %[[S1:.*]] = llvm.mlir.constant(1 : i64) : i64
// LLVM-DAG:   %[[ONE:.*]] = llvm.mlir.constant(1 : i32) : i32
// LLVM-DAG:   %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// LLVM:       llvm.call @te_rt_quantize_nvfp4(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %[[ONE]], %[[ONE]], %[[S0]], %[[ONE]],
// LLVM:       llvm.call @te_rt_gemm_nvfp4(
// LLVM:       llvm.call @te_rt_gemm_nvfp4(
// LLVM:       llvm.call @te_rt_quantize_nvfp4(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ZERO]], %[[ONE]], %[[ONE]], %[[S1]], %[[ONE]],
// The module info of the saved norm output [64, 128]: its columnwise copy
// alone (data [K, M/2], scales [roundup(K,128), roundup(M/16,4)], its
// amax); of the saved act_out [64, 256]: the columnwise copy first, then
// the rowwise one (data [M, K/2], scales [roundup(M,128), roundup(K/16,4)],
// its amax).
// LLVM:       @te_module_info.json(
// LLVM-SAME:  \22inner\22:[{\22dtype\22:\22uint8\22,\22name\22:\22columnwise_data\22,\22shape\22:[128,32]},{\22dtype\22:\22uint8\22,\22name\22:\22columnwise_scale_inv\22,\22shape\22:[128,4]},{\22dtype\22:\22float32\22,\22name\22:\22amax_columnwise\22,\22shape\22:[1]}],\22shape\22:[64,128],\22te.saved\22:\22layernorm_mlp_0.ln_out\22
// LLVM-SAME:  \22inner\22:[{\22dtype\22:\22uint8\22,\22name\22:\22columnwise_data\22,\22shape\22:[256,32]},{\22dtype\22:\22uint8\22,\22name\22:\22columnwise_scale_inv\22,\22shape\22:[256,4]},{\22dtype\22:\22float32\22,\22name\22:\22amax_columnwise\22,\22shape\22:[1]},{\22dtype\22:\22uint8\22,\22name\22:\22rowwise_data\22,\22shape\22:[64,128]},{\22dtype\22:\22uint8\22,\22name\22:\22rowwise_scale_inv\22,\22shape\22:[128,16]},{\22dtype\22:\22float32\22,\22name\22:\22amax_rowwise\22,\22shape\22:[1]}],\22shape\22:[64,256],

// NVFP4's layout is Blackwell's: asking for Hopper's is an error.
// HOPPER: error: te-decompose: nvfp4 is lowered for Blackwell (its GEMMs do not run on Hopper), not for the hopper layout asked for (te-compile --arch=sm_100a, te-opt arch=blackwell)
func.func @mlp(%x: tensor<64x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %w1: tensor<256x128xbf16>, %b1: tensor<256xbf16>, %w2: tensor<128x256xbf16>, %b2: tensor<128xbf16>) -> tensor<64x128xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) recipe(#te.nvfp4<>) : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<256xbf16>, tensor<128x256xbf16>, tensor<128xbf16>) -> tensor<64x128xbf16>
  return %y : tensor<64x128xbf16>
}
