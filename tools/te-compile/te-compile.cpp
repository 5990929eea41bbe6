//===- te-compile.cpp - ahead-of-time compiler driver -----------*- C++ -*-===//
//
// te-compile IN.mlir -o OUT.so: a torch-mlir export (or te IR) in, a shared
// library with one C entry point per function (plus te_module_info()) and a
// header describing them out. The pipeline: te-import-torch (when the input
// is a torch export), te-apply-recipe, te-generate-backward (--train),
// te-decompose, te-lower-to-runtime, LLVM IR, an object from LLVM's code
// generator, and a link against libte_runtime. With --partition, an export
// that does not import as a whole is split: the raised modules, outlined,
// go into the library and the rest into a residual torch-mlir module that
// calls them (docs/partition.md).
//
// The work is done by the driver library beside this file (Driver.h).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "llvm/Support/InitLLVM.h"

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  return mlir::te::compile::runTECompile(argc, argv);
}
