//===- LayerNormMLP.cpp - te-decompose: te.layernorm_mlp --------*- C++ -*-===//
//
// te.layernorm_mlp and its backward in TE's kernel order (reference §1.5,
// §2.5): the norm, FC1 (TN), the activation, FC2 (TN); backward: FC2's
// dgrad and wgrad, the activation's derivative, FC1's dgrad and wgrad, the
// bias gradients and the norm's backward. FC1 column-parallel and FC2
// row-parallel under tensor parallelism (§1).
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::decompose;

namespace {

/// The most bytes of an FP8 copy of a static-shaped gradient whose delayed
/// cast writes both usages in one kernel (below: rowwise, then the byte
/// transpose into a dead buffer).
constexpr int64_t kBothUsageBytes = int64_t(1) << 20;

bool fewBytes(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || !t.hasStaticShape())
    return false;
  return t.getNumElements() <= kBothUsageBytes;
}

struct DecomposeLayerNormMLP : public OpRewritePattern<LayerNormMLPOp> {
  DecomposeLayerNormMLP(MLIRContext *ctx, DecomposeState &state)
      : OpRewritePattern(ctx), state(state) {}

  LogicalResult matchAndRewrite(LayerNormMLPOp mlp,
                                PatternRewriter &rewriter) const override {
    Decomposer d(rewriter, state);
    Location loc = mlp.getLoc();
    rewriter.setInsertionPoint(mlp);
    SmallVector<Value> amaxes;
    Value source = mlp.getOutput();
    // TE's forward quantizer slots (§0.2): GEMM1 input, weight, output,
    // then GEMM2's.
    FailureOr<Quant> q =
        quantOf(mlp, mlp.getRecipeAttr(), mlp.getScales(), true, d.getArch());
    if (failed(q))
      return failure();
    Decomposer::Norm n = d.norm(loc, mlp.getInput(), mlp.getLnWeight(),
                                mlp.getLnBias(), mlp.getNormalization(),
                                mlp.getEps(), mlp.getZeroCenteredGamma());
    Type element = Decomposer::elementOf(n.out);
    TensorParallelAttr tp = mlp.getTpAttr();
    // FC1 column-parallel on the gathered rows, FC2 row-parallel (§1).
    Value lhs =
              d.allGather(loc, n.out, tp, "the norm output's rows, before FC1"),
          w1 = mlp.getFc1Weight(), w2 = mlp.getFc2Weight();
    Value lnSaved = n.out, w1Saved = w1, w2Saved = w2;
    if (*q) {
      // Quantized after the gather, with the group's amax; saved gathered.
      lhs = d.quantize(loc, lhs, *q, false, 0, amaxes, QuantUsage::Rowwise,
                       source, "ln_out", &lnSaved);
      w1 = d.quantize(loc, w1, *q, false, 1, amaxes, QuantUsage::Rowwise,
                      source, "fc1_weight", &w1Saved);
    }
    Value fc1 = d.gemm(loc, GemmLayout::TN, lhs, w1, mlp.getFc1Bias(), element);
    auto fc1Type = cast<RankedTensorType>(fc1.getType());
    SmallVector<int64_t> actShape(fc1Type.getShape());
    actShape.back() = mlp.getFfnSize();
    Value act =
        ActOp::create(rewriter, loc, RankedTensorType::get(actShape, element),
                      /*amax=*/Type(), fc1, mlp.getActivation())
            .getResult();
    Value act2 = act, actSaved = act;
    if (*q) {
      act2 = d.quantize(loc, act, *q, false, 3, amaxes, QuantUsage::Rowwise,
                        source, "act_out", &actSaved);
      w2 = d.quantize(loc, w2, *q, false, 4, amaxes, QuantUsage::Rowwise,
                      source, "fc2_weight", &w2Saved);
    }
    Value y;
    if (tp) {
      // The bias is added after the reduction of the partial sums (TE's
      // gemm_bias_unfused_add).
      y = d.reducePartial(loc,
                          d.gemm(loc, GemmLayout::TN, act2, w2, {}, element),
                          tp, "FC2's partial sums (its bias added after)");
      if (Value b2 = mlp.getFc2Bias())
        y = BiasAddOp::create(rewriter, loc, y.getType(), y, b2);
    } else {
      y = d.gemm(loc, GemmLayout::TN, act2, w2, mlp.getFc2Bias(), element);
    }
    llvm::StringMap<Value> saved = {
        {"ln_out", lnSaved},   {"fc1_weight", w1Saved}, {"fc1_out", fc1},
        {"act_out", actSaved}, {"fc2_weight", w2Saved}, {"rsigma", n.rsigma},
        {"mu", n.mu}};
    return d.finishForward(
        mlp, saved, amaxes,
        Decomposer::concat({y, mlp.getLnOutput() ? n.out : Value()}));
  }

