//===- SplitWgrad.cpp - te-split-wgrad: a backward's deferred weight grads ===//
//
// TransformerEngine's delay_wgrad_compute: the backward computes the input
// gradients now and the weight gradients later (backward_dw(), e.g. to
// overlap them with a pipeline stage's communication). Ahead of time that is
// two entries: @f_bwd keeps everything the other results need and returns
// the values the weight gradients still need (`te.wgrad_stash`); the new
// @f_bwd_wgrad (`te.wgrad_of = @f_bwd`) takes them, with the backward
// arguments only the weight gradients read, and computes those gradients.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::te {
#define GEN_PASS_DEF_TESPLITWGRADPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

constexpr llvm::StringLiteral kDelay = "te.delay_wgrad";
constexpr llvm::StringLiteral kStash = "te.wgrad_stash";

/// Whose gradient backward result `r` is: its te.grad_of or te.main_grad_of
/// (the key and its "input:N" / "output:N" value), or a null value.
std::pair<StringRef, StringAttr> gradientRole(func::FuncOp bwd, unsigned r) {
  for (StringRef key : {"te.grad_of", "te.main_grad_of"})
    if (auto s = bwd.getResultAttrOfType<StringAttr>(r, key))
      return {key, s};
  return {"", nullptr};
}

/// N of an "input:N" role value, or -1.
int64_t inputIndex(StringAttr s) {
  int64_t n = -1;
  if (!s || !s.getValue().starts_with("input:") ||
      s.getValue().drop_front(6).getAsInteger(10, n))
    return -1;
  return n;
}

/// The te.wgrad_stash attribute of stash `k` (a backward result and the
/// wgrad entry's argument alike).
DictionaryAttr stashAttrs(Builder &b, size_t k) {
  return b.getDictionaryAttr(
      b.getNamedAttr(kStash, b.getStringAttr("stash" + std::to_string(k))));
}

/// Whether the ops of `moved` read only the columnwise copy of the quantized
/// value `v` (each of them a GEMM whose layout reads that copy of it): then
/// the stash keeps that copy alone (te.drop_usage, a view of its buffer's
/// prefix), as TE's backward keeps the output gradient's columnwise data
/// alone for a delayed wgrad, and the rowwise copy dies with the dgrad.
bool movedReadColumnwiseOnly(Value v, Block &body,
                             const llvm::DenseSet<Operation *> &moved) {
  auto qt = dyn_cast<QuantizedTensorType>(v.getType());
  if (!qt || qt.getUsage() != QuantUsage::Both)
    return false;
  bool any = false;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    Operation *top = body.findAncestorOpInBlock(*user);
    if (!top || !moved.contains(top))
      continue;
    auto gemm = dyn_cast<GemmOp>(user);
    if (!gemm)
      return false;
    bool row = &use == &gemm.getLhsMutable()
                   ? gemm.getLayout() != GemmLayout::NT
                   : gemm.getLayout() == GemmLayout::TN;
    if (row)
      return false;
    any = true;
  }
  return any;
}

/// Every op of `body` that `roots` depend on (operands of nested regions
/// included), added to `slice`.
void backwardSlice(Block &body, ArrayRef<Value> roots,
                   llvm::DenseSet<Operation *> &slice) {
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !slice.insert(def).second)
      continue;
    def->walk([&](Operation *op) {
      for (Value v : op->getOperands())
        work.push_back(v);
    });
  }
}

