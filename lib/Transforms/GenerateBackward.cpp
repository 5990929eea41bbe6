//===- GenerateBackward.cpp - te-generate-backward --------------*- C++ -*-===//
//
// For each public function @f with te module ops, emits
//   @f_fwd(args) -> (results..., saved bundle...)
//   @f_bwd(saved bundle..., one gradient per float result)
//       -> (one gradient per float argument)
// Module ops describe what they save (ModuleOpInterface::describe); saved
// values that are function arguments or results are aliases (the caller
// passes its own copy to @f_bwd), values several ops need are saved once,
// and checkpointed MLPs save only their inputs and recompute the rest in a
// te.recompute region. Arguments marked `te.frozen` want no gradient: @f_bwd
// returns none for them, and the rules leave out the weight-gradient GEMMs
// of frozen weights and what only those read (BackwardOpInterface::
// needsSaved). The reverse sweep calls each op's rule
// (BackwardOpInterface: module ops in lib/Dialect/TE/IR/Backward/, upstream
// ops in lib/Transforms/Backward/); this file keeps the bundle and the
// recipe state.
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/BackwardRules.h"
#include "te/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::te {
#define GEN_PASS_DEF_TEGENERATEBACKWARDPASS
#define GEN_PASS_DEF_TETHREADRECIPESTATEPASS
#include "te/Transforms/Passes.h.inc"
} // namespace mlir::te

using namespace mlir;
using namespace mlir::te;

namespace {

bool isFloatTensor(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && isa<FloatType>(rt.getElementType());
}

/// One entry of the saved bundle: a forward value and where it lives.
struct BundleEntry {
  std::string name;
  Value forward;      ///< the value in @f_fwd
  Alias alias;        ///< function-level: input:N / output:N / none
  Value backward;     ///< the @f_bwd argument
};

/// Builds @f_fwd and @f_bwd of one function; to the ops' backward rules it
/// is the GradientContext of the reverse sweep.
class BackwardGenerator : public GradientContext {
public:
  BackwardGenerator(func::FuncOp func, TargetArch arch, bool dedup,
                    bool checkpointAll)
      : func(func), arch(arch), dedup(dedup), checkpointAll(checkpointAll) {}

  LogicalResult run();

  // GradientContext.
  OpBuilder &getBuilder() override { return *builder; }
  TargetArch getArch() const override { return arch; }
  bool wantsGradient(Value forward) const override {
    return !frozen.contains(forward);
  }
  Value getGradient(Value forward) override { return grads.lookup(forward); }
  FailureOr<Value> getGradientOrZeros(Value forward) override;
  void accumulate(Value forward, Value grad) override;
  FailureOr<Value> zeros(Location loc, Type type) override;
  Value lookupBackward(Value forward) override;
  Value getSaved(StringRef name) override;
  llvm::StringMap<Value> getAllSaved() override;
  Value getBackwardScales() override;
  void setBackwardOp(Operation *backwardOp) override;

private:
  LogicalResult buildForward();
  /// Fills `frozen` from @f_fwd's `te.frozen` arguments.
  void findFrozen();
  LogicalResult buildBackward();

  /// Adds `v` (saved by a module op as `name`) to the bundle; returns its
  /// index.
  unsigned addToBundle(Value v, StringRef name);

  /// Runs the backward rule of `op` (BackwardOpInterface) when a gradient
  /// reached it.
  LogicalResult backprop(Operation *op);

  func::FuncOp func;
  TargetArch arch;
  bool dedup, checkpointAll;

  func::FuncOp fwd, bwd;
  SmallVector<BundleEntry> bundle;
  llvm::DenseMap<Value, unsigned> bundleIndex;
  /// Per module op in @f_fwd: saved name -> bundle index.
  llvm::DenseMap<Operation *, llvm::StringMap<Value>> savedOf;
  /// Constants the backward needs: cloned into @f_bwd, never saved.
  llvm::DenseMap<Value, Value> clonedConstants;

