//===- te-opt.cpp - te-mlir optimizer driver --------------------*- C++ -*-===//
//
// mlir-opt-style driver with an explicit, minimal registry: the `te` dialect,
// the upstream dialects the pipeline produces, te-mlir's passes and the few
// upstream passes the test suite drives.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "te/InitAll.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::te::registerAllTEDialects(registry);
  mlir::te::registerAllTEPasses();

  // Upstream passes used by te-opt pipelines and tests.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();
  mlir::memref::registerResolveRankedShapeTypeResultDimsPass();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "te-mlir optimizer driver\n", registry));
}
