//===- LowerToRuntime.cpp - te-lower-to-runtime -----------------*- C++ -*-===//
//
// Lowers functions of L2 primitives on tensors to LLVM-dialect entry points
// that call the te_rt_* runtime ABI (include/te/Runtime/TERuntime.def):
//
//   int32_t NAME(te_rt_context *ctx, void *const *args, void *const *results,
//                const int64_t *dims);
//
// `args`/`results` hold one buffer per function argument/result (on the
// context's backend), `dims` the values of the dynamic dims, one per class
// of dims the program requires to be equal (in order of first appearance in
// the arguments). The call returns 0, or the status of the first failing
// runtime call (te_rt_last_error says why).
//
// Memory is planned here: every intermediate lives in one arena allocated
// per call; buffers whose lifetimes do not overlap share a slot (slots are
// sized by their largest member at run time, so the plan holds for every
// value of the dynamic dims). Values returned by the function are computed
// in place in the caller's result buffers. A JSON description of the
// entries (signatures, dims, planned arena bytes) is returned by the
// generated `te_module_info()`.
//
// The recipes' alignment on dynamic dims (te-describe's `runtime_checks`,
// e.g. fp8-block's `d0 % 128 == 0`) is checked on entry, once per distinct
// condition, by te_rt_check_multiple: a call with other values fails with
// "<entry>: recipe <r> needs <condition>, got <value>" before any work, as a
// static shape that violates it would have fallen back to bf16 at compile
// time instead.
//
// A quantized value (`!te.qtensor`: per-tensor FP8 or Float8 block scaling
// on Hopper, MXFP8 and NVFP4 on Blackwell) is one buffer holding its inner
// tensors (TE's, as the type describes them), each at a 256-byte aligned
// offset: first what both usages share, then the columnwise copy, then the
// rowwise one. Per-tensor FP8: `scale_inv` [1] fp32, `transpose` [K, M], `data`
// [M, K]; fp8-block: `columnwise_data` [K, M], `columnwise_scale_inv`,
// `rowwise_data` [M, K], `rowwise_scale_inv`; MXFP8 the same names with the
// columnwise data not transposed; NVFP4 like fp8-block with packed data and
// each copy's `amax_*` last in its group. The columnwise-only tensor a backward
// keeps is thus a prefix of the `both` one (te.drop_usage is a view).
// te_module_info() lists the inner tensors in buffer order, so callers size and
// read such buffers without knowing the recipe. With dynamic dims their sizes
// are computed at run time (TE's layout rules on i64 values, RtDim) and their
// shapes listed as expressions of the dim symbols (`ceildiv(d0, 128)`).
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Dialect/TE/IR/TEQuantLayout.h"
#include "te/Runtime/TERuntime.h"
#include "te/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"

#include <limits>

