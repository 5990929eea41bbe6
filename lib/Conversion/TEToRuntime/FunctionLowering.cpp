//===- FunctionLowering.cpp - The lowering of one function ------*- C++ -*-===//
//
// An entry point per function: the dims' range and the recipes' alignment
// checked on entry, the arena allocated by the memory plan, the body
// lowered op by op (per family in Norm.cpp, Gemm.cpp, ...), the results
// copied out.
//
//===----------------------------------------------------------------------===//

#include "FunctionLowering.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringSet.h"

#include <limits>

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::runtime_lowering {

std::string FunctionLowering::symbolOf(Dim d) const {
  if (d.isStatic())
    return std::to_string(d.value);
  std::string sym;
  for (int var : d.vars) {
    auto it = llvm::find(shapes.dimClasses, var);
    sym += (sym.empty() ? "d" : "*d") +
           std::to_string(it - shapes.dimClasses.begin());
  }
  return d.value == 1 ? sym : sym + "*" + std::to_string(d.value);
}

SymDim FunctionLowering::symDimOf(Dim d) const {
  SymDim out(d.value);
  for (int var : d.vars) {
    auto it = llvm::find(shapes.dimClasses, var);
    out = out *
          SymDim::symbol("d" + std::to_string(it - shapes.dimClasses.begin()));
  }
  return out;
}

llvm::json::Array FunctionLowering::shapeJSON(Value v, Type type) const {
  llvm::json::Array shape;
  for (Dim d : shapes.dims(v))
    if (d.isStatic())
      shape.push_back(d.value);
    else
      shape.push_back(symbolOf(d));
  return shape;
}

void FunctionLowering::call(StringRef name, ArrayRef<Value> operands,
                            Block *fail) {
  LLVM::LLVMFuncOp callee = runtime.lookup(name);
  assert(callee && "runtime function not declared");
  call(callee, operands, fail);
}

void FunctionLowering::call(LLVM::LLVMFuncOp callee, ArrayRef<Value> operands,
                            Block *fail) {
  assert(llvm::all_of(operands, [](Value v) { return bool(v); }) &&
         "operand without a buffer");
  Value status = LLVM::CallOp::create(b, loc, callee, operands).getResult();
  Value failed = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, status,
                                      c32(0));
  Block *next = b.getInsertionBlock()->splitBlock(b.getInsertionPoint());
  b.setInsertionPointToEnd(next->getPrevNode());
  LLVM::CondBrOp::create(b, loc, failed, fail ? fail : failBlock,
                         ValueRange{status}, next, ValueRange{});
  b.setInsertionPointToStart(next);
}

SmallVector<FunctionLowering::AlignmentCheck>
FunctionLowering::alignmentChecks() {
  SmallVector<AlignmentCheck> checks;
  llvm::StringSet<> seen;
  auto visit = [&](Value v) {
    auto q = dyn_cast<QuantizedTensorType>(v.getType());
    if (!q)
      return;
    RecipeAlignment align = getRecipeAlignment(q.getRecipe());
    SmallVector<Dim> d = shapes.dims(v);
    // Rows: the product of the leading dims.
    Dim rows{1, {}};
    for (const Dim &x : ArrayRef<Dim>(d).drop_back()) {
      rows.value *= x.value;
      llvm::append_range(rows.vars, x.vars);
    }
    for (auto [dim, multiple] :
         {std::pair<Dim, int64_t>{rows, align.rows}, {d.back(), align.cols}}) {
      // Static dims were checked at compile time (fallback or verifier);
      // d0*128 is always a multiple of 128.
      if (multiple <= 1 || dim.isStatic() || dim.value % multiple == 0)
        continue;
      std::string condition =
          symDimOf(dim).str() + " % " + std::to_string(multiple) + " == 0";
      if (!seen.insert(condition).second)
        continue;
      checks.push_back({dim, multiple,
                        (func.getSymName() + ": recipe " +
                         q.getRecipe().getRecipeName() + " needs " + condition)
                            .str()});
    }
  };
  for (BlockArgument arg : func.getArguments())
    visit(arg);
  for (Operation &op : func.getBody().front())
    for (Value result : op.getResults())
      visit(result);
  return checks;
}

