// RUN: te-opt %s --te-generate-backward --te-decompose --te-fuse-dbias-dact --split-input-file --verify-diagnostics | FileCheck %s
// RUN: te-opt %s --te-generate-backward --te-decompose --te-fuse-gemm-epilogues --te-fuse-dbias-dact --split-input-file 2>/dev/null | FileCheck %s --check-prefix=ORDER
//
// dbias + dact: FC1's bias gradient is computed with the GELU derivative in
// one kernel (TE's dbias_dgelu); FC2's bias gradient (of the incoming
// gradient) is not an activation's and stays.
// CHECK-LABEL: func.func @mlp_bwd(
// CHECK:     %[[DB2:.*]] = te.bias_grad %arg9
// CHECK:     %[[DF1:.*]], %[[DB1:.*]] = te.dbias_dact gelu %{{.*}}, %arg4 : (tensor<16x128xbf16>, tensor<16x128xbf16>) -> (tensor<16x128xbf16>, tensor<128xbf16>)
// CHECK-NOT: te.dact
// CHECK:     return {{.*}}, %[[DB1]], %{{.*}}, %[[DB2]]
//
// In te-compile's order the wgrad epilogues take both bias gradients first
// (TE's bf16 choice), leaving nothing for this fusion.
// ORDER-LABEL: func.func @mlp_bwd(
// ORDER-NOT: te.dbias_dact
// ORDER-NOT: te.bias_grad
// ORDER: return
func.func @mlp(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %b: tensor<64xbf16>, %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>, %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<16x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>, tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}

// -----

// A gated activation has no fused dbias+dact: a remark, and the ops stay.
// CHECK-LABEL: func.func @swiglu_bwd(
// CHECK: te.dact swiglu
// CHECK: te.bias_grad
func.func @swiglu(%x: tensor<16x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<256x64xbf16>, %b1: tensor<256xbf16>, %w2: tensor<64x128xbf16>) -> tensor<16x64xbf16> {
  // expected-remark @+1 {{te-fuse-dbias-dact: not fused: gated activation swiglu has no fused dbias+dact kernel}}
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1, %b1) act swiglu fc2(%w2) : (tensor<16x64xbf16>, tensor<64xbf16>, tensor<256x64xbf16>, tensor<256xbf16>, tensor<64x128xbf16>) -> tensor<16x64xbf16>
  return %y : tensor<16x64xbf16>
}
