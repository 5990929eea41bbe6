// Regressions from a review of te-import-torch (inputs in Inputs/regress).
//
// keepdim=false statistics broadcast along the wrong dimension: the
// decomposition is not a norm and must not be recomposed into one.
// RUN: not te-opt %S/Inputs/regress/ln_keepdim.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=KEEPDIM
// RUN: not te-opt %S/Inputs/regress/rms_keepdim.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=KEEPDIM
// RUN: not te-opt %S/Inputs/regress/sum_keepdim.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=KEEPDIM
// KEEPDIM: error: te-import-torch: cannot import 'torch.aten.{{(var_mean.correction|pow.Tensor_Scalar|sum.dim_IntList)}}': not part of a recognized module
// KEEPDIM-NOT: te.layernorm
//
// A bf16 rms_norm run in f32 with eps=None keeps f32's default eps.
// RUN: te-opt %S/Inputs/regress/rms_eps_none.mlir --te-import-torch | FileCheck %s --check-prefix=EPS
// EPS: te.layernorm_linear %{{.+}} norm rms_norm({{.*}}) {eps = 1.1920928955078125E-7 : f64} : (tensor<2x8xbf16>
//
// The f64 variance recomposition is valid whatever the order of its parts.
// RUN: te-opt %S/Inputs/regress/varmean_order.mlir --te-import-torch | FileCheck %s --check-prefix=ORDER
// ORDER: te.layernorm_linear %{{.+}} norm layer_norm
// A centered value with another use is not a LayerNorm: reported, with
// valid IR (no use before definition).
// RUN: not te-opt %S/Inputs/regress/vmsame_order.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=OTHERUSE
// OTHERUSE: error: te-import-torch: cannot import
// OTHERUSE-NOT: does not dominate
//
// Unranked or rank-0 tensors: errors, not crashes.
// RUN: not te-opt %S/Inputs/regress/unranked.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=UNRANKED
// UNRANKED: error: te-import-torch: unsupported type '!torch.vtensor<*,f32>'
// RUN: not te-opt %S/Inputs/regress/rank0.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=RANK0
// RANK0: error: te-import-torch: cannot import 'torch.aten.linear': not part of a recognized module
//
// Quick-GELU reads the gate half twice; gated QGeGLU from one split FC1.
// RUN: te-opt %S/Inputs/regress/qgeglu.mlir --te-import-torch | FileCheck %s --check-prefix=QGEGLU
// QGEGLU: te.layernorm_mlp {{.*}} act qgeglu fc2