Block *FunctionLowering::checkFailBlock() {
  if (checkFail)
    return checkFail;
  // Nothing is allocated yet: a failed check returns its status.
  checkFail = new Block();
  entry.getBody().push_back(checkFail);
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(checkFail);
  LLVM::ReturnOp::create(b, loc, checkFail->addArgument(i32(), loc));
  return checkFail;
}

Value FunctionLowering::messageGlobal(StringRef message, StringRef kind,
                                      unsigned i) {
  std::string text = message.str();
  text.push_back('\0');
  OpBuilder gb(module.getBodyRegion());
  auto global = LLVM::GlobalOp::create(
      gb, loc, LLVM::LLVMArrayType::get(b.getI8Type(), text.size()),
      /*isConstant=*/true, LLVM::Linkage::Internal,
      (func.getSymName() + "__" + kind + Twine(i)).str(),
      b.getStringAttr(text));
  return LLVM::AddressOfOp::create(b, loc, global);
}

void FunctionLowering::emitAlignmentChecks() {
  for (auto [i, check] : llvm::enumerate(alignmentChecks()))
    call("te_rt_check_multiple",
         {ctxArg, dimValue(check.dim), c64(check.multiple),
          messageGlobal(check.what, "check", i)},
         checkFailBlock());
}

Value FunctionLowering::saturatingDimValue(const Dim &d) {
  // Each variable is in [0, kMaxDimSize] here (checked first), so the
  // unsigned products only need the overflow flag and the sign bit.
  Value max = c64(std::numeric_limits<int64_t>::max());
  Value acc = c64(d.value);
  for (int var : d.vars) {
    auto mul = LLVM::UMulWithOverflowOp::create(
        b, loc, LLVM::LLVMStructType::getLiteral(ctx, {i64(), b.getI1Type()}),
        acc, dimValues.lookup(var));
    Value product = LLVM::ExtractValueOp::create(b, loc, mul, 0);
    Value overflow = LLVM::ExtractValueOp::create(b, loc, mul, 1);
    Value negative =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::slt, product, c64(0));
    Value saturate = LLVM::OrOp::create(b, loc, overflow, negative);
    acc = LLVM::SelectOp::create(b, loc, saturate, max, product);
  }
  return acc;
}

void FunctionLowering::emitSizeChecks() {
  unsigned n = 0;
  forEachSizeCheck([&](Value value, int64_t max, const std::string &what) {
    call("te_rt_check_range",
         {ctxArg, value, c64(0), c64(max), messageGlobal(what, "size", n++)},
         checkFailBlock());
  });
}

void FunctionLowering::forEachSizeCheck(
    llvm::function_ref<void(Value, int64_t, const std::string &)> check) {
  if (shapes.dimClasses.empty())
    return;
  for (auto [k, var] : llvm::enumerate(shapes.dimClasses))
    check(dimValues.lookup(var), kMaxDimSize,
          (func.getSymName() + ": dim d" + Twine(k)).str());
  // Element counts: per set of variables, the largest static factor (the
  // others are below it), in order of first appearance.
  llvm::MapVector<SmallVector<int, 2>, int64_t> largest;
  auto visit = [&](Value v) {
    if (!shapeOfType(v.getType()))
      return;
    Dim total{1, {}};
    for (const Dim &d : shapes.dims(v)) {
      total.value *= d.value; // static factors: bounded by the verifiers
      llvm::append_range(total.vars, d.vars);
    }
    if (total.isStatic())
      return;
    llvm::sort(total.vars);
    SmallVector<int, 2> key(total.vars.begin(), total.vars.end());
    int64_t &factor = largest.insert({key, 0}).first->second;
    factor = std::max(factor, total.value);
  };
  for (BlockArgument arg : func.getArguments())
    visit(arg);
  for (Operation &op : func.getBody().front())
    for (Value result : op.getResults())
      visit(result);
  for (auto &[vars, factor] : largest) {
    Dim total{factor, SmallVector<int, 1>(vars.begin(), vars.end())};
    if (total.vars.size() == 1 && factor == 1)
      continue; // a lone variable: checked above
    check(saturatingDimValue(total), kMaxElements,
          (func.getSymName() + ": the element count " + symDimOf(total).str())
              .str());
  }
}

