// RUN: te-opt %s --te-tensor-parallel="size=2 sequence-parallel" --te-describe="pretty" -o /dev/null | FileCheck %s
// RUN: te-opt %s --te-tensor-parallel="size=4" --te-describe="mode=inference pretty" -o /dev/null | FileCheck %s --check-prefix=TP
// te-describe of a tensor-parallel op: the rank's tensors (FC1's output
// with the group's rows under sequence parallelism) and every collective
// with the rank's bytes in and out.

// CHECK: "name": "fc1_out",
// CHECK-NEXT: "shape": [
// CHECK-NEXT: "d0*2",
// CHECK-NEXT: 64
// CHECK: "tp": {
// CHECK-NEXT: "collectives": [
// CHECK-NEXT: {
// CHECK-NEXT: "bytes_in": "d0*128",
// CHECK-NEXT: "bytes_out": "d0*256",
// CHECK-NEXT: "collective": "all_gather",
// CHECK-NEXT: "of": "ln_out",
// CHECK-NEXT: "pass": "forward"
// CHECK: "collective": "reduce_scatter",
// CHECK-NEXT: "of": "fc2_output",
// CHECK-NEXT: "pass": "forward"
// CHECK: "collective": "all_gather",
// CHECK-NEXT: "of": "grad_output",
// CHECK-NEXT: "pass": "backward"
// CHECK: "collective": "all_gather",
// CHECK-NEXT: "of": "ln_out",
// CHECK-NEXT: "pass": "backward"
// CHECK: "collective": "reduce_scatter",
// CHECK-NEXT: "of": "fc1_dgrad",
// CHECK-NEXT: "pass": "backward"
// CHECK: "reduce_param_grads": false,
// CHECK-NEXT: "sequence_parallel": true,
// CHECK-NEXT: "size": 2

// Inference without sequence parallelism: FC2's all-reduce only.
// TP: "tp": {
// TP-NEXT: "collectives": [
// TP-NEXT: {
// TP-NEXT: "bytes_in": "d0*128",
// TP-NEXT: "bytes_out": "d0*128",
// TP-NEXT: "collective": "all_reduce",
// TP-NEXT: "of": "fc2_output",
// TP-NEXT: "pass": "forward"
// TP-NEXT: }
// TP-NEXT: ],
// TP-NEXT: "reduce_param_grads": false,
// TP-NEXT: "sequence_parallel": false,
// TP-NEXT: "size": 4
func.func @main(%x: tensor<?x64xbf16>, %g: tensor<64xbf16>, %beta: tensor<64xbf16>,
                %w1: tensor<128x64xbf16>, %b1: tensor<128xbf16>,
                %w2: tensor<64x128xbf16>, %b2: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = te.layernorm_mlp %x norm layer_norm(%g, %beta) fc1(%w1, %b1) act gelu fc2(%w2, %b2)
      : (tensor<?x64xbf16>, tensor<64xbf16>, tensor<64xbf16>, tensor<128x64xbf16>, tensor<128xbf16>,
         tensor<64x128xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
