// TE's FP8 weight cache ahead of time (te-compile --weight-cache): @f_fwd
// quantizes the weight and saves it; @f_fwd_cached takes that saved weight
// instead of quantizing (is_first_microbatch false) and computes the same
// forward bit for bit; under delayed scaling the weight's amax slot records 0.
//
// RUN: te-opt %s --te-generate-backward --te-thread-recipe-state --te-decompose --te-weight-cache | FileCheck %s --check-prefix=IR
// IR-LABEL: func.func @f_fwd(
// IR:       te.quantize %arg1 scale(%arg3[1]) {weight}
// IR-LABEL: func.func @f_fwd_cached(
// IR-SAME:  %[[W:[^:]*]]: !te.qtensor<32x64xe4m3, #te.fp8_delayed<amax_history_len = 4>, both, hopper> {te.cached_weight = "linear_0.weight"})
// IR-SAME:  attributes {te.cached_forward_of = @f_fwd}
// IR:       %[[X:.*]], %[[AX:.*]] = te.quantize %arg0 scale(%arg3[0])
// IR-NOT:   te.quantize
// IR:       %[[Z:.*]] = arith.constant dense<0.000000e+00> : tensor<1xf32>
// IR:       te.gemm tn %[[X]], %[[W]]
// IR:       tensor.concat dim(0) %[[AX]], %[[Z]],
// IR-LABEL: func.func @f_bwd(
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: te-compile %s --train --weight-cache -o %t/lib.so
// RUN: not te-compile %s --weight-cache -o %t/x.so 2>&1 | FileCheck %s --check-prefix=NEEDTRAIN
// NEEDTRAIN: te-compile: error: --weight-cache needs --train
// RUN: te-run %t/lib.so --list | FileCheck %s --check-prefix=LIST
// LIST:      f_fwd_cached
// LIST:        arg4 (te.cached_weight=linear_0.weight): qtensor [32,64]
// RUN: te-run %t/lib.so --entry f_fwd --random 3 --outputs %t/first
// RUN: te-run %t/lib.so --entry f_fwd_cached --random 3 --input linear_0.weight=%t/first/result2.npy --outputs %t/next
// RUN: %python -c "import numpy as n; l = lambda d, i: n.load('%t/' + d + '/result%%d.bf16.npy' %% i if i == 0 else '%t/' + d + '/result%%d.npy' %% i); print([bool((l('first', i) == l('next', i)).all()) for i in range(3)]); h = l('next', 3); print(h[-1][1] == 0, h[-1][0] == l('first', 3)[-1][0], n.load('%t/next/result4.npy')[1] == 1)" | FileCheck %s --check-prefix=SAME
// SAME: [True, True, True]
// SAME-NEXT: True True True
func.func @f(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<32x32xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_delayed<amax_history_len = 4>) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return %y : tensor<32x32xbf16>
}
