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

namespace {

/// A wgrad GEMM with accumulate(%main): its result starts as main_grad
/// (nothing moves when the caller passed main_grad's buffer as the
/// result's), then the GEMM adds its fp32 product to it (beta 1). Returns
/// the runtime call's accumulate flag.
Value startFromMainGrad(GemmOp g, FunctionLowering &l) {
  if (!g.getAccumulate())
    return l.c32(0);
  l.call("te_rt_copy", {l.ctxArg, l.ptr(g.getResult()),
                        l.ptr(g.getAccumulate()), l.bytes(g.getResult())});
  return l.c32(1);
}

/// An FP8 GEMM (both operands quantized, per recipe).
struct QuantizedGemmLowering : public RuntimeCallPattern<GemmOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult matchOp(GemmOp g) const override {
    return success(isa<QuantizedTensorType>(g.getLhs().getType()));
  }
  LogicalResult lower(GemmOp g, FunctionLowering &l) const override {
    // Every FP8 GEMM in the TN form Hopper runs (see te_rt_gemm_fp8 and
    // te_rt_gemm_fp8_block): a row-major [m, k] operand is a rowwise copy,
    // or the columnwise copy (transposed data) of a [k, m] tensor.
    auto lq = cast<QuantizedTensorType>(g.getLhs().getType());
    auto rq = cast<QuantizedTensorType>(g.getRhs().getType());
    QPtrs lhs = l.qptrs(g.getLhs()), rhs = l.qptrs(g.getRhs());
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
        return Operand{l.part(p, (copy + "_data").str()),
                       l.part(p, (copy + "_scale_inv").str()),
                       l.part(p, ("amax_" + copy).str())};
      return Operand{rowwise ? l.part(p, "data") : l.part(p, "transpose"),
                     l.part(p, "scale_inv"), Value()};
    };
    ArrayRef<int64_t> rs = rq.getShape();
    Operand a, bm;
    Value m, n, k;
    switch (g.getLayout()) {
    case GemmLayout::TN: // y[M,N] = x[M,K] . w[N,K]^T
      a = operand(lhs, true), bm = operand(rhs, true);
      m = l.rows(g.getLhs()), n = l.c64(rs[0]), k = l.c64(rs[1]);
      break;
    case GemmLayout::NN: // dx[M,K] = dy[M,N] . (w^T[K,N])^T
      a = operand(lhs, true), bm = operand(rhs, false);
      m = l.rows(g.getLhs()), n = l.c64(rs[1]), k = l.c64(rs[0]);
      break;
    case GemmLayout::NT: // dw[N,K] = dy^T[N,M] . (x^T[K,M])^T
      a = operand(lhs, false), bm = operand(rhs, false);
      m = l.c64(lq.getShape().back()), n = l.c64(rs.back()),
      k = l.rows(g.getLhs());
      break;
    }
    if (g.getBiasGrad())
      return g->emitError("te-lower-to-runtime: an FP8 wgrad GEMM has no "
                          "bias-gradient epilogue (TE takes it from the "
                          "high-precision gradient)");
    Value bias = g.getBias() ? l.ptr(g.getBias()) : l.nullPtr();
    Value accumulate = startFromMainGrad(g, l);
    if (isa<NVFP4RecipeAttr>(lq.getRecipe()) &&
        (lq.getRowScaled() || rq.getRowScaled())) {
      // Row-scaled NVFP4: TE's forward GEMM of a row-scaled activation and
      // a per-tensor weight (its backward is high precision).
      if (g.getLayout() != GemmLayout::TN || rq.getRowScaled())
        return g->emitError("te-lower-to-runtime: a row-scaled nvfp4 operand "
                            "is lowered as the fprop's activation (the "
                            "left operand of a tn GEMM) only");
      l.call("te_rt_gemm_nvfp4_row_scaled",
             {l.ctxArg, l.dtype(g.getResult()), a.data, a.scaleInv, a.amax,
              bm.data, bm.scaleInv, bm.amax, /*swizzled=*/l.c32(1), bias,
              l.ptr(g.getResult()), m, n, k, accumulate});
    } else if (isa<NVFP4RecipeAttr>(lq.getRecipe()))
      // TN like Hopper's: NVFP4's columnwise data is transposed.
      l.call("te_rt_gemm_nvfp4",
             {l.ctxArg, l.dtype(g.getResult()), a.data, a.scaleInv, a.amax,
              bm.data, bm.scaleInv, bm.amax, /*swizzled=*/l.c32(1), bias,
              l.ptr(g.getResult()), m, n, k, accumulate});
    else if (isa<MXFP8RecipeAttr>(lq.getRecipe()))
      // Blackwell-class layout: the columnwise copy is not transposed; the
      // flags say which operands are columnwise copies of [k, m] / [k, n].
      l.call("te_rt_gemm_mxfp8",
             {l.ctxArg, l.dtype(g.getResult()), l.c32(fp8Code(lq.getFormat())),
              a.data, a.scaleInv, l.c32(g.getLayout() == GemmLayout::NT),
              l.c32(fp8Code(rq.getFormat())), bm.data, bm.scaleInv,
              l.c32(g.getLayout() != GemmLayout::TN),
              /*swizzled=*/l.c32(1), bias, // checkQuantized admits no other

              l.ptr(g.getResult()), m, n, k, accumulate});
    else if (block)
      l.call("te_rt_gemm_fp8_block",
             {l.ctxArg, l.dtype(g.getResult()), a.data, a.scaleInv,
              l.c32(lq.getBlock_2d()), bm.data, bm.scaleInv,
              l.c32(rq.getBlock_2d()), bias, l.ptr(g.getResult()), m, n, k,
              accumulate});
    else
      l.call("te_rt_gemm_fp8",
             {l.ctxArg, l.dtype(g.getResult()), l.c32(fp8Code(lq.getFormat())),
              a.data, a.scaleInv, l.c32(fp8Code(rq.getFormat())), bm.data,
              bm.scaleInv, bias, l.ptr(g.getResult()), m, n, k, accumulate,
              l.c32(g.getFastAccumulate())});
    return success();
  }
};

