// Every committed export of a forward module imports, in every form
// torch-mlir produces (default `raw` with core-ATen decompositions,
// `raw_hl`, `torch` with its f64 variance and slices, `torch_legal_ops`):
// the result verifies and no torch operation or type is left.
// RUN: for f in %S/Inputs/*.raw.mlir %S/Inputs/*.raw_hl.mlir %S/Inputs/*.torch.mlir %S/Inputs/*.torch_legal_ops.mlir; do case "$f" in *_aot.*) continue;; esac; te-opt "$f" --te-import-torch > %t.out || exit 1; if grep -qE '!torch\.|torch\.(aten|prim|prims|constant|vtensor)' %t.out; then echo "torch left in $f"; exit 1; fi; grep -qE 'te\.(layernorm_linear|layernorm_mlp|linear) ' %t.out || exit 1; done
//
// aot_autograd graphs are already split into forward and backward (with
// native_layer_norm's statistics as outputs); te-mlir generates the
// backward itself from the forward module, so they are reported.
// RUN: not te-opt %S/Inputs/ln_linear_aot.aot_fw.raw.mlir --te-import-torch 2>&1 | FileCheck %s --check-prefix=AOT
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
