//===- Outline.cpp - te-outline-raised --------------------------*- C++ -*-===//
//
// Implements --te-outline-raised: in a function te-import-torch raised in
// part, each te module op (with the builtin-tensor ops feeding only it)
// moves into a function of its own on builtin tensors, called in its place.
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/Passes.h"
#include "te/Conversion/TorchConversion.h"
#include "te/Dialect/TE/IR/TEOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEOUTLINERAISEDPASS
#include "te/Conversion/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

bool isTorch(Type t) { return t.getDialect().getNamespace() == "torch"; }

/// True when the function still has torch ops or torch types.
bool hasTorch(func::FuncOp func) {
  if (llvm::any_of(func.getArgumentTypes(), isTorch) ||
      llvm::any_of(func.getResultTypes(), isTorch))
    return true;
  return func
      .walk([&](Operation *op) {
        StringRef ns = op->getName().getDialectNamespace();
        if (ns == "torch" || ns == "torch_c" ||
            llvm::any_of(op->getResultTypes(), isTorch))
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

bool isModuleOp(Operation *op) {
  return isa<LayerNormLinearOp, LayerNormMLPOp, LinearOp>(op);
}

/// May `op` move into the outlined function of a module op?
bool isMovable(Operation *op, Block *block) {
  if (op->getBlock() != block || !op->isRegistered() || isModuleOp(op) ||
      torch_c::isBridge(op) || op->getNumResults() == 0 ||
      !isMemoryEffectFree(op) || llvm::any_of(op->getResultTypes(), isTorch) ||
      llvm::any_of(op->getOperandTypes(), isTorch))
    return false;
  // Regions must not read values from outside the op.
  for (Region &region : op->getRegions()) {
    llvm::SetVector<Value> above;
    getUsedValuesDefinedAbove(region, above);
    if (!above.empty())
      return false;
  }
  return true;
}

struct TEOutlineRaisedPass
    : public mlir::te::impl::TEOutlineRaisedPassBase<TEOutlineRaisedPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs) {
      if (func.isExternal() || !hasTorch(func))
        continue;
      SmallVector<Operation *> modules;
      func.walk([&](Operation *op) {
        if (isModuleOp(op))
          modules.push_back(op);
      });
      llvm::StringMap<int> next;
      Operation *insertAfter = func;
      for (Operation *op : modules) {
        if (failed(outline(op, func, symbols, next, insertAfter)))
          return signalPassFailure();
      }
    }
  }

  LogicalResult outline(Operation *op, func::FuncOp func, SymbolTable &symbols,
                        llvm::StringMap<int> &next, Operation *&insertAfter) {
    Block *block = op->getBlock();
    if (block->getParentOp() != func)
      return op->emitError("te-outline-raised: a te module op must be in the "
                           "body of its function, not in a nested region");
    // The ops that move: builtin-tensor producers whose every user moves
    // too; constants are cloned (and stay where other ops read them).
    llvm::SetVector<Operation *> candidates;
    SmallVector<Operation *> worklist = {op};
    while (!worklist.empty()) {
      Operation *cur = worklist.pop_back_val();
      for (Value v : cur->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && !candidates.contains(def) && isMovable(def, block)) {
          candidates.insert(def);
          worklist.push_back(def);
        }
      }
    }
    bool changed = true;
    while (changed) {
      changed = false;
      for (Operation *c : llvm::make_early_inc_range(candidates)) {
        if (c->hasTrait<OpTrait::ConstantLike>())
          continue;
        bool outside = llvm::any_of(c->getUsers(), [&](Operation *user) {
          return user != op && !candidates.contains(user);
        });
        if (outside) {
          candidates.remove(c);
          changed = true;
        }
      }
    }
    // Drop candidates no longer reachable from `op` through moved ops.
    llvm::SetVector<Operation *> moved;
    worklist = {op};
    while (!worklist.empty()) {
      Operation *cur = worklist.pop_back_val();
      for (Value v : cur->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && candidates.contains(def) && moved.insert(def))
          worklist.push_back(def);
    }

    // Arguments: the values from outside, depth first in operand order.
    llvm::SetVector<Value> args;
    std::function<void(Operation *)> collect = [&](Operation *cur) {
      for (Value v : cur->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && moved.contains(def))
          collect(def);
        else
          args.insert(v);
      }
    };
    collect(op);

    // The function, after `func` (and the ones outlined before).
    StringRef kind = op->getName().stripDialect();
    std::string name;
    do {
      name = (func.getName() + "_" + kind + "_" + Twine(next[kind]++)).str();
    } while (symbols.lookup(name));
    SmallVector<Type> argTypes;
    for (Value v : args)
      argTypes.push_back(v.getType());
    auto type =
        FunctionType::get(op->getContext(), argTypes, op->getResultTypes());
    OpBuilder builder(op->getContext());
    builder.setInsertionPointAfter(insertAfter);
    auto outlined = func::FuncOp::create(builder, op->getLoc(), name, type);
    symbols.insert(outlined, builder.getInsertionPoint());
    insertAfter = outlined;
    Block *body = outlined.addEntryBlock();
    IRMapping mapping;
    for (auto [v, arg] : llvm::zip(args, body->getArguments()))
      mapping.map(v, arg);
    builder.setInsertionPointToStart(body);
    SmallVector<Operation *> ordered(moved.begin(), moved.end());
    llvm::sort(ordered, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    for (Operation *m : ordered)
      builder.clone(*m, mapping);
    Operation *clone = builder.clone(*op, mapping);
    func::ReturnOp::create(builder, op->getLoc(), clone->getResults());

    // The call in its place.
    builder.setInsertionPoint(op);
    auto call = func::CallOp::create(builder, op->getLoc(), outlined,
                                     args.getArrayRef());
    op->replaceAllUsesWith(call.getResults());
    op->erase();
    for (Operation *m : llvm::reverse(ordered))
      if (m->use_empty())
        m->erase();
    return success();
  }
};

} // namespace
