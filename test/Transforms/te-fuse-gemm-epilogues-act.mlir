// RUN: te-opt %s --split-input-file --te-fuse-gemm-epilogues=act-epilogues=on --verify-diagnostics | FileCheck %s
// RUN: te-opt %s --split-input-file --te-fuse-gemm-epilogues 2>/dev/null | FileCheck %s --check-prefix=OFF
// RUN: te-opt %s --split-input-file --te-fuse-gemm-epilogues=act-epilogues=off 2>/dev/null | FileCheck %s --check-prefix=OFF
// RUN: sed 's/expected-remark.*//' %s | te-opt --split-input-file --te-fuse-gemm-epilogues=act-epilogues=off 2>&1 >/dev/null | count 0
//
// act-epilogues=on: GELU into the fprop GEMM's epilogue (te.gemm_act,
// cuBLASLt GELU_AUX_BIAS) and its derivative into the dgrad GEMM's
// (te.gemm_dact, DGELU), at any row count (these have 16 rows, or dynamic);
// the bias gradients still fold into the wgrad GEMMs (BGRADB). The pass's
// default (off) keeps te.gemm + te.act / te.dact, and says nothing about
// them (no remark). auto: te-fuse-gemm-epilogues-auto.mlir.

// A LayerNormMLP's forward (the pre-activation saved for the backward) and
// inference forward (nothing else reads it: no `pre` result).
// CHECK-LABEL: func.func @mlp_fwd(
// CHECK:       %[[Z:.*]], %{{.*}}, %{{.*}} = te.norm_fwd
// CHECK-NEXT:  %[[H:.*]], %[[PRE:.*]] = te.gemm_act gelu %[[Z]], %arg3 bias(%arg4) : (tensor<16x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> (tensor<16x128xbf16>, tensor<16x128xbf16>)
// CHECK-NEXT:  %[[Y:.*]] = te.gemm tn %[[H]], %arg5 bias(%arg6)
// CHECK-NOT:   te.act
// CHECK:       return %[[Y]], %[[PRE]], %[[H]]
// OFF-LABEL:   func.func @mlp_fwd(
// OFF:         %[[PRE:.*]] = te.gemm tn
// OFF-NEXT:    te.act gelu %[[PRE]]
// OFF-NOT:     te.gemm_act
func.func @mlp_fwd(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> (tensor<16x64xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>) {
  %z, %rs, %mu = te.norm_fwd %x norm layer_norm(%g, %b) {eps = 1.000000e-05 : f64} : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>) -> (tensor<16x64xbf16>, tensor<16xf32>, tensor<16xf32>)
  %pre = te.gemm tn %z, %w1 bias(%b1) : (tensor<16x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<16x128xbf16>
  %h = te.act gelu %pre : (tensor<16x128xbf16>) -> tensor<16x128xbf16>
  %y = te.gemm tn %h, %w2 bias(%b2) : (tensor<16x128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  return %y, %pre, %h : tensor<16x64xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>
}

// CHECK-LABEL: func.func @mlp_infer(
// CHECK:       %[[H:.*]] = te.gemm_act gelu %arg0, %arg1 bias(%arg2) : (tensor<16x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<16x128xbf16>{{$}}
// CHECK-NEXT:  te.gemm tn %[[H]], %arg3
// CHECK-NOT:   te.act
func.func @mlp_infer(%z: tensor<16x64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>) -> tensor<16x64xbf16> {
  %pre = te.gemm tn %z, %w1 bias(%b1) : (tensor<16x64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>) -> tensor<16x128xbf16>
  %h = te.act gelu %pre : (tensor<16x128xbf16>) -> tensor<16x128xbf16>
  %y = te.gemm tn %h, %w2 : (tensor<16x128xbf16>, tensor<64x128xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// Its backward: FC2's dgrad GEMM and the GELU derivative become one
// te.gemm_dact; FC1's bias gradient (of the dact's result) and FC2's still
// come out of the wgrad GEMMs (BGRADB).
// CHECK-LABEL: func.func @mlp_bwd(
// CHECK:       %[[DW2:.*]], %[[DB2:.*]] = te.gemm nt %arg9, %arg5 : (tensor<16x64xbf16>, tensor<16x128xbf16>) -> (tensor<64x128xbf16>, tensor<64xbf16>)
// CHECK-NEXT:  %[[DF1:.*]] = te.gemm_dact gelu %arg9, %arg6 pre(%arg4) : (tensor<16x64xbf16>, tensor<64x128xbf16>, tensor<16x128xbf16>) -> tensor<16x128xbf16>
// CHECK-NEXT:  %[[DW1:.*]], %[[DB1:.*]] = te.gemm nt %[[DF1]], %arg2 : (tensor<16x128xbf16>, tensor<16x64xbf16>) -> (tensor<128x64xbf16>, tensor<128xbf16>)
// CHECK-NEXT:  %[[DZ:.*]] = te.gemm nn %[[DF1]], %arg3
// CHECK-NOT:   te.dact
// CHECK-NOT:   te.bias_grad
// CHECK:       return %{{.*}}, %{{.*}}, %{{.*}}, %[[DW1]], %[[DB1]], %[[DW2]], %[[DB2]]
// OFF-LABEL:   func.func @mlp_bwd(
// OFF:         %[[DA:.*]] = te.gemm nn %arg9, %arg6
// OFF-NEXT:    te.dact gelu %[[DA]], %arg4
// OFF-NOT:     te.gemm_dact
func.func @mlp_bwd(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %z: tensor<16x64xbf16>, %w1: tensor<128x64xbf16>, %pre: tensor<16x128xbf16>, %h: tensor<16x128xbf16>, %w2: tensor<64x128xbf16>, %mu: tensor<16xf32>, %rs: tensor<16xf32>, %dy: tensor<16x64xbf16>) -> (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) {
  %dw2 = te.gemm nt %dy, %h : (tensor<16x64xbf16>, tensor<16x128xbf16>) -> tensor<64x128xbf16>
  %db2 = te.bias_grad %dy : (tensor<16x64xbf16>) -> tensor<64xbf16>
  %dh = te.gemm nn %dy, %w2 : (tensor<16x64xbf16>, tensor<64x128xbf16>) -> tensor<16x128xbf16>
  %df1 = te.dact gelu %dh, %pre : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> tensor<16x128xbf16>
  %dw1 = te.gemm nt %df1, %z : (tensor<16x128xbf16>, tensor<16x64xbf16>) -> tensor<128x64xbf16>
  %db1 = te.bias_grad %df1 : (tensor<16x128xbf16>) -> tensor<128xbf16>
  %dz = te.gemm nn %df1, %w1 : (tensor<16x128xbf16>, tensor<128x64xbf16>) -> tensor<16x64xbf16>
  %dx, %dg, %db = te.norm_bwd %dz input(%x) norm layer_norm(%g) rsigma(%rs) mu(%mu) {with_beta} : (tensor<16x64xbf16>, tensor<16x64xbf16>, tensor<64xbf16>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>)
  return %dx, %dg, %db, %dw1, %db1, %dw2, %db2 : tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>
}

// -----

// Dynamic tokens: the same folds.
// CHECK-LABEL: func.func @dynamic(
// CHECK:       te.gemm_act gelu %arg0, %arg1 : (tensor<?x64xf32>, tensor<128x64xf32>) -> (tensor<?x128xf32>, tensor<?x128xf32>)
// CHECK:       te.gemm_dact gelu %arg2, %arg3 pre(%{{.*}}) : (tensor<?x64xf32>, tensor<64x128xf32>, tensor<?x128xf32>) -> tensor<?x128xf32>
func.func @dynamic(%x: tensor<?x64xf32>, %w1: tensor<128x64xf32>, %dy: tensor<?x64xf32>, %w2: tensor<64x128xf32>) -> (tensor<?x128xf32>, tensor<?x128xf32>) {
  %pre = te.gemm tn %x, %w1 : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x128xf32>
  %h = te.act gelu %pre : (tensor<?x128xf32>) -> tensor<?x128xf32>
  %dh = te.gemm nn %dy, %w2 : (tensor<?x64xf32>, tensor<64x128xf32>) -> tensor<?x128xf32>
  %d = te.dact gelu %dh, %pre : (tensor<?x128xf32>, tensor<?x128xf32>) -> tensor<?x128xf32>
  return %h, %d : tensor<?x128xf32>, tensor<?x128xf32>
}

// -----

// Not fused: an activation other than GELU (forward and backward).
// CHECK-LABEL: func.func @relu(
// CHECK:       te.act relu
// CHECK:       te.dact relu
func.func @relu(%x: tensor<16x64xbf16>, %w: tensor<128x64xbf16>, %dy: tensor<16x64xbf16>, %w2: tensor<64x128xbf16>) -> (tensor<16x128xbf16>, tensor<16x128xbf16>) {
  %pre = te.gemm tn %x, %w : (tensor<16x64xbf16>, tensor<128x64xbf16>) -> tensor<16x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: activation relu has no GEMM epilogue (cuBLASLt's computes GELU, the tanh approximation, only)}}
  %h = te.act relu %pre : (tensor<16x128xbf16>) -> tensor<16x128xbf16>
  %dh = te.gemm nn %dy, %w2 : (tensor<16x64xbf16>, tensor<64x128xbf16>) -> tensor<16x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.dact not fused into a GEMM epilogue: activation relu has no GEMM epilogue (cuBLASLt's computes the derivative of GELU, the tanh approximation, only)}}
  %d = te.dact relu %dh, %pre : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> tensor<16x128xbf16>
  return %h, %d : tensor<16x128xbf16>, tensor<16x128xbf16>
}

// -----

// Not fused: FP8 GEMMs (the activation is fused with its cast instead).
// CHECK-LABEL: func.func @quantized(
// CHECK:       te.act gelu
// CHECK:       te.dact gelu
func.func @quantized(%x: !te.qtensor<16x64xe4m3, #te.fp8_current<>, both, hopper>, %w: !te.qtensor<128x64xe4m3, #te.fp8_current<>, both, hopper>, %dy: !te.qtensor<16x64xe5m2, #te.fp8_current<>, both, hopper>, %w2: !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>) -> (tensor<16x128xbf16>, tensor<16x128xbf16>) {
  %pre = te.gemm tn %x, %w : (!te.qtensor<16x64xe4m3, #te.fp8_current<>, both, hopper>, !te.qtensor<128x64xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<16x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: the GEMM's operands are quantized (the FP8 recipes fuse the activation with its cast instead: te-fuse-act-quantize)}}
  %h = te.act gelu %pre : (tensor<16x128xbf16>) -> tensor<16x128xbf16>
  %dh = te.gemm nn %dy, %w2 : (!te.qtensor<16x64xe5m2, #te.fp8_current<>, both, hopper>, !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>) -> tensor<16x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.dact not fused into a GEMM epilogue: the GEMM's operands are quantized (the FP8 recipes fuse the activation's derivative with its cast instead: te-fuse-act-quantize)}}
  %d = te.dact gelu %dh, %pre : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> tensor<16x128xbf16>
  return %h, %d : tensor<16x128xbf16>, tensor<16x128xbf16>
}

// -----

// Not fused: the amax result is wanted (current scaling's fused amax).
// CHECK-LABEL: func.func @amax(
// CHECK:       te.act gelu
// CHECK:       te.dact gelu
func.func @amax(%x: tensor<16x64xbf16>, %w: tensor<128x64xbf16>, %dy: tensor<16x64xbf16>, %w2: tensor<64x128xbf16>) -> (tensor<16x128xbf16>, tensor<1xf32>, tensor<16x128xbf16>, tensor<1xf32>) {
  %pre = te.gemm tn %x, %w : (tensor<16x64xbf16>, tensor<128x64xbf16>) -> tensor<16x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: its amax result is wanted (the GEMM epilogue computes no amax)}}
  %h, %a = te.act gelu %pre : (tensor<16x128xbf16>) -> (tensor<16x128xbf16>, tensor<1xf32>)
  %dh = te.gemm nn %dy, %w2 : (tensor<16x64xbf16>, tensor<64x128xbf16>) -> tensor<16x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.dact not fused into a GEMM epilogue: its amax result is wanted (the GEMM epilogue computes no amax)}}
  %d, %da = te.dact gelu %dh, %pre : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> (tensor<16x128xbf16>, tensor<1xf32>)
  return %h, %a, %d, %da : tensor<16x128xbf16>, tensor<1xf32>, tensor<16x128xbf16>, tensor<1xf32>
}

// -----

// Not fused: the input is not a GEMM result of the right layout (an
// argument; a dgrad GEMM's result for te.act, an fprop one's for te.dact).
// CHECK-LABEL: func.func @not_gemm(
// CHECK-COUNT-2: te.act gelu
// CHECK-COUNT-2: te.dact gelu
func.func @not_gemm(%x: tensor<16x128xbf16>, %dy: tensor<16x64xbf16>, %w2: tensor<64x128xbf16>, %z: tensor<16x64xbf16>, %w1: tensor<128x64xbf16>) -> (tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>) {
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: the input is not produced by an fprop (tn) GEMM}}
  %h = te.act gelu %x : (tensor<16x128xbf16>) -> tensor<16x128xbf16>
  %dh = te.gemm nn %dy, %w2 : (tensor<16x64xbf16>, tensor<64x128xbf16>) -> tensor<16x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: the input is not produced by an fprop (tn) GEMM}}
  %h2 = te.act gelu %dh : (tensor<16x128xbf16>) -> tensor<16x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.dact not fused into a GEMM epilogue: the incoming gradient is not produced by a dgrad (nn) GEMM}}
  %d = te.dact gelu %x, %x : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> tensor<16x128xbf16>
  %y = te.gemm tn %z, %w1 : (tensor<16x64xbf16>, tensor<128x64xbf16>) -> tensor<16x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.dact not fused into a GEMM epilogue: the incoming gradient is not produced by a dgrad (nn) GEMM}}
  %d2 = te.dact gelu %y, %x : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> tensor<16x128xbf16>
  return %h, %h2, %d, %d2 : tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>
}