namespace mlir::te {
#define GEN_PASS_DEF_TELOWERTORUNTIMEPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

constexpr int64_t kAlignment = 256;

/// te_rt dtype codes (TERuntime.h).
std::optional<int32_t> dtypeCode(Type element) {
  if (element.isF32())
    return TE_RT_DTYPE_F32;
  if (element.isBF16())
    return TE_RT_DTYPE_BF16;
  if (element.isF16())
    return TE_RT_DTYPE_F16;
  return std::nullopt;
}

/// TE_RT_FP8_* codes.
int32_t fp8Code(QuantFormat f) {
  return f == QuantFormat::E4M3 ? TE_RT_FP8_E4M3 : TE_RT_FP8_E5M2;
}

// The codes the lowering passes as bare integers are the runtime's.
static_assert(int32_t(NormalizationKind::LayerNorm) == TE_RT_NORM_LAYERNORM &&
                  int32_t(NormalizationKind::RMSNorm) == TE_RT_NORM_RMSNORM,
              "te.normalization and TE_RT_NORM_* disagree");
#define TE_CHECK_ACT(kind, code)                                               \
  static_assert(int32_t(ActivationKind::kind) == code,                         \
                "te.activation " #kind " and " #code " disagree");
TE_CHECK_ACT(GELU, TE_RT_ACT_GELU)
TE_CHECK_ACT(GEGLU, TE_RT_ACT_GEGLU)
TE_CHECK_ACT(GLU, TE_RT_ACT_GLU)
TE_CHECK_ACT(QGELU, TE_RT_ACT_QGELU)
TE_CHECK_ACT(QGEGLU, TE_RT_ACT_QGEGLU)
TE_CHECK_ACT(ReLU, TE_RT_ACT_RELU)
TE_CHECK_ACT(ReGLU, TE_RT_ACT_REGLU)
TE_CHECK_ACT(SReLU, TE_RT_ACT_SRELU)
TE_CHECK_ACT(SReGLU, TE_RT_ACT_SREGLU)
TE_CHECK_ACT(SiLU, TE_RT_ACT_SILU)
TE_CHECK_ACT(SwiGLU, TE_RT_ACT_SWIGLU)
TE_CHECK_ACT(ClampedSwiGLU, TE_RT_ACT_CLAMPED_SWIGLU)
TE_CHECK_ACT(GELUErf, TE_RT_ACT_GELU_ERF)
#undef TE_CHECK_ACT
static_assert(getMaxEnumValForActivationKind() == TE_RT_ACT_GELU_ERF,
              "a te.activation without a TE_RT_ACT_* code (add it above)");

/// The LLVM type of a C parameter or result of the ABI.
template <typename T> Type llvmTypeOf(MLIRContext *ctx) {
  if constexpr (std::is_pointer_v<T>)
    return LLVM::LLVMPointerType::get(ctx);
  else if constexpr (std::is_void_v<T>)
    return LLVM::LLVMVoidType::get(ctx);
  else if constexpr (std::is_same_v<T, float>)
    return Float32Type::get(ctx);
  else if constexpr (std::is_same_v<T, double>)
    return Float64Type::get(ctx);
  else {
    static_assert(std::is_integral_v<T>, "an ABI type with no LLVM mapping");
    return IntegerType::get(ctx, 8 * sizeof(T));
  }
}
template <typename R, typename... A>
LLVM::LLVMFunctionType llvmFunctionTypeOf(MLIRContext *ctx, R (*)(A...)) {
  return LLVM::LLVMFunctionType::get(llvmTypeOf<R>(ctx),
                                     {llvmTypeOf<A>(ctx)...});
}

/// The LLVM function type of the runtime function `name`, from its C
/// prototype in TERuntime.def (the one list of the ABI); null if `name` is
/// not part of it. Only the prototypes' types are used: the compiler does
/// not link the runtime.
LLVM::LLVMFunctionType runtimeFunctionType(MLIRContext *ctx, StringRef name) {
#define TE_RT_FUNC(ret, fn, params)                                            \
  if (name == #fn)                                                             \
    return llvmFunctionTypeOf(ctx, static_cast<decltype(&fn)>(nullptr));
#include "te/Runtime/TERuntime.def"
#undef TE_RT_FUNC
  return {};
}

StringRef dtypeName(Type element) {
  return element.isF32()    ? "float32"
         : element.isBF16() ? "bfloat16"
         : element.isF16()  ? "float16"
                            : "unknown";
}

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

//===----------------------------------------------------------------------===//
// Dynamic dims: which dims must be equal, and the symbol of each.
//===----------------------------------------------------------------------===//

/// A tensor dim: a constant, or a variable (a dynamic dim of an argument,
/// up to equality).
struct Dim {
  int64_t value = 0;          ///< when static; the constant factor otherwise
  SmallVector<int, 1> vars;   ///< dim variables multiplied in; none if static
  bool isStatic() const { return vars.empty(); }
  /// Exactly the variable `v` (an argument's dynamic dim).
  bool isVar(int v) const {
    return vars.size() == 1 && vars[0] == v && value == 1;
  }
};

class ShapeAnalysis {
public:
  LogicalResult run(func::FuncOp func);

  /// The dims of a tensor value (variables resolved to class leaders).
  SmallVector<Dim> dims(Value v) const {
    SmallVector<Dim> out = shapes.lookup(v);
    for (Dim &d : out)
      for (int &v : d.vars)
        v = leader(v);
    return out;
  }
  int leader(int var) const { return classes.getLeaderValue(var); }
  /// Class leaders in order of first appearance in the arguments.
  SmallVector<int> dimClasses;

private:
  void unify(Operation *op, ArrayRef<Dim> a, ArrayRef<Dim> b) {
    for (auto [x, y] : llvm::zip(a, b))
      if (x.vars.size() == 1 && y.vars.size() == 1 && x.value == y.value)
        classes.unionSets(x.vars[0], y.vars[0]);
  }
  LogicalResult define(Operation *op);

  llvm::DenseMap<Value, SmallVector<Dim>> shapes;
  llvm::EquivalenceClasses<int> classes;
  int numVars = 0;
};

/// The (logical) shape of a tensor or quantized tensor type.
std::optional<ArrayRef<int64_t>> shapeOfType(Type t) {
  if (auto r = dyn_cast<RankedTensorType>(t))
    return r.getShape();
  if (auto q = dyn_cast<QuantizedTensorType>(t))
    return q.getShape();
  return std::nullopt;
}

SmallVector<Dim> staticDims(ArrayRef<int64_t> shape) {
  SmallVector<Dim> out;
  for (int64_t d : shape)
    out.push_back(Dim{ShapedType::isDynamic(d) ? 0 : d, {}});
  return out;
}

LogicalResult ShapeAnalysis::define(Operation *op) {
  for (Value result : op->getResults()) {
    std::optional<ArrayRef<int64_t>> shape = shapeOfType(result.getType());
    if (!shape)
      continue;
    SmallVector<Dim> d = staticDims(*shape);
    for (unsigned i = 0; i < d.size(); ++i) {
      if (!ShapedType::isDynamic((*shape)[i]))
        continue;
      // Rank-1 fp32 statistics have the rows of the normalized input.
      if (shape->size() == 1 && isa<NormFwdOp, NormQuantizeOp>(op)) {
        SmallVector<Dim> in = shapes.lookup(op->getOperand(0));
        // rows = the product of the leading dims.
        Dim rows{1, {}};
        for (unsigned j = 0; j + 1 < in.size(); ++j) {
          rows.value *= in[j].value;
          llvm::append_range(rows.vars, in[j].vars);
        }
        d[i] = rows;
        continue;
      }
      // Otherwise a leading dim of an operand of the same rank.
      bool found = false;
      for (Value operand : op->getOperands()) {
        std::optional<ArrayRef<int64_t>> os = shapeOfType(operand.getType());
        if (os && os->size() == shape->size() &&
            ShapedType::isDynamic((*os)[i])) {
          d[i] = shapes.lookup(operand)[i];
          found = true;
          break;
        }
      }
      if (!found)
        return op->emitError() << "te-lower-to-runtime: cannot tell the size "
                                  "of dynamic dim "
                               << i << " of " << result.getType();
    }
    shapes[result] = d;
  }
  // Operands whose leading dims the op requires to be equal.
  auto dimsOf = [&](Value v) { return ArrayRef<Dim>(shapes[v]); };
  if (isa<arith::AddFOp>(op))
    unify(op, dimsOf(op->getOperand(0)), dimsOf(op->getOperand(1)));
  if (auto gemm = dyn_cast<GemmOp>(op); gemm && gemm.getLayout() == GemmLayout::NT)
    unify(op, dimsOf(gemm.getLhs()).drop_back(), dimsOf(gemm.getRhs()).drop_back());
  if (auto nb = dyn_cast<NormBwdOp>(op)) {
    unify(op, dimsOf(nb.getGrad()), dimsOf(nb.getInput()));
    // Per-row statistics of a [?, K] input have its rows.
    ArrayRef<Dim> in = dimsOf(nb.getInput());
    if (in.size() == 2)
      for (Value stat : {nb.getRsigma(), nb.getMu()})
        if (stat)
          unify(op, in.take_front(), dimsOf(stat));
  }
  if (auto da = dyn_cast<DActOp>(op))
    unify(op, dimsOf(da.getGrad()).drop_back(), dimsOf(da.getInput()).drop_back());
  if (auto da = dyn_cast<DActQuantizeOp>(op))
    unify(op, dimsOf(da.getGrad()).drop_back(),
          dimsOf(da.getInput()).drop_back());
  if (auto g = dyn_cast<GemmDActOp>(op))
    unify(op, dimsOf(g.getLhs()).drop_back(), dimsOf(g.getPre()).drop_back());
  if (auto ret = dyn_cast<func::ReturnOp>(op))
    for (auto [v, type] : llvm::zip(ret.getOperands(),
                                    op->getParentOfType<func::FuncOp>()
                                        .getResultTypes()))
      (void)type;
  return success();
}

LogicalResult ShapeAnalysis::run(func::FuncOp func) {
  for (BlockArgument arg : func.getArguments()) {
    std::optional<ArrayRef<int64_t>> shape = shapeOfType(arg.getType());
    if (!shape)
      return func.emitError() << "te-lower-to-runtime: argument #"
                              << arg.getArgNumber()
                              << " must be a ranked tensor or a quantized "
                                 "tensor, got "
                              << arg.getType();
    SmallVector<Dim> d = staticDims(*shape);
    for (unsigned i = 0; i < d.size(); ++i)
      if (ShapedType::isDynamic((*shape)[i])) {
        d[i] = Dim{1, {numVars++}};
        classes.insert(d[i].vars[0]);
      }
    shapes[arg] = d;
  }
  for (Operation &op : func.getBody().front())
    if (failed(define(&op)))
      return failure();
  // Class leaders in order of first appearance in the arguments.
  llvm::DenseSet<int> seen;
  for (BlockArgument arg : func.getArguments())
    for (Dim d : dims(arg))
      if (!d.isStatic() && seen.insert(d.vars[0]).second)
        dimClasses.push_back(d.vars[0]);
  return success();
}

//===----------------------------------------------------------------------===//
// The lowering of one function
//===----------------------------------------------------------------------===//

/// The outlined segments of a module (dedup-layers): by structural hash,
/// the functions kept, each called wherever a segment lowers to the same
/// code.
struct SegmentFunctions {
  /// off, auto or on (the pass option).
  std::string mode = "off";
  llvm::DenseMap<unsigned, SmallVector<LLVM::LLVMFuncOp, 1>> byHash;
  unsigned kept = 0;
};

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

class FunctionLowering {
public:
  FunctionLowering(func::FuncOp func, ModuleOp module, OpBuilder &b,
                   llvm::StringMap<LLVM::LLVMFuncOp> &runtime,
                   SegmentFunctions &segments)
      : func(func), module(module), b(b), runtime(runtime),
        segments(segments), ctx(func.getContext()) {}

  LogicalResult run();
  llvm::json::Object info;

private:
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
  static std::optional<int64_t> staticBytes(Value tensor) {
    if (auto q = dyn_cast<QuantizedTensorType>(tensor.getType())) {
      int64_t total = 0;
      for (const InnerTensor &t : bufferParts(q)) {
        int64_t n = t.elementBytes;
        for (const SymDim &d : t.shape) {
          if (!d.isStatic())
            return std::nullopt;
          n *= d.getValue();
        }
        total += llvm::alignTo(n, kAlignment);
      }
      return total;
    }
    auto t = cast<RankedTensorType>(tensor.getType());
    if (!t.hasStaticShape())
      return std::nullopt;
    return t.getNumElements() * (t.getElementType().getIntOrFloatBitWidth() / 8);
  }
  Value alignUp(Value n) {
    Value padded = LLVM::AddOp::create(b, loc, n, c64(kAlignment - 1));
    return LLVM::AndOp::create(b, loc, padded, c64(~(kAlignment - 1)));
  }
  /// The inner tensors of a quantized type in buffer order (symbolic dims).
  static SmallVector<InnerTensor> bufferParts(QuantizedTensorType q) {
    return inBufferOrder(q.getInnerTensors());
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
  /// Byte offsets and sizes of a quantized value's inner tensors in its
  /// buffer (by TE's name) and its total size.
  struct QLayout {
    llvm::StringMap<Value> offsets, bytes;
    Value total;
  };
  QLayout layout(Value v) {
    QLayout l;
    Value offset = c64(0);
    for (const InnerTensorOf<RtDim> &t : runtimeParts(v)) {
      RtDim elements(1);
      for (const RtDim &d : t.shape)
        elements = elements * d;
      l.offsets[t.name] = offset;
      Value bytes = LLVM::MulOp::create(b, loc, elements.get(b, loc),
                                        c64(t.elementBytes));
      l.bytes[t.name] = bytes;
      offset = LLVM::AddOp::create(b, loc, offset, alignUp(bytes));
    }
    l.total = offset;
    return l;
  }
  /// Pointers to the inner tensors of a quantized value, by TE's name.
  using QPtrs = llvm::StringMap<Value>;
  QPtrs qptrs(Value v) { return qptrs(v, layout(v)); }
  QPtrs qptrs(Value v, const QLayout &l) {
    Value base = ptr(v);
    QPtrs p;
    for (auto &entry : l.offsets)
      p[entry.getKey()] = gep(base, entry.getValue());
    return p;
  }
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
  Value ptr(Value tensor) { return buffers.lookup(root(tensor)); }
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
  Value root(Value v) const {
    while (Value src = aliasOf.lookup(v))
      v = src;
    return v;
  }

  LogicalResult plan();
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
  /// The entry's block that returns the status of a failed check (nothing
  /// allocated yet), created on first use.
  Block *checkFailBlock();
  /// A NUL-terminated message as an internal global `<fn>__<kind><i>`.
  Value messageGlobal(StringRef text, StringRef kind, unsigned i);
  /// `d` as an i64 that saturates at INT64_MAX instead of wrapping.
  Value saturatingDimValue(const Dim &d);
  Block *checkFail = nullptr;
  LogicalResult lowerOp(Operation *op);
  LogicalResult lowerConstant(arith::ConstantOp op);
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
  std::string symbolOf(Dim d) const;
  /// `d` over the entry's dim symbols (`d<k>` for class k).
  SymDim symDimOf(Dim d) const;
  llvm::json::Array shapeJSON(Value v, Type type) const;

  func::FuncOp func;
  ModuleOp module;
  OpBuilder &b;
  llvm::StringMap<LLVM::LLVMFuncOp> &runtime;
  SegmentFunctions &segments;
  MLIRContext *ctx;
  Location loc = UnknownLoc::get(ctx);

  ShapeAnalysis shapes;
  LLVM::LLVMFuncOp entry;
  Value ctxArg, argsArg, resultsArg, dimsArg, arena;
  Block *failBlock = nullptr;
  llvm::DenseMap<int, Value> dimValues;
  /// Views: a value that is another value's buffer (reshapes).
  llvm::DenseMap<Value, Value> aliasOf;
  /// Buffer of each root value.
  llvm::DenseMap<Value, Value> buffers;
  /// Arena slot of each planned value, and the slots' members.
  llvm::DenseMap<Value, unsigned> slotOf;
  SmallVector<SmallVector<Value>> slots;
  /// Returned values computed in place into result i.
  llvm::DenseMap<Value, unsigned> inPlaceResult;
  std::optional<int64_t> arenaBytes = 0;
  unsigned constants = 0;
};

std::string FunctionLowering::symbolOf(Dim d) const {
  if (d.isStatic())
    return std::to_string(d.value);
  std::string sym;
  for (int var : d.vars) {
    auto it = llvm::find(shapes.dimClasses, var);
    sym += (sym.empty() ? "d" : "*d") +
           std::to_string(it - shapes.dimClasses.begin());
  }
  return d.value == 1 ? sym : sym + "*" + std::to_string(d.value);
}

SymDim FunctionLowering::symDimOf(Dim d) const {
  SymDim out(d.value);
  for (int var : d.vars) {
    auto it = llvm::find(shapes.dimClasses, var);
    out = out *
          SymDim::symbol("d" + std::to_string(it - shapes.dimClasses.begin()));
  }
  return out;
}

llvm::json::Array FunctionLowering::shapeJSON(Value v, Type type) const {
  llvm::json::Array shape;
  for (Dim d : shapes.dims(v))
    if (d.isStatic())
      shape.push_back(d.value);
    else
      shape.push_back(symbolOf(d));
  return shape;
}

void FunctionLowering::call(StringRef name, ArrayRef<Value> operands,
                            Block *fail) {
  LLVM::LLVMFuncOp callee = runtime.lookup(name);
  assert(callee && "runtime function not declared");
  call(callee, operands, fail);
}

void FunctionLowering::call(LLVM::LLVMFuncOp callee, ArrayRef<Value> operands,
                            Block *fail) {
  assert(llvm::all_of(operands, [](Value v) { return bool(v); }) &&
         "operand without a buffer");
  Value status = LLVM::CallOp::create(b, loc, callee, operands).getResult();
  Value failed = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, status,
                                      c32(0));
  Block *next = b.getInsertionBlock()->splitBlock(b.getInsertionPoint());
  b.setInsertionPointToEnd(next->getPrevNode());
  LLVM::CondBrOp::create(b, loc, failed, fail ? fail : failBlock,
                         ValueRange{status}, next, ValueRange{});
  b.setInsertionPointToStart(next);
}

SmallVector<FunctionLowering::AlignmentCheck>
FunctionLowering::alignmentChecks() {
  SmallVector<AlignmentCheck> checks;
  llvm::StringSet<> seen;
  auto visit = [&](Value v) {
    auto q = dyn_cast<QuantizedTensorType>(v.getType());
    if (!q)
      return;
    RecipeAlignment align = getRecipeAlignment(q.getRecipe());
    SmallVector<Dim> d = shapes.dims(v);
    // Rows: the product of the leading dims.
    Dim rows{1, {}};
    for (const Dim &x : ArrayRef<Dim>(d).drop_back()) {
      rows.value *= x.value;
      llvm::append_range(rows.vars, x.vars);
    }
    for (auto [dim, multiple] :
         {std::pair<Dim, int64_t>{rows, align.rows}, {d.back(), align.cols}}) {
      // Static dims were checked at compile time (fallback or verifier);
      // d0*128 is always a multiple of 128.
      if (multiple <= 1 || dim.isStatic() || dim.value % multiple == 0)
        continue;
      std::string condition =
          symDimOf(dim).str() + " % " + std::to_string(multiple) + " == 0";
      if (!seen.insert(condition).second)
        continue;
      checks.push_back({dim, multiple,
                        (func.getSymName() + ": recipe " +
                         q.getRecipe().getRecipeName() + " needs " + condition)
                            .str()});
    }
  };
  for (BlockArgument arg : func.getArguments())
    visit(arg);
  for (Operation &op : func.getBody().front())
    for (Value result : op.getResults())
      visit(result);
  return checks;
}

Block *FunctionLowering::checkFailBlock() {
  if (checkFail)
    return checkFail;
  // Nothing is allocated yet: a failed check returns its status.
  checkFail = new Block();
  entry.getBody().push_back(checkFail);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(checkFail);
  LLVM::ReturnOp::create(b, loc, checkFail->addArgument(i32(), loc));
  return checkFail;
}

Value FunctionLowering::messageGlobal(StringRef message, StringRef kind,
                                      unsigned i) {
  std::string text = message.str();
  text.push_back('\0');
  OpBuilder gb(module.getBodyRegion());
  auto global = LLVM::GlobalOp::create(
      gb, loc, LLVM::LLVMArrayType::get(b.getI8Type(), text.size()),
      /*isConstant=*/true, LLVM::Linkage::Internal,
      (func.getSymName() + "__" + kind + Twine(i)).str(),
      b.getStringAttr(text));
  return LLVM::AddressOfOp::create(b, loc, global);
}

void FunctionLowering::emitAlignmentChecks() {
  for (auto [i, check] : llvm::enumerate(alignmentChecks()))
    call("te_rt_check_multiple",
         {ctxArg, dimValue(check.dim), c64(check.multiple),
          messageGlobal(check.what, "check", i)},
         checkFailBlock());
}

Value FunctionLowering::saturatingDimValue(const Dim &d) {
  // Each variable is in [0, kMaxDimSize] here (checked first), so the
  // unsigned products only need the overflow flag and the sign bit.
  Value max = c64(std::numeric_limits<int64_t>::max());
  Value acc = c64(d.value);
  for (int var : d.vars) {
    auto mul = LLVM::UMulWithOverflowOp::create(
        b, loc, LLVM::LLVMStructType::getLiteral(ctx, {i64(), b.getI1Type()}),
        acc, dimValues.lookup(var));
    Value product = LLVM::ExtractValueOp::create(b, loc, mul, 0);
    Value overflow = LLVM::ExtractValueOp::create(b, loc, mul, 1);
    Value negative =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::slt, product, c64(0));
    Value saturate = LLVM::OrOp::create(b, loc, overflow, negative);
    acc = LLVM::SelectOp::create(b, loc, saturate, max, product);
  }
  return acc;
}

void FunctionLowering::emitSizeChecks() {
  if (shapes.dimClasses.empty())
    return;
  unsigned n = 0;
  for (auto [k, var] : llvm::enumerate(shapes.dimClasses))
    call("te_rt_check_range",
         {ctxArg, dimValues.lookup(var), c64(0), c64(kMaxDimSize),
          messageGlobal((func.getSymName() + ": dim d" + Twine(k)).str(),
                        "size", n++)},
         checkFailBlock());
  // Element counts: per set of variables, the largest static factor (the
  // others are below it), in order of first appearance.
  llvm::MapVector<SmallVector<int, 2>, int64_t> largest;
  auto visit = [&](Value v) {
    if (!shapeOfType(v.getType()))
      return;
    Dim total{1, {}};
    for (const Dim &d : shapes.dims(v)) {
      total.value *= d.value; // static factors: bounded by the verifiers
      llvm::append_range(total.vars, d.vars);
    }
    if (total.isStatic())
      return;
    llvm::sort(total.vars);
    SmallVector<int, 2> key(total.vars.begin(), total.vars.end());
    int64_t &factor = largest.insert({key, 0}).first->second;
    factor = std::max(factor, total.value);
  };
  for (BlockArgument arg : func.getArguments())
    visit(arg);
  for (Operation &op : func.getBody().front())
    for (Value result : op.getResults())
      visit(result);
  for (auto &[vars, factor] : largest) {
    Dim total{factor, SmallVector<int, 1>(vars.begin(), vars.end())};
    if (total.vars.size() == 1 && factor == 1)
      continue; // a lone variable: checked above
    call("te_rt_check_range",
         {ctxArg, saturatingDimValue(total), c64(0), c64(kMaxElements),
          messageGlobal((func.getSymName() + ": the element count " +
                         symDimOf(total).str())
                            .str(),
                        "size", n++)},
         checkFailBlock());
  }
}

/// Liveness-based slot assignment; slot sizes are computed at run time.
LogicalResult FunctionLowering::plan() {
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
    arenaBytes = (arenaBytes && size)
                     ? std::optional<int64_t>(
                           *arenaBytes + llvm::alignTo(*size, kAlignment))
                     : std::nullopt;
  }
  return success();
}

LogicalResult FunctionLowering::lowerConstant(arith::ConstantOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  if (!isa<FloatType>(type.getElementType()))
    return success(); // shape operands of reshapes; no data at run time
  ArrayRef<char> raw;
  std::vector<char> splat;
  if (auto dense = dyn_cast<DenseElementsAttr>(op.getValue())) {
    raw = dense.getRawData();
    // All-zero splats (e.g. unused amax slots) are a device memset: no host
    // copy (which synchronizes and cannot be captured in a CUDA graph).
    if (dense.isSplat() &&
        llvm::all_of(raw, [](char c) { return c == 0; })) {
      call("te_rt_zero", {ctxArg, ptr(op.getResult()),
                          c64(*staticBytes(op.getResult()))});
      return success();
    }
    if (dense.isSplat()) {
      size_t elemBytes = raw.size();
      splat.resize(elemBytes * type.getNumElements());
      for (int64_t i = 0; i < type.getNumElements(); ++i)
        std::copy(raw.begin(), raw.end(), splat.begin() + i * elemBytes);
      raw = splat;
    }
  } else if (auto resource =
                 dyn_cast<DenseResourceElementsAttr>(op.getValue())) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return op.emitError("te-lower-to-runtime: constant's resource blob is "
                          "missing");
    raw = blob->getData();
  } else {
    return op.emitError("te-lower-to-runtime: unsupported constant");
  }
  // A global with the bytes, copied into the arena on each call (so the
  // same code serves host and device backends).
  std::string name =
      (func.getSymName() + "__const" + Twine(constants++)).str();
  OpBuilder gb(module.getBodyRegion());
  auto arrayType = LLVM::LLVMArrayType::get(b.getI8Type(), raw.size());
  auto data = DenseElementsAttr::getFromRawBuffer(
      RankedTensorType::get({int64_t(raw.size())}, b.getI8Type()), raw);
  auto global = LLVM::GlobalOp::create(gb, loc, arrayType, /*isConstant=*/true,
                                       LLVM::Linkage::Internal, name, data);
  global.setAlignment(64);
  Value src = LLVM::AddressOfOp::create(b, loc, global);
  call("te_rt_copy_to_backend",
       {ctxArg, ptr(op.getResult()), src, c64(raw.size())});
  return success();
}

