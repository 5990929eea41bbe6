//===- Pipeline.h - te-pipeline ---------------------------------*- C++ -*-===//
//
// The compilation pipeline as options + a builder, for te-compile and
// `te-opt --te-pipeline="..."`.
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
  Option<std::string> recipe{
      *this, "recipe",
      llvm::cl::desc("Recipe of every module op: te-compile --recipe names "
                     "or a recipe attribute, quoted when it has spaces "
                     "(recipe='#te.nvfp4<rht = false>'); empty: keep the "
                     "ops'"),
      llvm::cl::init("")};
  Option<bool> train{*this, "train",
                     llvm::cl::desc("Generate <fn>_fwd and <fn>_bwd"),
                     llvm::cl::init(false)};
  Option<bool> checkpoint{*this, "checkpoint",
                          llvm::cl::desc("Checkpoint every LayerNormMLP"),
                          llvm::cl::init(false)};
  Option<bool> weightCache{
      *this, "weight-cache",
      llvm::cl::desc("Also emit <fn>_fwd_cached, reusing quantized weights "
                     "(FP8 weight cache; needs train)"),
      llvm::cl::init(false)};
  Option<ActEpiloguesOption> gemmActEpilogues{
      *this, "gemm-act-epilogues",
      llvm::cl::desc("Fold GELU / dGELU into the high-precision fprop / dgrad "
                     "GEMMs' epilogues (te-fuse-gemm-epilogues act-epilogues): "
                     "off, auto (static row counts >= "
                     "gemm-act-epilogue-min-rows only: faster on the H200 at "
                     "many rows, slower at few) or on"),
      llvm::cl::init(kDefaultGemmActEpilogues)};
  Option<int64_t> gemmActEpilogueMinRows{
      *this, "gemm-act-epilogue-min-rows",
      llvm::cl::desc("Under gemm-act-epilogues=auto, the fewest GEMM rows "
                     "(tokens) that fold (te-fuse-gemm-epilogues "
                     "act-epilogue-min-rows)"),
      llvm::cl::init(1024)};
  Option<int64_t> gemmDActEpilogueMaxRows{
      *this, "gemm-dact-epilogue-max-rows",
      llvm::cl::desc("The most GEMM rows (tokens) whose dgrad GEMM takes "
                     "dGELU in its epilogue (te-fuse-gemm-epilogues "
                     "dact-epilogue-max-rows); -1: no limit"),
      llvm::cl::init(kDefaultDActEpilogueMaxRows)};
  Option<int64_t> gemmBiasGradEpilogueMaxRows{
      *this, "gemm-bias-grad-epilogue-max-rows",
      llvm::cl::desc("The most GEMM rows (tokens) whose bias gradient comes "
                     "from the wgrad GEMM's BGRADB epilogue "
                     "(te-fuse-gemm-epilogues bias-grad-epilogue-max-rows); "
                     "-1: no limit"),
      llvm::cl::init(kDefaultBiasGradEpilogueMaxRows)};
  Option<bool> strictRecipe{
      *this, "strict-recipe",
      llvm::cl::desc("A quantized recipe that cannot apply to a module op is "
                     "an error (default: a warning; te-decompose "
                     "strict-recipe)"),
      llvm::cl::init(false)};
  Option<DedupLayersOption> dedupLayers{
      *this, "dedup-layers",
      llvm::cl::desc("Compile repeated layers once (te-lower-to-runtime "
                     "dedup-layers): off, auto (segments that repeat in "
                     "their function) or on (every segment)"),
      llvm::cl::init(kDefaultDedupLayers)};
  Option<int64_t> tp{
      *this, "tp",
      llvm::cl::desc("Tensor-parallel group size (te-tensor-parallel size); "
                     "1: one device"),
      llvm::cl::init(1)};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("With tp > 1: sequence parallelism "
                     "(te-tensor-parallel sequence-parallel)"),
      llvm::cl::init(false)};
  Option<bool> tpReduceParamGrads{
      *this, "tp-reduce-param-grads",
      llvm::cl::desc("With sequence-parallel: the backward all-reduces the "
                     "norm-weight and FC2-bias gradients "
                     "(te-tensor-parallel reduce-param-grads)"),
      llvm::cl::init(false)};
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