  /// Values of @f_fwd no gradient is wanted for: `te.frozen` arguments and
  /// what is computed from those (and constants) only.
  llvm::DenseSet<Value> frozen;
  /// Forward value -> accumulated gradient in @f_bwd.
  llvm::MapVector<Value, Value> grads;
  /// The reverse sweep's builder and the op whose rule runs.
  OpBuilder *builder = nullptr;
  Operation *current = nullptr;

  /// Delayed-scaling ops in @f_fwd, in order, with their name prefix; and in
  /// @f_bwd, each one's backward state arguments.
  SmallVector<std::pair<Operation *, std::string>> delayedOps;
  llvm::DenseMap<Operation *, std::pair<Value, Value>> backwardState;
  /// Updated forward state, returned after the saved bundle.
  SmallVector<std::pair<Value, std::string>> forwardState;
  /// Updated backward state, returned after the gradients.
  SmallVector<std::pair<Value, std::string>> newBackwardState;
};

/// The delayed-scaling `scales` operand of a module op.
Value getScales(Operation *op) {
  auto m = dyn_cast<ModuleOpInterface>(op);
  return m ? m.getScalesOperand() : Value();
}
void setScales(Operation *op, Value scales) {
  cast<ModuleOpInterface>(op).setScalesOperand(scales);
}

/// The quantizer slots of a module op under delayed scaling (§0.2).
int64_t forwardSlots(Operation *op) {
  return cast<ModuleOpInterface>(op).getNumForwardSlots();
}
int64_t backwardSlots(Operation *op) {
  return cast<ModuleOpInterface>(op).getNumBackwardSlots();
}

/// The op's delayed-scaling recipe when it quantizes under one.
FP8DelayedRecipeAttr delayedRecipe(Operation *op, const ModuleDescription &d) {
  if (!d.fallback.empty())
    return {};
  return dyn_cast<FP8DelayedRecipeAttr>(
      cast<ModuleOpInterface>(op).getRecipeOrDefault());
}

/// The step's amaxes of `op` (te.amax) folded into the delayed-scaling
/// state (te.amax_update). Returns the new history and scales.
std::pair<Value, Value> updateState(OpBuilder &b, Operation *op,
                                    FP8DelayedRecipeAttr recipe, Value history,
                                    Value scales, bool backward) {
  Location loc = op->getLoc();
  Value amax = AmaxOp::create(b, loc, scales.getType(), op->getResult(0));
  auto update = AmaxUpdateOp::create(b, loc, history.getType(),
                                     scales.getType(), history, scales, amax,
                                     recipe, backward);
  return {update.getNewAmaxHistory(), update.getNewScales()};
}

/// A delayed-scaling module op whose forward state is made explicit.
struct StateOp {
  Operation *op;
  FP8DelayedRecipeAttr delayed;
  std::string prefix;
};

/// Makes the forward state of delayed-scaling module ops `ops` (of `f`'s top
/// level, in order) explicit: for each, arguments
/// `<prefix>.amax_history_fwd` [len, slots] and `<prefix>.scales_fwd`
/// [slots] tagged te.state, appended in order, `scales` set as the op's
/// operand, and the update before `f`'s terminator. Returns each op's new
/// history and scales (the caller returns them). The arguments are added in
/// one step: one at a time, each would rebuild the function type and the
/// argument attributes (uniqued forever), quadratic memory over many layers.
SmallVector<std::pair<Value, Value>>
threadForwardState(func::FuncOp f, ArrayRef<StateOp> ops) {
  SmallVector<std::pair<Value, Value>> updated;
  if (ops.empty())
    return updated;
  MLIRContext *ctx = f.getContext();
  Type f32 = Float32Type::get(ctx);
  unsigned n = f.getNumArguments();
  SmallVector<unsigned> indices;
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> attrs;
  SmallVector<Location> locs;
  for (const StateOp &s : ops) {
    int64_t slots = forwardSlots(s.op);
    auto stateAttr = [&](StringRef what) {
      return DictionaryAttr::get(
          ctx, {NamedAttribute(StringAttr::get(ctx, "te.state"),
                               StringAttr::get(ctx, s.prefix + "." + what))});
    };
    indices.append(2, n);
    types.push_back(RankedTensorType::get(
        {s.delayed.getAmaxHistoryLen(), slots}, f32));
    types.push_back(RankedTensorType::get({slots}, f32));
    attrs.push_back(stateAttr("amax_history_fwd"));
    attrs.push_back(stateAttr("scales_fwd"));
    locs.append(2, s.op->getLoc());
  }
  (void)f.insertArguments(indices, types, attrs, locs);
  OpBuilder b(f.getBody().front().getTerminator());
  for (auto [i, s] : llvm::enumerate(ops)) {
    Value history = f.getArgument(n + 2 * i);
    Value scales = f.getArgument(n + 2 * i + 1);
    setScales(s.op, scales);
    updated.push_back(updateState(b, s.op, s.delayed, history, scales,
                                  /*backward=*/false));
  }
  return updated;
}

unsigned BackwardGenerator::addToBundle(Value v, StringRef name) {
  if (dedup) {
    auto it = bundleIndex.find(v);
    if (it != bundleIndex.end())
      return it->second;
  }
  BundleEntry entry{name.str(), v, Alias{}, Value()};
  if (dedup) {
    // A forward recipe-state argument (delayed scaling's scales, which a
    // checkpointed backward's recompute quantizes with) is saved as a copy
    // the forward returns, not as an alias of the argument: the caller
    // updates its state tensors after the forward (torch.compile copies the
    // new state into the same buffers), and the backward must see the
    // values the forward used.
    if (auto arg = dyn_cast<BlockArgument>(v);
        arg && arg.getOwner() == &fwd.getBody().front() &&
        !fwd.getArgAttr(arg.getArgNumber(), "te.state"))
      entry.alias = Alias{Alias::Input, arg.getArgNumber()};
    else {
      auto ret = cast<func::ReturnOp>(fwd.getBody().front().getTerminator());
      for (OpOperand &operand : ret->getOpOperands())
        if (operand.get() == v) {
          entry.alias = Alias{Alias::Output, operand.getOperandNumber()};
          break;
        }
    }
  }
  bundle.push_back(entry);
  bundleIndex.try_emplace(v, bundle.size() - 1);
  return bundle.size() - 1;
}

/// The attribute of an argument that wants no gradient.
constexpr StringLiteral kFrozenAttr = "te.frozen";
/// The attribute of a weight whose gradient is accumulated into an fp32
/// main_grad (Megatron's convention, TE's fuse_wgrad_accumulation).
constexpr StringLiteral kMainGradAttr = "te.main_grad";

void BackwardGenerator::findFrozen() {
  for (BlockArgument arg : fwd.getArguments())
    if (fwd.getArgAttr(arg.getArgNumber(), kFrozenAttr))
      frozen.insert(arg);
  if (frozen.empty())
    return;
  auto isConstant = [](Value v) {
    return bool(v.getDefiningOp<arith::ConstantOp>());
  };
  for (Operation &op : fwd.getBody().front().without_terminator()) {
    bool anyFrozen = llvm::any_of(op.getOperands(),
                                  [&](Value v) { return frozen.contains(v); });
    bool allFrozen = llvm::all_of(op.getOperands(), [&](Value v) {
      return frozen.contains(v) || isConstant(v);
    });
    if (anyFrozen && allFrozen && op.getNumRegions() == 0)
      frozen.insert(op.result_begin(), op.result_end());
  }
}

/// A short prefix naming the i-th module op of a function.
std::string opPrefix(Operation *op, unsigned i) {
  return (op->getName().stripDialect() + "_" + Twine(i)).str();
}

LogicalResult BackwardGenerator::buildForward() {
  OpBuilder b(func);
  fwd = cast<func::FuncOp>(b.clone(*func));
  fwd->moveAfter(func);
  fwd.setSymName((func.getSymName() + "_fwd").str());

  SmallVector<Operation *> modules;
  fwd.walk([&](ModuleOpInterface op) { modules.push_back(op); });
  if (modules.empty())
    return success();

  DescribeOptions options;
  options.arch = arch;
  // Recipe state is explicit: scales and amax history come in as
  // arguments, the updated ones go out as results (never globals); all the
  // ops' state arguments are added at once.
  SmallVector<StateOp> stateOps;
  for (auto [i, op] : llvm::enumerate(modules)) {
    if (op->getParentRegion() != &fwd.getBody())
      return op->emitError("te-generate-backward: module ops must be at the "
                           "top level of the function");
    if (auto mlp = dyn_cast<LayerNormMLPOp>(op); mlp && checkpointAll)
      mlp.setCheckpoint(true);
    ModuleDescription desc = cast<ModuleOpInterface>(op).describe(options);
    if (!desc.fallback.empty())
      op->emitRemark() << "te-generate-backward: " << desc.fallback;
    if (auto delayed = delayedRecipe(op, desc); delayed && !getScales(op))
      stateOps.push_back({op, delayed, opPrefix(op, i)});
  }
  for (auto [s, state] :
       llvm::zip(stateOps, threadForwardState(fwd, stateOps))) {
    delayedOps.push_back({s.op, s.prefix});
    forwardState.push_back({state.first, s.prefix + ".amax_history_fwd"});
    forwardState.push_back({state.second, s.prefix + ".scales_fwd"});
  }
  findFrozen();
  for (auto [i, op] : llvm::enumerate(modules)) {
    ModuleDescription desc = cast<ModuleOpInterface>(op).describe(options);
    std::string prefix = opPrefix(op, i);
    OpBuilder ob(op->getContext());
    ob.setInsertionPointAfter(op);
    auto rule = cast<BackwardOpInterface>(op);
    for (const SavedDesc &s : desc.saved) {
      // What only a frozen weight's wgrad reads is not saved.
      if (!rule.needsSaved(s.tensor.name, *this))
        continue;
      Value v;
      switch (s.alias.kind) {
      case Alias::Input:
        v = op->getOperand(s.alias.index);
        break;
      case Alias::Output:
        v = op->getResult(s.alias.index);
        break;
      case Alias::None:
        v = SavedOp::create(ob, op->getLoc(), s.tensor.getType(op->getContext()),
                            op->getResult(0), s.tensor.name);
        break;
      }
      savedOf[op][s.tensor.name] = v;
      // Constants (weights frozen into an export) are rematerialized in the
      // backward instead of saved.
      if (!v.getDefiningOp<arith::ConstantOp>())
        addToBundle(v, prefix + "." + s.tensor.name);
    }
  }

  // Return the fresh bundle entries after the results.
  auto ret = cast<func::ReturnOp>(fwd.getBody().front().getTerminator());
  unsigned numResults = ret.getNumOperands();
  SmallVector<Value> results(ret.getOperands());
  for (BundleEntry &e : bundle)
    if (e.alias.kind == Alias::None)
      results.push_back(e.forward);
  for (auto &[value, name] : forwardState)
    results.push_back(value);
  OpBuilder rb(ret);
  func::ReturnOp::create(rb, ret.getLoc(), results);
  ret.erase();
  SmallVector<Type> resultTypes;
  for (Value v : results)
    resultTypes.push_back(v.getType());
  // The original results keep their attributes; the rest are named.
  MLIRContext *ctx = fwd.getContext();
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i = 0; i < numResults; ++i)
    resultAttrs.push_back(fwd.getResultAttrDict(i)
                              ? fwd.getResultAttrDict(i)
                              : DictionaryAttr::get(ctx, {}));
  auto named = [&](StringRef key, StringRef value) {
    return DictionaryAttr::get(
        ctx, {NamedAttribute(StringAttr::get(ctx, key),
                             StringAttr::get(ctx, value))});
  };
  for (BundleEntry &e : bundle)
    if (e.alias.kind == Alias::None)
      resultAttrs.push_back(named("te.saved", e.name));
  for (auto &[value, name] : forwardState)
    resultAttrs.push_back(named("te.state", name));
  fwd.setFunctionType(
      FunctionType::get(ctx, fwd.getArgumentTypes(), resultTypes));
  fwd.setAllResultAttrs(resultAttrs);
  fwd->setAttr("te.forward_of", FlatSymbolRefAttr::get(func.getSymNameAttr()));
  return success();
}

