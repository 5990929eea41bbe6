//===- Outlining.cpp - dedup-layers: repeated layers compiled once --*- C++ -*-===//
//
// Cuts a body into segments (runs of ops of one location), outlines those
// that repeat into shared noinline functions, and rematerializes the
// entry's buffer addresses where they are read.
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"

#include "llvm/ADT/ScopeExit.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::runtime_lowering {

namespace {

/// Segments of fewer ops are not outlined (a call and its status check
/// would cost about what they save).
constexpr size_t kMinSegmentOps = 2;

/// A hash of the ops of `ops` (in order) that ignores locations and names
/// each value by where it is defined: by an op of `ops` (its position), or
/// outside (its first use among the operands, and its type). Segments with
/// equal hashes (almost always) lower to the same code.
unsigned segmentKey(ArrayRef<Operation *> ops) {
  llvm::DenseMap<Value, unsigned> ids;
  unsigned next = 0, nextOutside = 0;
  llvm::hash_code hash = llvm::hash_value(ops.size());
  for (Operation *op : ops) {
    for (Value v : op->getOperands())
      if (!ids.count(v)) {
        ids[v] = next++;
        hash = llvm::hash_combine(hash, nextOutside++, v.getType());
      }
    hash = llvm::hash_combine(
        hash, OperationEquivalence::computeHash(
                  op,
                  [&](Value v) { return llvm::hash_value(ids.lookup(v)); },
                  OperationEquivalence::ignoreHashValue,
                  OperationEquivalence::IgnoreLocations));
    for (Value r : op->getResults())
      ids[r] = next++;
  }
  return hash;
}

/// The same over an outlined function's body, blocks and successors too.
unsigned bodyKey(LLVM::LLVMFuncOp f) {
  llvm::DenseMap<Value, unsigned> ids;
  llvm::DenseMap<Block *, unsigned> blocks;
  for (Block &block : f.getBody())
    blocks[&block] = blocks.size();
  unsigned next = 0;
  llvm::hash_code hash = llvm::hash_value(f.getBody().getBlocks().size());
  for (Block &block : f.getBody()) {
    for (BlockArgument arg : block.getArguments()) {
      ids[arg] = next++;
      hash = llvm::hash_combine(hash, arg.getType());
    }
    for (Operation &op : block) {
      hash = llvm::hash_combine(
          hash, OperationEquivalence::computeHash(
                    &op,
                    [&](Value v) { return llvm::hash_value(ids.lookup(v)); },
                    OperationEquivalence::ignoreHashValue,
                    OperationEquivalence::IgnoreLocations));
      for (Block *succ : op.getSuccessors())
        hash = llvm::hash_combine(hash, blocks.lookup(succ));
      for (Value r : op.getResults())
        ids[r] = next++;
    }
  }
  return hash;
}

} // namespace

LogicalResult FunctionLowering::lowerBody() {
  Block &block = func.getBody().front();
  if (segments.mode == DedupLayers::Off) {
    for (Operation &op : block.without_terminator())
      if (failed(lowerOp(&op)))
        return failure();
    return success();
  }
  // Segments: maximal runs of ops with the same location.
  SmallVector<SmallVector<Operation *>> runs;
  for (Operation &op : block.without_terminator()) {
    if (runs.empty() || runs.back().front()->getLoc() != op.getLoc())
      runs.emplace_back();
    runs.back().push_back(&op);
  }
  // Under auto, only those whose ops repeat in this function.
  SmallVector<unsigned> keys;
  llvm::DenseMap<unsigned, unsigned> count;
  if (segments.mode == DedupLayers::Auto)
    for (auto &run : runs) {
      keys.push_back(run.size() >= kMinSegmentOps ? segmentKey(run) : 0);
      ++count[keys.back()];
    }
  for (auto [i, run] : llvm::enumerate(runs)) {
    bool outline = run.size() >= kMinSegmentOps &&
                   (segments.mode == DedupLayers::On || count.lookup(keys[i]) > 1);
    if (outline) {
      if (failed(lowerOutlined(run)))
        return failure();
      continue;
    }
    for (Operation *op : run)
      if (failed(lowerOp(op)))
        return failure();
  }
  return success();
}

