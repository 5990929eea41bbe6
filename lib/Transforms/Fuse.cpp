//===- Fuse.cpp - te-fuse-*: fusions on L2 primitives -----------*- C++ -*-===//
//
// te-fuse-gemm-epilogues: a bias gradient whose gradient a wgrad GEMM also
// reads becomes that GEMM's BGRADB epilogue (TransformerEngine's bf16 path,
// §1.5 step 6, §2.5 steps 5 and 8).
// te-fuse-dbias-dact: an activation derivative followed by the bias gradient
// of its result becomes one dbias+dact kernel (TE's dbias_d<act>, for the
// non-gated activations, §2.5 step 6).
// te-fuse-quantize-amax: a current-scaling FP8 quantization of an
// activation's (or its derivative's) result takes the amax that kernel
// computes while writing it, instead of a separate pass over the tensor.
// Each leaves a remark where a candidate cannot be fused, saying why.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEFUSEGEMMEPILOGUESPASS
#define GEN_PASS_DEF_TEFUSEDBIASDACTPASS
#define GEN_PASS_DEF_TEFUSEQUANTIZEAMAXPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// True when `v` is available just before `point` (same block).
bool availableBefore(Value v, Operation *point) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == point->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == point->getBlock() && def->isBeforeInBlock(point);
}

struct TEFuseGemmEpiloguesPass
    : public te::impl::TEFuseGemmEpiloguesPassBase<TEFuseGemmEpiloguesPass> {
  void runOnOperation() override {
    SmallVector<BiasGradOp> candidates;
    getOperation()->walk([&](BiasGradOp op) { candidates.push_back(op); });
    for (BiasGradOp bgrad : candidates) {
      Value dy = bgrad.getGrad();
      GemmOp wgrad;
      for (Operation *user : dy.getUsers())
        if (auto g = dyn_cast<GemmOp>(user);
            g && g.getLayout() == GemmLayout::NT && g.getLhs() == dy &&
            !g.getBiasGrad() && g->getBlock() == bgrad->getBlock()) {
          wgrad = g;
          break;
        }
      if (!wgrad) {
        bool quantized = llvm::any_of(dy.getUsers(), [](Operation *user) {
          return isa<QuantizeOp>(user);
        });
        bgrad.emitRemark(quantized
                             ? "te-fuse-gemm-epilogues: bias gradient not "
                               "fused: the wgrad GEMM reads the quantized "
                               "gradient (an FP8 GEMM has no bias-gradient "
                               "epilogue; TE sums the high-precision one)"
                             : "te-fuse-gemm-epilogues: bias gradient not "
                               "fused: no wgrad GEMM reads the same "
                               "gradient");
        continue;
      }
      // The fused GEMM goes where the earlier of the two was.
      Operation *point =
          wgrad->isBeforeInBlock(bgrad) ? wgrad.getOperation() : bgrad;
      if (!availableBefore(wgrad.getRhs(), point)) {
        bgrad.emitRemark("te-fuse-gemm-epilogues: bias gradient not fused: "
                         "the wgrad GEMM's input is computed after it");
        continue;
      }
      OpBuilder b(point);
      auto fused = GemmOp::create(b, wgrad.getLoc(), wgrad.getResult().getType(),
                                  bgrad.getType(), wgrad.getLhs(),
                                  wgrad.getRhs(), Value(), GemmLayout::NT);
      wgrad.getResult().replaceAllUsesWith(fused.getResult());
      bgrad.getResult().replaceAllUsesWith(fused.getBiasGrad());
      wgrad.erase();
      bgrad.erase();
    }
  }
};

