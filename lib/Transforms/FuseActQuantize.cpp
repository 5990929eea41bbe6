//===- FuseActQuantize.cpp - te-fuse-act-quantize ---------------*- C++ -*-===//
//
// A delayed-scaling FP8 quantization of an activation's (or its
// derivative's) result is cast by that kernel with the given scale (TE's
// fused activation-cast); the high-precision tensor is never stored.
// Leaves a remark where a candidate cannot be fused, saying why.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"
#include "te/Transforms/Passes.h"

#include "mlir/Pass/Pass.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEFUSEACTQUANTIZEPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::fusion;

namespace {

/// Why the activation op `def` (whose main result `quantize` reads) cannot
/// cast its result itself; empty when it can.
std::string whyNotFusable(Operation *def, QuantizeOp quantize) {
  std::string why;
  llvm::raw_string_ostream os(why);
  for (Operation *user : def->getResult(0).getUsers())
    if (user != quantize.getOperation()) {
      os << "the high-precision result is also read by " << user->getName()
         << " (it must be stored)";
      return why;
    }
  // The producer's optional amax result comes last (te-fuse-quantize-amax).
  Value amax = def->getResults().back();
  if (def->getNumResults() > (isa<DBiasDActOp>(def) ? 2u : 1u) &&
      !amax.use_empty())
    os << "its amax result is used by "
       << (*amax.getUsers().begin())->getName();
  return why;
}

struct TEFuseActQuantizePass
    : public te::impl::TEFuseActQuantizePassBase<TEFuseActQuantizePass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<QuantizeOp> candidates;
    getOperation()->walk([&](QuantizeOp op) {
      auto q = cast<QuantizedTensorType>(op.getResult().getType());
      if (isa<FP8DelayedRecipeAttr>(q.getRecipe()) && op.getScales() &&
          op.getAmax())
        candidates.push_back(op);
    });
    RemarkEmitter remark(getOperation(), "te-fuse-act-quantize", reportWork);
    for (QuantizeOp quantize : candidates) {
      remark.candidate();
      Value x = quantize.getInput();
      Operation *def = x.getDefiningOp();
      if (!def || def->getResult(0) != x ||
          !isa<ActOp, DActOp, DBiasDActOp>(def))
        continue; // not an activation kernel's result
      if (quantize->getBlock() != def->getBlock()) {
        // Fusing would move the activation into the quantization's region
        // (a loop body, say), where it could run more often.
        remark(quantize) << "te-fuse-act-quantize: not fused with "
                         << def->getName()
                         << ": the quantization is in another block";
        continue;
      }
      std::string why = whyNotFusable(def, quantize);
      if (!why.empty()) {
        remark(quantize) << "te-fuse-act-quantize: not fused with "
                         << def->getName() << ": " << why;
        continue;
      }
      // The fused op goes where the producer was when the scales are
      // available there, else at the quantization (after both), where the
      // bias gradient of te.dbias_dact must not have been read yet.
      Operation *point =
          availableBefore(quantize.getScales(), def) ? def : quantize;
      auto dbias = dyn_cast<DBiasDActOp>(def);
      if (dbias && point == quantize.getOperation() &&
          llvm::any_of(dbias.getBiasGrad().getUsers(), [&](Operation *user) {
            Operation *u = quantize->getBlock()->findAncestorOpInBlock(*user);
            return !u || u->isBeforeInBlock(quantize);
          })) {
        remark(quantize)
            << "te-fuse-act-quantize: not fused with " << def->getName()
            << ": its bias gradient is read before the "
               "scales are computed";
        continue;
      }
      OpBuilder b(point);
      Type qType = quantize.getResult().getType();
      Type amaxType = quantize.getAmax().getType();
      Operation *fused;
      if (auto a = dyn_cast<ActOp>(def)) {
        fused = ActQuantizeOp::create(
            b, a.getLoc(), qType, amaxType, a.getInput(), quantize.getScales(),
            quantize.getSlotAttr(), a.getActivation());
      } else if (auto a = dyn_cast<DActOp>(def)) {
        fused = DActQuantizeOp::create(
            b, a.getLoc(), qType, amaxType, /*bias_grad=*/Type(), a.getGrad(),
            a.getInput(), quantize.getScales(), quantize.getSlotAttr(),
            a.getActivation());
      } else {
        auto f = DActQuantizeOp::create(
            b, dbias.getLoc(), qType, amaxType, dbias.getBiasGrad().getType(),
            dbias.getGrad(), dbias.getInput(), quantize.getScales(),
            quantize.getSlotAttr(), dbias.getActivation());
        dbias.getBiasGrad().replaceAllUsesWith(f.getBiasGrad());
        fused = f;
      }
      quantize.getResult().replaceAllUsesWith(fused->getResult(0));
      quantize.getAmax().replaceAllUsesWith(fused->getResult(1));
      quantize.erase();
      def->erase();
      remark.changed();
    }
  }
};

} // namespace
