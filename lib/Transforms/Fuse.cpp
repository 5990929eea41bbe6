//===- Fuse.cpp - te-fuse-*: fusions on L2 primitives -----------*- C++ -*-===//
//
// te-fuse-gemm-epilogues: a bias gradient whose gradient a wgrad GEMM also
// reads becomes that GEMM's BGRADB epilogue (TransformerEngine's bf16 path,
// §1.5 step 6, §2.5 steps 5 and 8); by act-epilogues (off, auto: static
// row counts >= act-epilogue-min-rows only, on), GELU after the fprop GEMM
// and its derivative after the dgrad GEMM go into those GEMMs' epilogues
// (cuBLASLt GELU_AUX_BIAS, DGELU).
// te-fuse-dbias-dact: an activation derivative followed by the bias gradient
// of its result becomes one dbias+dact kernel (TE's dbias_d<act>, for the
// non-gated activations, §2.5 step 6).
// te-fuse-quantize-amax: a current-scaling FP8 quantization of an
// activation's (or its derivative's) result takes the amax that kernel
// computes while writing it, instead of a separate pass over the tensor.
// te-fuse-act-quantize: a delayed-scaling FP8 quantization of an activation's
// (or its derivative's) result is cast by that kernel with the given scale
// (TE's fused activation-cast); the high-precision tensor is never stored.
// te-fuse-norm-quantize: a per-tensor FP8 quantization (current or delayed
// scaling) of a normalization's output is done by the norm kernel (TE's
// norm with an FP8 output); the high-precision output is never stored.
// Each leaves a remark where a candidate cannot be fused, saying why.
//
// Every pass is linear in the size of the function: one walk collects the
// candidates, each is decided from its own def-use edges, and the remarks
// print their operation (the context's printOpOnDiagnostic note) with names
// numbered once per function, again only after a fusion changed it
// (RemarkEmitter), where Operation::emitRemark numbers the whole function
// for every remark.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEFUSEGEMMEPILOGUESPASS
#define GEN_PASS_DEF_TEFUSEDBIASDACTPASS
#define GEN_PASS_DEF_TEFUSEQUANTIZEAMAXPASS
#define GEN_PASS_DEF_TEFUSEACTQUANTIZEPASS
#define GEN_PASS_DEF_TEFUSENORMQUANTIZEPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// Emits the fusion passes' remarks, as `op->emitRemark()` does (the remark
/// at the op's location and, when the context prints operations on
/// diagnostics, the note "see current operation: <op>"), but numbers the
/// names of the op's function once, and again only after `changed()`: a
/// fresh numbering per remark is a walk over the whole function, quadratic
/// over a model of many layers. The text is the same: the same AsmState
/// root (the closest isolated-from-above ancestor) and printing flags.
class RemarkEmitter {
public:
  /// `pass` names the pass in the work report; `report` (its report-work
  /// option) asks for it.
  RemarkEmitter(Operation *anchor, StringRef pass, bool report)
      : anchor(anchor), pass(pass), report(report) {}
  /// The work report (report-work): a remark at the pass's anchor.
  ~RemarkEmitter() {
    if (report)
      mlir::emitRemark(anchor->getLoc())
          << pass << ": work: " << candidates << " candidates, " << remarks
          << " remarks, " << numbered
          << " operations numbered for the remarks";
  }

  /// Counts a candidate the pass looks at.
  void candidate() { ++candidates; }

  InFlightDiagnostic operator()(Operation *op) {
    ++remarks;
    InFlightDiagnostic diag = mlir::emitRemark(op->getLoc());
    if (!op->getContext()->shouldPrintOpOnDiagnostic())
      return diag;
    Operation *root = op;
    while (Operation *parent = root->getParentOp()) {
      root = parent;
      if (parent->hasTrait<OpTrait::IsIsolatedFromAbove>())
        break;
    }
    if (!state || root != stateRoot) {
      OpPrintingFlags flags;
      flags.elideLargeElementsAttrs();
      state = std::make_unique<AsmState>(root, flags);
      stateRoot = root;
      root->walk([&](Operation *) { ++numbered; });
    }
    std::string text;
    llvm::raw_string_ostream os(text);
    op->print(os, *state);
    Diagnostic &note = diag.attachNote(op->getLoc());
    note << "see current operation: ";
    if (StringRef(text).contains('\n'))
      note << "\n";
    note << text;
    return diag;
  }
  /// The IR changed: number the function again before the next remark.
  void changed() { state.reset(); }

private:
  Operation *anchor;
  StringRef pass;
  bool report;
  int64_t candidates = 0, remarks = 0, numbered = 0;
  std::unique_ptr<AsmState> state;
  Operation *stateRoot = nullptr;
};

