//===- Elementwise.cpp - Lowering of the upstream ops -----------*- C++ -*-===//
//
// arith.constant (copied from a global), arith.addf, arith.extf/truncf,
// linalg.transpose and the row-block copies of tensor.concat,
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

LogicalResult FunctionLowering::lowerConstant(arith::ConstantOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  if (!isa<FloatType>(type.getElementType()))
    return success(); // shape operands of reshapes; no data at run time
  ArrayRef<char> raw;
  std::vector<char> splat;
  if (auto dense = dyn_cast<DenseElementsAttr>(op.getValue())) {
    raw = dense.getRawData();
    // All-zero splats (e.g. unused amax memory.slots) are a device memset: no host
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

std::optional<LogicalResult> FunctionLowering::lowerElementwiseOp(Operation *op) {
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
  return std::nullopt;
}

} // namespace mlir::te::runtime_lowering