LogicalResult FunctionLowering::lowerOutlined(ArrayRef<Operation *> ops) {
  Location segmentLoc = ops.front()->getLoc();
  // A segment runs in order (a repeat calls the same function, whatever
  // is pending then): what is open or pending ends and joins first.
  loc = segmentLoc;
  closeBranches();
  branchesOff = true;
  llvm::scope_exit inOrder([&] { branchesOff = false; });
  Block *callerBlock = b.getInsertionBlock();
  Block::iterator callerPoint = b.getInsertionPoint();
  Block *callerFail = failBlock;

  // The segment's calls, into a function of its own: they read the
  // entry's values (buffers, dims, the context) for now.
  b.setInsertionPoint(entry);
  auto fn = LLVM::LLVMFuncOp::create(b, segmentLoc, "te_segment",
                                     LLVM::LLVMFunctionType::get(i32(), {}),
                                     LLVM::Linkage::Internal);
  Block *body = fn.addEntryBlock(b);
  failBlock = new Block();
  fn.getBody().push_back(failBlock);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(failBlock);
    LLVM::ReturnOp::create(b, segmentLoc,
                           failBlock->addArgument(i32(), segmentLoc));
  }
  b.setInsertionPointToStart(body);
  LogicalResult lowered = success();
  for (Operation *op : ops)
    if (failed(lowerOp(op))) {
      lowered = failure();
      break;
    }
  failBlock = callerFail;
  if (failed(lowered)) {
    fn.erase();
    return failure();
  }
  LLVM::ReturnOp::create(b, segmentLoc, c32(0));

  // Addresses of globals (constants' data, per function) are taken by the
  // caller: they are arguments like the buffers.
  SmallVector<LLVM::AddressOfOp> addresses;
  fn.walk([&](LLVM::AddressOfOp op) { addresses.push_back(op); });
  for (LLVM::AddressOfOp op : addresses)
    op->moveBefore(callerBlock, callerPoint);
  // The values it reads from the entry become its arguments, in the order
  // of their first use. Each buffer (a pointer other than the context) is
  // two, a base and a byte offset, whatever it is: the arena and the slot's
  // offset, or an argument's (result's, global's) address and 0. So the
  // body does not depend on where its buffers live, and the entry keeps no
  // arena address alive from one layer to the next (LLVM would share the
  // same address computed in two layers, and its register allocation is
  // superlinear in such long-lived values).
  SmallVector<OpOperand *> uses;
  for (Block &block : fn.getBody())
    for (Operation &op : block)
      for (OpOperand &operand : op.getOpOperands())
        if (operand.get().getParentRegion() != &fn.getBody())
          uses.push_back(&operand);
  llvm::DenseMap<Value, Value> inside;
  SmallVector<std::pair<Value, bool>> reads; // (value, is a buffer)
  OpBuilder ib = OpBuilder::atBlockBegin(body);
  for (OpOperand *use : uses) {
    Value v = use->get();
    Value &replacement = inside[v];
    if (!replacement) {
      bool buffer = isa<LLVM::LLVMPointerType>(v.getType()) && v != ctxArg;
      if (buffer) {
        Value base = body->addArgument(ptrTy(), v.getLoc());
        Value offset = body->addArgument(i64(), v.getLoc());
        replacement = LLVM::GEPOp::create(ib, segmentLoc, ptrTy(),
                                          b.getI8Type(), base,
                                          ArrayRef<LLVM::GEPArg>{offset});
      } else {
        replacement = body->addArgument(v.getType(), v.getLoc());
      }
      reads.push_back({v, buffer});
    }
    use->set(replacement);
  }
  SmallVector<Type> argTypes(body->getArgumentTypes());
  fn.setFunctionType(LLVM::LLVMFunctionType::get(i32(), argTypes));

  // One function per distinct body.
  unsigned hash = bodyKey(fn);
  LLVM::LLVMFuncOp callee;
  SmallVector<LLVM::LLVMFuncOp, 1> &same = segments.byHash[hash];
  for (LLVM::LLVMFuncOp other : same)
    if (OperationEquivalence::isRegionEquivalentTo(
            &other.getBody(), &fn.getBody(),
            OperationEquivalence::IgnoreLocations)) {
      callee = other;
      break;
    }
  if (callee) {
    fn.erase();
  } else {
    fn.setSymName(("te_segment_" + Twine(segments.kept++)).str());
    fn.setNoInline(true);
    same.push_back(fn);
    callee = fn;
  }

  // The call, and the failure exit of the entry on a non-zero status.
  outlinedAny = true;
  b.setInsertionPoint(callerBlock, callerPoint);
  loc = segmentLoc;
  // (Argument buffers and dims are loaded again at the call:
  // localizeBuffers.)
  SmallVector<Value> operands;
  for (auto [v, buffer] : reads) {
    if (!buffer) {
      operands.push_back(v);
      continue;
    }
    auto address = v.getDefiningOp<LLVM::GEPOp>();
    if (address && address.getBase() == arena &&
        address.getIndices().size() == 1 &&
        address.getDynamicIndices().size() == 1) {
      operands.push_back(arena);
      operands.push_back(address.getDynamicIndices()[0]);
    } else {
      operands.push_back(v);
      operands.push_back(c64(0));
    }
  }
  call(callee, operands);
  return success();
}