struct TEFuseDBiasDActPass
    : public te::impl::TEFuseDBiasDActPassBase<TEFuseDBiasDActPass> {
  void runOnOperation() override {
    SmallVector<BiasGradOp> candidates;
    getOperation()->walk([&](BiasGradOp op) { candidates.push_back(op); });
    for (BiasGradOp bgrad : candidates) {
      auto dact = bgrad.getGrad().getDefiningOp<DActOp>();
      if (!dact)
        continue; // not the bias gradient of an activation's input
      if (isGatedActivation(dact.getActivation())) {
        bgrad.emitRemark()
            << "te-fuse-dbias-dact: not fused: gated activation "
            << stringifyActivationKind(dact.getActivation())
            << " has no fused dbias+dact kernel";
        continue;
      }
      OpBuilder b(dact);
      auto fused = DBiasDActOp::create(
          b, dact.getLoc(), dact.getResult().getType(), bgrad.getType(),
          dact.getAmax() ? dact.getAmax().getType() : Type(), dact.getGrad(),
          dact.getInput(), dact.getActivation(), dact.getLimitAttr(),
          dact.getAlphaAttr(), dact.getGluLinearOffsetAttr());
      bgrad.getResult().replaceAllUsesWith(fused.getBiasGrad());
      dact.getResult().replaceAllUsesWith(fused.getResult());
      if (Value amax = dact.getAmax())
        amax.replaceAllUsesWith(fused.getAmax());
      bgrad.erase();
      dact.erase();
    }
  }
};

/// The amax of `v` from the kernel producing it: its producer rebuilt with
/// an amax result (or its existing one); null when `v` is not the main
/// result of te.act, te.dact or te.dbias_dact.
Value amaxOfProducer(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def || def->getResult(0) != v)
    return {};
  OpBuilder b(def);
  Type amaxType = RankedTensorType::get({1}, b.getF32Type());
  Operation *fused = nullptr;
  if (auto op = dyn_cast<ActOp>(def)) {
    if (op.getAmax())
      return op.getAmax();
    fused = ActOp::create(b, op.getLoc(), op.getResult().getType(), amaxType,
                          op.getInput(), op.getActivation(), op.getLimitAttr(),
                          op.getAlphaAttr(), op.getGluLinearOffsetAttr());
  } else if (auto op = dyn_cast<DActOp>(def)) {
    if (op.getAmax())
      return op.getAmax();
    fused = DActOp::create(b, op.getLoc(), op.getResult().getType(), amaxType,
                           op.getGrad(), op.getInput(), op.getActivation(),
                           op.getLimitAttr(), op.getAlphaAttr(),
                           op.getGluLinearOffsetAttr());
  } else if (auto op = dyn_cast<DBiasDActOp>(def)) {
    if (op.getAmax())
      return op.getAmax();
    fused = DBiasDActOp::create(
        b, op.getLoc(), op.getResult().getType(), op.getBiasGrad().getType(),
        amaxType, op.getGrad(), op.getInput(), op.getActivation(),
        op.getLimitAttr(), op.getAlphaAttr(), op.getGluLinearOffsetAttr());
  } else {
    return {};
  }
  def->replaceAllUsesWith(fused->getResults().drop_back());
  def->erase();
  return fused->getResults().back();
}

struct TEFuseQuantizeAmaxPass
    : public te::impl::TEFuseQuantizeAmaxPassBase<TEFuseQuantizeAmaxPass> {
  void runOnOperation() override {
    SmallVector<QuantizeOp> candidates;
    getOperation()->walk([&](QuantizeOp op) {
      auto q = cast<QuantizedTensorType>(op.getResult().getType());
      if (isa<FP8CurrentRecipeAttr>(q.getRecipe()) && !op.getAmaxIn())
        candidates.push_back(op);
    });
    for (QuantizeOp quantize : candidates) {
      Value x = quantize.getInput();
      Value amax = amaxOfProducer(x);
      if (!amax) {
        Operation *def = x.getDefiningOp();
        InFlightDiagnostic remark = quantize.emitRemark()
                                    << "te-fuse-quantize-amax: amax not "
                                       "fused: the input is ";
        if (def)
          remark << "the result of " << def->getName()
                 << ", which computes no amax (the quantization reads it "
                    "twice)";
        else
          remark << "an argument (the quantization reads it twice)";
        continue;
      }
      // (The producer was rebuilt: the input is its new result.)
      OpBuilder b(quantize);
      auto fused = QuantizeOp::create(
          b, quantize.getLoc(), quantize.getResult().getType(),
          /*amax=*/Type(), quantize.getInput(), quantize.getScales(), amax,
          quantize.getSlotAttr(), quantize.getWeight(),
          quantize.getStochasticRounding(), quantize.getSeedAttr());
      quantize.getResult().replaceAllUsesWith(fused.getResult());
      if (Value old = quantize.getAmax())
        old.replaceAllUsesWith(amax);
      quantize.erase();
    }
  }
};

} // namespace
