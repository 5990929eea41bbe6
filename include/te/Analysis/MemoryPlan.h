//===- MemoryPlan.h - The arena plan of a function --------------*- C++ -*-===//
//
// Every intermediate tensor of a function of L2 primitives gets a slot of
// one arena; tensors whose live ranges do not overlap share a slot (sized
// by its largest member at run time). Views (reshapes, a drop_usage that
// keeps the columnwise copy) share their source's buffer; returned values
// are computed in place in the caller's result buffers.
//
// Destination passing for static dim-0 tensor.concat: a part that an op of
// the block produces only for that concat is placed in the concat's buffer,
// a view at the part's static byte offset (viewOffset), so its producer
// writes the slice and the concat copies nothing. A part is placed when it
// is a ranked tensor result of an op of the block other than a constant or
// a tensor.empty, not a view of anything, read by no view, not returned,
// and an operand of this one concat exactly once (a part of two concats, or
// twice of one, is copied). The concat's result then is live from the
// first placed part's definition to the last use of it or of any part.
// Zero-splat float constants whose every use is such a concat have no
// buffer (zeroFilled): the concat zeroes their slices itself, or, in an amax
// vector whose update takes those slots as unused, leaves them unwritten.
//
// In place: te.dact and te.dbias_dact write their result over an operand
// that dies at them (the `input`, or the `grad` when of the result's type;
// overwrites): the runtime's te_rt_act_bwd and te_rt_dbias_dact read
// element i of both before they write element i, on the CPU (fp32 staging,
// or the buffers themselves element by element) and in the CUDA kernels
// (each thread its own elements; te_rt_dbias_dact's unaligned path sums the
// columns before its element-wise pass writes). Nothing else is written in
// place, and only when the arena it leads to (each dynamic dim at 4096) is
// smaller than without (the greedy placement after it changes).
//
// Donation (backward entries): an argument that is a forward intermediate
// only the saved bundle holds (`te.saved` without `te.alias`, isDonatable)
// and that the function does not return may be donated by a caller that
// owns it, for one call (te_module_run_donated). After its last read its
// buffer backs planned values (donorOf), each of which provably fits in it
// at every value of the dims (static bytes no larger; else, with each
// buffer part's bytes c x a product of dim variables: a donor's parts hold
// at least their raw bytes, a quantized value's parts take at most
// (c + 255) x that product, the alignment, and the static bytes must fit
// at 0 tokens; two quantized buffers whose parts pair up fit part by part)
// and lives after that read (or is written over it in
// place, as above), no two of them at once; in order of definition, each
// value takes the smallest donor free by then. Such a value keeps its arena
// slot for the calls that do not donate its donor: a slot is sized at run
// time by its members that are in the arena, so a donation shrinks the
// arena (donatedArenaBytes: every donor donated) and never grows it, and
// the slots are those of the plan without donation.
//
// Loans (every entry): a result computed in place is the caller's buffer
// from the start of the call, yet written only where it is defined (a
// placed concat part: from that part's definition). Until then it backs
// planned values that die before that first write, no two of them at once
// (lenderOf): each value that fits at every value of the dims (as for
// donors) always, else (when it fits with each dynamic dim at 4096 or at
// 16) in the calls where its bytes are at most the result's at the call's
// dims (`conditional`, compared at run time). As with donation such a value
// keeps its arena slot for the calls where it is not lent. Order: proven
// loans, then donation, then conditional loans, each over the values the
// ones before left in the arena. Callers pass result buffers that overlap
// no argument and no other result (te_module_run), except that a
// `te.main_grad_of` result may be its main_grad argument's buffer (the
// wgrad GEMM accumulates in place): such a result lends nothing.
//
// Split results (forward entries): a quantized value with both usages whose
// columnwise copy a te.drop_usage returns (the columnwise tensor a backward
// keeps) is written where that result lives: its first parts, the
// columnwise-only buffer's layout (the shared parts and the columnwise
// copy), in the caller's result buffer, and only its rowwise parts (the
// tail, from the first rowwise part's offset) in its arena slot, sized by
// those parts and live until the last read of the value other than the
// drop_usage (splitResult). So the kept copy is not copied out at the end
// and the arena holds the rowwise copy alone. Only where the value's
// producer and readers address it part by part: a quantizing producer and
// te.gemm / te.drop_usage / te.add_columnwise readers. The tail is neither
// lent nor donated; the result is lent until the value's definition.
//
//===----------------------------------------------------------------------===//

