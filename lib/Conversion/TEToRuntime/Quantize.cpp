//===- Quantize.cpp - Lowering of the casts to quantized tensors --*- C++ -*-===//
//
// te.quantize per recipe (per-tensor FP8, fp8-block, MXFP8, NVFP4) and
// te.drop_usage (a view, or a copy of the rowwise parts).
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::runtime_lowering {

std::optional<LogicalResult> FunctionLowering::lowerQuantizeOp(Operation *op) {
  if (auto drop = dyn_cast<DropUsageOp>(op)) {
    if (memory.aliasOf.count(drop.getResult()))
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
  return std::nullopt;
}

} // namespace mlir::te::runtime_lowering
