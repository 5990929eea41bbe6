// RUN: te-opt %s --split-input-file --te-import-torch | FileCheck %s

// Parameters passed as function arguments (torch-mlir's stateless import)
// stay arguments; a second linear on the same norm output reads the
// LayerNormLinear's returned norm output through te.linear.
// CHECK-LABEL: func.func @params_as_args
// CHECK-SAME: (%[[X:.+]]: tensor<8x32xbf16>, %[[G:.+]]: tensor<32xbf16>, %[[B:.+]]: tensor<32xbf16>, %[[WQ:.+]]: tensor<64x32xbf16>, %[[WK:.+]]: tensor<16x32xbf16>) -> (tensor<8x64xbf16>, tensor<8x16xbf16>)
// CHECK: %[[Q:.+]], %[[LN:.+]] = te.layernorm_linear %[[X]] norm layer_norm(%[[G]], %[[B]]) weight(%[[WQ]]) {eps = 9.9999999999999995E-7 : f64, return_layernorm_output}
// CHECK: %[[K:.+]] = te.linear %[[LN]] weight(%[[WK]])
// CHECK: return %[[Q]], %[[K]]
func.func @params_as_args(%x: !torch.vtensor<[8,32],bf16>, %g: !torch.vtensor<[32],bf16>, %b: !torch.vtensor<[32],bf16>, %wq: !torch.vtensor<[64,32],bf16>, %wk: !torch.vtensor<[16,32],bf16>) -> (!torch.vtensor<[8,64],bf16>, !torch.vtensor<[8,16],bf16>) {
  %int32 = torch.constant.int 32
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %eps = torch.constant.float 1.000000e-06
  %false = torch.constant.bool false
  %none = torch.constant.none
  %ln = torch.aten.layer_norm %x, %shape, %g, %b, %eps, %false : !torch.vtensor<[8,32],bf16>, !torch.list<int>, !torch.vtensor<[32],bf16>, !torch.vtensor<[32],bf16>, !torch.float, !torch.bool -> !torch.vtensor<[8,32],bf16>
  %q = torch.aten.linear %ln, %wq, %none : !torch.vtensor<[8,32],bf16>, !torch.vtensor<[64,32],bf16>, !torch.none -> !torch.vtensor<[8,64],bf16>
  %k = torch.aten.linear %ln, %wk, %none : !torch.vtensor<[8,32],bf16>, !torch.vtensor<[16,32],bf16>, !torch.none -> !torch.vtensor<[8,16],bf16>
  return %q, %k : !torch.vtensor<[8,64],bf16>, !torch.vtensor<[8,16],bf16>
}

// -----

