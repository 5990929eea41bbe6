// Real Hugging Face blocks (issue #19; docs/models.md): test/Integration/hf/hf_models.py
// exports the norm + MLP and norm + linear sub-blocks of every architecture
// of test/Integration/hf/hf_blocks.py (f32 and bf16; raw, torch and raw_hl forms; the
// dynamic-batch LLaMA and GPT-2 MLPs) and imports each with te-import-torch:
// status `full` when --te-import-torch=strict=true imports it, `partial` when
// the default import raises some modules and leaves other ops (Gemma 2/3's
// post-feedforward norm, Granite's residual_multiplier, OLMo 2's MLP without
// a norm before it), `none` when nothing is raised. Full blocks: te-compile
// --train, te-run --step main, the forward output and every gradient against
// PyTorch autograd (f32 within 1e-5 + 1e-5|e| and TE's tolerances, bf16
// within TE's), plus the --checkpoint backward bit-identical to the stored
// one. Partial blocks: te-compile --partition --train, each library entry
// (te-run --step NAME) against autograd of its PyTorch region under the same
// tolerances (MLP regions under --checkpoint too), the residual module parsed
// by te-opt and checked by utils/check_residual.py. Negatives: strict=true
// must refuse them, and the default import must raise no te.layernorm_mlp
// (norm near misses: no te.layernorm_linear either; activation near misses:
// the activation's torch ops stay). The whole decoder layers of
// test/Conversion/TorchToTE/Inputs/layers (GPT-2, LLaMA, Qwen3; f32, bf16) go through
// te-compile --partition and check_residual. --check fails on a raised block
// (full or partial) that misses its numerics, a negative wrongly raised, a
// layer whose residual does not verify, or an export that failed.
// It also regenerates the checked-in golden cases (Inputs/hf_*) and requires
// their data to be byte-identical to what is committed.
//
// Needs a Python with torch, torch_mlir and transformers (TE_TORCH_PYTHON or
// python3 on PATH): without one this test is UNSUPPORTED.
// REQUIRES: hf-wheels
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: %hf_python %te_src/test/Integration/hf/hf_models.py --bin %te_bin --work %t/work --jobs 2 --check --json %t/hf.json --write-docs %t/models.md > %t/log 2>&1
// RUN: FileCheck %s --input-file %t/log
// RUN: %hf_python %te_src/test/Integration/hf/hf_models.py --bin %te_bin --verify-cases %te_src/test/Integration/Inputs > %t/verify.log 2>&1
// RUN: FileCheck %s --check-prefix=GOLD --input-file %t/verify.log
//
// CHECK: hf_models: torch
// CHECK: gemma2_mlp_f32 raw raised=partial: te.layernorm_mlp rms_norm geglu
// CHECK: granite_mlp_bf16 raw raised=partial: te.layernorm_mlp rms_norm swiglu
// CHECK: layer qwen3_layer.f32: partial; te ops layernorm_linear, linear, linear, linear, layernorm_mlp; {{.+}} residual parses, check_residual ok
// CHECK: layer qwen3_layer.bf16: partial; {{.+}} residual parses, check_residual ok
// CHECK: f32: raised full {{[0-9]+}}, partial {{[0-9]+}}, none 0 of 138
// CHECK: bf16: raised full {{[0-9]+}}, partial {{[0-9]+}}, none 0 of 138
// CHECK-NOT: FAIL
// CHECK: negatives left alone: [[N:[0-9]+]]/[[N]]
// GOLD-NOT: FAIL
// GOLD: verify-cases: [[M:[0-9]+]]/[[M]] .npy files byte-identical
