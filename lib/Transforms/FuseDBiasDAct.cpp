//===- FuseDBiasDAct.cpp - te-fuse-dbias-dact -------------------*- C++ -*-===//
//
// An activation derivative followed by the bias gradient of its result
// becomes one dbias+dact kernel (TE's dbias_d<act>, for the non-gated
// activations, section 2.5 step 6). Leaves a remark where a candidate
// cannot be fused, saying why.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"
#include "te/Transforms/Passes.h"

#include "mlir/Pass/Pass.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEFUSEDBIASDACTPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::fusion;

namespace {

struct TEFuseDBiasDActPass
    : public te::impl::TEFuseDBiasDActPassBase<TEFuseDBiasDActPass> {
  using Base::Base;
  void runOnOperation() override {
    RemarkEmitter remark(getOperation(), "te-fuse-dbias-dact", reportWork);
    SmallVector<BiasGradOp> candidates;
    getOperation()->walk([&](BiasGradOp op) { candidates.push_back(op); });
    for (BiasGradOp bgrad : candidates) {
      remark.candidate();
      auto dact = bgrad.getGrad().getDefiningOp<DActOp>();
      if (!dact)
        continue; // not the bias gradient of an activation's input
      if (dact.getActivation().isGated()) {
        remark(bgrad)
            << "te-fuse-dbias-dact: not fused: gated activation "
            << dact.getActivation().getActivationName()
            << " has no fused dbias+dact kernel";
        continue;
      }
      OpBuilder b(dact);
      auto fused = DBiasDActOp::create(
          b, dact.getLoc(), dact.getResult().getType(), bgrad.getType(),
          dact.getAmax() ? dact.getAmax().getType() : Type(), dact.getGrad(),
          dact.getInput(), dact.getActivation());
      bgrad.getResult().replaceAllUsesWith(fused.getBiasGrad());
      dact.getResult().replaceAllUsesWith(fused.getResult());
      if (Value amax = dact.getAmax())
        amax.replaceAllUsesWith(fused.getAmax());
      bgrad.erase();
      dact.erase();
      remark.changed();
    }
  }
};

} // namespace
