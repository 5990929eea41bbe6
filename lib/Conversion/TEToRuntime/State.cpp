//===- State.cpp - Lowering of the recipe state updates ---------*- C++ -*-===//
//
// te.amax_update: fp8-delayed's amax history and scales, to
// te_rt_amax_update.
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::runtime_lowering {

std::optional<LogicalResult> FunctionLowering::lowerStateOp(Operation *op) {
  if (auto u = dyn_cast<AmaxUpdateOp>(op)) {
    auto recipe = dyn_cast<FP8DelayedRecipeAttr>(u.getRecipe());
    if (!recipe)
      return op->emitError() << "te-lower-to-runtime: te.amax_update under "
                             << u.getRecipe() << " (delayed scaling only)";
    QuantFormat f = u.getBackward() ? getBackwardFormat(recipe)
                                    : getForwardFormat(recipe);
    auto history = cast<RankedTensorType>(u.getAmaxHistory().getType());
    if (!history.hasStaticShape())
      return op->emitError("te-lower-to-runtime: dynamic amax history");
    call("te_rt_amax_update",
         {ctxArg, ptr(u.getAmaxHistory()), ptr(u.getScales()), ptr(u.getAmax()),
          c64(history.getDimSize(0)), c64(history.getDimSize(1)),
          cf32(f == QuantFormat::E4M3 ? 448.0 : 57344.0),
          c32(int32_t(recipe.getMargin())),
          c32(recipe.getAmaxComputeAlgo() == AmaxComputeAlgo::MostRecent),
          ptr(u.getNewAmaxHistory()), ptr(u.getNewScales())});
    return success();
  }
  return std::nullopt;
}

} // namespace mlir::te::runtime_lowering
