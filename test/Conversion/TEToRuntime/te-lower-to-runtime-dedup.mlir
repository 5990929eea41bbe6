// te-lower-to-runtime dedup-layers: a function body is cut into segments
// (runs of ops with the same location: the primitives of one module op);
// outlined segments with the same code share one function. Here three
// identical LayerNormMLPs (GELU) and a different one (ReLU):
// on: every segment outlined, three functions: the first GELU layer's (its
// intermediates die before the function's result is written, so the memory
// plan places one in that result's buffer, a loan: its buffers are not the
// other layers'), the other GELU layers' (called twice) and the ReLU one's;
// auto: only the segments that repeat in the function (the GELU layers',
// the first one again apart; the ReLU layer's calls stay in the entry); off (the pass default): nothing outlined.
//
// RUN: te-opt %s --te-decompose --te-lower-to-runtime=dedup-layers=on | FileCheck %s --check-prefix=ON
// RUN: te-opt %s --te-decompose --te-lower-to-runtime=dedup-layers=auto | FileCheck %s --check-prefix=AUTO
// RUN: te-opt %s --te-decompose --te-lower-to-runtime | FileCheck %s --check-prefix=OFF
// RUN: te-opt %s --te-decompose --te-lower-to-runtime=dedup-layers=off | FileCheck %s --check-prefix=OFF
// RUN: not te-opt %s --te-decompose --te-lower-to-runtime=dedup-layers=bad 2>&1 | FileCheck %s --check-prefix=BAD

// ON:      llvm.func internal @te_segment_0(%{{.*}}) -> i32 attributes {no_inline} {
// ON:        llvm.call @te_rt_norm_fwd(
// ON:        llvm.call @te_rt_gemm_fprop(
// ON:        llvm.call @te_rt_act_fwd(
// ON:        llvm.call @te_rt_gemm_fprop(
// ON:        llvm.return
// ON:      llvm.func internal @te_segment_1(%{{.*}}) -> i32 attributes {no_inline} {
// ON:        llvm.call @te_rt_act_fwd(
// ON:      llvm.func internal @te_segment_2(%{{.*}}) -> i32 attributes {no_inline} {
// ON:        llvm.call @te_rt_act_fwd(
// ON-NOT:  llvm.func internal @te_segment_
// ON-LABEL: llvm.func @te_entry_stack(
// ON-NOT:    llvm.call @te_rt_norm_fwd
// ON:        %[[S0:.+]] = llvm.call @te_segment_0(
// ON:        %[[F0:.+]] = llvm.icmp "ne" %[[S0]]
// ON-NEXT:   llvm.cond_br %[[F0]], ^[[FAIL:.+]](%[[S0]] : i32), ^
// ON:        llvm.call @te_segment_1(
// ON:        llvm.call @te_segment_2(
// ON:        llvm.call @te_segment_1(
// ON-NOT:    llvm.call @te_rt_norm_fwd
// ON:        llvm.call @te_rt_arena_release(
// ON-LABEL: llvm.func @te_module_info(

// AUTO:      llvm.func internal @te_segment_0(
// AUTO:      llvm.func internal @te_segment_1(
// AUTO-NOT:  llvm.func internal @te_segment_
// AUTO-LABEL: llvm.func @te_entry_stack(
// AUTO:        llvm.call @te_segment_0(
// AUTO:        llvm.call @te_segment_1(
// AUTO:        llvm.call @te_rt_norm_fwd(
// AUTO:        llvm.call @te_rt_gemm_fprop(
// AUTO:        llvm.call @te_rt_act_fwd(
// AUTO:        llvm.call @te_rt_gemm_fprop(
// AUTO:        llvm.call @te_segment_1(
// AUTO-NOT:    llvm.call @te_segment_
// AUTO-LABEL: llvm.func @te_module_info(

// OFF-NOT: te_segment

// BAD: error: te-lower-to-runtime: dedup-layers must be off, auto or on, got 'bad'

func.func @stack(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>,
                 %w1: tensor<128x64xbf16>, %c1: tensor<128xbf16>,
                 %w2: tensor<64x128xbf16>, %c2: tensor<64xbf16>) -> tensor<16x64xbf16> {
  %h0 = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %c1) act gelu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h1 = te.layernorm_mlp %h0 norm layer_norm(%g, %b) fc1(%w1, %c1) act gelu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h2 = te.layernorm_mlp %h1 norm layer_norm(%g, %b) fc1(%w1, %c1) act relu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  %h3 = te.layernorm_mlp %h2 norm layer_norm(%g, %b) fc1(%w1, %c1) act gelu fc2(%w2, %c2)
      : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>,
         tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  return %h3 : tensor<16x64xbf16>
}
