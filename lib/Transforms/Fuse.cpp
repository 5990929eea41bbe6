//===- Fuse.cpp - te-fuse-*: fusions on L2 primitives -----------*- C++ -*-===//
//
// te-fuse-gemm-epilogues: a bias gradient whose gradient a wgrad GEMM also
// reads becomes that GEMM's BGRADB epilogue (TransformerEngine's bf16 path,
// §1.5 step 6, §2.5 steps 5 and 8).
// te-fuse-dbias-dact: an activation derivative followed by the bias gradient
// of its result becomes one dbias+dact kernel (TE's dbias_d<act>, for the
// non-gated activations, §2.5 step 6).
// Each leaves a remark where a candidate cannot be fused, saying why.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEFUSEGEMMEPILOGUESPASS
#define GEN_PASS_DEF_TEFUSEDBIASDACTPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// True when `v` is available just before `point` (same block).
bool availableBefore(Value v, Operation *point) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == point->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == point->getBlock() && def->isBeforeInBlock(point);
}

struct TEFuseGemmEpiloguesPass
    : public te::impl::TEFuseGemmEpiloguesPassBase<TEFuseGemmEpiloguesPass> {
  void runOnOperation() override {
    SmallVector<BiasGradOp> candidates;
    getOperation()->walk([&](BiasGradOp op) { candidates.push_back(op); });
    for (BiasGradOp bgrad : candidates) {
      Value dy = bgrad.getGrad();
      GemmOp wgrad;
      for (Operation *user : dy.getUsers())
        if (auto g = dyn_cast<GemmOp>(user);
            g && g.getLayout() == GemmLayout::NT && g.getLhs() == dy &&
            !g.getBiasGrad() && g->getBlock() == bgrad->getBlock()) {
          wgrad = g;
          break;
        }
      if (!wgrad) {
        bool quantized = llvm::any_of(dy.getUsers(), [](Operation *user) {
          return isa<QuantizeOp>(user);
        });
        bgrad.emitRemark(quantized
                             ? "te-fuse-gemm-epilogues: bias gradient not "
                               "fused: the wgrad GEMM reads the quantized "
                               "gradient (an FP8 GEMM has no bias-gradient "
                               "epilogue; TE sums the high-precision one)"
                             : "te-fuse-gemm-epilogues: bias gradient not "
                               "fused: no wgrad GEMM reads the same "
                               "gradient");
        continue;
      }
      // The fused GEMM goes where the earlier of the two was.
      Operation *point =
          wgrad->isBeforeInBlock(bgrad) ? wgrad.getOperation() : bgrad;
      if (!availableBefore(wgrad.getRhs(), point)) {
        bgrad.emitRemark("te-fuse-gemm-epilogues: bias gradient not fused: "
                         "the wgrad GEMM's input is computed after it");
        continue;
      }
      OpBuilder b(point);
      auto fused = GemmOp::create(b, wgrad.getLoc(), wgrad.getResult().getType(),
                                  bgrad.getType(), wgrad.getLhs(),
                                  wgrad.getRhs(), Value(), GemmLayout::NT);
      wgrad.getResult().replaceAllUsesWith(fused.getResult());
      bgrad.getResult().replaceAllUsesWith(fused.getBiasGrad());
      wgrad.erase();
      bgrad.erase();
    }
  }
};

struct TEFuseDBiasDActPass
    : public te::impl::TEFuseDBiasDActPassBase<TEFuseDBiasDActPass> {
  void runOnOperation() override {
    SmallVector<BiasGradOp> candidates;
    getOperation()->walk([&](BiasGradOp op) { candidates.push_back(op); });
    for (BiasGradOp bgrad : candidates) {
      auto dact = bgrad.getGrad().getDefiningOp<DActOp>();
      if (!dact)
        continue; // not the bias gradient of an activation's input
      if (isGatedActivation(dact.getActivation())) {
        bgrad.emitRemark()
            << "te-fuse-dbias-dact: not fused: gated activation "
            << stringifyActivationKind(dact.getActivation())
            << " has no fused dbias+dact kernel";
        continue;
      }
      OpBuilder b(dact);
      auto fused = DBiasDActOp::create(
          b, dact.getLoc(), dact.getType(), bgrad.getType(), dact.getGrad(),
          dact.getInput(), dact.getActivation(), dact.getLimitAttr(),
          dact.getAlphaAttr(), dact.getGluLinearOffsetAttr());
      bgrad.getResult().replaceAllUsesWith(fused.getBiasGrad());
      dact.getResult().replaceAllUsesWith(fused.getResult());
      bgrad.erase();
      dact.erase();
    }
  }
};

} // namespace
