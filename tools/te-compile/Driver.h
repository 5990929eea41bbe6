//===- Driver.h - te-compile's driver library -------------------*- C++ -*-===//
//
// te-compile by job: the command line (Options.cpp), --partition
// (Partition.cpp), the module description, header and LLVM output
// (Emit.cpp), the link against libte_runtime (Link.cpp) and the flow that
// strings them together (Driver.cpp). te-compile.cpp is main() over it.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TOOLS_TE_COMPILE_DRIVER_H
#define TE_TOOLS_TE_COMPILE_DRIVER_H

#include "te/Transforms/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir::te::compile {

/// te-compile's command line, parsed and checked (flags that need the input
/// are checked by checkPipelineFlags).
struct Options {
  std::string argv0;
  std::string inputFile;
  std::string outputFile;
  std::string target;
  std::string arch;
  std::string emit;
  std::string runtimeDir;
  std::string residualFile;
  bool remarks = false;
  bool partition = false;
  /// The shared flags (te/Transforms/PipelineOptions.def), copied in, and
  /// the architecture class of --arch.
  TEPipelineOptions pipeline;
};

/// Prints `message` as te-compile's error and returns 1.
int fail(const llvm::Twine &message);

//===----------------------------------------------------------------------===//
// Options.cpp
//===----------------------------------------------------------------------===//

/// Parses the command line into `options` and checks the flags that need
/// nothing else (--emit, --target, --arch); returns 0 or te-compile's exit
/// status.
int parseCommandLine(int argc, char **argv, Options &options);

/// The checks of the flag combinations made before the compilation
/// (--checkpoint needs --train, ...); returns 0 or the exit status.
int checkFlagCombinations(const Options &options);

/// The checks of the GEMM-epilogue and dedup flags made before the
/// pipeline runs; resolves a bare --gemm-act-epilogues to on. Returns 0 or
/// the exit status.
int checkPipelineFlags(Options &options);

//===----------------------------------------------------------------------===//
// Partition.cpp
//===----------------------------------------------------------------------===//

/// What importing a torch export left: the residual module (--partition),
/// the library's raised entries and the count of torch ops left.
struct ImportResult {
  OwningOpRef<ModuleOp> residual;
  SmallVector<std::string> raised;
  unsigned torchOpsLeft = 0;
};

/// True when the module holds torch dialect ops or types (an export).
bool isTorchExport(ModuleOp module);

/// Runs te-import-torch on a torch export and, with --partition, outlines
/// the raised modules into `module` and the rest into `result.residual`.
/// Returns 0 or the exit status.
int importTorchExport(ModuleOp module, const Options &options,
                      TimingScope &timing, ImportResult &result);

/// Writes the residual module of --partition and reports the partition.
int writeResidual(const Options &options, ImportResult &result);

//===----------------------------------------------------------------------===//
// Emit.cpp
//===----------------------------------------------------------------------===//

/// Adds the default backend, arch and source to the module description;
/// `info` is the amended description. Returns 0 or the exit status.
int amendModuleInfo(ModuleOp module, const Options &options, std::string &info);

/// Writes `module` (LLVM dialect) to the output file (--emit=mlir).
int emitMLIR(ModuleOp module, const Options &options);

/// Translates `module` to LLVM IR in `llvmContext` and optimizes it at O2
/// for the host; `machine` is the host's target machine.
int translateAndOptimize(ModuleOp module, llvm::LLVMContext &llvmContext,
                         TimingScope &timing,
                         std::unique_ptr<llvm::Module> &llvmModule,
                         std::unique_ptr<llvm::TargetMachine> &machine);

/// Writes LLVM IR to the output file (--emit=llvm).
int emitLLVM(llvm::Module &llvmModule, const Options &options);

/// Writes the object to `objPath`.
int emitObject(llvm::Module &llvmModule, llvm::TargetMachine &machine,
               StringRef objPath, TimingScope &timing);

/// OUT.h: the entry points, their argument order, shapes (dynamic dims as
/// the dims array), the saved-bundle layout and recipe state.
LogicalResult writeHeader(StringRef path, StringRef json, StringRef input);

//===----------------------------------------------------------------------===//
// Link.cpp
//===----------------------------------------------------------------------===//

/// Links the object at `objPath` against libte_runtime into the output
/// file and removes the object. Returns 0 or the exit status.
int linkLibrary(const Options &options, StringRef objPath, TimingScope &timing);

//===----------------------------------------------------------------------===//
// Driver.cpp
//===----------------------------------------------------------------------===//

/// te-compile: parses the command line, compiles and writes the output.
/// Returns the exit status.
int runTECompile(int argc, char **argv);

} // namespace mlir::te::compile

#endif // TE_TOOLS_TE_COMPILE_DRIVER_H
