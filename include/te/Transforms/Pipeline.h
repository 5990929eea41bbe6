//===- Pipeline.h - te-pipeline ---------------------------------*- C++ -*-===//
//
// The compilation pipeline as options + a builder, for te-compile and
// `te-opt --te-pipeline="..."`. The options te-compile shares are listed
// once, in te/Transforms/PipelineOptions.def.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TRANSFORMS_PIPELINE_H
#define TE_TRANSFORMS_PIPELINE_H

#include "te/Transforms/PassOptions.h"

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace te {

struct TEPipelineOptions : public PassPipelineOptions<TEPipelineOptions> {
  Option<bool> importTorch{*this, "import-torch",
                           llvm::cl::desc("Raise torch-mlir ops first"),
                           llvm::cl::init(true)};
  // The options te-compile shares, from their one declaration.
#define TE_PIPELINE_OPTION(MEMBER, FLAG, TYPE, DEFAULT, VALUE, HELP,           \
                           FLAG_HELP)                                          \
  Option<TYPE> MEMBER{*this, FLAG, llvm::cl::desc(HELP),                       \
                      llvm::cl::init(DEFAULT)};
#include "te/Transforms/PipelineOptions.def"
  Option<ArchOption> arch{
      *this, "arch",
      llvm::cl::desc("Architecture class of quantized saves: hopper or "
                     "blackwell"),
      llvm::cl::init(kDefaultArch)};
};

/// Adds the pipeline's passes to `pm` (anchored on builtin.module).
void buildTEPipeline(OpPassManager &pm, const TEPipelineOptions &options);

/// Registers `te-pipeline` for te-opt.
void registerTEPipeline();

} // namespace te
} // namespace mlir

#endif // TE_TRANSFORMS_PIPELINE_H
