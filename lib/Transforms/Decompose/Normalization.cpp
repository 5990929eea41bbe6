//===- Normalization.cpp - te-decompose: te.normalization -------*- C++ -*-===//
//
// te.normalization and its backward: one norm forward (the norm of the
// LayerNorm* ops, high precision under every recipe) and one norm backward
// (dx, dgamma and, with a beta, dbeta), TE's LayerNorm / RMSNorm modules.
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::decompose;

namespace {

struct DecomposeNormalization : public OpRewritePattern<NormalizationOp> {
  DecomposeNormalization(MLIRContext *ctx, DecomposeState &state)
      : OpRewritePattern(ctx), state(state) {}

  LogicalResult matchAndRewrite(NormalizationOp op,
                                PatternRewriter &rewriter) const override {
    Decomposer d(rewriter, state);
    rewriter.setInsertionPoint(op);
    Decomposer::Norm n =
        d.norm(op.getLoc(), op.getInput(), op.getLnWeight(), op.getLnBias(),
               op.getNormalization(), op.getEps(), op.getZeroCenteredGamma());
    llvm::StringMap<Value> saved = {{"rsigma", n.rsigma}, {"mu", n.mu}};
    return d.finishForward(op, saved, /*amaxes=*/{}, n.out);
  }

  DecomposeState &state;
};

struct DecomposeNormalizationBwd : public OpRewritePattern<NormalizationBwdOp> {
  DecomposeNormalizationBwd(MLIRContext *ctx, DecomposeState &state)
      : OpRewritePattern(ctx), state(state) {}

  LogicalResult matchAndRewrite(NormalizationBwdOp op,
                                PatternRewriter &rewriter) const override {
    Decomposer d(rewriter, state);
    rewriter.setInsertionPoint(op);
    auto nb = NormBwdOp::create(
        rewriter, op.getLoc(), op->getResultTypes(), op.getGradOutput(),
        op.getInput(), op.getLnWeight(), op.getRsigma(), op.getMu(),
        op.getNormalization(), op.getZeroCenteredGamma(), op.getWithLnBias());
    return d.finishBackward(op, /*amaxes=*/{}, nb->getResults());
  }

  DecomposeState &state;
};

} // namespace

void decompose::addNormalizationPatterns(RewritePatternSet &patterns,
                                         DecomposeState &state) {
  patterns.add<DecomposeNormalization, DecomposeNormalizationBwd>(
      patterns.getContext(), state);
}
