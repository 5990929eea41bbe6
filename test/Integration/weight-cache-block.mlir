// The FP8 weight cache under Float8 block scaling: @f_fwd_cached takes the
// 128x128-block quantized weight @f_fwd saved (both usages: dgrad reads its
// columnwise copy) and quantizes only the input; the recipe is stateless,
// so no amax slot is zeroed. Same forward bit for bit.
//
// RUN: te-opt %s --te-generate-backward --te-thread-recipe-state --te-decompose --te-weight-cache | FileCheck %s --check-prefix=IR
// IR-LABEL: func.func @f_fwd_cached(
// IR-SAME:  %[[W:[^:]*]]: !te.qtensor<128x128xe4m3, #te.fp8_block<>, both, hopper, block_2d> {te.cached_weight = "linear_0.weight"})
// IR:       %[[X:.*]] = te.quantize %arg0 : tensor<128x128xbf16> -> !te.qtensor<128x128xe4m3, #te.fp8_block<>, both, hopper>
// IR-NOT:   te.quantize
// IR-NOT:   arith.constant
// IR:       te.gemm tn %[[X]], %[[W]]
// IR-LABEL: func.func @f_bwd(
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: te-compile %s --train --weight-cache -o %t/lib.so
// RUN: te-run %t/lib.so --entry f_fwd --random 3 --outputs %t/first
// RUN: te-run %t/lib.so --entry f_fwd_cached --random 3 --input linear_0.weight=%t/first/result2.npy --outputs %t/next
// RUN: %python -c "import numpy as n; l = lambda d, i: n.load('%t/' + d + '/result%%d%%s.npy' %% (i, '.bf16' if i == 0 else '')); print([bool((l('first', i) == l('next', i)).all()) for i in range(3)])" | FileCheck %s --check-prefix=SAME
// SAME: [True, True, True]
func.func @f(%x: tensor<128x128xbf16>, %w: tensor<128x128xbf16>) -> tensor<128x128xbf16> {
  %y = te.linear %x weight(%w) recipe(#te.fp8_block<>) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xbf16>
  return %y : tensor<128x128xbf16>
}
