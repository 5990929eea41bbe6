//===- Describe.cpp - te-describe: fake-tensor report -----------*- C++ -*-===//
//
// Implements --te-describe: one JSON record per te module op, from
// ModuleOpInterface::describe.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEDESCRIBEPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

llvm::json::Array toJSON(ArrayRef<TensorDesc> tensors) {
  llvm::json::Array a;
  for (const TensorDesc &t : tensors)
    a.push_back(t.toJSON());
  return a;
}

llvm::json::Array gradsToJSON(ArrayRef<GradDesc> grads) {
  llvm::json::Array a;
  for (const GradDesc &g : grads) {
    llvm::json::Object o = g.tensor.toJSON();
    o["of"] = g.of;
    o["optional"] = g.optional;
    a.push_back(std::move(o));
  }
  return a;
}

/// A tensor-parallel op's layout and the collectives te-decompose places
/// for it (the rank's bytes in, the bytes out), in program order.
llvm::json::Value tensorParallelJSON(Operation *op,
                                     const DescribeOptions &options) {
  auto tp = op->getAttrOfType<TensorParallelAttr>("tp");
  if (!tp)
    return nullptr;
  auto input = cast<RankedTensorType>(op->getOperand(0).getType());
  int64_t t = tp.getSize();
  bool sp = tp.getSequenceParallel();
  int64_t elem = input.getElementType().getIntOrFloatBitWidth() / 8;
  // The rank's rows and the group's (gathered under sequence parallelism).
  SymDim rows(1);
  for (unsigned i = 0, e = input.getRank() - 1; i < e; ++i)
    rows = rows * SymDim::dimOf(input, i);
  SymDim all = sp ? rows * SymDim(t) : rows;
  SymDim hidden(input.getShape().back() * elem);
  llvm::json::Array collectives;
  auto add = [&](StringRef pass, StringRef kind, StringRef of, SymDim in,
                 SymDim out) {
    collectives.push_back(llvm::json::Object{{"pass", pass},
                                             {"collective", kind},
                                             {"of", of},
                                             {"bytes_in", in.toJSON()},
                                             {"bytes_out", out.toJSON()}});
  };
  bool mlp = isa<LayerNormMLPOp>(op);
  if (sp)
    add("forward", "all_gather", "ln_out", rows * hidden, all * hidden);
  if (mlp)
    add("forward", sp ? "reduce_scatter" : "all_reduce", "fc2_output",
        all * hidden, (sp ? rows : all) * hidden);
  if (options.training) {
    if (mlp && sp)
      add("backward", "all_gather", "grad_output", rows * hidden,
          all * hidden);
    if (sp)
      add("backward", "all_gather", "ln_out", rows * hidden, all * hidden);
    add("backward", sp ? "reduce_scatter" : "all_reduce",
        mlp ? "fc1_dgrad" : "dgrad", all * hidden, (sp ? rows : all) * hidden);
    if (tp.getReduceParamGrads()) {
      add("backward", "all_reduce", "grad_ln_weight", hidden, hidden);
      bool lnBias = mlp ? bool(cast<LayerNormMLPOp>(op).getLnBias())
                        : bool(cast<LayerNormLinearOp>(op).getLnBias());
      if (lnBias)
        add("backward", "all_reduce", "grad_ln_bias", hidden, hidden);
      if (mlp && cast<LayerNormMLPOp>(op).getFc2Bias())
        add("backward", "all_reduce", "grad_fc2_bias", hidden, hidden);
    }
  }
  return llvm::json::Object{{"size", t},
                            {"sequence_parallel", sp},
                            {"reduce_param_grads", tp.getReduceParamGrads()},
                            {"collectives", std::move(collectives)}};
}

llvm::json::Object recordFor(Operation *op, const ModuleDescription &d,
                             const DescribeOptions &options) {
  std::string loc;
  llvm::raw_string_ostream os(loc);
  op->getLoc().print(os);

  llvm::json::Array quantized;
  for (auto &[role, t] : d.quantized) {
    llvm::json::Object o = t.toJSON();
    o["role"] = role;
    quantized.push_back(std::move(o));
  }
  llvm::json::Array saved;
  for (const SavedDesc &s : d.saved) {
    llvm::json::Object o = s.tensor.toJSON();
    o["aliases"] = s.alias.toJSON();
    saved.push_back(std::move(o));
  }
  llvm::json::Array state;
  for (const StateDesc &s : d.state)
    state.push_back(s.tensor.toJSON());
  llvm::json::Array checks;
  for (const std::string &c : d.runtimeChecks)
    checks.push_back(c);

  llvm::json::Object record{
      {"op", op->getName().getStringRef()},
      {"loc", loc},
      {"arch", stringifyTargetArch(options.arch)},
      {"mode", options.training ? "training" : "inference"},
      {"recipe", d.recipe},
      {"effective_recipe", d.effectiveRecipe},
      {"fallback", d.fallback.empty() ? llvm::json::Value(nullptr)
                                      : llvm::json::Value(d.fallback)},
      {"runtime_checks", std::move(checks)},
      {"outputs", toJSON(d.outputs)},
      {"quantized", std::move(quantized)},
      {"saved", std::move(saved)},
      {"saved_bytes", d.savedBytes().toJSON()},
      {"grads", llvm::json::Object{{"in", gradsToJSON(d.gradsIn)},
                                   {"out", gradsToJSON(d.gradsOut)}}},
      {"state", std::move(state)},
      {"workspace_bytes", d.workspaceBytes.toJSON()},
  };
  // Only ops whose backward makes a copy of a saved tensor say so.
  if (!d.backwardWorkspaceBytes.isStatic() ||
      d.backwardWorkspaceBytes.getValue() != 0)
    record["backward_workspace_bytes"] = d.backwardWorkspaceBytes.toJSON();
  // Only tensor-parallel ops say "tp" (older readers see the same keys).
  if (op->hasAttr("tp"))
    record["tp"] = tensorParallelJSON(op, options);
  return record;
}

