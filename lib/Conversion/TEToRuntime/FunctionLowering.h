//===- FunctionLowering.h - te-lower-to-runtime internals -------*- C++ -*-===//
//
// The lowering of one function to an entry point calling te_rt_*, shared by
// the files of lib/Conversion/TEToRuntime (one per family of primitives,
// the outlining of repeated layers, the module description; private).
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_CONVERSION_TETORUNTIME_FUNCTIONLOWERING_H
#define TE_LIB_CONVERSION_TETORUNTIME_FUNCTIONLOWERING_H

#include "te/Analysis/MemoryPlan.h"
#include "te/Analysis/ShapeAnalysis.h"
#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Dialect/TE/IR/TEQuantLayout.h"
#include "te/Transforms/PassOptions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace mlir::te::runtime_lowering {

constexpr int64_t kAlignment = kBufferAlignment;

/// te_rt dtype codes (TERuntime.h).
std::optional<int32_t> dtypeCode(Type element);

/// TE_RT_FP8_* codes.
int32_t fp8Code(QuantFormat f);

/// The LLVM function type of the runtime function `name`, from its C
/// prototype in TERuntime.def (the one list of the ABI); null if `name` is
/// not part of it. Only the prototypes' types are used: the compiler does
/// not link the runtime.
LLVM::LLVMFunctionType runtimeFunctionType(MLIRContext *ctx, StringRef name);

/// The NumPy-style name of a float type in te_module_info().
StringRef dtypeName(Type element);

/// Declares the subset of TERuntime.def the lowering calls at the start of
/// `module`, in a fixed order.
llvm::StringMap<LLVM::LLVMFuncOp> declareRuntimeFunctions(ModuleOp module,
                                                          OpBuilder &b);

/// Adds `te_module_info()` returning the JSON description of `entries`.
void emitModuleInfo(ModuleOp module, OpBuilder &b, llvm::json::Array entries);

/// When `amax` is a delayed-scaling amax vector some of whose slots no op
/// records (a tensor.concat along dim 0 of static 1-D f32 parts into at
/// most 64 elements, at least one part a zero splat constant, read only as
/// the amax operand of te.amax_update): the mask of
/// te_rt_amax_update_unused, bit s set for each element a zero part covers.
/// Its zero parts are then never written, neither slice by slice nor the
/// whole buffer early, and its updates take those slots' amax as 0 without
/// reading them: one memset node fewer per step in a CUDA graph. None for
/// any other value; such concats zero their slices as before.
std::optional<uint64_t> unusedAmaxSlots(Value amax);

//===----------------------------------------------------------------------===//
// Run-time sizes
//===----------------------------------------------------------------------===//

/// A size in the compiled code: a constant, or an i64 value that ops emitted
/// at the builder's insertion point compute from the dynamic dims. The dim
/// algebra getInnerTensorsOf is instantiated with to size the inner tensors
/// of a quantized buffer at run time; operations on constants fold.
class RtDim {
public:
  RtDim(int64_t value = 0) : constant(value) {}
  RtDim(Value value, OpBuilder &b) : value(value), b(&b) {}

  /// The i64 value (a constant materialized at `loc`).
  Value get(OpBuilder &builder, Location loc) const {
    if (value)
      return value;
    return LLVM::ConstantOp::create(builder, loc, builder.getI64Type(),
                                    builder.getI64IntegerAttr(constant));
  }

