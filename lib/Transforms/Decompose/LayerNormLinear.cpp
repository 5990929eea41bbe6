//===- LayerNormLinear.cpp - te-decompose: te.layernorm_linear --*- C++ -*-===//
//
// te.layernorm_linear and its backward in TE's kernel order (reference
// §1.3, §2.3): the norm, then one GEMM (TN) on the norm output; backward:
// wgrad (NT), dgrad (NN), the bias gradient and the norm's backward.
// Column-parallel under tensor parallelism (§2).
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::decompose;

namespace {

struct DecomposeLayerNormLinear : public OpRewritePattern<LayerNormLinearOp> {
  DecomposeLayerNormLinear(MLIRContext *ctx, DecomposeState &state)
      : OpRewritePattern(ctx), state(state) {}

  LogicalResult matchAndRewrite(LayerNormLinearOp ln,
                                PatternRewriter &rewriter) const override {
    Decomposer d(rewriter, state);
    Location loc = ln.getLoc();
    rewriter.setInsertionPoint(ln);
    SmallVector<Value> amaxes;
    Value source = ln.getOutput();
    // TE's forward quantizer slots (§0.2): input, weight, output.
    FailureOr<Quant> q =
        quantOf(ln, ln.getRecipeAttr(), ln.getScales(), true, d.getArch());
    if (failed(q))
      return failure();
    Decomposer::Norm n =
        d.norm(loc, ln.getInput(), ln.getLnWeight(), ln.getLnBias(),
               ln.getNormalization(), ln.getEps(), ln.getZeroCenteredGamma());
    // Column-parallel (§2): the sequence-parallel norm output is gathered
    // before the GEMM; the rank's rows are what is saved.
    Value lhs = d.allGather(loc, n.out, ln.getTpAttr(),
                            "the norm output's rows, before the GEMM"),
          w = ln.getWeight(), lnSaved = n.out, wSaved = w;
    if (*q) {
      // Quantized after the gather: the amax is the group's (TE reduces it
      // over the group before the scale); saved gathered.
      lhs = d.quantize(loc, lhs, *q, false, 0, amaxes, QuantUsage::Rowwise,
                       source, "ln_out", &lnSaved);
      w = d.quantize(loc, w, *q, false, 1, amaxes, QuantUsage::Rowwise, source,
                     "weight", &wSaved);
    }
    Value y = d.gemm(loc, GemmLayout::TN, lhs, w, ln.getBias(),
                     Decomposer::elementOf(n.out));
    // (ln_out_rowwise / weight_rowwise: the GEMM's quantized operands, which
    // row-scaled NVFP4 saves beside its HP tensors under save_rowwise.)
    llvm::StringMap<Value> saved = {{"ln_out", lnSaved},
                                    {"weight", wSaved},
                                    {"ln_out_rowwise", lhs},
                                    {"weight_rowwise", w},
                                    {"rsigma", n.rsigma},
                                    {"mu", n.mu}};
    return d.finishForward(
        ln, saved, amaxes,
        Decomposer::concat({y, ln.getLnOutput() ? n.out : Value()}));
  }

  DecomposeState &state;
};

struct DecomposeLayerNormLinearBwd
    : public OpRewritePattern<LayerNormLinearBwdOp> {
  DecomposeLayerNormLinearBwd(MLIRContext *ctx, DecomposeState &state)
      : OpRewritePattern(ctx), state(state) {}

  LogicalResult matchAndRewrite(LayerNormLinearBwdOp ln,
                                PatternRewriter &rewriter) const override {
    Decomposer d(rewriter, state);
    Location loc = ln.getLoc();
    rewriter.setInsertionPoint(ln);
    SmallVector<Value> grads, amaxes;
    // TE's backward quantizer slots (§0.2): GRAD_OUTPUT1, GRAD_INPUT1.
    FailureOr<Quant> q =
        quantOf(ln, ln.getRecipeAttr(), ln.getScales(), false, d.getArch());
    if (failed(q))
      return failure();
    Value dy = ln.getGradOutput();
    Type element = Decomposer::elementOf(dy);
    TensorParallelAttr tp = ln.getTpAttr();
    // No saved norm output: a frozen weight, no wgrad (nor dy's columnwise
    // copy).
    Value lnOut = ln.getLnOut();
    Value dyq = d.quantizeGrad(loc, dy, *q, 0, amaxes, bool(lnOut));
    // The wgrad reads the norm output gathered again from the saved rows
    // (§2; issued first, as TE's async gather); the dgrad is a partial sum
    // over the ranks' features.
    if (lnOut && !isa<QuantizedTensorType>(lnOut.getType()))
      lnOut = d.allGather(loc, lnOut, tp,
                          "the saved norm output's rows, for the wgrad");
    // A high-precision saved norm output can hold the dgrad's output (its
    // type): the wgrad first, so that it is dead before that output is born
    // (a donated backward places it there). A quantized one cannot: the
    // wgrad last, after the norm's backward, so that the dgrad's output
    // dies before the weight gradient is written and can be placed in its
    // buffer (a result's loan, lib/Analysis/MemoryPlan).
    bool wgradFirst = lnOut && !isa<QuantizedTensorType>(lnOut.getType());
    Value dW = wgradFirst
                   ? d.gemm(loc, GemmLayout::NT, dyq, lnOut, {}, element)
                   : Value();
    Value dLn = d.reducePartial(
        loc, d.gemm(loc, GemmLayout::NN, dyq, ln.getWeight(), {}, element), tp,
        "the dgrad's partial sums");
    Value dBias = ln.getWithBias() ? d.biasGrad(loc, dy) : Value();
    if (Value extra = ln.getGradLnOutput())
      dLn = arith::AddFOp::create(rewriter, loc, dLn, extra);
    auto nb = NormBwdOp::create(
        rewriter, loc,
        TypeRange(ln->getResultTypes()).take_front(ln.getWithLnBias() ? 3 : 2),
        dLn, ln.getInput(), ln.getLnWeight(), ln.getRsigma(), ln.getMu(),
        ln.getNormalization(), ln.getZeroCenteredGamma(), ln.getWithLnBias());
    grads.push_back(nb.getResult(0));
    for (Value g : nb->getResults().drop_front())
      grads.push_back(
          d.reduceParamGrad(loc, g, tp, "a norm weight's partial gradient"));
    if (lnOut && !wgradFirst)
      dW = d.gemm(loc, GemmLayout::NT, dyq, lnOut, {}, element);
    llvm::append_range(grads, Decomposer::concat({dW, dBias}));
    return d.finishBackward(ln, amaxes, grads);
  }

  DecomposeState &state;
};

} // namespace

void decompose::addLayerNormLinearPatterns(RewritePatternSet &patterns,
                                           DecomposeState &state) {
  patterns.add<DecomposeLayerNormLinear, DecomposeLayerNormLinearBwd>(
      patterns.getContext(), state);
}
