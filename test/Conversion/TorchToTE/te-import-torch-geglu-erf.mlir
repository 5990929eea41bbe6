// RUN: te-opt %s --te-import-torch | FileCheck %s

// The gated erf GELU, gelu(a, approximate='none') * b with a and b two
// linears of the norm output, raises to te's geglu_erf (TransformerEngine's
// GeGLU is the tanh form; te-mlir has both).
// CHECK-LABEL: func.func @gated_erf_gelu
// CHECK: te.layernorm_mlp %{{.*}} norm layer_norm(%{{.*}}) fc1(%{{.*}}) act geglu_erf fc2(%{{.*}}) : (tensor<4x32xf32>, tensor<32xf32>, tensor<128x32xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
// CHECK-NOT: torch.aten.gelu
func.func @gated_erf_gelu(%x: !torch.vtensor<[4,32],f32>, %g: !torch.vtensor<[32],f32>, %wa: !torch.vtensor<[64,32],f32>, %wb: !torch.vtensor<[64,32],f32>, %w2: !torch.vtensor<[32,64],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %none = torch.constant.none
  %eps = torch.constant.float 1.000000e-05
  %false = torch.constant.bool false
  %str = torch.constant.str "none"
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %n = torch.aten.layer_norm %x, %shape, %g, %none, %eps, %false : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.vtensor<[32],f32>, !torch.none, !torch.float, !torch.bool -> !torch.vtensor<[4,32],f32>
  %a = torch.aten.linear %n, %wa, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[4,64],f32>
  %ga = torch.aten.gelu %a, %str : !torch.vtensor<[4,64],f32>, !torch.str -> !torch.vtensor<[4,64],f32>
  %b = torch.aten.linear %n, %wb, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[4,64],f32>
  %m = torch.aten.mul.Tensor %ga, %b : !torch.vtensor<[4,64],f32>, !torch.vtensor<[4,64],f32> -> !torch.vtensor<[4,64],f32>
  %y = torch.aten.linear %m, %w2, %none : !torch.vtensor<[4,64],f32>, !torch.vtensor<[32,64],f32>, !torch.none -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