Value BackwardGenerator::lookupBackward(Value forward) {
  if (auto constant = forward.getDefiningOp<arith::ConstantOp>()) {
    Value &clone = clonedConstants[forward];
    if (!clone) {
      OpBuilder cb = OpBuilder::atBlockBegin(&bwd.getBody().front());
      clone = cb.clone(*constant)->getResult(0);
    }
    return clone;
  }
  return bundle[bundleIndex.lookup(forward)].backward;
}

Value BackwardGenerator::getSaved(StringRef name) {
  llvm::StringMap<Value> &saved = savedOf[current];
  auto it = saved.find(name);
  return it == saved.end() ? Value() : lookupBackward(it->second);
}

llvm::StringMap<Value> BackwardGenerator::getAllSaved() {
  llvm::StringMap<Value> values;
  for (auto &entry : savedOf[current])
    values[entry.getKey()] = lookupBackward(entry.getValue());
  return values;
}

Value BackwardGenerator::getBackwardScales() {
  auto state = backwardState.find(current);
  return state == backwardState.end() ? Value() : state->second.second;
}

void BackwardGenerator::setBackwardOp(Operation *backwardOp) {
  auto state = backwardState.find(current);
  if (state == backwardState.end())
    return;
  auto recipe = cast<FP8DelayedRecipeAttr>(
      cast<ModuleOpInterface>(current).getRecipeOrDefault());
  state->second = updateState(*builder, backwardOp, recipe, state->second.first,
                              state->second.second,
                              /*backward=*/true);
}

