//===- Elementwise.cpp - Lowering of the upstream ops -----------*- C++ -*-===//
//
// arith.constant (copied from a global), arith.addf, arith.extf/truncf,
// linalg.transpose, tensor.concat (the parts the memory plan could not
// place in its buffer copied, zero parts memset unless the concat is an
// amax vector whose update skips them) and the row-block copies of
// tensor.extract_slice and tensor.insert_slice.
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::runtime_lowering {

namespace {

/// Ops with no code: tensor.empty (a buffer of the plan) and tensor.reshape
/// (a view).
template <typename OpTy>
struct NoCodeLowering : public RuntimeCallPattern<OpTy> {
  using RuntimeCallPattern<OpTy>::RuntimeCallPattern;
  LogicalResult lower(OpTy, FunctionLowering &) const override {
    return success();
  }
};

/// A float constant: a global with its bytes, copied into its buffer on
/// each call (zeros are a memset); integer ones (shapes) have no data.
struct ConstantLowering : public RuntimeCallPattern<arith::ConstantOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(arith::ConstantOp op,
                      FunctionLowering &l) const override {
    auto type = cast<RankedTensorType>(op.getType());
    if (!isa<FloatType>(type.getElementType()))
      return success(); // shape operands of reshapes; no data at run time
    if (l.memory.zeroFilled.contains(op.getResult()))
      return success(); // only concats read it; they zero its slices
    ArrayRef<char> raw;
    std::vector<char> splat;
    if (auto dense = dyn_cast<DenseElementsAttr>(op.getValue())) {
      raw = dense.getRawData();
      // All-zero splats (e.g. unused amax slots) are a device memset: no host
      // copy (which synchronizes and cannot be captured in a CUDA graph).
      if (dense.isSplat() && llvm::all_of(raw, [](char c) { return c == 0; })) {
        l.call("te_rt_zero", {l.ctxArg, l.ptr(op.getResult()),
                              l.c64(*staticBytes(op.getResult()))});
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
        (l.func.getSymName() + "__const" + Twine(l.constants++)).str();
    OpBuilder gb(l.module.getBodyRegion());
    auto arrayType = LLVM::LLVMArrayType::get(l.b.getI8Type(), raw.size());
    auto data = DenseElementsAttr::getFromRawBuffer(
        RankedTensorType::get({int64_t(raw.size())}, l.b.getI8Type()), raw);
    auto global =
        LLVM::GlobalOp::create(gb, l.loc, arrayType, /*isConstant=*/true,
                               LLVM::Linkage::Internal, name, data);
    global.setAlignment(64);
    Value src = LLVM::AddressOfOp::create(l.b, l.loc, global);
    l.call("te_rt_copy_to_backend",
           {l.ctxArg, l.ptr(op.getResult()), src, l.c64(raw.size())});
    return success();
  }
};

struct AddFLowering : public RuntimeCallPattern<arith::AddFOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(arith::AddFOp add, FunctionLowering &l) const override {
    if (!isa<RankedTensorType>(add.getType()))
      return add->emitError("te-lower-to-runtime: scalar arith.addf");
    l.call("te_rt_add", {l.ctxArg, l.dtype(add.getLhs()), l.ptr(add.getLhs()),
                         l.ptr(add.getRhs()), l.ptr(add.getResult()),
                         l.numElements(add.getResult())});
    return success();
  }
};

/// arith.extf / arith.truncf of a tensor.
template <typename OpTy> struct CastLowering : public RuntimeCallPattern<OpTy> {
  using RuntimeCallPattern<OpTy>::RuntimeCallPattern;
  LogicalResult lower(OpTy op, FunctionLowering &l) const override {
    Value in = op->getOperand(0), out = op->getResult(0);
    l.call("te_rt_cast", {l.ctxArg, l.dtype(in), l.dtype(out), l.ptr(in),
                          l.ptr(out), l.numElements(out)});
    return success();
  }
};

struct TransposeLowering : public RuntimeCallPattern<linalg::TransposeOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(linalg::TransposeOp t,
                      FunctionLowering &l) const override {
    auto in = cast<RankedTensorType>(t.getInput().getType());
    if (in.getRank() != 2)
      return t->emitError("te-lower-to-runtime: only 2-D transposes");
    l.call("te_rt_transpose",
           {l.ctxArg, l.dtype(t.getInput()), l.ptr(t.getInput()),
            l.ptr(t->getResult(0)), l.c64(in.getDimSize(0)),
            l.c64(in.getDimSize(1))});
    return success();
  }
};

// Row-block copies: concat and slices along dim 0 of static tensors.

/// A static dim-0 concat: its placed parts (the memory plan's views of its
/// buffer) are written there by their producers; zero constants are one
/// te_rt_zero per run of adjacent zero parts, into the slices, or none when
/// the buffer was zeroed whole before its first placed part was written
/// (more than one run: FunctionLowering::zeroedEarly) or when the concat is
/// an amax vector whose te_rt_amax_update_unused takes those slots as 0
/// without reading them (unusedAmaxSlots); the other parts are copied.
struct ConcatLowering : public RuntimeCallPattern<tensor::ConcatOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(tensor::ConcatOp c, FunctionLowering &l) const override {
    if (c.getDim() != 0)
      return c->emitError("te-lower-to-runtime: only concatenation along "
                          "dim 0");
    Value out = c.getResult();
    int64_t offset = 0;
    // The pending run of zero parts, [zerosFrom, offset) (none: -1).
    int64_t zerosFrom = -1;
    bool zeroed = l.zeroedEarly(out) || unusedAmaxSlots(out);
    auto flushZeros = [&] {
      if (zerosFrom >= 0 && !zeroed)
        l.call("te_rt_zero", {l.ctxArg, l.gep(l.ptr(out), l.c64(zerosFrom)),
                              l.c64(offset - zerosFrom)});
      zerosFrom = -1;
    };
    for (Value in : c.getInputs()) {
      std::optional<int64_t> n = staticBytes(in);
      if (!n)
        return c->emitError("te-lower-to-runtime: dynamic concatenation");
      if (isZeroSplatConstant(in)) {
        if (zerosFrom < 0)
          zerosFrom = offset;
      } else {
        flushZeros();
        if (l.memory.aliasOf.lookup(in) != out)
          l.call("te_rt_copy", {l.ctxArg, l.gep(l.ptr(out), l.c64(offset)),
                                l.ptr(in), l.c64(*n)});
      }
      offset += *n;
    }
    flushZeros();
    return success();
  }
};

