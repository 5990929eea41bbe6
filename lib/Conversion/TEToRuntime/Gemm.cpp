//===- Gemm.cpp - Lowering of the GEMMs -------------------------*- C++ -*-===//
//
// te.gemm (FP8 per recipe, or high precision per layout), the GEMMs with an
// activation in their epilogue (te.gemm_act, te.gemm_dact) and te.bias_grad.
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::runtime_lowering {

std::optional<LogicalResult> FunctionLowering::lowerGemmOp(Operation *op) {
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
  if (auto g = dyn_cast<BiasGradOp>(op)) {
    call("te_rt_bias_grad", {ctxArg, dtype(g.getGrad()), ptr(g.getGrad()),
                             ptr(g.getResult()), rows(g.getGrad()),
                             c64(lastDim(g.getGrad()))});
    return success();
  }
  return std::nullopt;
}

} // namespace mlir::te::runtime_lowering
