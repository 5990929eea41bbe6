// End to end on the CPU backend: every case of Inputs/ (a real torch-mlir
// export with PyTorch goldens, made by test/Integration/golden/make_goldens.py) is compiled
// with te-compile --train, run with te-run --step (forward, then backward on
// the saved bundle), and compared with PyTorch under TransformerEngine's
// tolerances; each MLP is compiled again with --checkpoint and its
// recomputed backward must be bit-identical to the stored-activation one;
// dynamic-shape cases run one library at two sizes; f32 gradients are also
// checked against central finite differences of the compiled forward.
// Quantized cases (config "recipe") compile with --recipe and compare with
// the PyTorch emulation of TE's per-tensor FP8, Float8 block scaling, MXFP8
// and NVFP4 (Blackwell layouts, --arch sm_100a; NVFP4 with its Hadamard
// transform and stochastic rounding) (quantize-dequantize at TE's points),
// elementwise under TE's tolerances and within 1e-2 in norm, including the
// delayed-scaling state after one step.
// RUN: bash %S/run_goldens.sh %te_bin %python %te_src %t | FileCheck %s
// CHECK-NOT: FAIL
// CHECK-DAG: OK ln_linear_f32 fwd: 1 tensors
// CHECK-DAG: OK ln_linear_f32 bwd: 5 tensors
// CHECK-DAG: OK ln_linear_nobias_f32 bwd: 4 tensors
// The norm output returned too (TE's return_layernorm_output), with its own
// incoming gradient.
// CHECK-DAG: OK ln_linear_retnorm_f32 fwd: 2 tensors
// CHECK-DAG: OK ln_linear_retnorm_f32 bwd: 5 tensors
// CHECK-DAG: OK ln_linear_retnorm_f32 finite differences: 5 arguments
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
// CHECK-DAG: OK ln_mlp_gelu_dyn_f32@size5 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_gelu_dyn_f32@size16 bwd: 7 tensors
// CHECK-DAG: OK ln_linear_dyn3d_f32@size1 bwd:
// CHECK-DAG: OK ln_linear_dyn3d_f32@size3 bwd:
// CHECK-DAG: OK ln_mlp_gelu_bf16_fp8_current fwd: 1 tensors
// CHECK-DAG: OK ln_mlp_gelu_bf16_fp8_current bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_gelu_bf16_fp8_current checkpoint: backward bit-identical with recompute (7 gradients)
// CHECK-DAG: OK ln_mlp_gelu_bf16_fp8_delayed fwd: 3 tensors
// CHECK-DAG: OK ln_mlp_gelu_bf16_fp8_delayed bwd: 9 tensors
// CHECK-DAG: OK ln_mlp_gelu_bf16_fp8_delayed checkpoint: backward bit-identical with recompute (9 gradients)
// CHECK-DAG: OK ln_linear_f32_fp8_current fwd: 1 tensors
// CHECK-DAG: OK ln_linear_f32_fp8_current bwd: 5 tensors
// CHECK-DAG: OK rms_swiglu_f32_fp8_current bwd: 4 tensors
// CHECK-DAG: OK rms_swiglu_f32_fp8_current checkpoint: backward bit-identical
// The gated activation's fused activation-cast (te.act_quantize /
// te.dact_quantize under delayed scaling), with the state after one step.
// CHECK-DAG: OK rms_swiglu_f32_fp8_delayed fwd: 3 tensors
// CHECK-DAG: OK rms_swiglu_f32_fp8_delayed bwd: 6 tensors
// CHECK-DAG: OK rms_swiglu_f32_fp8_delayed checkpoint: backward bit-identical
// CHECK-DAG: OK ln_mlp_gelu_h128_bf16 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_gelu_h128_bf16 checkpoint: backward bit-identical
// CHECK-DAG: OK ln_linear_h128_f32 bwd: 5 tensors
// CHECK-DAG: OK ln_linear_h128_f32 finite differences: 5 arguments
// CHECK-DAG: OK ln_mlp_gelu_bf16_fp8_block fwd: 1 tensors
// CHECK-DAG: OK ln_mlp_gelu_bf16_fp8_block bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_gelu_bf16_fp8_block checkpoint: backward bit-identical with recompute (7 gradients)
// CHECK-DAG: OK ln_linear_f32_fp8_block fwd: 1 tensors
// CHECK-DAG: OK ln_linear_f32_fp8_block bwd: 5 tensors
// CHECK-DAG: OK ln_mlp_gelu_bf16_mxfp8 fwd: 1 tensors
// CHECK-DAG: OK ln_mlp_gelu_bf16_mxfp8 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_gelu_bf16_mxfp8 checkpoint: backward bit-identical with recompute (7 gradients)
// CHECK-DAG: OK ln_linear_f32_mxfp8 fwd: 1 tensors
// CHECK-DAG: OK ln_linear_f32_mxfp8 bwd: 5 tensors
// Magnitudes spread over 32-column blocks: 1x128 blocks would miss the
// forward by 74% and the input gradient by 54% in norm.
// CHECK-DAG: OK ln_linear_f32_mxfp8_spread fwd: 1 tensors within TE tolerances (atol 0.0675, rtol 0.125) and 1e-2 in norm of the emulation
// CHECK-DAG: OK ln_linear_f32_mxfp8_spread bwd: 5 tensors within TE tolerances (atol 0.0675, rtol 0.125) and 1e-2 in norm of the emulation
// CHECK-DAG: OK ln_mlp_gelu_bf16_nvfp4 fwd: 1 tensors within TE tolerances (atol 0.125, rtol 0.25) and 1e-2 in norm of the emulation
// CHECK-DAG: OK ln_mlp_gelu_bf16_nvfp4 bwd: 7 tensors within TE tolerances (atol 0.2, rtol 0.25) and 1e-2 in norm of the emulation
// CHECK-DAG: OK ln_mlp_gelu_bf16_nvfp4 checkpoint: backward bit-identical with recompute (7 gradients)
// CHECK-DAG: OK ln_linear_f32_nvfp4 fwd: 1 tensors
// CHECK-DAG: OK ln_linear_f32_nvfp4 bwd: 5 tensors
// Every other activation te-import-torch raises: gelu (erf), quick GELU,
// squared ReLU, SiLU, and the gated GeGLU, GLU, ReGLU, SReGLU, QGeGLU.
// CHECK-DAG: OK ln_mlp_gelu_erf_f32 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_gelu_erf_f32 finite differences: 7 arguments
// CHECK-DAG: OK ln_mlp_qgelu_f32 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_qgelu_f32 finite differences: 7 arguments
// CHECK-DAG: OK ln_mlp_srelu_f32 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_srelu_f32 checkpoint: backward bit-identical
// CHECK-DAG: OK ln_mlp_silu_f32 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_silu_f32 finite differences: 7 arguments
// CHECK-DAG: OK ln_mlp_geglu_f32 fwd: 1 tensors
// CHECK-DAG: OK ln_mlp_geglu_f32 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_geglu_f32 checkpoint: backward bit-identical
// CHECK-DAG: OK ln_mlp_geglu_f32 finite differences: 7 arguments
// CHECK-DAG: OK ln_mlp_glu_f32 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_glu_f32 finite differences: 7 arguments
// CHECK-DAG: OK ln_mlp_reglu_f32 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_reglu_f32 checkpoint: backward bit-identical
// CHECK-DAG: OK ln_mlp_sreglu_f32 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_sreglu_f32 finite differences: 7 arguments
// CHECK-DAG: OK ln_mlp_qgeglu_f32 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_qgeglu_f32 finite differences: 7 arguments
// The gated erf GELU (geglu_erf: one TEActivations.def line, docs/ARCHITECTURE.md).
// CHECK-DAG: OK ln_mlp_geglu_erf_f32 fwd: 1 tensors
// CHECK-DAG: OK ln_mlp_geglu_erf_f32 bwd: 7 tensors
// CHECK-DAG: OK ln_mlp_geglu_erf_f32 checkpoint: backward bit-identical
// CHECK-DAG: OK ln_mlp_geglu_erf_f32 finite differences: 7 arguments
// CHECK-DAG: OK ln_mlp_gelu_f32 finite differences: 7 arguments
// CHECK-DAG: OK rms_swiglu_f32 finite differences: 4 arguments
// CHECK-DAG: OK rms_linear_zc_f32 finite differences: 4 arguments
// CHECK-DAG: OK ln_linear_f32 finite differences: 5 arguments
