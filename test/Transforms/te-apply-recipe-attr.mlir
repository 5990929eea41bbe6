// RUN: te-opt %s "--te-apply-recipe=recipe='#te.nvfp4<rht = false>'" | FileCheck %s
// RUN: te-opt %s "--te-apply-recipe=recipe=#te.nvfp4<rht=false>" | FileCheck %s
// RUN: te-opt %s "--te-import-torch=recipe='#te.nvfp4<rht = false>'" | FileCheck %s --check-prefix=KEEP
// RUN: te-opt --help | FileCheck %s --check-prefix=HELP
//
// A recipe attribute as a pass option: the help shows the form that parses
// (quoted, or without spaces); an unquoted attribute with spaces is split
// by the pass-option parser.
//
// CHECK-LABEL: func.func @linear(
// CHECK: recipe(#te.nvfp4<rht = false>)
// KEEP-LABEL: func.func @linear(
// KEEP-NOT: recipe(
// HELP: --te-apply-recipe
// HELP: --recipe=<string> {{.*}}--te-apply-recipe="recipe='#te.nvfp4<rht = false>'" (or written without spaces: recipe=#te.nvfp4<rht=false>)
// HELP: --te-import-torch
// HELP: --recipe=<string> {{.*}}recipe='#te.nvfp4<rht = false>'
func.func @linear(%x: tensor<32x64xbf16>, %w: tensor<32x64xbf16>) -> tensor<32x32xbf16> {
  %y = te.linear %x weight(%w) : (tensor<32x64xbf16>, tensor<32x64xbf16>) -> tensor<32x32xbf16>
  return %y : tensor<32x32xbf16>
}
