// Loans (lib/Analysis/MemoryPlan): a result's buffer backs intermediates
// that die before the result is written. An FP8 LayerNormLinear backward
// runs its wgrad last, so the dgrad's output (d0 x 64 bf16, 128 x d0 bytes)
// is dead before the weight gradient (32 x 64 bf16, 4096 bytes) is
// written: with a dynamic token count it is placed there when it fits (up
// to 32 tokens, compared at run time), else in the arena. The library for
// any token count gives bit for bit what libraries compiled for 24 tokens
// (the loan always taken) and 48 (never) give, and its arena at 24 tokens
// lacks the dgrad's output while at 48 it has it.
//
// RUN: rm -rf %t && mkdir -p %t/in24 %t/in48
// RUN: te-opt %s --te-generate-backward --te-decompose | te-opt --te-test-memory-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAN
// PLAN: remark: result #0: slot {{[0-9]+}} at offset ?, ? bytes, live [1, 3], in the function's result #3 before it is written when it fits
// PLAN-NEXT: te.gemm nn {{.*}} -> tensor<?x64xbf16>
// PLAN: remark: result #0: slot {{[0-9]+}} at offset {{[0-9]+}}, 3072 bytes, live [1, 3], in the function's result #3 before it is written{{$}}
// PLAN-NEXT: te.gemm nn {{.*}} -> tensor<24x64xbf16>
// PLAN: remark: result #0: slot {{[0-9]+}} at offset {{[0-9]+}}, 6144 bytes, live [1, 3]{{$}}
// PLAN-NEXT: te.gemm nn {{.*}} -> tensor<48x64xbf16>
// RUN: te-compile %s --train -o %t/lib.so
// RUN: %python -c "import numpy as n; r = n.random.RandomState(3); b = lambda a: ((a.astype('f4').view('u4') + 0x7fff + ((a.astype('f4').view('u4') >> 16) & 1)) >> 16).astype('u2'); shapes = [(64,), (64,), (32, 64), (32,)]; p = [b(0.1 * r.randn(*s) + (1.0 if i == 0 else 0.0)) for i, s in enumerate(shapes)]; [n.save('%t/in%%d/arg%%d.bf16.npy' %% (m, i + 1), a) for m in (24, 48) for i, a in enumerate(p)]; [n.save('%t/in%%d/arg0.bf16.npy' %% m, b(r.randn(m, 64))) for m in (24, 48)]; [n.save('%t/in%%d/result0.bf16.npy' %% m, b(r.randn(m, 32))) for m in (24, 48)]"
// RUN: te-run %t/lib.so --step dyn --inputs %t/in24 --grads %t/in24 --outputs %t/dyn24 --caller-memory 2> %t/dyn24.log
// RUN: te-run %t/lib.so --step s24 --inputs %t/in24 --grads %t/in24 --outputs %t/s24
// RUN: te-run %t/lib.so --step dyn --inputs %t/in48 --grads %t/in48 --outputs %t/dyn48 --caller-memory 2> %t/dyn48.log
// RUN: te-run %t/lib.so --step s48 --inputs %t/in48 --grads %t/in48 --outputs %t/s48
// RUN: %python -c "import os, numpy as n; same = lambda a, b: sorted(os.listdir(a)) == sorted(os.listdir(b)) and all((n.load(os.path.join(a, f)) == n.load(os.path.join(b, f))).all() for f in os.listdir(a)); print([same('%t/dyn%%d/%%s' %% (m, p), '%t/s%%d/%%s' %% (m, p)) for m in (24, 48) for p in ('fwd', 'bwd')], len(os.listdir('%t/dyn24/bwd')))" | FileCheck %s
// CHECK: [True, True, True, True] 5
// The backward's arena: the quantized dy (256 + 2 x 32 d0 bytes, the amax
// beside it) and, at 48 tokens only, the dgrad's output (128 x 48 bytes).
// RUN: %python -c "import re, sys; a = [int(re.search(r'dyn_bwd: caller arena (\d+)', open(f).read()).group(1)) for f in sys.argv[1:]]; print(a[0] < 256 + 64 * 24 + 512, a[1] >= 256 + 64 * 48 + 128 * 48)" %t/dyn24.log %t/dyn48.log | FileCheck %s --check-prefix=ARENA
// ARENA: True True
func.func @dyn(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w: tensor<32x64xbf16>, %bias: tensor<32xbf16>) -> tensor<?x32xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) recipe(#te.fp8_current<>) : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}
func.func @s24(%x: tensor<24x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w: tensor<32x64xbf16>, %bias: tensor<32xbf16>) -> tensor<24x32xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) recipe(#te.fp8_current<>) : (tensor<24x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<24x32xbf16>
  return %y : tensor<24x32xbf16>
}
func.func @s48(%x: tensor<48x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w: tensor<32x64xbf16>, %bias: tensor<32xbf16>) -> tensor<48x32xbf16> {
  %y = te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias) recipe(#te.fp8_current<>) : (tensor<48x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<48x32xbf16>
  return %y : tensor<48x32xbf16>
}