// -----

// Not fused: the dgrad GEMM's result is also read elsewhere (it must be
// stored); the fprop GEMM's other readers only add the `pre` result.
// CHECK-LABEL: func.func @other_users(
// CHECK:       %[[H:.*]], %[[PRE:.*]] = te.gemm_act gelu
// CHECK:       %[[DH:.*]] = te.gemm nn
// CHECK-NEXT:  te.dact gelu %[[DH]], %[[PRE]]
func.func @other_users(%x: tensor<16x64xbf16>, %w: tensor<128x64xbf16>, %dy: tensor<16x64xbf16>, %w2: tensor<64x128xbf16>) -> (tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>) {
  %pre = te.gemm tn %x, %w : (tensor<16x64xbf16>, tensor<128x64xbf16>) -> tensor<16x128xbf16>
  %h = te.act gelu %pre : (tensor<16x128xbf16>) -> tensor<16x128xbf16>
  %dh = te.gemm nn %dy, %w2 : (tensor<16x64xbf16>, tensor<64x128xbf16>) -> tensor<16x128xbf16>
  // expected-remark @+1 {{te-fuse-gemm-epilogues: te.dact not fused into a GEMM epilogue: the GEMM's result is also read by func.return (it must be stored)}}
  %d = te.dact gelu %dh, %pre : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> tensor<16x128xbf16>
  return %h, %d, %dh, %pre : tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>, tensor<16x128xbf16>
}

