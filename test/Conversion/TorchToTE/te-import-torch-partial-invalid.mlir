// RUN: te-opt %s --split-input-file --te-import-torch --verify-diagnostics | FileCheck %s
//
// The cases of te-import-torch-invalid.mlir (errors under strict=true) in
// partial mode, the default: what is recognized is raised in place (bridged
// with torch_c ops), every other op is left as it was with one remark naming
// it and why (the recognizer's reason where there is one), and the pass
// succeeds.

// Near miss: LayerNorm over the last two dims is not TransformerEngine's norm.
// The norm is left; the linear reading it is raised alone, its input bridged.
// CHECK-LABEL: func.func @norm_two_dims(
// CHECK-SAME:    %[[X:.+]]: !torch.vtensor<[2,4,32],f32>, %[[W:.+]]: !torch.vtensor<[64,32],f32>) -> !torch.vtensor<[2,4,64],f32>
// CHECK:         %[[WB:.+]] = torch_c.to_builtin_tensor %[[W]] : !torch.vtensor<[64,32],f32> -> tensor<64x32xf32>
// CHECK:         %[[N:.+]] = torch.aten.layer_norm %[[X]]
// CHECK:         %[[NB:.+]] = torch_c.to_builtin_tensor %[[N]] : !torch.vtensor<[2,4,32],f32> -> tensor<2x4x32xf32>
// CHECK:         %[[Y:.+]] = te.linear %[[NB]] weight(%[[WB]])
// CHECK:         %[[YT:.+]] = torch_c.from_builtin_tensor %[[Y]] : tensor<2x4x64xf32> -> !torch.vtensor<[2,4,64],f32>
// CHECK:         return %[[YT]] : !torch.vtensor<[2,4,64],f32>
func.func @norm_two_dims(%x: !torch.vtensor<[2,4,32],f32>, %w: !torch.vtensor<[64,32],f32>) -> !torch.vtensor<[2,4,64],f32> {
  %int4 = torch.constant.int 4
  %int32 = torch.constant.int 32
  %none = torch.constant.none
  %eps = torch.constant.float 1.000000e-05
  %false = torch.constant.bool false
  %shape = torch.prim.ListConstruct %int4, %int32 : (!torch.int, !torch.int) -> !torch.list<int>
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.layer_norm' as is: normalized_shape must be the last dimension [32]; TransformerEngine normalizes over the hidden dimension only}}
  %n = torch.aten.layer_norm %x, %shape, %none, %none, %eps, %false : !torch.vtensor<[2,4,32],f32>, !torch.list<int>, !torch.none, !torch.none, !torch.float, !torch.bool -> !torch.vtensor<[2,4,32],f32>
  %y = torch.aten.linear %n, %w, %none : !torch.vtensor<[2,4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[2,4,64],f32>
  return %y : !torch.vtensor<[2,4,64],f32>
}

// -----

// A norm that feeds no linear has no TransformerEngine module.
// CHECK-LABEL: func.func @standalone_norm(
// CHECK-NOT:     torch_c
// CHECK:         torch.aten.layer_norm
func.func @standalone_norm(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %none = torch.constant.none
  %eps = torch.constant.float 1.000000e-05
  %false = torch.constant.bool false
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.layer_norm' as is: a normalization must feed an aten.linear (TransformerEngine has no standalone norm module)}}
  %n = torch.aten.layer_norm %x, %shape, %none, %none, %eps, %false : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.none, !torch.none, !torch.float, !torch.bool -> !torch.vtensor<[4,32],f32>
  return %n : !torch.vtensor<[4,32],f32>
}

// -----

// An op outside the supported patterns is reported with what is supported.
// CHECK-LABEL: func.func @softmax(
// CHECK-NOT:     torch_c
// CHECK:         torch.aten.softmax.int
func.func @softmax(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int-1 = torch.constant.int -1
  %none = torch.constant.none
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.softmax.int' as is: attention (softmax, batched matmuls, masks) is not part of a TransformerEngine LayerNorm module; it is left for another compiler (te-compile --partition)}}
  %y = torch.aten.softmax.int %x, %int-1, %none : !torch.vtensor<[4,32],f32>, !torch.int, !torch.none -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// Near miss: a linear whose weight does not match the input's features.
// The te op's verifier message is the reason.
// CHECK-LABEL: func.func @linear_wrong_weight(
// CHECK-NOT:     te.
// CHECK:         torch.aten.linear
func.func @linear_wrong_weight(%x: !torch.vtensor<[4,32],f32>, %w: !torch.vtensor<[32,64],f32>) -> !torch.vtensor<[4,32],f32> {
  %none = torch.constant.none
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.linear' as is: its operands do not form a TransformerEngine Linear: 'te.linear' op weight in_features 64 does not match the input feature size 32}}
  %y = torch.aten.linear %x, %w, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[32,64],f32>, !torch.none -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// A 1-D weight is not a TransformerEngine Linear.
// CHECK-LABEL: func.func @linear_vector_weight(
// CHECK-NOT:     te.
// CHECK:         torch.aten.linear
func.func @linear_vector_weight(%x: !torch.vtensor<[4,32],f32>, %w: !torch.vtensor<[32],f32>) -> !torch.vtensor<[4],f32> {
  %none = torch.constant.none
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.linear' as is: not part of a recognized module}}
  %y = torch.aten.linear %x, %w, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[32],f32>, !torch.none -> !torch.vtensor<[4],f32>
  return %y : !torch.vtensor<[4],f32>
}

// -----

// Broadcasting adds are not residual adds.
// CHECK-LABEL: func.func @broadcast_add(
// CHECK:         torch.aten.add.Tensor
func.func @broadcast_add(%x: !torch.vtensor<[4,32],f32>, %b: !torch.vtensor<[32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int1 = torch.constant.int 1
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.add.Tensor' as is: not part of a recognized module}}
  %y = torch.aten.add.Tensor %x, %b, %int1 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[32],f32>, !torch.int -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// Integer tensors are not activations.
// Nothing to raise and nothing to remark on: the function is unchanged.
// CHECK-LABEL: func.func @int_arg(%{{.+}}: !torch.vtensor<[4],si64>) -> !torch.vtensor<[4],si64>
// CHECK-NEXT:    return
func.func @int_arg(%x: !torch.vtensor<[4],si64>) -> !torch.vtensor<[4],si64> {
  return %x : !torch.vtensor<[4],si64>
}

// -----

// A split into unequal parts is not a gated FC1.
// The near miss: the norm and FC1 still raise as a LayerNormLinear (gamma
// ones), the split is left with the MLP recognizer's reason, FC2 raises as a
// te.linear.
// CHECK-LABEL: func.func @unequal_split(
// CHECK:         %[[G:.+]] = arith.constant dense<1.000000e+00> : tensor<32xf32>
// CHECK:         %[[H:.+]] = te.layernorm_linear %{{.+}} norm rms_norm(%[[G]]) weight(%{{.+}})
// CHECK:         %[[HT:.+]] = torch_c.from_builtin_tensor %[[H]] : tensor<4x96xf32> -> !torch.vtensor<[4,96],f32>
// CHECK:         torch.aten.split.Tensor %[[HT]]
// CHECK:         torch.aten.silu
// CHECK:         te.linear
func.func @unequal_split(%x: !torch.vtensor<[4,32],f32>, %w1: !torch.vtensor<[96,32],f32>, %w2: !torch.vtensor<[32,64],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %int64 = torch.constant.int 64
  %int-1 = torch.constant.int -1
  %none = torch.constant.none
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %n = torch.aten.rms_norm %x, %shape, %none, %none : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.none, !torch.none -> !torch.vtensor<[4,32],f32>
  %h = torch.aten.linear %n, %w1, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[96,32],f32>, !torch.none -> !torch.vtensor<[4,96],f32>
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.split.Tensor' as is: FC1's output must be split into two equal halves}}
  %parts = torch.aten.split.Tensor %h, %int64, %int-1 : !torch.vtensor<[4,96],f32>, !torch.int, !torch.int -> !torch.list<vtensor>
  // expected-remark @+1 {{te-import-torch: left 'torch.prim.ListUnpack' as is: not part of a recognized module}}
  %a:2 = torch.prim.ListUnpack %parts : !torch.list<vtensor> -> !torch.vtensor<[4,64],f32>, !torch.vtensor<[4,32],f32>
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.silu' as is: not part of a recognized module}}
  %r = torch.aten.silu %a#0 : !torch.vtensor<[4,64],f32> -> !torch.vtensor<[4,64],f32>
  %y = torch.aten.linear %r, %w2, %none : !torch.vtensor<[4,64],f32>, !torch.vtensor<[32,64],f32>, !torch.none -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// Near miss: unbiased variance (correction 1) is not LayerNorm's; the
// decomposition is left alone and reported.
// CHECK-LABEL: func.func @unbiased_variance(
// CHECK-NOT:     te.
// CHECK:         torch.aten.var_mean.correction
func.func @unbiased_variance(%x: !torch.vtensor<[4,32],f32>, %w: !torch.vtensor<[64,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int1 = torch.constant.int 1
  %int-1 = torch.constant.int -1
  %true = torch.constant.bool true
  %eps = torch.constant.float 1.000000e-05
  %dims = torch.prim.ListConstruct %int-1 : (!torch.int) -> !torch.list<int>
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.var_mean.correction' as is: not part of a recognized module}}
  %var, %mean = torch.aten.var_mean.correction %x, %dims, %int1, %true : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.int, !torch.bool -> !torch.vtensor<[4,1],f32>, !torch.vtensor<[4,1],f32>
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.add.Scalar' as is: not part of a recognized module}}
  %e = torch.aten.add.Scalar %var, %eps, %int1 : !torch.vtensor<[4,1],f32>, !torch.float, !torch.int -> !torch.vtensor<[4,1],f32>
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.rsqrt' as is: not part of a recognized module}}
  %r = torch.aten.rsqrt %e : !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,1],f32>
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.sub.Tensor' as is: not part of a recognized module}}
  %c = torch.aten.sub.Tensor %x, %mean, %int1 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[4,1],f32>, !torch.int -> !torch.vtensor<[4,32],f32>
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.mul.Tensor' as is: not part of a recognized module}}
  %n = torch.aten.mul.Tensor %c, %r : !torch.vtensor<[4,32],f32>, !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,32],f32>
  return %n : !torch.vtensor<[4,32],f32>
}

// -----

// Near miss: a decomposed linear whose result is viewed to another shape
// is not recomposed; its transposed weight is the first op left over.
// CHECK-LABEL: func.func @view_elsewhere(
// CHECK-NOT:     te.
// CHECK:         torch.aten.mm
func.func @view_elsewhere(%x: !torch.vtensor<[2,4,32],f32>, %w: !torch.vtensor<[64,32],f32>) -> !torch.vtensor<[4,2,64],f32> {
  %int8 = torch.constant.int 8
  %int32 = torch.constant.int 32
  %int4 = torch.constant.int 4
  %int2 = torch.constant.int 2
  %int64 = torch.constant.int 64
  %int1 = torch.constant.int 1
  %int0 = torch.constant.int 0
  %s2 = torch.prim.ListConstruct %int8, %int32 : (!torch.int, !torch.int) -> !torch.list<int>
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.view' as is: not part of a recognized module}}
  %x2 = torch.aten.view %x, %s2 : !torch.vtensor<[2,4,32],f32>, !torch.list<int> -> !torch.vtensor<[8,32],f32>
  %perm = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.permute' as is: not part of a recognized module}}
  %wt = torch.aten.permute %w, %perm : !torch.vtensor<[64,32],f32>, !torch.list<int> -> !torch.vtensor<[32,64],f32>
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.mm' as is: not part of a recognized module}}
  %y = torch.aten.mm %x2, %wt : !torch.vtensor<[8,32],f32>, !torch.vtensor<[32,64],f32> -> !torch.vtensor<[8,64],f32>
  %s3 = torch.prim.ListConstruct %int4, %int2, %int64 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  // expected-remark @+1 {{te-import-torch: left 'torch.aten.view' as is: not part of a recognized module}}
  %out = torch.aten.view %y, %s3 : !torch.vtensor<[8,64],f32>, !torch.list<int> -> !torch.vtensor<[4,2,64],f32>
  return %out : !torch.vtensor<[4,2,64],f32>
}
