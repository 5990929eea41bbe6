// End to end on the CPU backend: every case of Inputs/ (a real torch-mlir
// export with PyTorch goldens, made by tools/make_goldens.py) is compiled
// with te-compile --train, run with te-run --step (forward, then backward on
// the saved bundle), and compared with PyTorch under TransformerEngine's
// tolerances; each MLP is compiled again with --checkpoint and its
// recomputed backward must be bit-identical to the stored-activation one.
// RUN: bash %S/run_goldens.sh %te_bin %python %te_src %t | FileCheck %s
// CHECK-NOT: FAIL
// CHECK-DAG: OK ln_linear_f32 fwd: 1 tensors
// CHECK-DAG: OK ln_linear_f32 bwd: 5 tensors
// CHECK-DAG: OK ln_linear_nobias_f32 bwd: 4 tensors
// CHECK-DAG: OK rms_linear_zc_f32 bwd: 4 tensors
// CHECK-DAG: OK ln_mlp_gelu_f32 fwd: 1 tensors
// CHECK-DAG: OK ln_mlp_gelu_f32 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_gelu_f32 checkpoint: backward bit-identical with recompute (7 gradients)
// CHECK-DAG: OK ln_mlp_gelu_bf16 fwd: 1 tensors
// CHECK-DAG: OK ln_mlp_gelu_bf16 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_gelu_bf16 checkpoint: backward bit-identical
// CHECK-DAG: OK ln_mlp_gelu_3d_f32 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_relu_f32 bwd: 7 tensors
// CHECK-DAG: OK rms_swiglu_f32 bwd: 4 tensors
// CHECK-DAG: OK rms_swiglu_f32 checkpoint: backward bit-identical
