// te-compile --recipe and te-run with quantized tensors: the saved FP8
// bundle lists its inner tensors, te-run carries it from forward to
// backward (and writes it as bytes), delayed-scaling state starts as TE's
// and comes back updated, and bad quantized inputs are clear errors.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: te-compile %s --train -o %t/lib.so 2>/dev/null
// Remarks (here: why the bias gradients are not fused into the FP8 wgrad
// GEMMs) only with --remarks.
// RUN: te-compile %S/Inputs/ln_mlp_gelu_bf16/model.mlir --train --recipe fp8-current -o %t/m.so 2>&1 | count 0
// RUN: te-compile %S/Inputs/ln_mlp_gelu_bf16/model.mlir --train --recipe fp8-current --remarks -o %t/m.so 2>&1 | FileCheck %s --check-prefix=REMARK
// REMARK: remark: te-fuse-gemm-epilogues: bias gradient not fused: the wgrad GEMM reads the quantized gradient
// RUN: te-run %t/lib.so --list | FileCheck %s --check-prefix=LIST
// LIST:      f_fwd
// LIST-NEXT:   arg0: bfloat16 [32,64]
// LIST-NEXT:   arg1: bfloat16 [32,64]
// LIST-NEXT:   arg2 (te.state=linear_0.amax_history_fwd): float32 [8,3]
// LIST-NEXT:   arg3 (te.state=linear_0.scales_fwd): float32 [3]
// LIST-NEXT:   -> result0: bfloat16 [32,32]
// LIST-NEXT:   -> result1: qtensor [32,64] (te.saved=linear_0.input)
// LIST-NEXT:   -> result2: qtensor [32,64] (te.saved=linear_0.weight)
// LIST-NEXT:   -> result3: float32 [8,3] (te.state=linear_0.amax_history_fwd)
// LIST-NEXT:   -> result4: float32 [3] (te.state=linear_0.scales_fwd)
// LIST:      f_bwd
// LIST-NEXT:   arg0 (te.saved=linear_0.input): qtensor [32,64]
//
// A step from TE's initial state (scales 1): the new forward state has this
// step's amaxes in the last history row, scales 448 / amax for the input and
// weight slots and 1 for the unused output slot.
// RUN: %python -c "import numpy as n; r = n.random.RandomState(0); b = lambda a: (a.astype('f4').view('u4') + 0x7fff + ((a.astype('f4').view('u4') >> 16) & 1)) >> 16; n.save('%t/x.bf16.npy', b(r.randn(32, 64)).astype('u2')); n.save('%t/w.bf16.npy', b(0.5 * r.randn(32, 64)).astype('u2')); n.save('%t/dy.bf16.npy', b(r.randn(32, 32)).astype('u2'))"
// RUN: mkdir -p %t/g && cp %t/dy.bf16.npy %t/g/result0.bf16.npy
// RUN: te-run %t/lib.so --step f --input arg0=%t/x.bf16.npy --input arg1=%t/w.bf16.npy --grads %t/g --outputs %t/o | FileCheck %s --check-prefix=STEP
// STEP: te-run: step f: f_fwd (5 results) and f_bwd (4 results) on cpu
// RUN: %python -c "import numpy as n; h = n.load('%t/o/fwd/state.linear_0.amax_history_fwd.npy'); s = n.load('%t/o/fwd/state.linear_0.scales_fwd.npy'); x = n.load('%t/x.bf16.npy').astype('u4') << 16; w = n.load('%t/w.bf16.npy').astype('u4') << 16; ax = n.abs(x.view('f4')).max(); aw = n.abs(w.view('f4')).max(); print(bool((h[:-1] == 0).all()), h[-1].tolist() == [ax, aw, 0.0], s.tolist() == [n.float32(448) / ax, n.float32(448) / aw, 1.0]); print(sorted(__import__('os').listdir('%t/o/bwd')))" | FileCheck %s --check-prefix=STATE
// STATE: True True True
// STATE-NEXT: ['grad_arg0.bf16.npy', 'grad_arg1.bf16.npy', 'state.linear_0.amax_history_bwd.npy', 'state.linear_0.scales_bwd.npy']
//
// The backward alone, fed the forward's saved bundle from files (a
// quantized tensor is its buffer's bytes: scale_inv, transpose, data).
// RUN: te-run %t/lib.so --entry f_fwd --input arg0=%t/x.bf16.npy --input arg1=%t/w.bf16.npy --outputs %t/f
// RUN: %python -c "import numpy as n; a = n.load('%t/f/result1.npy'); print(a.dtype, a.shape)" | FileCheck %s --check-prefix=BYTES
// BYTES: uint8 (2304,)
// RUN: te-run %t/lib.so --entry f_bwd --input arg0=%t/f/result1.npy --input arg1=%t/f/result2.npy --input arg2=%t/dy.bf16.npy --outputs %t/b
// RUN: %python -c "import numpy as n; print(bool((n.load('%t/b/result0.bf16.npy') == n.load('%t/o/bwd/grad_arg0.bf16.npy')).all()))" | FileCheck %s --check-prefix=SAME
// SAME: True
// RUN: not te-run %t/lib.so --entry f_bwd --input arg0=%t/f/result2.npy --input arg1=%t/f/result1.npy --input arg2=%t/dy.bf16.npy 2>&1 | FileCheck %s --check-prefix=SIZE
// SIZE: te-run: error: f_bwd: arg0 (te.saved=linear_0.input) (!te.qtensor<32x64xe4m3, #te.fp8_delayed<amax_history_len = 8>, columnwise, hopper>) must be 2304 bytes, got 4352
// RUN: not te-run %t/lib.so --entry f_bwd --input arg0=%t/x.bf16.npy --input arg1=%t/f/result2.npy --input arg2=%t/dy.bf16.npy 2>&1 | FileCheck %s --check-prefix=KIND
// KIND: te-run: error: '{{.*}}x.bf16.npy' must hold a quantized tensor's bytes (a 1-D uint8 array, as te-run --outputs writes), got <u2 [32x64]
func.func @f(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<32x32xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_delayed<amax_history_len = 8>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return %y : tensor<32x32xbf16>
}
