// A LayerNormLinear training step (bench/cases' form, small) under the
// per-tensor FP8 recipes: the backward's bias gradient comes out of dy's
// cast-transpose (te-fuse-dbias-quantize: one te_rt_dbias_quantize_fp8, no
// te_rt_bias_grad), and on the cpu backend the bias gradient is bit for bit
// what the unfused te_rt_bias_grad gives: the fp32 column sums of dy in row
// order, rounded once to bf16 (recomputed here in numpy), while the
// quantized bytes are te_rt_quantize_fp8's (unittests/Runtime
// AbiQuantizeTest DBiasQuantizeFP8IsBiasGradThenQuantize checks the cpu call
// against the unfused pair byte for byte; the goldens' fp8 cases run the
// fused step against PyTorch).
//
// RUN: rm -rf %t && mkdir -p %t/g
// RUN: te-compile %s --train --recipe fp8-delayed --emit mlir -o %t/delayed.mlir
// RUN: FileCheck %s --check-prefix=CALLS < %t/delayed.mlir
// RUN: te-compile %s --train --recipe fp8-current --emit mlir -o %t/current.mlir
// RUN: FileCheck %s --check-prefix=CALLS < %t/current.mlir
// CALLS-NOT: llvm.call @te_rt_bias_grad(
// CALLS:     llvm.call @te_rt_dbias_quantize_fp8(
// CALLS-NOT: llvm.call @te_rt_bias_grad(
//
// RUN: %python -c "import numpy as n; r = n.random.RandomState(3); b = lambda a: ((a.astype('f4').view('u4') + 0x7fff + ((a.astype('f4').view('u4') >> 16) & 1)) >> 16).astype('u2'); n.save('%t/g/result0.bf16.npy', b(r.randn(48, 96)))"
// RUN: te-compile %s --train --recipe fp8-delayed -o %t/delayed.so
// RUN: te-run %t/delayed.so --step f --random 1 --grads %t/g --outputs %t/od | FileCheck %s --check-prefix=STEP
// RUN: te-compile %s --train --recipe fp8-current -o %t/current.so
// RUN: te-run %t/current.so --step f --random 1 --grads %t/g --outputs %t/oc | FileCheck %s --check-prefix=STEP
// STEP: te-run: step f: f_fwd
// RUN: %python -c "import numpy as n; dy = (n.load('%t/g/result0.bf16.npy').astype('u4') << 16).view('f4'); acc = n.zeros(96, 'f4'); [acc.__iadd__(row) for row in dy]; u = acc.view('u4'); want = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype('u2'); print([bool((n.load(d + '/bwd/grad_arg4.bf16.npy') == want).all()) for d in ('%t/od', '%t/oc')])" | FileCheck %s --check-prefix=DBIAS
// DBIAS: [True, True]

func.func @f(%x: tensor<48x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w: tensor<96x64xbf16>, %bias: tensor<96xbf16>) -> tensor<48x96xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) : (tensor<48x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<96x64xbf16>, tensor<96xbf16>) -> tensor<48x96xbf16>
  return %y : tensor<48x96xbf16>
}