std::optional<uint64_t> unusedAmaxSlots(Value amax) {
  auto c = amax.getDefiningOp<tensor::ConcatOp>();
  if (!c || c.getDim() != 0)
    return std::nullopt;
  RankedTensorType type = c.getResultType();
  if (type.getRank() != 1 || !type.hasStaticShape() ||
      !type.getElementType().isF32() || type.getNumElements() > 64 ||
      amax.use_empty())
    return std::nullopt;
  // Read only as te.amax_update's amax: any other reader (a copy, a
  // return, a view) would see the slots the update leaves unwritten.
  for (OpOperand &use : amax.getUses()) {
    auto update = dyn_cast<AmaxUpdateOp>(use.getOwner());
    if (!update || &use != &update.getAmaxMutable())
      return std::nullopt;
  }
  uint64_t mask = 0;
  int64_t slot = 0;
  for (Value in : c.getInputs()) {
    auto part = dyn_cast<RankedTensorType>(in.getType());
    if (!part || !part.hasStaticShape())
      return std::nullopt;
    int64_t k = part.getNumElements();
    if (isZeroSplatConstant(in))
      for (int64_t s = slot; s < slot + k; ++s)
        mask |= uint64_t(1) << s;
    slot += k;
  }
  if (!mask)
    return std::nullopt;
  return mask;
}

void FunctionLowering::planEarlyZeroing() {
  Block &body = func.getBody().front();
  for (Operation &op : body) {
    auto c = dyn_cast<tensor::ConcatOp>(op);
    if (!c || c.getDim() != 0 || !c.getResultType().hasStaticShape())
      continue;
    // An amax vector's zero slots are not written at all.
    if (unusedAmaxSlots(c.getResult()))
      continue;
    unsigned runs = 0;
    bool inRun = false;
    Operation *first = nullptr;
    for (Value in : c.getInputs()) {
      bool zero = isZeroSplatConstant(in);
      runs += zero && !inRun;
      inRun = zero;
      if (memory.aliasOf.lookup(in) == c.getResult()) {
        Operation *def = in.getDefiningOp();
        if (!first || def->isBeforeInBlock(first))
          first = def;
      }
    }
    if (runs < 2 || !first)
      continue;
    zeroBefore[first].push_back(c.getResult());
    zeroedConcats.insert(c.getResult());
  }
}

void FunctionLowering::branchBefore(Operation *op) {
  // Every marked op is a run of its own, so that a join waits for what its
  // reader needs and not for the runs after it.
  if (inBranch) {
    call("te_rt_branch_end", {ctxArg});
    inBranch = false;
  }
  if (!branchesOff && op->hasAttr(kBranchAttrName))
    return; // (same branch: queued after the runs it reads)
  int64_t last = -1;
  for (Value v : op->getOperands())
    if (auto it = branchRunOf.find(v); it != branchRunOf.end())
      last = std::max(last, it->second);
  if (last < 0)
    return;
  call("te_rt_branch_join", {ctxArg, c64(last)});
  llvm::SmallVector<Value> joined;
  for (auto &[v, run] : branchRunOf)
    if (run <= last)
      joined.push_back(v);
  for (Value v : joined)
    branchRunOf.erase(v);
}

void FunctionLowering::branchBegin(Operation *op) {
  if (branchesOff || !op->hasAttr(kBranchAttrName))
    return;
  call("te_rt_branch_begin", {ctxArg});
  inBranch = true;
  for (Value r : op->getResults())
    branchRunOf[r] = branchRuns;
  ++branchRuns;
}

void FunctionLowering::closeBranches() {
  if (inBranch)
    call("te_rt_branch_end", {ctxArg});
  if (branchRuns > 0)
    call("te_rt_branch_join", {ctxArg, c64(-1)});
  inBranch = false;
  branchRuns = 0;
  branchRunOf.clear();
}