/// The saved bundle of a function made by te-generate-backward, read from
/// @f_bwd's signature: entries in order with their aliases, the bytes saved
/// and the bytes that aliasing spared, and the gradients in and out.
llvm::json::Object bundleRecordFor(func::FuncOp bwd) {
  llvm::json::Array bundle, gradsIn, gradsOut;
  SymDim savedBytes(0), aliasedBytes(0);
  for (unsigned i = 0, e = bwd.getNumArguments(); i < e; ++i) {
    Type type = bwd.getArgumentTypes()[i];
    if (auto name = bwd.getArgAttrOfType<StringAttr>(i, "te.saved")) {
      TensorDesc t = TensorDesc::fromType(name.getValue(), type);
      llvm::json::Object o = t.toJSON();
      auto alias = bwd.getArgAttrOfType<StringAttr>(i, "te.alias");
      o["aliases"] = alias ? llvm::json::Value(alias.getValue())
                           : llvm::json::Value(nullptr);
      (alias ? aliasedBytes : savedBytes) =
          (alias ? aliasedBytes : savedBytes) + t.bytes();
      bundle.push_back(std::move(o));
    } else if (auto of = bwd.getArgAttrOfType<StringAttr>(i, "te.grad_of")) {
      llvm::json::Object o = TensorDesc::fromType("grad", type).toJSON();
      o["of"] = of.getValue();
      o["optional"] = bool(bwd.getArgAttr(i, "te.optional_grad"));
      gradsIn.push_back(std::move(o));
    }
  }
  for (unsigned i = 0, e = bwd.getNumResults(); i < e; ++i) {
    llvm::json::Object o =
        TensorDesc::fromType("grad", bwd.getResultTypes()[i]).toJSON();
    if (auto of = bwd.getResultAttrOfType<StringAttr>(i, "te.grad_of"))
      o["of"] = of.getValue();
    gradsOut.push_back(std::move(o));
  }
  auto of = bwd->getAttrOfType<FlatSymbolRefAttr>("te.backward_of");
  return llvm::json::Object{
      {"function", of.getValue()},
      {"forward", (of.getValue() + "_fwd").str()},
      {"backward", bwd.getSymName()},
      {"bundle", std::move(bundle)},
      {"bundle_bytes", savedBytes.toJSON()},
      {"aliased_bytes", aliasedBytes.toJSON()},
      {"grads", llvm::json::Object{{"in", std::move(gradsIn)},
                                   {"out", std::move(gradsOut)}}},
  };
}

struct TEDescribePass
    : public mlir::te::impl::TEDescribePassBase<TEDescribePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    DescribeOptions options;
    if (!arch.isValid()) {
      module.emitError() << "te-describe: unknown arch '" << arch.spelling()
                         << "'; expected hopper or blackwell";
      return signalPassFailure();
    }
    options.arch = *arch;
    if (!mode.isValid()) {
      module.emitError() << "te-describe: unknown mode '" << mode.spelling()
                         << "'; expected training or inference";
      return signalPassFailure();
    }
    options.training = mode == DescribeMode::Training;

    llvm::json::Array records;
    module.walk([&](ModuleOpInterface op) {
      ModuleDescription d = op.describe(options);
      if (!d.fallback.empty())
        op->emitRemark() << d.fallback;
      records.push_back(recordFor(op, d, options));
    });
    for (auto f : module.getOps<func::FuncOp>())
      if (f->getAttrOfType<FlatSymbolRefAttr>("te.backward_of"))
        records.push_back(bundleRecordFor(f));

    std::string error;
    auto file = openOutputFile(out, &error);
    if (!file) {
      module.emitError() << "te-describe: cannot open '" << out
                         << "': " << error;
      return signalPassFailure();
    }
    // One record per line (compact, FileCheck-friendly), or indented.
    llvm::raw_ostream &os = file->os();
    if (pretty) {
      os << llvm::formatv("{0:2}", llvm::json::Value(std::move(records)))
         << "\n";
    } else {
      os << "[\n";
      for (auto [i, record] : llvm::enumerate(records))
        os << "  " << record << (i + 1 < records.size() ? ",\n" : "\n");
      os << "]\n";
    }
    file->keep();
    markAllAnalysesPreserved();
  }
};

} // namespace
