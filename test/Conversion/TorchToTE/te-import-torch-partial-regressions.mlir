// Partial-mode counterparts of the strict=true errors of
// te-import-torch-all.mlir (AOT) and te-import-torch-regressions.mlir: the
// pass succeeds, raises what it recognizes and leaves a remark per op left.
//
// aot_autograd's forward graph: native_layer_norm (with its statistics as
// outputs) is no TransformerEngine module; nothing is raised.
// RUN: te-opt %S/Inputs/ln_linear_aot.aot_fw.raw.mlir --te-import-torch 2>&1 >/dev/null | FileCheck %s --check-prefix=AOT
// AOT: remark: te-import-torch: left 'torch.aten.native_layer_norm' as is: not part of a recognized module
// AOT: remark: te-import-torch: left 'torch.aten.addmm' as is: not part of a recognized module
// RUN: te-opt %S/Inputs/ln_linear_aot.aot_fw.raw.mlir --te-import-torch 2>/dev/null | FileCheck %s --check-prefix=AOT-IR
// AOT-IR-NOT: te.
// AOT-IR-NOT: torch_c
// AOT-IR: torch.aten.native_layer_norm
//
// keepdim=false statistics: the decomposition is left, each op remarked.
// RUN: te-opt %S/Inputs/regress/ln_keepdim.mlir --te-import-torch 2>&1 >/dev/null | FileCheck %s --check-prefix=KEEPDIM
// RUN: te-opt %S/Inputs/regress/rms_keepdim.mlir --te-import-torch 2>&1 >/dev/null | FileCheck %s --check-prefix=KEEPDIM
// RUN: te-opt %S/Inputs/regress/sum_keepdim.mlir --te-import-torch 2>&1 >/dev/null | FileCheck %s --check-prefix=KEEPDIM
// KEEPDIM: remark: te-import-torch: left 'torch.aten.{{(var_mean.correction|pow.Tensor_Scalar|sum.dim_IntList)}}' as is: not part of a recognized module
// KEEPDIM-NOT: error
//
// A centered value with another use: left, valid IR.
// RUN: te-opt %S/Inputs/regress/vmsame_order.mlir --te-import-torch 2>&1 | FileCheck %s --check-prefix=OTHERUSE
// OTHERUSE: remark: te-import-torch: left 'torch.aten.var_mean.correction' as is
// OTHERUSE-NOT: does not dominate
// OTHERUSE-NOT: error
//
// Unranked results: the te op's type cannot replace them, so nothing is
// raised and the reason says so; a rank-0 linear is no Linear.
// RUN: te-opt %S/Inputs/regress/unranked.mlir --te-import-torch 2>&1 | FileCheck %s --check-prefix=UNRANKED
// UNRANKED: remark: te-import-torch: left 'torch.aten.rms_norm' as is: the te op's result type tensor<2x16xf32> differs from the torch result's !torch.vtensor<*,f32>
// UNRANKED-NOT: error
// UNRANKED-NOT: te.layernorm_linear
// RUN: te-opt %S/Inputs/regress/rank0.mlir --te-import-torch 2>&1 | FileCheck %s --check-prefix=RANK0
// RANK0: remark: te-import-torch: left 'torch.aten.linear' as is: not part of a recognized module
// RANK0-NOT: te.linear