LogicalResult FunctionLowering::lowerOp(Operation *op) {
  loc = op->getLoc();
  branchBefore(op);
  // A concat's buffer zeroed whole before its first placed part is written
  // (in order, before a branch that writes one forks).
  if (auto it = zeroBefore.find(op); it != zeroBefore.end())
    for (Value concat : it->second)
      call("te_rt_zero", {ctxArg, ptr(concat), bytes(concat)});
  branchBegin(op);
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
    if (auto t = dyn_cast<RankedTensorType>(v.getType());
        t && isa<FloatType>(t.getElementType()) &&
        !dtypeCode(t.getElementType()))
      return op->emitError() << "te-lower-to-runtime: unsupported element "
                                "type "
                             << t.getElementType();

  auto it = patternsByOp.find(op->getName());
  if (it != patternsByOp.end())
    for (const RewritePattern *pattern : it->second)
      if (succeeded(pattern->matchAndRewrite(op, b)))
        return failure(hadError);
  return op->emitError() << "te-lower-to-runtime: cannot lower '"
                         << op->getName()
                         << "' (run te-decompose first)";
}

void populateTEToRuntimePatterns(FunctionLowering &lowering,
                                 RewritePatternSet &patterns) {
  populateNormToRuntimePatterns(lowering, patterns);
  populateQuantizeToRuntimePatterns(lowering, patterns);
  populateGemmToRuntimePatterns(lowering, patterns);
  populateActivationToRuntimePatterns(lowering, patterns);
  populateStateToRuntimePatterns(lowering, patterns);
  populateCollectiveToRuntimePatterns(lowering, patterns);
  populateElementwiseToRuntimePatterns(lowering, patterns);
}

void FunctionLowering::indexPatterns() {
  // The patterns by root op. (Not a PatternApplicator: it moves the
  // rewriter to the matched op, and the calls go into the entry instead.)
  populateTEToRuntimePatterns(*this, patterns);
  for (const std::unique_ptr<RewritePattern> &pattern :
       patterns.getNativePatterns()) {
    assert(pattern->getRootKind() && "a pattern of any op");
    patternsByOp[*pattern->getRootKind()].push_back(pattern.get());
  }
  for (auto &entry : patternsByOp)
    llvm::stable_sort(entry.second,
                      [](const RewritePattern *x, const RewritePattern *y) {
                        return x->getBenefit() > y->getBenefit();
                      });
}

LogicalResult FunctionLowering::checkQuantized(Type t, Location where) {
  // Quantized values: per-tensor FP8 and Float8 block scaling in Hopper's
  // layout, MXFP8 and NVFP4 in Blackwell's; dynamic dims size their inner
  // tensors at run time (runtimeParts).
  auto q = dyn_cast<QuantizedTensorType>(t);
  if (!q)
    return success();
  bool perTensor =
      isa<FP8DelayedRecipeAttr, FP8CurrentRecipeAttr>(q.getRecipe());
  bool blackwell = isa<MXFP8RecipeAttr, NVFP4RecipeAttr>(q.getRecipe());
  bool lowered =
      blackwell ? q.getArch() == TargetArch::Blackwell &&
                      (!q.getRowScaled() || q.getUsage() == QuantUsage::Rowwise)
                : q.getArch() == TargetArch::Hopper &&
                      (perTensor || isa<FP8BlockRecipeAttr>(q.getRecipe()));
  if (!lowered)
    return emitError(where) << "te-lower-to-runtime: " << q
                            << " is not lowered (per-tensor FP8 and "
                               "fp8-block on hopper, mxfp8 and nvfp4 "
                               "on blackwell, row-scaled nvfp4 rowwise "
                               "only)";
  if (blackwell && q.getSwizzled() != true)
    return emitError(where) << "te-lower-to-runtime: " << q
                            << " has compact scales; the runtime's "
                            << q.getRecipe().getRecipeName()
                            << " GEMMs take them swizzled (as TE's "
                               "quantizers write them for GEMMs)";
  return success();
}

