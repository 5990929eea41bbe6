// RUN: te-opt %s --split-input-file --te-test-memory-plan --verify-diagnostics -o /dev/null
// RUN: te-opt %s --split-input-file --te-lower-to-runtime | FileCheck %s
// RUN: te-opt %s --split-input-file --te-test-memory-plan -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOAN
//
// The arena plan of te-lower-to-runtime (lib/Analysis/MemoryPlan), printed
// by te-test-memory-plan: at the function, the arena's slots and bytes; at
// each op, per tensor result, its slot (the slot's offset in the arena, the
// value's bytes, its live range as positions in the block: definition and
// last use, through views), a view of another buffer, the caller's result
// buffer (computed in place), or no buffer. `?` is a size or offset that
// depends on the dynamic dims. Slots are 256-byte aligned. The second RUN
// checks that te-lower-to-runtime's module info reports the same arena.

// Static shapes, and reuse of freed slots: rsigma is dead at once, so the
// FC1 output takes its slot (1); the norm output dies at FC1, so the
// activation takes slot 0; FC2's output goes back to slot 1. Each slot is
// sized by its largest member (8192 bytes). The residual add writes the
// function's result in place; the norm output, dead before that, is placed
// in the result's buffer (a loan: slot 0 keeps the activation's 8192).
// CHECK-LABEL: llvm.func @te_entry_reuse(
// CHECK: \22arena_bytes\22:16384,\22arena_slots\22:2,
// expected-remark @+1 {{arena: 2 slots, 16384 bytes}}
func.func @reuse(%x: tensor<16x64xf32>, %g: tensor<64xf32>, %w1: tensor<128x64xf32>, %w2: tensor<64x128xf32>) -> tensor<16x64xf32> {
  // expected-remark @+2 {{result #0: slot 0 at offset 0, 4096 bytes, live [0, 1], in the function's result #0 before it is written}}
  // expected-remark @+1 {{result #1: slot 1 at offset 8192, 64 bytes, live [0, 0]}}
  %n, %rs = te.norm_fwd %x norm rms_norm(%g) {eps = 1.000000e-05 : f64} : (tensor<16x64xf32>, tensor<64xf32>) -> (tensor<16x64xf32>, tensor<16xf32>)
  // expected-remark @+1 {{result #0: slot 1 at offset 8192, 8192 bytes, live [1, 2]}}
  %h = te.gemm tn %n, %w1 : (tensor<16x64xf32>, tensor<128x64xf32>) -> tensor<16x128xf32>
  // expected-remark @+1 {{result #0: slot 0 at offset 0, 8192 bytes, live [2, 3]}}
  %a = te.act gelu %h : (tensor<16x128xf32>) -> tensor<16x128xf32>
  // expected-remark @+1 {{result #0: slot 1 at offset 8192, 4096 bytes, live [3, 4]}}
  %y = te.gemm tn %a, %w2 : (tensor<16x128xf32>, tensor<64x128xf32>) -> tensor<16x64xf32>
  // expected-remark @+1 {{result #0: in place in the function's result #0}}
  %r = arith.addf %y, %x : tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}

// -----

