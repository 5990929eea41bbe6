// RUN: te-opt %s --split-input-file --te-import-torch --te-outline-raised 2>/dev/null | FileCheck %s
//
// te-outline-raised after partial raising (te-opt cannot parse torch_c ops
// back, so both passes run in one invocation; docs/partition.md).

// An RMSNorm without a weight (gamma: a ones constant, moved into the
// outlined function) + linear, then a softmax left in torch; the second
// linear reads the first module's builtin result directly.
// CHECK-LABEL: func.func @f(
// CHECK-SAME:    %[[X:.+]]: !torch.vtensor<[4,32],f32>, %[[W:.+]]: !torch.vtensor<[64,32],f32>, %[[W2:.+]]: !torch.vtensor<[16,64],f32>) -> !torch.vtensor<[4,16],f32>
// CHECK-NOT:     arith.constant
// CHECK:         %[[XB:.+]] = torch_c.to_builtin_tensor %[[X]]
// CHECK:         %[[WB:.+]] = torch_c.to_builtin_tensor %[[W]]
// CHECK:         %[[W2B:.+]] = torch_c.to_builtin_tensor %[[W2]]
// CHECK:         %[[H:.+]] = call @f_layernorm_linear_0(%[[XB]], %[[WB]]) : (tensor<4x32xf32>, tensor<64x32xf32>) -> tensor<4x64xf32>
// CHECK:         %[[Y:.+]] = call @f_linear_1(%[[H]], %[[W2B]]) : (tensor<4x64xf32>, tensor<16x64xf32>) -> tensor<4x16xf32>
// CHECK:         %[[YT:.+]] = torch_c.from_builtin_tensor %[[Y]] : tensor<4x16xf32> -> !torch.vtensor<[4,16],f32>
// CHECK:         %[[S:.+]] = torch.aten.softmax.int %[[YT]]
// CHECK:         return %[[S]]
// The name @f_linear_0 is taken: the next free index.
// CHECK-LABEL: func.func @f_layernorm_linear_0(
// CHECK-SAME:    %[[A0:.+]]: tensor<4x32xf32>, %[[A1:.+]]: tensor<64x32xf32>) -> tensor<4x64xf32>
// CHECK:         %[[ONES:.+]] = arith.constant dense<1.000000e+00> : tensor<32xf32>
// CHECK:         %[[R:.+]] = te.layernorm_linear %[[A0]] norm rms_norm(%[[ONES]]) weight(%[[A1]])
// CHECK:         return %[[R]] : tensor<4x64xf32>
// CHECK-LABEL: func.func @f_linear_1(
// CHECK:         te.linear
// CHECK-LABEL: func.func @f_linear_0(
// CHECK-NEXT:    return
func.func @f(%x: !torch.vtensor<[4,32],f32>, %w: !torch.vtensor<[64,32],f32>, %w2: !torch.vtensor<[16,64],f32>) -> !torch.vtensor<[4,16],f32> {
  %int32 = torch.constant.int 32
  %int-1 = torch.constant.int -1
  %none = torch.constant.none
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %n = torch.aten.rms_norm %x, %shape, %none, %none : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.none, !torch.none -> !torch.vtensor<[4,32],f32>
  %h = torch.aten.linear %n, %w, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[4,64],f32>
  %y = torch.aten.linear %h, %w2, %none : !torch.vtensor<[4,64],f32>, !torch.vtensor<[16,64],f32>, !torch.none -> !torch.vtensor<[4,16],f32>
  %s = torch.aten.softmax.int %y, %int-1, %none : !torch.vtensor<[4,16],f32>, !torch.int, !torch.none -> !torch.vtensor<[4,16],f32>
  return %s : !torch.vtensor<[4,16],f32>
}
func.func @f_linear_0() {
  return
}

// -----

// A function raised as a whole is on builtin tensors: nothing to outline.
// CHECK-LABEL: func.func @whole(
// CHECK-SAME:    tensor<4x32xf32>
// CHECK:         te.linear
// CHECK-NOT:     call
// CHECK-NOT:     func.func
func.func @whole(%x: !torch.vtensor<[4,32],f32>, %w: !torch.vtensor<[64,32],f32>) -> !torch.vtensor<[4,64],f32> {
  %none = torch.constant.none
  %y = torch.aten.linear %x, %w, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[4,64],f32>
  return %y : !torch.vtensor<[4,64],f32>
}