void BackwardGenerator::accumulate(Value forward, Value grad) {
  if (frozen.contains(forward))
    return;
  auto [it, inserted] = grads.try_emplace(forward, grad);
  if (!inserted)
    it->second =
        arith::AddFOp::create(*builder, grad.getLoc(), it->second, grad)
            .getResult();
}

FailureOr<Value> BackwardGenerator::zeros(Location loc, Type type) {
  auto rt = cast<RankedTensorType>(type);
  if (!rt.hasStaticShape())
    return emitError(loc) << "te-generate-backward: a zero gradient of "
                             "dynamic shape "
                          << type << " is needed but not supported";
  return arith::ConstantOp::create(
             *builder, loc,
             DenseElementsAttr::get(
                 rt, builder->getFloatAttr(rt.getElementType(), 0.0)))
      .getResult();
}

FailureOr<Value> BackwardGenerator::getGradientOrZeros(Value forward) {
  auto it = grads.find(forward);
  if (it != grads.end())
    return it->second;
  return zeros(forward.getLoc(), forward.getType());
}

LogicalResult BackwardGenerator::backprop(Operation *op) {
  // Ops that no gradient reaches need no rule.
  if (llvm::none_of(op->getResults(), [&](Value r) { return grads.count(r); }))
    return success();
  auto rule = dyn_cast<BackwardOpInterface>(op);
  if (!rule)
    return op->emitError() << "te-generate-backward: no derivative rule for '"
                           << op->getName() << "'";
  current = op;
  return rule.buildBackward(*this);
}

