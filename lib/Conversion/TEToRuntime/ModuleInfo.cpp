//===- ModuleInfo.cpp - te_module_info(): what a library describes --*- C++ -*-===//
//
// The JSON description of every entry (signatures with shapes over the dim
// symbols, inner tensors of quantized buffers, dims, arena plan) and the
// function that returns it.
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"
#include "te/Conversion/ModuleInfo.h"
#include "te/Runtime/ModuleInfoDigest.h"

#include "mlir/Analysis/SliceAnalysis.h"

using namespace mlir;
using namespace mlir::te;

static constexpr StringLiteral kInfoGlobal = "te_module_info.json";
static constexpr StringLiteral kDigestFn = "te_module_info_digest";

std::string mlir::te::getModuleInfo(ModuleOp module) {
  if (auto global = module.lookupSymbol<LLVM::GlobalOp>(kInfoGlobal))
    if (auto str = dyn_cast_or_null<StringAttr>(global.getValueOrNull())) {
      std::string s = str.str();
      if (!s.empty() && s.back() == '\0')
        s.pop_back();
      return s;
    }
  return "";
}

LogicalResult mlir::te::setModuleInfo(ModuleOp module, StringRef json) {
  auto global = module.lookupSymbol<LLVM::GlobalOp>(kInfoGlobal);
  auto digestFn = module.lookupSymbol<LLVM::LLVMFuncOp>(kDigestFn);
  if (!global || !digestFn || digestFn.getBody().empty())
    return failure();
  auto digest = dyn_cast<LLVM::ConstantOp>(&digestFn.getBody().front().front());
  if (!digest)
    return failure();
  OpBuilder b(global);
  std::string text = json.str();
  text.push_back('\0');
  global.setValueAttr(b.getStringAttr(text));
  global.setGlobalType(LLVM::LLVMArrayType::get(b.getI8Type(), text.size()));
  digest.setValueAttr(
      b.getI64IntegerAttr(static_cast<int64_t>(
          te_module_info_digest_of(json.data(), json.size()))));
  return success();
}

namespace mlir::te::runtime_lowering {

// A te.amax_update's new history or scales, returned as a te.state result,
// may be written over the te.state argument of the same name that the
// update reads (the caller passes one buffer for both, and the recipe
// state needs no copy after the entry) when the entry cannot read the old
// state after writing the new one:
// - the result's buffer is written only with the update's value: no loan
//   of it to an intermediate (which would overwrite the state before the
//   update reads it), and the value is returned once;
// - every other reader of the argument, through views, is an op the update
//   depends on: it has finished before the update runs, on any stream
//   (te_rt_amax_update_fork and te-fork-branches keep data dependencies).
// The update kernels read a slot's history before they write it (in place
// is one of their tested modes). An argument also returned, or read by an
// op the update does not wait for, keeps its own buffer. Backward entries
// only: a forward's state stays functional (a checkpointed recompute runs
// the forward again on the state it saved).
void FunctionLowering::findStateInPlace() {
  if (!func->hasAttr("te.backward_of"))
    return;
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  llvm::DenseSet<unsigned> lent;
  for (const auto &[v, loan] : memory.lenderOf)
    lent.insert(loan.result);
  llvm::DenseMap<Value, unsigned> returnCount;
  for (Value v : ret.getOperands())
    ++returnCount[v];
  for (auto [r, v] : llvm::enumerate(ret.getOperands())) {
    auto update = v.getDefiningOp<AmaxUpdateOp>();
    if (!update || lent.contains(r) || returnCount[v] != 1)
      continue;
    Value read = v == update.getNewAmaxHistory() ? update.getAmaxHistory()
                 : v == update.getNewScales()    ? update.getScales()
                                                 : Value();
    auto arg = dyn_cast_or_null<BlockArgument>(read);
    if (!arg || arg.getOwner() != &func.getBody().front() ||
        arg.getType() != v.getType())
      continue;
    auto argState =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "te.state");
    auto resultState = func.getResultAttrOfType<StringAttr>(r, "te.state");
    if (!argState || argState != resultState)
      continue;
    SetVector<Operation *> before;
    BackwardSliceOptions options;
    options.omitBlockArguments = true;
    if (failed(getBackwardSlice(update.getOperation(), &before, options)))
      continue;
    bool safe = true;
    SmallVector<Value> reads = {arg};
    while (safe && !reads.empty()) {
      Value w = reads.pop_back_val();
      for (Operation *user : w.getUsers()) {
        if (user == update.getOperation())
          continue;
        bool view = false;
        for (Value res : user->getResults())
          if (memory.aliasOf.lookup(res) == w) {
            reads.push_back(res);
            view = true;
          }
        if (!view && !before.contains(user))
          safe = false;
      }
    }
    if (safe)
      stateInPlace.push_back({unsigned(r), arg.getArgNumber()});
  }
}

