//===- te-plugin.cpp - te-mlir as an mlir-opt plugin ------------*- C++ -*-===//
//
// Exposes the `te` dialect and te-mlir's passes to an mlir-opt built from
// the same libMLIR.so: `mlir-opt --load-dialect-plugin=TEPlugin.so
// --load-pass-plugin=TEPlugin.so`.
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "te/InitAll.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "TE", LLVM_VERSION_STRING,
          [](mlir::DialectRegistry *registry) {
            mlir::te::registerTEDialect(*registry);
          }};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "TEPasses", LLVM_VERSION_STRING,
          []() { mlir::te::registerAllTEPasses(); }};
}
