//===- te-opt.cpp - te-mlir optimizer driver --------------------*- C++ -*-===//
//
// mlir-opt-style driver with an explicit, minimal registry: the `te` dialect,
// the upstream dialects the pipeline produces, te-mlir's passes and the few
// upstream passes the test suite drives. The input is checked for what
// crashes upstream MLIR (te/Support/InputGuards.h) before MlirOptMain sees
// it.
//
//===----------------------------------------------------------------------===//

#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "te/InitAll.h"
#include "te/Support/InputGuards.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

/// The input guards over each chunk MlirOptMain will process. Fails with a
/// diagnostic on stderr when one applies.
static LogicalResult guardInput(const llvm::MemoryBuffer &file,
                                DialectRegistry &registry,
                                const MlirOptMainConfig &config) {
  auto check = [&](std::unique_ptr<llvm::MemoryBuffer> chunk,
                   llvm::raw_ostream &) -> LogicalResult {
    bool structural = te::mayNeedCheckBeforeVerify(chunk->getBuffer());
    llvm::SourceMgr sourceMgr;
    unsigned id = sourceMgr.AddNewSourceBuffer(std::move(chunk), SMLoc());
    if (failed(te::checkInputText(sourceMgr, id)))
      return failure();
    if (!structural)
      return success();
    // Parse without verifying; a parse error is MlirOptMain's to report.
    MLIRContext context(registry);
    context.allowUnregisteredDialects(config.shouldAllowUnregisteredDialects());
    OwningOpRef<ModuleOp> op;
    {
      ScopedDiagnosticHandler quiet(&context,
                                    [](Diagnostic &) { return success(); });
      op = parseSourceFile<ModuleOp>(
          sourceMgr, ParserConfig(&context, /*verifyAfterParse=*/false));
    }
    if (!op)
      return success();
    SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    return te::checkBeforeVerify(op.get());
  };
  // The chunks refer to `file`, which MlirOptMain reads again afterwards.
  return splitAndProcessBuffer(llvm::MemoryBuffer::getMemBuffer(
                                   file.getBuffer(), file.getBufferIdentifier(),
                                   /*RequiresNullTerminator=*/true),
                               check, llvm::nulls(), config.inputSplitMarker(),
                               "");
}

namespace mlir::te::test {
/// Test-only passes (test/lib), declared here as mlir-opt declares its own.
void registerTestMemoryPlanPass();
} // namespace mlir::te::test

int main(int argc, char **argv) {
  DialectRegistry registry;
  te::registerAllTEDialects(registry);
  te::registerAllTEPasses();
  te::test::registerTestMemoryPlanPass();

  // Upstream passes used by te-opt pipelines and tests.
  registerCanonicalizerPass();
  registerCSEPass();
  registerInlinerPass();
  registerSymbolDCEPass();
  memref::registerResolveRankedShapeTypeResultDimsPass();

  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "te-mlir optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  // MlirOptMain's file handling, with the guards between reading the input
  // (once: it may be stdin) and parsing it.
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &error);
  if (!file) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (failed(guardInput(*file, registry, config)))
    return 1;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (failed(MlirOptMain(output->os(), std::move(file), registry, config)))
    return 1;
  output->keep();
  return 0;
}