void FunctionLowering::buildInfo(func::ReturnOp ret) {
  std::string name = func.getSymName().str();
  // The entry's description.
  auto describe = [&](Value v, Type type, DictionaryAttr attrs) {
    llvm::json::Object o;
    if (auto q = dyn_cast<QuantizedTensorType>(type)) {
      // One buffer; inner tensors at 256-byte aligned offsets, in this
      // order (see the layout at the top of the file).
      // Their shapes are expressions of the entry's dim symbols (TE's
      // layout rules on the symbolic dims), e.g. `roundup(d0, 4)`.
      llvm::json::Array shape = shapeJSON(v, type), inner;
      SmallVector<SymDim> dims;
      for (Dim d : shapes.dims(v))
        dims.push_back(symDimOf(d));
      for (const InnerTensorOf<SymDim> &t :
           inBufferOrder(getInnerTensorsOf<SymDim>(q, dims))) {
        llvm::json::Array partShape;
        for (const SymDim &d : t.shape)
          partShape.push_back(d.toJSON());
        inner.push_back(llvm::json::Object{{"name", t.name},
                                           {"dtype", t.dtype},
                                           {"shape", std::move(partShape)}});
      }
      std::string typeStr;
      llvm::raw_string_ostream(typeStr) << type;
      o = llvm::json::Object{{"dtype", "qtensor"},
                             {"type", typeStr},
                             {"shape", std::move(shape)},
                             {"inner", std::move(inner)},
                             {"alignment", kAlignment}};
    } else {
      auto t = cast<RankedTensorType>(type);
      o = llvm::json::Object{{"dtype", dtypeName(t.getElementType())},
                             {"shape", shapeJSON(v, type)}};
    }
    if (attrs) {
      for (NamedAttribute a : attrs) {
        if (auto s = dyn_cast<StringAttr>(a.getValue()))
          o[a.getName().strref()] = s.getValue();
        else if (isa<UnitAttr>(a.getValue()))
          o[a.getName().strref()] = true;
      }
    }
    // A tensor-parallel entry's recipe state is the same on every rank
    // (its amaxes are reduced over the group before the update).
    if (func->hasAttr("te.tp") && o.getString("te.state") &&
        !o.getString("te.tp_shard"))
      o["te.tp_shard"] = "replicated";
    return o;
  };
  llvm::json::Array args, results, dims;
  for (BlockArgument arg : func.getArguments()) {
    args.push_back(describe(arg, arg.getType(), func.getArgAttrDict(
                                                    arg.getArgNumber())));
    // A buffer the caller may donate (te_module_run_donated): the plan
    // places intermediates in it after its last use.
    if (llvm::is_contained(memory.donors, arg))
      args.back().getAsObject()->try_emplace("te.donatable", true);
  }
  for (auto [r, v] : llvm::enumerate(ret.getOperands()))
    results.push_back(describe(v, v.getType(), func.getResultAttrDict(r)));
  for (int var : shapes.dimClasses) {
    // Where the caller finds the dim: the first argument dim in its class.
    for (BlockArgument arg : func.getArguments()) {
      SmallVector<Dim> d = shapes.dims(arg);
      auto it = llvm::find_if(
          d, [&](const Dim &x) { return x.isVar(var); });
      if (it != d.end()) {
        dims.push_back(llvm::json::Object{{"arg", arg.getArgNumber()},
                                          {"dim", it - d.begin()}});
        break;
      }
    }
  }
  info = llvm::json::Object{
      {"name", name},
      {"symbol", "te_entry_" + name},
      {"arena_symbol", "te_arena_bytes_" + name},
      {"args", std::move(args)},
      {"results", std::move(results)},
      {"dims", std::move(dims)},
      {"arena_slots", int64_t(memory.slots.size())},
      {"arena_bytes", memory.arenaBytes ? llvm::json::Value(*memory.arenaBytes)
                                 : llvm::json::Value("dynamic")}};
  if (!memory.donors.empty()) {
    info["arena_donated_symbol"] = "te_arena_bytes_donated_" + name;
    info["arena_bytes_donated"] =
        memory.donatedArenaBytes ? llvm::json::Value(*memory.donatedArenaBytes)
                                 : llvm::json::Value("dynamic");
  }
  // The results whose buffers the entry may write beyond their tensors'
  // bytes: those copied out whole at its end, and those lent to an
  // intermediate that reaches past the buffer's first part (a loan starts
  // at the buffer's start; a 4-byte amax lent a per-tensor result stays in
  // its scale_inv). The module runner zeroes the padding of the other
  // quantized results before the entry, beside its work, and of these
  // after it (docs/runtime.md).
  auto firstPartBytes = [](Value result) -> std::optional<int64_t> {
    auto q = dyn_cast<QuantizedTensorType>(result.getType());
    SmallVector<InnerTensor> parts;
    if (q)
      parts = bufferParts(q);
    if (parts.empty())
      return std::nullopt;
    int64_t n = parts.front().elementBytes;
    for (const SymDim &d : parts.front().shape) {
      if (!d.isStatic())
        return std::nullopt;
      n *= d.getValue();
    }
    return n;
  };
  llvm::DenseSet<unsigned> lendsPadding;
  for (const auto &[v, loan] : memory.lenderOf) {
    std::optional<int64_t> first = firstPartBytes(ret.getOperand(loan.result)),
                           bytes = staticBytes(v);
    if (loan.conditional || !first || !bytes || *bytes > *first)
      lendsPadding.insert(loan.result);
  }
  llvm::json::Array paddingWritten;
  for (auto [r, v] : llvm::enumerate(ret.getOperands()))
    if (memory.copiedOut(r, v) || lendsPadding.contains(r))
      paddingWritten.push_back(int64_t(r));
  info["padding_written"] = std::move(paddingWritten);
  // Recipe-state results the caller may write over their arguments
  // (findStateInPlace): [result, argument] pairs; absent when none.
  llvm::json::Array stateInPlaceJSON;
  for (auto [r, a] : stateInPlace)
    stateInPlaceJSON.push_back(llvm::json::Array{int64_t(r), int64_t(a)});
  if (!stateInPlace.empty())
    info["state_in_place"] = std::move(stateInPlaceJSON);
  // The recipe's alignment rules the entry checks on entry (the fake
  // tensors of the PyTorch ops check the same as torch._check).
  llvm::json::Array checks;
  for (const AlignmentCheck &c : alignmentChecks())
    checks.push_back(llvm::json::Object{{"expr", symDimOf(c.dim).str()},
                                        {"multiple", c.multiple},
                                        {"message", c.what}});
  info["checks"] = std::move(checks);
  for (NamedAttribute a : func->getAttrs()) {
    if (!a.getName().strref().starts_with("te."))
      continue;
    if (auto ref = dyn_cast<FlatSymbolRefAttr>(a.getValue()))
      info[a.getName().strref()] = ref.getValue();
    else if (auto str = dyn_cast<StringAttr>(a.getValue()))
      info[a.getName().strref()] = str.getValue(); // te.tp, ...
  }
}