  RtDim operator*(const RtDim &rhs) const {
    if (!value && !rhs.value)
      return RtDim(constant * rhs.constant);
    if (!value && constant == 1)
      return rhs;
    if (!rhs.value && rhs.constant == 1)
      return *this;
    return emit<LLVM::MulOp>(rhs);
  }
  RtDim exactDiv(int64_t divisor) const {
    if (!value)
      return RtDim(constant / divisor);
    if (divisor == 1)
      return *this;
    return emit<LLVM::UDivOp>(RtDim(divisor));
  }
  RtDim ceilDiv(int64_t divisor) const {
    if (!value)
      return RtDim((constant + divisor - 1) / divisor);
    if (divisor == 1)
      return *this;
    return emit<LLVM::AddOp>(RtDim(divisor - 1))
        .emit<LLVM::UDivOp>(RtDim(divisor));
  }
  /// Smallest multiple of `multiple` not below this.
  RtDim roundUp(int64_t multiple) const {
    if (!value)
      return RtDim((constant + multiple - 1) / multiple * multiple);
    if (multiple == 1)
      return *this;
    return ceilDiv(multiple) * RtDim(multiple);
  }

private:
  /// `this OP rhs`, at least one of them a value.
  template <typename OpTy> RtDim emit(const RtDim &rhs) const {
    OpBuilder &builder = value ? *b : *rhs.b;
    Location loc = (value ? value : rhs.value).getLoc();
    return RtDim(
        OpTy::create(builder, loc, get(builder, loc), rhs.get(builder, loc)),
        builder);
  }

  int64_t constant = 0;
  Value value;
  OpBuilder *b = nullptr;
};

/// The outlined segments of a module (dedup-layers): by structural hash,
/// the functions kept, each called wherever a segment lowers to the same
/// code.
struct SegmentFunctions {
  /// The pass option.
  DedupLayers mode = DedupLayers::Off;
  llvm::DenseMap<unsigned, SmallVector<LLVM::LLVMFuncOp, 1>> byHash;
  unsigned kept = 0;
};

/// Byte offsets and sizes of a quantized value's inner tensors in its
/// buffer (by TE's name) and its total size.
struct QLayout {
  llvm::StringMap<Value> offsets, bytes;
  Value total;
  /// The offset of the first rowwise part (the tail a split value keeps in
  /// the arena), null when there is none.
  Value rowwiseStart;
};
/// Pointers to the inner tensors of a quantized value, by TE's name.
using QPtrs = llvm::StringMap<Value>;

/// The lowering of one function to its entry point, and the context the
/// patterns that lower its ops share (populateTEToRuntimePatterns): the
/// rewriter, positioned at the end of the code emitted so far, the dims and
/// the buffers of the memory plan, and helpers that build runtime calls.
class FunctionLowering {
public:
  FunctionLowering(func::FuncOp func, ModuleOp module, PatternRewriter &b,
                   llvm::StringMap<LLVM::LLVMFuncOp> &runtime,
                   SegmentFunctions &segments)
      : func(func), module(module), b(b), runtime(runtime), segments(segments),
        ctx(func.getContext()) {}

  LogicalResult run();
  llvm::json::Object info;

  //===--------------------------------------------------------------------===//
  // What the patterns build calls with (all at `b`'s insertion point, at
  // location `loc`: the op's)
  //===--------------------------------------------------------------------===//

  // Types and constants.
  Type ptrTy() { return LLVM::LLVMPointerType::get(ctx); }
  Type i64() { return b.getI64Type(); }
  Type i32() { return b.getI32Type(); }
  Value c64(int64_t v) {
    return LLVM::ConstantOp::create(b, loc, i64(), b.getI64IntegerAttr(v));
  }
  Value c32(int32_t v) {
    return LLVM::ConstantOp::create(b, loc, i32(), b.getI32IntegerAttr(v));
  }
  Value cf32(double v) {
    return LLVM::ConstantOp::create(b, loc, b.getF32Type(),
                                    b.getF32FloatAttr(v));
  }
  Value cf64(double v) {
    return LLVM::ConstantOp::create(b, loc, b.getF64Type(),
                                    b.getF64FloatAttr(v));
  }
  Value nullPtr() { return LLVM::ZeroOp::create(b, loc, ptrTy()); }
  Value gep(Value base, Value byteOffset) {
    return LLVM::GEPOp::create(b, loc, ptrTy(), b.getI8Type(), base,
                               ArrayRef<LLVM::GEPArg>{byteOffset});
  }
  Value loadIndexed(Value base, int64_t index, Type type) {
    Value p = LLVM::GEPOp::create(b, loc, ptrTy(), type, base,
                                  ArrayRef<LLVM::GEPArg>{int32_t(index)});
    return LLVM::LoadOp::create(b, loc, type, p);
  }