LogicalResult BackwardGenerator::buildBackward() {
  MLIRContext *ctx = func.getContext();
  auto ret = cast<func::ReturnOp>(fwd.getBody().front().getTerminator());
  unsigned numResults = func.getNumResults();

  // Signature: bundle entries, then a gradient per float result.
  SmallVector<Type> argTypes, resultTypes;
  for (BundleEntry &e : bundle)
    argTypes.push_back(e.forward.getType());
  SmallVector<unsigned> gradArgs;
  for (unsigned i = 0; i < numResults; ++i)
    if (isFloatTensor(func.getResultTypes()[i])) {
      gradArgs.push_back(i);
      argTypes.push_back(func.getResultTypes()[i]);
    }
  // Then the backward recipe state of each delayed-scaling op (also
  // returned, updated, after the gradients).
  unsigned firstState = argTypes.size();
  SmallVector<Type> stateTypes;
  for (auto &[op, prefix] : delayedOps) {
    auto recipe = cast<FP8DelayedRecipeAttr>(
        cast<ModuleOpInterface>(op).getRecipeOrDefault());
    Type f32 = Float32Type::get(ctx);
    int64_t slots = backwardSlots(op);
    stateTypes.push_back(
        RankedTensorType::get({recipe.getAmaxHistoryLen(), slots}, f32));
    stateTypes.push_back(RankedTensorType::get({slots}, f32));
  }
  llvm::append_range(argTypes, stateTypes);
  // Then an fp32 main_grad per argument marked te.main_grad: its gradient
  // result is main_grad + the gradient, in fp32.
  llvm::DenseMap<unsigned, unsigned> mainGradArg; // forward arg -> bwd arg
  Type f32 = Float32Type::get(ctx);
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    if (!func.getArgAttr(i, kMainGradAttr))
      continue;
    auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (!func.getArgAttrOfType<UnitAttr>(i, kMainGradAttr))
      return func.emitError()
             << "te-generate-backward: " << kMainGradAttr << " of argument "
             << i << " must be a unit attribute";
    if (!type || !isa<FloatType>(type.getElementType()))
      return func.emitError()
             << "te-generate-backward: argument " << i << " is marked "
             << kMainGradAttr << " but is not a float tensor ("
             << func.getArgumentTypes()[i] << ")";
    if (func.getArgAttr(i, kFrozenAttr))
      return func.emitError()
             << "te-generate-backward: argument " << i << " is marked both "
             << kFrozenAttr << " (no gradient) and " << kMainGradAttr
             << " (its gradient accumulated into main_grad)";
    if (func.getArgAttr(i, "te.tp_shard"))
      return func.emitError()
             << "te-generate-backward: argument " << i << " is marked "
             << kMainGradAttr << " and sharded (te.tp_shard): main_grad "
             << "accumulation under tensor parallelism is not supported";
    mainGradArg[i] = argTypes.size();
    argTypes.push_back(RankedTensorType::get(type.getShape(), f32));
  }
  SmallVector<unsigned> gradResults;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (isFloatTensor(func.getArgumentTypes()[i]) &&
        !func.getArgAttr(i, kFrozenAttr)) {
      gradResults.push_back(i);
      resultTypes.push_back(mainGradArg.count(i)
                                ? argTypes[mainGradArg.lookup(i)]
                                : func.getArgumentTypes()[i]);
    }

  OpBuilder b(fwd);
  b.setInsertionPointAfter(fwd);
  SmallVector<Type> allResults(resultTypes);
  llvm::append_range(allResults, stateTypes);
  bwd = func::FuncOp::create(b, func.getLoc(),
                             (func.getSymName() + "_bwd").str(),
                             FunctionType::get(ctx, argTypes, allResults));
  bwd.setVisibility(func.getVisibility());
  Block *entry = bwd.addEntryBlock();
  // The argument and result attributes, set at once at the end (one by
  // one, each would rebuild the whole array: quadratic memory).
  SmallVector<NamedAttrList> argAttrs(argTypes.size()),
      resultAttrs(allResults.size());
  for (auto [i, e] : llvm::enumerate(bundle)) {
    e.backward = entry->getArgument(i);
    argAttrs[i].set("te.saved", StringAttr::get(ctx, e.name));
    if (e.alias.kind != Alias::None)
      argAttrs[i].set(
          "te.alias",
          StringAttr::get(
              ctx, (e.alias.kind == Alias::Input ? "input:" : "output:") +
                       Twine(e.alias.index)));
  }
  for (auto [j, entryOp] : llvm::enumerate(delayedOps)) {
    unsigned argNo = firstState + 2 * j;
    const std::string &prefix = entryOp.second;
    argAttrs[argNo].set("te.state",
                        StringAttr::get(ctx, prefix + ".amax_history_bwd"));
    argAttrs[argNo + 1].set("te.state",
                            StringAttr::get(ctx, prefix + ".scales_bwd"));
    backwardState[entryOp.first] = {entry->getArgument(argNo),
                                    entry->getArgument(argNo + 1)};
  }
  for (auto [i, argNo] : mainGradArg)
    argAttrs[argNo].set("te.main_grad_of",
                        StringAttr::get(ctx, "input:" + Twine(i)));
  b.setInsertionPointToStart(entry);
  builder = &b;
  for (auto [j, i] : llvm::enumerate(gradArgs)) {
    unsigned argNo = bundle.size() + j;
    argAttrs[argNo].set("te.grad_of",
                        StringAttr::get(ctx, "output:" + Twine(i)));
    // A tensor-parallel gradient has its output's layout.
    if (auto shard = func.getResultAttrOfType<StringAttr>(i, "te.tp_shard"))
      argAttrs[argNo].set("te.tp_shard", shard);
    // A returned norm output's gradient may be absent at run time.
    Value result = ret.getOperand(i);
    if (auto owner = dyn_cast<OpResult>(result);
        owner && isa<ModuleOpInterface>(owner.getOwner()) &&
        owner.getResultNumber() == 1)
      argAttrs[argNo].set("te.optional_grad", UnitAttr::get(ctx));
    accumulate(result, entry->getArgument(argNo));
  }

  // Reverse sweep over the forward body.
  SmallVector<Operation *> ops;
  for (Operation &op : fwd.getBody().front().without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (failed(backprop(op)))
      return failure();

  SmallVector<Value> results;
  for (auto [j, i] : llvm::enumerate(gradResults)) {
    FailureOr<Value> g = getGradientOrZeros(fwd.getArgument(i));
    if (failed(g))
      return failure();
    if (auto it = mainGradArg.find(i); it != mainGradArg.end()) {
      // main_grad + gradient in fp32 (te-fuse-gemm-epilogues puts the add
      // in the wgrad GEMM's epilogue, before the gradient is rounded).
      Value main = entry->getArgument(it->second);
      Value grad = *g;
      if (cast<RankedTensorType>(grad.getType()).getElementType() != f32)
        grad = arith::ExtFOp::create(b, grad.getLoc(), main.getType(), grad);
      *g = arith::AddFOp::create(b, grad.getLoc(), main, grad).getResult();
      resultAttrs[j].set("te.main_grad_of",
                         StringAttr::get(ctx, "input:" + Twine(i)));
    }
    results.push_back(*g);
    resultAttrs[j].set("te.grad_of",
                      StringAttr::get(ctx, "input:" + Twine(i)));
    // A tensor-parallel gradient has its input's layout, or is a partial
    // sum over the group (te.tp_grad: a replicated parameter under
    // sequence parallelism).
    if (auto shard = func.getArgAttrOfType<StringAttr>(i, "te.tp_shard")) {
      auto grad = func.getArgAttrOfType<StringAttr>(i, "te.tp_grad");
      resultAttrs[j].set("te.tp_shard", grad ? grad : shard);
    }
  }
  // Updated backward state (unchanged for an op no gradient reached).
  for (auto &[op, prefix] : delayedOps) {
    auto [history, scales] = backwardState[op];
    newBackwardState.push_back({history, prefix + ".amax_history_bwd"});
    newBackwardState.push_back({scales, prefix + ".scales_bwd"});
  }
  unsigned numGrads = results.size();
  for (auto &[value, name] : newBackwardState)
    results.push_back(value);
  for (auto [j, state] : llvm::enumerate(newBackwardState))
    resultAttrs[numGrads + j].set("te.state",
                      StringAttr::get(ctx, state.second));
  func::ReturnOp::create(b, func.getLoc(), results);
  auto dicts = [&](ArrayRef<NamedAttrList> lists) {
    SmallVector<DictionaryAttr> out;
    for (const NamedAttrList &l : lists)
      out.push_back(l.getDictionary(ctx));
    return out;
  };
  bwd.setAllArgAttrs(dicts(argAttrs));
  bwd.setAllResultAttrs(dicts(resultAttrs));
  bwd->setAttr("te.backward_of", FlatSymbolRefAttr::get(func.getSymNameAttr()));
  for (StringRef key : {"te.tp", "te.sequence_parallel"})
    if (Attribute a = func->getAttr(key))
      bwd->setAttr(key, a);
  return success();
}