void emitModuleInfo(ModuleOp module, OpBuilder &b, llvm::json::Array entries) {
  MLIRContext *ctx = module.getContext();
  // te_module_info(): the JSON description of every entry.
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::json::Value(llvm::json::Object{
      {"format", "te-mlir module 1"}, {"entries", std::move(entries)}});
  json.push_back('\0');
  b.setInsertionPointToEnd(module.getBody());
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), json.size());
  auto global = LLVM::GlobalOp::create(
      b, module.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::Internal,
      kInfoGlobal, b.getStringAttr(json));
  auto infoFn = LLVM::LLVMFuncOp::create(
      b, module.getLoc(), "te_module_info",
      LLVM::LLVMFunctionType::get(LLVM::LLVMPointerType::get(ctx), {}));
  Block *body = infoFn.addEntryBlock(b);
  b.setInsertionPointToStart(body);
  LLVM::ReturnOp::create(b, module.getLoc(),
                         LLVM::AddressOfOp::create(b, module.getLoc(), global)
                             .getResult());

  // te_module_info_digest(): the text's digest (set by setModuleInfo).
  b.setInsertionPointToEnd(module.getBody());
  auto digestFn = LLVM::LLVMFuncOp::create(
      b, module.getLoc(), kDigestFn,
      LLVM::LLVMFunctionType::get(b.getI64Type(), {}));
  b.setInsertionPointToStart(digestFn.addEntryBlock(b));
  LLVM::ReturnOp::create(b, module.getLoc(),
                         LLVM::ConstantOp::create(b, module.getLoc(),
                                                  b.getI64Type(),
                                                  b.getI64IntegerAttr(0))
                             .getResult());
  json.pop_back(); // (the NUL: setModuleInfo adds it back)
  (void)setModuleInfo(module, json);
}

} // namespace mlir::te::runtime_lowering