LogicalResult FunctionLowering::checkValueTypes() {
  for (BlockArgument arg : func.getArguments())
    if (failed(checkQuantized(arg.getType(), func.getLoc())))
      return failure();
  // Entries compute on tensors: a scalar (an `index` constant, say) has no
  // buffer and no place in the ABI.
  for (auto [i, t] : llvm::enumerate(func.getResultTypes()))
    if (!shapeOfType(t))
      return func.emitError() << "te-lower-to-runtime: result #" << i
                              << " must be a ranked tensor or a quantized "
                                 "tensor, got "
                              << t;
  for (Operation &op : func.getBody().front())
    for (auto [i, t] : llvm::enumerate(op.getResultTypes())) {
      if (!shapeOfType(t))
        return op.emitError() << "te-lower-to-runtime: '" << op.getName()
                              << "' produces a value of type " << t
                              << "; entries compute on ranked tensors only";
      if (failed(checkQuantized(t, op.getLoc())) ||
          failed(verifyShapeBounds(
              [&] { return op.emitError() << "te-lower-to-runtime: "; },
              *shapeOfType(t), ("result #" + Twine(i)).str())))
        return failure();
    }
  for (BlockArgument arg : func.getArguments())
    if (auto shape = shapeOfType(arg.getType());
        shape &&
        failed(verifyShapeBounds(
            [&] { return func.emitError() << "te-lower-to-runtime: "; }, *shape,
            ("argument #" + Twine(arg.getArgNumber())).str())))
      return failure();
  return success();
}

void FunctionLowering::buildEntryPrologue() {
  b.setInsertionPoint(func);
  auto fnType = LLVM::LLVMFunctionType::get(
      i32(), {ptrTy(), ptrTy(), ptrTy(), ptrTy()});
  std::string name = func.getSymName().str();
  entry = LLVM::LLVMFuncOp::create(b, func.getLoc(), "te_entry_" + name, fnType);
  Block *body = entry.addEntryBlock(b);
  ctxArg = body->getArgument(0);
  argsArg = body->getArgument(1);
  resultsArg = body->getArgument(2);
  dimsArg = body->getArgument(3);
  b.setInsertionPointToStart(body);
  loc = func.getLoc();

  for (auto [k, var] : llvm::enumerate(shapes.dimClasses))
    dimValues[var] = loadIndexed(dimsArg, k, i64());
  for (BlockArgument arg : func.getArguments())
    buffers[arg] = loadIndexed(argsArg, arg.getArgNumber(), ptrTy());
  loadDonatedFlags();
  // (In result order: the IR does not depend on the map's order.)
  for (auto [r, v] :
       llvm::enumerate(func.getBody().front().getTerminator()->getOperands()))
    if (auto it = memory.inPlaceResult.find(v);
        it != memory.inPlaceResult.end() && it->second == r)
      buffers[v] = loadIndexed(resultsArg, r, ptrTy());
    else if (Value split = memory.splitValueOf(r, v))
      buffers[split] = loadIndexed(resultsArg, r, ptrTy());
  emitSizeChecks();
  emitAlignmentChecks();
}

void FunctionLowering::acquireArena() {
  // Arena: the caller's (te_rt_context_set_arena) or allocated.
  SmallVector<Value> slotOffsets;
  Value total = arenaLayout(slotOffsets);
  arena = LLVM::CallOp::create(b, loc, runtime.lookup("te_rt_arena_acquire"),
                               ValueRange{ctxArg, total})
              .getResult();
  // (In plan order: a DenseMap's order would make the IR differ from run
  // to run.)
  for (auto [slot, members] : llvm::enumerate(memory.slots))
    for (Value v : members) {
      if (memory.splitResult.count(v))
        tailBuffers[v] = gep(arena, slotOffsets[slot]);
      else
        buffers[v] = placedBuffer(v, gep(arena, slotOffsets[slot]));
    }

  // Failure exit: free the arena, return the status.
  failBlock = new Block();
  entry.getBody().push_back(failBlock);
  Value status = failBlock->addArgument(i32(), loc);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(failBlock);
    LLVM::CallOp::create(b, loc, runtime.lookup("te_rt_arena_release"),
                         ValueRange{ctxArg, arena});
    LLVM::ReturnOp::create(b, loc, status);
  }
  Value allocFailed = LLVM::ICmpOp::create(
      b, loc, LLVM::ICmpPredicate::eq, arena, nullPtr());
  Block *next = b.getInsertionBlock()->splitBlock(b.getInsertionPoint());
  b.setInsertionPointToEnd(next->getPrevNode());
  LLVM::CondBrOp::create(b, loc, allocFailed, failBlock, ValueRange{c32(1)},
                         next, ValueRange{});
  b.setInsertionPointToStart(next);
}

