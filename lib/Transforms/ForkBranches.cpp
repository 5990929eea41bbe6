//===- ForkBranches.cpp - te-fork-branches ----------------------------*- C++ -*-===//
//
// The weight-gradient GEMMs of few static rows (with the columnwise copies
// only they read) and the casts of the weights the GEMMs of few rows read,
// moved to right after their last operand and marked te.branch:
// te-lower-to-runtime brackets each with te_rt_branch_begin / _end, which
// in a CUDA graph runs it beside the chain of ops that follows, and the
// memory plan keeps what it reads and writes until its join (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"

#include "te/Analysis/MemoryPlan.h"
#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEFORKBRANCHESPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// The rows of a GEMM operand (the product of its leading dims), or
/// nullopt when a dim is dynamic.
std::optional<int64_t> staticRows(Value v) {
  ArrayRef<int64_t> shape;
  if (auto q = dyn_cast<QuantizedTensorType>(v.getType()))
    shape = q.getShape();
  else if (auto t = dyn_cast<RankedTensorType>(v.getType()))
    shape = t.getShape();
  else
    return std::nullopt;
  if (shape.empty())
    return std::nullopt;
  int64_t rows = 1;
  for (int64_t d : shape.drop_back()) {
    if (ShapedType::isDynamic(d))
      return std::nullopt;
    rows *= d;
  }
  return rows;
}

/// A wgrad GEMM the pass may move: layout nt, at most maxRows static rows,
/// its results only returned.
bool isBranchable(GemmOp gemm, int64_t maxRows) {
  if (gemm.getLayout() != GemmLayout::NT)
    return false;
  std::optional<int64_t> rows = staticRows(gemm.getLhs());
  if (!rows || *rows > maxRows)
    return false;
  return llvm::all_of(gemm->getResults(), [](Value r) {
    return llvm::all_of(r.getUsers(), [](Operation *user) {
      return isa<func::ReturnOp>(user);
    });
  });
}

/// A weight's cast the pass may move: its quantized weight read only by
/// GEMMs (and returned, a forward's saved weight), at least one GEMM with
/// at most maxRows static rows.
bool isBranchable(QuantizeOp cast, int64_t maxRows) {
  if (!cast.getWeight())
    return false;
  bool small = false;
  for (Operation *user : cast.getResult().getUsers()) {
    if (isa<func::ReturnOp>(user))
      continue;
    auto gemm = dyn_cast<GemmOp>(user);
    if (!gemm)
      return false;
    std::optional<int64_t> rows = staticRows(gemm.getLhs());
    small |= rows && *rows <= maxRows;
  }
  return small;
}

struct TEForkBranchesPass
    : public mlir::te::impl::TEForkBranchesPassBase<TEForkBranchesPass> {
  using TEForkBranchesPassBase::TEForkBranchesPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func.getBody().hasOneBlock())
      return;
    Block &block = func.getBody().front();

    // Each branchable GEMM with the columnwise copies only it reads.
    SmallVector<SmallVector<Operation *>> groups;
    for (Operation &op : block) {
      if (auto cast = dyn_cast<QuantizeOp>(op);
          cast && isBranchable(cast, maxRows)) {
        groups.push_back({cast});
        continue;
      }
      auto gemm = dyn_cast<GemmOp>(op);
      if (!gemm || !isBranchable(gemm, maxRows))
        continue;
      SmallVector<Operation *> group;
      for (Value operand : {gemm.getLhs(), gemm.getRhs()}) {
        auto copy = operand.getDefiningOp<AddColumnwiseOp>();
        if (copy && copy->getBlock() == &block && copy->hasOneUse())
          group.push_back(copy);
      }
      llvm::sort(group, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      group.push_back(gemm);
      groups.push_back(std::move(group));
    }

    llvm::SmallPtrSet<Operation *, 8> grouped;
    for (auto &group : groups)
      grouped.insert(group.begin(), group.end());
    llvm::DenseMap<Operation *, Operation *> lastMoved;
    for (auto &group : groups) {
      // Right after the last op outside the group that defines one of its
      // operands (the block's start when none does).
      SmallVector<Value> read;
      for (Operation *op : group)
        for (Value v : op->getOperands())
          if (!llvm::is_contained(group, v.getDefiningOp()))
            read.push_back(v);
      Operation *anchor = fusion::lastDefinition(&block, read);
      // Something to run beside: an op of the dialect after the group's
      // new place, in no group (a function of wgrads only, such as
      // te-split-wgrad's, keeps its order).
      Operation *first = anchor ? anchor->getNextNode() : &block.front();
      bool overlaps = false;
      for (Operation *op = first; op && !overlaps; op = op->getNextNode())
        overlaps = !grouped.contains(op) && isa<TEDialect>(op->getDialect());
      if (!overlaps)
        continue;
      // (After the groups already moved behind the same anchor: the
      // groups keep their order.)
      Operation *&after = lastMoved[anchor];
      if (!after)
        after = anchor;
      for (Operation *op : group) {
        if (after)
          op->moveAfter(after);
        else
          op->moveBefore(&block.front());
        op->setAttr(kBranchAttrName, UnitAttr::get(&getContext()));
        after = op;
      }
    }
  }
};

} // namespace
