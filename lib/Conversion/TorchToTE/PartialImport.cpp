//===- PartialImport.cpp - te-import-torch in part --------------*- C++ -*-===//
//
// The partial import of a function not recognized as a whole: each
// recognized block becomes its te op in place, its operands bridged with
// torch_c ops, and every op left gets a remark saying why.
//
//===----------------------------------------------------------------------===//

#include "ImportTorchInternal.h"
#include "te/Conversion/TorchConversion.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::torch_import;

std::string FunctionImporter::cannotBridge(Value v) {
  auto vt = dyn_cast<tt::ValueTensorType>(v.getType());
  RankedTensorType builtin = vt ? vt.toBuiltinTensor() : RankedTensorType();
  if (!builtin ||
      !isa<Float32Type, BFloat16Type, Float16Type>(builtin.getElementType())) {
    std::string why;
    llvm::raw_string_ostream os(why);
    os << "an operand of type " << v.getType()
       << " cannot be passed to a te op (it needs a !torch.vtensor with known "
          "sizes and an f32, bf16 or f16 dtype)";
    return why;
  }
  return "";
}

FailureOr<Value> FunctionImporter::bridge(Value v) {
  if (Value mapped = mapping.lookupOrNull(v))
    return mapped;
  std::string why = cannotBridge(v);
  if (!why.empty()) {
    lastWhy = why;
    return failure();
  }
  OpBuilder::InsertionGuard guard(builder);
  Operation *def = v.getDefiningOp();
  if (def)
    builder.setInsertionPointAfter(def);
  else if (lastArgBridge)
    builder.setInsertionPointAfter(lastArgBridge);
  else
    builder.setInsertionPointToStart(cast<BlockArgument>(v).getOwner());
  Location loc = def ? def->getLoc() : func.getLoc();
  Value result;
  if (isA(def, "torch.vtensor.literal")) {
    // A frozen weight: the same dense value as a builtin constant.
    result = literalConstant(def, builtinType(v.getType()));
  } else if (isA(def, "torch.aten.t") && rankOf(def->getOperand(0)) == 2 &&
             cannotBridge(def->getOperand(0)).empty()) {
    // A transposed weight (GPT-2's Conv1D stores [in, out]): the transpose
    // moves with the module.
    FailureOr<Value> w = bridge(def->getOperand(0));
    if (failed(w))
      return failure();
    result = transposeWeight(loc, *w);
  }
  if (!result) {
    result = torch_c::createToBuiltinTensor(builder, loc, v,
                                            builtinType(v.getType()));
    if (!def)
      lastArgBridge = result.getDefiningOp(); // arguments' bridges in order
  }
  mapping.map(v, result);
  return result;
}

void FunctionImporter::leave(ArrayRef<Operation *> ops, const Twine &why) {
  for (Operation *op : ops)
    leftWhy.try_emplace(op, why.str());
}

bool FunctionImporter::replaceOutputs(ArrayRef<Operation *> ops) {
  for (auto [torchValue, teValue] : emitted)
    if (teValue.getType() != builtinType(torchValue.getType())) {
      std::string why;
      llvm::raw_string_ostream os(why);
      os << "the te op's result type " << teValue.getType()
         << " differs from the torch result's " << torchValue.getType();
      lastWhy = why;
      return false;
    }
  for (auto [torchValue, teValue] : emitted) {
    mapping.erase(torchValue);
    if (torchValue.use_empty())
      continue;
    builder.setInsertionPointAfter(teValue.getDefiningOp());
    Value from = torch_c::createFromBuiltinTensor(
        builder, teValue.getLoc(), teValue, torchValue.getType());
    torchValue.replaceAllUsesWith(from);
    mapping.map(from, teValue);
  }
  // The module's torch ops, last first.
  SmallVector<Operation *> sorted(ops.begin(), ops.end());
  llvm::sort(sorted,
             [](Operation *a, Operation *b) { return b->isBeforeInBlock(a); });
  sorted.erase(llvm::unique(sorted), sorted.end());
  for (Operation *op : sorted) {
    for (Value r : op->getResults())
      mapping.erase(r);
    if (op->use_empty())
      op->erase();
  }
  return true;
}

