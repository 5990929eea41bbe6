// te.delay_wgrad end to end (TE's delay_wgrad_compute, te-split-wgrad): the
// weight gradients come from <fn>_bwd_wgrad, run after <fn>_bwd on what it
// returned for them (te.wgrad_stash); every file of the step (the forward's
// results, every gradient, the recipe state) is byte-identical to the same
// model's without the attribute (check_split_wgrad.py). bf16, fp8-current,
// fp8-delayed, the MLP stored and checkpointed, Linear, and a main_grad
// weight (te.main_grad: its main_grad argument moves to the wgrad entry).
//
// RUN: rm -rf %t && mkdir -p %t/grads
// RUN: %python -c "import numpy as n; n.save('%t/grads/main_grad_arg1.npy', n.random.default_rng(1).standard_normal((128, 64)).astype(n.float32))"
// RUN: sed 's/ {te.delay_wgrad}//g; s/{te.delay_wgrad, /{/g' %s > %t/plain.mlir
// RUN: %python %S/check_split_wgrad.py %te_bin %t %s %t/plain.mlir bf16 | FileCheck %s
// RUN: %python %S/check_split_wgrad.py %te_bin %t %s %t/plain.mlir bf16 --checkpoint
// RUN: %python %S/check_split_wgrad.py %te_bin %t %s %t/plain.mlir fp8-current | FileCheck %s --check-prefix=FP8
// RUN: %python %S/check_split_wgrad.py %te_bin %t %s %t/plain.mlir fp8-delayed
// RUN: %python %S/check_split_wgrad.py %te_bin %t %s %t/plain.mlir fp8-delayed --checkpoint
// The Blackwell layouts (the cpu backend runs them): each stash keeps its
// columnwise parts only.
// RUN: %python %S/check_split_wgrad.py %te_bin %t %s %t/plain.mlir mxfp8 --arch=sm_100a | FileCheck %s --check-prefix=BW
// RUN: %python %S/check_split_wgrad.py %te_bin %t %s %t/plain.mlir nvfp4 --arch=sm_100a | FileCheck %s --check-prefix=BW
// BW: mlp ({{mxfp8|nvfp4}}-arch=sm_100a): 7 files identical, 2 stashed
// BW: lnl ({{mxfp8|nvfp4}}-arch=sm_100a): 6 files identical, 1 stashed
// BW: lin_main ({{mxfp8|nvfp4}}-arch=sm_100a): 3 files identical, 1 stashed
// RUN: te-compile %s --train --recipe nvfp4 --arch=sm_100a -o %t/nv.so
// RUN: te-run %t/nv.so --list | FileCheck %s --check-prefix=NVLIST
// NVLIST-LABEL: lnl_bwd
// NVLIST: (te.wgrad_stash=stash0) {columnwise_data, columnwise_scale_inv, amax_columnwise}{{$}}
//
// CHECK: mlp (bf16): 7 files identical, 1 stashed
// CHECK: lnl (bf16): 6 files identical, 0 stashed
// CHECK: lin_main (bf16): 3 files identical, 0 stashed
// FP8: mlp (fp8-current): 7 files identical, 2 stashed
// FP8: lnl (fp8-current): 6 files identical, 1 stashed
// FP8: lin_main (fp8-current): 3 files identical, 1 stashed
//
// The entries and what moves (the FP8 bias gradient, a by-product of the
// output gradient's cast, stays in the backward with a remark):
// RUN: te-compile %s --train --recipe fp8-current --remarks -o %t/ir.so 2>&1 | FileCheck %s --check-prefix=REMARK
// REMARK: remark: te-split-wgrad: the gradient (te.grad_of input:5) stays in @mlp_bwd: 'te.dbias_quantize' computes it with a gradient that does not wait
// REMARK: remark: te-split-wgrad: the gradient (te.grad_of input:4) stays in @lnl_bwd: 'te.dbias_quantize' computes it with a gradient that does not wait
// RUN: te-run %t/ir.so --list | FileCheck %s --check-prefix=LIST
// LIST-LABEL: lnl_bwd
// LIST-NOT: ln_out
// The stashed output gradient keeps its columnwise copy only (no rowwise
// `data`: te-split-wgrad's te.drop_usage, as TE keeps it for the wgrad):
// LIST: -> result4: qtensor [32,128] (te.wgrad_stash=stash0) {scale_inv, transpose}{{$}}
// LIST-LABEL: lnl_bwd_wgrad
// LIST-NEXT: arg0 (te.wgrad_stash=stash0): qtensor [32,128] {scale_inv, transpose}{{$}}
// LIST-NEXT: arg1 (te.saved=layernorm_linear_0.ln_out): qtensor [32,64]
// LIST-NEXT: -> result0: bfloat16 [128,64] (te.grad_of=input:3)

// LayerNormMLP: both weights and biases wait.
func.func @mlp(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16> {te.delay_wgrad}, %b1: tensor<128xbf16> {te.delay_wgrad}, %w2: tensor<64x128xbf16> {te.delay_wgrad}, %b2: tensor<64xbf16> {te.delay_wgrad}) -> tensor<32x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<32x64xbf16>
  return %y : tensor<32x64xbf16>
}
// LayerNormLinear: weight and bias wait.
func.func @lnl(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w: tensor<128x64xbf16> {te.delay_wgrad}, %bias: tensor<128xbf16> {te.delay_wgrad}) -> tensor<32x128xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<32x128xbf16>
  return %y : tensor<32x128xbf16>
}
// Linear whose weight accumulates into main_grad (Megatron's), deferred.
func.func @lin_main(%x: tensor<32x64xbf16>, %w: tensor<128x64xbf16> {te.delay_wgrad, te.main_grad}) -> tensor<32x128xbf16> {
  %y = te.linear %x weight(%w) : (tensor<32x64xbf16>, tensor<128x64xbf16>) -> tensor<32x128xbf16>
  return %y : tensor<32x128xbf16>
}
