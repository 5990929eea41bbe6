//===- WeightCache.cpp - te-weight-cache: reuse quantized weights -*- C++ -*-===//
//
// TransformerEngine quantizes a weight once per step unless the caller says
// it has not changed (is_first_microbatch false: the cached FP8 weight is
// reused). Ahead of time the two cases are two entries: @f_fwd quantizes
// and returns the quantized weights in its saved bundle; @f_fwd_cached,
// made here, takes them as arguments instead.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEWEIGHTCACHEPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

/// The saved-bundle name under which `f` returns `v`, or "" if it does not.
std::string savedName(func::FuncOp f, Value v) {
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  for (OpOperand &operand : ret->getOpOperands())
    if (operand.get() == v)
      if (auto name = f.getResultAttrOfType<StringAttr>(
              operand.getOperandNumber(), "te.saved"))
        return name.str();
  return "";
}

struct TEWeightCachePass
    : public te::impl::TEWeightCachePassBase<TEWeightCachePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> forwards;
    for (auto f : module.getOps<func::FuncOp>())
      if (f->hasAttr("te.forward_of") && !f.isExternal())
        forwards.push_back(f);
    for (func::FuncOp fwd : forwards) {
      // Weight quantizations of arguments, with their saved names.
      SmallVector<std::pair<unsigned, std::string>> weights;
      unsigned index = 0;
      bool any = false;
      fwd.walk([&](QuantizeOp q) {
        if (q.getWeight() && isa<BlockArgument>(q.getInput())) {
          std::string name = savedName(fwd, q.getResult());
          weights.push_back(
              {index, name.empty() ? "weight" + std::to_string(index) : name});
          any = true;
        }
        ++index;
      });
      if (!any)
        continue;
      std::string name = (fwd.getSymName() + "_cached").str();
      if (module.lookupSymbol(name)) {
        fwd.emitError() << "te-weight-cache: @" << name << " already exists";
        return signalPassFailure();
      }
      OpBuilder b(fwd);
      b.setInsertionPointAfter(fwd);
      auto cached = cast<func::FuncOp>(b.clone(*fwd));
      cached.setSymName(name);
      cached->setAttr("te.cached_forward_of",
                      FlatSymbolRefAttr::get(fwd.getSymNameAttr()));
      cached->removeAttr("te.forward_of");
      SmallVector<QuantizeOp> quantizes;
      cached.walk([&](QuantizeOp q) { quantizes.push_back(q); });
      MLIRContext *ctx = &getContext();
      for (auto &[i, saved] : weights) {
        QuantizeOp q = quantizes[i];
        unsigned n = cached.getNumArguments();
        (void)cached.insertArgument(
            n, q.getResult().getType(),
            DictionaryAttr::get(
                ctx, {NamedAttribute(StringAttr::get(ctx, "te.cached_weight"),
                                     StringAttr::get(ctx, saved))}),
            q.getLoc());
        q.getResult().replaceAllUsesWith(cached.getArgument(n));
        // No quantization ran: the weight's amax slot (per-tensor recipes)
        // records 0.
        if (Value amax = q.getAmax()) {
          OpBuilder qb(q);
          Value zero = arith::ConstantOp::create(
              qb, q.getLoc(),
              DenseElementsAttr::get(cast<ShapedType>(amax.getType()), 0.0f));
          amax.replaceAllUsesWith(zero);
        }
        q.erase();
      }
    }
  }
};

} // namespace
