//===- Activation.cpp - Lowering of the activations -------------*- C++ -*-===//
//
// te.act, te.dact, te.dbias_dact and their delayed-scaling casts
// (te.act_quantize, te.dact_quantize) to te_rt_act_* / te_rt_dact_*.
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::runtime_lowering {

// The operands every activation call starts with: (ctx, act, dtype,
// buffers..., rows, cols, limit, alpha, offset); cols is the input's. Every
// call passes clamped_swiglu's three parameters (the other activations
// ignore them): the activation's own, else TE's defaults from the table.
template <typename OpTy>
SmallVector<Value>
FunctionLowering::activationOperands(OpTy a, ArrayRef<Value> buffers) {
  ActivationAttr act = a.getActivation();
  SmallVector<Value> operands = {ctxArg, c32(act.getRuntimeCode()),
                                 dtype(a.getInput())};
  llvm::append_range(operands, buffers);
  operands.append({rows(a.getInput()), c64(lastDim(a.getInput()))});
  for (const ActivationParamInfo &p :
       getActivationInfo(ActivationKind::ClampedSwiGLU).params)
    operands.push_back(cf32(act.getParam(p.name).value_or(p.defaultValue)));
  return operands;
}

namespace {

/// An activation call: (ctx, act, dtype, `buffers`..., rows, cols, limit,
/// alpha, offset), then amax (te-fuse-quantize-amax) or null.
template <typename OpTy>
LogicalResult activationCall(FunctionLowering &l, StringRef callee, OpTy a,
                             ArrayRef<Value> buffers) {
  SmallVector<Value> operands = l.activationOperands(a, buffers);
  operands.push_back(a.getAmax() ? l.ptr(a.getAmax()) : l.nullPtr());
  l.call(callee, operands);
  return success();
}

/// Activation + delayed-scaling cast: the activation's operands, then
/// format, scale, data, transpose, scale_inv, amax.
template <typename OpTy>
LogicalResult activationCastCall(FunctionLowering &l, StringRef callee, OpTy a,
                                 ArrayRef<Value> buffers) {
  auto q = cast<QuantizedTensorType>(a.getResult().getType());
  QPtrs out = l.qptrs(a.getResult());
  SmallVector<Value> operands = l.activationOperands(a, buffers);
  operands.append({l.c32(fp8Code(q.getFormat())),
                   l.slotPtr(a.getScales(), a.getSlot()), l.part(out, "data"),
                   l.part(out, "transpose"), l.part(out, "scale_inv"),
                   l.ptr(a.getAmax())});
  l.call(callee, operands);
  return success();
}

struct ActLowering : public RuntimeCallPattern<ActOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(ActOp a, FunctionLowering &l) const override {
    return activationCall(l, "te_rt_act_fwd", a,
                          {l.ptr(a.getInput()), l.ptr(a.getResult())});
  }
};

struct DActLowering : public RuntimeCallPattern<DActOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(DActOp a, FunctionLowering &l) const override {
    return activationCall(
        l, "te_rt_act_bwd", a,
        {l.ptr(a.getGrad()), l.ptr(a.getInput()), l.ptr(a.getResult())});
  }
};

struct DBiasDActLowering : public RuntimeCallPattern<DBiasDActOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(DBiasDActOp a, FunctionLowering &l) const override {
    return activationCall(l, "te_rt_dbias_dact", a,
                          {l.ptr(a.getGrad()), l.ptr(a.getInput()),
                           l.ptr(a.getResult()), l.ptr(a.getBiasGrad())});
  }
};

struct ActQuantizeLowering : public RuntimeCallPattern<ActQuantizeOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(ActQuantizeOp a, FunctionLowering &l) const override {
    return activationCastCall(l, "te_rt_act_quantize_fp8", a,
                              {l.ptr(a.getInput())});
  }
};

struct DActQuantizeLowering : public RuntimeCallPattern<DActQuantizeOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(DActQuantizeOp a, FunctionLowering &l) const override {
    return activationCastCall(
        l, "te_rt_dact_quantize_fp8", a,
        {l.ptr(a.getGrad()), l.ptr(a.getInput()),
         a.getBiasGrad() ? l.ptr(a.getBiasGrad()) : l.nullPtr()});
  }
};

} // namespace

void populateActivationToRuntimePatterns(FunctionLowering &lowering,
                                         RewritePatternSet &patterns) {
  patterns.add<ActLowering, DActLowering, DBiasDActLowering,
               ActQuantizeLowering, DActQuantizeLowering>(lowering);
}

} // namespace mlir::te::runtime_lowering
