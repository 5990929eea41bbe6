// RUN: te-opt %s --split-input-file --te-import-torch=strict=true --verify-diagnostics
//
// strict=true: all or nothing, each case is an error. The same cases in
// partial mode (the default), with remarks: te-import-torch-partial-invalid.mlir.

// Near miss: LayerNorm over the last two dims is not TransformerEngine's norm.
func.func @norm_two_dims(%x: !torch.vtensor<[2,4,32],f32>, %w: !torch.vtensor<[64,32],f32>) -> !torch.vtensor<[2,4,64],f32> {
  %int4 = torch.constant.int 4
  %int32 = torch.constant.int 32
  %none = torch.constant.none
  %eps = torch.constant.float 1.000000e-05
  %false = torch.constant.bool false
  %shape = torch.prim.ListConstruct %int4, %int32 : (!torch.int, !torch.int) -> !torch.list<int>
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.layer_norm': normalized_shape must be the last dimension [32]; TransformerEngine normalizes over the hidden dimension only}}
  %n = torch.aten.layer_norm %x, %shape, %none, %none, %eps, %false : !torch.vtensor<[2,4,32],f32>, !torch.list<int>, !torch.none, !torch.none, !torch.float, !torch.bool -> !torch.vtensor<[2,4,32],f32>
  %y = torch.aten.linear %n, %w, %none : !torch.vtensor<[2,4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[2,4,64],f32>
  return %y : !torch.vtensor<[2,4,64],f32>
}

// -----

// A norm that feeds no linear has no TransformerEngine module.
func.func @standalone_norm(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %none = torch.constant.none
  %eps = torch.constant.float 1.000000e-05
  %false = torch.constant.bool false
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.layer_norm': a normalization must feed an aten.linear (TransformerEngine has no standalone norm module)}}
  %n = torch.aten.layer_norm %x, %shape, %none, %none, %eps, %false : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.none, !torch.none, !torch.float, !torch.bool -> !torch.vtensor<[4,32],f32>
  return %n : !torch.vtensor<[4,32],f32>
}

// -----

// Attention is reported as such, with what is supported.
func.func @softmax(%x: !torch.vtensor<[4,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int-1 = torch.constant.int -1
  %none = torch.constant.none
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.softmax.int': attention (softmax, batched matmuls, masks) is not part of a TransformerEngine LayerNorm module; it is left for another compiler (te-compile --partition); supported: aten.layer_norm / aten.rms_norm over the last dim followed by aten.linear}}
  %y = torch.aten.softmax.int %x, %int-1, %none : !torch.vtensor<[4,32],f32>, !torch.int, !torch.none -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// Near miss: a linear whose weight does not match the input's features.
func.func @linear_wrong_weight(%x: !torch.vtensor<[4,32],f32>, %w: !torch.vtensor<[32,64],f32>) -> !torch.vtensor<[4,32],f32> {
  %none = torch.constant.none
  // expected-error @+2 {{'te.linear' op weight in_features 64 does not match the input feature size 32}}
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.linear': its operands do not form a TransformerEngine Linear (see the error above)}}
  %y = torch.aten.linear %x, %w, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[32,64],f32>, !torch.none -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// A 1-D weight is not a TransformerEngine Linear.
func.func @linear_vector_weight(%x: !torch.vtensor<[4,32],f32>, %w: !torch.vtensor<[32],f32>) -> !torch.vtensor<[4],f32> {
  %none = torch.constant.none
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.linear': not part of a recognized module}}
  %y = torch.aten.linear %x, %w, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[32],f32>, !torch.none -> !torch.vtensor<[4],f32>
  return %y : !torch.vtensor<[4],f32>
}

// -----

// Broadcasting adds are not residual adds.
func.func @broadcast_add(%x: !torch.vtensor<[4,32],f32>, %b: !torch.vtensor<[32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int1 = torch.constant.int 1
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.add.Tensor': both operands must have the same tensor type (broadcasting adds are not supported)}}
  %y = torch.aten.add.Tensor %x, %b, %int1 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[32],f32>, !torch.int -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// Integer tensors are not activations.
// expected-error @+1 {{te-import-torch: unsupported type '!torch.vtensor<[4],si64>'; function arguments and results must be !torch.vtensor with known sizes and an f32, bf16 or f16 dtype}}
func.func @int_arg(%x: !torch.vtensor<[4],si64>) -> !torch.vtensor<[4],si64> {
  return %x : !torch.vtensor<[4],si64>
}

// -----

// A split into unequal parts is not a gated FC1.
func.func @unequal_split(%x: !torch.vtensor<[4,32],f32>, %w1: !torch.vtensor<[96,32],f32>, %w2: !torch.vtensor<[32,64],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %int64 = torch.constant.int 64
  %int-1 = torch.constant.int -1
  %none = torch.constant.none
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %n = torch.aten.rms_norm %x, %shape, %none, %none : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.none, !torch.none -> !torch.vtensor<[4,32],f32>
  %h = torch.aten.linear %n, %w1, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[96,32],f32>, !torch.none -> !torch.vtensor<[4,96],f32>
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.split.Tensor': FC1's output must be split into two equal halves}}
  %parts = torch.aten.split.Tensor %h, %int64, %int-1 : !torch.vtensor<[4,96],f32>, !torch.int, !torch.int -> !torch.list<vtensor>
  %a:2 = torch.prim.ListUnpack %parts : !torch.list<vtensor> -> !torch.vtensor<[4,64],f32>, !torch.vtensor<[4,32],f32>
  %r = torch.aten.silu %a#0 : !torch.vtensor<[4,64],f32> -> !torch.vtensor<[4,64],f32>
  %y = torch.aten.linear %r, %w2, %none : !torch.vtensor<[4,64],f32>, !torch.vtensor<[32,64],f32>, !torch.none -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// Near miss: unbiased variance (correction 1) is not LayerNorm's; the
// decomposition is left alone and reported.
func.func @unbiased_variance(%x: !torch.vtensor<[4,32],f32>, %w: !torch.vtensor<[64,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int1 = torch.constant.int 1
  %int-1 = torch.constant.int -1
  %true = torch.constant.bool true
  %eps = torch.constant.float 1.000000e-05
  %dims = torch.prim.ListConstruct %int-1 : (!torch.int) -> !torch.list<int>
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.var_mean.correction': not part of a recognized module}}
  %var, %mean = torch.aten.var_mean.correction %x, %dims, %int1, %true : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.int, !torch.bool -> !torch.vtensor<[4,1],f32>, !torch.vtensor<[4,1],f32>
  %e = torch.aten.add.Scalar %var, %eps, %int1 : !torch.vtensor<[4,1],f32>, !torch.float, !torch.int -> !torch.vtensor<[4,1],f32>
  %r = torch.aten.rsqrt %e : !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,1],f32>
  %c = torch.aten.sub.Tensor %x, %mean, %int1 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[4,1],f32>, !torch.int -> !torch.vtensor<[4,32],f32>
  %n = torch.aten.mul.Tensor %c, %r : !torch.vtensor<[4,32],f32>, !torch.vtensor<[4,1],f32> -> !torch.vtensor<[4,32],f32>
  return %n : !torch.vtensor<[4,32],f32>
}

// -----

// Near miss: a decomposed linear whose result is viewed to another shape
// is not recomposed; its transposed weight is the first op left over.
func.func @view_elsewhere(%x: !torch.vtensor<[2,4,32],f32>, %w: !torch.vtensor<[64,32],f32>) -> !torch.vtensor<[4,2,64],f32> {
  %int8 = torch.constant.int 8
  %int32 = torch.constant.int 32
  %int4 = torch.constant.int 4
  %int2 = torch.constant.int 2
  %int64 = torch.constant.int 64
  %int1 = torch.constant.int 1
  %int0 = torch.constant.int 0
  %s2 = torch.prim.ListConstruct %int8, %int32 : (!torch.int, !torch.int) -> !torch.list<int>
  %x2 = torch.aten.view %x, %s2 : !torch.vtensor<[2,4,32],f32>, !torch.list<int> -> !torch.vtensor<[8,32],f32>
  %perm = torch.prim.ListConstruct %int1, %int0 : (!torch.int, !torch.int) -> !torch.list<int>
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.permute': not part of a recognized module}}
  %wt = torch.aten.permute %w, %perm : !torch.vtensor<[64,32],f32>, !torch.list<int> -> !torch.vtensor<[32,64],f32>
  %y = torch.aten.mm %x2, %wt : !torch.vtensor<[8,32],f32>, !torch.vtensor<[32,64],f32> -> !torch.vtensor<[8,64],f32>
  %s3 = torch.prim.ListConstruct %int4, %int2, %int64 : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
  %out = torch.aten.view %y, %s3 : !torch.vtensor<[8,64],f32>, !torch.list<int> -> !torch.vtensor<[4,2,64],f32>
  return %out : !torch.vtensor<[4,2,64],f32>
}

// -----

// A norm after the MLP (Gemma 2's post_feedforward_layernorm): no TE module.
func.func @post_mlp_norm(%x: !torch.vtensor<[4,32],f32>, %g: !torch.vtensor<[32],f32>, %w1: !torch.vtensor<[64,32],f32>, %w2: !torch.vtensor<[32,64],f32>, %g2: !torch.vtensor<[32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %none = torch.constant.none
  %eps = torch.constant.float 1.000000e-06
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %n = torch.aten.rms_norm %x, %shape, %g, %eps : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.vtensor<[32],f32>, !torch.float -> !torch.vtensor<[4,32],f32>
  %h = torch.aten.linear %n, %w1, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[4,64],f32>
  %a = torch.aten.relu %h : !torch.vtensor<[4,64],f32> -> !torch.vtensor<[4,64],f32>
  %y = torch.aten.linear %a, %w2, %none : !torch.vtensor<[4,64],f32>, !torch.vtensor<[32,64],f32>, !torch.none -> !torch.vtensor<[4,32],f32>
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.rms_norm': a norm of a linear's output with no linear after it (a post-feedforward norm, as in Gemma 2/3 and OLMo 2): TransformerEngine's norms come before their linear; the module before it is raised, this norm is left}}
  %p = torch.aten.rms_norm %y, %shape, %g2, %eps : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.vtensor<[32],f32>, !torch.float -> !torch.vtensor<[4,32],f32>
  return %p : !torch.vtensor<[4,32],f32>
}

// -----

// Granite's residual_multiplier after the MLP.
func.func @scalar_after_mlp(%x: !torch.vtensor<[4,32],f32>, %g: !torch.vtensor<[32],f32>, %w1: !torch.vtensor<[64,32],f32>, %w2: !torch.vtensor<[32,64],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %none = torch.constant.none
  %eps = torch.constant.float 1.000000e-06
  %m = torch.constant.float 2.200000e-01
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %n = torch.aten.rms_norm %x, %shape, %g, %eps : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.vtensor<[32],f32>, !torch.float -> !torch.vtensor<[4,32],f32>
  %h = torch.aten.linear %n, %w1, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[4,64],f32>
  %a = torch.aten.relu %h : !torch.vtensor<[4,64],f32> -> !torch.vtensor<[4,64],f32>
  %y = torch.aten.linear %a, %w2, %none : !torch.vtensor<[4,64],f32>, !torch.vtensor<[32,64],f32>, !torch.none -> !torch.vtensor<[4,32],f32>
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.mul.Scalar': a scalar multiplier of a linear's output (e.g. Granite's residual_multiplier, a query scaling) is not part of a TransformerEngine module}}
  %s = torch.aten.mul.Scalar %y, %m : !torch.vtensor<[4,32],f32>, !torch.float -> !torch.vtensor<[4,32],f32>
  return %s : !torch.vtensor<[4,32],f32>
}

// -----

// An MLP with no norm before it (OLMo 2 normalizes after its MLP).
func.func @mlp_without_norm(%x: !torch.vtensor<[4,32],f32>, %w1: !torch.vtensor<[64,32],f32>, %w2: !torch.vtensor<[32,64],f32>) -> !torch.vtensor<[4,32],f32> {
  %none = torch.constant.none
  %h = torch.aten.linear %x, %w1, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[64,32],f32>, !torch.none -> !torch.vtensor<[4,64],f32>
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.silu': an activation between linears with no norm before them (e.g. OLMo 2, which normalizes after its MLP): TransformerEngine's LayerNormMLP starts with its norm; the linears are raised as te.linear, the activation is left}}
  %a = torch.aten.silu %h : !torch.vtensor<[4,64],f32> -> !torch.vtensor<[4,64],f32>
  %y = torch.aten.linear %a, %w2, %none : !torch.vtensor<[4,64],f32>, !torch.vtensor<[32,64],f32>, !torch.none -> !torch.vtensor<[4,32],f32>
  return %y : !torch.vtensor<[4,32],f32>
}

// -----

// GPT-2's fused QKV projection split in three: the LayerNormLinear is
// recognised (not a "gated FC1 near miss"); the split is what is left.
func.func @qkv_split(%x: !torch.vtensor<[4,32],f32>, %g: !torch.vtensor<[32],f32>, %b: !torch.vtensor<[32],f32>, %w: !torch.vtensor<[96,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %int-1 = torch.constant.int -1
  %none = torch.constant.none
  %false = torch.constant.bool false
  %eps = torch.constant.float 1.000000e-05
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %n = torch.aten.layer_norm %x, %shape, %g, %b, %eps, %false : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.vtensor<[32],f32>, !torch.vtensor<[32],f32>, !torch.float, !torch.bool -> !torch.vtensor<[4,32],f32>
  %qkv = torch.aten.linear %n, %w, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[96,32],f32>, !torch.none -> !torch.vtensor<[4,96],f32>
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.split.Tensor': splitting a projection's output (e.g. attention's fused QKV) is not part of a TransformerEngine module; the linear before it is raised on its own}}
  %parts = torch.aten.split.Tensor %qkv, %int32, %int-1 : !torch.vtensor<[4,96],f32>, !torch.int, !torch.int -> !torch.list<vtensor>
  %q, %k, %v = torch.prim.ListUnpack %parts : !torch.list<vtensor> -> !torch.vtensor<[4,32],f32>, !torch.vtensor<[4,32],f32>, !torch.vtensor<[4,32],f32>
  return %q : !torch.vtensor<[4,32],f32>
}

// -----

// A scaled projection (OPT's `q_proj(x) * scaling`) is a LayerNormLinear and
// the scaling left, not a near miss of an activation: the error is at the
// multiplication, not at the linear.
func.func @scaled_query(%x: !torch.vtensor<[4,32],f32>, %g: !torch.vtensor<[32],f32>, %w: !torch.vtensor<[32,32],f32>, %w2: !torch.vtensor<[32,32],f32>) -> !torch.vtensor<[4,32],f32> {
  %int32 = torch.constant.int 32
  %none = torch.constant.none
  %false = torch.constant.bool false
  %eps = torch.constant.float 1.000000e-05
  %s = torch.constant.float 1.250000e-01
  %shape = torch.prim.ListConstruct %int32 : (!torch.int) -> !torch.list<int>
  %n = torch.aten.layer_norm %x, %shape, %g, %none, %eps, %false : !torch.vtensor<[4,32],f32>, !torch.list<int>, !torch.vtensor<[32],f32>, !torch.none, !torch.float, !torch.bool -> !torch.vtensor<[4,32],f32>
  %q = torch.aten.linear %n, %w, %none : !torch.vtensor<[4,32],f32>, !torch.vtensor<[32,32],f32>, !torch.none -> !torch.vtensor<[4,32],f32>
  // expected-error @+1 {{te-import-torch: cannot import 'torch.aten.mul.Scalar': a scalar multiplier of a linear's output (e.g. Granite's residual_multiplier, a query scaling) is not part of a TransformerEngine module}}
  %qs = torch.aten.mul.Scalar %q, %s : !torch.vtensor<[4,32],f32>, !torch.float -> !torch.vtensor<[4,32],f32>
  %r = torch.aten.add.Tensor %qs, %x, %int32 : !torch.vtensor<[4,32],f32>, !torch.vtensor<[4,32],f32>, !torch.int -> !torch.vtensor<[4,32],f32>
  return %r : !torch.vtensor<[4,32],f32>
}