void FunctionLowering::localizeBuffers() {
  Block *prologue = &entry.getBody().front();
  // A rematerializable value of the prologue: an arena address, or a load
  // from the argument, result or dims table.
  auto movable = [&](Value v) -> Operation * {
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != prologue)
      return nullptr;
    if (auto gepOp = dyn_cast<LLVM::GEPOp>(def))
      return gepOp.getBase() == arena ? def : nullptr;
    if (auto load = dyn_cast<LLVM::LoadOp>(def))
      if (auto address = load.getAddr().getDefiningOp<LLVM::GEPOp>();
          address && llvm::is_contained(
                         ValueRange{argsArg, resultsArg, dimsArg},
                         address.getBase()))
        return def;
    return nullptr;
  };
  for (Block &block : llvm::drop_begin(entry.getBody())) {
    llvm::DenseMap<Value, Value> local;
    for (Operation &op : block)
      for (OpOperand &operand : op.getOpOperands()) {
        Operation *def = movable(operand.get());
        if (!def)
          continue;
        Value &clone = local[operand.get()];
        if (!clone) {
          OpBuilder cb(&op);
          IRMapping map;
          if (auto load = dyn_cast<LLVM::LoadOp>(def))
            map.map(load.getAddr(),
                    cb.clone(*load.getAddr().getDefiningOp())->getResult(0));
          clone = cb.clone(*def, map)->getResult(0);
        }
        operand.set(clone);
      }
  }
  // The originals (and their table addresses), and those only outlined
  // segments read, are now dead.
  SmallVector<Operation *> prologueOps;
  for (Operation &op : *prologue)
    prologueOps.push_back(&op);
  for (Operation *op : llvm::reverse(prologueOps)) {
    if (op->getNumResults() != 1 || !op->use_empty())
      continue;
    if (movable(op->getResult(0)) ||
        (isa<LLVM::GEPOp>(op) &&
         llvm::is_contained(ValueRange{argsArg, resultsArg, dimsArg},
                            cast<LLVM::GEPOp>(op).getBase())))
      op->erase();
  }
}

} // namespace mlir::te::runtime_lowering