  // Sizes.
  Value dimValue(Dim d) {
    if (d.isStatic())
      return c64(d.value);
    Value v = d.value == 1 ? Value() : c64(d.value);
    for (int var : d.vars)
      v = v ? LLVM::MulOp::create(b, loc, v, dimValues.lookup(var))
            : dimValues.lookup(var);
    return v;
  }
  Value numElements(Value tensor, unsigned dropLast = 0) {
    SmallVector<Dim> d = shapes.dims(tensor);
    Value n = c64(1);
    for (unsigned i = 0; i + dropLast < d.size(); ++i)
      n = LLVM::MulOp::create(b, loc, n, dimValue(d[i]));
    return n;
  }
  Value rows(Value tensor) { return numElements(tensor, 1); }
  int64_t lastDim(Value tensor) {
    return cast<RankedTensorType>(tensor.getType()).getShape().back();
  }
  Value bytes(Value tensor) {
    if (isa<QuantizedTensorType>(tensor.getType()))
      return layout(tensor).total;
    auto t = cast<RankedTensorType>(tensor.getType());
    return LLVM::MulOp::create(
        b, loc, numElements(tensor),
        c64(t.getElementType().getIntOrFloatBitWidth() / 8));
  }
  Value alignUp(Value n) {
    Value padded = LLVM::AddOp::create(b, loc, n, c64(kAlignment - 1));
    return LLVM::AndOp::create(b, loc, padded, c64(~(kAlignment - 1)));
  }
  /// The inner tensors of quantized value `v` in buffer order, sized from
  /// the values of its dims at run time.
  SmallVector<InnerTensorOf<RtDim>> runtimeParts(Value v) {
    SmallVector<RtDim> dims;
    for (Dim d : shapes.dims(v))
      dims.push_back(d.isStatic() ? RtDim(d.value) : RtDim(dimValue(d), b));
    return inBufferOrder(
        getInnerTensorsOf<RtDim>(cast<QuantizedTensorType>(v.getType()), dims));
  }
  QLayout layout(Value v) {
    QLayout l;
    Value offset = c64(0);
    for (const InnerTensorOf<RtDim> &t : runtimeParts(v)) {
      RtDim elements(1);
      for (const RtDim &d : t.shape)
        elements = elements * d;
      l.offsets[t.name] = offset;
      if (!l.rowwiseStart && isRowwisePart(t.name))
        l.rowwiseStart = offset;
      Value bytes = LLVM::MulOp::create(b, loc, elements.get(b, loc),
                                        c64(t.elementBytes));
      l.bytes[t.name] = bytes;
      offset = LLVM::AddOp::create(b, loc, offset, alignUp(bytes));
    }
    l.total = offset;
    return l;
  }
  /// Pointers to the inner tensors of a quantized value, by TE's name.
  QPtrs qptrs(Value v) { return qptrs(v, layout(v)); }
  QPtrs qptrs(Value v, const QLayout &l) {
    Value base = ptr(v);
    // A split value (MemoryPlan::splitResult): its rowwise parts at their
    // offsets past the first one's in its arena slot.
    Value tail = tailBuffers.lookup(v);
    QPtrs p;
    for (auto &entry : l.offsets)
      p[entry.getKey()] =
          tail && isRowwisePart(entry.getKey())
              ? gep(tail, LLVM::SubOp::create(b, loc, entry.getValue(),
                                              l.rowwiseStart))
              : gep(base, entry.getValue());
    return p;
  }
  /// The bytes planned value `v` takes in its arena slot: its buffer's, a
  /// split value's rowwise parts'.
  Value slotBytes(Value v) {
    if (!memory.splitResult.count(v))
      return bytes(v);
    QLayout l = layout(v);
    return LLVM::SubOp::create(b, loc, l.total, l.rowwiseStart);
  }
  /// Whether static dim-0 concat result `v` is zeroed whole where its buffer
  /// becomes live (its zero parts are then not memset at the concat).
  bool zeroedEarly(Value v) const { return zeroedConcats.contains(v); }
  /// Inner tensor `name` of `p`, or a null pointer when it has none.
  Value part(const QPtrs &p, StringRef name) {
    Value v = p.lookup(name);
    return v ? v : nullPtr();
  }

