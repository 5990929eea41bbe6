//===- Norm.cpp - Lowering of the normalizations ----------------*- C++ -*-===//
//
// te.norm_fwd, te.norm_quantize (the norm with a per-tensor FP8 cast of its
// output) and te.norm_bwd to te_rt_norm_*.
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::runtime_lowering {

std::optional<LogicalResult> FunctionLowering::lowerNormOp(Operation *op) {
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
  return std::nullopt;
}

} // namespace mlir::te::runtime_lowering
