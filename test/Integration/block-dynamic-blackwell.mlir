// MXFP8 and NVFP4 (Blackwell layouts, cpu backend) with a dynamic token
// count: the library computed for any size gives bit for bit what a library
// compiled for that size gives, in the forward and every gradient of a
// LayerNormMLP training step, at 256 tokens and at 160 (a multiple of 32
// and 16 but not of 128, so the rowwise scales' roundup(d0, 128) pads).
// Token counts that are not multiples of the block are refused by te-run,
// naming the shape expression.
//
// RUN: rm -rf %t && mkdir -p %t/in256 %t/in160 %t/in200
// RUN: %python -c "import numpy as n; r = n.random.RandomState(7); b = lambda a: ((a.astype('f4').view('u4') + 0x7fff + ((a.astype('f4').view('u4') >> 16) & 1)) >> 16).astype('u2'); shapes = [(128,), (128,), (256, 128), (256,), (128, 256), (128,)]; p = [b(0.1 * r.randn(*s) + (1.0 if i == 0 else 0.0)) for i, s in enumerate(shapes)]; [n.save('%t/in%%d/arg%%d.bf16.npy' %% (m, i + 1), a) for m in (256, 160, 200) for i, a in enumerate(p)]; x = b(r.randn(256, 128)); dy = b(r.randn(256, 128)); [n.save('%t/in%%d/arg0.bf16.npy' %% m, x[:m]) for m in (256, 160, 200)]; [n.save('%t/in%%d/result0.bf16.npy' %% m, dy[:m]) for m in (256, 160, 200)]"
// RUN: te-compile %s --train --recipe=mxfp8 --arch=sm_100a -o %t/mx.so
// RUN: FileCheck %s --check-prefix=MXHDR < %t/mx.h
// MXHDR-LABEL: /* dyn_fwd
// MXHDR:       columnwise_scale_inv: uint8 [roundup(d0/32, 4), 128]
// MXHDR:       te.saved=layernorm_mlp_0.act_out
// MXHDR:       rowwise_scale_inv: uint8 [roundup(d0, 128), 8]
// RUN: te-compile %s --train --recipe=nvfp4 --arch=sm_100a -o %t/nv.so
// RUN: FileCheck %s --check-prefix=NVHDR < %t/nv.h
// NVHDR-LABEL: /* dyn_fwd
// NVHDR:       columnwise_data: uint8 [128, d0/2]
// NVHDR-NEXT:  columnwise_scale_inv: uint8 [128, roundup(d0/16, 4)]
// RUN: te-run %t/mx.so --step dyn --inputs %t/in256 --grads %t/in256 --outputs %t/mx/dyn256
// RUN: te-run %t/mx.so --step s256 --inputs %t/in256 --grads %t/in256 --outputs %t/mx/s256
// RUN: te-run %t/mx.so --step dyn --inputs %t/in160 --grads %t/in160 --outputs %t/mx/dyn160
// RUN: te-run %t/mx.so --step s160 --inputs %t/in160 --grads %t/in160 --outputs %t/mx/s160
// RUN: te-run %t/nv.so --step dyn --inputs %t/in256 --grads %t/in256 --outputs %t/nv/dyn256
// RUN: te-run %t/nv.so --step s256 --inputs %t/in256 --grads %t/in256 --outputs %t/nv/s256
// RUN: te-run %t/nv.so --step dyn --inputs %t/in160 --grads %t/in160 --outputs %t/nv/dyn160
// RUN: te-run %t/nv.so --step s160 --inputs %t/in160 --grads %t/in160 --outputs %t/nv/s160
// RUN: %python -c "import os, numpy as n; same = lambda a, b: sorted(os.listdir(a)) == sorted(os.listdir(b)) and all((n.load(os.path.join(a, f)) == n.load(os.path.join(b, f))).all() for f in os.listdir(a)); print([same('%t/%%s/dyn%%d/%%s' %% (r, m, p), '%t/%%s/s%%d/%%s' %% (r, m, p)) for r in ('mx', 'nv') for m in (256, 160) for p in ('fwd', 'bwd')], len(os.listdir('%t/nv/dyn160/bwd')), n.load('%t/nv/dyn160/bwd/grad_arg0.bf16.npy').shape)" | FileCheck %s
// CHECK: [True, True, True, True, True, True, True, True] 7 (160, 128)
// RUN: not te-run %t/mx.so --step dyn --inputs %t/in200 --grads %t/in200 --outputs %t/mx/dyn200 2>&1 | FileCheck %s --check-prefix=MX200
// MX200: te-run: error: dim expression 'roundup(d0/32, 4)': 200 is not divisible by 32 (the recipe needs a multiple of 32 there)
func.func @dyn(%x: tensor<?x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %w1: tensor<256x128xbf16>, %b1: tensor<256xbf16>, %w2: tensor<128x256xbf16>, %b2: tensor<128xbf16>) -> tensor<?x128xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<?x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<256xbf16>, tensor<128x256xbf16>, tensor<128xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}
func.func @s256(%x: tensor<256x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %w1: tensor<256x128xbf16>, %b1: tensor<256xbf16>, %w2: tensor<128x256xbf16>, %b2: tensor<128xbf16>) -> tensor<256x128xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<256x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<256xbf16>, tensor<128x256xbf16>, tensor<128xbf16>) -> tensor<256x128xbf16>
  return %y : tensor<256x128xbf16>
}
func.func @s160(%x: tensor<160x128xbf16>, %g: tensor<128xbf16>, %b: tensor<128xbf16>, %w1: tensor<256x128xbf16>, %b1: tensor<256xbf16>, %w2: tensor<128x256xbf16>, %b2: tensor<128xbf16>) -> tensor<160x128xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<160x128xbf16>, tensor<128xbf16>, tensor<128xbf16>, tensor<256x128xbf16>, tensor<256xbf16>, tensor<128x256xbf16>, tensor<128xbf16>) -> tensor<160x128xbf16>
  return %y : tensor<160x128xbf16>
}