// A split whose second half is activated: FC1's rows (and bias) are
// reordered so that the activated half comes first, as TE expects. RMSNorm
// without a weight gets gamma = 1, and eps defaults to finfo(f32).eps.
// CHECK-LABEL: func.func @swapped_halves
// CHECK-SAME: (%[[X:.+]]: tensor<4x32xf32>, %[[W1:.+]]: tensor<128x32xf32>, %[[B1:.+]]: tensor<128xf32>, %[[W2:.+]]: tensor<32x64xf32>)
// CHECK-DAG: %[[ONES:.+]] = arith.constant dense<1.000000e+00> : tensor<32xf32>
// CHECK-DAG: %[[HI:.+]] = tensor.extract_slice %[[W1]][64, 0] [64, 32] [1, 1]
// CHECK-DAG: %[[LO:.+]] = tensor.extract_slice %[[W1]][0, 0] [64, 32] [1, 1]
// CHECK: %[[W:.+]] = tensor.concat dim(0) %[[HI]], %[[LO]]
// CHECK-DAG: %[[BHI:.+]] = tensor.extract_slice %[[B1]][64] [64] [1]
// CHECK-DAG: %[[BLO:.+]] = tensor.extract_slice %[[B1]][0] [64] [1]
// CHECK: %[[B:.+]] = tensor.concat dim(0) %[[BHI]], %[[BLO]]
// CHECK: te.layernorm_mlp %[[X]] norm rms_norm(%[[ONES]]) fc1(%[[W]], %[[B]]) act reglu fc2(%[[W2]]) {eps = 1.1920928955078125E-7 : f64}
func.func @swapped_halves(%x: !torch.vtensor<[4,32],f32>, %w1: !torch.vtensor<[128,32],f32>, %b1: !torch.vtensor<[128],f32>, %w2: !torch.vtensor<[32,64],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %int64 = torch.constant.int 64
  %int-1 = torch.constant.int -1
  %none = torch.constant.none
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %n = torch.aten.rms_norm %x, %shape, %none, %none : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.none, !torch.none -> !torch.vtensor<[4,32],f32>
  %h = torch.aten.linear %n, %w1, %b1 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[128,32],f32>, !torch.vtensor<[128],f32> -> !torch.vtensor<[4,128],f32>
  %parts = torch.aten.split.Tensor %h, %int64, %int-1 : !torch.vtensor<[4,128],f32>, !torch.int, !torch.int -> !torch.list<vtensor>
  %a:2 = torch.prim.ListUnpack %parts : !torch.list<vtensor> -> !torch.vtensor<[4,64],f32>, !torch.vtensor<[4,64],f32>
  %r = torch.aten.relu %a#1 : !torch.vtensor<[4,64],f32> -> !torch.vtensor<[4,64],f32>
  %m = torch.aten.mul.Tensor %a#0, %r : !torch.vtensor<[4,64],f32>, !torch.vtensor<[4,64],f32> -> !torch.vtensor<[4,64],f32>
  %y = torch.aten.linear %m, %w2, %none : !torch.vtensor<[4,64],f32>, !torch.vtensor<[32,64],f32>, !torch.none -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// Two-linear GLU (sigmoid gate) where only the gate has a bias: the missing
// half of FC1's bias is zeros.
// CHECK-LABEL: func.func @glu_one_bias
// CHECK-DAG: %[[Z:.+]] = arith.constant dense<0.000000e+00> : tensor<64xf32>
// CHECK: %[[B:.+]] = tensor.concat dim(0) %{{.+}}, %[[Z]] : (tensor<64xf32>, tensor<64xf32>) -> tensor<128xf32>
// CHECK: te.layernorm_mlp {{.*}} fc1(%{{[^,]+}}, %[[B]]) act glu
func.func @glu_one_bias(%x: !torch.vtensor<[4,32],f32>, %g: !torch.vtensor<[32],f32>, %wa: !torch.vtensor<[64,32],f32>, %ba: !torch.vtensor<[64],f32>, %wb: !torch.vtensor<[64,32],f32>, %w2: !torch.vtensor<[32,64],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %none = torch.constant.none
  %eps = torch.constant.float 1.000000e-05
  %false = torch.constant.bool false
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %n = torch.aten.layer_norm %x, %shape, %g, %none, %eps, %false : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.vtensor<[32],f32>, !torch.none, !torch.float, !torch.bool -> !torch.vtensor<[4,32],f32>
  %a = torch.aten.linear %n, %wa, %ba : !torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.vtensor<[64],f32> -> !torch.vtensor<[4,64],f32>
  %s = torch.aten.sigmoid %a : !torch.vtensor<[4,64],f32> -> !torch.vtensor<[4,64],f32>
  %b = torch.aten.linear %n, %wb, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[4,64],f32>
  %m = torch.aten.mul.Tensor %b, %s : !torch.vtensor<[4,64],f32>, !torch.vtensor<[4,64],f32> -> !torch.vtensor<[4,64],f32>
  %y = torch.aten.linear %m, %w2, %none : !torch.vtensor<[4,64],f32>, !torch.vtensor<[32,64],f32>, !torch.none -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// A reshape and casts between modules become tensor.reshape and arith casts.
// CHECK-LABEL: func.func @between_modules
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x32xbf16>, %[[G:.+]]: tensor<32xbf16>, %[[W:.+]]: tensor<64x32xbf16>, %[[W2:.+]]: tensor<16x64xf32>) -> tensor<8x16xf32>
// (The importer moves up-casts above reshapes.) RMSNorm without eps uses
// finfo(bf16).eps.
// CHECK: %[[Y:.+]] = te.layernorm_linear %[[X]] norm rms_norm(%[[G]]) weight(%[[W]]) {eps = 7.812500e-03 : f64}
// CHECK: %[[F:.+]] = arith.extf %[[Y]] : tensor<2x4x64xbf16> to tensor<2x4x64xf32>
// CHECK: %[[SHAPE:.+]] = arith.constant dense<[8, 64]> : tensor<2xi64>
// CHECK: %[[R:.+]] = tensor.reshape %[[F]](%[[SHAPE]]) : (tensor<2x4x64xf32>, tensor<2xi64>) -> tensor<8x64xf32>
// CHECK: %[[Z:.+]] = te.linear %[[R]] weight(%[[W2]])
// CHECK: return %[[Z]]
func.func @between_modules(%x: !torch.vtensor<[2,4,32],bf16>, %g: !torch.vtensor<[32],bf16>, %w: !torch.vtensor<[64,32],bf16>, %w2: !torch.vtensor<[16,64],f32>) -> !torch.vtensor<[8,16],f32> {
  %int32 = torch.constant.int 32
  %int8 = torch.constant.int 8
  %int64 = torch.constant.int 64
  %int6 = torch.constant.int 6
  %none = torch.constant.none
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %n = torch.aten.rms_norm %x, %shape, %g, %none : !torch.vtensor<[2,4,32],bf16>, !torch.list<int>, !torch.vtensor<[32],bf16>, !torch.none -> !torch.vtensor<[2,4,32],bf16>
  %y = torch.aten.linear %n, %w, %none : !torch.vtensor<[2,4,32],bf16>, !torch.vtensor<[64,32],bf16>, !torch.none -> !torch.vtensor<[2,4,64],bf16>
  %s2 = torch.prim.ListConstruct %int8, %int64 : (!torch.int, !torch.int) -> !torch.list<int>
  %r = torch.aten.view %y, %s2 : !torch.vtensor<[2,4,64],bf16>, !torch.list<int> -> !torch.vtensor<[8,64],bf16>
  %f = torch.prims.convert_element_type %r, %int6 : !torch.vtensor<[8,64],bf16>, !torch.int -> !torch.vtensor<[8,64],f32>
  %z = torch.aten.linear %f, %w2, %none : !torch.vtensor<[8,64],f32>, !torch.vtensor<[16,64],f32>, !torch.none -> !torch.vtensor<[8,16],f32>
  return %z : !torch.vtensor<[8,16],f32>
}

// -----

// Two-linear gated MLP whose ungated (up) projection comes first.
// CHECK-LABEL: func.func @up_before_gate
// CHECK-SAME: (%[[X:.+]]: tensor<4x32xf32>, %[[G:.+]]: tensor<32xf32>, %[[WU:.+]]: tensor<64x32xf32>, %[[WG:.+]]: tensor<64x32xf32>, %[[W2:.+]]: tensor<32x64xf32>)
// CHECK: %[[W1:.+]] = tensor.concat dim(0) %[[WG]], %[[WU]]
// CHECK: te.layernorm_mlp %[[X]] norm rms_norm(%[[G]]) fc1(%[[W1]]) act swiglu fc2(%[[W2]])
// CHECK-NOT: te.linear
func.func @up_before_gate(%x: !torch.vtensor<[4,32],f32>, %g: !torch.vtensor<[32],f32>, %wu: !torch.vtensor<[64,32],f32>, %wg: !torch.vtensor<[64,32],f32>, %w2: !torch.vtensor<[32,64],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %none = torch.constant.none
  %eps = torch.constant.float 1.000000e-06
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %n = torch.aten.rms_norm %x, %shape, %g, %eps : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.vtensor<[32],f32>, !torch.float -> !torch.vtensor<[4,32],f32>
  %up = torch.aten.linear %n, %wu, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[4,64],f32>
  %gate = torch.aten.linear %n, %wg, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[4,64],f32>
  %s = torch.aten.silu %gate : !torch.vtensor<[4,64],f32> -> !torch.vtensor<[4,64],f32>
  %m = torch.aten.mul.Tensor %s, %up : !torch.vtensor<[4,64],f32>, !torch.vtensor<[4,64],f32> -> !torch.vtensor<[4,64],f32>
  %y = torch.aten.linear %m, %w2, %none : !torch.vtensor<[4,64],f32>, !torch.vtensor<[32,64],f32>, !torch.none -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}