LogicalResult FunctionLowering::lowerOp(Operation *op) {
  loc = op->getLoc();
  auto dtype = [&](Value v) {
    return c32(*dtypeCode(
        cast<RankedTensorType>(v.getType()).getElementType()));
  };
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
    if (auto t = dyn_cast<RankedTensorType>(v.getType());
        t && isa<FloatType>(t.getElementType()) &&
        !dtypeCode(t.getElementType()))
      return op->emitError() << "te-lower-to-runtime: unsupported element "
                                "type "
                             << t.getElementType();

  if (auto c = dyn_cast<arith::ConstantOp>(op))
    return lowerConstant(c);
  if (isa<tensor::EmptyOp, tensor::ReshapeOp>(op))
    return success();
  if (auto n = dyn_cast<NormFwdOp>(op)) {
    call("te_rt_norm_fwd",
         {ctxArg, c32(int32_t(n.getNormalization())), dtype(n.getInput()),
          ptr(n.getInput()), ptr(n.getGamma()),
          n.getBeta() ? ptr(n.getBeta()) : nullPtr(),
          cf64(n.getEps().convertToDouble()), c32(n.getZeroCenteredGamma()),
          rows(n.getInput()), c64(lastDim(n.getInput())), ptr(n.getOutput()),
          n.getMu() ? ptr(n.getMu()) : nullPtr(), ptr(n.getRsigma())});
    return success();
  }
  if (auto n = dyn_cast<NormQuantizeOp>(op)) {
    auto q = cast<QuantizedTensorType>(n.getResult().getType());
    QPtrs out = qptrs(n.getResult());
    Value scale =
        n.getScales() ? slotPtr(n.getScales(), *n.getSlot()) : nullPtr();
    call("te_rt_norm_quantize_fp8",
         {ctxArg, c32(int32_t(n.getNormalization())), dtype(n.getInput()),
          ptr(n.getInput()), ptr(n.getGamma()),
          n.getBeta() ? ptr(n.getBeta()) : nullPtr(),
          cf64(n.getEps().convertToDouble()), c32(n.getZeroCenteredGamma()),
          rows(n.getInput()), c64(lastDim(n.getInput())),
          n.getMu() ? ptr(n.getMu()) : nullPtr(), ptr(n.getRsigma()),
          c32(fp8Code(q.getFormat())), scale, pow2Flag(q), part(out, "data"),
          part(out, "transpose"), part(out, "scale_inv"), ptr(n.getAmax())});
    return success();
  }
  if (auto n = dyn_cast<NormBwdOp>(op)) {
    call("te_rt_norm_bwd",
         {ctxArg, c32(int32_t(n.getNormalization())), dtype(n.getInput()),
          ptr(n.getGrad()), ptr(n.getInput()),
          n.getMu() ? ptr(n.getMu()) : nullPtr(), ptr(n.getRsigma()),
          ptr(n.getGamma()), c32(n.getZeroCenteredGamma()), rows(n.getInput()),
          c64(lastDim(n.getInput())), ptr(n.getGradInput()),
          ptr(n.getGradGamma()),
          n.getGradBeta() ? ptr(n.getGradBeta()) : nullPtr()});
    return success();
  }
  if (auto drop = dyn_cast<DropUsageOp>(op)) {
    if (aliasOf.count(drop.getResult()))
      return success(); // a view
    // Keeping the rowwise copy: the parts the result has, copied.
    QPtrs in = qptrs(drop.getInput());
    QLayout outLayout = layout(drop.getResult());
    QPtrs out = qptrs(drop.getResult(), outLayout);
    for (const InnerTensor &t :
         bufferParts(cast<QuantizedTensorType>(drop.getType())))
      call("te_rt_copy", {ctxArg, part(out, t.name), part(in, t.name),
                          outLayout.bytes.lookup(t.name)});
    return success();
  }
  if (auto qz = dyn_cast<QuantizeOp>(op)) {
    auto q = cast<QuantizedTensorType>(qz.getResult().getType());
    QPtrs out = qptrs(qz.getResult());
    if (isa<NVFP4RecipeAttr>(q.getRecipe())) {
      call("te_rt_quantize_nvfp4",
           {ctxArg, dtype(qz.getInput()), ptr(qz.getInput()),
            rows(qz.getInput()), c64(lastDim(qz.getInput())),
            c32(q.getBlock_2d()), c32(q.getRht()),
            c32(qz.getStochasticRounding()), c64(qz.getSeed().value_or(0)),
            c32(q.getSwizzled()), part(out, "rowwise_data"),
            part(out, "rowwise_scale_inv"), part(out, "amax_rowwise"),
            part(out, "columnwise_data"), part(out, "columnwise_scale_inv"),
            part(out, "amax_columnwise")});
      return success();
    }
    if (isa<MXFP8RecipeAttr>(q.getRecipe())) {
      call("te_rt_quantize_mxfp8",
           {ctxArg, dtype(qz.getInput()), ptr(qz.getInput()),
            rows(qz.getInput()), c64(lastDim(qz.getInput())),
            c32(fp8Code(q.getFormat())), c32(q.getSwizzled()),
            part(out, "rowwise_data"), part(out, "rowwise_scale_inv"),
            part(out, "columnwise_data"), part(out, "columnwise_scale_inv")});
      return success();
    }
    if (auto block = dyn_cast<FP8BlockRecipeAttr>(q.getRecipe())) {
      call("te_rt_quantize_fp8_block",
           {ctxArg, dtype(qz.getInput()), ptr(qz.getInput()),
            rows(qz.getInput()), c64(lastDim(qz.getInput())),
            c32(q.getBlock_2d()), c32(!block.getFp32Scales()),
            part(out, "rowwise_data"), part(out, "rowwise_scale_inv"),
            part(out, "columnwise_data"), part(out, "columnwise_scale_inv")});
      return success();
    }
    Value scale =
        qz.getScales() ? slotPtr(qz.getScales(), *qz.getSlot()) : nullPtr();
    call("te_rt_quantize_fp8",
         {ctxArg, dtype(qz.getInput()), ptr(qz.getInput()),
          rows(qz.getInput()), c64(lastDim(qz.getInput())),
          c32(fp8Code(q.getFormat())), scale, pow2Flag(q), part(out, "data"),
          part(out, "transpose"), part(out, "scale_inv"),
          qz.getAmax() ? ptr(qz.getAmax()) : nullPtr(),
          qz.getAmaxIn() ? ptr(qz.getAmaxIn()) : nullPtr()});
    return success();
  }
  if (auto g = dyn_cast<GemmOp>(op);
      g && isa<QuantizedTensorType>(g.getLhs().getType())) {
    // Every FP8 GEMM in the TN form Hopper runs (see te_rt_gemm_fp8 and
    // te_rt_gemm_fp8_block): a row-major [m, k] operand is a rowwise copy,
    // or the columnwise copy (transposed data) of a [k, m] tensor.
    auto lq = cast<QuantizedTensorType>(g.getLhs().getType());
    auto rq = cast<QuantizedTensorType>(g.getRhs().getType());
    QPtrs l = qptrs(g.getLhs()), r = qptrs(g.getRhs());
    bool block = isa<FP8BlockRecipeAttr, MXFP8RecipeAttr, NVFP4RecipeAttr>(
        lq.getRecipe());
    // (data, scale_inv, NVFP4's global amax) of the rowwise or the
    // columnwise copy.
    struct Operand {
      Value data, scaleInv, amax;
    };
    auto operand = [&](const QPtrs &p, bool rowwise) {
      StringRef copy = rowwise ? "rowwise" : "columnwise";
      if (block)
        return Operand{part(p, (copy + "_data").str()),
                       part(p, (copy + "_scale_inv").str()),
                       part(p, ("amax_" + copy).str())};
      return Operand{rowwise ? part(p, "data") : part(p, "transpose"),
                     part(p, "scale_inv"), Value()};
    };
    ArrayRef<int64_t> rs = rq.getShape();
    Operand a, bm;
    Value m, n, k;
    switch (g.getLayout()) {
    case GemmLayout::TN: // y[M,N] = x[M,K] . w[N,K]^T
      a = operand(l, true), bm = operand(r, true);
      m = rows(g.getLhs()), n = c64(rs[0]), k = c64(rs[1]);
      break;
    case GemmLayout::NN: // dx[M,K] = dy[M,N] . (w^T[K,N])^T
      a = operand(l, true), bm = operand(r, false);
      m = rows(g.getLhs()), n = c64(rs[1]), k = c64(rs[0]);
      break;
    case GemmLayout::NT: // dw[N,K] = dy^T[N,M] . (x^T[K,M])^T
      a = operand(l, false), bm = operand(r, false);
      m = c64(lq.getShape().back()), n = c64(rs.back()),
      k = rows(g.getLhs());
      break;
    }
    if (g.getBiasGrad())
      return op->emitError("te-lower-to-runtime: an FP8 wgrad GEMM has no "
                           "bias-gradient epilogue (TE takes it from the "
                           "high-precision gradient)");
    Value bias = g.getBias() ? ptr(g.getBias()) : nullPtr();
    if (isa<NVFP4RecipeAttr>(lq.getRecipe()))
      // TN like Hopper's: NVFP4's columnwise data is transposed.
      call("te_rt_gemm_nvfp4",
           {ctxArg, dtype(g.getResult()), a.data, a.scaleInv, a.amax,
            bm.data, bm.scaleInv, bm.amax, /*swizzled=*/c32(1), bias,
            ptr(g.getResult()), m, n, k, c32(0)});
    else if (isa<MXFP8RecipeAttr>(lq.getRecipe()))
      // Blackwell-class layout: the columnwise copy is not transposed; the
      // flags say which operands are columnwise copies of [k, m] / [k, n].
      call("te_rt_gemm_mxfp8",
           {ctxArg, dtype(g.getResult()), c32(fp8Code(lq.getFormat())),
            a.data, a.scaleInv, c32(g.getLayout() == GemmLayout::NT),
            c32(fp8Code(rq.getFormat())), bm.data, bm.scaleInv,
            c32(g.getLayout() != GemmLayout::TN),
            /*swizzled=*/c32(1), bias, // checkQuantized admits no other

            ptr(g.getResult()), m, n, k, c32(0)});
    else if (block)
      call("te_rt_gemm_fp8_block",
           {ctxArg, dtype(g.getResult()), a.data, a.scaleInv,
            c32(lq.getBlock_2d()), bm.data, bm.scaleInv, c32(rq.getBlock_2d()),
            bias, ptr(g.getResult()), m, n, k, c32(0)});
    else
      call("te_rt_gemm_fp8",
           {ctxArg, dtype(g.getResult()), c32(fp8Code(lq.getFormat())),
            a.data, a.scaleInv, c32(fp8Code(rq.getFormat())), bm.data,
            bm.scaleInv, bias, ptr(g.getResult()), m, n, k, c32(0),
            c32(g.getFastAccumulate())});
    return success();
  }
  if (auto u = dyn_cast<AmaxUpdateOp>(op)) {
    auto recipe = dyn_cast<FP8DelayedRecipeAttr>(u.getRecipe());
    if (!recipe)
      return op->emitError() << "te-lower-to-runtime: te.amax_update under "
                             << u.getRecipe() << " (delayed scaling only)";
    QuantFormat f = u.getBackward() ? getBackwardFormat(recipe)
                                    : getForwardFormat(recipe);
    auto history = cast<RankedTensorType>(u.getAmaxHistory().getType());
    if (!history.hasStaticShape())
      return op->emitError("te-lower-to-runtime: dynamic amax history");
    call("te_rt_amax_update",
         {ctxArg, ptr(u.getAmaxHistory()), ptr(u.getScales()), ptr(u.getAmax()),
          c64(history.getDimSize(0)), c64(history.getDimSize(1)),
          cf32(f == QuantFormat::E4M3 ? 448.0 : 57344.0),
          c32(int32_t(recipe.getMargin())),
          c32(recipe.getAmaxComputeAlgo() == AmaxComputeAlgo::MostRecent),
          ptr(u.getNewAmaxHistory()), ptr(u.getNewScales())});
    return success();
  }
  if (auto g = dyn_cast<GemmOp>(op)) {
    auto rhsType = cast<RankedTensorType>(g.getRhs().getType());
    switch (g.getLayout()) {
    case GemmLayout::TN:
      call("te_rt_gemm_fprop",
           {ctxArg, dtype(g.getLhs()), ptr(g.getLhs()), ptr(g.getRhs()),
            g.getBias() ? ptr(g.getBias()) : nullPtr(), ptr(g.getResult()),
            rows(g.getLhs()), c64(rhsType.getDimSize(0)),
            c64(rhsType.getDimSize(1))});
      return success();
    case GemmLayout::NN:
      call("te_rt_gemm_dgrad",
           {ctxArg, dtype(g.getLhs()), ptr(g.getLhs()), ptr(g.getRhs()),
            ptr(g.getResult()), rows(g.getLhs()), c64(rhsType.getDimSize(0)),
            c64(rhsType.getDimSize(1))});
      return success();
    case GemmLayout::NT:
      call("te_rt_gemm_wgrad",
           {ctxArg, dtype(g.getLhs()), ptr(g.getLhs()), ptr(g.getRhs()),
            ptr(g.getResult()),
            g.getBiasGrad() ? ptr(g.getBiasGrad()) : nullPtr(),
            rows(g.getLhs()),
            c64(lastDim(g.getLhs())), c64(lastDim(g.getRhs())), c32(0)});
      return success();
    }
  }
  // The GEMMs with the activation in their epilogue: as te_rt_gemm_fprop
  // and te_rt_gemm_dgrad, after the activation.
  if (auto g = dyn_cast<GemmActOp>(op)) {
    auto w = cast<RankedTensorType>(g.getRhs().getType());
    call("te_rt_gemm_fprop_act",
         {ctxArg, c32(g.getActivation().getRuntimeCode()), dtype(g.getLhs()),
          ptr(g.getLhs()), ptr(g.getRhs()),
          g.getBias() ? ptr(g.getBias()) : nullPtr(), ptr(g.getResult()),
          g.getPre() ? ptr(g.getPre()) : nullPtr(), rows(g.getLhs()),
          c64(w.getDimSize(0)), c64(w.getDimSize(1))});
    return success();
  }
  if (auto g = dyn_cast<GemmDActOp>(op)) {
    auto w = cast<RankedTensorType>(g.getRhs().getType());
    call("te_rt_gemm_dgrad_dact",
         {ctxArg, c32(g.getActivation().getRuntimeCode()), dtype(g.getLhs()),
          ptr(g.getLhs()), ptr(g.getRhs()), ptr(g.getPre()), ptr(g.getResult()),
          rows(g.getLhs()), c64(w.getDimSize(0)), c64(w.getDimSize(1))});
    return success();
  }
  // The operands every activation call starts with: (ctx, act, dtype,
  // buffers..., rows, cols, limit, alpha, offset); cols is the input's, the
  // clamped-SwiGLU parameters default to TE's.
  auto activationOperands = [&](auto a, ArrayRef<Value> buffers) {
    SmallVector<Value> operands = {ctxArg, c32(a.getActivation().getRuntimeCode()),
                                   dtype(a.getInput())};
    llvm::append_range(operands, buffers);
    operands.append({rows(a.getInput()), c64(lastDim(a.getInput()))});
    ActivationAttr act = a.getActivation();
    operands.append({cf32(act.getParam("limit").value_or(7.0)),
                     cf32(act.getParam("alpha").value_or(1.702)),
                     cf32(act.getParam("glu_linear_offset").value_or(1.0))});
    return operands;
  };
  // Activation calls: then amax (te-fuse-quantize-amax) or null.
  auto activationCall = [&](StringRef callee, auto a,
                            ArrayRef<Value> buffers) {
    SmallVector<Value> operands = activationOperands(a, buffers);
    operands.push_back(a.getAmax() ? ptr(a.getAmax()) : nullPtr());
    call(callee, operands);
    return success();
  };
  if (auto a = dyn_cast<ActOp>(op))
    return activationCall("te_rt_act_fwd", a,
                          {ptr(a.getInput()), ptr(a.getResult())});
  if (auto a = dyn_cast<DActOp>(op))
    return activationCall("te_rt_act_bwd", a,
                          {ptr(a.getGrad()), ptr(a.getInput()),
                           ptr(a.getResult())});
  if (auto a = dyn_cast<DBiasDActOp>(op))
    return activationCall("te_rt_dbias_dact", a,
                          {ptr(a.getGrad()), ptr(a.getInput()),
                           ptr(a.getResult()), ptr(a.getBiasGrad())});
  // Activation + delayed-scaling cast: then format, scale, data,
  // transpose, scale_inv, amax.
  auto activationCastCall = [&](StringRef callee, auto a,
                                ArrayRef<Value> buffers) {
    auto q = cast<QuantizedTensorType>(a.getResult().getType());
    QPtrs out = qptrs(a.getResult());
    SmallVector<Value> operands = activationOperands(a, buffers);
    operands.append({c32(fp8Code(q.getFormat())),
                     slotPtr(a.getScales(), a.getSlot()),
                     part(out, "data"), part(out, "transpose"),
                     part(out, "scale_inv"), ptr(a.getAmax())});
    call(callee, operands);
    return success();
  };
  if (auto a = dyn_cast<ActQuantizeOp>(op))
    return activationCastCall("te_rt_act_quantize_fp8", a, {ptr(a.getInput())});
  if (auto a = dyn_cast<DActQuantizeOp>(op))
    return activationCastCall(
        "te_rt_dact_quantize_fp8", a,
        {ptr(a.getGrad()), ptr(a.getInput()),
         a.getBiasGrad() ? ptr(a.getBiasGrad()) : nullPtr()});
  if (auto g = dyn_cast<BiasGradOp>(op)) {
    call("te_rt_bias_grad", {ctxArg, dtype(g.getGrad()), ptr(g.getGrad()),
                             ptr(g.getResult()), rows(g.getGrad()),
                             c64(lastDim(g.getGrad()))});
    return success();
  }
  if (auto add = dyn_cast<arith::AddFOp>(op)) {
    if (!isa<RankedTensorType>(add.getType()))
      return op->emitError("te-lower-to-runtime: scalar arith.addf");
    call("te_rt_add", {ctxArg, dtype(add.getLhs()), ptr(add.getLhs()),
                       ptr(add.getRhs()), ptr(add.getResult()),
                       numElements(add.getResult())});
    return success();
  }
  if (isa<arith::ExtFOp, arith::TruncFOp>(op)) {
    Value in = op->getOperand(0), out = op->getResult(0);
    call("te_rt_cast", {ctxArg, dtype(in), dtype(out), ptr(in), ptr(out),
                        numElements(out)});
    return success();
  }
  if (auto t = dyn_cast<linalg::TransposeOp>(op)) {
    auto in = cast<RankedTensorType>(t.getInput().getType());
    if (in.getRank() != 2)
      return op->emitError("te-lower-to-runtime: only 2-D transposes");
    call("te_rt_transpose",
         {ctxArg, dtype(t.getInput()), ptr(t.getInput()), ptr(t->getResult(0)),
          c64(in.getDimSize(0)), c64(in.getDimSize(1))});
    return success();
  }
  // Row-block copies: concat and slices along dim 0 of static tensors.
  auto rowBlockBytes = [&](Value v) -> std::optional<int64_t> {
    return staticBytes(v);
  };
  if (auto c = dyn_cast<tensor::ConcatOp>(op)) {
    if (c.getDim() != 0)
      return op->emitError("te-lower-to-runtime: only concatenation along "
                           "dim 0");
    int64_t offset = 0;
    for (Value in : c.getInputs()) {
      std::optional<int64_t> n = rowBlockBytes(in);
      if (!n)
        return op->emitError("te-lower-to-runtime: dynamic concatenation");
      call("te_rt_copy",
           {ctxArg, gep(ptr(c.getResult()), c64(offset)), ptr(in), c64(*n)});
      offset += *n;
    }
    return success();
  }
  auto dim0Slice = [&](Operation *sliceOp, RankedTensorType full,
                       RankedTensorType part,
                       ArrayRef<int64_t> offsets) -> std::optional<int64_t> {
    if (!full.hasStaticShape() || !part.hasStaticShape())
      return std::nullopt;
    for (unsigned i = 1; i < offsets.size(); ++i)
      if (offsets[i] != 0 || part.getDimSize(i) != full.getDimSize(i))
        return std::nullopt;
    int64_t rowBytes = full.getNumElements() / full.getDimSize(0) *
                       (full.getElementType().getIntOrFloatBitWidth() / 8);
    return offsets[0] * rowBytes;
  };
  if (auto s = dyn_cast<tensor::ExtractSliceOp>(op)) {
    std::optional<int64_t> off =
        s.hasUnitStride() ? dim0Slice(op, s.getSourceType(), s.getType(),
                                      s.getStaticOffsets())
                          : std::nullopt;
    if (!off)
      return op->emitError("te-lower-to-runtime: only static row-block "
                           "slices");
    call("te_rt_copy", {ctxArg, ptr(s.getResult()), gep(ptr(s.getSource()),
                                                        c64(*off)),
                        c64(*staticBytes(s.getResult()))});
    return success();
  }
  if (auto s = dyn_cast<tensor::InsertSliceOp>(op)) {
    std::optional<int64_t> off =
        s.hasUnitStride() ? dim0Slice(op, s.getDestType(), s.getSourceType(),
                                      s.getStaticOffsets())
                          : std::nullopt;
    if (!off)
      return op->emitError("te-lower-to-runtime: only static row-block "
                           "slices");
    call("te_rt_copy", {ctxArg, ptr(s.getResult()), ptr(s.getDest()),
                        c64(*staticBytes(s.getResult()))});
    call("te_rt_copy", {ctxArg, gep(ptr(s.getResult()), c64(*off)),
                        ptr(s.getSource()), c64(*staticBytes(s.getSource()))});
    return success();
  }
  return op->emitError() << "te-lower-to-runtime: cannot lower '"
                         << op->getName()
                         << "' (run te-decompose first)";
}

