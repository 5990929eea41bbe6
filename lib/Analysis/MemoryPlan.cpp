//===- MemoryPlan.cpp - The arena plan of a function ------------*- C++ -*-===//
//
// Views, in-place results, concat parts placed in their concat's buffer,
// last uses, then a greedy first-fit of each value into a slot whose
// members are all dead.
//
//===----------------------------------------------------------------------===//

#include "te/Analysis/MemoryPlan.h"
#include "te/Analysis/ShapeAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/MathExtras.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace mlir::te;

std::optional<int64_t> mlir::te::staticBytes(Value tensor, bool rowwiseOnly) {
  if (auto q = dyn_cast<QuantizedTensorType>(tensor.getType())) {
    int64_t total = 0;
    for (const InnerTensor &t : bufferParts(q)) {
      if (rowwiseOnly && !isRowwisePart(t.name))
        continue;
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

bool mlir::te::isZeroSplatConstant(Value v) {
  auto cst = v.getDefiningOp<arith::ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!cst || !type || !isa<FloatType>(type.getElementType()))
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(cst.getValue());
  return dense && dense.isSplat() &&
         llvm::all_of(dense.getRawData(), [](char c) { return c == 0; });
}

/// A concat whose parts can be written in place: along dim 0, static.
static bool isStaticDim0Concat(Operation *op) {
  auto c = dyn_cast<tensor::ConcatOp>(op);
  return c && c.getDim() == 0 && c.getResultType().hasStaticShape() &&
         llvm::all_of(c.getInputs(), [](Value in) {
           auto t = dyn_cast<RankedTensorType>(in.getType());
           return t && t.hasStaticShape();
         });
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
  viewed.clear(); // values some view reads
  for (auto &p : aliasOf)
    viewed.insert(p.second);
  for (auto [r, v] : llvm::enumerate(ret.getOperands()))
    if (!isa<BlockArgument>(v) && !aliasOf.count(v) && returnCount[v] == 1 &&
        !viewed.contains(v))
      inPlaceResult[v] = r;
  findSplitResults(ret, returnCount);

  // Destination passing: each part an op of the block produces only for
  // one static dim-0 concat is a view of the concat's buffer at its offset
  // (its producer writes the slice). Not arguments, constants or empties,
  // not views, not read by views, not returned, not used twice by concats;
  // at a 256-byte aligned offset (what kernels may assume of a buffer)
  // unless it is one element (an amax cell).
  llvm::DenseMap<Value, unsigned> concatUses;
  for (Operation &op : body)
    if (auto c = dyn_cast<tensor::ConcatOp>(op))
      for (Value in : c.getInputs())
        ++concatUses[in];
  for (Operation &op : body) {
    if (!isStaticDim0Concat(&op))
      continue;
    auto c = cast<tensor::ConcatOp>(op);
    int64_t offset = 0;
    for (Value in : c.getInputs()) {
      Operation *def = in.getDefiningOp();
      if (def && def->getBlock() == &body &&
          !isa<arith::ConstantOp, tensor::EmptyOp>(def) &&
          !aliasOf.count(in) && !viewed.contains(in) &&
          !returnCount.count(in) && concatUses.lookup(in) == 1 &&
          (offset % kBufferAlignment == 0 ||
           cast<RankedTensorType>(in.getType()).getNumElements() == 1)) {
        aliasOf[in] = c.getResult();
        if (offset)
          viewOffset[in] = offset;
        viewed.insert(c.getResult());
      }
      offset += *staticBytes(in);
    }
  }
  // Zero constants only such concats read: the concats zero the slices
  // instead, or leave them unwritten when the amax update they feed skips
  // those slots (te-lower-to-runtime's te_rt_amax_update_unused). Either
  // way the concat keeps its buffer and its placed parts.
  for (Operation &op : body)
    if (op.getNumResults() == 1 && isZeroSplatConstant(op.getResult(0)) &&
        !op.use_empty() &&
        llvm::all_of(op.getUsers(), isStaticDim0Concat))
      zeroFilled.insert(op.getResult(0));

  // Last use of each root (through views).
  llvm::DenseMap<Value, unsigned> lastUse;
  for (Operation &op : body)
    for (Value operand : op.getOperands())
      lastUse[root(operand)] = std::max(lastUse[root(operand)], index[&op]);
  // An amax update that may run beside what follows it (te.fork:
  // te_rt_amax_update_fork, joined at the entry's end) reads its amax
  // vector until then.
  for (Operation &op : body)
    if (auto u = dyn_cast<AmaxUpdateOp>(op); u && u->hasAttr("te.fork"))
      lastUse[root(u.getAmax())] = index[ret];
  // An op on a branch (te.branch, te-fork-branches) runs beside the ops after
  // it until its join, at the latest its first reader off the branch (else
  // the return): what it reads or writes stays live until then, so that
  // nothing beside it shares that memory.
  for (Operation &op : body) {
    if (!op.hasAttr(kBranchAttrName))
      continue;
    unsigned join = index[ret];
    for (Value r : op.getResults())
      for (Operation *user : r.getUsers())
        if (user->getBlock() == &body && !user->hasAttr(kBranchAttrName))
          join = std::min(join, index[user]);
    for (Value v : llvm::concat<Value>(op.getOperands(), op.getResults()))
      lastUse[root(v)] = std::max(lastUse[root(v)], join);
  }
  // A split value's slot holds its rowwise parts: live until its last
  // reader other than the drop_usage whose result (its columnwise parts)
  // is returned.
  for (auto &[v, r] : splitResult) {
    unsigned last = index[v.getDefiningOp()];
    for (Operation *user : v.getUsers())
      if (!isa<DropUsageOp>(user) ||
          aliasOf.lookup(user->getResult(0)) != v)
        last = std::max(last, index[user]);
    lastUse[v] = last;
  }

  // The symbolic dims (for comparing plans, loans and donation); without
  // them nothing is written in place, lent or donated.
  ShapeAnalysis shapes;
  bool shaped = succeeded(shapes.run(func));
  assignSlots(body, index, lastUse, /*inPlace=*/true);
  if (!overwrites.empty()) {
    // Writing in place changes the greedy placement after it: kept only
    // when that makes the arena smaller.
    int64_t withInPlace = shaped ? representativeArenaBytes(shapes) : 0;
    auto kept = std::make_tuple(slots, slotOf, liveRange, planned, overwrites);
    slots.clear();
    slotOf.clear();
    liveRange.clear();
    planned.clear();
    overwrites.clear();
    assignSlots(body, index, lastUse, /*inPlace=*/false);
    if (shaped && withInPlace < representativeArenaBytes(shapes))
      std::tie(slots, slotOf, liveRange, planned, overwrites) = kept;
  }
  if (shaped) {
    assignLoans(func, index, shapes, /*conditional=*/false);
    assignDonors(func, lastUse, shapes);
    assignLoans(func, index, shapes, /*conditional=*/true);
  }

  // Peak bytes when everything is static (and with every donor donated),
  // without the values always lent (a conditional loan counts: the bound
  // for the calls where it is not taken).
  auto add = [](std::optional<int64_t> total, std::optional<int64_t> size) {
    return (total && size) ? std::optional<int64_t>(
                                 *total + llvm::alignTo(*size, kBufferAlignment))
                           : std::nullopt;
  };
  auto max = [](std::optional<int64_t> x, std::optional<int64_t> y) {
    return (x && y) ? std::optional<int64_t>(std::max(*x, *y)) : std::nullopt;
  };
  for (auto &members : slots) {
    std::optional<int64_t> size = 0, kept = 0;
    for (Value v : members) {
      if (auto it = lenderOf.find(v);
          it != lenderOf.end() && !it->second.conditional)
        continue;
      size = max(size, slotStaticBytes(v));
      if (!donorOf.count(v))
        kept = max(kept, slotStaticBytes(v));
    }
    slotBytes.push_back(size);
    slotOffsets.push_back(arenaBytes);
    arenaBytes = add(arenaBytes, size);
    donatedArenaBytes = add(donatedArenaBytes, kept);
  }
  return success();
}

bool MemoryPlan::isDonatable(func::FuncOp func, unsigned arg) {
  return func.getArgAttr(arg, "te.saved") && !func.getArgAttr(arg, "te.alias");
}

/// The operands te.dact / te.dbias_dact may write their result over (see
/// the header): the input (the result's shape), and the grad when of the
/// result's type (a non-gated activation).
template <typename OpTy>
static SmallVector<Value, 2> overwritableOf(OpTy op, Value result) {
  if (result != op.getResult())
    return {};
  SmallVector<Value, 2> out;
  if (op.getInput().getType() == result.getType())
    out.push_back(op.getInput());
  if (!op.getActivation().isGated() &&
      op.getGrad().getType() == result.getType())
    out.push_back(op.getGrad());
  return out;
}
static SmallVector<Value, 2> overwritable(Operation *op, Value result) {
  if (auto dact = dyn_cast_or_null<DActOp>(op))
    return overwritableOf(dact, result);
  if (auto dbias = dyn_cast_or_null<DBiasDActOp>(op))
    return overwritableOf(dbias, result);
  return {};
}

namespace {
/// A dim at a representative value (each dim variable 4096): the dim
/// algebra of getInnerTensorsOf.
struct AtDim {
  int64_t v;
  AtDim(int64_t v = 0) : v(v) {}
  AtDim operator*(const AtDim &o) const { return AtDim(v * o.v); }
  AtDim exactDiv(int64_t d) const { return AtDim(v / d); }
  AtDim ceilDiv(int64_t d) const { return AtDim((v + d - 1) / d); }
  AtDim roundUp(int64_t d) const { return AtDim((v + d - 1) / d * d); }
};

int64_t representativeBytes(Value v, const ShapeAnalysis &shapes,
                            int64_t dimValue = 4096, bool rowwiseOnly = false) {
  if (std::optional<int64_t> n = staticBytes(v, rowwiseOnly))
    return *n;
  SmallVector<AtDim> dims;
  for (const Dim &d : shapes.dims(v)) {
    int64_t x = d.value;
    for (size_t i = 0; i < d.vars.size(); ++i)
      x *= dimValue;
    dims.push_back(AtDim(x));
  }
  if (auto q = dyn_cast<QuantizedTensorType>(v.getType())) {
    int64_t total = 0;
    for (const InnerTensorOf<AtDim> &t :
         inBufferOrder(getInnerTensorsOf<AtDim>(q, dims))) {
      if (rowwiseOnly && !isRowwisePart(t.name))
        continue;
      int64_t n = t.elementBytes;
      for (const AtDim &d : t.shape)
        n *= d.v;
      total += llvm::alignTo(n, kBufferAlignment);
    }
    return total;
  }
  int64_t n = cast<RankedTensorType>(v.getType()).getElementTypeBitWidth() / 8;
  for (const AtDim &d : dims)
    n *= d.v;
  return n;
}
} // namespace

int64_t
MemoryPlan::representativeArenaBytes(const ShapeAnalysis &shapes) const {
  int64_t total = 0;
  for (const SmallVector<Value> &members : slots) {
    int64_t size = 0;
    for (Value v : members)
      size = std::max(size, representativeBytes(v, shapes, 4096,
                                                splitResult.count(v)));
    total += llvm::alignTo(size, kBufferAlignment);
  }
  return total;
}

void MemoryPlan::findSplitResults(
    func::ReturnOp ret, const llvm::DenseMap<Value, unsigned> &returnCount) {
  llvm::DenseMap<Value, unsigned> views;
  for (auto &p : aliasOf)
    ++views[p.second];
  // Whose lowering addresses a quantized value part by part (qptrs).
  auto quantizes = [](Operation *op) {
    return isa<QuantizeOp, NormQuantizeOp, ActQuantizeOp, DBiasQuantizeOp,
               DActQuantizeOp>(op);
  };
  auto readsParts = [](Operation *op) {
    return isa<GemmOp, DropUsageOp, AddColumnwiseOp>(op);
  };
  for (auto [r, kept] : llvm::enumerate(ret.getOperands())) {
    auto drop = kept.getDefiningOp<DropUsageOp>();
    if (!drop || returnCount.lookup(kept) != 1 || viewed.contains(kept) ||
        aliasOf.lookup(kept) != drop.getInput())
      continue; // not the returned columnwise view
    Value v = drop.getInput();
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != ret->getBlock() || !quantizes(def) ||
        cast<QuantizedTensorType>(v.getType()).getUsage() !=
            QuantUsage::Both ||
        returnCount.count(v) || aliasOf.count(v) || views.lookup(v) != 1 ||
        splitResult.count(v) || !llvm::all_of(v.getUsers(), readsParts))
      continue;
    splitResult[v] = r;
  }
}

void MemoryPlan::assignSlots(Block &body,
                             llvm::DenseMap<Operation *, unsigned> &index,
                             llvm::DenseMap<Value, unsigned> &lastUse,
                             bool inPlace) {
  // Greedy: reuse a slot whose members are all dead, or write over an
  // operand that dies here (te.dact), in its slot.
  SmallVector<unsigned> slotFreeAt;
  for (Operation &op : body) {
    for (Value result : op.getResults()) {
      // A value's buffer is live from its definition; a concat's whose
      // parts are placed, from its first placed part's.
      Value v = root(result);
      if (v != result && (isa<BlockArgument>(v) ||
                          index[v.getDefiningOp()] < index[&op]))
        continue;
      if (!shapeOfType(v.getType()) || slotOf.count(v) ||
          inPlaceResult.count(v) || zeroFilled.contains(v))
        continue;
      Operation *def = v.getDefiningOp();
      if (isa<tensor::EmptyOp>(def) ||
          (isa<arith::ConstantOp>(def) && isa<RankedTensorType>(v.getType()) &&
           !isa<FloatType>(
               cast<RankedTensorType>(v.getType()).getElementType())))
        continue;
      unsigned start = index[&op];
      unsigned slot = slots.size();
      for (Value operand : inPlace ? overwritable(&op, v)
                                   : SmallVector<Value, 2>()) {
        auto it = slotOf.find(operand);
        if (aliasOf.count(operand) || viewed.contains(operand) ||
            it == slotOf.end() || lastUse.lookup(operand) != start ||
            slotFreeAt[it->second] != start ||
            slots[it->second].back() != operand)
          continue;
        slot = it->second;
        overwrites[v] = operand;
        break;
      }
      for (unsigned s = 0; slot == slots.size() && s < slots.size(); ++s)
        if (slotFreeAt[s] < start) {
          slot = s;
          break;
        }
      if (slot == slots.size()) {
        slots.emplace_back();
        slotFreeAt.push_back(0);
      }
      slots[slot].push_back(v);
      slotOf[v] = slot;
      slotFreeAt[slot] = std::max(start, lastUse.lookup(v));
      liveRange[v] = {start, slotFreeAt[slot]};
      planned.push_back(v);
    }
  }
}

namespace {
/// A dim as c x (a product of dim variables), for getInnerTensorsOf; `ok`
/// is cleared where a division is not exact on a symbolic dim.
struct LinDim {
  int64_t c = 1;
  SmallVector<int, 2> vars;
  bool ok = true;
  LinDim(int64_t c = 0) : c(c) {}
  LinDim operator*(const LinDim &o) const {
    LinDim r(c * o.c);
    r.vars = vars;
    llvm::append_range(r.vars, o.vars);
    llvm::sort(r.vars);
    r.ok = ok && o.ok;
    return r;
  }
  LinDim divided(int64_t d, int64_t staticValue) const {
    LinDim r = *this;
    if (vars.empty())
      r.c = staticValue;
    else if (c % d == 0) // c*M/d, ceil and round-up all exact
      r.c = c / d;
    else
      r.ok = false;
    return r;
  }
  LinDim exactDiv(int64_t d) const { return divided(d, c / d); }
  LinDim ceilDiv(int64_t d) const { return divided(d, (c + d - 1) / d); }
  LinDim roundUp(int64_t d) const {
    LinDim r = vars.empty() ? divided(d, (c + d - 1) / d * d) : *this;
    r.ok = r.ok && (vars.empty() || c % d == 0);
    return r;
  }
};

/// The bytes of each buffer part of `v` (one for a tensor; a qtensor's
/// inner tensors in buffer order) as c x a product of dim variables, or
/// none where a part is not of that form.
std::optional<SmallVector<LinDim>> partBytes(Value v,
                                             const ShapeAnalysis &shapes) {
  SmallVector<LinDim> dims;
  for (const Dim &d : shapes.dims(v)) {
    LinDim x(d.value);
    x.vars.assign(d.vars.begin(), d.vars.end());
    llvm::sort(x.vars);
    dims.push_back(x);
  }
  SmallVector<LinDim> parts;
  if (auto q = dyn_cast<QuantizedTensorType>(v.getType())) {
    if (dims.size() != q.getShape().size() || dims.empty())
      return std::nullopt;
    for (const InnerTensorOf<LinDim> &t :
         inBufferOrder(getInnerTensorsOf<LinDim>(q, dims))) {
      LinDim n(t.elementBytes);
      for (const LinDim &d : t.shape)
        n = n * d;
      parts.push_back(n);
    }
  } else {
    auto t = cast<RankedTensorType>(v.getType());
    if (dims.size() != static_cast<size_t>(t.getRank()))
      return std::nullopt;
    LinDim n(t.getElementTypeBitWidth() / 8);
    for (const LinDim &d : dims)
      n = n * d;
    parts.push_back(n);
  }
  if (!llvm::all_of(parts, [](const LinDim &p) { return p.ok && p.c >= 0; }))
    return std::nullopt;
  return parts;
}

/// Bytes as a constant plus, per product of dim variables, a coefficient.
struct Bound {
  int64_t constant = 0;
  std::map<SmallVector<int, 2>, int64_t> terms;
  void add(const LinDim &p, int64_t c) {
    if (p.vars.empty())
      constant += c;
    else
      terms[p.vars] += c;
  }
};

/// Whether a buffer of `v` provably fits in one of `donor` at every value
/// of the dims (each dim variable any count >= 0). Qtensor parts lie at
/// 256-byte aligned offsets in buffer order. Two qtensors whose parts pair
/// up (the same variables, no more bytes) fit: offsets and extents are
/// monotone. Otherwise an upper bound of `v` against a lower bound of the
/// donor, term by term: a qtensor value's dynamic part of c*M bytes takes
/// at most alignTo(c*M, 256) <= (c + 255)*M (M is 0 or >= 1), c*M when c
/// is a multiple of 256; a qtensor donor's dynamic parts hold at least
/// their raw bytes, its static parts their aligned bytes (each part starts
/// 256-byte aligned and the buffer's bytes are those of the aligned parts:
/// te_module_tensor_bytes).
bool fitsIn(Value v, Value donor, const ShapeAnalysis &shapes) {
  std::optional<int64_t> bytes = staticBytes(v), room = staticBytes(donor);
  if (bytes && room)
    return *bytes <= *room;
  std::optional<SmallVector<LinDim>> need = partBytes(v, shapes),
                                     have = partBytes(donor, shapes);
  if (!need || !have)
    return false;
  bool vq = isa<QuantizedTensorType>(v.getType());
  bool dq = isa<QuantizedTensorType>(donor.getType());
  if (vq && dq && need->size() <= have->size() &&
      llvm::all_of(llvm::zip(*need, *have), [](auto pair) {
        auto [n, h] = pair;
        return n.vars == h.vars && n.c <= h.c;
      }))
    return true;
  Bound upper, lower;
  for (const LinDim &p : *need) {
    if (!vq)
      upper.add(p, p.c);
    else if (p.vars.empty() || p.c % kBufferAlignment == 0)
      upper.add(p, llvm::alignTo(p.c, kBufferAlignment));
    else
      upper.add(p, p.c + kBufferAlignment - 1);
  }
  for (const LinDim &p : *have)
    lower.add(p, dq && p.vars.empty() ? llvm::alignTo(p.c, kBufferAlignment)
                                      : p.c);
  if (upper.constant > lower.constant)
    return false;
  return llvm::all_of(upper.terms, [&](const auto &term) {
    auto it = lower.terms.find(term.first);
    return it != lower.terms.end() && term.second <= it->second;
  });
}
} // namespace

void MemoryPlan::assignDonors(func::FuncOp func,
                              llvm::DenseMap<Value, unsigned> &lastUse,
                              const ShapeAnalysis &shapes) {
  // Donatable arguments that are read, not returned (through views).
  llvm::DenseSet<Value> returned;
  for (Value v : func.getBody().front().getTerminator()->getOperands())
    returned.insert(root(v));
  SmallVector<BlockArgument> candidates;
  for (BlockArgument arg : func.getArguments())
    if (isDonatable(func, arg.getArgNumber()) && shapeOfType(arg.getType()) &&
        lastUse.count(arg) && !returned.contains(arg))
      candidates.push_back(arg);
  if (candidates.empty() || planned.empty())
    return;
  // Per donor: when its buffer is free (its last use, then its last
  // member's) and who holds it last (a te.dact may write over that one).
  llvm::DenseMap<Value, unsigned> freeAt;
  llvm::DenseMap<Value, Value> holder;
  for (BlockArgument arg : candidates) {
    freeAt[arg] = lastUse.lookup(arg);
    holder[arg] = arg;
  }
  // In order of definition, each value into the smallest donor it fits in
  // whose buffer is free by then.
  for (Value v : planned) {
    if (lenderOf.count(v) || splitResult.count(v))
      continue;
    auto [start, end] = liveRange.lookup(v);
    SmallVector<Value, 2> over = overwritable(v.getDefiningOp(), v);
    std::optional<BlockArgument> best;
    for (BlockArgument d : candidates) {
      bool free = freeAt[d] < start ||
                  (freeAt[d] == start && llvm::is_contained(over, holder[d]));
      if (!free || !fitsIn(v, d, shapes))
        continue;
      if (!best || (staticBytes(d) && staticBytes(*best) &&
                    *staticBytes(d) < *staticBytes(*best)))
        best = d;
    }
    if (!best)
      continue;
    donorOf[v] = *best;
    freeAt[*best] = end;
    holder[*best] = v;
  }
  for (BlockArgument arg : candidates)
    if (holder[arg] != arg)
      donors.push_back(arg);
}

void MemoryPlan::assignLoans(func::FuncOp func,
                             llvm::DenseMap<Operation *, unsigned> &index,
                             const ShapeAnalysis &shapes, bool conditional) {
  // Each in-place result's buffer is free until its first write: its
  // definition, or the earliest definition of a value placed in it.
  Block &body = func.getBody().front();
  llvm::DenseMap<Value, unsigned> firstWrite;
  for (Operation &op : body)
    for (Value v : op.getResults()) {
      Value r = root(v);
      if (!inPlaceResult.count(r))
        continue;
      auto [it, inserted] = firstWrite.try_emplace(r, index[&op]);
      if (!inserted)
        it->second = std::min(it->second, index[&op]);
    }
  struct Lender {
    Value value;
    unsigned result, writtenAt;
    int64_t bytes, smallBytes; // with the dynamic dims at 4096 and at 16
    /// The live ranges of the values it backs.
    SmallVector<std::pair<unsigned, unsigned>> held;
  };
  SmallVector<Lender> lenders;
  // A te.main_grad_of result may be its main_grad argument's buffer (the
  // wgrad GEMM accumulates in place): it holds the caller's values from
  // the start, and lends nothing. Nor does a backward's recipe state (its
  // argument's buffer too where te-lower-to-runtime lists the pair in
  // state_in_place: a loan would overwrite the old state before the update
  // reads it; it costs the arena a few KiB of amax history).
  const bool backward = func->hasAttr("te.backward_of");
  auto lends = [&](unsigned r) {
    return !func.getResultAttr(r, "te.main_grad_of") &&
           !(backward && func.getResultAttr(r, "te.state"));
  };
  for (auto [r, v] : llvm::enumerate(body.getTerminator()->getOperands()))
    if (auto it = inPlaceResult.find(v); it != inPlaceResult.end() &&
                                         it->second == r && lends(r) &&
                                         shapeOfType(v.getType()))
      lenders.push_back({v, static_cast<unsigned>(r), firstWrite.lookup(v),
                         representativeBytes(v, shapes),
                         representativeBytes(v, shapes, 16), {}});
  // A split result is written at its value's definition; until then it is
  // free like the others (its type is the result's: the columnwise parts).
  for (auto [r, v] : llvm::enumerate(body.getTerminator()->getOperands()))
    if (Value src = splitValueOf(r, v); src && lends(r))
      lenders.push_back({v, static_cast<unsigned>(r),
                         index[src.getDefiningOp()],
                         representativeBytes(v, shapes),
                         representativeBytes(v, shapes, 16), {}});
  if (lenders.empty())
    return;
  for (Value v : planned)
    if (auto it = lenderOf.find(v); it != lenderOf.end())
      for (Lender &l : lenders)
        if (l.result == it->second.result)
          l.held.push_back(liveRange.lookup(v));
  // The largest values first (a loan helps when it empties a slot's
  // largest member), in order of definition among equals; each into the
  // smallest lender that is free over its whole life.
  SmallVector<std::pair<int64_t, Value>> order;
  for (Value v : planned)
    if (!lenderOf.count(v) && !donorOf.count(v) && !splitResult.count(v))
      order.push_back({representativeBytes(v, shapes), v});
  llvm::stable_sort(order, [](const auto &x, const auto &y) {
    return x.first > y.first;
  });
  for (auto [vBytes, v] : order) {
    auto [start, end] = liveRange.lookup(v);
    std::optional<int64_t> vSmallBytes; // at 16, computed when asked
    // Conditionally: a lender it fits in with each dynamic dim at 4096 (the
    // representative dims) or at 16 (a small batch), preferring the former,
    // the smallest such, else the largest.
    Lender *best = nullptr;
    bool bestFits = false;
    std::tuple<bool, bool, int64_t> bestRank;
    for (Lender &l : lenders) {
      if (end >= l.writtenAt ||
          llvm::any_of(l.held, [&, start = start, end = end](auto range) {
            return range.first <= end && start <= range.second;
          }))
        continue;
      bool fits = fitsIn(v, l.value, shapes);
      bool atRepresentative = vBytes <= l.bytes;
      if (!fits && !conditional)
        continue;
      if (!fits && !atRepresentative) {
        if (!vSmallBytes)
          vSmallBytes = representativeBytes(v, shapes, 16);
        if (*vSmallBytes > l.smallBytes)
          continue;
      }
      std::tuple<bool, bool, int64_t> rank = {
          fits, atRepresentative, atRepresentative ? -l.bytes : l.bytes};
      if (!best || rank > bestRank) {
        best = &l;
        bestFits = fits;
        bestRank = rank;
      }
    }
    if (!best)
      continue;
    lenderOf[v] = {best->result, !bestFits};
    best->held.push_back({start, end});
  }
}