  // Runtime calls: emits the call and a branch to the failure exit (by
  // default the one that frees the arena).
  void call(StringRef name, ArrayRef<Value> operands, Block *fail = nullptr);
  void call(LLVM::LLVMFuncOp callee, ArrayRef<Value> operands,
            Block *fail = nullptr);
  /// The buffer of `tensor`: its root's, at its offset there (a concat
  /// part placed in its concat's buffer).
  Value ptr(Value tensor) {
    Value base = buffers.lookup(root(tensor));
    int64_t offset = memory.offsetInRoot(tensor);
    return base && offset ? gep(base, c64(offset)) : base;
  }
  /// &scales[slot]: the fp8-delayed scale a per-tensor cast reads.
  Value slotPtr(Value scales, int64_t slot) {
    return gep(ptr(scales), c64(4 * slot));
  }
  /// The per-tensor casts' pow2 argument: fp8-current's power_2_scales, 0
  /// for fp8-delayed.
  Value pow2Flag(QuantizedTensorType q) {
    auto cs = dyn_cast<FP8CurrentRecipeAttr>(q.getRecipe());
    return c32(cs && cs.getPower_2Scales());
  }
  Value root(Value v) const { return memory.root(v); }
  /// The te_rt dtype code of a tensor's element type.
  Value dtype(Value v) {
    return c32(
        *dtypeCode(cast<RankedTensorType>(v.getType()).getElementType()));
  }
  /// The operands every activation call starts with (Activation.cpp).
  template <typename OpTy>
  SmallVector<Value> activationOperands(OpTy a, ArrayRef<Value> buffers);

private:
  /// The steps of run(), in order.
  /// Indexes the patterns by root op, most beneficial first (patternsByOp).
  void indexPatterns();
  /// An error unless the types of the function's values can be lowered:
  /// tensors (quantized ones of a lowered recipe) within the shape bounds.
  LogicalResult checkValueTypes();
  /// An error at `where` unless quantized type `t` (if it is one) has a
  /// runtime lowering.
  LogicalResult checkQuantized(Type t, Location where);
  /// Creates the entry, loads its dims and buffers, emits its checks.
  void buildEntryPrologue();
  /// Acquires the arena, places the slots' buffers in it and creates the
  /// failure exit that releases it.
  void acquireArena();
  /// Copies out the results not computed in place, releases the arena and
  /// returns 0.
  void buildEntryEpilogue(func::ReturnOp ret);
  /// A recipe's alignment condition on a dynamic dim: `dim % multiple == 0`,
  /// `what` the error message ("<entry>: recipe R needs <condition>").
  struct AlignmentCheck {
    Dim dim;
    int64_t multiple;
    std::string what;
  };
  /// The conditions the quantized values of the function need (rows and
  /// columns of their logical shapes, as te-describe checks GEMM operands),
  /// one per distinct condition, in program order.
  SmallVector<AlignmentCheck> alignmentChecks();
  void emitAlignmentChecks();
  /// Range checks of the dynamic dims at entry, before the alignment checks
  /// and the arena: every dim variable in [0, kMaxDimSize] and every
  /// dynamic tensor's element count (saturating) in [0, kMaxElements], so
  /// that no size computed from them overflows (the verifiers bound the
  /// static ones the same way).
  void emitSizeChecks();
  /// Calls `check(value, max, what)` for every bound the entry's dims and
  /// element counts must meet (value in [0, max]); emitSizeChecks turns
  /// them into te_rt_check_range calls, te_arena_bytes_<fn> into a flag.
  void forEachSizeCheck(
      llvm::function_ref<void(Value, int64_t, const std::string &)> check);
  /// The arena's bytes at the current dims; each slot's offset appended to
  /// `slotOffsets`.
  Value arenaLayout(SmallVectorImpl<Value> &slotOffsets);
  /// Emits te_arena_bytes_<fn>(dims) beside the entry, and for an entry
  /// with donors te_arena_bytes_donated_<fn>(dims, donated).
  void buildArenaBytesFunction();
  /// The function `name`(dims[, donated]) returning the arena's bytes at
  /// dims, -1 out of range; `donated` (per argument, 0 or not) when
  /// `withDonated`. Placed after `after`.
  Operation *buildArenaBytesFunction(StringRef name, bool withDonated,
                                     Operation *after);
  /// Whether each donor's buffer is donated to this call
  /// (te_rt_arg_donated, in the prologue), as an i1.
  void loadDonatedFlags();
  /// The buffer of planned value `v` at `arenaAddress` in the arena, or its
  /// lender's (a result's, when it fits) or its donor's (when donated).
  Value placedBuffer(Value v, Value arenaAddress);
  /// The value the function returns as result `r`.
  Value resultValue(unsigned r);
  /// Whether conditionally lent `v` fits in its lender at the current dims,
  /// as an i1 (built once per function at the first use).
  Value lentFlag(Value v);
  /// The entry's block that returns the status of a failed check (nothing
  /// allocated yet), created on first use.
  Block *checkFailBlock();
  /// A NUL-terminated message as an internal global `<fn>__<kind><i>`.
  Value messageGlobal(StringRef text, StringRef kind, unsigned i);
  /// `d` as an i64 that saturates at INT64_MAX instead of wrapping.
  Value saturatingDimValue(const Dim &d);
  Block *checkFail = nullptr;
  /// Lowers `op` by the first of its patterns that matches; an error when
  /// none does or the pattern failed.
  LogicalResult lowerOp(Operation *op);
  /// The entry's description in te_module_info() (ModuleInfo.cpp).
  void buildInfo(func::ReturnOp ret);
  /// The recipe-state results the caller may have written over their
  /// arguments (ModuleInfo.cpp, module info `state_in_place`), found on
  /// the te body before it is lowered: (result, argument) pairs.
  void findStateInPlace();
  SmallVector<std::pair<unsigned, unsigned>> stateInPlace;
  /// The body: its segments (runs of ops with the same location) inline or,
  /// by dedup-layers, outlined.
  LogicalResult lowerBody();
  /// Lowers `ops` into a function of their own (or one already made that
  /// is the same) and calls it.
  LogicalResult lowerOutlined(ArrayRef<Operation *> ops);
  /// After outlining: the buffer addresses and dims computed on entry are
  /// recomputed where they are read instead (computed on entry, thousands
  /// of them would live across the whole entry, and LLVM's register
  /// allocation is superlinear in that).
  void localizeBuffers();
  bool outlinedAny = false;
  /// te-fork-branches's branches (te.branch, MemoryPlan.h): each marked op a
  /// run of its own, bracketed with te_rt_branch_begin / _end (branchBefore
  /// ends the run before, branchBegin begins the op's after the op's
  /// concat zeroing); before an unmarked op that reads values runs wrote,
  /// te_rt_branch_join up to the latest of those runs; closeBranches joins
  /// everything (the entry's end). Outlined segments run in order: what is
  /// open or pending before one is ended and joined, and nothing in it is
  /// put on a branch.
  void branchBefore(Operation *op);
  void branchBegin(Operation *op);
  void closeBranches();
  bool inBranch = false, branchesOff = false;
  /// Runs begun since the last join of everything, and the run that wrote
  /// each value not joined yet.
  int64_t branchRuns = 0;
  llvm::DenseMap<Value, int64_t> branchRunOf;
  std::string symbolOf(Dim d) const;
  /// `d` over the entry's dim symbols (`d<k>` for class k).
  SymDim symDimOf(Dim d) const;
  llvm::json::Array shapeJSON(Value v, Type type) const;

public:
  //===--------------------------------------------------------------------===//
  // State
  //===--------------------------------------------------------------------===//

