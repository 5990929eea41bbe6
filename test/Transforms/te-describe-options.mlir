// out=FILE writes the report there and leaves stdout to the IR.
// RUN: te-opt %s --te-describe="out=%t.json" | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s --check-prefix=FILE < %t.json
// RUN: te-opt %s --te-describe="pretty=true" -o /dev/null | FileCheck %s --check-prefix=PRETTY
// RUN: not te-opt %s --te-describe="arch=ampere" 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: not te-opt %s --te-describe="mode=eval" 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not te-opt %s --te-describe="out=/nonexistent-dir/x.json" 2>&1 | FileCheck %s --check-prefix=OUT
// RUN: not te-opt %s --te-describe="colour=red" 2>&1 | FileCheck %s --check-prefix=OPTION

// IR: func.func @f
// IR: te.linear
// FILE: [
// FILE-NEXT: {"arch":"hopper",{{.*}}"op":"te.linear"
// FILE-NEXT: {{^\]$}}
// PRETTY: "op": "te.linear",
// ARCH: error: te-describe: unknown arch 'ampere'; expected hopper or blackwell
// MODE: error: te-describe: unknown mode 'eval'; expected training or inference
// OUT: error: te-describe: cannot open '/nonexistent-dir/x.json'
// OPTION: no such option colour
func.func @f(%x: tensor<8x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<8x32xbf16> {
  %y = te.linear %x weight(%w) : (tensor<8x64xbf16>, tensor<32x64xbf16>) -> tensor<8x32xbf16>
  return %y : tensor<8x32xbf16>
}
