//===- ForkAmaxUpdate.cpp - te-fork-amax-update -----------------*- C++ -*-===//
//
// Delayed scaling's amax update after the last cast that records one of its
// amaxes, marked te.fork: te-lower-to-runtime calls te_rt_amax_update_fork,
// which in a CUDA graph runs it beside the GEMMs that follow (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEFORKAMAXUPDATEPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// Moves `update` (and the concat `vector` and that concat's constants
/// defined after `after`) to right after `after`, and marks it te.fork;
/// false, leaving everything as it is, when that is not safe.
bool fork(AmaxUpdateOp update) {
  if (!isa<FP8DelayedRecipeAttr>(update.getRecipe()))
    return false;
  Block *block = update->getBlock();
  // Its results only returned: nothing reads them before the entry's end.
  for (Value r : update->getResults())
    for (Operation *user : r.getUsers())
      if (!isa<func::ReturnOp>(user))
        return false;
  // The amax vector: a static concat of this block read only here (its
  // parts are the casts' amax cells, placed in its buffer), or a value
  // read only here.
  Value vector = update.getAmax();
  if (!vector.hasOneUse())
    return false;
  auto concat = vector.getDefiningOp<tensor::ConcatOp>();
  if (vector.getDefiningOp() && vector.getDefiningOp()->getBlock() != block)
    return false;
  if (concat && (concat.getDim() != 0 ||
                 !concat.getResultType().hasStaticShape()))
    return false;
  // Where it goes: after the latest definition of what it reads (the
  // concat's non-constant parts, the state).
  SmallVector<Value> read{update.getAmaxHistory(), update.getScales()};
  SmallVector<Operation *> constants;
  if (concat) {
    for (Value part : concat.getInputs()) {
      Operation *def = part.getDefiningOp();
      if (def && def->getBlock() == block && isa<arith::ConstantOp>(def))
        constants.push_back(def);
      else
        read.push_back(part);
    }
  } else {
    read.push_back(vector);
  }
  Operation *after = fusion::lastDefinition(block, read);
  if (!after)
    return false; // all arguments: nothing to run beside
  // Nothing after its new place may read the state it reads (a copy of the
  // scales for the backward, say): the fork would race with it.
  for (Value state : {update.getAmaxHistory(), update.getScales()})
    for (Operation *user : state.getUsers()) {
      Operation *u = block->findAncestorOpInBlock(*user);
      if (u && u != update.getOperation() && after->isBeforeInBlock(u))
        return false;
    }
  Operation *point = after;
  for (Operation *c : constants)
    if (after->isBeforeInBlock(c)) {
      c->moveAfter(point);
      point = c;
    }
  if (concat && after->isBeforeInBlock(concat)) {
    concat->moveAfter(point);
    point = concat;
  }
  if (point->isBeforeInBlock(update))
    update->moveAfter(point);
  update->setAttr("te.fork", UnitAttr::get(update.getContext()));
  return true;
}

struct TEForkAmaxUpdatePass
    : public te::impl::TEForkAmaxUpdatePassBase<TEForkAmaxUpdatePass> {
  void runOnOperation() override {
    SmallVector<AmaxUpdateOp> updates;
    getOperation().walk([&](AmaxUpdateOp u) { updates.push_back(u); });
    for (AmaxUpdateOp u : updates)
      fork(u);
  }
};

} // namespace
