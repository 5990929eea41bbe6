// Layer deduplication end to end: a stack of 4 identical LayerNormMLP
// layers (with residual adds) compiled with te-compile's default
// (--dedup-layers=auto: each layer's calls go into a function shared by the
// identical ones) gives the same library description and the same results,
// byte for byte, as without (--dedup-layers=off), in bf16 and fp8-delayed,
// with stored and checkpointed activations, for the training step and the
// inference entry.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: te-compile %s --train --dedup-layers=off -o %t/off.so
// RUN: te-compile %s --train -o %t/auto.so
// RUN: nm %t/off.so | FileCheck %s --check-prefix=OFF
// RUN: nm %t/auto.so | FileCheck %s --check-prefix=AUTO
// OFF-NOT: te_segment
// AUTO: t te_segment_0
// RUN: te-run %t/off.so --list > %t/off.list
// RUN: te-run %t/auto.so --list > %t/auto.list
// RUN: cmp %t/off.list %t/auto.list
// RUN: te-run %t/off.so --step model --random 5 --outputs %t/off.step
// RUN: te-run %t/auto.so --step model --random 5 --outputs %t/auto.step
// RUN: cmp %t/off.step/fwd/result0.bf16.npy %t/auto.step/fwd/result0.bf16.npy
// RUN: cmp %t/off.step/bwd/grad_arg0.bf16.npy %t/auto.step/bwd/grad_arg0.bf16.npy
// RUN: cmp %t/off.step/bwd/grad_arg3.bf16.npy %t/auto.step/bwd/grad_arg3.bf16.npy
// RUN: diff -r %t/off.step %t/auto.step
// RUN: te-run %t/off.so --entry model --random 5 --outputs %t/off.inf
// RUN: te-run %t/auto.so --entry model --random 5 --outputs %t/auto.inf
// RUN: cmp %t/off.inf/result0.bf16.npy %t/auto.inf/result0.bf16.npy
//
// Checkpointed.
// RUN: te-compile %s --train --checkpoint --dedup-layers=off -o %t/ck-off.so
// RUN: te-compile %s --train --checkpoint -o %t/ck-auto.so
// RUN: nm %t/ck-auto.so | FileCheck %s --check-prefix=AUTO
// RUN: te-run %t/ck-off.so --step model --random 6 --outputs %t/ck-off.step
// RUN: te-run %t/ck-auto.so --step model --random 6 --outputs %t/ck-auto.step
// RUN: cmp %t/ck-off.step/bwd/grad_arg0.bf16.npy %t/ck-auto.step/bwd/grad_arg0.bf16.npy
// RUN: diff -r %t/ck-off.step %t/ck-auto.step
//
// fp8-delayed (recipe state threaded through every layer).
// RUN: te-compile %s --train --recipe fp8-delayed --dedup-layers=off -o %t/fp8-off.so
// RUN: te-compile %s --train --recipe fp8-delayed -o %t/fp8-auto.so
// RUN: nm %t/fp8-auto.so | FileCheck %s --check-prefix=AUTO
// RUN: te-run %t/fp8-off.so --list > %t/fp8-off.list
// RUN: te-run %t/fp8-auto.so --list > %t/fp8-auto.list
// RUN: cmp %t/fp8-off.list %t/fp8-auto.list
// RUN: te-run %t/fp8-off.so --step model --random 7 --outputs %t/fp8-off.step
// RUN: te-run %t/fp8-auto.so --step model --random 7 --outputs %t/fp8-auto.step
// RUN: cmp %t/fp8-off.step/fwd/result0.bf16.npy %t/fp8-auto.step/fwd/result0.bf16.npy
// RUN: diff -r %t/fp8-off.step %t/fp8-auto.step
// RUN: te-compile %s --train --checkpoint --recipe fp8-delayed --dedup-layers=off -o %t/fp8ck-off.so
// RUN: te-compile %s --train --checkpoint --recipe fp8-delayed -o %t/fp8ck-auto.so
// RUN: te-run %t/fp8ck-off.so --step model --random 8 --outputs %t/fp8ck-off.step
// RUN: te-run %t/fp8ck-auto.so --step model --random 8 --outputs %t/fp8ck-auto.step
// RUN: diff -r %t/fp8ck-off.step %t/fp8ck-auto.step
//
// A bad mode.
// RUN: not te-compile %s --train --dedup-layers=sometimes -o %t/bad.so 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: te-compile: error: --dedup-layers must be off, auto or on, got 'sometimes'

func.func @model(%x: tensor<16x64xbf16>, %g0: tensor<64xbf16>, %b0: tensor<64xbf16>, %w1_0: tensor<128x64xbf16>, %c1_0: tensor<128xbf16>, %w2_0: tensor<64x128xbf16>, %c2_0: tensor<64xbf16>, %g1: tensor<64xbf16>, %b1: tensor<64xbf16>, %w1_1: tensor<128x64xbf16>, %c1_1: tensor<128xbf16>, %w2_1: tensor<64x128xbf16>, %c2_1: tensor<64xbf16>, %g2: tensor<64xbf16>, %b2: tensor<64xbf16>, %w1_2: tensor<128x64xbf16>, %c1_2: tensor<128xbf16>, %w2_2: tensor<64x128xbf16>, %c2_2: tensor<64xbf16>, %g3: tensor<64xbf16>, %b3: tensor<64xbf16>, %w1_3: tensor<128x64xbf16>, %c1_3: tensor<128xbf16>, %w2_3: tensor<64x128xbf16>, %c2_3: tensor<64xbf16>) -> tensor<16x64xbf16> {
  %m0 = te.layernorm_mlp %x norm layer_norm(%g0, %b0) fc1(%w1_0, %c1_0) act gelu fc2(%w2_0, %c2_0) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h0 = arith.addf %x, %m0 : tensor<16x64xbf16>
  %m1 = te.layernorm_mlp %h0 norm layer_norm(%g1, %b1) fc1(%w1_1, %c1_1) act gelu fc2(%w2_1, %c2_1) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h1 = arith.addf %h0, %m1 : tensor<16x64xbf16>
  %m2 = te.layernorm_mlp %h1 norm layer_norm(%g2, %b2) fc1(%w1_2, %c1_2) act gelu fc2(%w2_2, %c2_2) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h2 = arith.addf %h1, %m2 : tensor<16x64xbf16>
  %m3 = te.layernorm_mlp %h2 norm layer_norm(%g3, %b3) fc1(%w1_3, %c1_3) act gelu fc2(%w2_3, %c2_3) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h3 = arith.addf %h2, %m3 : tensor<16x64xbf16>
  return %h3 : tensor<16x64xbf16>
}