#ifndef TE_ANALYSIS_MEMORYPLAN_H
#define TE_ANALYSIS_MEMORYPLAN_H

#include "te/Analysis/ShapeAnalysis.h"
#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Dialect/TE/IR/TEQuantLayout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::te {

/// The alignment of every arena slot and of every inner tensor of a
/// quantized buffer.
constexpr int64_t kBufferAlignment = 256;

/// The mark of the ops te-fork-branches puts on a branch: each marked op of a
/// block runs beside the unmarked ops after it until it is joined, at the
/// latest before its first unmarked reader (else at the function's end).
/// The plan keeps what it reads or writes live until then, and
/// te-lower-to-runtime brackets it with te_rt_branch_begin / _end and
/// joins it there (te_rt_branch_join).
constexpr llvm::StringLiteral kBranchAttrName = "te.branch";

/// The inner tensors in buffer order: the parts both usages share
/// (per-tensor FP8's scale_inv), then the columnwise copy, then the rowwise
/// one (TE's order within each group).
inline int bufferGroup(StringRef name) {
  if (name == "scale_inv")
    return 0;
  if (name == "transpose" || name.contains("columnwise"))
    return 1;
  return 2;
}
/// Whether inner tensor `name` is of the rowwise copy: the tail of a
/// buffer with both usages, after the columnwise-only buffer's layout.
inline bool isRowwisePart(StringRef name) { return bufferGroup(name) == 2; }
template <typename T> SmallVector<T> inBufferOrder(SmallVector<T> inner) {
  llvm::stable_sort(inner, [&](const T &x, const T &y) {
    return bufferGroup(x.name) < bufferGroup(y.name);
  });
  return inner;
}

/// The inner tensors of a quantized type in buffer order (symbolic dims).
inline SmallVector<InnerTensor> bufferParts(QuantizedTensorType q) {
  return inBufferOrder(q.getInnerTensors());
}

/// The bytes of a tensor's buffer (a quantized one's inner tensors, each
/// 256-byte aligned), when its shape is static; `rowwiseOnly`: of a
/// quantized buffer's rowwise parts (a split value's tail).
std::optional<int64_t> staticBytes(Value tensor, bool rowwiseOnly = false);

/// Whether `v` is an arith.constant whose every element is 0.0 (an unused
/// amax slot, say): a memset, no data.
bool isZeroSplatConstant(Value v);

/// Liveness-based slot assignment over the one block of a function.
class MemoryPlan {
public:
  /// Plans `func` (one block, ending in func.return).
  LogicalResult run(func::FuncOp func);

  /// Whether argument `arg` of `func` may be donated: `te.saved` without
  /// `te.alias` (a saved forward intermediate, not a forward input or
  /// output).
  static bool isDonatable(func::FuncOp func, unsigned arg);

  /// The value whose buffer `v` is (through views).
  Value root(Value v) const {
    while (Value src = aliasOf.lookup(v))
      v = src;
    return v;
  }
  /// The byte offset of `v` in its root's buffer (through views).
  int64_t offsetInRoot(Value v) const {
    int64_t offset = 0;
    while (Value src = aliasOf.lookup(v)) {
      offset += viewOffset.lookup(v);
      v = src;
    }
    return offset;
  }

