//===- Driver.cpp - te-compile's flow ---------------------------*- C++ -*-===//
//
// The command line, the input (guarded, parsed, verified), the torch import
// (Partition.cpp), te-pipeline, then the output: the LLVM dialect, LLVM IR,
// an object or a library linked against libte_runtime with its header.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "te/Conversion/TorchConversion.h"
#include "te/InitAll.h"
#include "te/Support/InputGuards.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Target/TargetMachine.h"

using namespace mlir;
using namespace mlir::te::compile;

/// The registry of every dialect te-compile reads or translates.
static DialectRegistry makeRegistry() {
  DialectRegistry registry;
  te::registerAllTEDialects(registry);
  te::torch_c::registerTorchConversionDialect(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  return registry;
}

/// Reads, guards and verifies the input (te/Support/InputGuards.h refuses
/// what crashes upstream MLIR first: the text before the parse, the IR
/// before the verifier). Returns 0 or the exit status.
static int readInput(const Options &options, MLIRContext &context,
                     llvm::SourceMgr &sourceMgr,
                     OwningOpRef<ModuleOp> &module) {
  std::string error;
  auto input = openInputFile(options.inputFile, &error);
  if (!input)
    return fail(error);
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  if (failed(te::checkInputText(sourceMgr, sourceMgr.getMainFileID())))
    return fail("cannot parse " + options.inputFile);
  module = parseSourceFile<ModuleOp>(
      sourceMgr, ParserConfig(&context, /*verifyAfterParse=*/false));
  if (!module || failed(te::checkBeforeVerify(*module)) ||
      failed(verify(*module)))
    return fail("cannot parse " + options.inputFile);
  return 0;
}

/// Runs te-pipeline on `module` (the torch import done).
static int runPipeline(ModuleOp module, Options &options, TimingScope &timing) {
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return fail("bad pass manager options");
  pm.enableTiming(timing);
  if (int rc = checkPipelineFlags(options))
    return rc;
  te::buildTEPipeline(pm, options.pipeline);
  if (failed(pm.run(module)))
    return fail("compilation of " + options.inputFile + " failed (see above)");
  return 0;
}

/// Writes the output of --emit (the module description amended first).
static int emitOutput(ModuleOp module, const Options &options,
                      TimingScope &timing) {
  std::string info;
  if (int rc = amendModuleInfo(module, options, info))
    return rc;
  if (options.emit == "mlir")
    return emitMLIR(module, options);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule;
  std::unique_ptr<llvm::TargetMachine> machine;
  if (int rc = translateAndOptimize(module, llvmContext, timing, llvmModule,
                                    machine))
    return rc;
  if (options.emit == "llvm")
    return emitLLVM(*llvmModule, options);

  // The object: OUT itself for --emit=obj, a temporary for --emit=so.
  SmallString<128> objPath(options.outputFile);
  if (options.emit == "so") {
    if (llvm::sys::fs::createTemporaryFile("te-compile", "o", objPath))
      return fail("cannot create a temporary object file");
  }
  if (int rc = emitObject(*llvmModule, *machine, objPath, timing))
    return rc;
  if (options.emit == "obj")
    return 0;
  if (int rc = linkLibrary(options, objPath, timing))
    return rc;

  // The header beside the library.
  SmallString<256> header(options.outputFile);
  llvm::sys::path::replace_extension(header, "h");
  if (failed(writeHeader(header, info, options.inputFile)))
    return fail("cannot write " + header);
  return 0;
}

int te::compile::runTECompile(int argc, char **argv) {
  Options options;
  if (int rc = parseCommandLine(argc, argv, options))
    return rc;

  MLIRContext context(makeRegistry());
  context.loadAllAvailableDialects();
  // Without --remarks the remarks are dropped: do not print an operation
  // into each (the "see current operation" note numbers the names of its
  // whole function, per remark: quadratic over a model of many layers).
  bool remarks = options.remarks;
  if (!remarks)
    context.printOpOnDiagnostic(false);

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  // Remarks only on request (registered last, so it runs first).
  ScopedDiagnosticHandler remarkFilter(&context, [remarks](Diagnostic &diag) {
    return success(!remarks &&
                   diag.getSeverity() == DiagnosticSeverity::Remark);
  });
  OwningOpRef<ModuleOp> module;
  if (int rc = readInput(options, context, sourceMgr, module))
    return rc;
  if (int rc = checkFlagCombinations(options))
    return rc;
  // One entry per public function: a module without one would make a library
  // with nothing to call.
  if (llvm::none_of(module->getOps<func::FuncOp>(), [](func::FuncOp f) {
        return f.isPublic() && !f.isExternal();
      }))
    return fail(options.inputFile +
                " has no public function with a body: nothing to compile "
                "(te-compile makes an entry of each public func.func)");
  // --mlir-timing: the passes, then the LLVM phases, in one report.
  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();

  // A torch export is imported first, on its own: what te-import-torch
  // leaves decides between one library and a partition.
  ImportResult imported;
  if (isTorchExport(*module))
    if (int rc = importTorchExport(*module, options, timing, imported))
      return rc;
  if (int rc = runPipeline(*module, options, timing))
    return rc;
  if (imported.residual)
    if (int rc = writeResidual(options, imported))
      return rc;
  return emitOutput(*module, options, timing);
}