// Dynamic tokens: the same liveness, slots and loan, whose sizes (and so
// the offsets after the first) are only known at run time.
// CHECK-LABEL: llvm.func @te_entry_dynamic(
// CHECK: \22arena_bytes\22:\22dynamic\22,\22arena_slots\22:3,
// expected-remark @+1 {{arena: 3 slots, ? bytes}}
func.func @dynamic(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %w2: tensor<64x128xbf16>) -> tensor<?x64xbf16> {
  // expected-remark @+3 {{result #0: slot 0 at offset 0, ? bytes, live [0, 1], in the function's result #0 before it is written}}
  // expected-remark @+2 {{result #1: slot 1 at offset ?, ? bytes, live [0, 0]}}
  // expected-remark @+1 {{result #2: slot 2 at offset ?, ? bytes, live [0, 0]}}
  %n, %rs, %mu = te.norm_fwd %x norm layer_norm(%g) {eps = 1.000000e-05 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> (tensor<?x64xbf16>, tensor<?xf32>, tensor<?xf32>)
  // expected-remark @+1 {{result #0: slot 1 at offset ?, ? bytes, live [1, 2]}}
  %h = te.gemm tn %n, %w1 : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  // expected-remark @+1 {{result #0: slot 0 at offset 0, ? bytes, live [2, 3]}}
  %a = te.act gelu %h : (tensor<?x128xbf16>) -> tensor<?x128xbf16>
  // expected-remark @+1 {{result #0: in place in the function's result #0}}
  %y = te.gemm tn %a, %w2 : (tensor<?x128xbf16>, tensor<64x128xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Views and results not computed in place: a reshape is a view of its
// source, which then lives until the view's last use (the return); a value
// returned twice gets a slot (and is copied into both results); an integer
// shape constant has no buffer at run time.
// CHECK-LABEL: llvm.func @te_entry_views(
// CHECK: \22arena_bytes\22:2048,\22arena_slots\22:2,
// expected-remark @+1 {{arena: 2 slots, 2048 bytes}}
func.func @views(%x: tensor<8x64xbf16>, %w: tensor<64x64xbf16>) -> (tensor<2x4x64xbf16>, tensor<8x64xbf16>, tensor<8x64xbf16>, tensor<8x64xbf16>) {
  // expected-remark @+1 {{result #0: no buffer}}
  %shape = arith.constant dense<[2, 4, 64]> : tensor<3xi64>
  // expected-remark @+1 {{result #0: slot 0 at offset 0, 1024 bytes, live [1, 4]}}
  %y = te.gemm tn %x, %w : (tensor<8x64xbf16>, tensor<64x64xbf16>) -> tensor<8x64xbf16>
  // expected-remark @+1 {{result #0: a view of result #0 of 'te.gemm'}}
  %r = tensor.reshape %y(%shape) : (tensor<8x64xbf16>, tensor<3xi64>) -> tensor<2x4x64xbf16>
  // expected-remark @+1 {{result #0: slot 1 at offset 1024, 1024 bytes, live [3, 4]}}
  %z = te.gemm tn %y, %w : (tensor<8x64xbf16>, tensor<64x64xbf16>) -> tensor<8x64xbf16>
  return %r, %z, %z, %x : tensor<2x4x64xbf16>, tensor<8x64xbf16>, tensor<8x64xbf16>, tensor<8x64xbf16>
}

// -----

// Quantized buffers (a forward of FP8 current scaling): the norm output's
// qtensor holds scale_inv (256, aligned), its transpose and its data (1024
// each); keeping only its columnwise copy is a view (the buffer's prefix),
// returned: a split result, its scale and transpose written in result 2,
// its data alone (1024 bytes) in slot 1, live until the GEMM (4), not the
// return. The statistics and the weight's qtensor are computed in place.
// Loans: the norm output (2048 bytes), dead before the weight is
// quantized, is placed in that result's buffer (4352 bytes) before it is
// written, and both amaxes in the output's: slots 0 and 2 keep no member
// in the arena (0 bytes).
// CHECK-LABEL: llvm.func @te_entry_quantized(
// CHECK: \22arena_bytes\22:1024,\22arena_slots\22:3,
// expected-remark @+1 {{arena: 3 slots, 1024 bytes}}
func.func @quantized(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w: tensor<32x64xbf16>, %bias: tensor<32xbf16>) -> (tensor<16x32xbf16>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>, !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper>, tensor<16xf32>, tensor<16xf32>) {
  // expected-remark @+3 {{result #0: slot 0 at offset 0, 2048 bytes, live [0, 1], in the function's result #1 before it is written}}
  // expected-remark @+2 {{result #1: in place in the function's result #4}}
  // expected-remark @+1 {{result #2: in place in the function's result #3}}
  %n, %rs, %mu = te.norm_fwd %x norm layer_norm(%g, %b) {eps = 1.000000e-05 : f64} : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> (tensor<16x64xbf16>, tensor<16xf32>, tensor<16xf32>)
  // expected-remark @+2 {{result #0: slot 1 at offset 0, 1024 bytes, live [1, 4], its rowwise parts (the others in the function's result #2)}}
  // expected-remark @+1 {{result #1: slot 2 at offset 1024, 4 bytes, live [1, 1], in the function's result #0 before it is written}}
  %q, %qa = te.quantize %n : tensor<16x64xbf16> -> !te.qtensor<16x64xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  // expected-remark @+1 {{result #0: a view of result #0 of 'te.quantize'}}
  %col = te.drop_usage %q : !te.qtensor<16x64xe4m3, #te.fp8_current<>, both, hopper> -> !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper>
  // expected-remark @+2 {{result #0: in place in the function's result #1}}
  // expected-remark @+1 {{result #1: slot 0 at offset 0, 4 bytes, live [3, 3], in the function's result #0 before it is written}}
  %qw, %wa = te.quantize %w {weight} : tensor<32x64xbf16> -> !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  // expected-remark @+1 {{result #0: in place in the function's result #0}}
  %y = te.gemm tn %q, %qw bias(%bias) {fast_accumulate} : (!te.qtensor<16x64xe4m3, #te.fp8_current<>, both, hopper>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>, tensor<32xbf16>) -> tensor<16x32xbf16>
  return %y, %qw, %col, %mu, %rs : tensor<16x32xbf16>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>, !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper>, tensor<16xf32>, tensor<16xf32>
}

// -----

// Not split: the quantized value is returned itself too (result 1), so its
// rowwise copy must be in a buffer of its own: it keeps its whole slot
// (2304 bytes, live to the return) and its columnwise view is copied out.
// expected-remark @+1 {{arena: 2 slots, 2304 bytes}}
func.func @not_split(%n: tensor<16x64xbf16>, %w: !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>) -> (tensor<16x32xbf16>, !te.qtensor<16x64xe4m3, #te.fp8_current<>, both, hopper>, !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper>) {
  // expected-remark @+2 {{result #0: slot 0 at offset 0, 2304 bytes, live [0, 3]}}
  // expected-remark @+1 {{result #1: slot 1 at offset 2304, 4 bytes, live [0, 0], in the function's result #0 before it is written}}
  %q, %qa = te.quantize %n : tensor<16x64xbf16> -> !te.qtensor<16x64xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  // expected-remark @+1 {{result #0: a view of result #0 of 'te.quantize'}}
  %col = te.drop_usage %q : !te.qtensor<16x64xe4m3, #te.fp8_current<>, both, hopper> -> !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper>
  // expected-remark @+1 {{result #0: in place in the function's result #0}}
  %y = te.gemm tn %q, %w : (!te.qtensor<16x64xe4m3, #te.fp8_current<>, both, hopper>, !te.qtensor<32x64xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<16x32xbf16>
  return %y, %q, %col : tensor<16x32xbf16>, !te.qtensor<16x64xe4m3, #te.fp8_current<>, both, hopper>, !te.qtensor<16x64xe4m3, #te.fp8_current<>, columnwise, hopper>
}

// -----

// Destination passing (te-lower-to-runtime-concat.mlir checks the calls):
// a and b are views of the concat's buffer at byte offsets 0 and 12 (their
// ops write the slices), the zero constant has no buffer (nothing writes
// its slices: the amax update takes them as unused), and the concat's slot
// is live from a's definition (position 0), not its own (3), to the amax
// update.
// CHECK-LABEL: llvm.func @te_entry_concat(
// CHECK: \22arena_bytes\22:256,\22arena_slots\22:1,
// expected-remark @+1 {{arena: 1 slots, 256 bytes}}
func.func @concat(%x: tensor<1xf32>, %y: tensor<1xf32>, %h: tensor<1024x4xf32>, %s: tensor<4xf32>) -> (tensor<1024x4xf32>, tensor<4xf32>) {
  // expected-remark @+1 {{result #0: a view of result #0 of 'tensor.concat'}}
  %a = arith.addf %x, %y : tensor<1xf32>
  // expected-remark @+1 {{result #0: a view of result #0 of 'tensor.concat' at byte offset 12}}
  %b = arith.addf %y, %y : tensor<1xf32>
  // expected-remark @+1 {{result #0: no buffer (only concats read it)}}
  %z = arith.constant dense<0.000000e+00> : tensor<1xf32>
  // expected-remark @+1 {{result #0: slot 0 at offset 0, 16 bytes, live [0, 4]}}
  %c = tensor.concat dim(0) %a, %z, %z, %b : (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4xf32>
  // expected-remark @+2 {{result #0: in place in the function's result #0}}
  // expected-remark @+1 {{result #1: in place in the function's result #1}}
  %nh, %ns = te.amax_update %h, %s, %c recipe(#te.fp8_delayed<>) : tensor<1024x4xf32>, tensor<4xf32>
  return %nh, %ns : tensor<1024x4xf32>, tensor<4xf32>
}

// -----

// Loans: a result's buffer backs values that die before its first write.
// The returned concat's first write is its placed part %a (position 1),
// not the concat: rsigma (dead at once) is lent, while %m, which fits the
// concat's 4096 bytes and dies (3) before the concat op (4), is not (the
// buffer holds %a by then).
// LOAN: remark: arena: 2 slots, 8192 bytes
// LOAN: remark: result #1: slot 1 at offset 4096, 64 bytes, live [0, 0], in the function's result #0 before it is written
// LOAN: remark: result #0: slot 1 at offset 4096, 4096 bytes, live [2, 3]{{$}}
// CHECK-LABEL: llvm.func @te_entry_concat_loan(
// CHECK: \22arena_bytes\22:8192,\22arena_slots\22:2,
// expected-remark @+1 {{arena: 2 slots, 8192 bytes}}
func.func @concat_loan(%x: tensor<16x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) -> tensor<32x32xf32> {
  // expected-remark @+2 {{result #0: slot 0 at offset 0, 4096 bytes, live [0, 2]}}
  // expected-remark @+1 {{result #1: slot 1 at offset 4096, 64 bytes, live [0, 0], in the function's result #0 before it is written}}
  %n, %rs = te.norm_fwd %x norm rms_norm(%g) {eps = 1.000000e-05 : f64} : (tensor<16x64xf32>, tensor<64xf32>) -> (tensor<16x64xf32>, tensor<16xf32>)
  // expected-remark @+1 {{result #0: a view of result #0 of 'tensor.concat'}}
  %a = te.gemm tn %n, %w : (tensor<16x64xf32>, tensor<32x64xf32>) -> tensor<16x32xf32>
  // expected-remark @+1 {{result #0: slot 1 at offset 4096, 4096 bytes, live [2, 3]}}
  %m = te.act gelu %n : (tensor<16x64xf32>) -> tensor<16x64xf32>
  // expected-remark @+1 {{result #0: a view of result #0 of 'tensor.concat' at byte offset 2048}}
  %b = te.gemm tn %m, %w : (tensor<16x64xf32>, tensor<32x64xf32>) -> tensor<16x32xf32>
  // expected-remark @+1 {{result #0: in place in the function's result #0}}
  %c = tensor.concat dim(0) %a, %b : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<32x32xf32>
  return %c : tensor<32x32xf32>
}
