//===- Fusion.h - What the te-fuse-* passes share ---------------*- C++ -*-===//
//
// The remark emitter of the fusion passes (one numbering of a function per
// change, not per remark) and small def-use helpers.
//
// Every pass is linear in the size of the function: one walk collects the
// candidates, each is decided from its own def-use edges, and the remarks
// print their operation (the context's printOpOnDiagnostic note) with names
// numbered once per function, again only after a fusion changed it
// (RemarkEmitter), where Operation::emitRemark numbers the whole function
// for every remark.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_TRANSFORMS_FUSION_H
#define TE_LIB_TRANSFORMS_FUSION_H

#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"

#include <memory>

namespace mlir::te::fusion {

/// Emits the fusion passes' remarks, as `op->emitRemark()` does (the remark
/// at the op's location and, when the context prints operations on
/// diagnostics, the note "see current operation: <op>"), but numbers the
/// names of the op's function once, and again only after `changed()`: a
/// fresh numbering per remark is a walk over the whole function, quadratic
/// over a model of many layers. The text is the same: the same AsmState
/// root (the closest isolated-from-above ancestor) and printing flags.
class RemarkEmitter {
public:
  /// `pass` names the pass in the work report; `report` (its report-work
  /// option) asks for it.
  RemarkEmitter(Operation *anchor, StringRef pass, bool report)
      : anchor(anchor), pass(pass), report(report) {}
  /// The work report (report-work): a remark at the pass's anchor.
  ~RemarkEmitter() {
    if (report)
      mlir::emitRemark(anchor->getLoc())
          << pass << ": work: " << candidates << " candidates, " << remarks
          << " remarks, " << numbered
          << " operations numbered for the remarks";
  }

  /// Counts a candidate the pass looks at.
  void candidate() { ++candidates; }

  InFlightDiagnostic operator()(Operation *op) {
    ++remarks;
    InFlightDiagnostic diag = mlir::emitRemark(op->getLoc());
    if (!op->getContext()->shouldPrintOpOnDiagnostic())
      return diag;
    Operation *root = op;
    while (Operation *parent = root->getParentOp()) {
      root = parent;
      if (parent->hasTrait<OpTrait::IsIsolatedFromAbove>())
        break;
    }
    if (!state || root != stateRoot) {
      OpPrintingFlags flags;
      flags.elideLargeElementsAttrs();
      state = std::make_unique<AsmState>(root, flags);
      stateRoot = root;
      root->walk([&](Operation *) { ++numbered; });
    }
    std::string text;
    llvm::raw_string_ostream os(text);
    op->print(os, *state);
    Diagnostic &note = diag.attachNote(op->getLoc());
    note << "see current operation: ";
    if (StringRef(text).contains('\n'))
      note << "\n";
    note << text;
    return diag;
  }
  /// The IR changed: number the function again before the next remark.
  void changed() { state.reset(); }

private:
  Operation *anchor;
  StringRef pass;
  bool report;
  int64_t candidates = 0, remarks = 0, numbered = 0;
  std::unique_ptr<AsmState> state;
  Operation *stateRoot = nullptr;
};

/// True when `v` is available just before `point` (same block).
inline bool availableBefore(Value v, Operation *point) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == point->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == point->getBlock() && def->isBeforeInBlock(point);
}

/// The latest op of `block` among the definitions of `values` (null when
/// all are block arguments or defined outside the block): where ops that
/// read `values` can move up to (te-fork-amax-update, te-fork-branches).
inline Operation *lastDefinition(Block *block, ValueRange values) {
  Operation *last = nullptr;
  for (Value v : values) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != block)
      continue;
    if (!last || last->isBeforeInBlock(def))
      last = def;
  }
  return last;
}

/// True when `v` is a high-precision tensor (not a `!te.qtensor`).
inline bool highPrecision(Value v) { return isa<RankedTensorType>(v.getType()); }

} // namespace mlir::te::fusion

#endif // TE_LIB_TRANSFORMS_FUSION_H
