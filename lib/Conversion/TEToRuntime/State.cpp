//===- State.cpp - Lowering of the recipe state updates ---------*- C++ -*-===//
//
// te.amax_update: fp8-delayed's amax history and scales, to
// te_rt_amax_update, or te_rt_amax_update_unused with the slots of an amax
// vector that no op records (unusedAmaxSlots), left unwritten, or, marked
// te.fork (te-fork-amax-update), te_rt_amax_update_fork.
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::runtime_lowering {

namespace {

struct AmaxUpdateLowering : public RuntimeCallPattern<AmaxUpdateOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(AmaxUpdateOp u, FunctionLowering &l) const override {
    auto recipe = dyn_cast<FP8DelayedRecipeAttr>(u.getRecipe());
    if (!recipe)
      return u->emitError() << "te-lower-to-runtime: te.amax_update under "
                            << u.getRecipe() << " (delayed scaling only)";
    QuantFormat f =
        u.getBackward() ? getBackwardFormat(recipe) : getForwardFormat(recipe);
    auto history = cast<RankedTensorType>(u.getAmaxHistory().getType());
    if (!history.hasStaticShape())
      return u->emitError("te-lower-to-runtime: dynamic amax history");
    SmallVector<Value, 12> operands = {
        l.ctxArg,
        l.ptr(u.getAmaxHistory()),
        l.ptr(u.getScales()),
        l.ptr(u.getAmax()),
        l.c64(history.getDimSize(0)),
        l.c64(history.getDimSize(1)),
        l.cf32(f == QuantFormat::E4M3 ? 448.0 : 57344.0),
        l.c32(int32_t(recipe.getMargin())),
        l.c32(recipe.getAmaxComputeAlgo() == AmaxComputeAlgo::MostRecent)};
    // The slots of the amax vector no op records were not zeroed (its
    // concat skipped them): the update takes them as 0 itself.
    std::optional<uint64_t> unused = unusedAmaxSlots(u.getAmax());
    // Forked (te-fork-amax-update) when its results are written in place
    // in the caller's buffers: none is copied out of the arena at the
    // entry's end, before the join.
    bool fork = u->hasAttr("te.fork") &&
                l.memory.inPlaceResult.count(u.getNewAmaxHistory()) &&
                l.memory.inPlaceResult.count(u.getNewScales());
    if (unused || fork)
      operands.push_back(l.c64(int64_t(unused.value_or(0))));
    operands.append({l.ptr(u.getNewAmaxHistory()), l.ptr(u.getNewScales())});
    l.call(fork     ? "te_rt_amax_update_fork"
           : unused ? "te_rt_amax_update_unused"
                    : "te_rt_amax_update",
           operands);
    return success();
  }
};

} // namespace

void populateStateToRuntimePatterns(FunctionLowering &lowering,
                                    RewritePatternSet &patterns) {
  patterns.add<AmaxUpdateLowering>(lowering);
}

} // namespace mlir::te::runtime_lowering
