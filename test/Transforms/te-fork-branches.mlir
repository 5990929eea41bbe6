// RUN: te-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(te-fork-branches))' | FileCheck %s
// RUN: te-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(te-fork-branches),te-lower-to-runtime)' 2>/dev/null | FileCheck %s --check-prefix=LLVM
// RUN: te-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(te-fork-branches{max-rows=8}))' | FileCheck %s --check-prefix=ROWS
// RUN: te-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(te-fork-branches,te-test-memory-plan))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=PLAN
//
// te-fork-branches: a backward's wgrad GEMMs of few static rows whose results
// are only returned (with the columnwise copies only they read), and a
// forward's weight casts that only GEMMs of few rows read, move to right
// after their last operand's definition and are marked te.branch; the
// lowering brackets each marked op with te_rt_branch_begin / _end and joins
// up to the run an unmarked reader needs (te_rt_branch_join N), and
// everything at the entry's end (-1), so that in a CUDA graph they run
// beside the ops after them. The memory plan keeps what a marked op reads
// and writes live until its join (PLAN). max-rows=8 leaves the 16-row
// GEMMs in order (ROWS).

// LayerNormMLP's FP8 (delayed) backward at 16 tokens, as the pipeline
// makes it before this pass.
// CHECK-LABEL: func.func @ln_mlp_bwd(
// CHECK:       %[[DY:.*]], %{{.*}}, %{{.*}} = te.dbias_quantize %arg9
// CHECK-NEXT:  %[[ACT:.*]] = te.add_columnwise %arg5 {te.branch}
// CHECK-NEXT:  te.gemm nt %[[DY]], %[[ACT]] {te.branch}
// CHECK-NEXT:  te.gemm nn %[[DY]], %arg6 :
// CHECK-NEXT:  %[[DACT:.*]], %{{.*}}, %{{.*}} = te.dact_quantize gelu
// CHECK-NEXT:  %[[DACTT:.*]] = te.add_columnwise %[[DACT]] {te.branch}
// CHECK-NEXT:  te.gemm nt %[[DACTT]], %arg2 {te.branch}
// CHECK-NEXT:  arith.constant
// CHECK-NEXT:  tensor.concat
// CHECK-NEXT:  te.amax_update {{.*}} {te.fork}
// CHECK-NEXT:  te.gemm nn %[[DACT]], %arg3 :
// CHECK-NEXT:  te.norm_bwd
// Each marked op a run of its own; one join of everything at the end.
// LLVM-LABEL:  llvm.func @te_entry_ln_mlp_bwd(
// LLVM:        llvm.call @te_rt_dbias_quantize_fp8(
// LLVM-NOT:    llvm.call @te_rt_
// LLVM:        llvm.call @te_rt_branch_begin(
// LLVM-NOT:    llvm.call @te_rt_
// LLVM:        llvm.call @te_rt_add_columnwise_fp8(
// LLVM-NOT:    llvm.call @te_rt_
// LLVM:        llvm.call @te_rt_branch_end(
// LLVM-NOT:    llvm.call @te_rt_
// LLVM:        llvm.call @te_rt_branch_begin(
// LLVM-NOT:    llvm.call @te_rt_
// LLVM:        llvm.call @te_rt_gemm_fp8(
// LLVM-NOT:    llvm.call @te_rt_
// LLVM:        llvm.call @te_rt_branch_end(
// LLVM-NOT:    llvm.call @te_rt_
// LLVM:        llvm.call @te_rt_gemm_fp8(
// LLVM-NOT:    llvm.call @te_rt_
// LLVM:        llvm.call @te_rt_dact_quantize_fp8(
// LLVM:        llvm.call @te_rt_branch_begin(
// LLVM:        llvm.call @te_rt_add_columnwise_fp8(
// LLVM:        llvm.call @te_rt_branch_end(
// LLVM:        llvm.call @te_rt_branch_begin(
// LLVM:        llvm.call @te_rt_gemm_fp8(
// LLVM:        llvm.call @te_rt_branch_end(
// LLVM-NOT:    llvm.call @te_rt_branch
// LLVM:        llvm.call @te_rt_amax_update_fork(
// LLVM-NOT:    llvm.call @te_rt_branch
// LLVM:        llvm.call @te_rt_gemm_fp8(
// LLVM-NOT:    llvm.call @te_rt_branch
// LLVM:        llvm.call @te_rt_norm_bwd(
// LLVM:        %[[ALL:.*]] = llvm.mlir.constant(-1 : i64) : i64
// LLVM-NEXT:   llvm.call @te_rt_branch_join(%{{.*}}, %[[ALL]])
// LLVM-NOT:    llvm.call @te_rt_branch
// LLVM:        llvm.call @te_rt_arena_release(
// ROWS-LABEL:  func.func @ln_mlp_bwd(
// ROWS-NOT:    te.branch
// Without the pass dy's cast lived [0, 2] and the copy of act_out [1, 3]:
// now both to the end (op 12, the return), out of everything the dgrad
// chain writes.
// PLAN-LABEL:  remark: arena: 6 slots, 66816 bytes; 33536 bytes with donors #4 #6
// PLAN:        remark: result #0: slot 0 at offset 0, 8448 bytes, live [0, 12]
// PLAN:        remark: result #0: slot 2 at offset 8704, 16640 bytes, live [1, 12]{{$}}
// PLAN:        remark: result #0: slot 3 at offset 25344, 32768 bytes, live [3, 4], in the function's result #3 before it is written
// PLAN:        remark: result #0: slot 4 at offset 41984, 16640 bytes, live [4, 12], in argument #6 when donated
// PLAN:        remark: result #0: slot 3 at offset 25344, 16640 bytes, live [5, 12], in argument #4 when donated

  func.func @ln_mlp_bwd(%arg0: tensor<16x256xbf16> {te.alias = "input:0", te.saved = "layernorm_mlp_0.input"}, %arg1: tensor<256xbf16> {te.alias = "input:1", te.saved = "layernorm_mlp_0.ln_weight"}, %arg2: !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, columnwise, hopper> {te.saved = "layernorm_mlp_0.ln_out"}, %arg3: !te.qtensor<1024x256xe4m3, #te.fp8_delayed<>, both, hopper> {te.saved = "layernorm_mlp_0.fc1_weight"}, %arg4: tensor<16x1024xbf16> {te.saved = "layernorm_mlp_0.fc1_out"}, %arg5: !te.qtensor<16x1024xe4m3, #te.fp8_delayed<>, rowwise, hopper> {te.saved = "layernorm_mlp_0.act_out"}, %arg6: !te.qtensor<256x1024xe4m3, #te.fp8_delayed<>, both, hopper> {te.saved = "layernorm_mlp_0.fc2_weight"}, %arg7: tensor<16xf32> {te.saved = "layernorm_mlp_0.mu"}, %arg8: tensor<16xf32> {te.saved = "layernorm_mlp_0.rsigma"}, %arg9: tensor<16x256xbf16> {te.grad_of = "output:0"}, %arg10: tensor<1024x4xf32> {te.state = "layernorm_mlp_0.amax_history_bwd"}, %arg11: tensor<4xf32> {te.state = "layernorm_mlp_0.scales_bwd"}) -> (tensor<16x256xbf16> {te.grad_of = "input:0"}, tensor<256xbf16> {te.grad_of = "input:1"}, tensor<256xbf16> {te.grad_of = "input:2"}, tensor<1024x256xbf16> {te.grad_of = "input:3"}, tensor<1024xbf16> {te.grad_of = "input:4"}, tensor<256x1024xbf16> {te.grad_of = "input:5"}, tensor<256xbf16> {te.grad_of = "input:6"}, tensor<1024x4xf32> {te.state = "layernorm_mlp_0.amax_history_bwd"}, tensor<4xf32> {te.state = "layernorm_mlp_0.scales_bwd"}) {
    %0 = te.add_columnwise %arg5 : !te.qtensor<16x1024xe4m3, #te.fp8_delayed<>, rowwise, hopper> -> !te.qtensor<16x1024xe4m3, #te.fp8_delayed<>, columnwise, hopper>
    %result, %amax, %bias_grad = te.dbias_quantize %arg9 scale(%arg11[2]) : tensor<16x256xbf16>, tensor<4xf32> -> !te.qtensor<16x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>, tensor<256xbf16>
    %result_0 = te.gemm nt %result, %0 : (!te.qtensor<16x256xe5m2, #te.fp8_delayed<>, both, hopper>, !te.qtensor<16x1024xe4m3, #te.fp8_delayed<>, columnwise, hopper>) -> tensor<256x1024xbf16>
    %result_1 = te.gemm nn %result, %arg6 : (!te.qtensor<16x256xe5m2, #te.fp8_delayed<>, both, hopper>, !te.qtensor<256x1024xe4m3, #te.fp8_delayed<>, both, hopper>) -> tensor<16x1024xbf16>
    %result_2, %amax_3, %bias_grad_4 = te.dact_quantize gelu %result_1, %arg4 scale(%arg11[0]) : tensor<16x1024xbf16>, tensor<16x1024xbf16>, tensor<4xf32> -> !te.qtensor<16x1024xe5m2, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>, tensor<1024xbf16>
    %cst = arith.constant dense<0.000000e+00> : tensor<1xf32>
    %concat = tensor.concat dim(0) %amax_3, %cst, %amax, %cst : (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4xf32>
    %new_amax_history, %new_scales = te.amax_update %arg10, %arg11, %concat recipe(#te.fp8_delayed<>) backward {te.fork} : tensor<1024x4xf32>, tensor<4xf32>
    %1 = te.add_columnwise %result_2 : !te.qtensor<16x1024xe5m2, #te.fp8_delayed<>, rowwise, hopper> -> !te.qtensor<16x1024xe5m2, #te.fp8_delayed<>, columnwise, hopper>
    %result_5 = te.gemm nt %1, %arg2 : (!te.qtensor<16x1024xe5m2, #te.fp8_delayed<>, columnwise, hopper>, !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, columnwise, hopper>) -> tensor<1024x256xbf16>
    %result_6 = te.gemm nn %result_2, %arg3 : (!te.qtensor<16x1024xe5m2, #te.fp8_delayed<>, rowwise, hopper>, !te.qtensor<1024x256xe4m3, #te.fp8_delayed<>, both, hopper>) -> tensor<16x256xbf16>
    %grad_input, %grad_gamma, %grad_beta = te.norm_bwd %result_6 input(%arg0) norm layer_norm(%arg1) rsigma(%arg8) mu(%arg7) {with_beta} : (tensor<16x256xbf16>, tensor<16x256xbf16>, tensor<256xbf16>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16x256xbf16>, tensor<256xbf16>, tensor<256xbf16>)
    return %grad_input, %grad_gamma, %grad_beta, %result_5, %bias_grad_4, %result_0, %bias_grad, %new_amax_history, %new_scales : tensor<16x256xbf16>, tensor<256xbf16>, tensor<256xbf16>, tensor<1024x256xbf16>, tensor<1024xbf16>, tensor<256x1024xbf16>, tensor<256xbf16>, tensor<1024x4xf32>, tensor<4xf32>
  }

// -----

// Left in order: dynamic rows; a wgrad read by another op; a function of
// wgrads only (nothing to run beside, as te-split-wgrad makes).
// CHECK-LABEL: func.func @dynamic_rows(
// CHECK-NOT:   te.branch
// ROWS-LABEL:  func.func @dynamic_rows(
func.func @dynamic_rows(%dy: tensor<?x64xbf16>, %x: tensor<?x32xbf16>, %w: tensor<64x32xbf16>) -> (tensor<?x32xbf16>, tensor<64x32xbf16>) {
  %dw = te.gemm nt %dy, %x : (tensor<?x64xbf16>, tensor<?x32xbf16>) -> tensor<64x32xbf16>
  %dx = te.gemm nn %dy, %w : (tensor<?x64xbf16>, tensor<64x32xbf16>) -> tensor<?x32xbf16>
  return %dx, %dw : tensor<?x32xbf16>, tensor<64x32xbf16>
}

// -----

// CHECK-LABEL: func.func @read_after(
// CHECK-NOT:   te.branch
// ROWS-LABEL:  func.func @read_after(
func.func @read_after(%dy: tensor<16x64xbf16>, %x: tensor<16x32xbf16>, %w: tensor<64x32xbf16>) -> (tensor<16x32xbf16>, tensor<64x32xbf16>) {
  %dw = te.gemm nt %dy, %x : (tensor<16x64xbf16>, tensor<16x32xbf16>) -> tensor<64x32xbf16>
  %dx = te.gemm nn %dy, %dw : (tensor<16x64xbf16>, tensor<64x32xbf16>) -> tensor<16x32xbf16>
  return %dx, %dw : tensor<16x32xbf16>, tensor<64x32xbf16>
}

// -----

// CHECK-LABEL: func.func @wgrads_only(
// CHECK-NOT:   te.branch
// ROWS-LABEL:  func.func @wgrads_only(
func.func @wgrads_only(%dy: tensor<16x64xbf16>, %x: tensor<16x32xbf16>, %dy2: tensor<16x32xbf16>) -> (tensor<64x32xbf16>, tensor<32x32xbf16>) {
  %dw = te.gemm nt %dy, %x : (tensor<16x64xbf16>, tensor<16x32xbf16>) -> tensor<64x32xbf16>
  %dw2 = te.gemm nt %dy2, %x : (tensor<16x32xbf16>, tensor<16x32xbf16>) -> tensor<32x32xbf16>
  return %dw, %dw2 : tensor<64x32xbf16>, tensor<32x32xbf16>
}

// -----

// A bf16 wgrad whose operands are arguments: at the function's start,
// before the dgrad it runs beside; joined at the entry's end.
// CHECK-LABEL: func.func @bf16_first(
// CHECK-NEXT:  te.gemm nt %arg0, %arg1 {te.branch}
// CHECK-NEXT:  te.gemm nn %arg0, %arg2 :
// ROWS-LABEL:  func.func @bf16_first(
// ROWS-NOT:    te.branch
// LLVM-LABEL:  llvm.func @te_entry_bf16_first(
// LLVM:        llvm.call @te_rt_branch_begin(
// LLVM:        llvm.call @te_rt_gemm_wgrad(
// LLVM:        llvm.call @te_rt_branch_end(
// LLVM:        llvm.call @te_rt_gemm_dgrad(
// LLVM:        llvm.mlir.constant(-1 : i64)
// LLVM-NEXT:   llvm.call @te_rt_branch_join(
// LLVM:        llvm.call @te_rt_arena_release(
func.func @bf16_first(%dy: tensor<16x64xbf16>, %x: tensor<16x32xbf16>, %w: tensor<64x32xbf16>) -> (tensor<16x32xbf16>, tensor<64x32xbf16>) {
  %dx = te.gemm nn %dy, %w : (tensor<16x64xbf16>, tensor<64x32xbf16>) -> tensor<16x32xbf16>
  %dw = te.gemm nt %dy, %x : (tensor<16x64xbf16>, tensor<16x32xbf16>) -> tensor<64x32xbf16>
  return %dx, %dw : tensor<16x32xbf16>, tensor<64x32xbf16>
}

// -----

// LayerNormMLP's FP8 (delayed) forward at 16 tokens: both weight casts to
// the start, in their order, beside the norm; FC1 joins run 0 (its
// weight), the amax vector's concat run 1 (FC2's weight cast recorded an
// amax in it), the entry's end everything.
// CHECK-LABEL: func.func @ln_mlp_fwd(
// CHECK-NEXT:  te.quantize %arg3 scale(%arg8[1]) {te.branch, weight}
// CHECK-NEXT:  te.quantize %arg5 scale(%arg8[4]) {te.branch, weight}
// CHECK-NEXT:  te.norm_quantize %arg0
// ROWS-LABEL:  func.func @ln_mlp_fwd(
// ROWS-NOT:    te.branch
// LLVM-LABEL:  llvm.func @te_entry_ln_mlp_fwd(
// LLVM:        llvm.call @te_rt_branch_begin(
// LLVM:        llvm.call @te_rt_quantize_fp8(
// LLVM:        llvm.call @te_rt_branch_end(
// LLVM:        llvm.call @te_rt_branch_begin(
// LLVM:        llvm.call @te_rt_quantize_fp8(
// LLVM:        llvm.call @te_rt_branch_end(
// LLVM:        llvm.call @te_rt_norm_quantize_fp8(
// LLVM:        %[[R0:.*]] = llvm.mlir.constant(0 : i64) : i64
// LLVM-NEXT:   llvm.call @te_rt_branch_join(%{{.*}}, %[[R0]])
// LLVM:        llvm.call @te_rt_gemm_fp8(
// LLVM:        llvm.call @te_rt_act_quantize_fp8(
// LLVM:        %[[R1:.*]] = llvm.mlir.constant(1 : i64) : i64
// LLVM-NEXT:   llvm.call @te_rt_branch_join(%{{.*}}, %[[R1]])
// LLVM:        llvm.call @te_rt_amax_update_fork(
// LLVM:        llvm.call @te_rt_gemm_fp8(
// LLVM:        llvm.mlir.constant(-1 : i64)
// LLVM-NEXT:   llvm.call @te_rt_branch_join(
// LLVM:        llvm.call @te_rt_arena_release(
  func.func @ln_mlp_fwd(%arg0: tensor<16x256xbf16>, %arg1: tensor<256xbf16>, %arg2: tensor<256xbf16>, %arg3: tensor<1024x256xbf16>, %arg4: tensor<1024xbf16>, %arg5: tensor<256x1024xbf16>, %arg6: tensor<256xbf16>, %arg7: tensor<1024x6xf32> {te.state = "layernorm_mlp_0.amax_history_fwd"}, %arg8: tensor<6xf32> {te.state = "layernorm_mlp_0.scales_fwd"}) -> (tensor<16x256xbf16>, !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, columnwise, hopper> {te.saved = "layernorm_mlp_0.ln_out"}, !te.qtensor<1024x256xe4m3, #te.fp8_delayed<>, both, hopper> {te.saved = "layernorm_mlp_0.fc1_weight"}, tensor<16x1024xbf16> {te.saved = "layernorm_mlp_0.fc1_out"}, !te.qtensor<16x1024xe4m3, #te.fp8_delayed<>, rowwise, hopper> {te.saved = "layernorm_mlp_0.act_out"}, !te.qtensor<256x1024xe4m3, #te.fp8_delayed<>, both, hopper> {te.saved = "layernorm_mlp_0.fc2_weight"}, tensor<16xf32> {te.saved = "layernorm_mlp_0.mu"}, tensor<16xf32> {te.saved = "layernorm_mlp_0.rsigma"}, tensor<1024x6xf32> {te.state = "layernorm_mlp_0.amax_history_fwd"}, tensor<6xf32> {te.state = "layernorm_mlp_0.scales_fwd"}) {
    %result, %rsigma, %amax, %mu = te.norm_quantize %arg0 norm layer_norm(%arg1, %arg2) scale(%arg8[0]) {eps = 1.000000e-05 : f64} : (tensor<16x256xbf16>, tensor<256xbf16>, tensor<256xbf16>, tensor<6xf32>) -> (!te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<16xf32>, tensor<1xf32>, tensor<16xf32>)
    %0 = te.drop_usage %result : !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper> -> !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, columnwise, hopper>
    %result_0, %amax_1 = te.quantize %arg3 scale(%arg8[1]) {weight} : tensor<1024x256xbf16>, tensor<6xf32> -> !te.qtensor<1024x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
    %result_2 = te.gemm tn %result, %result_0 bias(%arg4) {fast_accumulate} : (!te.qtensor<16x256xe4m3, #te.fp8_delayed<>, both, hopper>, !te.qtensor<1024x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1024xbf16>) -> tensor<16x1024xbf16>
    %result_3, %amax_4 = te.act_quantize gelu %result_2 scale(%arg8[3]) : tensor<16x1024xbf16>, tensor<6xf32> -> !te.qtensor<16x1024xe4m3, #te.fp8_delayed<>, rowwise, hopper>, tensor<1xf32>
    %result_5, %amax_6 = te.quantize %arg5 scale(%arg8[4]) {weight} : tensor<256x1024xbf16>, tensor<6xf32> -> !te.qtensor<256x1024xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
    %cst = arith.constant dense<0.000000e+00> : tensor<1xf32>
    %concat = tensor.concat dim(0) %amax, %amax_1, %cst, %amax_4, %amax_6, %cst : (tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<6xf32>
    %new_amax_history, %new_scales = te.amax_update %arg7, %arg8, %concat recipe(#te.fp8_delayed<>) {te.fork} : tensor<1024x6xf32>, tensor<6xf32>
    %result_7 = te.gemm tn %result_3, %result_5 bias(%arg6) {fast_accumulate} : (!te.qtensor<16x1024xe4m3, #te.fp8_delayed<>, rowwise, hopper>, !te.qtensor<256x1024xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<256xbf16>) -> tensor<16x256xbf16>
    return %result_7, %0, %result_0, %result_2, %result_3, %result_5, %mu, %rsigma, %new_amax_history, %new_scales : tensor<16x256xbf16>, !te.qtensor<16x256xe4m3, #te.fp8_delayed<>, columnwise, hopper>, !te.qtensor<1024x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<16x1024xbf16>, !te.qtensor<16x1024xe4m3, #te.fp8_delayed<>, rowwise, hopper>, !te.qtensor<256x1024xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<16xf32>, tensor<16xf32>, tensor<1024x6xf32>, tensor<6xf32>
  }
