//===- Pipeline.cpp - te-pipeline: export to LLVM dialect -------*- C++ -*-===//
//
// The whole compilation as one pass pipeline, shared by te-compile and
// `te-opt --te-pipeline`: import (when the module holds torch ops), recipe,
// backward generation, decomposition, fusions, lowering to the runtime ABI.
//
//===----------------------------------------------------------------------===//

#include "te/Transforms/Pipeline.h"
#include "te/Conversion/Passes.h"
#include "te/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::te;

void mlir::te::buildTEPipeline(OpPassManager &pm,
                               const TEPipelineOptions &options) {
  if (options.importTorch) {
    // The pipeline lowers the whole module: a partial import would fail
    // late, on the torch ops left; strict names the first one instead
    // (te-compile --partition is the way to compile part of a model).
    TEImportTorchPassOptions import;
    import.strict = true;
    pm.addPass(createTEImportTorchPass(import));
  }
  if (!options.recipe.empty()) {
    TEApplyRecipePassOptions recipe;
    recipe.recipe = options.recipe;
    recipe.override = true;
    pm.addPass(createTEApplyRecipePass(recipe));
  }
  if (options.tp > 1) {
    TETensorParallelPassOptions tp;
    tp.size = options.tp;
    tp.sequenceParallel = options.sequenceParallel;
    tp.reduceParamGrads = options.tpReduceParamGrads;
    pm.addPass(createTETensorParallelPass(tp));
  }
  if (options.train) {
    TEGenerateBackwardPassOptions backward;
    backward.arch = options.arch;
    backward.checkpoint = options.checkpoint;
    pm.addPass(createTEGenerateBackwardPass(backward));
  }
  pm.addPass(createTEThreadRecipeStatePass());
  TEDecomposePassOptions decompose;
  decompose.arch = options.arch;
  decompose.strictRecipe = options.strictRecipe;
  pm.addPass(createTEDecomposePass(decompose));
  if (options.weightCache)
    pm.addPass(createTEWeightCachePass());
  pm.addPass(createCSEPass());
  TEFuseGemmEpiloguesPassOptions epilogues;
  epilogues.actEpilogues = options.gemmActEpilogues;
  epilogues.actEpilogueMinRows = options.gemmActEpilogueMinRows;
  epilogues.dactEpilogueMaxRows = options.gemmDActEpilogueMaxRows;
  epilogues.biasGradEpilogueMaxRows = options.gemmBiasGradEpilogueMaxRows;
  pm.addPass(createTEFuseGemmEpiloguesPass(epilogues));
  pm.addPass(createTEFuseDBiasDActPass());
  pm.addPass(createTEFuseNormQuantizePass());
  pm.addPass(createTEFuseQuantizeAmaxPass());
  pm.addPass(createTEFuseDBiasQuantizePass());
  pm.addPass(createTEFuseActQuantizePass());
  pm.addPass(createTESplitWgradPass());
  pm.addNestedPass<func::FuncOp>(createTEForkAmaxUpdatePass());
  TEForkBranchesPassOptions branches;
  branches.maxRows = options.branchMaxRows;
  pm.addNestedPass<func::FuncOp>(createTEForkBranchesPass(branches));
  TELowerToRuntimePassOptions lower;
  lower.dedupLayers = options.dedupLayers;
  pm.addPass(createTELowerToRuntimePass(lower));
}

void mlir::te::registerTEPipeline() {
  PassPipelineRegistration<TEPipelineOptions>(
      "te-pipeline",
      "The whole te-mlir compilation to the LLVM dialect (what te-compile "
      "runs): te-import-torch, te-apply-recipe, te-tensor-parallel (tp > 1), "
      "te-generate-backward, "
      "te-thread-recipe-state, te-decompose, te-weight-cache, cse, "
      "te-fuse-gemm-epilogues, te-fuse-dbias-dact, te-fuse-norm-quantize, "
      "te-fuse-quantize-amax, te-fuse-dbias-quantize, "
      "te-fuse-act-quantize, te-split-wgrad, te-fork-amax-update, "
      "te-fork-branches, te-lower-to-runtime",
      buildTEPipeline);
}
