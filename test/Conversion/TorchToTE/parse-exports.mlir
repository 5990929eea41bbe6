// Every committed torch-mlir export (raw, torch, legal-ops and aot_autograd
// forms, static and dynamic shapes) parses into the torch import subset and
// round-trips through te-opt's printer.
// RUN: for f in %S/Inputs/*.mlir; do te-opt "$f" --verify-roundtrip > /dev/null || exit 1; done
//
// Types, constants, lists, literals and default-syntax aten ops print as
// torch-mlir prints them.
// RUN: te-opt %S/Inputs/ln_mlp_gelu_tanh.raw_hl.mlir | FileCheck %s --check-prefix=HL
// HL: func.func @main(%[[X:.+]]: !torch.vtensor<[2,4,32],f32>) -> !torch.vtensor<[2,4,32],f32>
// HL: %[[K:.+]] = torch.constant.int 32
// HL: %[[SHAPE:.+]] = torch.prim.ListConstruct %[[K]] : (!torch.int) -> !torch.list<int>
// HL: %[[G:.+]] = torch.vtensor.literal(dense_resource<torch_tensor_32_torch.float32> : tensor<32xf32>) : !torch.vtensor<[32],f32>
// HL: %[[EPS:.+]] = torch.constant.float 1.000000e-05
// HL: %[[FALSE:.+]] = torch.constant.bool false
// HL: torch.aten.layer_norm %[[X]], %[[SHAPE]], %[[G]], %{{.+}}, %[[EPS]], %[[FALSE]] : !torch.vtensor<[2,4,32],f32>, !torch.list<int>, !torch.vtensor<[32],f32>, !torch.vtensor<[32],f32>, !torch.float, !torch.bool -> !torch.vtensor<[2,4,32],f32>
// HL: torch.constant.str "tanh"
// HL: torch.aten.gelu
//
// Symbolic shapes, multi-result ops, list unpacking and devices.
// RUN: te-opt %S/Inputs/ln_mlp_gelu_dynbatch.raw.mlir --mlir-print-local-scope | FileCheck %s --check-prefix=DYN
// DYN: func.func @main(%{{.+}}: !torch.vtensor<[?,4,32],f32>)
// DYN: torch.symbolic_int "s{{[0-9]+}}" {max_val = {{[0-9]+}} : i64, min_val = 0 : i64} : !torch.int
// DYN: torch.bind_symbolic_shape %{{.+}}, [%{{.+}}], affine_map<()[s0] -> (s0, 4, 32)> : !torch.vtensor<[?,4,32],f32>
// DYN: %{{.+}}:2 = torch.aten.var_mean.correction
// RUN: te-opt %S/Inputs/ln_mlp_swiglu_chunk.raw.mlir | FileCheck %s --check-prefix=UNPACK
// UNPACK: torch.aten.split_with_sizes {{.*}} -> !torch.list<vtensor>
// UNPACK: %{{.+}}:2 = torch.prim.ListUnpack %{{.+}} : !torch.list<vtensor> -> !torch.vtensor<[2,4,64],f32>, !torch.vtensor<[2,4,64],f32>
// RUN: te-opt %S/Inputs/llama_mlp.raw.mlir | FileCheck %s --check-prefix=DEVICE
// DEVICE: torch.constant.device "cpu"
// DEVICE: torch.aten._assert_tensor_metadata {{.*}} : !torch.vtensor<[2,4,32],f32>, !torch.none, !torch.none, !torch.int, !torch.Device, !torch.int{{$}}
// RUN: te-opt %S/Inputs/ln_mlp_silu.raw_hl.mlir | FileCheck %s --check-prefix=BF
// BF: torch.aten.silu
// RUN: te-opt %S/Inputs/rmsnorm_swiglu_aot.aot_bw.raw.mlir | FileCheck %s --check-prefix=OPERATOR
// OPERATOR: torch.operator "torch.aten.silu_backward"(%{{.+}}, %{{.+}}) : (!torch.vtensor<[2,4,64],f32>, !torch.vtensor<[2,4,64],f32>) -> !torch.vtensor<[2,4,64],f32>
