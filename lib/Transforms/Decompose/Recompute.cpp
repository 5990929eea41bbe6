//===- Recompute.cpp - te-decompose: te.recompute ---------------*- C++ -*-===//
//
// A te.recompute region (the re-run forward of a checkpointed MLP) inlined
// before its users; the module op it re-runs is then decomposed like any
// other, and what its users do not need (FC2) is dead.
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::decompose;

namespace {

struct InlineRecompute : public OpRewritePattern<RecomputeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RecomputeOp op,
                                PatternRewriter &rewriter) const override {
    Block &body = op.getBody().front();
    IRMapping map;
    for (auto [arg, input] : llvm::zip(body.getArguments(), op.getInputs()))
      map.map(arg, input);
    rewriter.setInsertionPoint(op);
    for (Operation &inner : body.without_terminator())
      rewriter.clone(inner, map);
    auto yield = cast<YieldOp>(body.getTerminator());
    SmallVector<Value> results;
    for (Value value : yield.getValues())
      results.push_back(map.lookup(value));
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void decompose::addRecomputePatterns(RewritePatternSet &patterns,
                                     DecomposeState &) {
  patterns.add<InlineRecompute>(patterns.getContext());
}
