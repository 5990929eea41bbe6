// RUN: te-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(te-fork-amax-update))' | FileCheck %s
// RUN: te-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(te-fork-amax-update),te-lower-to-runtime)' 2>/dev/null | FileCheck %s --check-prefix=LLVM
// RUN: te-opt %s --split-input-file --te-lower-to-runtime 2>/dev/null | FileCheck %s --check-prefix=ORDER
// RUN: te-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(te-fork-amax-update,te-test-memory-plan))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAN
//
// te-fork-amax-update: delayed scaling's amax update moves to right after
// the last cast that records one of its amaxes (with its amax vector's
// concat and that concat's zero parts) and is marked te.fork; the lowering
// calls te_rt_amax_update_fork there, before the GEMM, which in a CUDA
// graph runs it on a branch beside the GEMM. Without the pass the update
// stays after the GEMM, in order (ORDER).

// A forward: the input's and the weight's casts record slots 0 and 1, slot
// 2 (the output's) records nothing.
// CHECK-LABEL: func.func @forward(
// CHECK:       te.quantize %arg0
// CHECK:       %[[W:.*]], %[[A1:.*]] = te.quantize %arg1
// CHECK-NEXT:  %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<1xf32>
// CHECK-NEXT:  %[[V:.*]] = tensor.concat dim(0) %{{.*}}, %[[A1]], %[[Z]]
// CHECK-NEXT:  te.amax_update %arg2, %arg3, %[[V]] recipe(#te.fp8_delayed<>) {te.fork}
// CHECK-NEXT:  te.gemm
// LLVM-LABEL:  llvm.func @te_entry_forward(
// LLVM:        llvm.call @te_rt_quantize_fp8(
// LLVM:        llvm.call @te_rt_quantize_fp8(
// LLVM:        %[[MASK:.*]] = llvm.mlir.constant(4 : i64) : i64
// LLVM-NEXT:   llvm.call @te_rt_amax_update_fork({{.*}}, %[[MASK]], %{{[^,]*}}, %{{[^,]*}})
// LLVM:        llvm.call @te_rt_gemm_fp8(
// LLVM-NOT:    llvm.call @te_rt_amax_update
// LLVM:        llvm.call @te_rt_arena_release(
// ORDER-LABEL: llvm.func @te_entry_forward(
// ORDER:       llvm.call @te_rt_gemm_fp8(
// ORDER:       llvm.call @te_rt_amax_update_unused(
func.func @forward(%x: tensor<16x256xbf16>, %w: tensor<768x256xbf16>, %h: tensor<1024x3xf32>, %s: tensor<3xf32>) -> (tensor<16x768xbf16>, tensor<1024x3xf32>, tensor<3xf32>) {
  %qx, %a0 = te.quantize %x scale(%s[0]) : tensor<16x256xbf16>, tensor<3xf32> -> !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %qw, %a1 = te.quantize %w scale(%s[1]) {weight} : tensor<768x256xbf16>, tensor<3xf32> -> !te.qtensor<768x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %y = te.gemm tn %qx, %qw {fast_accumulate} : (!te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, !te.qtensor<768x256xe4m3, #te.fp8_delayed<>, both, hopper>) -> tensor<16x768xbf16>
  %z = arith.constant dense<0.000000e+00> : tensor<1xf32>
  %v = tensor.concat dim(0) %a0, %a1, %z : (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<3xf32>
  %nh, %ns = te.amax_update %h, %s, %v recipe(#te.fp8_delayed<>) : tensor<1024x3xf32>, tensor<3xf32>
  return %y, %nh, %ns : tensor<16x768xbf16>, tensor<1024x3xf32>, tensor<3xf32>
}

// -----

// The scales are read after the last cast (here by a copy the function
// returns, as a checkpointed forward does for its backward): a fork would
// race with that read, so the update stays where it is, unmarked.
// CHECK-LABEL: func.func @state_read_after(
// CHECK:       te.gemm
// CHECK:       te.amax_update
// CHECK-NOT:   te.fork
// LLVM-LABEL:  llvm.func @te_entry_state_read_after(
// LLVM-NOT:    llvm.call @te_rt_amax_update_fork(
// LLVM:        llvm.call @te_rt_amax_update(
func.func @state_read_after(%x: tensor<16x256xbf16>, %w: tensor<768x256xbf16>, %h: tensor<1024x2xf32>, %s: tensor<2xf32>) -> (tensor<16x768xbf16>, tensor<2xf32>, tensor<1024x2xf32>, tensor<2xf32>) {
  %qx, %a0 = te.quantize %x scale(%s[0]) : tensor<16x256xbf16>, tensor<2xf32> -> !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %qw, %a1 = te.quantize %w scale(%s[1]) {weight} : tensor<768x256xbf16>, tensor<2xf32> -> !te.qtensor<768x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %y = te.gemm tn %qx, %qw {fast_accumulate} : (!te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, !te.qtensor<768x256xe4m3, #te.fp8_delayed<>, both, hopper>) -> tensor<16x768xbf16>
  %c = arith.addf %s, %s : tensor<2xf32>
  %v = tensor.concat dim(0) %a0, %a1 : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
  %nh, %ns = te.amax_update %h, %s, %v recipe(#te.fp8_delayed<>) : tensor<1024x2xf32>, tensor<2xf32>
  return %y, %c, %nh, %ns : tensor<16x768xbf16>, tensor<2xf32>, tensor<1024x2xf32>, tensor<2xf32>
}

// -----

// Its new scales are read inside the function: they must be ready in
// order, so it is not forked.
// CHECK-LABEL: func.func @result_read(
// CHECK:       te.amax_update
// CHECK-NOT:   te.fork
// CHECK:       arith.addf
func.func @result_read(%x: tensor<16x256xbf16>, %h: tensor<1024x1xf32>, %s: tensor<1xf32>) -> (!te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1024x1xf32>, tensor<1xf32>) {
  %qx, %a0 = te.quantize %x scale(%s[0]) : tensor<16x256xbf16>, tensor<1xf32> -> !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %nh, %ns = te.amax_update %h, %s, %a0 recipe(#te.fp8_delayed<>) : tensor<1024x1xf32>, tensor<1xf32>
  %s2 = arith.addf %ns, %ns : tensor<1xf32>
  return %qx, %nh, %s2 : !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1024x1xf32>, tensor<1xf32>
}

// -----

// The update's results are returned but computed in the arena and copied
// out (the new history is returned twice): the lowering runs it in order,
// since the copies out come before the entry's join.
// LLVM-LABEL:  llvm.func @te_entry_copied_out(
// LLVM-NOT:    llvm.call @te_rt_amax_update_fork(
// LLVM:        llvm.call @te_rt_amax_update(
func.func @copied_out(%x: tensor<16x256xbf16>, %w: tensor<768x256xbf16>, %h: tensor<1024x2xf32>, %s: tensor<2xf32>) -> (tensor<16x768xbf16>, tensor<1024x2xf32>, tensor<1024x2xf32>, tensor<2xf32>) {
  %qx, %a0 = te.quantize %x scale(%s[0]) : tensor<16x256xbf16>, tensor<2xf32> -> !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %qw, %a1 = te.quantize %w scale(%s[1]) {weight} : tensor<768x256xbf16>, tensor<2xf32> -> !te.qtensor<768x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %y = te.gemm tn %qx, %qw {fast_accumulate} : (!te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, !te.qtensor<768x256xe4m3, #te.fp8_delayed<>, both, hopper>) -> tensor<16x768xbf16>
  %v = tensor.concat dim(0) %a0, %a1 : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
  %nh, %ns = te.amax_update %h, %s, %v recipe(#te.fp8_delayed<>) : tensor<1024x2xf32>, tensor<2xf32>
  return %y, %nh, %nh, %ns : tensor<16x768xbf16>, tensor<1024x2xf32>, tensor<1024x2xf32>, tensor<2xf32>
}

// -----

// The memory plan keeps a forked update's amax vector to the function's end
// (live [0, 6]) and out of any loan: kept only until the update, now right
// after the cast, it would sit in the buffer of the function's result #0
// before %y2 is written there (live [0, 3], "in the function's result #0
// before it is written"), which the update, still reading it on its
// branch, would race with.
// CHECK-LABEL: func.func @vector_kept(
// CHECK:       te.amax_update {{.*}} {te.fork}
// PLAN-LABEL:  remark: arena: 2 slots, 8704 bytes
// PLAN:        tensor.concat
// PLAN-NOT:    remark: arena
// PLAN:        remark: result #0: slot 1 at offset 8448, 8 bytes, live [0, 6]{{$}}
func.func @vector_kept(%x: tensor<16x256xbf16>, %h: tensor<1024x2xf32>, %s: tensor<2xf32>) -> (tensor<16x256xbf16>, tensor<1024x2xf32>, tensor<2xf32>) {
  %qx, %a0 = te.quantize %x scale(%s[0]) : tensor<16x256xbf16>, tensor<2xf32> -> !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %z = arith.constant dense<0.000000e+00> : tensor<1xf32>
  %v = tensor.concat dim(0) %a0, %z : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
  %y = arith.addf %x, %x : tensor<16x256xbf16>
  %y2 = arith.addf %y, %y : tensor<16x256xbf16>
  %nh, %ns = te.amax_update %h, %s, %v recipe(#te.fp8_delayed<>) : tensor<1024x2xf32>, tensor<2xf32>
  return %y2, %nh, %ns : tensor<16x256xbf16>, tensor<1024x2xf32>, tensor<2xf32>
}
