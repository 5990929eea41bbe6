//===- MemoryPlan.cpp - The arena plan of a function ------------*- C++ -*-===//
//
// Views, in-place results, last uses, then a greedy first-fit of each
// value into a slot whose members are all dead.
//
//===----------------------------------------------------------------------===//

#include "te/Analysis/MemoryPlan.h"
#include "te/Analysis/ShapeAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::te;

std::optional<int64_t> mlir::te::staticBytes(Value tensor) {
  if (auto q = dyn_cast<QuantizedTensorType>(tensor.getType())) {
    int64_t total = 0;
    for (const InnerTensor &t : bufferParts(q)) {
      int64_t n = t.elementBytes;
      for (const SymDim &d : t.shape) {
        if (!d.isStatic())
          return std::nullopt;
        n *= d.getValue();
      }
      total += llvm::alignTo(n, kBufferAlignment);
    }
    return total;
  }
  auto t = cast<RankedTensorType>(tensor.getType());
  if (!t.hasStaticShape())
    return std::nullopt;
  return t.getNumElements() * (t.getElementType().getIntOrFloatBitWidth() / 8);
}

LogicalResult MemoryPlan::run(func::FuncOp func) {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  llvm::DenseMap<Operation *, unsigned> index;
  unsigned i = 0;
  for (Operation &op : body)
    index[&op] = i++;

  // Views.
  for (Operation &op : body) {
    if (auto reshape = dyn_cast<tensor::ReshapeOp>(op))
      aliasOf[reshape.getResult()] = reshape.getSource();
    // Keeping the columnwise copy: the prefix of the buffer.
    if (auto drop = dyn_cast<DropUsageOp>(op);
        drop && cast<QuantizedTensorType>(drop.getType()).getUsage() ==
                    QuantUsage::Columnwise)
      aliasOf[drop.getResult()] = drop.getInput();
  }

  // Returned values produced here (not arguments, not views, returned once)
  // are computed in place.
  llvm::DenseMap<Value, unsigned> returnCount;
  for (Value v : ret.getOperands())
    ++returnCount[v];
  llvm::DenseSet<Value> viewed; // values some view reads
  for (auto &p : aliasOf)
    viewed.insert(p.second);
  for (auto [r, v] : llvm::enumerate(ret.getOperands()))
    if (!isa<BlockArgument>(v) && !aliasOf.count(v) && returnCount[v] == 1 &&
        !viewed.contains(v))
      inPlaceResult[v] = r;

  // Last use of each root (through views).
  llvm::DenseMap<Value, unsigned> lastUse;
  for (Operation &op : body)
    for (Value operand : op.getOperands())
      lastUse[root(operand)] = std::max(lastUse[root(operand)], index[&op]);

  // Greedy: reuse a slot whose members are all dead.
  SmallVector<unsigned> slotFreeAt;
  for (Operation &op : body) {
    for (Value result : op.getResults()) {
      if (!shapeOfType(result.getType()) || aliasOf.count(result) ||
          inPlaceResult.count(result))
        continue;
      if (isa<tensor::EmptyOp>(op) ||
          (isa<arith::ConstantOp>(op) && isa<RankedTensorType>(result.getType()) &&
           !isa<FloatType>(
               cast<RankedTensorType>(result.getType()).getElementType())))
        continue;
      unsigned def = index[&op];
      unsigned slot = slots.size();
      for (unsigned s = 0; s < slots.size(); ++s)
        if (slotFreeAt[s] < def) {
          slot = s;
          break;
        }
      if (slot == slots.size()) {
        slots.emplace_back();
        slotFreeAt.push_back(0);
      }
      slots[slot].push_back(result);
      slotOf[result] = slot;
      slotFreeAt[slot] = std::max(def, lastUse.lookup(result));
      liveRange[result] = {def, slotFreeAt[slot]};
    }
  }
  // Peak bytes when everything is static.
  for (auto &members : slots) {
    std::optional<int64_t> size = 0;
    for (Value v : members) {
      std::optional<int64_t> s = staticBytes(v);
      size = (size && s) ? std::optional<int64_t>(std::max(*size, *s))
                         : std::nullopt;
    }
    slotBytes.push_back(size);
    slotOffsets.push_back(arenaBytes);
    arenaBytes = (arenaBytes && size)
                     ? std::optional<int64_t>(
                           *arenaBytes + llvm::alignTo(*size, kBufferAlignment))
                     : std::nullopt;
  }
  return success();
}