/// True when `v` is available just before `point` (same block).
bool availableBefore(Value v, Operation *point) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == point->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == point->getBlock() && def->isBeforeInBlock(point);
}

/// True when `v` is a high-precision tensor (not a `!te.qtensor`).
bool highPrecision(Value v) { return isa<RankedTensorType>(v.getType()); }

/// Which GEMMs the activation epilogues fold (act-epilogues): under auto
/// (minRows set), only those with a static row count of at least minRows.
struct ActEpiloguePolicy {
  std::optional<int64_t> minRows; // unset: on (every eligible GEMM)
};

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

struct TEFuseGemmEpiloguesPass
    : public te::impl::TEFuseGemmEpiloguesPassBase<TEFuseGemmEpiloguesPass> {
  using Base::Base;
  void runOnOperation() override {
    // The activation first: FC1's bias gradient is the bias gradient of
    // the dact's result, which the fused te.gemm_dact then produces.
    ActEpiloguePolicy policy;
    if (actEpilogues == "auto") {
      if (actEpilogueMinRows < 0) {
        getOperation()->emitError()
            << "te-fuse-gemm-epilogues: act-epilogue-min-rows must be >= 0, "
               "got "
            << static_cast<int64_t>(actEpilogueMinRows);
        return signalPassFailure();
      }
      policy.minRows = actEpilogueMinRows;
    } else if (actEpilogues != "on" && actEpilogues != "off") {
      getOperation()->emitError()
          << "te-fuse-gemm-epilogues: act-epilogues must be off, auto or on, "
             "got '"
          << static_cast<std::string>(actEpilogues) << "'";
      return signalPassFailure();
    }
    RemarkEmitter remark(getOperation(), "te-fuse-gemm-epilogues", reportWork);
    if (actEpilogues != "off") {
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
    SmallVector<BiasGradOp> candidates;
    getOperation()->walk([&](BiasGradOp op) { candidates.push_back(op); });
    for (BiasGradOp bgrad : candidates) {
      remark.candidate();
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
        remark(bgrad) << (quantized
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
        remark(bgrad) << "te-fuse-gemm-epilogues: bias gradient not fused: "
                         "the wgrad GEMM's input is computed after it";
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
      remark.changed();
    }
  }
};

struct TEFuseDBiasDActPass
    : public te::impl::TEFuseDBiasDActPassBase<TEFuseDBiasDActPass> {
  using Base::Base;
  void runOnOperation() override {
    RemarkEmitter remark(getOperation(), "te-fuse-dbias-dact", reportWork);
    SmallVector<BiasGradOp> candidates;
    getOperation()->walk([&](BiasGradOp op) { candidates.push_back(op); });
    for (BiasGradOp bgrad : candidates) {
      remark.candidate();
      auto dact = bgrad.getGrad().getDefiningOp<DActOp>();
      if (!dact)
        continue; // not the bias gradient of an activation's input
      if (dact.getActivation().isGated()) {
        remark(bgrad)
            << "te-fuse-dbias-dact: not fused: gated activation "
            << dact.getActivation().getActivationName()
            << " has no fused dbias+dact kernel";
        continue;
      }
      OpBuilder b(dact);
      auto fused = DBiasDActOp::create(
          b, dact.getLoc(), dact.getResult().getType(), bgrad.getType(),
          dact.getAmax() ? dact.getAmax().getType() : Type(), dact.getGrad(),
          dact.getInput(), dact.getActivation());
      bgrad.getResult().replaceAllUsesWith(fused.getBiasGrad());
      dact.getResult().replaceAllUsesWith(fused.getResult());
      if (Value amax = dact.getAmax())
        amax.replaceAllUsesWith(fused.getAmax());
      bgrad.erase();
      dact.erase();
      remark.changed();
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
                          op.getInput(), op.getActivation());
  } else if (auto op = dyn_cast<DActOp>(def)) {
    if (op.getAmax())
      return op.getAmax();
    fused = DActOp::create(b, op.getLoc(), op.getResult().getType(), amaxType,
                           op.getGrad(), op.getInput(), op.getActivation());
  } else if (auto op = dyn_cast<DBiasDActOp>(def)) {
    if (op.getAmax())
      return op.getAmax();
    fused = DBiasDActOp::create(
        b, op.getLoc(), op.getResult().getType(), op.getBiasGrad().getType(),
        amaxType, op.getGrad(), op.getInput(), op.getActivation());
  } else {
    return {};
  }
  def->replaceAllUsesWith(fused->getResults().drop_back());
  def->erase();
  return fused->getResults().back();
}

struct TEFuseQuantizeAmaxPass
    : public te::impl::TEFuseQuantizeAmaxPassBase<TEFuseQuantizeAmaxPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<QuantizeOp> candidates;
    getOperation()->walk([&](QuantizeOp op) {
      auto q = cast<QuantizedTensorType>(op.getResult().getType());
      if (isa<FP8CurrentRecipeAttr>(q.getRecipe()) && !op.getAmaxIn())
        candidates.push_back(op);
    });
    RemarkEmitter remark(getOperation(), "te-fuse-quantize-amax", reportWork);
    for (QuantizeOp quantize : candidates) {
      remark.candidate();
      Value x = quantize.getInput();
      Value amax = amaxOfProducer(x);
      if (!amax) {
        Operation *def = x.getDefiningOp();
        InFlightDiagnostic diag = remark(quantize)
                                  << "te-fuse-quantize-amax: amax not "
                                     "fused: the input is ";
        if (def)
          diag << "the result of " << def->getName()
               << ", which computes no amax (the quantization reads it "
                  "twice)";
        else
          diag << "an argument (the quantization reads it twice)";
        continue;
      }
      // (amaxOfProducer may have rebuilt the producer.)
      remark.changed();
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

/// Why the activation op `def` (whose main result `quantize` reads) cannot
/// cast its result itself; empty when it can.
std::string whyNotFusable(Operation *def, QuantizeOp quantize) {
  std::string why;
  llvm::raw_string_ostream os(why);
  for (Operation *user : def->getResult(0).getUsers())
    if (user != quantize.getOperation()) {
      os << "the high-precision result is also read by " << user->getName()
         << " (it must be stored)";
      return why;
    }
  // The producer's optional amax result comes last (te-fuse-quantize-amax).
  Value amax = def->getResults().back();
  if (def->getNumResults() > (isa<DBiasDActOp>(def) ? 2u : 1u) &&
      !amax.use_empty())
    os << "its amax result is used by "
       << (*amax.getUsers().begin())->getName();
  return why;
}

struct TEFuseActQuantizePass
    : public te::impl::TEFuseActQuantizePassBase<TEFuseActQuantizePass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<QuantizeOp> candidates;
    getOperation()->walk([&](QuantizeOp op) {
      auto q = cast<QuantizedTensorType>(op.getResult().getType());
      if (isa<FP8DelayedRecipeAttr>(q.getRecipe()) && op.getScales() &&
          op.getAmax())
        candidates.push_back(op);
    });
    RemarkEmitter remark(getOperation(), "te-fuse-act-quantize", reportWork);
    for (QuantizeOp quantize : candidates) {
      remark.candidate();
      Value x = quantize.getInput();
      Operation *def = x.getDefiningOp();
      if (!def || def->getResult(0) != x ||
          !isa<ActOp, DActOp, DBiasDActOp>(def))
        continue; // not an activation kernel's result
      if (quantize->getBlock() != def->getBlock()) {
        // Fusing would move the activation into the quantization's region
        // (a loop body, say), where it could run more often.
        remark(quantize) << "te-fuse-act-quantize: not fused with "
                         << def->getName()
                         << ": the quantization is in another block";
        continue;
      }
      std::string why = whyNotFusable(def, quantize);
      if (!why.empty()) {
        remark(quantize) << "te-fuse-act-quantize: not fused with "
                         << def->getName() << ": " << why;
        continue;
      }
      // The fused op goes where the producer was when the scales are
      // available there, else at the quantization (after both), where the
      // bias gradient of te.dbias_dact must not have been read yet.
      Operation *point =
          availableBefore(quantize.getScales(), def) ? def : quantize;
      auto dbias = dyn_cast<DBiasDActOp>(def);
      if (dbias && point == quantize.getOperation() &&
          llvm::any_of(dbias.getBiasGrad().getUsers(), [&](Operation *user) {
            Operation *u = quantize->getBlock()->findAncestorOpInBlock(*user);
            return !u || u->isBeforeInBlock(quantize);
          })) {
        remark(quantize)
            << "te-fuse-act-quantize: not fused with " << def->getName()
            << ": its bias gradient is read before the "
               "scales are computed";
        continue;
      }
      OpBuilder b(point);
      Type qType = quantize.getResult().getType();
      Type amaxType = quantize.getAmax().getType();
      Operation *fused;
      if (auto a = dyn_cast<ActOp>(def)) {
        fused = ActQuantizeOp::create(
            b, a.getLoc(), qType, amaxType, a.getInput(), quantize.getScales(),
            quantize.getSlotAttr(), a.getActivation());
      } else if (auto a = dyn_cast<DActOp>(def)) {
        fused = DActQuantizeOp::create(
            b, a.getLoc(), qType, amaxType, /*bias_grad=*/Type(), a.getGrad(),
            a.getInput(), quantize.getScales(), quantize.getSlotAttr(),
            a.getActivation());
      } else {
        auto f = DActQuantizeOp::create(
            b, dbias.getLoc(), qType, amaxType, dbias.getBiasGrad().getType(),
            dbias.getGrad(), dbias.getInput(), quantize.getScales(),
            quantize.getSlotAttr(), dbias.getActivation());
        dbias.getBiasGrad().replaceAllUsesWith(f.getBiasGrad());
        fused = f;
      }
      quantize.getResult().replaceAllUsesWith(fused->getResult(0));
      quantize.getAmax().replaceAllUsesWith(fused->getResult(1));
      quantize.erase();
      def->erase();
      remark.changed();
    }
  }
};

struct TEFuseNormQuantizePass
    : public te::impl::TEFuseNormQuantizePassBase<TEFuseNormQuantizePass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<QuantizeOp> candidates;
    getOperation()->walk([&](QuantizeOp op) {
      auto q = cast<QuantizedTensorType>(op.getResult().getType());
      RecipeAttrInterface recipe = q.getRecipe();
      if ((isa<FP8CurrentRecipeAttr>(recipe) && !op.getAmaxIn()) ||
          (isa<FP8DelayedRecipeAttr>(recipe) && op.getScales()))
        candidates.push_back(op);
    });
    RemarkEmitter remark(getOperation(), "te-fuse-norm-quantize", reportWork);
    for (QuantizeOp quantize : candidates) {
      remark.candidate();
      auto norm = quantize.getInput().getDefiningOp<NormFwdOp>();
      if (!norm || norm.getOutput() != quantize.getInput())
        continue; // not a normalization's output
      Operation *other = nullptr;
      for (Operation *user : norm.getOutput().getUsers())
        if (user != quantize.getOperation()) {
          other = user;
          break;
        }
      if (other) {
        remark(quantize)
            << "te-fuse-norm-quantize: not fused with te.norm_fwd: the "
               "high-precision output is also read by "
            << other->getName() << " (it must be stored)";
        continue;
      }
      // The fused op goes where the norm was when the scales (if any) are
      // available there, else at the quantization (after both), where the
      // statistics must not have been read yet.
      Value scales = quantize.getScales();
      Operation *point =
          !scales || availableBefore(scales, norm) ? norm : quantize;
      auto readBefore = [&](Value stat) {
        return stat && llvm::any_of(stat.getUsers(), [&](Operation *user) {
                 Operation *u =
                     quantize->getBlock()->findAncestorOpInBlock(*user);
                 return !u || u->isBeforeInBlock(quantize);
               });
      };
      if (point == quantize.getOperation() &&
          (readBefore(norm.getRsigma()) || readBefore(norm.getMu()))) {
        remark(quantize)
            << "te-fuse-norm-quantize: not fused with te.norm_fwd: its "
               "statistics are read before the scales are computed";
        continue;
      }
      OpBuilder b(point);
      auto fused = NormQuantizeOp::create(
          b, norm.getLoc(), quantize.getResult().getType(),
          norm.getRsigma().getType(), quantize.getAmax().getType(),
          norm.getMu() ? norm.getMu().getType() : Type(), norm.getInput(),
          norm.getGamma(), norm.getBeta(), scales, norm.getNormalizationAttr(),
          norm.getEpsAttr(), norm.getZeroCenteredGammaAttr(),
          quantize.getSlotAttr());
      quantize.getResult().replaceAllUsesWith(fused.getResult());
      quantize.getAmax().replaceAllUsesWith(fused.getAmax());
      norm.getRsigma().replaceAllUsesWith(fused.getRsigma());
      if (Value mu = norm.getMu())
        mu.replaceAllUsesWith(fused.getMu());
      quantize.erase();
      norm.erase();
      remark.changed();
    }
  }
};

} // namespace
