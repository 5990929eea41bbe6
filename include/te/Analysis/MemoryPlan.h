//===- MemoryPlan.h - The arena plan of a function --------------*- C++ -*-===//
//
// Every intermediate tensor of a function of L2 primitives gets a slot of
// one arena; tensors whose live ranges do not overlap share a slot (sized
// by its largest member at run time). Views (reshapes, a drop_usage that
// keeps the columnwise copy) share their source's buffer; returned values
// are computed in place in the caller's result buffers.
//
//===----------------------------------------------------------------------===//

#ifndef TE_ANALYSIS_MEMORYPLAN_H
#define TE_ANALYSIS_MEMORYPLAN_H

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Dialect/TE/IR/TEQuantLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::te {

/// The alignment of every arena slot and of every inner tensor of a
/// quantized buffer.
constexpr int64_t kBufferAlignment = 256;

/// The inner tensors in buffer order: the parts both usages share
/// (per-tensor FP8's scale_inv), then the columnwise copy, then the rowwise
/// one (TE's order within each group).
template <typename T> SmallVector<T> inBufferOrder(SmallVector<T> inner) {
  auto group = [](StringRef name) {
    if (name == "scale_inv")
      return 0;
    if (name == "transpose" || name.contains("columnwise"))
      return 1;
    return 2;
  };
  llvm::stable_sort(inner, [&](const T &x, const T &y) {
    return group(x.name) < group(y.name);
  });
  return inner;
}

/// The inner tensors of a quantized type in buffer order (symbolic dims).
inline SmallVector<InnerTensor> bufferParts(QuantizedTensorType q) {
  return inBufferOrder(q.getInnerTensors());
}

/// The bytes of a tensor's buffer (a quantized one's inner tensors, each
/// 256-byte aligned), when its shape is static.
std::optional<int64_t> staticBytes(Value tensor);

/// Liveness-based slot assignment over the one block of a function.
class MemoryPlan {
public:
  /// Plans `func` (one block, ending in func.return).
  LogicalResult run(func::FuncOp func);

  /// The value whose buffer `v` is (through views).
  Value root(Value v) const {
    while (Value src = aliasOf.lookup(v))
      v = src;
    return v;
  }

  /// Views: a value that is another value's buffer (reshapes).
  llvm::DenseMap<Value, Value> aliasOf;
  /// Arena slot of each planned value, and the slots' members.
  llvm::DenseMap<Value, unsigned> slotOf;
  SmallVector<SmallVector<Value>> slots;
  /// Returned values computed in place into result i.
  llvm::DenseMap<Value, unsigned> inPlaceResult;
  /// The arena's bytes when every member is static, else none.
  std::optional<int64_t> arenaBytes = 0;
  /// Per slot, its bytes (its largest member's) and its offset in the
  /// arena (slots are 256-byte aligned, in order), when static.
  SmallVector<std::optional<int64_t>> slotBytes, slotOffsets;
  /// The live range of each planned value: the positions in the block of
  /// its definition and of its last use (through views), or its definition
  /// when it is never used.
  llvm::DenseMap<Value, std::pair<unsigned, unsigned>> liveRange;
};

} // namespace mlir::te

#endif // TE_ANALYSIS_MEMORYPLAN_H