// -----

// Not fused: the activation is in another block than its GEMM (fusing
// would move the GEMM into the region).
// CHECK-LABEL: func.func @other_block(
// CHECK:       te.gemm tn
// CHECK:       te.gemm nn
// CHECK:       scf.execute_region
// CHECK:       te.act gelu
// CHECK:       te.dact gelu
func.func @other_block(%x: tensor<16x64xbf16>, %w: tensor<128x64xbf16>, %dy: tensor<16x64xbf16>, %w2: tensor<64x128xbf16>) -> (tensor<16x128xbf16>, tensor<16x128xbf16>) {
  %pre = te.gemm tn %x, %w : (tensor<16x64xbf16>, tensor<128x64xbf16>) -> tensor<16x128xbf16>
  %dh = te.gemm nn %dy, %w2 : (tensor<16x64xbf16>, tensor<64x128xbf16>) -> tensor<16x128xbf16>
  %r:2 = scf.execute_region -> (tensor<16x128xbf16>, tensor<16x128xbf16>) {
    // expected-remark @+1 {{te-fuse-gemm-epilogues: te.act not fused into a GEMM epilogue: the GEMM is in another block}}
    %h = te.act gelu %pre : (tensor<16x128xbf16>) -> tensor<16x128xbf16>
    // expected-remark @+1 {{te-fuse-gemm-epilogues: te.dact not fused into a GEMM epilogue: the GEMM is in another block}}
    %d = te.dact gelu %dh, %pre : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> tensor<16x128xbf16>
    scf.yield %h, %d : tensor<16x128xbf16>, tensor<16x128xbf16>
  }
  return %r#0, %r#1 : tensor<16x128xbf16>, tensor<16x128xbf16>
}