void FunctionLowering::buildEntryEpilogue(func::ReturnOp ret) {
  // Results not computed in place are copied out, after the branches.
  loc = ret.getLoc();
  closeBranches();
  for (auto [r, v] : llvm::enumerate(ret.getOperands())) {
    if (!memory.copiedOut(r, v))
      continue;
    call("te_rt_copy", {ctxArg, loadIndexed(resultsArg, r, ptrTy()), ptr(v),
                        bytes(v)});
  }
  LLVM::CallOp::create(b, loc, runtime.lookup("te_rt_arena_release"),
                       ValueRange{ctxArg, arena});
  LLVM::ReturnOp::create(b, loc, c32(0));
}

LogicalResult FunctionLowering::run() {
  indexPatterns();
  if (!func.getBody().hasOneBlock())
    return func.emitError("te-lower-to-runtime: functions must have one block");
  if (failed(checkValueTypes()))
    return failure();
  if (failed(shapes.run(func)) || failed(memory.run(func)))
    return failure();
  findStateInPlace();

  // The entry point: its checks, the arena, the body in order, the results.
  OpBuilder::InsertionGuard guard(b);
  planEarlyZeroing();
  buildEntryPrologue();
  acquireArena();
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (failed(lowerBody()))
    return failure();
  buildEntryEpilogue(ret);
  if (outlinedAny)
    localizeBuffers();

  buildArenaBytesFunction();
  buildInfo(ret);
  return success();
}

void FunctionLowering::loadDonatedFlags() {
  if (memory.donors.empty())
    return;
  // (Declared here: libraries without donors do not declare it.)
  auto &fn = runtime["te_rt_arg_donated"];
  if (!fn) {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(module.getBody());
    fn = LLVM::LLVMFuncOp::create(
        b, module.getLoc(), "te_rt_arg_donated",
        runtimeFunctionType(ctx, "te_rt_arg_donated"));
  }
  for (BlockArgument d : memory.donors) {
    Value flag = LLVM::CallOp::create(b, loc, fn,
                                      ValueRange{ctxArg, c64(d.getArgNumber())})
                     .getResult();
    donatedFlags[d] =
        LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, flag, c32(0));
  }
}

Value FunctionLowering::placedBuffer(Value v, Value arenaAddress) {
  if (auto loan = memory.lenderOf.find(v); loan != memory.lenderOf.end()) {
    Value result = ptr(resultValue(loan->second.result));
    return loan->second.conditional
               ? LLVM::SelectOp::create(b, loc, lentFlag(v), result,
                                        arenaAddress)
                     .getResult()
               : result;
  }
  auto it = memory.donorOf.find(v);
  if (it == memory.donorOf.end())
    return arenaAddress;
  return LLVM::SelectOp::create(b, loc, donatedFlags.lookup(it->second),
                                buffers.lookup(it->second), arenaAddress);
}

Value FunctionLowering::resultValue(unsigned r) {
  return func.getBody().front().getTerminator()->getOperand(r);
}

Value FunctionLowering::lentFlag(Value v) {
  // Whether `v`'s bytes at the call's dims are at most its lender's
  // (unsigned: both are in range after the size checks).
  Value &flag = lentFlags[v];
  if (!flag)
    flag = LLVM::ICmpOp::create(
        b, loc, LLVM::ICmpPredicate::ule, bytes(v),
        bytes(resultValue(memory.lenderOf.lookup(v).result)));
  return flag;
}

