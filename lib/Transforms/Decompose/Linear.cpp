//===- Linear.cpp - te-decompose: te.linear ---------------------*- C++ -*-===//
//
// te.linear and its backward: one GEMM (TN); backward: dgrad (NN), wgrad
// (NT) and the bias gradient.
//
//===----------------------------------------------------------------------===//

#include "Decomposer.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::decompose;

namespace {

struct DecomposeLinear : public OpRewritePattern<LinearOp> {
  DecomposeLinear(MLIRContext *ctx, DecomposeState &state)
      : OpRewritePattern(ctx), state(state) {}

  LogicalResult matchAndRewrite(LinearOp lin,
                                PatternRewriter &rewriter) const override {
    Decomposer d(rewriter, state);
    Location loc = lin.getLoc();
    rewriter.setInsertionPoint(lin);
    SmallVector<Value> amaxes;
    Value source = lin.getOutput();
    // TE's forward quantizer slots (§0.2): input, weight, output.
    FailureOr<Quant> q =
        quantOf(lin, lin.getRecipeAttr(), lin.getScales(), true, d.getArch());
    if (failed(q))
      return failure();
    Value x = lin.getInput(), w = lin.getWeight(), xSaved = x, wSaved = w;
    Type element = Decomposer::elementOf(x);
    if (*q) {
      x = d.quantize(loc, x, *q, false, 0, amaxes, QuantUsage::Rowwise, source,
                     "input", &xSaved);
      w = d.quantize(loc, w, *q, false, 1, amaxes, QuantUsage::Rowwise, source,
                     "weight", &wSaved);
    }
    // (input_rowwise / weight_rowwise: the GEMM's quantized operands, which
    // row-scaled NVFP4 saves beside its HP tensors under save_rowwise.)
    llvm::StringMap<Value> saved = {{"input", xSaved},
                                    {"weight", wSaved},
                                    {"input_rowwise", x},
                                    {"weight_rowwise", w}};
    Value y = d.gemm(loc, GemmLayout::TN, x, w, lin.getBias(), element);
    return d.finishForward(lin, saved, amaxes, y);
  }

  DecomposeState &state;
};

struct DecomposeLinearBwd : public OpRewritePattern<LinearBwdOp> {
  DecomposeLinearBwd(MLIRContext *ctx, DecomposeState &state)
      : OpRewritePattern(ctx), state(state) {}

  LogicalResult matchAndRewrite(LinearBwdOp lin,
                                PatternRewriter &rewriter) const override {
    Decomposer d(rewriter, state);
    Location loc = lin.getLoc();
    rewriter.setInsertionPoint(lin);
    SmallVector<Value> amaxes;
    // TE's backward quantizer slots (§0.2): GRAD_OUTPUT1, GRAD_INPUT1.
    FailureOr<Quant> q =
        quantOf(lin, lin.getRecipeAttr(), lin.getScales(), false, d.getArch());
    if (failed(q))
      return failure();
    Value dy = lin.getGradOutput();
    Type element = Decomposer::elementOf(dy);
    // No saved input: a frozen weight, no wgrad (nor dy's columnwise copy).
    Value input = lin.getInput();
    Value dyq = d.quantizeGrad(loc, dy, *q, 0, amaxes, bool(input));
    SmallVector<Value> grads = Decomposer::concat(
        {d.gemm(loc, GemmLayout::NN, dyq, lin.getWeight(), {}, element),
         input ? d.gemm(loc, GemmLayout::NT, dyq, input, {}, element) : Value(),
         lin.getWithBias() ? d.biasGrad(loc, dy) : Value()});
    return d.finishBackward(lin, amaxes, grads);
  }

  DecomposeState &state;
};

} // namespace

void decompose::addLinearPatterns(RewritePatternSet &patterns,
                                  DecomposeState &state) {
  patterns.add<DecomposeLinear, DecomposeLinearBwd>(patterns.getContext(),
                                                    state);
}
