// Every committed export of a forward module imports, in every form
// torch-mlir produces (default `raw` with core-ATen decompositions,
// `raw_hl`, `torch` with its f64 variance and slices, `torch_legal_ops`,
// `torch_hl` with transpose.int + matmul and broadcast_to),
// to exactly the te op listed for its model in expected-imports.txt (SSA
// names normalized), with no torch operation or type left.
// RUN: bash %S/check_imports.sh %te_opt_path %S/Inputs %S/expected-imports.txt | FileCheck %s --check-prefix=ALL
// ALL-NOT: FAIL
// ALL: check_imports: 75 exports checked
//
// aot_autograd graphs are already split into forward and backward (with
// native_layer_norm's statistics as outputs); te-mlir generates the
// backward itself from the forward module, so they are reported.
// RUN: not te-opt %S/Inputs/ln_linear_aot.aot_fw.raw.mlir --te-import-torch=strict=true 2>&1 | FileCheck %s --check-prefix=AOT
// AOT: error: te-import-torch: cannot import 'torch.aten.native_layer_norm': not part of a recognized module
//
// The `torch` output's forms: f64 variance recomposed into LayerNorm,
// RMSNorm as x*x/sum/div, a split FC1 as two slices.
// RUN: te-opt %S/Inputs/ln_linear_zc_gamma.torch.mlir --te-import-torch | FileCheck %s --check-prefix=TORCH-LN
// TORCH-LN: te.layernorm_linear %{{.+}} norm layer_norm({{.*}}{zero_centered_gamma}
// RUN: te-opt %S/Inputs/rmsnorm_swiglu.torch.mlir --te-import-torch | FileCheck %s --check-prefix=TORCH-RMS
// TORCH-RMS: te.layernorm_mlp %{{.+}} norm rms_norm({{.*}} act swiglu
// RUN: te-opt %S/Inputs/ln_mlp_swiglu_chunk.torch.mlir --te-import-torch | FileCheck %s --check-prefix=TORCH-SLICE
// TORCH-SLICE-NOT: tensor.concat
// TORCH-SLICE: te.layernorm_mlp {{.*}} act swiglu fc2{{.*}}tensor<128x32xf32>
// RUN: te-opt %S/Inputs/ln_linear_bf16.raw.mlir --te-import-torch | FileCheck %s --check-prefix=BF16
// BF16: func.func @main(%{{.+}}: tensor<2x4x32xbf16>) -> tensor<2x4x64xbf16>
// BF16-NOT: arith.extf
// BF16: te.layernorm_linear {{.*}} : (tensor<2x4x32xbf16>, tensor<32xbf16>, tensor<32xbf16>, tensor<64x32xbf16>, tensor<64xbf16>) -> tensor<2x4x64xbf16>
