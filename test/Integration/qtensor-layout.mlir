// The buffer of a quantized value, as te_module_info() describes it and
// te-run writes it: scale_inv (fp32) at byte 0, then the transposed copy
// [K, M] (columnwise usage), then the data [M, K] (rowwise usage), each at a
// 256-byte aligned offset. te.drop_usage to columnwise is a prefix view, to
// rowwise a copy of scale_inv and data; te.add_columnwise of the rowwise
// copy (the scale copied, the data transposed byte by byte) is the
// columnwise one bit for bit. Current scaling: scale_inv =
// amax / 448 for E4M3 (1 / (448 / amax) rounded to fp32).
//
// RUN: rm -rf %t && mkdir -p %t
// RUN: te-compile %s -o %t/q.so
// RUN: te-run %t/q.so --list | FileCheck %s --check-prefix=LIST
// LIST:      -> result0: qtensor [16,32]
// LIST-NEXT: -> result1: qtensor [16,32]
// LIST-NEXT: -> result2: qtensor [16,32]
// LIST-NEXT: -> result3: qtensor [16,32]
// RUN: %python -c "import numpy as n; r = n.random.RandomState(2); x = r.randn(16, 32).astype('f4'); n.save('%t/x.npy', x)"
// RUN: te-run %t/q.so --input arg0=%t/x.npy --outputs %t/o
// RUN: %python -c "import numpy as n; c, a = [n.load('%t/o/result%%d.npy' %% i) for i in (2, 3)]; print(a.shape, a[:4].tobytes() == c[:4].tobytes() and a[256:].tobytes() == c[256:].tobytes())" | FileCheck %s --check-prefix=ADD
// ADD: (768,) True
// RUN: %python -c "import numpy as n; x = n.load('%t/x.npy'); b, r, c = [n.load('%t/o/result%%d.npy' %% i) for i in range(3)]; si = b[:4].view('f4')[0]; t = b[256:768].reshape(32, 16); d = b[768:1280].reshape(16, 32); print(b.shape, r.shape, c.shape); print(bool((t.T == d).all()), bool((r[:4] == b[:4]).all() and (r[256:] == d.ravel()).all()), bool((c[:4] == b[:4]).all() and (c[256:] == t.ravel()).all())); print(abs(si * 448 / n.abs(x).max() - 1) < 1e-6, int(d[n.unravel_index(n.abs(x).argmax(), x.shape)]) & 0x7f)" | FileCheck %s
// CHECK:      (1280,) (768,) (768,)
// CHECK-NEXT: True True True
// The largest |x| quantizes to E4M3's largest finite magnitude, 448 (0x7E).
// CHECK-NEXT: True 126
func.func @q(%x: tensor<16x32xf32>) -> (!te.qtensor<16x32xe4m3, #te.fp8_current<>, both, hopper>, !te.qtensor<16x32xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<16x32xe4m3, #te.fp8_current<>, columnwise, hopper>, !te.qtensor<16x32xe4m3, #te.fp8_current<>, columnwise, hopper>) {
  %q, %a = te.quantize %x : tensor<16x32xf32> -> !te.qtensor<16x32xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
  %r = te.drop_usage %q : !te.qtensor<16x32xe4m3, #te.fp8_current<>, both, hopper> -> !te.qtensor<16x32xe4m3, #te.fp8_current<>, rowwise, hopper>
  %c = te.drop_usage %q : !te.qtensor<16x32xe4m3, #te.fp8_current<>, both, hopper> -> !te.qtensor<16x32xe4m3, #te.fp8_current<>, columnwise, hopper>
  %ac = te.add_columnwise %r : !te.qtensor<16x32xe4m3, #te.fp8_current<>, rowwise, hopper> -> !te.qtensor<16x32xe4m3, #te.fp8_current<>, columnwise, hopper>
  return %q, %r, %c, %ac : !te.qtensor<16x32xe4m3, #te.fp8_current<>, both, hopper>, !te.qtensor<16x32xe4m3, #te.fp8_current<>, rowwise, hopper>, !te.qtensor<16x32xe4m3, #te.fp8_current<>, columnwise, hopper>, !te.qtensor<16x32xe4m3, #te.fp8_current<>, columnwise, hopper>
}
