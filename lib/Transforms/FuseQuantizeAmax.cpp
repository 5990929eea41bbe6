//===- FuseQuantizeAmax.cpp - te-fuse-quantize-amax -------------*- C++ -*-===//
//
// A current-scaling FP8 quantization of an activation's (or its
// derivative's) result takes the amax that kernel computes while writing
// it, instead of a separate pass over the tensor. Leaves a remark where a
// candidate cannot be fused, saying why.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"
#include "te/Transforms/Passes.h"

#include "mlir/Pass/Pass.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEFUSEQUANTIZEAMAXPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::fusion;

namespace {

/// The amax of `v` from the kernel producing it: its producer rebuilt with
/// an amax result (or its existing one); null when `v` is not the main
/// result of te.act, te.dact or te.dbias_dact.
Value amaxOfProducer(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def || def->getResult(0) != v)
    return {};
  OpBuilder b(def);
  Type amaxType = RankedTensorType::get({1}, b.getF32Type());
  Operation *fused = nullptr;
  if (auto op = dyn_cast<ActOp>(def)) {
    if (op.getAmax())
      return op.getAmax();
    fused = ActOp::create(b, op.getLoc(), op.getResult().getType(), amaxType,
                          op.getInput(), op.getActivation());
  } else if (auto op = dyn_cast<DActOp>(def)) {
    if (op.getAmax())
      return op.getAmax();
    fused = DActOp::create(b, op.getLoc(), op.getResult().getType(), amaxType,
                           op.getGrad(), op.getInput(), op.getActivation());
  } else if (auto op = dyn_cast<DBiasDActOp>(def)) {
    if (op.getAmax())
      return op.getAmax();
    fused = DBiasDActOp::create(
        b, op.getLoc(), op.getResult().getType(), op.getBiasGrad().getType(),
        amaxType, op.getGrad(), op.getInput(), op.getActivation());
  } else {
    return {};
  }
  def->replaceAllUsesWith(fused->getResults().drop_back());
  def->erase();
  return fused->getResults().back();
}

struct TEFuseQuantizeAmaxPass
    : public te::impl::TEFuseQuantizeAmaxPassBase<TEFuseQuantizeAmaxPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<QuantizeOp> candidates;
    getOperation()->walk([&](QuantizeOp op) {
      auto q = cast<QuantizedTensorType>(op.getResult().getType());
      if (isa<FP8CurrentRecipeAttr>(q.getRecipe()) && !op.getAmaxIn())
        candidates.push_back(op);
    });
    RemarkEmitter remark(getOperation(), "te-fuse-quantize-amax", reportWork);
    for (QuantizeOp quantize : candidates) {
      remark.candidate();
      Value x = quantize.getInput();
      Value amax = amaxOfProducer(x);
      if (!amax) {
        Operation *def = x.getDefiningOp();
        InFlightDiagnostic diag = remark(quantize)
                                  << "te-fuse-quantize-amax: amax not "
                                     "fused: the input is ";
        if (def)
          diag << "the result of " << def->getName()
               << ", which computes no amax (the quantization reads it "
                  "twice)";
        else
          diag << "an argument (the quantization reads it twice)";
        continue;
      }
      // (amaxOfProducer may have rebuilt the producer.)
      remark.changed();
      // (The producer was rebuilt: the input is its new result.)
      OpBuilder b(quantize);
      auto fused = QuantizeOp::create(
          b, quantize.getLoc(), quantize.getResult().getType(),
          /*amax=*/Type(), quantize.getInput(), quantize.getScales(), amax,
          quantize.getSlotAttr(), quantize.getWeight(),
          quantize.getStochasticRounding(), quantize.getSeedAttr(),
          quantize.getFourOverSix());
      quantize.getResult().replaceAllUsesWith(fused.getResult());
      if (Value old = quantize.getAmax())
        old.replaceAllUsesWith(amax);
      quantize.erase();
    }
  }
};

} // namespace
