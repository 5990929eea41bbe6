// LayerNormMLP under per-tensor FP8 on Hopper saves FC2's input (act_out)
// rowwise only, as TransformerEngine does (reference §0.2, §2.4-2.5: the
// FC2 input quantizer is rowwise for Float8Quantizer and
// Float8CurrentScalingQuantizer, and the backward's
// update_usage(columnwise_usage=True) transposes the FP8 bytes before FC2's
// wgrad): the module info lists the saved act_out with `scale_inv` and
// `data` only (the norm output keeps its `transpose`), and the backward
// makes the transpose (te.add_columnwise, te_rt_add_columnwise_fp8).
//
// The gradients do not change: the transpose of the rowwise bytes is what
// the forward's cast-transpose wrote. The digests below are those of the
// same steps run by the compiler before this change (act_out saved with
// both usages), on the cpu backend (its results do not depend on its
// thread count): fp8-current and fp8-delayed (with the backward recipe
// state), LayerNorm + GELU with biases, RMSNorm + SwiGLU, and a dynamic
// token count (48 tokens). The fp8-current digests of gelu (backward) and
// dyn (forward) were taken again when the cpu backend's GEMM sums became
// fp32 chunks of 64 products with fp64 totals (the runtime's values
// changed, not the compiler's output).
//
// RUN: rm -rf %t && mkdir -p %t/in/gelu %t/in/swiglu %t/in/dyn
// RUN: te-compile %s --train --recipe fp8-current -o %t/cur.so
// RUN: te-compile %s --train --recipe fp8-delayed -o %t/del.so
// RUN: %python -c "import numpy as n; r = n.random.RandomState(3); b = lambda a: ((a.astype('f4').view('u4') + 0x7fff + ((a.astype('f4').view('u4') >> 16) & 1)) >> 16).astype('u2'); cases = {'gelu': [(64, 64), (64,), (64,), (128, 64), (128,), (64, 128), (64,)], 'swiglu': [(64, 64), (64,), (256, 64), (64, 128)], 'dyn': [(48, 64), (64,), (64,), (128, 64), (128,), (64, 128), (64,)]}; [n.save('%t/in/%%s/arg%%d.bf16.npy' %% (c, i), b(r.randn(*s) if i == 0 else 0.1 * r.randn(*s) + (1.0 if i == 1 else 0.0))) for c, shapes in cases.items() for i, s in enumerate(shapes)]; [n.save('%t/in/%%s/result0.bf16.npy' %% c, b(r.randn(shapes[0][0], 64))) for c, shapes in cases.items()]"
// RUN: te-run %t/cur.so --step gelu --backend cpu --inputs %t/in/gelu --grads %t/in/gelu --outputs %t/cur_gelu
// RUN: te-run %t/cur.so --step swiglu --backend cpu --inputs %t/in/swiglu --grads %t/in/swiglu --outputs %t/cur_swiglu
// RUN: te-run %t/cur.so --step dyn --backend cpu --inputs %t/in/dyn --grads %t/in/dyn --outputs %t/cur_dyn
// RUN: te-run %t/del.so --step gelu --backend cpu --inputs %t/in/gelu --grads %t/in/gelu --outputs %t/del_gelu
// RUN: te-run %t/del.so --step swiglu --backend cpu --inputs %t/in/swiglu --grads %t/in/swiglu --outputs %t/del_swiglu
// RUN: te-run %t/del.so --step dyn --backend cpu --inputs %t/in/dyn --grads %t/in/dyn --outputs %t/del_dyn
// RUN: %python %S/check_actout.py %t/cur.so %t/cur_gelu %t/cur_swiglu %t/cur_dyn | FileCheck %s --check-prefixes=CHECK,CUR
// RUN: %python %S/check_actout.py %t/del.so %t/del_gelu %t/del_swiglu %t/del_dyn | FileCheck %s --check-prefixes=CHECK,DEL
//
// CHECK-DAG: gelu_fwd results[4] layernorm_mlp_0.act_out: !te.qtensor<64x128xe4m3, #te.fp8_{{current|delayed}}<>, rowwise, hopper> inner scale_inv,data
// CHECK-DAG: gelu_fwd results[1] layernorm_mlp_0.ln_out: !te.qtensor<64x64xe4m3, #te.fp8_{{current|delayed}}<>, columnwise, hopper> inner scale_inv,transpose
// CHECK-DAG: gelu_bwd args[5] layernorm_mlp_0.act_out: !te.qtensor<64x128xe4m3, #te.fp8_{{current|delayed}}<>, rowwise, hopper> inner scale_inv,data
// CHECK-DAG: swiglu_fwd results[{{[0-9]+}}] layernorm_mlp_0.act_out: !te.qtensor<64x128xe4m3, #te.fp8_{{current|delayed}}<>, rowwise, hopper> inner scale_inv,data
// CHECK-DAG: dyn_fwd results[4] layernorm_mlp_0.act_out: !te.qtensor<?x128xe4m3, #te.fp8_{{current|delayed}}<>, rowwise, hopper> inner scale_inv,data
// CHECK-DAG: dyn_bwd args[5] layernorm_mlp_0.act_out: !te.qtensor<?x128xe4m3, #te.fp8_{{current|delayed}}<>, rowwise, hopper> inner scale_inv,data
// CHECK-NOT: act_out: {{.*}} inner {{.*}}transpose
// CUR: cur_gelu: 7 bwd files 2872f4c49c6a29d4, fwd 641c72b69050275b
// CUR: cur_swiglu: 4 bwd files 56ccbeef0ac543ea, fwd df6dfa8575f69eeb
// CUR: cur_dyn: 7 bwd files 76bf3e125942e766, fwd 075c8047b71b8c4b
// DEL: del_gelu: 9 bwd files 3e23a0a621eee0be, fwd 0723648fa859614b
// DEL: del_swiglu: 6 bwd files f170489997c3c075, fwd 8e9210c0c688e228
// DEL: del_dyn: 9 bwd files ee330760b88aa6ee, fwd bd7b2612d27d986a
func.func @gelu(%x: tensor<64x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<64x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<64x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}
func.func @swiglu(%x: tensor<64x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<256x64xbf16>, %w2: tensor<64x128xbf16>) -> tensor<64x64xbf16> {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) : (tensor<64x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<64x128xbf16>) -> tensor<64x64xbf16>
  return %y : tensor<64x64xbf16>
}
func.func @dyn(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
