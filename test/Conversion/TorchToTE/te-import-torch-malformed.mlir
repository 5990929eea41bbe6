// RUN: te-opt %s --split-input-file --te-import-torch --verify-diagnostics

// Malformed exports: torch ops with fewer operands (or results, or a
// constant without its value) than torch-mlir defines. torch ops are
// unregistered, so only the importer's signature check stands between
// them and patterns that read operands by position.

// 'torch.aten.layer_norm' with 2 of its 6 operands.
func.func @layer_norm(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  // expected-error @+1 {{te-import-torch: 'torch.aten.layer_norm' takes 6 operands, got 2}}
  %y = "torch.aten.layer_norm"(%x, %shape) : (!torch.vtensor<[4,32],f32>, !torch.list<int>) -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// 'torch.aten.rms_norm' with 2 of its 4 operands.
func.func @rms_norm(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  // expected-error @+1 {{te-import-torch: 'torch.aten.rms_norm' takes 4 operands, got 2}}
  %y = "torch.aten.rms_norm"(%x, %shape) : (!torch.vtensor<[4,32],f32>, !torch.list<int>) -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// 'torch.aten.linear' with 1 of its 3 operands.
func.func @linear(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  // expected-error @+1 {{te-import-torch: 'torch.aten.linear' takes 3 operands, got 1}}
  %y = "torch.aten.linear"(%x) : (!torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// 'torch.aten.mm' with 1 of its 2 operands.
func.func @mm(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  // expected-error @+1 {{te-import-torch: 'torch.aten.mm' takes 2 operands, got 1}}
  %y = "torch.aten.mm"(%x) : (!torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// 'torch.aten.matmul' with 1 of its 2 operands.
func.func @matmul(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  // expected-error @+1 {{te-import-torch: 'torch.aten.matmul' takes 2 operands, got 1}}
  %y = "torch.aten.matmul"(%x) : (!torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// 'torch.aten.mul.Tensor' with 1 of its 2 operands.
func.func @mul_tensor(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  // expected-error @+1 {{te-import-torch: 'torch.aten.mul.Tensor' takes 2 operands, got 1}}
  %y = "torch.aten.mul.Tensor"(%x) : (!torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// 'torch.aten.pow.Tensor_Scalar' with 1 of its 2 operands.
func.func @pow(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  // expected-error @+1 {{te-import-torch: 'torch.aten.pow.Tensor_Scalar' takes 2 operands, got 1}}
  %y = "torch.aten.pow.Tensor_Scalar"(%x) : (!torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// 'torch.aten.sum.dim_IntList' with 2 of its 4 operands.
func.func @sum_dim(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  // expected-error @+1 {{te-import-torch: 'torch.aten.sum.dim_IntList' takes 4 operands, got 2}}
  %y = "torch.aten.sum.dim_IntList"(%x, %shape) : (!torch.vtensor<[4,32],f32>, !torch.list<int>) -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// 'torch.aten.add.Tensor' with 2 of its 3 operands.
func.func @add_tensor(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  // expected-error @+1 {{te-import-torch: 'torch.aten.add.Tensor' takes 3 operands, got 2}}
  %y = "torch.aten.add.Tensor"(%x, %x) : (!torch.vtensor<[4,32],f32>, !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// 'torch.aten.var_mean.correction' with one result instead of two.
func.func @var_mean(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,1],f32> {
  %int1 = torch.constant.int -1
  %dims = torch.prim.ListConstruct %int1 : (!torch.int) -> !torch.list<int>
  %c = torch.constant.int 0
  %true = torch.constant.bool true
  // expected-error @+1 {{te-import-torch: 'torch.aten.var_mean.correction' has 2 results, got 1}}
  %v = "torch.aten.var_mean.correction"(%x, %dims, %c, %true) : (!torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.int, !torch.bool) -> !torch.vtensor<[4,1],f32>
  return %v : !torch.vtensor<[4,1],f32>
}

// -----

// A torch.constant.int without its value.
func.func @constant_without_value(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  // expected-error @+1 {{te-import-torch: 'torch.constant.int' needs a 'value' attribute of its type}}
  %int32 = "torch.constant.int"() : () -> !torch.int
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %y = torch.aten.view %x, %shape : !torch.vtensor<[4,32],f32>, !torch.list<int> -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// A torch.constant.float whose value is an integer.
func.func @constant_wrong_value(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  // expected-error @+1 {{te-import-torch: 'torch.constant.float' needs a 'value' attribute of its type}}
  %eps = "torch.constant.float"() {value = 3 : i64} : () -> !torch.float
  %y = "torch.aten.add.Scalar"(%x, %eps, %eps) : (!torch.vtensor<[4,32],f32>, !torch.float, !torch.float) -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// The activation evaluator reads clamp_min's bound: a clamp_min without one
// is refused before it is read.
func.func @clamp_min_no_bound(%x: !torch.vtensor<[4,32],f32>, %w: !torch.vtensor<[64,32],f32>, %w2: !torch.vtensor<[32,64],f32>) -> !torch.vtensor<[4,32],f32> {
  %none = torch.constant.none
  %h = torch.aten.linear %x, %w, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[4,64],f32>
  // expected-error @+1 {{te-import-torch: 'torch.aten.clamp_min' takes 2 operands, got 1}}
  %a = "torch.aten.clamp_min"(%h) : (!torch.vtensor<[4,64],f32>) -> !torch.vtensor<[4,64],f32>
  %y = torch.aten.linear %a, %w2, %none : !torch.vtensor<[4,64],f32>, !torch.vtensor<[32,64],f32>, !torch.none -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// Nor an erf with two operands.
func.func @erf_two_operands(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  // expected-error @+1 {{te-import-torch: 'torch.aten.erf' takes 1 operand, got 2}}
  %a = "torch.aten.erf"(%x, %x) : (!torch.vtensor<[4,32],f32>, !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32>
  return %a : !torch.vtensor<[4,32],f32>
}
