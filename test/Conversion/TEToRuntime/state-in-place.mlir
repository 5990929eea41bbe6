// RUN: te-opt %s --split-input-file --te-lower-to-runtime 2>/dev/null | FileCheck %s
// RUN: te-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(te-fork-amax-update),te-lower-to-runtime)' 2>/dev/null | FileCheck %s
//
// Module info `state_in_place`: the [result, argument] pairs of a
// backward's recipe state that the caller may pass as one buffer (the new
// amax history and scales written over the old ones, no copy after the
// entry), whether the update runs in order or forked. A pair is listed
// only when no read of the old state can come after the update's write:
// every other reader of the argument is an op the update depends on.

// The casts read the scales; their amaxes feed the update: both pairs.
// CHECK-LABEL: @te_module_info.json(
// CHECK-SAME: \22name\22:\22all_before\22
// CHECK-SAME: \22state_in_place\22:{{\[\[}}1,2],[2,3]]
func.func @all_before(%x: tensor<16x256xbf16>, %w: tensor<768x256xbf16>, %h: tensor<1024x2xf32> {te.state = "l.amax_history_bwd"}, %s: tensor<2xf32> {te.state = "l.scales_bwd"}) -> (tensor<16x768xbf16> {te.grad_of = "input:0"}, tensor<1024x2xf32> {te.state = "l.amax_history_bwd"}, tensor<2xf32> {te.state = "l.scales_bwd"}) attributes {te.backward_of = @f} {
  %qx, %a0 = te.quantize %x scale(%s[0]) : tensor<16x256xbf16>, tensor<2xf32> -> !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %qw, %a1 = te.quantize %w scale(%s[1]) {weight} : tensor<768x256xbf16>, tensor<2xf32> -> !te.qtensor<768x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %y = te.gemm tn %qx, %qw {fast_accumulate} : (!te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, !te.qtensor<768x256xe4m3, #te.fp8_delayed<>, both, hopper>) -> tensor<16x768xbf16>
  %v = tensor.concat dim(0) %a0, %a1 : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
  %nh, %ns = te.amax_update %h, %s, %v recipe(#te.fp8_delayed<>) backward : tensor<1024x2xf32>, tensor<2xf32>
  return %y, %nh, %ns : tensor<16x768xbf16>, tensor<1024x2xf32>, tensor<2xf32>
}

// -----

// The scales are also read by an op the update does not wait for (a copy
// the function returns): the scales keep their own buffer; the history,
// read by the update alone, may still be written in place.
// CHECK-LABEL: @te_module_info.json(
// CHECK-SAME: \22name\22:\22read_after\22
// CHECK-SAME: \22state_in_place\22:{{\[\[}}2,2]]
func.func @read_after(%x: tensor<16x256xbf16>, %w: tensor<768x256xbf16>, %h: tensor<1024x2xf32> {te.state = "l.amax_history_bwd"}, %s: tensor<2xf32> {te.state = "l.scales_bwd"}) -> (tensor<16x768xbf16> {te.grad_of = "input:0"}, tensor<2xf32>, tensor<1024x2xf32> {te.state = "l.amax_history_bwd"}, tensor<2xf32> {te.state = "l.scales_bwd"}) attributes {te.backward_of = @f} {
  %qx, %a0 = te.quantize %x scale(%s[0]) : tensor<16x256xbf16>, tensor<2xf32> -> !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %qw, %a1 = te.quantize %w scale(%s[1]) {weight} : tensor<768x256xbf16>, tensor<2xf32> -> !te.qtensor<768x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %y = te.gemm tn %qx, %qw {fast_accumulate} : (!te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, !te.qtensor<768x256xe4m3, #te.fp8_delayed<>, both, hopper>) -> tensor<16x768xbf16>
  %c = arith.addf %s, %s : tensor<2xf32>
  %v = tensor.concat dim(0) %a0, %a1 : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
  %nh, %ns = te.amax_update %h, %s, %v recipe(#te.fp8_delayed<>) backward : tensor<1024x2xf32>, tensor<2xf32>
  return %y, %c, %nh, %ns : tensor<16x768xbf16>, tensor<2xf32>, tensor<1024x2xf32>, tensor<2xf32>
}

// -----

// The argument itself returned (a pass-through the caller reads after the
// entry) and a result whose state name is another's: no pair.
// CHECK-LABEL: @te_module_info.json(
// CHECK-SAME: \22name\22:\22returned\22
// CHECK-NOT: state_in_place
// CHECK: llvm.func @te_module_info(
func.func @returned(%x: tensor<16x256xbf16>, %h: tensor<1024x1xf32> {te.state = "l.amax_history_bwd"}, %s: tensor<1xf32> {te.state = "l.scales_bwd"}) -> (!te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1024x1xf32> {te.state = "l.amax_history_bwd"}, tensor<1024x1xf32> {te.state = "l.amax_history_bwd"}, tensor<1xf32> {te.state = "l.other"}) attributes {te.backward_of = @f} {
  %qx, %a0 = te.quantize %x scale(%s[0]) : tensor<16x256xbf16>, tensor<1xf32> -> !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %nh, %ns = te.amax_update %h, %s, %a0 recipe(#te.fp8_delayed<>) backward : tensor<1024x1xf32>, tensor<1xf32>
  return %qx, %h, %nh, %ns : !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1024x1xf32>, tensor<1024x1xf32>, tensor<1xf32>
}

// -----

// A forward's state stays functional (a checkpointed recompute runs the
// forward again on the state it saved): no pair.
// CHECK-LABEL: @te_module_info.json(
// CHECK-SAME: \22name\22:\22forward\22
// CHECK-NOT: state_in_place
// CHECK: llvm.func @te_module_info(
func.func @forward(%x: tensor<16x256xbf16>, %h: tensor<1024x1xf32> {te.state = "l.amax_history_fwd"}, %s: tensor<1xf32> {te.state = "l.scales_fwd"}) -> (!te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1024x1xf32> {te.state = "l.amax_history_fwd"}, tensor<1xf32> {te.state = "l.scales_fwd"}) {
  %qx, %a0 = te.quantize %x scale(%s[0]) : tensor<16x256xbf16>, tensor<1xf32> -> !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
  %nh, %ns = te.amax_update %h, %s, %a0 recipe(#te.fp8_delayed<>) : tensor<1024x1xf32>, tensor<1xf32>
  return %qx, %nh, %ns : !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1024x1xf32>, tensor<1xf32>
}
