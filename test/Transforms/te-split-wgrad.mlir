// RUN: te-opt %s --te-split-wgrad --split-input-file | FileCheck %s
//
// te-split-wgrad on hand-made backwards: the gradients of te.delay_wgrad
// arguments move to @<bwd>_wgrad with the ops only they need; what those
// ops read from the ops that stay is stashed; arguments only they read
// leave the backward.

// A Linear: the wgrad GEMM reads the output gradient (an argument the dgrad
// GEMM reads too: taken again) and the saved input (only it: moved).
// CHECK-LABEL: func.func @lin_bwd(
// CHECK-SAME: %[[W:.*]]: tensor<32x64xbf16> {te.saved = "w"}, %[[DY:.*]]: tensor<16x32xbf16> {te.grad_of = "output:0"})
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"})
// CHECK-NEXT: %[[DX:.*]] = te.gemm nn %[[DY]], %[[W]]
// CHECK-NEXT: return %[[DX]]
// CHECK-LABEL: func.func @lin_bwd_wgrad(
// CHECK-SAME: %[[DY2:.*]]: tensor<16x32xbf16> {te.grad_of = "output:0"}, %[[X:.*]]: tensor<16x64xbf16> {te.saved = "x"})
// CHECK-SAME: -> (tensor<32x64xbf16> {te.grad_of = "input:1"})
// CHECK-SAME: attributes {te.wgrad_of = @lin_bwd}
// CHECK-NEXT: %[[DW:.*]] = te.gemm nt %[[DY2]], %[[X]]
// CHECK-NEXT: return %[[DW]]
func.func @lin(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16> {te.delay_wgrad}) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w) : (tensor<16x64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}
func.func @lin_bwd(%x: tensor<16x64xbf16> {te.saved = "x"}, %w: tensor<32x64xbf16> {te.saved = "w"}, %dy: tensor<16x32xbf16> {te.grad_of = "output:0"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<32x64xbf16> {te.grad_of = "input:1"}) attributes {te.backward_of = @lin} {
  %dx = te.gemm nn %dy, %w : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  %dw = te.gemm nt %dy, %x : (tensor<16x32xbf16>, tensor<16x64xbf16>) -> tensor<32x64xbf16>
  return %dx, %dw : tensor<16x64xbf16>, tensor<32x64xbf16>
}

// -----

// A value an op that stays computes (the activation's derivative, which the
// FC1 dgrad needs too) is stashed: a result of the backward and an argument
// of the wgrad entry, both te.wgrad_stash "stash0". The FC2 weight does not
// wait.
// CHECK-LABEL: func.func @mlp_bwd(
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64x128xbf16> {te.grad_of = "input:2"}, tensor<16x128xbf16> {te.wgrad_stash = "stash0"})
// CHECK: %[[DACT:.*]] = te.dact gelu
// CHECK: return %{{.*}}, %{{.*}}, %[[DACT]]
// CHECK-LABEL: func.func @mlp_bwd_wgrad(
// CHECK-SAME: %[[S:.*]]: tensor<16x128xbf16> {te.wgrad_stash = "stash0"}, %[[X:.*]]: tensor<16x64xbf16> {te.saved = "x"})
// CHECK-SAME: -> (tensor<128x64xbf16> {te.grad_of = "input:1"})
// CHECK-NEXT: te.gemm nt %[[S]], %[[X]]
func.func @mlp(%x: tensor<16x64xbf16>, %w1: tensor<128x64xbf16> {te.delay_wgrad}, %w2: tensor<64x128xbf16>) -> tensor<16x64xbf16> {
  return %x : tensor<16x64xbf16>
}
func.func @mlp_bwd(%x: tensor<16x64xbf16> {te.saved = "x"}, %w1: tensor<128x64xbf16> {te.saved = "w1"}, %h: tensor<16x128xbf16> {te.saved = "h"}, %a: tensor<16x128xbf16> {te.saved = "a"}, %w2: tensor<64x128xbf16> {te.saved = "w2"}, %dy: tensor<16x64xbf16> {te.grad_of = "output:0"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<128x64xbf16> {te.grad_of = "input:1"}, tensor<64x128xbf16> {te.grad_of = "input:2"}) attributes {te.backward_of = @mlp} {
  %da = te.gemm nn %dy, %w2 : (tensor<16x64xbf16>, tensor<64x128xbf16>) -> tensor<16x128xbf16>
  %dw2 = te.gemm nt %dy, %a : (tensor<16x64xbf16>, tensor<16x128xbf16>) -> tensor<64x128xbf16>
  %dh = te.dact gelu %da, %h : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> tensor<16x128xbf16>
  %dx = te.gemm nn %dh, %w1 : (tensor<16x128xbf16>, tensor<128x64xbf16>) -> tensor<16x64xbf16>
  %dw1 = te.gemm nt %dh, %x : (tensor<16x128xbf16>, tensor<16x64xbf16>) -> tensor<128x64xbf16>
  return %dx, %dw1, %dw2 : tensor<16x64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>
}

// -----

// No te.delay_wgrad: nothing changes.
// CHECK-LABEL: func.func @plain_bwd(
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<32x64xbf16> {te.grad_of = "input:1"})
// CHECK-NOT: {{_bwd_wgrad|wgrad_stash}}
func.func @plain(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<16x32xbf16> {
  %y = te.linear %x weight(%w) : (tensor<16x64xbf16>, tensor<32x64xbf16>) -> tensor<16x32xbf16>
  return %y : tensor<16x32xbf16>
}
func.func @plain_bwd(%x: tensor<16x64xbf16> {te.saved = "x"}, %w: tensor<32x64xbf16> {te.saved = "w"}, %dy: tensor<16x32xbf16> {te.grad_of = "output:0"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<32x64xbf16> {te.grad_of = "input:1"}) attributes {te.backward_of = @plain} {
  %dx = te.gemm nn %dy, %w : (tensor<16x32xbf16>, tensor<32x64xbf16>) -> tensor<16x64xbf16>
  %dw = te.gemm nt %dy, %x : (tensor<16x32xbf16>, tensor<16x64xbf16>) -> tensor<32x64xbf16>
  return %dx, %dw : tensor<16x64xbf16>, tensor<32x64xbf16>
}

// -----

// A quantized output gradient both GEMMs read: the dgrad its rowwise copy,
// the waiting wgrad its columnwise one. The stash keeps the columnwise copy
// alone (te.drop_usage, a view of the buffer's prefix); the rowwise copy
// dies with the dgrad.
// CHECK-LABEL: func.func @qlin_bwd(
// CHECK-SAME: -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, !te.qtensor<16x32xe5m2, #te.fp8_current<>, columnwise, hopper> {te.wgrad_stash = "stash0"})
// CHECK: %[[DYQ:.*]], %{{.*}} = te.quantize %{{.*}} : tensor<16x32xbf16> -> !te.qtensor<16x32xe5m2, #te.fp8_current<>, both, hopper>, tensor<1xf32>
// CHECK-NEXT: %[[COL:.*]] = te.drop_usage %[[DYQ]] : !te.qtensor<16x32xe5m2, #te.fp8_current<>, both, hopper> -> !te.qtensor<16x32xe5m2, #te.fp8_current<>, columnwise, hopper>
// CHECK: return %{{.*}}, %[[COL]]
// CHECK-LABEL: func.func @qlin_bwd_wgrad(
// CHECK-SAME: %[[S:.*]]: !te.qtensor<16x32xe5m2, #te.fp8_current<>, columnwise, hopper> {te.wgrad_stash = "stash0"}
// CHECK-NEXT: te.gemm nt %[[S]], %{{.*}} :
func.func @qlin(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16> {te.delay_wgrad}) -> tensor<16x64xbf16> {
  return %x : tensor<16x64xbf16>
}
func.func @qlin_bwd(%x: !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper> {te.saved = "x"}, %w: !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper> {te.saved = "w"}, %dy: tensor<16x32xbf16> {te.grad_of = "output:0"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<32x64xbf16> {te.grad_of = "input:1"}) attributes {te.backward_of = @qlin} {
  %dyq, %amax = te.quantize %dy : tensor<16x32xbf16> -> !te.qtensor<16x32xe5m2, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  %dx = te.gemm nn %dyq, %w : (!te.qtensor<16x32xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<16x64xbf16>
  %dw = te.gemm nt %dyq, %x : (!te.qtensor<16x32xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper>) -> tensor<32x64xbf16>
  return %dx, %dw : tensor<16x64xbf16>, tensor<32x64xbf16>
}

// -----

// A waiting op that is no GEMM reads it (here a rowwise te.drop_usage that
// a waiting GEMM reads): the stash keeps both copies.
// CHECK-LABEL: func.func @qboth_bwd(
// CHECK-SAME: !te.qtensor<16x32xe5m2, #te.fp8_current<>, both, hopper> {te.wgrad_stash = "stash0"})
// CHECK-NOT: te.drop_usage
// CHECK-LABEL: func.func @qboth_bwd_wgrad(
// CHECK-SAME: %[[S:.*]]: !te.qtensor<16x32xe5m2, #te.fp8_current<>, both, hopper> {te.wgrad_stash = "stash0"}
// CHECK: te.drop_usage %[[S]]
func.func @qboth(%x: tensor<16x64xbf16>, %w: tensor<32x64xbf16> {te.delay_wgrad}, %v: tensor<16x64xbf16> {te.delay_wgrad}) -> tensor<16x64xbf16> {
  return %x : tensor<16x64xbf16>
}
func.func @qboth_bwd(%x: !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper> {te.saved = "x"}, %w: !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper> {te.saved = "w"}, %dy: tensor<16x32xbf16> {te.grad_of = "output:0"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<32x64xbf16> {te.grad_of = "input:1"}, tensor<16x64xbf16> {te.grad_of = "input:2"}) attributes {te.backward_of = @qboth} {
  %dyq, %amax = te.quantize %dy : tensor<16x32xbf16> -> !te.qtensor<16x32xe5m2, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  %dx = te.gemm nn %dyq, %w : (!te.qtensor<16x32xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<16x64xbf16>
  %dw = te.gemm nt %dyq, %x : (!te.qtensor<16x32xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper>) -> tensor<32x64xbf16>
  %row = te.drop_usage %dyq : !te.qtensor<16x32xe5m2, #te.fp8_current<>, both, hopper> -> !te.qtensor<16x32xe5m2, #te.fp8_current<>, rowwise, hopper>
  %dv = te.gemm nn %row, %w : (!te.qtensor<16x32xe5m2, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<16x64xbf16>
  return %dx, %dw, %dv : tensor<16x64xbf16>, tensor<32x64xbf16>, tensor<16x64xbf16>
}
