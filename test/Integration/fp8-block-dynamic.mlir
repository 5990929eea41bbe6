// Float8 block scaling with a dynamic token count: the inner tensors'
// padded scale shapes are expressions of d0 (columnwise 1x128 scales
// [ceildiv(d0, 128), K], rowwise [K/128, roundup(d0, 4)]), computed by the
// compiled code at run time and by te-run from the module info. At 256
// tokens the library computed for any size gives bit for bit what a library
// compiled for 256 gives, in the forward, the gradients and the saved
// block-scaled tensors (padding included: every part is a multiple of 256
// bytes there). At 200 tokens (partial blocks; a static module of 200 tokens
// would fall back to bf16) every entry refuses to run, on entry, with the
// recipe's alignment condition (te-describe's runtime_checks,
// te_rt_check_multiple) and the value it got.
//
// RUN: rm -rf %t && mkdir -p %t/in256 %t/in200
// RUN: te-compile %s --train -o %t/lib.so
// RUN: FileCheck %s --check-prefix=HDR < %t/lib.h
// HDR-LABEL: /* dyn_fwd
// HDR:       [1] qtensor [d0, 128]  te.saved=layernorm_mlp_0.ln_out
// HDR-NEXT:  !te.qtensor<?x128xe4m3, #te.fp8_block<>, columnwise, hopper>
// HDR-NEXT:  columnwise_data: uint8 [128, d0] at byte 0
// HDR-NEXT:  columnwise_scale_inv: float32 [ceildiv(d0, 128), 128]
// HDR-NEXT:  [2] qtensor [256, 128]
// HDR:       [4] qtensor [d0, 256]  te.saved=layernorm_mlp_0.act_out
// HDR-NEXT:  !te.qtensor<?x256xe4m3, #te.fp8_block<>, both, hopper>
// HDR-NEXT:  columnwise_data: uint8 [256, d0] at byte 0
// HDR-NEXT:  columnwise_scale_inv: float32 [ceildiv(d0, 128), 256]
// HDR-NEXT:  rowwise_data: uint8 [d0, 256]
// HDR-NEXT:  rowwise_scale_inv: float32 [2, roundup(d0, 4)]
// RUN: %python -c "import numpy as n; r = n.random.RandomState(5); b = lambda a: ((a.astype('f4').view('u4') + 0x7fff + ((a.astype('f4').view('u4') >> 16) & 1)) >> 16).astype('u2'); shapes = [(128,), (128,), (256, 128), (256,), (128, 256), (128,)]; p = [b(0.1 * r.randn(*s) + (1.0 if i == 0 else 0.0)) for i, s in enumerate(shapes)]; [n.save('%t/in%%d/arg%%d.bf16.npy' %% (m, i + 1), a) for m in (256, 200) for i, a in enumerate(p)]; x = b(r.randn(256, 128)); dy = b(r.randn(256, 128)); [n.save('%t/in%%d/arg0.bf16.npy' %% m, x[:m]) for m in (256, 200)]; [n.save('%t/in%%d/result0.bf16.npy' %% m, dy[:m]) for m in (256, 200)]"
// RUN: te-run %t/lib.so --step dyn --inputs %t/in256 --grads %t/in256 --outputs %t/dyn256
// RUN: te-run %t/lib.so --step stat --inputs %t/in256 --grads %t/in256 --outputs %t/stat256
// RUN: te-run %t/lib.so --entry dyn_fwd --inputs %t/in256 --outputs %t/dynf256
// RUN: te-run %t/lib.so --entry stat_fwd --inputs %t/in256 --outputs %t/statf256
// RUN: %python -c "import os, numpy as n; same = lambda a, b: sorted(os.listdir(a)) == sorted(os.listdir(b)) and all((n.load(os.path.join(a, f)) == n.load(os.path.join(b, f))).all() for f in os.listdir(a)); print(same('%t/dyn256/fwd', '%t/stat256/fwd'), same('%t/dyn256/bwd', '%t/stat256/bwd'), len(os.listdir('%t/dyn256/bwd')), same('%t/dynf256', '%t/statf256'), len(os.listdir('%t/dynf256'))); print([n.load('%t/dynf256/result%%d.npy' %% i).shape for i in (1, 4)])" | FileCheck %s
// CHECK: True True 7 True 8
// 1x128 ln_out [256, 128], its columnwise copy: 32768 + 2*128*4; act_out
// [256, 256], both: 65536 + 2*256*4 + 65536 + 2*256*4.
// CHECK-NEXT: [(33792,), (135168,)]
// RUN: not te-run %t/lib.so --step dyn --inputs %t/in200 --grads %t/in200 --outputs %t/dyn200 2>&1 | FileCheck %s --check-prefix=D200
// D200: te-run: error: dyn_fwd failed: dyn_fwd: recipe fp8-block needs d0 % 128 == 0, got 200
// RUN: not te-run %t/lib.so --entry dyn --inputs %t/in200 --outputs %t/dyni200 2>&1 | FileCheck %s --check-prefix=I200
// I200: te-run: error: dyn failed: dyn: recipe fp8-block needs d0 % 128 == 0, got 200
func.func @dyn(%x: tensor<?x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %w1: tensor<256x128xbf16>, %b1: tensor<256xbf16>, %w2: tensor<128x256xbf16>, %b2: tensor<128xbf16>) -> tensor<?x128xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) recipe(#te.fp8_block<>) : (tensor<?x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<256xbf16>, tensor<128x256xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
func.func @stat(%x: tensor<256x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %w1: tensor<256x128xbf16>, %b1: tensor<256xbf16>, %w2: tensor<128x256xbf16>, %b2: tensor<128xbf16>) -> tensor<256x128xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) recipe(#te.fp8_block<>) : (tensor<256x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<256xbf16>, tensor<128x256xbf16>, tensor<128xbf16>) -> tensor<256x128xbf16>
  return %y : tensor<256x128xbf16>
}