  DecomposeState &state;
};

struct DecomposeLayerNormMLPBwd : public OpRewritePattern<LayerNormMLPBwdOp> {
  DecomposeLayerNormMLPBwd(MLIRContext *ctx, DecomposeState &state)
      : OpRewritePattern(ctx), state(state) {}

  LogicalResult matchAndRewrite(LayerNormMLPBwdOp mlp,
                                PatternRewriter &rewriter) const override {
    Decomposer d(rewriter, state);
    Location loc = mlp.getLoc();
    rewriter.setInsertionPoint(mlp);
    SmallVector<Value> grads, amaxes;
    // TE's backward quantizer slots (§0.2): GRAD_OUTPUT1, GRAD_INPUT1, then
    // GRAD_OUTPUT2, GRAD_INPUT2 (FC2's).
    FailureOr<Quant> q =
        quantOf(mlp, mlp.getRecipeAttr(), mlp.getScales(), false, d.getArch());
    if (failed(q))
      return failure();
    Value dy = mlp.getGradOutput();
    Type element = Decomposer::elementOf(dy);
    TensorParallelAttr tp = mlp.getTpAttr();
    // Row-parallel FC2 (§1): its GEMMs on the gathered dy, its bias
    // gradient from the rank's rows (a partial sum under sequence
    // parallelism).
    Value dyRows = dy;
    dy = d.allGather(loc, dy, tp,
                     "the output gradient's rows, before FC2's "
                     "dgrad and wgrad");
    // The saved norm output's rows gathered again for FC1's wgrad, issued
    // first as TE issues it (async) before FC2's GEMMs: the recomputed
    // (checkpointed) backward has it as early, so both fuse the same way.
    // No saved norm output (activation output): a frozen FC1 (FC2) weight,
    // no wgrad, nor the columnwise copy of the gradient it would read.
    Value lnOut = mlp.getLnOut(), actOut = mlp.getActOut();
    if (lnOut && !isa<QuantizedTensorType>(lnOut.getType()))
      lnOut = d.allGather(loc, lnOut, tp,
                          "the saved norm output's rows, for FC1's wgrad");
    // A rowwise-saved per-tensor FP8 act_out gets its columnwise copy (the
    // transpose of its bytes) for FC2's wgrad (§2.5), first: the saved
    // act_out is then dead, so a backward donated its saved tensors places
    // the quantized dy in its buffer.
    if (auto qa = actOut ? dyn_cast<QuantizedTensorType>(actOut.getType())
                         : QuantizedTensorType();
        qa && !qa.hasColumnwise())
      actOut = AddColumnwiseOp::create(rewriter, loc,
                                       qa.withUsage(QuantUsage::Columnwise),
                                       actOut)
                   .getResult();
    Value dyq = d.quantizeGrad(loc, dy, *q, 2, amaxes, bool(actOut));
    // Each wgrad before its dgrad: the saved tensor it reads last is dead
    // before the dgrad's output is born, so a backward donated its saved
    // tensors (te_module_run_donated) places that output there.
    Value dW2 = actOut ? d.gemm(loc, GemmLayout::NT, dyq, actOut, {}, element)
                       : Value();
    Value dAct =
        d.gemm(loc, GemmLayout::NN, dyq, mlp.getFc2Weight(), {}, element);
    Value dB2 = mlp.getWithFc2Bias()
                    ? d.reduceParamGrad(loc, d.biasGrad(loc, dyRows), tp,
                                        "FC2's partial bias gradient")
                    : Value();
    Value dFc1 = DActOp::create(rewriter, loc, mlp.getFc1Out().getType(),
                                /*amax=*/Type(), dAct, mlp.getFc1Out(),
                                mlp.getActivation())
                     .getResult();
    Value dB1 = mlp.getWithFc1Bias() ? d.biasGrad(loc, dFc1) : Value();
    // Under delayed scaling te-fuse-act-quantize casts the derivative in its
    // own kernel, which reads dAct and fc1_out: a both-usage output could be
    // written over neither (its columnwise part is transposed). So the
    // kernel casts rowwise only and the columnwise copy (the transpose of
    // those bytes, TE's for per-tensor FP8) is added after, into dAct's dead
    // buffer; a donated backward puts the rowwise copy in act_out's. The
    // arena loses the both-usage buffer (256 MiB at 8192 x 16384), for one
    // byte transpose. At few static rows (the both-usage output at most
    // kBothUsageBytes) the byte transpose is a 3-4 µs node of the step's
    // graph on the way to FC1's wgrad, and the buffer it saves a few KiB:
    // the kernel writes both usages there.
    Value dFc1q, dFc1qCol;
    if (*q && isa<FP8DelayedRecipeAttr>(q->recipe) && lnOut &&
        !fewBytes(dFc1)) {
      dFc1q = d.quantizeGrad(loc, dFc1, *q, 0, amaxes, /*wgrad=*/false);
      auto row = cast<QuantizedTensorType>(dFc1q.getType());
      dFc1qCol = AddColumnwiseOp::create(rewriter, loc,
                                         row.withUsage(QuantUsage::Columnwise),
                                         dFc1q)
                     .getResult();
    } else {
      dFc1q = dFc1qCol = d.quantizeGrad(loc, dFc1, *q, 0, amaxes, bool(lnOut));
    }
    // FC1's dgrad is a partial sum; its wgrad reads the norm output
    // gathered again from the saved rows.
    Value dW1 = lnOut
                    ? d.gemm(loc, GemmLayout::NT, dFc1qCol, lnOut, {}, element)
                    : Value();
    Value dLn = d.reducePartial(
        loc,
        d.gemm(loc, GemmLayout::NN, dFc1q, mlp.getFc1Weight(), {}, element), tp,
        "FC1's dgrad partial sums");
    if (Value extra = mlp.getGradLnOutput())
      dLn = arith::AddFOp::create(rewriter, loc, dLn, extra);
    auto nb =
        NormBwdOp::create(rewriter, loc,
                          TypeRange(mlp->getResultTypes())
                              .take_front(mlp.getWithLnBias() ? 3 : 2),
                          dLn, mlp.getInput(), mlp.getLnWeight(),
                          mlp.getRsigma(), mlp.getMu(), mlp.getNormalization(),
                          mlp.getZeroCenteredGamma(), mlp.getWithLnBias());
    grads.push_back(nb.getResult(0));
    for (Value g : nb->getResults().drop_front())
      grads.push_back(
          d.reduceParamGrad(loc, g, tp, "a norm weight's partial gradient"));
    llvm::append_range(grads, Decomposer::concat({dW1, dB1, dW2, dB2}));
    return d.finishBackward(mlp, amaxes, grads);
  }

  DecomposeState &state;
};

} // namespace

void decompose::addLayerNormMLPPatterns(RewritePatternSet &patterns,
                                        DecomposeState &state) {
  patterns.add<DecomposeLayerNormMLP, DecomposeLayerNormMLPBwd>(
      patterns.getContext(), state);
}