/// The byte offset of a slice of `full` at `offsets` that is a block of
/// whole rows, or none.
std::optional<int64_t> dim0Slice(RankedTensorType full, RankedTensorType part,
                                 ArrayRef<int64_t> offsets) {
  if (!full.hasStaticShape() || !part.hasStaticShape())
    return std::nullopt;
  for (unsigned i = 1; i < offsets.size(); ++i)
    if (offsets[i] != 0 || part.getDimSize(i) != full.getDimSize(i))
      return std::nullopt;
  int64_t rowBytes = full.getNumElements() / full.getDimSize(0) *
                     (full.getElementType().getIntOrFloatBitWidth() / 8);
  return offsets[0] * rowBytes;
}

struct ExtractSliceLowering
    : public RuntimeCallPattern<tensor::ExtractSliceOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(tensor::ExtractSliceOp s,
                      FunctionLowering &l) const override {
    std::optional<int64_t> off =
        s.hasUnitStride()
            ? dim0Slice(s.getSourceType(), s.getType(), s.getStaticOffsets())
            : std::nullopt;
    if (!off)
      return s->emitError("te-lower-to-runtime: only static row-block "
                          "slices");
    l.call("te_rt_copy", {l.ctxArg, l.ptr(s.getResult()),
                          l.gep(l.ptr(s.getSource()), l.c64(*off)),
                          l.c64(*staticBytes(s.getResult()))});
    return success();
  }
};

struct InsertSliceLowering : public RuntimeCallPattern<tensor::InsertSliceOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(tensor::InsertSliceOp s,
                      FunctionLowering &l) const override {
    std::optional<int64_t> off =
        s.hasUnitStride() ? dim0Slice(s.getDestType(), s.getSourceType(),
                                      s.getStaticOffsets())
                          : std::nullopt;
    if (!off)
      return s->emitError("te-lower-to-runtime: only static row-block "
                          "slices");
    l.call("te_rt_copy", {l.ctxArg, l.ptr(s.getResult()), l.ptr(s.getDest()),
                          l.c64(*staticBytes(s.getResult()))});
    l.call("te_rt_copy",
           {l.ctxArg, l.gep(l.ptr(s.getResult()), l.c64(*off)),
            l.ptr(s.getSource()), l.c64(*staticBytes(s.getSource()))});
    return success();
  }
};

} // namespace

void populateElementwiseToRuntimePatterns(FunctionLowering &lowering,
                                          RewritePatternSet &patterns) {
  patterns
      .add<NoCodeLowering<tensor::EmptyOp>, NoCodeLowering<tensor::ReshapeOp>,
           ConstantLowering, AddFLowering, CastLowering<arith::ExtFOp>,
           CastLowering<arith::TruncFOp>, TransposeLowering, ConcatLowering,
           ExtractSliceLowering, InsertSliceLowering>(lowering);
}

} // namespace mlir::te::runtime_lowering
