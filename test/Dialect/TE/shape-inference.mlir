// RUN: te-opt %s --split-input-file --resolve-ranked-shaped-type-result-dims | FileCheck %s

// ReifyRankedShapedTypeOpInterface: the dynamic dims of a result are the
// input's; the feature dim is the weight's out_features.
// CHECK-LABEL: func.func @layernorm_mlp_dims
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x64xbf16>
// CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[D0:.+]] = tensor.dim %[[X]], %[[C0]]
// CHECK-DAG: %[[D1:.+]] = tensor.dim %[[X]], %[[C1]]
// CHECK: return %[[D0]], %[[D1]], %[[C64]]
func.func @layernorm_mlp_dims(%x: tensor<?x?x64xbf16>, %g: tensor<64xbf16>, %w1: tensor<512x64xbf16>, %w2: tensor<64x256xbf16>) -> (index, index, index) {
  %y = te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2) : (tensor<?x?x64xbf16>, tensor<64xbf16>, tensor<512x64xbf16>, tensor<64x256xbf16>) -> tensor<?x?x64xbf16>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %d0 = tensor.dim %y, %c0 : tensor<?x?x64xbf16>
  %d1 = tensor.dim %y, %c1 : tensor<?x?x64xbf16>
  %d2 = tensor.dim %y, %c2 : tensor<?x?x64xbf16>
  return %d0, %d1, %d2 : index, index, index
}

// -----

// Both results of a layernorm_linear that returns its norm output.
// CHECK-LABEL: func.func @layernorm_linear_dims
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x64xf32>
// CHECK-NOT: te.layernorm_linear
// CHECK: %[[D:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<?x64xf32>
// CHECK: return %[[D]], %[[D]]
func.func @layernorm_linear_dims(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %w: tensor<128x64xf32>) -> (index, index) {
  %y, %ln = te.layernorm_linear %x norm layer_norm(%g) weight(%w) {return_layernorm_output} : (tensor<?x64xf32>, tensor<64xf32>, tensor<128x64xf32>) -> (tensor<?x128xf32>, tensor<?x64xf32>)
  %c0 = arith.constant 0 : index
  %d0 = tensor.dim %y, %c0 : tensor<?x128xf32>
  %d1 = tensor.dim %ln, %c0 : tensor<?x64xf32>
  return %d0, %d1 : index, index
}

// -----

// A static leading dim reifies to a constant; te.linear keeps [.., N].
// CHECK-LABEL: func.func @linear_dims
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x?x64xf16>
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[D1:.+]] = tensor.dim %[[X]], %{{.+}} : tensor<4x?x64xf16>
// CHECK: return %[[C4]], %[[D1]]
func.func @linear_dims(%x: tensor<4x?x64xf16>, %w: tensor<32x64xf16>) -> (index, index) {
  %y = te.linear %x weight(%w) : (tensor<4x?x64xf16>, tensor<32x64xf16>) -> tensor<4x?x32xf16>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %y, %c0 : tensor<4x?x32xf16>
  %d1 = tensor.dim %y, %c1 : tensor<4x?x32xf16>
  return %d0, %d1 : index, index
}
