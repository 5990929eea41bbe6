// The caller's memory (te_rt_context_set_arena / _set_workspace, what the
// PyTorch ops pass on every call): te-run --caller-memory sizes each
// entry's arena with te_module_entry_arena_bytes at the bound dims (the
// library's te_arena_bytes_<fn>: dynamic token counts included) and gives
// it, and the workspace, to the entry. The results are bit for bit those
// of entries that allocate their own, in the forward output and
// every gradient (the saved FP8 bundle between them), at two token counts and for a static entry;
// the arena te_arena_bytes_<fn> reports grows with the tokens.
//
// RUN: rm -rf %t && mkdir -p %t/in24 %t/in40
// RUN: te-compile %s --train --branch-max-rows=0 -o %t/lib.so
// RUN: %python -c "import numpy as n; r = n.random.RandomState(7); b = lambda a: ((a.astype('f4').view('u4') + 0x7fff + ((a.astype('f4').view('u4') >> 16) & 1)) >> 16).astype('u2'); shapes = [(64,), (64,), (128, 64), (128,), (64, 128), (64,)]; p = [b(0.1 * r.randn(*s) + (1.0 if i == 0 else 0.0)) for i, s in enumerate(shapes)]; [n.save('%t/in%%d/arg%%d.bf16.npy' %% (m, i + 1), a) for m in (24, 40) for i, a in enumerate(p)]; [n.save('%t/in%%d/arg0.bf16.npy' %% m, b(r.randn(m, 64))) for m in (24, 40)]; [n.save('%t/in%%d/result0.bf16.npy' %% m, b(r.randn(m, 64))) for m in (24, 40)]"
// RUN: te-run %t/lib.so --step dyn --inputs %t/in24 --grads %t/in24 --outputs %t/own24
// RUN: te-run %t/lib.so --step dyn --inputs %t/in24 --grads %t/in24 --outputs %t/caller24 --caller-memory
// RUN: te-run %t/lib.so --step dyn --inputs %t/in40 --grads %t/in40 --outputs %t/own40
// RUN: te-run %t/lib.so --step dyn --inputs %t/in40 --grads %t/in40 --outputs %t/caller40 --caller-memory --bench 2
// RUN: te-run %t/lib.so --step stat --inputs %t/in24 --grads %t/in24 --outputs %t/owns
// RUN: te-run %t/lib.so --step stat --inputs %t/in24 --grads %t/in24 --outputs %t/callers --caller-memory
// RUN: %python -c "import os, numpy as n; same = lambda a, b: sorted(os.listdir(a)) == sorted(os.listdir(b)) and all((n.load(os.path.join(a, f)) == n.load(os.path.join(b, f))).all() for f in os.listdir(a)); print([same('%t/own%%s/%%s' %% (m, p), '%t/caller%%s/%%s' %% (m, p)) for m in ('24', '40', 's') for p in ('fwd', 'bwd')], len(os.listdir('%t/own40/fwd')), len(os.listdir('%t/own40/bwd')))" | FileCheck %s
// CHECK: [True, True, True, True, True, True] 1 7
// The arena te-run gives is te_module_entry_arena_bytes at the bound dims
// (te_arena_bytes_<fn>): more tokens, more arena; the static entry's at 24
// tokens is at most the dynamic one's there (a static plan places values
// in results' buffers by their exact sizes; the dynamic one picks those
// loans at 4096 tokens and takes them where they fit; compiled without
// te-fork-branches, whose branches keep a static entry's values longer).
// (Its -1 out of range
// is checked in te-lower-to-runtime-sizes.mlir.)
// RUN: te-run %t/lib.so --step dyn --inputs %t/in24 --grads %t/in24 --outputs %t/a24 --caller-memory 2> %t/a24.log
// RUN: te-run %t/lib.so --step dyn --inputs %t/in40 --grads %t/in40 --outputs %t/a40 --caller-memory 2> %t/a40.log
// RUN: te-run %t/lib.so --step stat --inputs %t/in24 --grads %t/in24 --outputs %t/as --caller-memory 2> %t/as.log
// RUN: FileCheck %s --check-prefix=A24 < %t/a24.log
// A24: te-run: dyn_fwd: caller arena {{[1-9][0-9]*}} bytes, workspace 50331648 bytes
// A24: te-run: dyn_bwd: caller arena {{[0-9]+}} bytes, workspace 50331648 bytes
// RUN: %python -c "import re, sys; a = [int(re.search(r'_fwd: caller arena (\d+)', open(f).read()).group(1)) for f in sys.argv[1:]]; print(a[0] < a[1], a[2] <= a[0])" %t/a24.log %t/a40.log %t/as.log | FileCheck %s --check-prefix=GROW
// GROW: True True
func.func @dyn(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) recipe(#te.fp8_current<>) : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
func.func @stat(%x: tensor<24x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<24x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) recipe(#te.fp8_current<>) : (tensor<24x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<24x64xbf16>
  return %y : tensor<24x64xbf16>
}