  func::FuncOp func;
  ModuleOp module;
  /// The rewriter the patterns are given: at the end of the entry so far.
  PatternRewriter &b;
  llvm::StringMap<LLVM::LLVMFuncOp> &runtime;
  SegmentFunctions &segments;
  MLIRContext *ctx;
  Location loc = UnknownLoc::get(ctx);
  /// The patterns of the body's ops, and by root op the order they are
  /// tried in (most beneficial first, then as populated).
  RewritePatternSet patterns{ctx};
  llvm::DenseMap<OperationName, SmallVector<const RewritePattern *, 2>>
      patternsByOp;
  /// Set by a pattern that matched and failed (its error emitted).
  bool hadError = false;

  ShapeAnalysis shapes;
  LLVM::LLVMFuncOp entry;
  Value ctxArg, argsArg, resultsArg, dimsArg, arena;
  Block *failBlock = nullptr;
  llvm::DenseMap<int, Value> dimValues;
  /// The arena plan: views, slots, in-place results (lib/Analysis).
  MemoryPlan memory;
  /// Buffer of each root value (a split value's: its result's, where its
  /// columnwise parts are).
  llvm::DenseMap<Value, Value> buffers;
  /// The arena slot of each split value's rowwise parts.
  llvm::DenseMap<Value, Value> tailBuffers;
  /// Per donor (MemoryPlan::donors): whether it is donated to this call.
  llvm::DenseMap<Value, Value> donatedFlags;
  /// Per conditionally lent value (MemoryPlan::lenderOf): whether it fits
  /// in its lender at this call's dims.
  llvm::DenseMap<Value, Value> lentFlags;
  /// One memset per concat: the static dim-0 concats whose zero parts make
  /// more than one run and that have parts placed in their buffer are
  /// zeroed whole before the first placed part's producer runs (its op
  /// here), not slice by slice at the concat.
  llvm::DenseMap<Operation *, SmallVector<Value, 1>> zeroBefore;
  llvm::DenseSet<Value> zeroedConcats;
  /// Finds them (run(), after the memory plan).
  void planEarlyZeroing();
  /// Constants lowered so far (their globals are `<fn>__const<i>`).
  unsigned constants = 0;
};

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// The base of the patterns that lower one op of a function body into the
/// runtime calls of its entry point. Each matches its op as an
/// OpRewritePattern, then emits the calls with the lowering's rewriter (the
/// one it is given), where the lowering positioned it: after the code of
/// the ops before. The op itself stays: the function is erased whole once
/// its entry is built, so the patterns read the buffers and dims of its
/// values through `lowering` instead of replacing them. `lower` fails
/// after emitting an error at the op; the lowering then fails.
template <typename OpTy>
class RuntimeCallPattern : public OpRewritePattern<OpTy> {
public:
  RuntimeCallPattern(FunctionLowering &lowering, PatternBenefit benefit = 1)
      : OpRewritePattern<OpTy>(lowering.ctx, benefit), lowering(lowering) {}

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const final {
    assert(&rewriter == &lowering.b && "not the lowering's rewriter");
    if (failed(matchOp(op)))
      return failure();
    if (failed(lower(op, lowering)))
      lowering.hadError = true;
    return success();
  }

protected:
  /// Whether this pattern lowers `op` (every op of its type by default).
  virtual LogicalResult matchOp(OpTy op) const { return success(); }
  /// Emits the calls of `op` through `l` (the pattern's lowering).
  virtual LogicalResult lower(OpTy op, FunctionLowering &l) const = 0;

  FunctionLowering &lowering;
};

/// The patterns of each family of ops, one file each.
void populateNormToRuntimePatterns(FunctionLowering &lowering,
                                   RewritePatternSet &patterns);
void populateQuantizeToRuntimePatterns(FunctionLowering &lowering,
                                       RewritePatternSet &patterns);
void populateGemmToRuntimePatterns(FunctionLowering &lowering,
                                   RewritePatternSet &patterns);
void populateActivationToRuntimePatterns(FunctionLowering &lowering,
                                         RewritePatternSet &patterns);
void populateStateToRuntimePatterns(FunctionLowering &lowering,
                                    RewritePatternSet &patterns);
void populateCollectiveToRuntimePatterns(FunctionLowering &lowering,
                                         RewritePatternSet &patterns);
void populateElementwiseToRuntimePatterns(FunctionLowering &lowering,
                                          RewritePatternSet &patterns);

/// Every pattern of te-lower-to-runtime, for the ops of `lowering`'s
/// function.
void populateTEToRuntimePatterns(FunctionLowering &lowering,
                                 RewritePatternSet &patterns);

} // namespace mlir::te::runtime_lowering

#endif // TE_LIB_CONVERSION_TETORUNTIME_FUNCTIONLOWERING_H
