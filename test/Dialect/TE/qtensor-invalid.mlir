// RUN: te-opt %s --split-input-file --verify-diagnostics

// bf16 does not quantize anything.
// expected-error @+1 {{qtensor recipe #te.bf16 does not quantize; use a plain tensor type}}
func.func @bf16(%a: !te.qtensor<32x64xe4m3, #te.bf16, rowwise, hopper>) { return }

// -----

// NVFP4 stores E2M1 values.
// expected-error @+1 {{qtensor element format e4m3 is not produced by recipe #te.nvfp4<>}}
func.func @nvfp4_format(%a: !te.qtensor<32x64xe4m3, #te.nvfp4<>, rowwise, hopper>) { return }

// -----

// FP4 values belong to NVFP4 only.
// expected-error @+1 {{qtensor element format e2m1 is not produced by recipe #te.mxfp8}}
func.func @mxfp8_fp4(%a: !te.qtensor<32x64xe2m1, #te.mxfp8, rowwise, hopper>) { return }

// -----

// Float8 block scaling stores E4M3 only.
// expected-error @+1 {{qtensor element format e5m2 is not produced by recipe #te.fp8_block<>}}
func.func @block_e5m2(%a: !te.qtensor<128x128xe5m2, #te.fp8_block<>, rowwise, hopper>) { return }

// -----

// An E4M3-only delayed recipe cannot hold E5M2 gradients.
// expected-error @+1 {{qtensor element format e5m2 is not produced by recipe #te.fp8_delayed<format = e4m3>}}
func.func @delayed_format(%a: !te.qtensor<32x64xe5m2, #te.fp8_delayed<format = e4m3>, rowwise, hopper>) { return }

// -----

// 2-D blocks are a Float8 block-scaling (128x128) and NVFP4 (16x16) layout.
// expected-error @+1 {{qtensor flag block_2d applies only to recipes fp8-block (128x128 blocks) and nvfp4 (16x16), got mxfp8}}
func.func @block_2d(%a: !te.qtensor<64x64xe4m3, #te.mxfp8, rowwise, hopper, block_2d>) { return }

// -----

// Swizzling is a property of MXFP8/NVFP4 block scales.
// expected-error @+1 {{qtensor flag swizzled applies only to recipes mxfp8 and nvfp4 (block scales), got fp8-current}}
func.func @swizzled(%a: !te.qtensor<64x64xe4m3, #te.fp8_current<>, rowwise, hopper, swizzled>) { return }

// -----

// Row scaling is an NVFP4 variant.
// expected-error @+1 {{qtensor flag row_scaled applies only to recipe nvfp4, got fp8-delayed}}
func.func @row_scaled_recipe(%a: !te.qtensor<64x64xe4m3, #te.fp8_delayed<>, rowwise, hopper, row_scaled>) { return }

// -----

// Mismatched usage: per-row amaxes live with the rowwise copy.
// expected-error @+1 {{row-scaled nvfp4 qtensor needs rowwise usage (TE allocates per-row amaxes with the rowwise copy)}}
func.func @row_scaled_usage(%a: !te.qtensor<64x64xe2m1, #te.nvfp4<>, columnwise, blackwell, row_scaled>) { return }

// -----

// Unquantizable shape: MXFP8 needs 32-element blocks along the last dim.
// expected-error @+1 {{recipe mxfp8 needs the last dim divisible by 32, got 48}}
func.func @mxfp8_cols(%a: !te.qtensor<64x48xe4m3, #te.mxfp8, rowwise, hopper>) { return }

// -----

// Unquantizable shape: MXFP8 also blocks the flattened rows.
// expected-error @+1 {{recipe mxfp8 needs the flattened leading dims divisible by 32, got 24}}
func.func @mxfp8_rows(%a: !te.qtensor<3x8x64xe4m3, #te.mxfp8, columnwise, hopper>) { return }

// -----

// Unquantizable shape: NVFP4 needs multiples of 16.
// expected-error @+1 {{recipe nvfp4 needs the last dim divisible by 16, got 40}}
func.func @nvfp4_cols(%a: !te.qtensor<?x40xe2m1, #te.nvfp4<>, rowwise, blackwell>) { return }

// -----

// A quantized tensor has at least one dimension.
// expected-error @+1 {{qtensor must have rank >= 1}}
func.func @rank0(%a: !te.qtensor<e4m3, #te.fp8_delayed<>, rowwise, hopper>) { return }

// -----

// Unknown element formats are parse errors.
// expected-error @+1 {{expected element format e4m3, e5m2 or e2m1, got 'f8'}}
func.func @bad_format(%a: !te.qtensor<32x64xf8, #te.fp8_delayed<>, rowwise, hopper>) { return }

// -----

// Unknown usages are parse errors.
// expected-error @+1 {{expected usage (rowwise, columnwise or both), got 'transposed'}}
func.func @bad_usage(%a: !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, transposed, hopper>) { return }

// -----

// Unknown architectures are parse errors.
// expected-error @+1 {{expected architecture (hopper or blackwell), got 'ampere'}}
func.func @bad_arch(%a: !te.qtensor<32x64xe4m3, #te.fp8_delayed<>, rowwise, ampere>) { return }

// -----

// Unknown flags are parse errors.
// expected-error @+1 {{unknown qtensor flag 'packed'; expected block_2d, swizzled, row_scaled or rht}}
func.func @bad_flag(%a: !te.qtensor<32x64xe4m3, #te.mxfp8, rowwise, hopper, packed>) { return }

// -----

// Flags appear once.
// expected-error @+1 {{duplicate qtensor flag 'swizzled'}}
func.func @dup_flag(%a: !te.qtensor<32x64xe4m3, #te.mxfp8, rowwise, hopper, swizzled, swizzled>) { return }

// -----

// The recipe slot takes a recipe attribute.
// expected-error @+1 {{expected a recipe attribute, got 3 : i32}}
func.func @not_recipe(%a: !te.qtensor<32x64xe4m3, 3 : i32, rowwise, hopper>) { return }

// -----

// The Hadamard transform is NVFP4's.
// expected-error @+1 {{qtensor flag rht applies only to recipe nvfp4, got mxfp8}}
func.func @rht_recipe(%a: !te.qtensor<64x64xe4m3, #te.mxfp8, both, blackwell, rht>) { return }

// -----

// It transforms the columnwise copy, which a rowwise tensor lacks.
// expected-error @+1 {{qtensor flag rht transforms the columnwise copy; a rowwise-only qtensor has none}}
func.func @rht_rowwise(%a: !te.qtensor<64x64xe2m1, #te.nvfp4<>, rowwise, blackwell, rht>) { return }

// -----

// TE transforms 1-D scaled operands only.
// expected-error @+1 {{qtensor flags rht and block_2d exclude each other}}
func.func @rht_2d(%a: !te.qtensor<64x64xe2m1, #te.nvfp4<>, both, blackwell, block_2d, rht>) { return }

// -----

// Quantized tensors are bounded like plain ones (2^40 per dim).
// expected-error @+1 {{qtensor has dimension 9223372036854775807, above the largest supported (2^40 = 1099511627776)}}
func.func @qtensor_dim_too_large(%a: !te.qtensor<9223372036854775807x64xe4m3, #te.fp8_current<>, rowwise, hopper>) { return }
