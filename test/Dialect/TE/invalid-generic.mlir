// RUN: te-opt %s --split-input-file --verify-diagnostics

// Unknown recipes are parse errors.
func.func @unknown_recipe(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{unknown attribute `fp9` in dialect `te`}}
  %y = te.layernorm_linear %x norm layer_norm(%g) weight(%w) recipe(#te.fp9) : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// Unknown recipe parameters are parse errors.
func.func @unknown_recipe_param(%x: tensor<4x64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{duplicate or unknown struct parameter name: bogus}}
  %y = te.linear %x weight(%w) recipe(#te.fp8_delayed<bogus = 1>) : (tensor<4x64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// Unknown ops of the dialect are parse errors.
func.func @unknown_op(%x: tensor<4x64xf32>) {
  // expected-error @+1 {{custom op 'te.layernorm' is unknown}}
  %z = te.layernorm %x : tensor<4x64xf32>
  return
}

// -----

// Unranked tensors are rejected by the operand constraints.
func.func @unranked(%x: tensor<*xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.linear' op operand #0 must be ranked tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<*xf32>'}}
  %y = te.linear %x weight(%w) : (tensor<*xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// Generic form: operand segments must add up.
func.func @segments(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op operand count (3) does not match with the total size (4) specified in attribute 'operandSegmentSizes'}}
  %y = "te.layernorm_linear"(%x, %g, %w) <{normalization = #te<normalization layer_norm>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>}> : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// Generic form: the normalization is required.
func.func @missing_normalization(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op requires attribute 'normalization'}}
  %y = "te.layernorm_linear"(%x, %g, %w) <{operandSegmentSizes = array<i32: 1, 1, 0, 1, 0, 0>}> : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// Generic form: a recipe must be a recipe attribute.
func.func @recipe_property(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{Invalid attribute `recipe` in property conversion: 3 : i32}}
  %y = "te.layernorm_linear"(%x, %g, %w) <{normalization = #te<normalization layer_norm>, operandSegmentSizes = array<i32: 1, 1, 0, 1, 0, 0>, recipe = 3 : i32}> : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// Generic form: eps is an f64 attribute.
func.func @eps_property(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{Invalid attribute `eps` in property conversion: 1 : i32}}
  %y = "te.layernorm_linear"(%x, %g, %w) <{normalization = #te<normalization layer_norm>, operandSegmentSizes = array<i32: 1, 1, 0, 1, 0, 0>, eps = 1 : i32}> : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> tensor<4x32xf32>
  return
}

// -----

// Generic form: at most one norm output.
func.func @too_many_results(%x: tensor<4x64xf32>, %g: tensor<64xf32>, %w: tensor<32x64xf32>) {
  // expected-error @+1 {{'te.layernorm_linear' op result group starting at #1 requires 0 or 1 element, but found 2}}
  %y:3 = "te.layernorm_linear"(%x, %g, %w) <{normalization = #te<normalization layer_norm>, operandSegmentSizes = array<i32: 1, 1, 0, 1, 0, 0>}> : (tensor<4x64xf32>, tensor<64xf32>, tensor<32x64xf32>) -> (tensor<4x32xf32>, tensor<4x64xf32>, tensor<4x64xf32>)
  return
}
