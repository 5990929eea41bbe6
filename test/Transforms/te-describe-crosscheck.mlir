// Independent cross-check: utils/check_fake_tensors.py re-derives
// TransformerEngine's allocation rules (reference §4 / TE's C++ allocator)
// in Python and compares te-describe's quantized operands and saved
// tensors, inner tensor by inner tensor, over a grid of every quantized
// recipe x {aligned 2-D, unaligned rows, unaligned cols, 3-D, dynamic batch,
// dynamic 3-D} x {hopper, blackwell} x {training, inference} x
// {layernorm_linear, with norm output, layernorm_mlp gelu, swiglu with norm
// output, linear}; dynamic sizes are evaluated at several batch values.
//
// RUN: %python %te_src/utils/check_fake_tensors.py --te-opt %te_opt_path --workdir %t | FileCheck %s
// CHECK-NOT: MISMATCH
// CHECK: check_fake_tensors: 1440 cells checked, 0 op records mismatched
