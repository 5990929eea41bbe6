// te-compile and te-run as users drive them: --emit forms, the library's
// signature listing, inputs checked against it, timing, and clear errors for
// bad options, files and shapes.
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: te-compile %s --train -o %t/lib.so
// RUN: te-run %t/lib.so --list | FileCheck %s --check-prefix=LIST
// LIST:      f
// LIST-NEXT:   arg0: float32 ["d0",64]
// LIST-NEXT:   arg1: float32 [32,64]
// LIST-NEXT:   arg2: float32 ["d0",32]
// LIST-NEXT:   -> result0: float32 ["d0",32]
// LIST:      f_bwd
// LIST-NEXT:   arg0 (te.saved=linear_0.input): float32 ["d0",64]
// LIST-NEXT:   arg1 (te.saved=linear_0.weight): float32 [32,64]
// LIST-NEXT:   arg2 (te.grad_of=output:0): float32 ["d0",32]
// LIST-NEXT:   -> result0: float32 ["d0",64] (te.grad_of=input:0)
// LIST-NEXT:   -> result1: float32 [32,64] (te.grad_of=input:1)
// LIST-NEXT:   -> result2: float32 ["d0",32] (te.grad_of=input:2)
// The header describes the same entries.
// RUN: FileCheck %s --check-prefix=HEADER < %t/lib.h
// HEADER: #include "te/Runtime/TERuntime.h"
// HEADER: const char *te_module_info(void);
// HEADER: * dims: d0 = args[0].shape[0];
// HEADER: #define TE_F_NUM_ARGS 3
// HEADER: int32_t te_entry_f(te_rt_context *ctx, void *const *args, void *const *results,
// HEADER: [0] float32 [d0, 64]  te.alias=input:0  te.saved=linear_0.input
// HEADER: int32_t te_entry_f_bwd(
//
// The --emit forms.
// RUN: te-compile %s --emit=mlir -o - | FileCheck %s --check-prefix=MLIR
// MLIR: llvm.func @te_entry_f(
// MLIR: llvm.call @te_rt_gemm_fprop
// RUN: te-compile %s --emit=llvm -o - | FileCheck %s --check-prefix=LLVM
// LLVM: define{{.*}} i32 @te_entry_f(ptr
// LLVM: call i32 @te_rt_gemm_fprop(
// RUN: te-compile %s --emit=obj -o %t/f.o && nm %t/f.o | FileCheck %s --check-prefix=OBJ
// OBJ-DAG: T te_entry_f
// OBJ-DAG: T te_module_info
// OBJ-DAG: U te_rt_gemm_fprop
//
// Running: random inputs at the default size (8 rows), .npy results, timing.
// RUN: te-run %t/lib.so --entry f --random 1 --outputs %t/out --bench 3 | FileCheck %s --check-prefix=EXEC
// RUN: %python -c "import numpy as n; a = n.load('%t/out/result0.npy'); print(a.shape, a.dtype)" | FileCheck %s --check-prefix=SHAPE
// EXEC-LABEL: te-run: f: 1 results on cpu
// EXEC: bench f: 3 calls, median {{[0-9.]+}} us
// SHAPE: (8, 32) float32
// One compiled library runs any number of rows.
// RUN: %python -c "import numpy as n; r = n.random.RandomState(0); n.save('%t/x5.npy', r.randn(5, 64).astype('f4')); n.save('%t/r5.npy', r.randn(5, 32).astype('f4')); n.save('%t/r4.npy', r.randn(4, 32).astype('f4')); n.save('%t/w.npy', r.randn(32, 64).astype('f4')); n.save('%t/w_bad.npy', r.randn(32, 48).astype('f4')); n.save('%t/x_f64.npy', r.randn(5, 64)); open('%t/junk.npy', 'w').write('not numpy')"
// RUN: te-run %t/lib.so --entry f --input arg0=%t/x5.npy --input 1=%t/w.npy --input arg2=%t/r5.npy --outputs %t/o5
// RUN: %python -c "import numpy as n; x = n.load('%t/x5.npy'); w = n.load('%t/w.npy'); r = n.load('%t/r5.npy'); y = n.load('%t/o5/result0.npy'); print(y.shape, bool(n.allclose(y, x @ w.T + r, atol=1e-4)))" | FileCheck %s --check-prefix=FIVE
// FIVE: (5, 32) True
//
// Errors: inputs against the signature.
// RUN: not te-run %t/lib.so --entry f --input arg0=%t/x5.npy --input 1=%t/w.npy --input arg2=%t/r4.npy 2>&1 | FileCheck %s --check-prefix=DIMS
// DIMS: te-run: error: f: arg2 dim 0 is 4 but d0 = 5 from an earlier argument (these dims must be equal)
// RUN: not te-run %t/lib.so --entry f --input arg0=%t/x5.npy --input 1=%t/w_bad.npy --random 2 2>&1 | FileCheck %s --check-prefix=STATIC
// STATIC: te-run: error: f: arg1 dim 1 must be 64, got [32x48]
// RUN: not te-run %t/lib.so --entry f --input arg0=%t/x_f64.npy --random 2 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: te-run: error: '{{.*}}x_f64.npy': unsupported dtype '<f8' (expected '<f4' float32, '<f2' float16, '<u2' bf16 bits or '|u1' quantized-tensor bytes)
// RUN: not te-run %t/lib.so --entry f --input arg0=%t/junk.npy --random 2 2>&1 | FileCheck %s --check-prefix=JUNK
// JUNK: te-run: error: '{{.*}}junk.npy' is not a .npy file (bad magic)
// RUN: not te-run %t/lib.so --entry f --input arg0=%t/missing.npy 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: te-run: error: cannot open '{{.*}}missing.npy'
// RUN: not te-run %t/lib.so --entry f --input arg7=%t/x5.npy 2>&1 | FileCheck %s --check-prefix=NOARG
// NOARG: te-run: error: --input arg7: f has no such argument (3 arguments; see --list)
// RUN: not te-run %t/lib.so --entry f 2>&1 | FileCheck %s --check-prefix=NOINPUT
// NOINPUT: te-run: error: f: no value for arg0 (use --input, --inputs or --random)
// RUN: not te-run %t/lib.so --random 1 2>&1 | FileCheck %s --check-prefix=CHOOSE
// CHOOSE: te-run: error: the library has 3 entries; choose one with --entry (see --list)
// RUN: not te-run %t/lib.so --entry g 2>&1 | FileCheck %s --check-prefix=NOENTRY
// NOENTRY: te-run: error: no entry 'g' (see --list)
// RUN: not te-run %t/lib.so --entry f --random 1 --backend tpu 2>&1 | FileCheck %s --check-prefix=BACKEND
// BACKEND: te-run: error: --backend must be cpu, cuda or auto, got 'tpu'
// RUN: not te-run %t/nothing.so --list 2>&1 | FileCheck %s --check-prefix=NOLIB
// NOLIB: te-run: error: cannot load '{{.*}}nothing.so': no such file
// RUN: not te-run %t/f.o --list 2>&1 | FileCheck %s --check-prefix=NOTLIB
// NOTLIB: te-run: error: cannot load '{{.*}}f.o':
// CUDA graphs (--graph) need the cuda backend and --bench.
// RUN: not te-run %t/lib.so --entry f --random 1 --backend cpu --bench 2 --graph 2>&1 | FileCheck %s --check-prefix=GRAPHCPU
// GRAPHCPU: te-run: error: --graph: CUDA graphs need the cuda backend (this context runs on cpu; use --backend cuda)
// RUN: not te-run %t/lib.so --step f --random 1 --backend cpu --graph 2>&1 | FileCheck %s --check-prefix=GRAPHBENCH
// GRAPHBENCH: te-run: error: --graph times graph launches: give --bench N (N > 0) too
// RUN: te-run %t/lib.so --help | FileCheck %s --check-prefix=HELP
// HELP: --graph {{.*}}with --bench, on the cuda backend
//
// Errors: te-compile options and inputs.
// RUN: not te-compile %s --emit=exe -o %t/x 2>&1 | FileCheck %s --check-prefix=EMIT
// EMIT: te-compile: error: --emit must be mlir, llvm, obj or so, got 'exe'
// RUN: not te-compile %s --target=tpu -o %t/x 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: te-compile: error: --target must be cpu, cuda or auto, got 'tpu'
// RUN: not te-compile %s --arch=sm_80 -o %t/x 2>&1 | FileCheck %s --check-prefix=ARCH
// ARCH: te-compile: error: --arch must be sm_90a or sm_100a, got 'sm_80'
// RUN: not te-compile %s --checkpoint -o %t/x 2>&1 | FileCheck %s --check-prefix=CKPT
// CKPT: te-compile: error: --checkpoint needs --train
// RUN: not te-compile %s --recipe=fp9 -o %t/x 2>&1 | FileCheck %s --check-prefix=RECIPE
// RECIPE: unknown recipe 'fp9'
// RUN: not te-compile %s --recipe=nvfp4 -o %t/x 2>&1 | FileCheck %s --check-prefix=QUANT
// QUANT: error: 'te.linear' op recipe nvfp4 with rht = true needs bf16 activations, got f32
// QUANT: te-compile: error: compilation of {{.*}} failed (see above)
// RUN: not te-compile %s --recipe=mxfp8 -o %t/x 2>&1 | FileCheck %s --check-prefix=MXARCH
// MXARCH: tools.mlir:[[@LINE+6]]:8: error: te-decompose: mxfp8 is lowered for Blackwell (its GEMMs do not run on Hopper), not for the hopper layout asked for (te-compile --arch=sm_100a, te-opt arch=blackwell)
// RUN: te-compile %s --recipe=mxfp8 --arch=sm_100a -o %t/mx.so && %python -c "import numpy as n; n.save('%t/x8.npy', n.zeros((8, 64), 'f4'))" && not te-run %t/mx.so --entry f --input arg0=%t/x8.npy --random 1 2>&1 | FileCheck %s --check-prefix=MXDYN
// MXDYN: te-run: error: f failed: f: recipe mxfp8 needs d0 % 32 == 0, got 8
// RUN: not te-compile %t/absent.mlir -o %t/x 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: te-compile: error: cannot open input file '{{.*}}absent.mlir'
func.func @f(%x: tensor<?x64xf32>, %w: tensor<32x64xf32>, %r: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = te.linear %x weight(%w) : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  %s = arith.addf %y, %r : tensor<?x32xf32>
  return %s : tensor<?x32xf32>
}
//
// te-opt --te-pipeline runs what te-compile runs, to the LLVM dialect.
// RUN: te-opt %s --te-pipeline="train=true" | FileCheck %s --check-prefix=PIPE
// PIPE-DAG: llvm.func @te_entry_f(
// PIPE-DAG: llvm.func @te_entry_f_fwd(
// PIPE-DAG: llvm.func @te_entry_f_bwd(
// PIPE-DAG: llvm.func @te_module_info()
// PIPE-NOT: func.func