/// A high-precision GEMM, per layout (fprop, dgrad, wgrad).
struct GemmLowering : public RuntimeCallPattern<GemmOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult matchOp(GemmOp g) const override {
    return success(!isa<QuantizedTensorType>(g.getLhs().getType()));
  }
  LogicalResult lower(GemmOp g, FunctionLowering &l) const override {
    auto rhsType = cast<RankedTensorType>(g.getRhs().getType());
    switch (g.getLayout()) {
    case GemmLayout::TN:
      l.call("te_rt_gemm_fprop",
             {l.ctxArg, l.dtype(g.getLhs()), l.ptr(g.getLhs()),
              l.ptr(g.getRhs()), g.getBias() ? l.ptr(g.getBias()) : l.nullPtr(),
              l.ptr(g.getResult()), l.rows(g.getLhs()),
              l.c64(rhsType.getDimSize(0)), l.c64(rhsType.getDimSize(1))});
      return success();
    case GemmLayout::NN:
      l.call("te_rt_gemm_dgrad",
             {l.ctxArg, l.dtype(g.getLhs()), l.ptr(g.getLhs()),
              l.ptr(g.getRhs()), l.ptr(g.getResult()), l.rows(g.getLhs()),
              l.c64(rhsType.getDimSize(0)), l.c64(rhsType.getDimSize(1))});
      return success();
    case GemmLayout::NT:
      if (g.getAccumulate()) {
        // main_grad + dy^T . x in fp32
        Value accumulate = startFromMainGrad(g, l);
        l.call("te_rt_gemm_wgrad_fp32",
               {l.ctxArg, l.dtype(g.getLhs()), l.ptr(g.getLhs()),
                l.ptr(g.getRhs()), l.ptr(g.getResult()), l.rows(g.getLhs()),
                l.c64(l.lastDim(g.getLhs())), l.c64(l.lastDim(g.getRhs())),
                accumulate});
        return success();
      }
      l.call("te_rt_gemm_wgrad",
             {l.ctxArg, l.dtype(g.getLhs()), l.ptr(g.getLhs()),
              l.ptr(g.getRhs()), l.ptr(g.getResult()),
              g.getBiasGrad() ? l.ptr(g.getBiasGrad()) : l.nullPtr(),
              l.rows(g.getLhs()), l.c64(l.lastDim(g.getLhs())),
              l.c64(l.lastDim(g.getRhs())), l.c32(0)});
      return success();
    }
    llvm_unreachable("unknown GEMM layout");
  }
};

// The GEMMs with the activation in their epilogue: as te_rt_gemm_fprop
// and te_rt_gemm_dgrad, after the activation.
struct GemmActLowering : public RuntimeCallPattern<GemmActOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(GemmActOp g, FunctionLowering &l) const override {
    auto w = cast<RankedTensorType>(g.getRhs().getType());
    l.call("te_rt_gemm_fprop_act",
           {l.ctxArg, l.c32(g.getActivation().getRuntimeCode()), l.dtype(g.getLhs()),
            l.ptr(g.getLhs()), l.ptr(g.getRhs()),
            g.getBias() ? l.ptr(g.getBias()) : l.nullPtr(),
            l.ptr(g.getResult()), g.getPre() ? l.ptr(g.getPre()) : l.nullPtr(),
            l.rows(g.getLhs()), l.c64(w.getDimSize(0)),
            l.c64(w.getDimSize(1))});
    return success();
  }
};

struct GemmDActLowering : public RuntimeCallPattern<GemmDActOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(GemmDActOp g, FunctionLowering &l) const override {
    auto w = cast<RankedTensorType>(g.getRhs().getType());
    l.call("te_rt_gemm_dgrad_dact",
           {l.ctxArg, l.c32(g.getActivation().getRuntimeCode()), l.dtype(g.getLhs()),
            l.ptr(g.getLhs()), l.ptr(g.getRhs()), l.ptr(g.getPre()),
            l.ptr(g.getResult()), l.rows(g.getLhs()), l.c64(w.getDimSize(0)),
            l.c64(w.getDimSize(1))});
    return success();
  }
};

struct BiasGradLowering : public RuntimeCallPattern<BiasGradOp> {
  using RuntimeCallPattern::RuntimeCallPattern;
  LogicalResult lower(BiasGradOp g, FunctionLowering &l) const override {
    l.call("te_rt_bias_grad",
           {l.ctxArg, l.dtype(g.getGrad()), l.ptr(g.getGrad()),
            l.ptr(g.getResult()), l.rows(g.getGrad()),
            l.c64(l.lastDim(g.getGrad()))});
    return success();
  }
};

} // namespace

void populateGemmToRuntimePatterns(FunctionLowering &lowering,
                                   RewritePatternSet &patterns) {
  patterns.add<QuantizedGemmLowering, GemmLowering, GemmActLowering,
               GemmDActLowering, BiasGradLowering>(lowering);
}

} // namespace mlir::te::runtime_lowering
