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

namespace {

struct NormFwdLowering : public RuntimeCallPattern<NormFwdOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(NormFwdOp n, FunctionLowering &l) const override {
    l.call("te_rt_norm_fwd",
           {l.ctxArg, l.c32(int32_t(n.getNormalization())),
            l.dtype(n.getInput()), l.ptr(n.getInput()), l.ptr(n.getGamma()),
            n.getBeta() ? l.ptr(n.getBeta()) : l.nullPtr(),
            l.cf64(n.getEps().convertToDouble()),
            l.c32(n.getZeroCenteredGamma()), l.rows(n.getInput()),
            l.c64(l.lastDim(n.getInput())), l.ptr(n.getOutput()),
            n.getMu() ? l.ptr(n.getMu()) : l.nullPtr(), l.ptr(n.getRsigma())});
    return success();
  }
};

struct NormQuantizeLowering : public RuntimeCallPattern<NormQuantizeOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(NormQuantizeOp n, FunctionLowering &l) const override {
    auto q = cast<QuantizedTensorType>(n.getResult().getType());
    QPtrs out = l.qptrs(n.getResult());
    Value scale =
        n.getScales() ? l.slotPtr(n.getScales(), *n.getSlot()) : l.nullPtr();
    l.call("te_rt_norm_quantize_fp8",
           {l.ctxArg, l.c32(int32_t(n.getNormalization())),
            l.dtype(n.getInput()), l.ptr(n.getInput()), l.ptr(n.getGamma()),
            n.getBeta() ? l.ptr(n.getBeta()) : l.nullPtr(),
            l.cf64(n.getEps().convertToDouble()),
            l.c32(n.getZeroCenteredGamma()), l.rows(n.getInput()),
            l.c64(l.lastDim(n.getInput())),
            n.getMu() ? l.ptr(n.getMu()) : l.nullPtr(), l.ptr(n.getRsigma()),
            l.c32(fp8Code(q.getFormat())), scale, l.pow2Flag(q),
            l.part(out, "data"), l.part(out, "transpose"),
            l.part(out, "scale_inv"), l.ptr(n.getAmax())});
    return success();
  }
};

struct NormBwdLowering : public RuntimeCallPattern<NormBwdOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(NormBwdOp n, FunctionLowering &l) const override {
    l.call("te_rt_norm_bwd",
           {l.ctxArg, l.c32(int32_t(n.getNormalization())),
            l.dtype(n.getInput()), l.ptr(n.getGrad()), l.ptr(n.getInput()),
            n.getMu() ? l.ptr(n.getMu()) : l.nullPtr(), l.ptr(n.getRsigma()),
            l.ptr(n.getGamma()), l.c32(n.getZeroCenteredGamma()),
            l.rows(n.getInput()), l.c64(l.lastDim(n.getInput())),
            l.ptr(n.getGradInput()), l.ptr(n.getGradGamma()),
            n.getGradBeta() ? l.ptr(n.getGradBeta()) : l.nullPtr()});
    return success();
  }
};

} // namespace

void populateNormToRuntimePatterns(FunctionLowering &lowering,
                                   RewritePatternSet &patterns) {
  patterns.add<NormFwdLowering, NormQuantizeLowering, NormBwdLowering>(
      lowering);
}

} // namespace mlir::te::runtime_lowering
