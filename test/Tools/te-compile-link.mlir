// te-compile links its library in-process with LLD: no C compiler or linker
// on PATH. The library needs libte_runtime.so by its SONAME, with a runpath
// to the runtime's directory, loads and computes; a link that fails says why
// in te-compile's error and leaves nothing at the output path.
//
// RUN: rm -rf %t && mkdir -p %t/bad
// RUN: env PATH=/nonexistent te-compile %s --train -o %t/lib.so
// RUN: llvm-readelf -d %t/lib.so | FileCheck %s --check-prefix=DYN -DLIBS=%te_libs --implicit-check-not=SONAME
// DYN-DAG: (NEEDED) Shared library: [libte_runtime.so]
// DYN-DAG: (RUNPATH) Library runpath: [[[LIBS]]]
//
// RUN: %python -c "import numpy as n; r = n.random.RandomState(0); n.save('%t/x.npy', r.randn(5, 64).astype('f4')); n.save('%t/w.npy', r.randn(32, 64).astype('f4')); n.save('%t/r.npy', r.randn(5, 32).astype('f4'))"
// RUN: env PATH=/nonexistent te-run %t/lib.so --entry f --input arg0=%t/x.npy --input arg1=%t/w.npy --input arg2=%t/r.npy --outputs %t/out
// RUN: %python -c "import numpy as n; x, w, r = (n.load('%t/' + a + '.npy') for a in 'xwr'); y = n.load('%t/out/result0.npy'); print('match', bool(n.allclose(y, x @ w.T + r, atol=1e-4)))" | FileCheck %s --check-prefix=NUM
// NUM: match True
//
// A runtime that is no library: LLD's error, no library, no stale one, no
// temporary.
// RUN: echo "not a library" > %t/bad/libte_runtime.so && echo stale > %t/bad/out.so
// RUN: not env PATH=/nonexistent te-compile %s --runtime-dir=%t/bad -o %t/bad/out.so 2>&1 | FileCheck %s --check-prefix=BADLINK -DDIR=%t/bad
// BADLINK: te-compile: error: linking [[DIR]]/out.so failed: [[DIR]]/libte_runtime.so:1: unknown directive: not; >>> not a library{{$}}
// RUN: ls %t/bad | FileCheck %s --check-prefix=LEFT --implicit-check-not=out
// LEFT: libte_runtime.so

func.func @f(%x: tensor<?x64xf32>, %w: tensor<32x64xf32>, %r: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = te.linear %x weight(%w) : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  %s = arith.addf %y, %r : tensor<?x32xf32>
  return %s : tensor<?x32xf32>
}
