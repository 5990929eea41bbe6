// Every committed forward-module export (torch-mlir `raw` form), imported
// and put under each recipe, gets its @f_fwd/@f_bwd with one backward op per
// module op, with and without checkpointing; te-opt verifies every saved
// type against the op's description. NVFP4 with its default RHT is rejected
// on the f32 exports (23 of them, both checkpoint modes), as the verifier
// requires.
// RUN: bash %S/check_backward.sh %te_opt_path %S/../Conversion/TorchToTE/Inputs %S/../Conversion/TorchToTE/expected-imports.txt | FileCheck %s
// CHECK-NOT: FAIL
// CHECK: check_backward: 242 configurations checked, 46 rejected (nvfp4 on f32)
