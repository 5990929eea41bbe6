//===- TestMemoryPlan.cpp - te-test-memory-plan ------------------*- C++
//-*-===//
//
// Prints the arena plan of every function (lib/Analysis/MemoryPlan) as
// remarks, for test/Analysis/memory-plan.mlir: the arena's slots and bytes
// at the function, and at each op what each tensor result gets: a slot
// (its offset and bytes, the value's live range), a view of another
// buffer (at a byte offset: a concat part placed in the concat's buffer),
// the caller's result buffer, or no buffer. Donation (a backward's saved
// arguments): the arena with every donor donated and the donors at the
// function; a value's donor and the operand it is written over. Loans: the
// result whose buffer backs a value before it is written (and whether only
// when the value fits at the call's dims). Split results: the slot of a
// value's rowwise parts, the result its others are written in.
//
//===----------------------------------------------------------------------===//

#include "te/Analysis/MemoryPlan.h"
#include "te/Analysis/ShapeAnalysis.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;
using namespace mlir::te;

namespace {

/// `n` bytes, or "?" when they depend on the dynamic dims.
std::string staticOrUnknown(std::optional<int64_t> n) {
  return n ? std::to_string(*n) : "?";
}

struct TestMemoryPlanPass
    : public PassWrapper<TestMemoryPlanPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestMemoryPlanPass)

  StringRef getArgument() const final { return "te-test-memory-plan"; }
  StringRef getDescription() const final {
    return "Print the arena plan of each function as remarks (test only)";
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock() ||
        !isa<func::ReturnOp>(func.getBody().front().getTerminator())) {
      func.emitError("te-test-memory-plan: functions must have one block");
      return signalPassFailure();
    }
    MemoryPlan plan;
    if (failed(plan.run(func)))
      return signalPassFailure();
    {
      InFlightDiagnostic remark = func.emitRemark();
      remark << "arena: " << plan.slots.size() << " slots, "
             << staticOrUnknown(plan.arenaBytes) << " bytes";
      if (!plan.donors.empty()) {
        remark << "; " << staticOrUnknown(plan.donatedArenaBytes)
               << " bytes with donors";
        for (BlockArgument d : plan.donors)
          remark << " #" << d.getArgNumber();
      }
    }
    for (Operation &op : func.getBody().front().without_terminator()) {
      for (OpResult result : op.getResults()) {
        if (!shapeOfType(result.getType()))
          continue;
        InFlightDiagnostic remark = op.emitRemark();
        remark << "result #" << result.getResultNumber() << ": ";
        if (Value source = plan.aliasOf.lookup(result)) {
          remark << "a view of ";
          if (auto arg = dyn_cast<BlockArgument>(source))
            remark << "argument #" << arg.getArgNumber();
          else
            remark << "result #" << cast<OpResult>(source).getResultNumber()
                   << " of '" << source.getDefiningOp()->getName() << "'";
          if (int64_t offset = plan.viewOffset.lookup(result))
            remark << " at byte offset " << offset;
        } else if (auto it = plan.inPlaceResult.find(result);
                   it != plan.inPlaceResult.end()) {
          remark << "in place in the function's result #" << it->second;
        } else if (auto it = plan.slotOf.find(result);
                   it != plan.slotOf.end()) {
          auto [def, end] = plan.liveRange.lookup(result);
          remark << "slot " << it->second << " at offset "
                 << staticOrUnknown(plan.slotOffsets[it->second]) << ", "
                 << staticOrUnknown(plan.slotStaticBytes(result))
                 << " bytes, live [" << def << ", " << end << "]";
          if (auto split = plan.splitResult.find(result);
              split != plan.splitResult.end())
            remark << ", its rowwise parts (the others in the function's "
                      "result #"
                   << split->second << ")";
          if (Value over = plan.overwrites.lookup(result))
            remark << ", over operand #"
                   << llvm::find(op.getOperands(), over) -
                          op.getOperands().begin();
          if (BlockArgument d = plan.donorOf.lookup(result))
            remark << ", in argument #" << d.getArgNumber()
                   << " when donated";
          if (auto loan = plan.lenderOf.find(result);
              loan != plan.lenderOf.end())
            remark << ", in the function's result #" << loan->second.result
                   << " before it is written"
                   << (loan->second.conditional ? " when it fits" : "");
        } else if (plan.zeroFilled.contains(result)) {
          remark << "no buffer (only concats read it)";
        } else {
          remark << "no buffer";
        }
      }
    }
  }
};

} // namespace

namespace mlir::te::test {
void registerTestMemoryPlanPass() { PassRegistration<TestMemoryPlanPass>(); }
} // namespace mlir::te::test
