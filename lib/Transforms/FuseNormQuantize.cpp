//===- FuseNormQuantize.cpp - te-fuse-norm-quantize -------------*- C++ -*-===//
//
// A per-tensor FP8 quantization (current or delayed scaling) of a
// normalization's output is done by the norm kernel (TE's norm with an FP8
// output); the high-precision output is never stored. Leaves a remark
// where a candidate cannot be fused, saying why.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"
#include "te/Transforms/Passes.h"

#include "mlir/Pass/Pass.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEFUSENORMQUANTIZEPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::fusion;

namespace {

struct TEFuseNormQuantizePass
    : public te::impl::TEFuseNormQuantizePassBase<TEFuseNormQuantizePass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<QuantizeOp> candidates;
    getOperation()->walk([&](QuantizeOp op) {
      auto q = cast<QuantizedTensorType>(op.getResult().getType());
      RecipeAttrInterface recipe = q.getRecipe();
      if ((isa<FP8CurrentRecipeAttr>(recipe) && !op.getAmaxIn()) ||
          (isa<FP8DelayedRecipeAttr>(recipe) && op.getScales()))
        candidates.push_back(op);
    });
    RemarkEmitter remark(getOperation(), "te-fuse-norm-quantize", reportWork);
    for (QuantizeOp quantize : candidates) {
      remark.candidate();
      auto norm = quantize.getInput().getDefiningOp<NormFwdOp>();
      if (!norm || norm.getOutput() != quantize.getInput())
        continue; // not a normalization's output
      Operation *other = nullptr;
      for (Operation *user : norm.getOutput().getUsers())
        if (user != quantize.getOperation()) {
          other = user;
          break;
        }
      if (other) {
        remark(quantize)
            << "te-fuse-norm-quantize: not fused with te.norm_fwd: the "
               "high-precision output is also read by "
            << other->getName() << " (it must be stored)";
        continue;
      }
      // The fused op goes where the norm was when the scales (if any) are
      // available there, else at the quantization (after both), where the
      // statistics must not have been read yet.
      Value scales = quantize.getScales();
      Operation *point =
          !scales || availableBefore(scales, norm) ? norm : quantize;
      auto readBefore = [&](Value stat) {
        return stat && llvm::any_of(stat.getUsers(), [&](Operation *user) {
                 Operation *u =
                     quantize->getBlock()->findAncestorOpInBlock(*user);
                 return !u || u->isBeforeInBlock(quantize);
               });
      };
      if (point == quantize.getOperation() &&
          (readBefore(norm.getRsigma()) || readBefore(norm.getMu()))) {
        remark(quantize)
            << "te-fuse-norm-quantize: not fused with te.norm_fwd: its "
               "statistics are read before the scales are computed";
        continue;
      }
      OpBuilder b(point);
      auto fused = NormQuantizeOp::create(
          b, norm.getLoc(), quantize.getResult().getType(),
          norm.getRsigma().getType(), quantize.getAmax().getType(),
          norm.getMu() ? norm.getMu().getType() : Type(), norm.getInput(),
          norm.getGamma(), norm.getBeta(), scales, norm.getNormalizationAttr(),
          norm.getEpsAttr(), norm.getZeroCenteredGammaAttr(),
          quantize.getSlotAttr());
      quantize.getResult().replaceAllUsesWith(fused.getResult());
      quantize.getAmax().replaceAllUsesWith(fused.getAmax());
      norm.getRsigma().replaceAllUsesWith(fused.getRsigma());
      if (Value mu = norm.getMu())
        mu.replaceAllUsesWith(fused.getMu());
      quantize.erase();
      norm.erase();
      remark.changed();
    }
  }
};

} // namespace