void FunctionImporter::raiseGroup(Group &g) {
  llvm::SmallPtrSet<Operation *, 16> inGroup(g.ops.begin(), g.ops.end());
  Operation *last = g.kind == Group::NormMLP ? g.fc2.op : g.fc1.op;
  // The values the te op reads must be bridgeable; the module's
  // intermediates must stay inside it; its outputs must be read after it.
  SmallVector<Value> inputs = {g.norm.op ? g.norm.input : g.fc1.input,
                               g.norm.gamma,
                               g.norm.beta,
                               g.fc1.weight,
                               g.fc1.bias,
                               g.fc1b.weight,
                               g.fc1b.bias,
                               g.fc2.weight,
                               g.fc2.bias};
  for (Value v : inputs) {
    if (!v)
      continue;
    std::string why = cannotBridge(v);
    if (!why.empty())
      return leave(g.ops, why);
  }
  for (Operation *op : g.ops)
    for (Value r : op->getResults()) {
      bool output =
          r == last->getResult(0) || (g.returnsNorm && r == g.normResult);
      for (Operation *user : r.getUsers()) {
        if (inGroup.contains(user))
          continue;
        if (!output)
          return leave(g.ops, "an intermediate value of the module ('" +
                                  op->getName().getStringRef() +
                                  "') is also used outside it");
        if (user->isBeforeInBlock(g.anchor))
          return leave(g.ops, "an output of the module is used before the "
                              "module's last op");
      }
    }
  builder.setInsertionPoint(g.anchor);
  emitted.clear();
  if (failed(emitGroup(g)))
    return leave(g.ops, lastWhy);
  Operation *created = emitted.front().second.getDefiningOp();
  if (!replaceOutputs(g.ops)) {
    created->erase();
    return leave(g.ops, lastWhy);
  }
}

void FunctionImporter::raiseLinear(Operation *op, const LinearMatch &lin) {
  for (Value v : {lin.input, lin.weight, lin.bias}) {
    if (!v)
      continue;
    std::string why = cannotBridge(v);
    if (!why.empty())
      return leave(op, why);
  }
  // The operands are bridged before `op` (bridge keeps the insertion
  // point), the te.linear emitted there.
  builder.setInsertionPoint(op);
  FailureOr<Value> result = emitLinear(op, lin);
  if (failed(result))
    return leave(op, lastWhy);
  emitted.assign({{op->getResult(0), *result}});
  if (!replaceOutputs(op)) {
    result->getDefiningOp()->erase();
    return leave(op, lastWhy);
  }
}

void FunctionImporter::eraseDeadBridges() {
  Block &body = func.getBody().front();
  bool erased = true;
  while (erased) {
    erased = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body))) {
      if (!op.use_empty() || op.getNumResults() == 0)
        continue;
      bool dead = torch_c::isBridge(&op) ||
                  (isBookkeeping(&op) && op.getName().getStringRef() !=
                                             "torch.bind_symbolic_shape") ||
                  isA(&op, "torch.aten.t") ||
                  (op.isRegistered() && wouldOpBeTriviallyDead(&op));
      if (dead) {
        op.erase();
        erased = true;
      }
    }
  }
}

void FunctionImporter::remarkLeftOps() {
  for (Operation &op : func.getBody().front()) {
    StringRef ns = op.getName().getDialectNamespace();
    if (ns != "torch" || isBookkeeping(&op))
      continue;
    auto it = leftWhy.find(&op);
    std::string why =
        it != leftWhy.end() ? it->second : explainUnraised(&op);
    op.emitRemark() << "te-import-torch: left '" << op.getName() << "' as is: "
                    << (why.empty() ? "not part of a recognized module"
                                    : StringRef(why));
  }
}

LogicalResult FunctionImporter::runPartial() {
  if (!func.getBody().hasOneBlock()) {
    func.emitRemark("te-import-torch: left the function as is: functions must "
                    "have one block");
    return success();
  }
  if (failed(verifyTorchSignatures(func)))
    return failure();
  recomposeDecomposedForms(func);
  if (failed(findGroups()))
    return failure();
  // Program order; raising erases ops at or before the one it visits.
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front())
    ops.push_back(&op);
  llvm::DenseSet<Operation *> erased;
  for (Operation *op : ops) {
    if (auto it = anchors.find(op); it != anchors.end()) {
      for (Operation *o : it->second->ops)
        erased.insert(o);
      raiseGroup(*it->second);
      continue;
    }
    if (consumed.contains(op) || erased.contains(op))
      continue;
    if (std::optional<LinearMatch> lin = matchLinear(op)) {
      erased.insert(op);
      raiseLinear(op, *lin);
    }
  }
  eraseDeadBridges();
  remarkLeftOps();
  return success();
}
