// Donation of a backward's saved forward intermediates (te_module_run_donated,
// te-run --donate): the backward places its intermediates in the donated
// buffers after their last read, so it allocates a smaller arena
// (te_module_entry_arena_bytes_donated), and its gradients are bit for bit
// those of the run that donates nothing: bf16 GELU (te.dact written over
// the pre-activation it reads last) and fp8-current (quantized saved
// tensors) at dynamic and static token counts, and with every segment
// outlined (--dedup-layers=on: a donated buffer is passed to the outlined
// code as any other).
//
// RUN: rm -rf %t && mkdir -p %t/in
// RUN: te-compile %s --train -o %t/lib.so
// RUN: te-compile %s --train --recipe fp8-current -o %t/fp8.so
// RUN: te-compile %s --train --recipe fp8-delayed -o %t/fp8d.so
// RUN: te-compile %s --train --dedup-layers=on -o %t/dedup.so
// RUN: %python -c "import numpy as n; r = n.random.RandomState(11); b = lambda a: ((a.astype('f4').view('u4') + 0x7fff + ((a.astype('f4').view('u4') >> 16) & 1)) >> 16).astype('u2'); shapes = [(64,), (64,), (128, 64), (128,), (64, 128), (64,)]; [n.save('%t/in/arg%%d.bf16.npy' %% (i + 1), b(0.1 * r.randn(*s) + (1.0 if i == 0 else 0.0))) for i, s in enumerate(shapes)]; n.save('%t/in/arg0.bf16.npy', b(r.randn(32, 64))); n.save('%t/in/result0.bf16.npy', b(r.randn(32, 64)))"
// RUN: te-run %t/lib.so --step dyn --inputs %t/in --grads %t/in --outputs %t/kept --caller-memory 2> %t/kept.log
// RUN: te-run %t/lib.so --step dyn --inputs %t/in --grads %t/in --outputs %t/donated --caller-memory --donate 2> %t/donated.log
// RUN: te-run %t/lib.so --step stat --inputs %t/in --grads %t/in --outputs %t/skept
// RUN: te-run %t/lib.so --step stat --inputs %t/in --grads %t/in --outputs %t/sdonated --donate
// RUN: te-run %t/fp8.so --step dyn --inputs %t/in --grads %t/in --outputs %t/fkept --caller-memory 2> %t/fkept.log
// RUN: te-run %t/fp8.so --step dyn --inputs %t/in --grads %t/in --outputs %t/fdonated --caller-memory --donate 2> %t/fdonated.log
// RUN: te-run %t/fp8d.so --step dyn --inputs %t/in --grads %t/in --outputs %t/gkept --caller-memory 2> %t/gkept.log
// RUN: te-run %t/fp8d.so --step dyn --inputs %t/in --grads %t/in --outputs %t/gdonated --caller-memory --donate 2> %t/gdonated.log
// RUN: te-run %t/dedup.so --step dyn --inputs %t/in --grads %t/in --outputs %t/dkept
// RUN: te-run %t/dedup.so --step dyn --inputs %t/in --grads %t/in --outputs %t/ddonated --donate
// RUN: %python -c "import os, numpy as n; same = lambda a, b: sorted(os.listdir(a)) == sorted(os.listdir(b)) and all((n.load(os.path.join(a, f)) == n.load(os.path.join(b, f))).all() for f in os.listdir(a)); print([same('%t/%%skept/bwd' %% p, '%t/%%sdonated/bwd' %% p) for p in ('', 's', 'f', 'g', 'd')], same('%t/kept/bwd', '%t/dkept/bwd'), len(os.listdir('%t/kept/bwd')))" | FileCheck %s --check-prefix=SAME
// SAME: [True, True, True, True, True] True 7
// The arena the backward is given shrinks when it is donated its saved
// tensors (the forward has none to donate: the same arena), and never
// grows. Under fp8-delayed too: the fused dact-quantize casts rowwise only
// (the backward adds the columnwise copy), so that copy goes into a dead
// saved tensor's buffer, and the rowwise-only act_out takes the quantized
// output gradient.
// RUN: %python -c "import re, sys; a = [dict(re.findall(r'(\w+_[fb]wd): caller arena (\d+)', open(f).read())) for f in sys.argv[1:]]; print([(int(d['dyn_bwd']) < int(k['dyn_bwd']), int(d['dyn_bwd']) <= int(k['dyn_bwd']) and d['dyn_fwd'] == k['dyn_fwd']) for k, d in (a[0:2], a[2:4], a[4:6])])" %t/kept.log %t/donated.log %t/fkept.log %t/fdonated.log %t/gkept.log %t/gdonated.log | FileCheck %s --check-prefix=SHRINK
// SHRINK: [(True, True), (True, True), (True, True)]
//
// te-run --list: the donatable arguments (the saved forward intermediates,
// not the inputs and weights the backward also reads) and, for the static
// entry, the arena with and without them donated.
// RUN: te-run %t/lib.so --list | FileCheck %s --check-prefix=LIST
// LIST-LABEL: stat_bwd
// LIST-NOT: arg0{{.*}}(donatable)
// LIST: (te.saved=layernorm_mlp_0.fc1_out){{.*}} (donatable)
// LIST: arena: [[FULL:[0-9]+]] bytes, {{[0-9]+}} bytes with its donatable arguments donated
// The plan's peak of a static entry: its results (the seven gradients:
// dx 4096, the two weights' 2 x 16384, the biases and norm weights 256 +
// 3 x 128 bytes) and its arena.
// LIST-NEXT: peak: {{[0-9]+}} bytes above the arguments (results 37504 + arena [[FULL]])
//
// The fp8-current backward's saved fc1_out shares the token dim d0 (its
// te.dbias_dact ties its rows to the gradient's). Its saved quantized
// tensors back nothing: act_out's candidates go into a gradient's buffer
// before that is written (a result's loan), and the columnwise-only ln_out
// (d0 x 64 bytes) holds none of the larger values that live after FC1's
// wgrad reads it. Under fp8-delayed a quantized one is a donor (below).
// RUN: te-run %t/fp8.so --list | FileCheck %s --check-prefix=QLIST
// QLIST-LABEL: dyn_bwd
// QLIST: (te.saved=layernorm_mlp_0.ln_out): qtensor ["d0",64] {scale_inv, transpose}{{$}}
// QLIST: (te.saved=layernorm_mlp_0.fc1_out): bfloat16 ["d0",128] (donatable)
// QLIST: (te.saved=layernorm_mlp_0.act_out): qtensor ["d0",128] {scale_inv, data}{{$}}
// RUN: te-run %t/fp8d.so --list | FileCheck %s --check-prefix=DLIST
// DLIST-LABEL: dyn_bwd
// DLIST: (te.saved=layernorm_mlp_0.ln_out): qtensor ["d0",64] {scale_inv, transpose}{{$}}
// Quantized saved tensors with the dynamic token dim are donors too (their
// parts hold at least their raw bytes at every token count): fp8-delayed's
// rowwise act_out (its scale_inv, 256 bytes with the
// alignment of the part after it, and d0 x 128 bytes) holds the quantized
// dy (scale_inv and two d0 x 64 parts, each a multiple of 256 bytes) at
// every token count.
// DLIST: (te.saved=layernorm_mlp_0.act_out): qtensor ["d0",128] (donatable)
//
// A flag on an argument that is not donatable fails before the run, naming
// it (the module client; te-run only flags donatable ones, so through the
// Python binding in test/python/test_donation.py).
func.func @dyn(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
func.func @stat(%x: tensor<32x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<32x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<32x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<32x64xbf16>
  return %y : tensor<32x64xbf16>
}