Value FunctionLowering::arenaLayout(SmallVectorImpl<Value> &slotOffsets) {
  // Slots sized by their largest member in the arena (a member whose donor
  // is donated is not), 256-byte aligned.
  Value total = c64(0);
  for (auto &members : memory.slots) {
    Value size = c64(0);
    for (Value v : members) {
      auto loan = memory.lenderOf.find(v);
      if (loan != memory.lenderOf.end() && !loan->second.conditional)
        continue; // never in the arena
      Value n = slotBytes(v);
      if (loan != memory.lenderOf.end())
        n = LLVM::SelectOp::create(b, loc, lentFlag(v), c64(0), n);
      else if (auto it = memory.donorOf.find(v); it != memory.donorOf.end())
        n = LLVM::SelectOp::create(b, loc, donatedFlags.lookup(it->second),
                                   c64(0), n);
      size = LLVM::UMaxOp::create(b, loc, size, n);
    }
    slotOffsets.push_back(total);
    total = LLVM::AddOp::create(b, loc, total, alignUp(size));
  }
  return total;
}

void FunctionLowering::buildArenaBytesFunction() {
  Operation *plain = buildArenaBytesFunction(
      ("te_arena_bytes_" + func.getSymName()).str(), /*withDonated=*/false,
      entry);
  if (!memory.donors.empty())
    buildArenaBytesFunction(
        ("te_arena_bytes_donated_" + func.getSymName()).str(),
        /*withDonated=*/true, plain);
}

Operation *FunctionLowering::buildArenaBytesFunction(StringRef name,
                                                     bool withDonated,
                                                     Operation *after) {
  // int64_t te_arena_bytes_<fn>(const int64_t *dims): the arena the entry
  // acquires at `dims` when nothing is donated, or -1 when a dim or an
  // element count is outside what the entry accepts (the same bounds as
  // its size checks); te_arena_bytes_donated_<fn>(dims, donated) with
  // argument k donated when donated[k] != 0 (uint8_t per argument).
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(after);
  loc = func.getLoc();
  SmallVector<Type> params = {ptrTy()};
  if (withDonated)
    params.push_back(ptrTy());
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, name, LLVM::LLVMFunctionType::get(i64(), params));
  Block *body = fn.addEntryBlock(b);
  b.setInsertionPointToStart(body);
  llvm::DenseMap<int, Value> entryDims = std::move(dimValues);
  llvm::DenseMap<Value, Value> entryFlags = std::move(donatedFlags);
  llvm::DenseMap<Value, Value> entryLent = std::move(lentFlags);
  dimValues.clear();
  donatedFlags.clear();
  lentFlags.clear();
  for (auto [k, var] : llvm::enumerate(shapes.dimClasses))
    dimValues[var] = loadIndexed(body->getArgument(0), k, i64());
  for (BlockArgument d : memory.donors)
    donatedFlags[d] =
        withDonated
            ? LLVM::ICmpOp::create(
                  b, loc, LLVM::ICmpPredicate::ne,
                  loadIndexed(body->getArgument(1), d.getArgNumber(),
                              b.getI8Type()),
                  LLVM::ConstantOp::create(b, loc, b.getI8Type(),
                                           b.getI8IntegerAttr(0)))
                  .getResult()
            : LLVM::ConstantOp::create(b, loc, b.getI1Type(),
                                       b.getBoolAttr(false))
                  .getResult();
  Value ok = LLVM::ConstantOp::create(b, loc, b.getI1Type(),
                                      b.getBoolAttr(true));
  forEachSizeCheck([&](Value value, int64_t max, const std::string &) {
    // Unsigned: a negative value is out of range too.
    Value in = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ule, value,
                                    c64(max));
    ok = LLVM::AndOp::create(b, loc, ok, in);
  });
  SmallVector<Value> unused;
  Value total = arenaLayout(unused);
  LLVM::ReturnOp::create(b, loc,
                         LLVM::SelectOp::create(b, loc, ok, total, c64(-1))
                             .getResult());
  dimValues = std::move(entryDims);
  donatedFlags = std::move(entryFlags);
  lentFlags = std::move(entryLent);
  return fn;
}

} // namespace mlir::te::runtime_lowering
