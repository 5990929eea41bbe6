// te.main_grad end to end (Megatron's fp32 main_grad, TE's
// fuse_wgrad_accumulation): the weights marked te.main_grad get an fp32
// main_grad argument in @f_bwd and an fp32 gradient result, main_grad + the
// weight gradient, which the wgrad GEMM accumulates in its epilogue: with a
// zero main_grad the result rounds to the plain library's gradient bit for
// bit; with a main_grad M it is exactly float32(M + that fp32 gradient);
// every other output of the step is byte-identical (check_main_grad.py).
// bf16, fp8-current, fp8-delayed, fp8-block and mxfp8 (the cpu backend's GEMMs),
// the MLP stored and checkpointed.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: sed 's/ {te.main_grad}//g' %s > %t/plain.mlir
// RUN: %python %S/check_main_grad.py %te_bin %t %s %t/plain.mlir bf16 | FileCheck %s
// RUN: %python %S/check_main_grad.py %te_bin %t %s %t/plain.mlir bf16 --checkpoint
// RUN: %python %S/check_main_grad.py %te_bin %t %s %t/plain.mlir fp8-current
// RUN: %python %S/check_main_grad.py %te_bin %t %s %t/plain.mlir fp8-delayed
// RUN: %python %S/check_main_grad.py %te_bin %t %s %t/plain.mlir fp8-block
// RUN: %python %S/check_main_grad.py %te_bin %t %s %t/plain.mlir mxfp8 --arch=sm_100a
//
// te-run refuses a main_grad file of the wrong shape or dtype, naming it:
// RUN: mkdir -p %t/bad-shape %t/bad-dtype
// RUN: %python -c "import numpy as n; n.save('%t/bad-shape/main_grad_arg1.npy', n.zeros((3, 3), n.float32)); n.save('%t/bad-dtype/main_grad_arg1.npy', n.zeros((128, 64), n.float16))"
// RUN: not te-run %t/main-bf16.so --step lin --random 1 --grads %t/bad-shape --outputs %t/o 2>&1 | FileCheck %s --check-prefix=BADSHAPE
// BADSHAPE: te-run: error: --step: '{{.*}}main_grad_arg1.npy' has shape [3x3] but forward argument 1 (whose main_grad it is) has shape [128x64]
// RUN: not te-run %t/main-bf16.so --step lin --random 1 --grads %t/bad-dtype --outputs %t/o 2>&1 | FileCheck %s --check-prefix=BADDTYPE
// BADDTYPE: te-run: error: '{{.*}}main_grad_arg1.npy' holds float16 but the argument is float32
//
// The bf16 backward calls the fp32-output wgrad GEMM (the fold itself:
// test/Transforms/te-main-grad.mlir):
// RUN: te-opt %s --te-pipeline=train=true -o - | FileCheck %s --check-prefix=IR
// IR: llvm.call @te_rt_gemm_wgrad_fp32

// CHECK: bf16 lin: 1 main_grad argument(s) accumulated in fp32; 3 of 3 other files identical
// CHECK: bf16 lnl: 1 main_grad argument(s)
// CHECK: bf16 mlp: 2 main_grad argument(s) accumulated in fp32; 4 of 5 other files identical
// CHECK: bf16 lin_f32: 1 main_grad argument(s)

func.func @lin(%x: tensor<32x64xbf16>, %w: tensor<128x64xbf16> {te.main_grad}, %b: tensor<128xbf16>) -> tensor<32x128xbf16> {
  %y = te.linear %x weight(%w, %b) : (tensor<32x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<32x128xbf16>
  return %y : tensor<32x128xbf16>
}

// LayerNormLinear with a bias: its bias gradient leaves the wgrad GEMM's
// epilogue (no BGRADB with accumulation) for its own reduction.
func.func @lnl(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w: tensor<128x64xbf16> {te.main_grad}, %b: tensor<128xbf16>) -> tensor<32x128xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w, %b) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<32x128xbf16>
  return %y : tensor<32x128xbf16>
}

// FC1's bias gradient: from the dact kernel's reduction instead of FC1's
// wgrad epilogue (CLOSE, see check_main_grad.py).
// CLOSE: mlp 3
func.func @mlp(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16> {te.main_grad}, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16> {te.main_grad}, %b2: tensor<64xbf16>) -> tensor<32x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<32x64xbf16>
  return %y : tensor<32x64xbf16>
}

// An fp32 model: the gradient is fp32 already (no extf); still accumulated
// in the GEMM.
func.func @lin_f32(%x: tensor<32x64xf32>, %w: tensor<128x64xf32> {te.main_grad}) -> tensor<32x128xf32> {
  %y = te.linear %x weight(%w) : (tensor<32x64xf32>, tensor<128x64xf32>) -> tensor<32x128xf32>
  return %y : tensor<32x128xf32>
}
