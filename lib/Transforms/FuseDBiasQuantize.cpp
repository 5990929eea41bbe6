//===- FuseDBiasQuantize.cpp - te-fuse-dbias-quantize -----------*- C++ -*-===//
//
// The bias gradient of a tensor that is also cast to per-tensor FP8 comes
// out of that cast's pass over it (TE's cast_transpose_dbias): a
// te.bias_grad and a te.quantize of the same value become te.dbias_quantize.
// Leaves a remark on every bias gradient it does not fuse, saying why.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"
#include "te/Transforms/Passes.h"

#include "mlir/Pass/Pass.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEFUSEDBIASQUANTIZEPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::fusion;

namespace {

/// True when every use of `op`'s results is after `point` (same block as
/// `op`; uses in nested regions count at their ancestor in that block).
bool usedOnlyAfter(Operation *op, Operation *point) {
  for (Value r : op->getResults())
    for (Operation *user : r.getUsers()) {
      Operation *u = point->getBlock()->findAncestorOpInBlock(*user);
      if (!u || !point->isBeforeInBlock(u))
        return false;
    }
  return true;
}

/// Why `quantize` (a reader of the bias gradient's input) cannot take the
/// bias gradient; empty when it can.
std::string whyNotFusable(QuantizeOp quantize, BiasGradOp bgrad) {
  std::string why;
  llvm::raw_string_ostream os(why);
  auto q = cast<QuantizedTensorType>(quantize.getResult().getType());
  RecipeAttrInterface recipe = q.getRecipe();
  if (!isa<FP8DelayedRecipeAttr, FP8CurrentRecipeAttr>(recipe))
    os << "the quantization is " << recipe.getRecipeName()
       << ", which scales blocks (only the per-tensor FP8 cast sums the "
          "columns as it goes)";
  else if (Value in = quantize.getAmaxIn())
    os << "the quantization takes its amax from "
       << (in.getDefiningOp() ? in.getDefiningOp()->getName().getStringRef()
                              : StringRef("an argument"))
       << " (te-fuse-quantize-amax)";
  else if (quantize->getBlock() != bgrad->getBlock())
    os << "the quantization is in another block";
  return why;
}

struct TEFuseDBiasQuantizePass
    : public te::impl::TEFuseDBiasQuantizePassBase<TEFuseDBiasQuantizePass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<BiasGradOp> candidates;
    getOperation()->walk([&](BiasGradOp op) { candidates.push_back(op); });
    RemarkEmitter remark(getOperation(), "te-fuse-dbias-quantize", reportWork);
    for (BiasGradOp bgrad : candidates) {
      remark.candidate();
      Value x = bgrad.getGrad();
      // The first quantization of x that can take the bias gradient; else
      // the reason the first one cannot.
      QuantizeOp quantize;
      std::string why;
      for (Operation *user : x.getUsers()) {
        auto qz = dyn_cast<QuantizeOp>(user);
        if (!qz)
          continue;
        std::string w = whyNotFusable(qz, bgrad);
        if (w.empty()) {
          if (!quantize || qz->isBeforeInBlock(quantize))
            quantize = qz;
        } else if (why.empty()) {
          why = w;
        }
      }
      if (!quantize) {
        remark(bgrad) << "te-fuse-dbias-quantize: bias gradient not fused: "
                      << (why.empty() ? "no te.quantize reads the same value"
                                      : why);
        continue;
      }
      // The fused op goes where the earlier of the two was. The scales are
      // an operand of the quantization, so only a bias gradient before it
      // can precede them; the fused op then goes at the quantization, where
      // the bias gradient must not have been read yet.
      Operation *point =
          quantize->isBeforeInBlock(bgrad) ? quantize.getOperation() : bgrad;
      if (Value scales = quantize.getScales();
          point == bgrad.getOperation() && scales &&
          !availableBefore(scales, bgrad)) {
        if (!usedOnlyAfter(bgrad, quantize)) {
          remark(bgrad) << "te-fuse-dbias-quantize: bias gradient not fused: "
                           "the bias gradient is read before the "
                           "quantization's scales are computed";
          continue;
        }
        point = quantize;
      }
      OpBuilder b(point);
      auto fused = DBiasQuantizeOp::create(
          b, quantize.getLoc(), quantize.getResult().getType(),
          quantize.getAmax().getType(), bgrad.getType(), x,
          quantize.getScales(), quantize.getSlotAttr());
      quantize.getResult().replaceAllUsesWith(fused.getResult());
      quantize.getAmax().replaceAllUsesWith(fused.getAmax());
      bgrad.getResult().replaceAllUsesWith(fused.getBiasGrad());
      quantize.erase();
      bgrad.erase();
      remark.changed();
    }
  }
};

} // namespace
