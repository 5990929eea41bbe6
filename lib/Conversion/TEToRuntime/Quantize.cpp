//===- Quantize.cpp - Lowering of the casts to quantized tensors --*- C++
//-*-===//
//
// te.quantize per recipe (per-tensor FP8, fp8-block, MXFP8, NVFP4),
// te.dbias_quantize (the per-tensor FP8 cast fused with the bias gradient)
// te.drop_usage (a view, or a copy of the rowwise parts) and
// te.add_columnwise (per-tensor FP8's transpose made from the rowwise bytes).
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::runtime_lowering {

namespace {

struct DropUsageLowering : public RuntimeCallPattern<DropUsageOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(DropUsageOp drop, FunctionLowering &l) const override {
    if (l.memory.aliasOf.count(drop.getResult()))
      return success(); // a view
    // Keeping the rowwise copy: the parts the result has, copied.
    QPtrs in = l.qptrs(drop.getInput());
    QLayout outLayout = l.layout(drop.getResult());
    QPtrs out = l.qptrs(drop.getResult(), outLayout);
    for (const InnerTensor &t :
         bufferParts(cast<QuantizedTensorType>(drop.getType())))
      l.call("te_rt_copy", {l.ctxArg, l.part(out, t.name), l.part(in, t.name),
                            outLayout.bytes.lookup(t.name)});
    return success();
  }
};

/// The columnwise copy of a rowwise per-tensor FP8 tensor (Hopper): its
/// scale_inv copied, its data [M, K] transposed into `transpose` [K, M].
struct AddColumnwiseLowering : public RuntimeCallPattern<AddColumnwiseOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(AddColumnwiseOp add,
                      FunctionLowering &l) const override {
    QPtrs in = l.qptrs(add.getInput());
    QLayout outLayout = l.layout(add.getResult());
    QPtrs out = l.qptrs(add.getResult(), outLayout);
    // The transpose of the bytes and the scale_inv copy: one call (one
    // launch on cuda).
    l.call("te_rt_add_columnwise_fp8",
           {l.ctxArg, l.part(in, "data"), l.part(in, "scale_inv"),
            l.rows(add.getInput()),
            l.c64(cast<QuantizedTensorType>(add.getInput().getType())
                      .getShape()
                      .back()),
            l.part(out, "transpose"), l.part(out, "scale_inv")});
    return success();
  }
};

