//===- Decompose.cpp - te-decompose: module ops to primitives ---*- C++ -*-===//
//
// Rewrites module ops, their backward ops and te.recompute regions into the
// L2 primitives in TransformerEngine's kernel order (reference §1.3, §1.5,
// §2.3, §2.5): norm, GEMMs in TN/NN/NT, activation and its derivative, bias
// gradients. te.saved intermediates become the primitive values that compute
// them. The per-tensor FP8 recipes, Float8 block scaling and MXFP8 quantize
// GEMM operands with te.quantize (reference §0.1, §0.2, §4.3, §4.4); so
// does NVFP4 (§4.5: 16x16 weight blocks, the Hadamard transform on wgrad
// copies, stochastic rounding of gradients), except row-scaled NVFP4.
// One pattern per op in Decompose/; this file applies them, once per op in
// program order (te.recompute regions first), and removes what is dead.
//
//===----------------------------------------------------------------------===//

#include "Decompose/Decomposer.h"
#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Passes.h"
#include "te/Transforms/Patterns.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Rewrite/PatternApplicator.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEDECOMPOSEPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

void mlir::te::populateTEDecomposePatterns(RewritePatternSet &patterns,
                                           DecomposeState &state) {
  decompose::addRecomputePatterns(patterns, state);
  decompose::addLayerNormLinearPatterns(patterns, state);
  decompose::addLayerNormMLPPatterns(patterns, state);
  decompose::addLinearPatterns(patterns, state);
  decompose::addNormalizationPatterns(patterns, state);
}

namespace {

/// Applies `patterns` once to each op of `func` they are rooted on, in
/// program order: te.recompute regions first (their module ops are then
/// decomposed where they were inlined), then the module and backward ops.
/// (A greedy driver would revisit the users of each replaced op first:
/// another order of the stochastic-rounding seeds and of the remarks.)
LogicalResult applyInOrder(func::FuncOp func,
                           const FrozenRewritePatternSet &patterns) {
  PatternApplicator applicator(patterns);
  applicator.applyDefaultCostModel();
  PatternRewriter rewriter(func.getContext());
  auto apply = [&](ArrayRef<Operation *> ops) {
    for (Operation *op : ops)
      if (failed(applicator.matchAndRewrite(op, rewriter)))
        return failure();
    return success();
  };
  SmallVector<Operation *> recomputes;
  func.walk([&](RecomputeOp op) { recomputes.push_back(op); });
  if (failed(apply(recomputes)))
    return failure();
  const auto &roots = patterns.getOpSpecificNativePatterns();
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (roots.count(op->getName()))
      ops.push_back(op);
  });
  return apply(ops);
}

/// Erases what recomputation does not need (FC2 of a recomputed MLP).
void eraseDeadOps(func::FuncOp func) {
  bool changed = true;
  while (changed) {
    changed = false;
    func.walk<WalkOrder::PostOrder>([&](Operation *op) {
      if (op != func && op->use_empty() && isMemoryEffectFree(op) &&
          !op->hasTrait<OpTrait::IsTerminator>() && !isa<func::FuncOp>(op)) {
        op->erase();
        changed = true;
        return WalkResult::skip();
      }
      return WalkResult::advance();
    });
  }
}

struct TEDecomposePass
    : public te::impl::TEDecomposePassBase<TEDecomposePass> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<TargetArch> target;
    if (arch.isValid())
      target = *arch;
    if (!target) {
      getOperation().emitError() << "te-decompose: unknown arch '"
                                 << arch.spelling()
                                 << "' (hopper or blackwell)";
      return signalPassFailure();
    }
    // A recipe that falls back is said without --remarks: the user asked
    // for it.
    // (Once per source op: --train copies module ops into the forward, a
    // recompute region and the weight-cache entry.)
    bool fellBack = false;
    llvm::DenseSet<Location> said;
    getOperation().walk([&](ModuleOpInterface op) {
      ModuleDescription desc = op.describe(DescribeOptions());
      if (desc.fallback.empty() || !said.insert(op->getLoc()).second)
        return;
      fellBack = true;
      (strictRecipe ? op->emitError() : op->emitWarning())
          << "te-decompose: " << desc.fallback
          << (strictRecipe ? "" : " (strict-recipe makes this an error)");
    });
    if (strictRecipe && fellBack)
      return signalPassFailure();
    DecomposeState state{*target};
    RewritePatternSet set(&getContext());
    populateTEDecomposePatterns(set, state);
    FrozenRewritePatternSet patterns(std::move(set));
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      state.nextSeed = 0;
      if (failed(applyInOrder(func, patterns)))
        return signalPassFailure();
      eraseDeadOps(func);
    }
  }
};

} // namespace