LogicalResult BackwardGenerator::run() {
  if (failed(buildForward()) || failed(buildBackward())) {
    if (fwd)
      fwd.erase();
    if (bwd)
      bwd.erase();
    return failure();
  }
  return success();
}

struct TEGenerateBackwardPass
    : public te::impl::TEGenerateBackwardPassBase<TEGenerateBackwardPass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerBackwardOpInterfaceExternalModels(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!arch.isValid()) {
      module.emitError() << "te-generate-backward: unknown arch '"
                         << arch.spelling()
                         << "' (expected hopper or blackwell)";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> funcs;
    for (auto f : module.getOps<func::FuncOp>())
      if (f.isPublic() && !f.isExternal() && !f->hasAttr("te.forward_of") &&
          !f->hasAttr("te.backward_of"))
        funcs.push_back(f);
    for (func::FuncOp f : funcs) {
      bool hasModule = false;
      f.walk([&](ModuleOpInterface) { hasModule = true; });
      if (!hasModule)
        continue;
      for (StringRef suffix : {"_fwd", "_bwd"})
        if (module.lookupSymbol((f.getSymName() + suffix).str())) {
          f.emitError() << "te-generate-backward: @" << f.getSymName()
                        << suffix << " already exists";
          return signalPassFailure();
        }
      BackwardGenerator gen(f, *arch, dedup, checkpoint);
      if (failed(gen.run()))
        return signalPassFailure();
    }
  }
};

