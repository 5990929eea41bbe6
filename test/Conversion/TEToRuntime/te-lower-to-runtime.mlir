// RUN: te-opt %s --te-decompose --te-lower-to-runtime --split-input-file --verify-diagnostics | FileCheck %s
//
// te-lower-to-runtime: an LLVM-dialect entry point per function calling the
// te_rt_* ABI in program order, every status checked, one arena planned by
// liveness, the returned value written in place, and the module info JSON.

// A dynamic-token RMSNorm + GELU MLP with a residual add. Five
// intermediates (norm output, rsigma, FC1 output, activation, FC2 output)
// share 2 arena slots: rsigma is dead at once, the norm output dies after
// FC1, FC1's output after the activation. The sum is written straight into
// result 0. Sizes use d0, loaded from dims[0].
// CHECK-LABEL: llvm.func @te_entry_mlp(
// CHECK-SAME: %[[CTX:.*]]: !llvm.ptr, %[[ARGS:.*]]: !llvm.ptr, %[[RES:.*]]: !llvm.ptr, %[[DIMS:.*]]: !llvm.ptr) -> i32
// CHECK:      %[[D0P:.*]] = llvm.getelementptr %[[DIMS]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT: %[[D0:.*]] = llvm.load %[[D0P]] : !llvm.ptr -> i64
// CHECK:      %[[OUTP:.*]] = llvm.getelementptr %[[RES]][0]
// CHECK-NEXT: %[[OUT:.*]] = llvm.load %[[OUTP]] : !llvm.ptr -> !llvm.ptr
// CHECK:      %[[ARENA:.*]] = llvm.call @te_rt_arena_acquire(%[[CTX]], %{{.*}}) : (!llvm.ptr, i64) -> !llvm.ptr
// CHECK:      llvm.cond_br %{{.*}}, ^[[FAIL:bb[0-9]+]](%{{.*}} : i32), ^bb3
// CHECK:      %[[S1:.*]] = llvm.call @te_rt_norm_fwd(%[[CTX]],
// CHECK:      llvm.icmp "ne" %[[S1]]
// CHECK-NEXT: llvm.cond_br %{{.*}}, ^[[FAIL]](%[[S1]] : i32), ^bb4
// CHECK:      llvm.call @te_rt_gemm_fprop(
// CHECK:      llvm.call @te_rt_act_fwd(
// CHECK:      llvm.call @te_rt_gemm_fprop(
// CHECK:      llvm.call @te_rt_add(%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %[[OUT]], %{{.*}})
// CHECK:      llvm.call @te_rt_arena_release(%[[CTX]], %[[ARENA]])
// CHECK:      llvm.return %{{.*}} : i32
// CHECK:      ^[[FAIL]](%[[ST:.*]]: i32):
// CHECK-NEXT: llvm.call @te_rt_arena_release(%[[CTX]], %[[ARENA]])
// CHECK-NEXT: llvm.return %[[ST]] : i32
// CHECK:      llvm.mlir.global internal constant @te_module_info.json(
// CHECK-SAME: \22arena_bytes\22:\22dynamic\22,\22arena_slots\22:2
// CHECK-SAME: \22shape\22:[\22d0\22,64]
// CHECK-SAME: \22dims\22:[{\22arg\22:0,\22dim\22:0}]
// CHECK-SAME: \22symbol\22:\22te_entry_mlp\22
// CHECK:      llvm.func @te_module_info() -> !llvm.ptr
// CHECK:      llvm.func @te_module_info_digest() -> i64
// CHECK-NEXT: %[[DIGEST:.*]] = llvm.mlir.constant({{-?[1-9][0-9]*}} : i64) : i64
// CHECK-NEXT: llvm.return %[[DIGEST]] : i64
// CHECK-NOT:  func.func
func.func @mlp(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %w2: tensor<64x128xbf16>) -> tensor<?x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act gelu fc2(%w2) : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
  %r = arith.addf %y, %x : tensor<?x64xbf16>
  return %r : tensor<?x64xbf16>
}

// -----

