//===- FuseGemmEpilogues.cpp - te-fuse-gemm-epilogues -----------*- C++ -*-===//
//
// A bias gradient whose gradient a wgrad GEMM also reads becomes that
// GEMM's BGRADB epilogue (TransformerEngine's bf16 path, section 1.5 step 6,
// section 2.5 steps 5 and 8); by act-epilogues (off, auto: static row
// counts >= act-epilogue-min-rows only, on), GELU after the fprop GEMM and
// its derivative after the dgrad GEMM go into those GEMMs' epilogues
// (cuBLASLt GELU_AUX_BIAS, DGELU). Leaves a remark where a candidate cannot
// be fused, saying why.
//
//===----------------------------------------------------------------------===//

#include "Fusion.h"
#include "te/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEFUSEGEMMEPILOGUESPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::fusion;

namespace {

/// Which GEMMs the activation epilogues fold (act-epilogues): under auto
/// (minRows set), only those with a static row count of at least minRows.
struct ActEpiloguePolicy {
  std::optional<int64_t> minRows; // unset: on (every eligible GEMM)
  /// dact-epilogue-max-rows / bias-grad-epilogue-max-rows: unset, no limit.
  std::optional<int64_t> dactMaxRows, biasGradMaxRows;
};

/// The rows of a GEMM reading `lhs` (the product of its leading dims: the
/// tokens), or none when one is dynamic.
std::optional<int64_t> staticRows(Value lhs) {
  int64_t rows = 1;
  for (int64_t d : cast<RankedTensorType>(lhs.getType()).getShape().drop_back()) {
    if (ShapedType::isDynamic(d))
      return std::nullopt;
    rows *= d;
  }
  return rows;
}

/// Why a fold limited to `maxRows` rows (the option `option`) does not
/// apply to the GEMM reading `lhs`; empty when it may fold.
std::string whyNotByMaxRows(Value lhs, std::optional<int64_t> maxRows,
                            StringRef option, StringRef instead) {
  if (!maxRows)
    return "";
  std::optional<int64_t> rows = staticRows(lhs);
  if (rows && *rows <= *maxRows)
    return "";
  return ((rows ? Twine(*rows) + " rows > " : Twine("rows are dynamic; ")) +
          option + " " + Twine(*maxRows) + " (" + instead + ")")
      .str();
}

/// Under auto: why the GEMM reading `lhs` is too small (or of unknown size)
/// for the epilogue; empty when it may fold. Its rows are the product of
/// the leading dims of `lhs` (the tokens).
std::string whyNotBySize(Value lhs, const ActEpiloguePolicy &policy) {
  if (!policy.minRows)
    return "";
  int64_t threshold = *policy.minRows;
  auto type = cast<RankedTensorType>(lhs.getType());
  int64_t rows = 1;
  for (int64_t d : type.getShape().drop_back()) {
    if (ShapedType::isDynamic(d))
      return ("rows are dynamic; auto folds static row counts >= " +
              Twine(threshold) +
              " only, --gemm-act-epilogues (act-epilogues=on) forces it")
          .str();
    rows *= d;
  }
  if (rows >= threshold)
    return "";
  return (Twine(rows) + " rows < " + Twine(threshold) +
          "; auto folds static row counts >= " + Twine(threshold) +
          " only (at few rows the plain GEMM + activation kernel measured "
          "faster on the H200), --gemm-act-epilogues (act-epilogues=on) "
          "forces it")
      .str();
}

/// A GELU epilogue fold: the GEMM layout it takes and the words naming it
/// in remarks.
struct EpilogueFold {
  GemmLayout layout;
  const char *function; // what cuBLASLt's epilogue computes
  const char *operand;  // the value the GEMM must produce
  const char *gemm;     // that GEMM
  const char *cast;     // what the FP8 recipes fuse with the cast instead
};
constexpr EpilogueFold kFpropFold{GemmLayout::TN, "GELU", "the input",
                                  "an fprop (tn)", "activation"};
constexpr EpilogueFold kDgradFold{GemmLayout::NN, "the derivative of GELU",
                                  "the incoming gradient", "a dgrad (nn)",
                                  "activation's derivative"};

/// The GEMM producing `v`, which `user` (a te.act / te.dact of activation
/// `kind`, with an amax result or not) reads, when the fold `f` may take
/// them; else null with `why` set. Rules both folds share; each adds its
/// own after.
GemmOp epilogueGemm(Operation *user, ActivationAttr kind, bool amax, Value v,
                    const EpilogueFold &f, std::string &why) {
  auto gemm = v.getDefiningOp<GemmOp>();
  if (!kind.hasGemmEpilogue())
    why = ("activation " + kind.getActivationName() +
           " has no GEMM epilogue (cuBLASLt's computes " + f.function +
           ", the tanh approximation, only)")
              .str();
  else if (amax)
    why = "its amax result is wanted (the GEMM epilogue computes no amax)";
  else if (!gemm || gemm.getLayout() != f.layout)
    why = (Twine(f.operand) + " is not produced by " + f.gemm + " GEMM").str();
  else if (!highPrecision(gemm.getLhs()) || !highPrecision(gemm.getRhs()))
    why = (Twine("the GEMM's operands are quantized (the FP8 recipes fuse "
                 "the ") +
           f.cast + " with its cast instead: te-fuse-act-quantize)")
              .str();
  else if (gemm->getBlock() != user->getBlock())
    why = "the GEMM is in another block";
  else
    return gemm;
  return GemmOp();
}

/// `te.act gelu` of an fprop GEMM's result -> te.gemm_act. Returns why not
/// (empty when fused).
std::string foldActEpilogue(ActOp act, const ActEpiloguePolicy &policy) {
  Value pre = act.getInput();
  std::string why;
  GemmOp gemm = epilogueGemm(act, act.getActivation(), bool(act.getAmax()),
                             pre, kFpropFold, why);
  if (!gemm)
    return why;
  if (std::string why = whyNotBySize(gemm.getLhs(), policy); !why.empty())
    return why;
  // The fused op goes where the GEMM was: its operands are available there.
  bool saved = llvm::any_of(pre.getUsers(), [&](Operation *user) {
    return user != act.getOperation();
  });
  OpBuilder b(gemm);
  Type t = act.getResult().getType();
  auto fused =
      GemmActOp::create(b, gemm.getLoc(), t, saved ? t : Type(), gemm.getLhs(),
                        gemm.getRhs(), gemm.getBias(), act.getActivation());
  act.getResult().replaceAllUsesWith(fused.getResult());
  act.erase();
  if (saved)
    pre.replaceAllUsesWith(fused.getPre());
  gemm.erase();
  return "";
}

/// `te.dact gelu` of a dgrad GEMM's result -> te.gemm_dact. Returns why not
/// (empty when fused).
std::string foldDActEpilogue(DActOp dact, const ActEpiloguePolicy &policy) {
  Value dh = dact.getGrad();
  std::string why;
  GemmOp gemm = epilogueGemm(dact, dact.getActivation(), bool(dact.getAmax()),
                             dh, kDgradFold, why);
  if (!gemm)
    return why;
  for (Operation *user : dh.getUsers())
    if (user != dact.getOperation())
      return ("the GEMM's result is also read by " +
              user->getName().getStringRef() + " (it must be stored)")
          .str();
  if (std::string why = whyNotBySize(gemm.getLhs(), policy); !why.empty())
    return why;
  if (std::string why = whyNotByMaxRows(
          gemm.getLhs(), policy.dactMaxRows, "dact-epilogue-max-rows",
          "the plain dgrad GEMM + the dGELU kernel run there");
      !why.empty())
    return why;
  // The fused op goes where the dact was: the GEMM (hence its operands)
  // comes before it in the same block, and so does the pre-activation.
  OpBuilder b(dact);
  auto fused = GemmDActOp::create(b, dact.getLoc(), dact.getResult().getType(),
                                  gemm.getLhs(), gemm.getRhs(), dact.getInput(),
                                  dact.getActivation());
  dact.getResult().replaceAllUsesWith(fused.getResult());
  dact.erase();
  gemm.erase();
  return "";
}

/// `main + extf(te.gemm nt %dy, %x)` (what te-generate-backward emits for
/// a te.main_grad argument) -> `te.gemm nt %dy, %x accumulate(%main)`: the
/// fp32 product added to main_grad in the GEMM's epilogue, never rounded to
/// the operands' dtype. Returns why not (empty when fused).
std::string foldMainGradAccumulate(arith::AddFOp add) {
  auto f32 = Float32Type::get(add.getContext());
  auto resultType = dyn_cast<RankedTensorType>(add.getType());
  if (!resultType || resultType.getElementType() != f32)
    return "not an fp32 tensor add";
  // The gradient operand: an extf of the GEMM's result, or (fp32
  // operands) the result itself.
  for (unsigned i = 0; i < 2; ++i) {
    Value main = add->getOperand(1 - i), grad = add->getOperand(i);
    auto ext = grad.getDefiningOp<arith::ExtFOp>();
    Value product = ext ? ext.getIn() : grad;
    auto gemm = product.getDefiningOp<GemmOp>();
    if (!gemm || gemm.getLayout() != GemmLayout::NT)
      continue;
    if (gemm.getAccumulate() || gemm.getBiasGrad())
      return "the wgrad GEMM already has an epilogue";
    if (!product.hasOneUse() || (ext && !ext.getResult().hasOneUse()))
      return "the wgrad GEMM's result is also read elsewhere (it must be "
             "stored in its dtype)";
    if (gemm->getBlock() != add->getBlock())
      return "the wgrad GEMM is in another block";
    // At the add: main_grad and the GEMM's operands are available there.
    OpBuilder b(add);
    auto fused = GemmOp::create(b, gemm.getLoc(), resultType, Type(),
                                gemm.getLhs(), gemm.getRhs(), Value(), main,
                                GemmLayout::NT, gemm.getFastAccumulate());
    add.getResult().replaceAllUsesWith(fused.getResult());
    add.erase();
    if (ext)
      ext.erase();
    gemm.erase();
    return "";
  }
  return "no wgrad GEMM produces the gradient";
}

struct TEFuseGemmEpiloguesPass
    : public te::impl::TEFuseGemmEpiloguesPassBase<TEFuseGemmEpiloguesPass> {
  using Base::Base;
  void runOnOperation() override {
    // The activation first: FC1's bias gradient is the bias gradient of
    // the dact's result, which the fused te.gemm_dact then produces.
    ActEpiloguePolicy policy;
    if (actEpilogues == ActEpilogues::Auto) {
      if (actEpilogueMinRows < 0) {
        getOperation()->emitError()
            << "te-fuse-gemm-epilogues: act-epilogue-min-rows must be >= 0, "
               "got "
            << static_cast<int64_t>(actEpilogueMinRows);
        return signalPassFailure();
      }
      policy.minRows = actEpilogueMinRows;
    } else if (!actEpilogues.isValid()) {
      getOperation()->emitError()
          << "te-fuse-gemm-epilogues: act-epilogues must be off, auto or on, "
             "got '"
          << actEpilogues.spelling() << "'";
      return signalPassFailure();
    }
    for (auto [name, value, limit] :
         {std::tuple{"dact-epilogue-max-rows", int64_t(dactEpilogueMaxRows),
                     &policy.dactMaxRows},
          std::tuple{"bias-grad-epilogue-max-rows",
                     int64_t(biasGradEpilogueMaxRows),
                     &policy.biasGradMaxRows}}) {
      if (value < -1) {
        getOperation()->emitError()
            << "te-fuse-gemm-epilogues: " << name
            << " must be >= 0 (or -1: no limit), got " << value;
        return signalPassFailure();
      }
      if (value >= 0)
        *limit = value;
    }
    RemarkEmitter remark(getOperation(), "te-fuse-gemm-epilogues", reportWork);
    if (actEpilogues != ActEpilogues::Off) {
      SmallVector<Operation *> acts;
      getOperation()->walk([&](Operation *op) {
        if (isa<ActOp, DActOp>(op))
          acts.push_back(op);
      });
      for (Operation *op : acts) {
        remark.candidate();
        std::string why =
            isa<ActOp>(op) ? foldActEpilogue(cast<ActOp>(op), policy)
                           : foldDActEpilogue(cast<DActOp>(op), policy);
        if (why.empty())
          remark.changed();
        else
          remark(op) << "te-fuse-gemm-epilogues: " << op->getName()
                     << " not fused into a GEMM epilogue: " << why;
      }
    }
    // main_grad accumulation (before the bias gradients: a GEMM that
    // accumulates into main_grad has no BGRADB epilogue). The candidates:
    // the fp32 adds of a function's te.main_grad_of results.
    SmallVector<arith::AddFOp> mainGradAdds;
    getOperation()->walk([&](func::FuncOp f) {
      if (f.isExternal())
        return;
      auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
      for (unsigned r = 0; r < f.getNumResults(); ++r)
        if (f.getResultAttr(r, "te.main_grad_of"))
          if (auto add = ret.getOperand(r).getDefiningOp<arith::AddFOp>())
            mainGradAdds.push_back(add);
    });
    for (arith::AddFOp add : mainGradAdds) {
      remark.candidate();
      Operation *op = add;
      std::string why = foldMainGradAccumulate(add);
      if (why.empty())
        remark.changed();
      else
        remark(op) << "te-fuse-gemm-epilogues: main_grad accumulation not "
                      "fused into the wgrad GEMM: "
                   << why;
    }
    SmallVector<BiasGradOp> candidates;
    getOperation()->walk([&](BiasGradOp op) { candidates.push_back(op); });
    for (BiasGradOp bgrad : candidates) {
      remark.candidate();
      Value dy = bgrad.getGrad();
      GemmOp wgrad;
      for (Operation *user : dy.getUsers())
        if (auto g = dyn_cast<GemmOp>(user);
            g && g.getLayout() == GemmLayout::NT && g.getLhs() == dy &&
            !g.getBiasGrad() && !g.getAccumulate() &&
            g->getBlock() == bgrad->getBlock()) {
          wgrad = g;
          break;
        }
      if (!wgrad) {
        bool quantized = llvm::any_of(dy.getUsers(), [](Operation *user) {
          return isa<QuantizeOp>(user);
        });
        remark(bgrad) << (quantized
                              ? "te-fuse-gemm-epilogues: bias gradient not "
                                "fused: the wgrad GEMM reads the quantized "
                                "gradient (an FP8 GEMM has no bias-gradient "
                                "epilogue; te-fuse-dbias-quantize fuses it "
                                "with a per-tensor FP8 cast)"
                          : llvm::any_of(dy.getUsers(),
                                         [](Operation *user) {
                                           auto g = dyn_cast<GemmOp>(user);
                                           return g && g.getAccumulate();
                                         })
                              ? "te-fuse-gemm-epilogues: bias gradient "
                                "not fused: the wgrad GEMM accumulates "
                                "into main_grad (no BGRADB epilogue "
                                "with it)"
                              : "te-fuse-gemm-epilogues: bias gradient not "
                                "fused: no wgrad GEMM reads the same "
                                "gradient");
        continue;
      }
      if (std::string why = whyNotByMaxRows(
              dy, policy.biasGradMaxRows, "bias-grad-epilogue-max-rows",
              "the column reduction runs there, or the dact kernel's fused "
              "one");
          !why.empty()) {
        remark(bgrad) << "te-fuse-gemm-epilogues: bias gradient not fused: "
                      << why;
        continue;
      }
      // The fused GEMM goes where the earlier of the two was.
      Operation *point =
          wgrad->isBeforeInBlock(bgrad) ? wgrad.getOperation() : bgrad;
      if (!availableBefore(wgrad.getRhs(), point)) {
        remark(bgrad) << "te-fuse-gemm-epilogues: bias gradient not fused: "
                         "the wgrad GEMM's input is computed after it";
        continue;
      }
      OpBuilder b(point);
      auto fused = GemmOp::create(
          b, wgrad.getLoc(), wgrad.getResult().getType(), bgrad.getType(),
          wgrad.getLhs(), wgrad.getRhs(), Value(), Value(), GemmLayout::NT);
      wgrad.getResult().replaceAllUsesWith(fused.getResult());
      bgrad.getResult().replaceAllUsesWith(fused.getBiasGrad());
      wgrad.erase();
      bgrad.erase();
      remark.changed();
    }
  }
};

} // namespace
