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

std::optional<LogicalResult> FunctionLowering::lowerActivationOp(Operation *op) {
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
  return std::nullopt;
}

} // namespace mlir::te::runtime_lowering