struct TESplitWgradPass
    : public te::impl::TESplitWgradPassBase<TESplitWgradPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> backwards;
    for (auto f : module.getOps<func::FuncOp>())
      if (f->hasAttr("te.backward_of") && !f.isExternal())
        backwards.push_back(f);
    for (func::FuncOp bwd : backwards)
      if (failed(split(module, bwd)))
        return signalPassFailure();
    // An attribute on a function no backward was made of is a mistake.
    for (auto f : module.getOps<func::FuncOp>())
      for (unsigned i = 0; i < f.getNumArguments(); ++i)
        if (f.getArgAttr(i, kDelay) &&
            !llvm::any_of(backwards,
                          [&](func::FuncOp b) {
                            auto of = b->getAttrOfType<FlatSymbolRefAttr>(
                                "te.backward_of");
                            return of && of.getValue() == f.getSymName();
                          }) &&
            !f->hasAttr("te.forward_of") &&
            !f->hasAttr("te.cached_forward_of")) {
          f.emitError() << "te-split-wgrad: argument " << i << " of @"
                        << f.getSymName()
                        << " is te.delay_wgrad, but no backward was generated "
                           "for @"
                        << f.getSymName() << " (te-compile --train)";
          return signalPassFailure();
        }
  }

  LogicalResult split(ModuleOp module, func::FuncOp bwd) {
    auto of = bwd->getAttrOfType<FlatSymbolRefAttr>("te.backward_of");
    auto fwd = module.lookupSymbol<func::FuncOp>(of.getValue());
    if (!fwd)
      return success();
    // The forward arguments whose gradients wait.
    llvm::SmallDenseSet<int64_t> delayed;
    for (unsigned i = 0; i < fwd.getNumArguments(); ++i) {
      Attribute a = fwd.getArgAttr(i, kDelay);
      if (!a)
        continue;
      auto fail = [&](const Twine &why) {
        return fwd.emitError()
               << "te-split-wgrad: argument " << i << " of @"
               << fwd.getSymName() << " is te.delay_wgrad, " << why;
      };
      if (!isa<UnitAttr>(a))
        return fail("which takes no value (a unit attribute)");
      if (fwd.getArgAttr(i, "te.frozen"))
        return fail("but also te.frozen: it has no gradient to delay");
      if (fwd.getArgAttr(i, "te.tp_shard"))
        return fail("but also te.tp_shard: deferred weight gradients of a "
                    "tensor-parallel step are not supported");
      auto t = dyn_cast<RankedTensorType>(fwd.getArgument(i).getType());
      if (!t || !isa<FloatType>(t.getElementType()))
        return fail("but is not a floating-point tensor");
      delayed.insert(i);
    }
    if (delayed.empty())
      return success();

    Block &body = bwd.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<unsigned> movedResults, keptResults;
    llvm::SmallDenseSet<int64_t> found;
    for (unsigned r = 0; r < ret.getNumOperands(); ++r) {
      int64_t n = inputIndex(gradientRole(bwd, r).second);
      if (n >= 0 && delayed.contains(n)) {
        movedResults.push_back(r);
        found.insert(n);
      } else {
        keptResults.push_back(r);
      }
    }
    for (int64_t n : delayed)
      if (!found.contains(n))
        return bwd.emitError()
               << "te-split-wgrad: argument " << n << " of @"
               << fwd.getSymName() << " is te.delay_wgrad, but @"
               << bwd.getSymName() << " returns no gradient for it";

    // What the other results need stays, with every op that returns nothing
    // (it acts through its operands).
    llvm::DenseSet<Operation *> keep, moved;
    SmallVector<Value> keptRoots, movedRoots;
    for (unsigned r : keptResults)
      keptRoots.push_back(ret.getOperand(r));
    for (Operation &op : body.without_terminator())
      if (op.getNumResults() == 0) {
        keep.insert(&op);
        op.walk([&](Operation *n) {
          llvm::append_range(keptRoots, n->getOperands());
        });
      }
    backwardSlice(body, keptRoots, keep);
    // A gradient that an op of the others computes too (FP8's bias gradient,
    // a by-product of the output gradient's cast) is ready with them: it
    // stays, and the caller holds it until it asks for the weight gradients.
    SmallVector<unsigned> deferred;
    for (unsigned r : movedResults) {
      Operation *def = ret.getOperand(r).getDefiningOp();
      if (def && !keep.contains(def)) {
        deferred.push_back(r);
        continue;
      }
      keptResults.push_back(r);
      auto [key, of] = gradientRole(bwd, r);
      emitRemark(ret.getOperand(r).getLoc())
          << "te-split-wgrad: the gradient (" << key << " " << of.getValue()
          << ") stays in @" << bwd.getSymName() << ": "
          << (def ? "'" + def->getName().getStringRef().str() +
                        "' computes it with a gradient that does not wait"
                  : std::string("it is an argument"));
    }
    llvm::sort(keptResults);
    movedResults = std::move(deferred);
    if (movedResults.empty())
      return success();
    for (unsigned r : movedResults)
      movedRoots.push_back(ret.getOperand(r));
    llvm::DenseSet<Operation *> movedSlice;
    backwardSlice(body, movedRoots, movedSlice);
    for (Operation *op : movedSlice)
      if (!keep.contains(op))
        moved.insert(op);

    std::string name = (bwd.getSymName() + "_wgrad").str();
    if (module.lookupSymbol(name))
      return bwd.emitError()
             << "te-split-wgrad: @" << name << " already exists";

    // The boundary, in order of first use: backward arguments (taken again),
    // constants (cloned) and values of the ops that stay (stashed).
    llvm::SetVector<Value> inputs;
    llvm::SetVector<Operation *> constants;
    SmallVector<Operation *> movedOps;
    for (Operation &op : body.without_terminator()) {
      if (!moved.contains(&op))
        continue;
      movedOps.push_back(&op);
      op.walk([&](Operation *nested) {
        for (Value v : nested->getOperands()) {
          Operation *def = v.getDefiningOp();
          if (def && (moved.contains(def) || def->getBlock() != &body))
            continue;
          if (def && def->hasTrait<OpTrait::ConstantLike>())
            constants.insert(def);
          else
            inputs.insert(v);
        }
      });
    }

    MLIRContext *ctx = &getContext();
    OpBuilder b(bwd);
    b.setInsertionPointAfter(bwd);
    SmallVector<Type> argTypes, resultTypes;
    SmallVector<DictionaryAttr> argAttrs, resultAttrs;
    SmallVector<Value> stash;
    for (Value v : inputs) {
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        argTypes.push_back(v.getType());
        argAttrs.push_back(bwd.getArgAttrDict(arg.getArgNumber()));
        continue;
      }
      Value kept = v;
      if (movedReadColumnwiseOnly(v, body, moved)) {
        OpBuilder at(v.getContext());
        at.setInsertionPointAfterValue(v);
        auto qt = cast<QuantizedTensorType>(v.getType());
        kept = DropUsageOp::create(at, v.getLoc(),
                                   qt.withUsage(QuantUsage::Columnwise), v)
                   .getResult();
      }
      argTypes.push_back(kept.getType());
      argAttrs.push_back(stashAttrs(b, stash.size()));
      stash.push_back(kept);
    }
    for (unsigned r : movedResults) {
      resultTypes.push_back(ret.getOperand(r).getType());
      resultAttrs.push_back(bwd.getResultAttrDict(r));
    }
    auto wgrad = func::FuncOp::create(b, bwd.getLoc(), name,
                                      b.getFunctionType(argTypes, resultTypes));
    for (NamedAttribute a : bwd->getDiscardableAttrs())
      if (a.getName() != "te.backward_of")
        wgrad->setAttr(a.getName(), a.getValue());
    wgrad->setAttr("te.wgrad_of", FlatSymbolRefAttr::get(bwd.getSymNameAttr()));
    for (auto [i, d] : llvm::enumerate(argAttrs))
      if (d)
        wgrad.setArgAttrs(i, d);
    for (auto [i, d] : llvm::enumerate(resultAttrs))
      if (d)
        wgrad.setResultAttrs(i, d);
    Block *entry = wgrad.addEntryBlock();
    IRMapping map;
    for (auto [v, arg] : llvm::zip(inputs, entry->getArguments()))
      map.map(v, arg);
    OpBuilder wb = OpBuilder::atBlockEnd(entry);
    for (Operation *c : constants)
      wb.clone(*c, map);
    for (Operation *op : movedOps)
      wb.clone(*op, map);
    SmallVector<Value> results;
    for (unsigned r : movedResults)
      results.push_back(map.lookup(ret.getOperand(r)));
    func::ReturnOp::create(wb, bwd.getLoc(), results);

    // The backward: the results that do not wait, then the stash.
    llvm::BitVector usedBefore(bwd.getNumArguments());
    for (BlockArgument arg : bwd.getArguments())
      usedBefore[arg.getArgNumber()] = !arg.use_empty();
    SmallVector<Value> operands;
    SmallVector<Type> types;
    SmallVector<Attribute> attrs;
    for (unsigned r : keptResults) {
      operands.push_back(ret.getOperand(r));
      types.push_back(ret.getOperand(r).getType());
      DictionaryAttr d = bwd.getResultAttrDict(r);
      attrs.push_back(d ? d : b.getDictionaryAttr({}));
    }
    for (auto [k, v] : llvm::enumerate(stash)) {
      operands.push_back(v);
      types.push_back(v.getType());
      attrs.push_back(stashAttrs(b, k));
    }
    ret->setOperands(operands);
    for (Operation *op : llvm::reverse(movedOps))
      op->erase();
    // Arguments only the weight gradients read now belong to @f_bwd_wgrad.
    llvm::BitVector drop(bwd.getNumArguments());
    for (BlockArgument arg : bwd.getArguments())
      drop[arg.getArgNumber()] =
          usedBefore[arg.getArgNumber()] && arg.use_empty();
    bwd.setFunctionType(FunctionType::get(ctx, bwd.getArgumentTypes(), types));
    bwd.setAllResultAttrs(attrs);
    if (failed(bwd.eraseArguments(drop)))
      return bwd.emitError() << "te-split-wgrad: cannot drop the arguments "
                                "the backward no longer reads";
    return success();
  }
};

} // namespace