LogicalResult FunctionLowering::lowerBody() {
  Block &block = func.getBody().front();
  if (segments.mode == "off") {
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
  if (segments.mode == "auto")
    for (auto &run : runs) {
      keys.push_back(run.size() >= kMinSegmentOps ? segmentKey(run) : 0);
      ++count[keys.back()];
    }
  for (auto [i, run] : llvm::enumerate(runs)) {
    bool outline = run.size() >= kMinSegmentOps &&
                   (segments.mode == "on" || count.lookup(keys[i]) > 1);
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

LogicalResult FunctionLowering::run() {
  if (!func.getBody().hasOneBlock())
    return func.emitError("te-lower-to-runtime: functions must have one block");
  // Quantized values: per-tensor FP8 and Float8 block scaling in Hopper's
  // layout, MXFP8 and NVFP4 in Blackwell's; dynamic dims size their inner
  // tensors at run time (runtimeParts).
  auto checkQuantized = [&](Type t, Location where) -> LogicalResult {
    auto q = dyn_cast<QuantizedTensorType>(t);
    if (!q)
      return success();
    bool perTensor =
        isa<FP8DelayedRecipeAttr, FP8CurrentRecipeAttr>(q.getRecipe());
    bool blackwell = isa<MXFP8RecipeAttr, NVFP4RecipeAttr>(q.getRecipe());
    bool lowered =
        blackwell ? q.getArch() == TargetArch::Blackwell && !q.getRowScaled()
                  : q.getArch() == TargetArch::Hopper &&
                        (perTensor || isa<FP8BlockRecipeAttr>(q.getRecipe()));
    if (!lowered)
      return emitError(where) << "te-lower-to-runtime: " << q
                              << " is not lowered (per-tensor FP8 and "
                                 "fp8-block on hopper, mxfp8 and nvfp4 "
                                 "without row_scaled on blackwell)";
    if (blackwell && q.getSwizzled() != true)
      return emitError(where) << "te-lower-to-runtime: " << q
                              << " has compact scales; the runtime's "
                              << q.getRecipe().getRecipeName()
                              << " GEMMs take them swizzled (as TE's "
                                 "quantizers write them for GEMMs)";
    return success();
  };
  for (BlockArgument arg : func.getArguments())
    if (failed(checkQuantized(arg.getType(), func.getLoc())))
      return failure();
  // Entries compute on tensors: a scalar (an `index` constant, say) has no
  // buffer and no place in the ABI.
  for (auto [i, t] : llvm::enumerate(func.getResultTypes()))
    if (!shapeOfType(t))
      return func.emitError() << "te-lower-to-runtime: result #" << i
                              << " must be a ranked tensor or a quantized "
                                 "tensor, got "
                              << t;
  for (Operation &op : func.getBody().front())
    for (auto [i, t] : llvm::enumerate(op.getResultTypes())) {
      if (!shapeOfType(t))
        return op.emitError() << "te-lower-to-runtime: '" << op.getName()
                              << "' produces a value of type " << t
                              << "; entries compute on ranked tensors only";
      if (failed(checkQuantized(t, op.getLoc())) ||
          failed(verifyShapeBounds(
              [&] { return op.emitError() << "te-lower-to-runtime: "; },
              *shapeOfType(t), ("result #" + Twine(i)).str())))
        return failure();
    }
  for (BlockArgument arg : func.getArguments())
    if (auto shape = shapeOfType(arg.getType());
        shape &&
        failed(verifyShapeBounds(
            [&] { return func.emitError() << "te-lower-to-runtime: "; }, *shape,
            ("argument #" + Twine(arg.getArgNumber())).str())))
      return failure();
  if (failed(shapes.run(func)) || failed(plan()))
    return failure();

  // The entry point.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(func);
  auto fnType = LLVM::LLVMFunctionType::get(
      i32(), {ptrTy(), ptrTy(), ptrTy(), ptrTy()});
  std::string name = func.getSymName().str();
  entry = LLVM::LLVMFuncOp::create(b, func.getLoc(), "te_entry_" + name, fnType);
  Block *body = entry.addEntryBlock(b);
  ctxArg = body->getArgument(0);
  argsArg = body->getArgument(1);
  resultsArg = body->getArgument(2);
  dimsArg = body->getArgument(3);
  b.setInsertionPointToStart(body);
  loc = func.getLoc();

  for (auto [k, var] : llvm::enumerate(shapes.dimClasses))
    dimValues[var] = loadIndexed(dimsArg, k, i64());
  for (BlockArgument arg : func.getArguments())
    buffers[arg] = loadIndexed(argsArg, arg.getArgNumber(), ptrTy());
  // (In result order: the IR does not depend on the map's order.)
  for (auto [r, v] :
       llvm::enumerate(func.getBody().front().getTerminator()->getOperands()))
    if (auto it = inPlaceResult.find(v);
        it != inPlaceResult.end() && it->second == r)
      buffers[v] = loadIndexed(resultsArg, r, ptrTy());
  emitSizeChecks();
  emitAlignmentChecks();

  // Arena: slots sized by their largest member, 256-byte aligned.
  Value total = c64(0);
  SmallVector<Value> slotOffsets;
  for (auto &members : slots) {
    Value size = c64(0);
    for (Value v : members)
      size = LLVM::UMaxOp::create(b, loc, size, bytes(v));
    slotOffsets.push_back(total);
    Value padded = LLVM::AddOp::create(b, loc, size, c64(kAlignment - 1));
    padded = LLVM::AndOp::create(b, loc, padded, c64(~(kAlignment - 1)));
    total = LLVM::AddOp::create(b, loc, total, padded);
  }
  arena = LLVM::CallOp::create(b, loc, runtime.lookup("te_rt_alloc"),
                               ValueRange{ctxArg, total})
              .getResult();
  // (In plan order: a DenseMap's order would make the IR differ from run
  // to run.)
  for (auto [slot, members] : llvm::enumerate(slots))
    for (Value v : members)
      buffers[v] = gep(arena, slotOffsets[slot]);

  // Failure exit: free the arena, return the status.
  failBlock = new Block();
  entry.getBody().push_back(failBlock);
  Value status = failBlock->addArgument(i32(), loc);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(failBlock);
    LLVM::CallOp::create(b, loc, runtime.lookup("te_rt_free"),
                         ValueRange{ctxArg, arena});
    LLVM::ReturnOp::create(b, loc, status);
  }
  Value allocFailed = LLVM::ICmpOp::create(
      b, loc, LLVM::ICmpPredicate::eq, arena, nullPtr());
  Block *next = b.getInsertionBlock()->splitBlock(b.getInsertionPoint());
  b.setInsertionPointToEnd(next->getPrevNode());
  LLVM::CondBrOp::create(b, loc, allocFailed, failBlock, ValueRange{c32(1)},
                         next, ValueRange{});
  b.setInsertionPointToStart(next);

  // The body, in order.
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (failed(lowerBody()))
    return failure();
  // Results not computed in place are copied out.
  loc = ret.getLoc();
  for (auto [r, v] : llvm::enumerate(ret.getOperands())) {
    auto it = inPlaceResult.find(v);
    if (it != inPlaceResult.end() && it->second == r)
      continue;
    call("te_rt_copy", {ctxArg, loadIndexed(resultsArg, r, ptrTy()), ptr(v),
                        bytes(v)});
  }
  LLVM::CallOp::create(b, loc, runtime.lookup("te_rt_free"),
                       ValueRange{ctxArg, arena});
  LLVM::ReturnOp::create(b, loc, c32(0));
  if (outlinedAny)
    localizeBuffers();

  // The entry's description.
  auto describe = [&](Value v, Type type, DictionaryAttr attrs) {
    llvm::json::Object o;
    if (auto q = dyn_cast<QuantizedTensorType>(type)) {
      // One buffer; inner tensors at 256-byte aligned offsets, in this
      // order (see the layout at the top of the file).
      // Their shapes are expressions of the entry's dim symbols (TE's
      // layout rules on the symbolic dims), e.g. `roundup(d0, 4)`.
      llvm::json::Array shape = shapeJSON(v, type), inner;
      SmallVector<SymDim> dims;
      for (Dim d : shapes.dims(v))
        dims.push_back(symDimOf(d));
      for (const InnerTensorOf<SymDim> &t :
           inBufferOrder(getInnerTensorsOf<SymDim>(q, dims))) {
        llvm::json::Array partShape;
        for (const SymDim &d : t.shape)
          partShape.push_back(d.toJSON());
        inner.push_back(llvm::json::Object{{"name", t.name},
                                           {"dtype", t.dtype},
                                           {"shape", std::move(partShape)}});
      }
      std::string typeStr;
      llvm::raw_string_ostream(typeStr) << type;
      o = llvm::json::Object{{"dtype", "qtensor"},
                             {"type", typeStr},
                             {"shape", std::move(shape)},
                             {"inner", std::move(inner)},
                             {"alignment", kAlignment}};
    } else {
      auto t = cast<RankedTensorType>(type);
      o = llvm::json::Object{{"dtype", dtypeName(t.getElementType())},
                             {"shape", shapeJSON(v, type)}};
    }
    if (attrs) {
      for (NamedAttribute a : attrs) {
        if (auto s = dyn_cast<StringAttr>(a.getValue()))
          o[a.getName().strref()] = s.getValue();
        else if (isa<UnitAttr>(a.getValue()))
          o[a.getName().strref()] = true;
      }
    }
    return o;
  };
  llvm::json::Array args, results, dims;
  for (BlockArgument arg : func.getArguments())
    args.push_back(describe(arg, arg.getType(), func.getArgAttrDict(
                                                    arg.getArgNumber())));
  for (auto [r, v] : llvm::enumerate(ret.getOperands()))
    results.push_back(describe(v, v.getType(), func.getResultAttrDict(r)));
  for (int var : shapes.dimClasses) {
    // Where the caller finds the dim: the first argument dim in its class.
    for (BlockArgument arg : func.getArguments()) {
      SmallVector<Dim> d = shapes.dims(arg);
      auto it = llvm::find_if(
          d, [&](const Dim &x) { return x.isVar(var); });
      if (it != d.end()) {
        dims.push_back(llvm::json::Object{{"arg", arg.getArgNumber()},
                                          {"dim", it - d.begin()}});
        break;
      }
    }
  }
  info = llvm::json::Object{
      {"name", name},
      {"symbol", "te_entry_" + name},
      {"args", std::move(args)},
      {"results", std::move(results)},
      {"dims", std::move(dims)},
      {"arena_slots", int64_t(slots.size())},
      {"arena_bytes", arenaBytes ? llvm::json::Value(*arenaBytes)
                                 : llvm::json::Value("dynamic")}};
  for (NamedAttribute a : func->getAttrs())
    if (auto ref = dyn_cast<FlatSymbolRefAttr>(a.getValue());
        ref && a.getName().strref().starts_with("te."))
      info[a.getName().strref()] = ref.getValue();
  return success();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct TELowerToRuntimePass
    : public te::impl::TELowerToRuntimePassBase<TELowerToRuntimePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    b.setInsertionPointToStart(module.getBody());
    // The subset of TERuntime.def the lowering calls, typed from the ABI's
    // own prototypes (runtimeFunctionType), declared in this order.
    llvm::StringMap<LLVM::LLVMFuncOp> runtime;
    for (StringRef name : {
             "te_rt_alloc",
             "te_rt_free",
             "te_rt_copy_to_backend",
             "te_rt_norm_fwd",
             "te_rt_norm_bwd",
             "te_rt_gemm_fprop",
             "te_rt_gemm_dgrad",
             "te_rt_gemm_wgrad",
             "te_rt_gemm_fprop_act",
             "te_rt_gemm_dgrad_dact",
             "te_rt_act_fwd",
             "te_rt_act_bwd",
             "te_rt_bias_grad",
             "te_rt_dbias_dact",
             "te_rt_add",
             "te_rt_cast",
             "te_rt_transpose",
             "te_rt_copy",
             "te_rt_zero",
             "te_rt_quantize_fp8",
             "te_rt_act_quantize_fp8",
             "te_rt_dact_quantize_fp8",
             "te_rt_gemm_fp8",
             "te_rt_quantize_fp8_block",
             "te_rt_gemm_fp8_block",
             "te_rt_quantize_mxfp8",
             "te_rt_gemm_mxfp8",
             "te_rt_quantize_nvfp4",
             "te_rt_gemm_nvfp4",
             "te_rt_norm_quantize_fp8",
             "te_rt_check_multiple",
             "te_rt_check_range",
             "te_rt_amax_update",
         }) {
      LLVM::LLVMFunctionType type = runtimeFunctionType(ctx, name);
      assert(type && "not a TERuntime.def function");
      runtime[name] = LLVM::LLVMFuncOp::create(b, module.getLoc(), name, type);
    }

    SegmentFunctions segments;
    segments.mode = dedupLayers;
    if (segments.mode != "off" && segments.mode != "auto" &&
        segments.mode != "on") {
      module.emitError() << "te-lower-to-runtime: dedup-layers must be off, "
                            "auto or on, got '"
                         << segments.mode << "'";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    llvm::json::Array entries;
    for (func::FuncOp func : funcs) {
      if (func.isExternal())
        continue;
      FunctionLowering lowering(func, module, b, runtime, segments);
      if (failed(lowering.run()))
        return signalPassFailure();
      entries.push_back(std::move(lowering.info));
    }
    for (func::FuncOp func : funcs)
      func.erase();

    // te_module_info(): the JSON description of every entry.
    std::string json;
    llvm::raw_string_ostream os(json);
    os << llvm::json::Value(llvm::json::Object{
        {"format", "te-mlir module 1"}, {"entries", std::move(entries)}});
    json.push_back('\0');
    b.setInsertionPointToEnd(module.getBody());
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), json.size());
    auto global = LLVM::GlobalOp::create(
        b, module.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::Internal,
        "te_module_info.json", b.getStringAttr(json));
    auto infoFn = LLVM::LLVMFuncOp::create(
        b, module.getLoc(), "te_module_info",
        LLVM::LLVMFunctionType::get(LLVM::LLVMPointerType::get(ctx), {}));
    Block *body = infoFn.addEntryBlock(b);
    b.setInsertionPointToStart(body);
    LLVM::ReturnOp::create(b, module.getLoc(),
                           LLVM::AddressOfOp::create(b, module.getLoc(), global)
                               .getResult());
  }
};

} // namespace
