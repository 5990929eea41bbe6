// RUN: te-opt %s --split-input-file --te-test-memory-plan --verify-diagnostics -o /dev/null
// RUN: te-opt %s --split-input-file --te-lower-to-runtime | FileCheck %s
//
// Donation and in-place writes in the arena plan (lib/Analysis/MemoryPlan):
// te-test-memory-plan prints, at the function, the arena with every donor
// donated and the donors; at a value, the operand it is written over (a
// te.dact over an operand that dies there) and the donated argument that
// backs it. A backward's argument is donatable when it is `te.saved`
// without `te.alias` (a saved forward intermediate) and not returned. The
// second RUN checks the lowering: the entry asks te_rt_arg_donated once per
// donor, te_arena_bytes_donated_<fn> sizes the arena for a donation, and
// the module info marks the donors and gives both arena sizes.

// The backward of a GELU LayerNormMLP (te-generate-backward, te-decompose):
// d_act (slot 0) dies at the te.dact, which writes d_fc1 over it (before
// donation, slot 1 of 4096 bytes held d_fc1 beside d_act: 8192 bytes).
// Donated, d_fc1 is written over fc1_out (argument #4: read last by this
// te.dact, in place) and d_ln goes into act_out (#5, dead after the FC2
// wgrad); d_act, defined before any saved tensor dies, is placed in FC1's
// weight gradient (result #3, written after d_act dies: a loan), so the
// donated arena is empty. ln_out (#2) is read last by the last GEMM:
// nothing is left to put there.
// Arguments #0, #1, #3, #6 are inputs (te.alias), #9 the output gradient.
// CHECK-LABEL: llvm.func @te_entry_mlp_bwd(
// CHECK-COUNT-2: llvm.call @te_rt_arg_donated(
// CHECK-NOT: llvm.call @te_rt_arg_donated(
// CHECK-LABEL: llvm.func @te_arena_bytes_mlp_bwd(%{{.*}}: !llvm.ptr) -> i64
// CHECK-LABEL: llvm.func @te_arena_bytes_donated_mlp_bwd(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) -> i64
// CHECK: \22arena_bytes\22:6144,\22arena_bytes_donated\22:0,\22arena_donated_symbol\22:\22te_arena_bytes_donated_mlp_bwd\22,
// CHECK-SAME: \22shape\22:[16,64],\22te.saved\22:\22layernorm_mlp_0.ln_out\22}
// CHECK-SAME: \22te.donatable\22:true,\22te.saved\22:\22layernorm_mlp_0.fc1_out\22}
// CHECK-SAME: \22te.donatable\22:true,\22te.saved\22:\22layernorm_mlp_0.act_out\22}
// expected-remark @+1 {{arena: 2 slots, 6144 bytes; 0 bytes with donors #4 #5}}
func.func @mlp_bwd(%arg0: tensor<16x64xbf16> {te.alias = "input:0", te.saved = "layernorm_mlp_0.input"}, %arg1: tensor<64xbf16> {te.alias = "input:1", te.saved = "layernorm_mlp_0.ln_weight"}, %arg2: tensor<16x64xbf16> {te.saved = "layernorm_mlp_0.ln_out"}, %arg3: tensor<128x64xbf16> {te.alias = "input:3", te.saved = "layernorm_mlp_0.fc1_weight"}, %arg4: tensor<16x128xbf16> {te.saved = "layernorm_mlp_0.fc1_out"}, %arg5: tensor<16x128xbf16> {te.saved = "layernorm_mlp_0.act_out"}, %arg6: tensor<64x128xbf16> {te.alias = "input:4", te.saved = "layernorm_mlp_0.fc2_weight"}, %arg7: tensor<16xf32> {te.saved = "layernorm_mlp_0.mu"}, %arg8: tensor<16xf32> {te.saved = "layernorm_mlp_0.rsigma"}, %arg9: tensor<16x64xbf16> {te.grad_of = "output:0"}) -> (tensor<16x64xbf16> {te.grad_of = "input:0"}, tensor<64xbf16> {te.grad_of = "input:1"}, tensor<64xbf16> {te.grad_of = "input:2"}, tensor<128x64xbf16> {te.grad_of = "input:3"}, tensor<64x128xbf16> {te.grad_of = "input:4"}) attributes {te.backward_of = @mlp} {
  // expected-remark @+1 {{result #0: slot 0 at offset 0, 4096 bytes, live [0, 2], in the function's result #3 before it is written}}
  %result = te.gemm nn %arg9, %arg6 : (tensor<16x64xbf16>, tensor<64x128xbf16>) -> tensor<16x128xbf16>
  // expected-remark @+1 {{result #0: in place in the function's result #4}}
  %result_0 = te.gemm nt %arg9, %arg5 : (tensor<16x64xbf16>, tensor<16x128xbf16>) -> tensor<64x128xbf16>
  // expected-remark @+1 {{result #0: slot 0 at offset 0, 4096 bytes, live [2, 4], over operand #0, in argument #4 when donated}}
  %result_1 = te.dact gelu %result, %arg4 : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> tensor<16x128xbf16>
  // expected-remark @+1 {{result #0: slot 1 at offset 4096, 2048 bytes, live [3, 5], in argument #5 when donated}}
  %result_2 = te.gemm nn %result_1, %arg3 : (tensor<16x128xbf16>, tensor<128x64xbf16>) -> tensor<16x64xbf16>
  // expected-remark @+1 {{result #0: in place in the function's result #3}}
  %result_3 = te.gemm nt %result_1, %arg2 : (tensor<16x128xbf16>, tensor<16x64xbf16>) -> tensor<128x64xbf16>
  // expected-remark @+3 {{result #0: in place in the function's result #0}}
  // expected-remark @+2 {{result #1: in place in the function's result #1}}
  // expected-remark @+1 {{result #2: in place in the function's result #2}}
  %grad_input, %grad_gamma, %grad_beta = te.norm_bwd %result_2 input(%arg0) norm layer_norm(%arg1) rsigma(%arg8) mu(%arg7) {with_beta} : (tensor<16x64xbf16>, tensor<16x64xbf16>, tensor<64xbf16>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
  return %grad_input, %grad_gamma, %grad_beta, %result_3, %result_0 : tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<64x128xbf16>
}

// -----

// Dynamic tokens: a value fits in a donor with the same product of dim
// variables and no more bytes per unit. %h (d0*128 bf16, d0 unified with
// %s's rows by the addf) goes into %s (d0*128 f32); %k (d0*512 bf16) is
// larger; %t's rows are another dim class (d1), never proven to fit; %a
// is defined while %s is read (an arith.truncf is not written in place).
// Loans (a result's buffer before the result is written): %a goes into
// result #1; %k (d0*1024) never fits result #2 (d0*128).
// CHECK-LABEL: llvm.func @te_entry_dynamic(
// CHECK: llvm.call @te_rt_arg_donated(%{{.*}}, %{{.*}}) : (!llvm.ptr, i64) -> i32
// CHECK-NOT: llvm.call @te_rt_arg_donated(
// CHECK-LABEL: llvm.func @te_arena_bytes_donated_dynamic(
// CHECK: \22arena_bytes\22:\22dynamic\22,\22arena_bytes_donated\22:\22dynamic\22,
// expected-remark @+1 {{arena: 3 slots, ? bytes; ? bytes with donors #0}}
func.func @dynamic(%s: tensor<?x128xf32> {te.saved = "s"}, %t: tensor<?x128xf32> {te.saved = "t"}, %x: tensor<?x64xbf16>, %w: tensor<128x64xbf16>, %w2: tensor<512x64xbf16>) -> (tensor<?x128xbf16>, tensor<?x512xbf16>, tensor<?x64xbf16>) {
  // expected-remark @+1 {{result #0: slot 0 at offset 0, ? bytes, live [0, 3], in the function's result #1 before it is written}}
  %a = arith.truncf %s : tensor<?x128xf32> to tensor<?x128xbf16>
  // expected-remark @+1 {{result #0: slot 1 at offset ?, ? bytes, live [1, 3], in argument #0 when donated}}
  %h = te.gemm tn %x, %w : (tensor<?x64xbf16>, tensor<128x64xbf16>) -> tensor<?x128xbf16>
  // expected-remark @+1 {{result #0: slot 2 at offset ?, ? bytes, live [2, 4]}}
  %k = te.gemm tn %x, %w2 : (tensor<?x64xbf16>, tensor<512x64xbf16>) -> tensor<?x512xbf16>
  // expected-remark @+1 {{result #0: in place in the function's result #0}}
  %y = arith.addf %a, %h : tensor<?x128xbf16>
  // expected-remark @+1 {{result #0: in place in the function's result #1}}
  %k2 = arith.addf %k, %k : tensor<?x512xbf16>
  // expected-remark @+1 {{result #0: slot 0 at offset 0, ? bytes, live [5, 6]}}
  %u = arith.truncf %t : tensor<?x128xf32> to tensor<?x128xbf16>
  // expected-remark @+1 {{result #0: in place in the function's result #2}}
  %v = te.gemm nn %u, %w : (tensor<?x128xbf16>, tensor<128x64xbf16>) -> tensor<?x64xbf16>
  return %y, %k2, %v : tensor<?x128xbf16>, tensor<?x512xbf16>, tensor<?x64xbf16>
}

// -----

// Not donatable: a forward input (te.alias), a saved tensor the function
// returns, an argument without te.saved. The te.dbias_dact writes its
// result over its grad (%a), which dies there: one slot (%a itself is
// placed in result #0 before the GEMM writes it, a loan).
// CHECK-LABEL: llvm.func @te_entry_none(
// CHECK-NOT: te_rt_arg_donated
// CHECK-NOT: te_arena_bytes_donated_none
// CHECK: \22arena_bytes\22:4096,\22arena_slots\22:1,
// expected-remark @+1 {{arena: 1 slots, 4096 bytes}}
func.func @none(%in: tensor<16x128xbf16> {te.alias = "input:0", te.saved = "x"}, %ret: tensor<16x128xbf16> {te.saved = "r"}, %plain: tensor<16x128xbf16>, %dy: tensor<16x128xbf16>) -> (tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<128xbf16>) {
  // expected-remark @+1 {{result #0: slot 0 at offset 0, 4096 bytes, live [0, 1], in the function's result #0 before it is written}}
  %a = arith.addf %in, %plain : tensor<16x128xbf16>
  // expected-remark @+2 {{result #0: slot 0 at offset 0, 4096 bytes, live [1, 2], over operand #0}}
  // expected-remark @+1 {{result #1: in place in the function's result #2}}
  %d, %db = te.dbias_dact gelu %a, %dy : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> (tensor<16x128xbf16>, tensor<128xbf16>)
  // expected-remark @+1 {{result #0: in place in the function's result #0}}
  %r = arith.addf %d, %ret : tensor<16x128xbf16>
  return %r, %ret, %db : tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<128xbf16>
}

// -----

// Quantized donors with dynamic tokens (fp8-current, both usages: per row
// K bytes of data and K of transpose, then a 4-byte scale_inv, each part at
// a 256-byte aligned offset). A donor holds at least its parts' raw bytes
// at every token count, so %h (d0*256 bytes of bf16) fits %q (d0*(128+128)
// + 4) and %o (d0*128) fits %r (d0*(64+64) + 4); %big (d0*512), defined
// when both are free, fits neither and stays in the arena. %k (d0*128),
// dead before the output (d0*128) is written, is placed there (a loan,
// taken before donation).
// CHECK-LABEL: llvm.func @te_entry_qdonor(
// CHECK-COUNT-2: llvm.call @te_rt_arg_donated(
// CHECK-NOT: llvm.call @te_rt_arg_donated(
// expected-remark @+1 {{arena: 4 slots, ? bytes; ? bytes with donors #0 #1}}
func.func @qdonor(%q: !te.qtensor<?x128xe4m3, #te.fp8_current<>, both, hopper> {te.saved = "q"}, %r: !te.qtensor<?x64xe4m3, #te.fp8_current<>, both, hopper> {te.saved = "r"}, %dy: !te.qtensor<?x64xe5m2, #te.fp8_current<>, both, hopper>, %w1: !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, %w2: !te.qtensor<64x64xe4m3, #te.fp8_current<>, both, hopper>, %w3: !te.qtensor<64x256xe4m3, #te.fp8_current<>, both, hopper>, %wb: tensor<128x64xbf16>, %wc: tensor<256x64xbf16>) -> (tensor<64x128xbf16>, tensor<64x64xbf16>, tensor<?x64xbf16>) {
  // expected-remark @+1 {{result #0: in place in the function's result #0}}
  %wq = te.gemm nt %dy, %q : (!te.qtensor<?x64xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<?x128xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<64x128xbf16>
  // expected-remark @+1 {{result #0: in place in the function's result #1}}
  %wr = te.gemm nt %dy, %r : (!te.qtensor<?x64xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<?x64xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<64x64xbf16>
  // expected-remark @+1 {{result #0: slot 0 at offset 0, ? bytes, live [2, 6]}}
  %big = te.gemm nn %dy, %w3 : (!te.qtensor<?x64xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<64x256xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<?x256xbf16>
  // expected-remark @+1 {{result #0: slot 1 at offset ?, ? bytes, live [3, 5], in argument #0 when donated}}
  %h = te.gemm nn %dy, %w1 : (!te.qtensor<?x64xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<?x128xbf16>
  // expected-remark @+1 {{result #0: slot 2 at offset ?, ? bytes, live [4, 7], in the function's result #2 before it is written}}
  %k = te.gemm nn %dy, %w2 : (!te.qtensor<?x64xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<64x64xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<?x64xbf16>
  // expected-remark @+1 {{result #0: slot 3 at offset ?, ? bytes, live [5, 7], in argument #1 when donated}}
  %o = te.gemm nn %h, %wb : (tensor<?x128xbf16>, tensor<128x64xbf16>) -> tensor<?x64xbf16>
  // expected-remark @+1 {{result #0: slot 1 at offset ?, ? bytes, live [6, 8], in argument #0 when donated}}
  %o2 = te.gemm nn %big, %wc : (tensor<?x256xbf16>, tensor<256x64xbf16>) -> tensor<?x64xbf16>
  // expected-remark @+1 {{result #0: slot 0 at offset 0, ? bytes, live [7, 8]}}
  %s = arith.addf %o, %k : tensor<?x64xbf16>
  // expected-remark @+1 {{result #0: in place in the function's result #2}}
  %y = arith.addf %s, %o2 : tensor<?x64xbf16>
  return %wq, %wr, %y : tensor<64x128xbf16>, tensor<64x64xbf16>, tensor<?x64xbf16>
}

// -----

// A quantized value: %xq fits %t, a donor of its own type (the parts pair
// up, each no larger: the same offsets, the same extent), but never %s, a
// plain tensor donor with more bytes per row: at 0 tokens %s has 0 bytes
// and %xq still its scale_inv (and each non-empty part may take up to 255
// bytes of padding). %s is free then (%o goes there next). The 4-byte amax
// fits neither: %s may be empty, and %t is taken. %a is placed in result
// #1 before it is written (a loan).
// CHECK-LABEL: llvm.func @te_entry_qvalue(
// CHECK-COUNT-2: llvm.call @te_rt_arg_donated(
// CHECK-NOT: llvm.call @te_rt_arg_donated(
// CHECK-LABEL: llvm.func @te_arena_bytes_donated_qvalue(
// expected-remark @+1 {{arena: 4 slots, ? bytes; ? bytes with donors #0 #1}}
func.func @qvalue(%s: tensor<?x64xf32> {te.saved = "s"}, %t: !te.qtensor<?x64xe4m3, #te.fp8_current<>, both, hopper> {te.saved = "t"}, %dy: !te.qtensor<?x64xe5m2, #te.fp8_current<>, both, hopper>, %x: tensor<?x64xbf16>, %w: !te.qtensor<64x64xe4m3, #te.fp8_current<>, both, hopper>) -> (tensor<64x64xbf16>, tensor<?x64xbf16>) {
  // expected-remark @+1 {{result #0: slot 0 at offset 0, ? bytes, live [0, 5], in the function's result #1 before it is written}}
  %a = arith.truncf %s : tensor<?x64xf32> to tensor<?x64xbf16>
  // expected-remark @+1 {{result #0: in place in the function's result #0}}
  %wt = te.gemm nt %dy, %t : (!te.qtensor<?x64xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<?x64xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<64x64xbf16>
  // expected-remark @+2 {{result #0: slot 1 at offset 0, ? bytes, live [2, 3], in argument #1 when donated}}
  // expected-remark @+1 {{result #1: slot 2 at offset ?, 4 bytes, live [2, 2]}}
  %xq, %am = te.quantize %x : tensor<?x64xbf16> -> !te.qtensor<?x64xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  // expected-remark @+1 {{result #0: slot 2 at offset ?, ? bytes, live [3, 5], in argument #0 when donated}}
  %o = te.gemm nn %xq, %w : (!te.qtensor<?x64xe4m3, #te.fp8_current<>, both, hopper>, !te.qtensor<64x64xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<?x64xbf16>
  // expected-remark @+1 {{result #0: slot 1 at offset 0, ? bytes, live [4, 6], in argument #1 when donated}}
  %z = te.gemm nn %dy, %w : (!te.qtensor<?x64xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<64x64xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<?x64xbf16>
  // expected-remark @+1 {{result #0: slot 3 at offset ?, ? bytes, live [5, 6]}}
  %y = arith.addf %o, %a : tensor<?x64xbf16>
  // expected-remark @+1 {{result #0: in place in the function's result #1}}
  %y2 = arith.addf %y, %z : tensor<?x64xbf16>
  return %wt, %y2 : tensor<64x64xbf16>, tensor<?x64xbf16>
}
