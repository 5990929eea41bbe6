// NVFP4's stochastic rounding draws from the runtime context's seed
// (te_rt_context_set_seed, te-run --rng-seed; default 0): the same seed
// reproduces a step bit for bit, another seed changes the gradients that
// pass through a stochastically rounded dy and leaves the forward (rounded
// to nearest) alone. A malformed seed is an error.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: te-compile %S/Inputs/ln_linear_f32_nvfp4/model.mlir --train --recipe '#te.nvfp4<rht = false>' --arch sm_100a -o %t/lib.so
// RUN: te-run %t/lib.so --step main --inputs %S/Inputs/ln_linear_f32_nvfp4/args --grads %S/Inputs/ln_linear_f32_nvfp4/grads_in --outputs %t/default
// RUN: te-run %t/lib.so --step main --inputs %S/Inputs/ln_linear_f32_nvfp4/args --grads %S/Inputs/ln_linear_f32_nvfp4/grads_in --outputs %t/zero --rng-seed 0
// RUN: te-run %t/lib.so --step main --inputs %S/Inputs/ln_linear_f32_nvfp4/args --grads %S/Inputs/ln_linear_f32_nvfp4/grads_in --outputs %t/other --rng-seed=12345
// RUN: cmp %t/default/bwd/grad_arg0.npy %t/zero/bwd/grad_arg0.npy
// RUN: cmp %t/default/bwd/grad_arg3.npy %t/zero/bwd/grad_arg3.npy
// RUN: cmp %t/default/fwd/result0.npy %t/other/fwd/result0.npy
// dgrad (input gradient) and wgrad (weight gradient) read the rounded dy.
// RUN: not cmp -s %t/default/bwd/grad_arg0.npy %t/other/bwd/grad_arg0.npy
// RUN: not cmp -s %t/default/bwd/grad_arg3.npy %t/other/bwd/grad_arg3.npy
// The bias gradient sums the unrounded dy.
// RUN: cmp %t/default/bwd/grad_arg4.npy %t/other/bwd/grad_arg4.npy
// RUN: not te-run %t/lib.so --list --rng-seed x 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: --rng-seed expects a non-negative integer, got 'x'
