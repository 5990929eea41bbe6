//===- ApplyRecipe.cpp - Set the recipe of te module ops --------*- C++ -*-===//
//
// Implements --te-apply-recipe, which backs te-compile's --recipe option.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Passes.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEAPPLYRECIPEPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {
struct TEApplyRecipePass
    : public mlir::te::impl::TEApplyRecipePassBase<TEApplyRecipePass> {
  using Base::Base;

  void runOnOperation() override {
    std::string why;
    RecipeAttrInterface newRecipe =
        getDefaultRecipe(&getContext(), recipe, &why);
    if (!newRecipe && !why.empty()) {
      getOperation()->emitError()
          << "te-apply-recipe: invalid recipe '" << recipe << "': " << why;
      return signalPassFailure();
    }
    if (!newRecipe) {
      getOperation()->emitError()
          << "te-apply-recipe: unknown recipe '" << recipe
          << "'; expected one of: " << llvm::join(getRecipeNames(), ", ")
            << ", or a recipe attribute such as '#te.nvfp4<rht = false>'";
      return signalPassFailure();
    }
    getOperation()->walk([&](ModuleOpInterface op) {
      if (!op.getModuleRecipe() || override)
        op.setModuleRecipe(newRecipe);
    });
  }
};
} // namespace
