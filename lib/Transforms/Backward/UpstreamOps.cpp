//===- UpstreamOps.cpp - Backward rules of upstream ops ---------*- C++ -*-===//
//
// BackwardOpInterface as external models of the upstream ops the importer
// leaves between and before module ops: residual adds, casts, reshapes,
// concatenations, slices, transposes; constants and empty tensors, whose
// gradients go nowhere. Each rule reads the gradient of the op's result
// and accumulates one per differentiated operand.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/BackwardRules.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::te;

namespace {

/// An op whose result's gradient goes nowhere (no differentiable operand).
template <typename OpTy>
struct NoGradient
    : public BackwardOpInterface::ExternalModel<NoGradient<OpTy>, OpTy> {
  LogicalResult buildBackward(Operation *, GradientContext &) const {
    return success();
  }
};

/// The gradient of `op`'s only result.
Value resultGrad(Operation *op, GradientContext &ctx) {
  return ctx.getGradient(op->getResult(0));
}

//===----------------------------------------------------------------------===//
// arith
//===----------------------------------------------------------------------===//

struct AddFBackward
    : public BackwardOpInterface::ExternalModel<AddFBackward, arith::AddFOp> {
  LogicalResult buildBackward(Operation *op, GradientContext &ctx) const {
    auto add = cast<arith::AddFOp>(op);
    Value g = resultGrad(op, ctx);
    if (add.getLhs().getType() != add.getRhs().getType())
      return op->emitError("te-generate-backward: arith.addf operands of "
                           "different types");
    ctx.accumulate(add.getLhs(), g);
    ctx.accumulate(add.getRhs(), g);
    return success();
  }
};

/// A cast's gradient is cast back (extf <-> truncf).
template <typename OpTy, typename BackOpTy>
struct CastBackward
    : public BackwardOpInterface::ExternalModel<CastBackward<OpTy, BackOpTy>,
                                                OpTy> {
  LogicalResult buildBackward(Operation *op, GradientContext &ctx) const {
    Value in = cast<OpTy>(op).getIn();
    Value g = resultGrad(op, ctx);
    ctx.accumulate(
        in, BackOpTy::create(ctx.getBuilder(), op->getLoc(), in.getType(), g));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// tensor
//===----------------------------------------------------------------------===//

struct ReshapeBackward
    : public BackwardOpInterface::ExternalModel<ReshapeBackward,
                                                tensor::ReshapeOp> {
  LogicalResult buildBackward(Operation *op, GradientContext &ctx) const {
    auto reshape = cast<tensor::ReshapeOp>(op);
    OpBuilder &b = ctx.getBuilder();
    Location loc = op->getLoc();
    Value g = resultGrad(op, ctx);
    auto srcType = cast<RankedTensorType>(reshape.getSource().getType());
    if (!srcType.hasStaticShape())
      return op->emitError("te-generate-backward: the gradient of a "
                           "dynamic-shaped tensor.reshape is not supported");
    auto shapeType = RankedTensorType::get({srcType.getRank()}, b.getI64Type());
    Value shape = arith::ConstantOp::create(
        b, loc, DenseIntElementsAttr::get(shapeType, srcType.getShape()));
    ctx.accumulate(reshape.getSource(),
                   tensor::ReshapeOp::create(b, loc, srcType, g, shape));
    return success();
  }
};

/// Each input's gradient is its slice of the result's.
struct ConcatBackward
    : public BackwardOpInterface::ExternalModel<ConcatBackward,
                                                tensor::ConcatOp> {
  LogicalResult buildBackward(Operation *op, GradientContext &ctx) const {
    auto concat = cast<tensor::ConcatOp>(op);
    OpBuilder &b = ctx.getBuilder();
    Location loc = op->getLoc();
    Value g = resultGrad(op, ctx);
    int64_t offset = 0;
    int64_t dim = concat.getDim();
    for (Value input : concat.getInputs()) {
      auto t = cast<RankedTensorType>(input.getType());
      if (!t.hasStaticShape())
        return op->emitError("te-generate-backward: the gradient of a "
                             "dynamic-shaped tensor.concat is not supported");
      SmallVector<OpFoldResult> offsets(t.getRank(), b.getIndexAttr(0)),
          strides(t.getRank(), b.getIndexAttr(1)), sizes;
      for (int64_t d : t.getShape())
        sizes.push_back(b.getIndexAttr(d));
      offsets[dim] = b.getIndexAttr(offset);
      offset += t.getDimSize(dim);
      ctx.accumulate(input, tensor::ExtractSliceOp::create(
                                b, loc, t, g, offsets, sizes, strides));
    }
    return success();
  }
};

/// The source's gradient is the result's inserted into zeros.
struct ExtractSliceBackward
    : public BackwardOpInterface::ExternalModel<ExtractSliceBackward,
                                                tensor::ExtractSliceOp> {
  LogicalResult buildBackward(Operation *op, GradientContext &ctx) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    Location loc = op->getLoc();
    Value g = resultGrad(op, ctx);
    auto srcType = slice.getSourceType();
    if (!srcType.hasStaticShape() || !slice.hasUnitStride())
      return op->emitError("te-generate-backward: only static unit-stride "
                           "tensor.extract_slice ops are differentiated");
    FailureOr<Value> zero = ctx.zeros(loc, srcType);
    if (failed(zero))
      return failure();
    ctx.accumulate(slice.getSource(),
                   tensor::InsertSliceOp::create(
                       ctx.getBuilder(), loc, g, *zero, slice.getMixedOffsets(),
                       slice.getMixedSizes(), slice.getMixedStrides()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// linalg
//===----------------------------------------------------------------------===//

/// The input's gradient is the result's under the inverse permutation.
struct TransposeBackward
    : public BackwardOpInterface::ExternalModel<TransposeBackward,
                                                linalg::TransposeOp> {
  LogicalResult buildBackward(Operation *op, GradientContext &ctx) const {
    auto transpose = cast<linalg::TransposeOp>(op);
    OpBuilder &b = ctx.getBuilder();
    Location loc = op->getLoc();
    Value g = resultGrad(op, ctx);
    auto srcType = cast<RankedTensorType>(transpose.getInput().getType());
    if (!srcType.hasStaticShape())
      return op->emitError("te-generate-backward: the gradient of a "
                           "dynamic-shaped linalg.transpose is not supported");
    ArrayRef<int64_t> perm = transpose.getPermutation();
    SmallVector<int64_t> inverse(perm.size());
    for (auto [i, p] : llvm::enumerate(perm))
      inverse[p] = i;
    Value init = tensor::EmptyOp::create(b, loc, srcType.getShape(),
                                         srcType.getElementType());
    ctx.accumulate(
        transpose.getInput(),
        linalg::TransposeOp::create(b, loc, g, init, inverse)->getResult(0));
    return success();
  }
};

} // namespace

void mlir::te::registerBackwardOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, arith::ArithDialect *) {
    arith::AddFOp::attachInterface<AddFBackward>(*ctx);
    arith::ExtFOp::attachInterface<
        CastBackward<arith::ExtFOp, arith::TruncFOp>>(*ctx);
    arith::TruncFOp::attachInterface<
        CastBackward<arith::TruncFOp, arith::ExtFOp>>(*ctx);
    arith::ConstantOp::attachInterface<NoGradient<arith::ConstantOp>>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    tensor::ReshapeOp::attachInterface<ReshapeBackward>(*ctx);
    tensor::ConcatOp::attachInterface<ConcatBackward>(*ctx);
    tensor::ExtractSliceOp::attachInterface<ExtractSliceBackward>(*ctx);
    tensor::EmptyOp::attachInterface<NoGradient<tensor::EmptyOp>>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, linalg::LinalgDialect *) {
    linalg::TransposeOp::attachInterface<TransposeBackward>(*ctx);
  });
}