struct TEThreadRecipeStatePass
    : public te::impl::TEThreadRecipeStatePassBase<TEThreadRecipeStatePass> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      if (f.isExternal())
        continue;
      SmallVector<Operation *> modules;
      f.walk([&](ModuleOpInterface op) { modules.push_back(op); });
      MLIRContext *ctx = f.getContext();
      SmallVector<StateOp> stateOps;
      for (auto [i, op] : llvm::enumerate(modules)) {
        ModuleDescription desc =
            cast<ModuleOpInterface>(op).describe(DescribeOptions());
        FP8DelayedRecipeAttr delayed = delayedRecipe(op, desc);
        if (!delayed || getScales(op))
          continue;
        if (op->getParentRegion() != &f.getBody()) {
          op->emitError("te-thread-recipe-state: module ops must be at the "
                        "top level of the function");
          return signalPassFailure();
        }
        stateOps.push_back({op, delayed, opPrefix(op, i)});
      }
      SmallVector<std::pair<Value, std::string>> state;
      for (auto [s, updated] :
           llvm::zip(stateOps, threadForwardState(f, stateOps))) {
        state.push_back({updated.first, s.prefix + ".amax_history_fwd"});
        state.push_back({updated.second, s.prefix + ".scales_fwd"});
      }
      if (state.empty())
        continue;
      auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
      unsigned first = ret.getNumOperands();
      SmallVector<Value> values;
      for (auto &[v, name] : state)
        values.push_back(v);
      ret.getOperandsMutable().append(values);
      f.setFunctionType(FunctionType::get(ctx, f.getArgumentTypes(),
                                          ret.getOperandTypes()));
      // All the result attributes at once (one by one, each would rebuild
      // the array).
      SmallVector<DictionaryAttr> resultAttrs;
      for (unsigned i = 0; i < first; ++i)
        resultAttrs.push_back(f.getResultAttrDict(i)
                                  ? f.getResultAttrDict(i)
                                  : DictionaryAttr::get(ctx, {}));
      for (auto &entry : state)
        resultAttrs.push_back(DictionaryAttr::get(
            ctx, {NamedAttribute(StringAttr::get(ctx, "te.state"),
                                 StringAttr::get(ctx, entry.second))}));
      f.setAllResultAttrs(resultAttrs);
    }
  }
};

} // namespace