  /// Views: a value that is (a part of) another value's buffer: reshapes
  /// and columnwise drop_usage at offset 0, placed concat parts at their
  /// offset in the concat's result.
  llvm::DenseMap<Value, Value> aliasOf;
  /// The byte offset of a view in its source's buffer, when not 0.
  llvm::DenseMap<Value, int64_t> viewOffset;
  /// Zero-splat constants that need no buffer: every use is a concat that
  /// zeroes their slices (or, an amax vector, leaves them unread).
  llvm::DenseSet<Value> zeroFilled;
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
  /// its definition (a concat's: its first placed part's) and of its last
  /// use (through views), or its definition when it is never used.
  llvm::DenseMap<Value, std::pair<unsigned, unsigned>> liveRange;
  /// Planned values written over an operand's buffer (te.dact), and it.
  llvm::DenseMap<Value, Value> overwrites;
  /// Donation: the donatable arguments that back some value, in argument
  /// order, and the donor of each such value (see the file comment).
  SmallVector<BlockArgument> donors;
  llvm::DenseMap<Value, BlockArgument> donorOf;
  /// The arena's bytes when every donor is donated, when static.
  std::optional<int64_t> donatedArenaBytes = 0;
  /// Loans: the result whose buffer backs a planned value before the
  /// result is written, and whether only when the value fits at the call's
  /// dims (compared at run time) rather than at every value of them.
  struct Loan {
    unsigned result;
    bool conditional;
  };
  llvm::DenseMap<Value, Loan> lenderOf;
  /// Split results: a both-usage quantized value whose columnwise parts are
  /// in result i's buffer and whose rowwise parts (its slot) in the arena.
  llvm::DenseMap<Value, unsigned> splitResult;

  /// The bytes planned value `v` takes in its slot (a split value's tail),
  /// when static.
  std::optional<int64_t> slotStaticBytes(Value v) const {
    return staticBytes(v, splitResult.count(v));
  }
  /// The split value whose columnwise view `returned` is, returned as result
  /// `r` (its columnwise parts written in that result's buffer), or null.
  Value splitValueOf(unsigned r, Value returned) const {
    Value src = aliasOf.lookup(returned);
    auto it = src ? splitResult.find(src) : splitResult.end();
    return it != splitResult.end() && it->second == r ? src : Value();
  }
  /// Whether `returned`, result `r`, is copied into the result's buffer at
  /// the entry's end (whole: its buffer's padding too), being neither
  /// computed in place there nor a split result's columnwise parts.
  bool copiedOut(unsigned r, Value returned) const {
    auto it = inPlaceResult.find(returned);
    return !(it != inPlaceResult.end() && it->second == r) &&
           !splitValueOf(r, returned);
  }

private:
  /// Finds the split results (after the views and in-place results).
  void findSplitResults(func::ReturnOp ret,
                        const llvm::DenseMap<Value, unsigned> &returnCount);
  /// The slot positions of the greedy assignment (run's second half).
  void assignSlots(Block &body, llvm::DenseMap<Operation *, unsigned> &index,
                   llvm::DenseMap<Value, unsigned> &lastUse, bool inPlace);
  /// The arena's bytes with each dynamic dim at 4096 (comparing plans).
  int64_t representativeArenaBytes(const ShapeAnalysis &shapes) const;
  /// Donors for the planned values of a backward entry.
  void assignDonors(func::FuncOp func,
                    llvm::DenseMap<Value, unsigned> &lastUse,
                    const ShapeAnalysis &shapes);
  /// Results' loans to the planned values neither lent nor donated yet:
  /// those that always fit, or (`conditional`) those that fit with the
  /// dynamic dims at 4096 or 16.
  void assignLoans(func::FuncOp func,
                   llvm::DenseMap<Operation *, unsigned> &index,
                   const ShapeAnalysis &shapes, bool conditional);
  /// Planned values in order of definition.
  SmallVector<Value> planned;
  /// Values some view reads.
  llvm::DenseSet<Value> viewed;
};

} // namespace mlir::te

#endif // TE_ANALYSIS_MEMORYPLAN_H