// Static shapes: the planned peak is known at compile time: the norm output
// (8x64 f32 = 2048 B) and rsigma (32 B) are the only intermediates (the
// GEMM writes result 0 in place); rsigma, dead before the GEMM, is placed
// in result 0's buffer (a loan): 2048 bytes in the arena. A returned
// argument is copied out.
// CHECK-LABEL: llvm.func @te_entry_lnl(
// CHECK:      llvm.call @te_rt_norm_fwd
// CHECK:      llvm.call @te_rt_gemm_fprop
// CHECK:      llvm.call @te_rt_copy(
// CHECK:      \22arena_bytes\22:2048,\22arena_slots\22:2
func.func @lnl(%x: tensor<8x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) -> (tensor<8x32xf32>, tensor<8x64xf32>) {
  %y = te.layernorm_linear %x norm rms_norm(%g) weight(%w) : (tensor<8x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<8x32xf32>
  return %y, %x : tensor<8x32xf32>, tensor<8x64xf32>
}

// -----

// Ops the lowering does not know are an error at the op.
func.func @unknown(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  // expected-error @+1 {{te-lower-to-runtime: cannot lower 'arith.mulf' (run te-decompose first)}}
  %y = arith.mulf %x, %x : tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// Quantized values the runtime has no layout for are an error naming the
// type: MXFP8 in Hopper's layout (its GEMMs are Blackwell's), MXFP8 with
// compact scales, and Float8 block scaling with a dynamic dim (its padded
// scale shapes are static only for now).
// expected-error @+1 {{te-lower-to-runtime: '!te.qtensor<64x64xe4m3, #te.mxfp8, rowwise, hopper, swizzled>' is not lowered (per-tensor FP8 and fp8-block on hopper, mxfp8 and nvfp4 on blackwell, row-scaled nvfp4 rowwise only)}}
func.func @mxfp8(%q: !te.qtensor<64x64xe4m3, #te.mxfp8, rowwise, hopper, swizzled>) -> !te.qtensor<64x64xe4m3, #te.mxfp8, rowwise, hopper, swizzled> {
  return %q : !te.qtensor<64x64xe4m3, #te.mxfp8, rowwise, hopper, swizzled>
}

// -----

// expected-error @+1 {{te-lower-to-runtime: '!te.qtensor<64x64xe4m3, #te.mxfp8, rowwise, blackwell>' has compact scales; the runtime's mxfp8 GEMMs take them swizzled (as TE's quantizers write them for GEMMs)}}
func.func @mxfp8_compact(%q: !te.qtensor<64x64xe4m3, #te.mxfp8, rowwise, blackwell>) -> !te.qtensor<64x64xe4m3, #te.mxfp8, rowwise, blackwell> {
  return %q : !te.qtensor<64x64xe4m3, #te.mxfp8, rowwise, blackwell>
}

// -----

// expected-error @+1 {{te-lower-to-runtime: '!te.qtensor<64x64xe2m1, #te.nvfp4<>, rowwise, blackwell>' has compact scales; the runtime's nvfp4 GEMMs take them swizzled}}
func.func @nvfp4_compact(%q: !te.qtensor<64x64xe2m1, #te.nvfp4<>, rowwise, blackwell>) -> !te.qtensor<64x64xe2m1, #te.nvfp4<>, rowwise, blackwell> {
  return %q : !te.qtensor<64x64xe2m1, #te.nvfp4<>, rowwise, blackwell>
}

// -----

// Row-scaled NVFP4 (one amax per row) is lowered rowwise only (TE's forward
// activations; its backward is high precision): a columnwise copy has no
// runtime quantizer.
// expected-error @+1 {{te-lower-to-runtime: '!te.qtensor<64x64xe2m1, #te.nvfp4<row_scaled = true>, both, blackwell, swizzled, row_scaled>' is not lowered}}
func.func @nvfp4_row_scaled(%q: !te.qtensor<64x64xe2m1, #te.nvfp4<row_scaled = true>, both, blackwell, swizzled, row_scaled>) -> !te.qtensor<64x64xe2m1, #te.nvfp4<row_scaled = true>, both, blackwell, swizzled, row_scaled> {
  return %q : !te.qtensor<64x64xe2m1, #te.nvfp4<row_scaled = true>, both, blackwell, swizzled, row_scaled>
}