struct QuantizeLowering : public RuntimeCallPattern<QuantizeOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(QuantizeOp qz, FunctionLowering &l) const override {
    auto q = cast<QuantizedTensorType>(qz.getResult().getType());
    QPtrs out = l.qptrs(qz.getResult());
    if (auto nvfp4 = dyn_cast<NVFP4RecipeAttr>(q.getRecipe());
        nvfp4 && qz.getFourOverSix()) {
      bool weight = qz.getWeight();
      l.call("te_rt_quantize_nvfp4_4over6",
             {l.ctxArg, l.dtype(qz.getInput()), l.ptr(qz.getInput()),
              l.rows(qz.getInput()), l.c64(l.lastDim(qz.getInput())),
              l.c32(q.getBlock_2d()),
              l.c32(nvfp4.getFourOverSixErrMode() == NVFP4ErrMode::MSE),
              l.c32(int32_t(nvfp4.fourOverSixE4M3Max(weight))),
              l.c32(q.getSwizzled()), l.part(out, "rowwise_data"),
              l.part(out, "rowwise_scale_inv"), l.part(out, "amax_rowwise"),
              l.part(out, "columnwise_data"),
              l.part(out, "columnwise_scale_inv"),
              l.part(out, "amax_columnwise")});
      return success();
    }
    if (isa<NVFP4RecipeAttr>(q.getRecipe()) && q.getRowScaled()) {
      // One amax per row (amax_rowwise [M]); the rowwise copy only (the
      // verifier admits no other usage).
      l.call("te_rt_quantize_nvfp4_row_scaled",
             {l.ctxArg, l.dtype(qz.getInput()), l.ptr(qz.getInput()),
              l.rows(qz.getInput()), l.c64(l.lastDim(qz.getInput())),
              l.c32(q.getSwizzled()), l.part(out, "rowwise_data"),
              l.part(out, "rowwise_scale_inv"), l.part(out, "amax_rowwise")});
      return success();
    }
    if (isa<NVFP4RecipeAttr>(q.getRecipe())) {
      l.call("te_rt_quantize_nvfp4",
             {l.ctxArg, l.dtype(qz.getInput()), l.ptr(qz.getInput()),
              l.rows(qz.getInput()), l.c64(l.lastDim(qz.getInput())),
              l.c32(q.getBlock_2d()), l.c32(q.getRht()),
              l.c32(qz.getStochasticRounding()),
              l.c64(qz.getSeed().value_or(0)), l.c32(q.getSwizzled()),
              l.part(out, "rowwise_data"), l.part(out, "rowwise_scale_inv"),
              l.part(out, "amax_rowwise"), l.part(out, "columnwise_data"),
              l.part(out, "columnwise_scale_inv"),
              l.part(out, "amax_columnwise")});
      return success();
    }
    if (isa<MXFP8RecipeAttr>(q.getRecipe())) {
      l.call("te_rt_quantize_mxfp8",
             {l.ctxArg, l.dtype(qz.getInput()), l.ptr(qz.getInput()),
              l.rows(qz.getInput()), l.c64(l.lastDim(qz.getInput())),
              l.c32(fp8Code(q.getFormat())), l.c32(q.getSwizzled()),
              l.part(out, "rowwise_data"), l.part(out, "rowwise_scale_inv"),
              l.part(out, "columnwise_data"),
              l.part(out, "columnwise_scale_inv")});
      return success();
    }
    if (auto block = dyn_cast<FP8BlockRecipeAttr>(q.getRecipe())) {
      l.call("te_rt_quantize_fp8_block",
             {l.ctxArg, l.dtype(qz.getInput()), l.ptr(qz.getInput()),
              l.rows(qz.getInput()), l.c64(l.lastDim(qz.getInput())),
              l.c32(q.getBlock_2d()), l.c32(!block.getFp32Scales()),
              l.part(out, "rowwise_data"), l.part(out, "rowwise_scale_inv"),
              l.part(out, "columnwise_data"),
              l.part(out, "columnwise_scale_inv")});
      return success();
    }
    Value scale =
        qz.getScales() ? l.slotPtr(qz.getScales(), *qz.getSlot()) : l.nullPtr();
    l.call("te_rt_quantize_fp8",
           {l.ctxArg, l.dtype(qz.getInput()), l.ptr(qz.getInput()),
            l.rows(qz.getInput()), l.c64(l.lastDim(qz.getInput())),
            l.c32(fp8Code(q.getFormat())), scale, l.pow2Flag(q),
            l.part(out, "data"), l.part(out, "transpose"),
            l.part(out, "scale_inv"),
            qz.getAmax() ? l.ptr(qz.getAmax()) : l.nullPtr(),
            qz.getAmaxIn() ? l.ptr(qz.getAmaxIn()) : l.nullPtr()});
    return success();
  }
};

struct DBiasQuantizeLowering : public RuntimeCallPattern<DBiasQuantizeOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(DBiasQuantizeOp qz, FunctionLowering &l) const override {
    auto q = cast<QuantizedTensorType>(qz.getResult().getType());
    QPtrs out = l.qptrs(qz.getResult());
    Value scale =
        qz.getScales() ? l.slotPtr(qz.getScales(), *qz.getSlot()) : l.nullPtr();
    l.call("te_rt_dbias_quantize_fp8",
           {l.ctxArg, l.dtype(qz.getInput()), l.ptr(qz.getInput()),
            l.rows(qz.getInput()), l.c64(l.lastDim(qz.getInput())),
            l.c32(fp8Code(q.getFormat())), scale, l.pow2Flag(q),
            l.part(out, "data"), l.part(out, "transpose"),
            l.part(out, "scale_inv"), l.ptr(qz.getAmax()),
            l.ptr(qz.getBiasGrad())});
    return success();
  }
};

} // namespace

void populateQuantizeToRuntimePatterns(FunctionLowering &lowering,
                                       RewritePatternSet &patterns) {
  patterns.add<DropUsageLowering, AddColumnwiseLowering, QuantizeLowering,
               DBiasQuantizeLowering>(lowering);
}

} // namespace mlir::te::runtime_lowering
