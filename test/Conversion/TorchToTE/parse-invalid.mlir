// RUN: te-opt %s --split-input-file --verify-diagnostics

// expected-error @+1 {{unknown torch type 'tensorlist'}}
func.func @unknown_type(%a: !torch.tensorlist) { return }

// -----

func.func @bad_bool() {
  // expected-error @+1 {{expected true or false}}
  %0 = torch.constant.bool maybe
  return
}

// -----

func.func @unknown_constant() {
  // expected-error @+1 {{unsupported torch constant 'torch.constant.complex'}}
  %0 = torch.constant.complex 1
  return
}

// -----

func.func @bad_sizes(%a: !torch.vtensor<[2,x],f32>) {
  // expected-error @-1 {{expected integer value}}
  return
}

// -----

func.func @operand_type_count(%a: !torch.vtensor<[2],f32>) {
  // expected-error @+1 {{custom op 'torch.aten.relu' number of operands and types do not match: got 1 operands and 0 types}}
  %0 = torch.aten.relu %a : -> !torch.vtensor<[2],f32>
  return
}
