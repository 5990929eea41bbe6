//===- Partition.cpp - te-compile's torch import and --partition -*- C++
//-*-===//
//
// A torch export is imported first, on its own: what te-import-torch leaves
// decides between one library and a partition. With --partition the raised
// modules, outlined, go into the library and the rest into a residual
// torch-mlir module that calls them (docs/partition.md).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "te/Conversion/Passes.h"
#include "te/Conversion/TorchConversion.h"
#include "te/Dialect/Torch/TorchDialect.h"
#include "te/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace mlir::te::compile;

/// True when the module holds torch dialect ops or types (an export).
bool te::compile::isTorchExport(ModuleOp module) {
  bool torch = false;
  module.walk([&](Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "torch")
      torch = true;
    for (Type t : op->getOperandTypes())
      if (t.getDialect().getNamespace() == "torch")
        torch = true;
  });
  module.walk([&](func::FuncOp f) {
    for (Type t : f.getArgumentTypes())
      if (t.getDialect().getNamespace() == "torch")
        torch = true;
  });
  return torch;
}

static bool isTorchType(Type t) {
  return t.getDialect().getNamespace() == "torch";
}

/// True when `func` still has torch (or torch_c) ops or torch types.
static bool hasTorch(func::FuncOp func) {
  if (llvm::any_of(func.getArgumentTypes(), isTorchType) ||
      llvm::any_of(func.getResultTypes(), isTorchType))
    return true;
  return func
      .walk([&](Operation *op) {
        StringRef ns = op->getName().getDialectNamespace();
        if (ns == "torch" || ns == "torch_c" ||
            llvm::any_of(op->getResultTypes(), isTorchType))
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

/// A torch op that computes (not a constant, list or shape bookkeeping):
/// what te-import-torch remarks on when it leaves one.
static bool isComputingTorchOp(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (op->getName().getDialectNamespace() != "torch")
    return false;
  return !name.starts_with("torch.constant.") &&
         name != "torch.prim.ListConstruct" && name != "torch.symbolic_int" &&
         name != "torch.bind_symbolic_shape" &&
         name != "torch.aten._assert_tensor_metadata" &&
         name != "torch.aten.size.int" && name != "torch.aten.mul.int" &&
         name != "torch.vtensor.literal";
}

/// The !torch.vtensor of a builtin tensor type (null if it has none).
static Type toVTensor(Type t) {
  auto ranked = dyn_cast<RankedTensorType>(t);
  if (!ranked)
    return {};
  return te::torch::ValueTensorType::get(t.getContext(), /*hasSizes=*/true,
                                         ranked.getShape(),
                                         ranked.getElementType());
}

/// Rewrites `residual` (the torch functions, calling the outlined ones on
/// builtin tensors through torch_c bridges) so that each call takes and
/// returns !torch.vtensor, and declares each callee privately with that
/// signature. `entries` maps a library entry to its (builtin) type.
static LogicalResult
rewriteResidual(ModuleOp residual,
                const llvm::StringMap<FunctionType> &entries) {
  MLIRContext *ctx = residual.getContext();
  llvm::SetVector<StringRef> called;
  for (auto func : residual.getOps<func::FuncOp>()) {
    DenseMap<Value, Value> toTorch; // builtin value -> its vtensor
    SmallVector<func::CallOp> calls;
    func.walk([&](func::CallOp call) {
      if (entries.count(call.getCallee()))
        calls.push_back(call);
    });
    for (func::CallOp call : calls) {
      OpBuilder b(call);
      SmallVector<Value> operands;
      for (Value v : call.getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def &&
            def->getName().getStringRef() == te::torch_c::kToBuiltinTensor) {
          operands.push_back(def->getOperand(0));
        } else if (Value t = toTorch.lookup(v)) {
          operands.push_back(t);
        } else if (auto cst = dyn_cast_or_null<arith::ConstantOp>(def);
                   cst && isa<ElementsAttr>(cst.getValue()) &&
                   toVTensor(v.getType())) {
          OperationState state(cst.getLoc(), "torch.vtensor.literal");
          state.addAttribute("value", cst.getValue());
          state.addTypes(toVTensor(v.getType()));
          operands.push_back(b.create(state)->getResult(0));
        } else {
          return call.emitError()
                 << "te-compile: --partition: operand #" << operands.size()
                 << " of the call to @" << call.getCallee()
                 << " is a builtin tensor that does not come from torch";
        }
      }
      SmallVector<Type> resultTypes;
      for (Type t : call.getResultTypes()) {
        Type vt = toVTensor(t);
        if (!vt)
          return call.emitError() << "te-compile: --partition: result type "
                                  << t << " has no !torch.vtensor form";
        resultTypes.push_back(vt);
      }
      auto newCall = func::CallOp::create(b, call.getLoc(), call.getCallee(),
                                          resultTypes, operands);
      called.insert(entries.find(call.getCallee())->first());
      for (auto [oldResult, newResult] :
           llvm::zip(call.getResults(), newCall.getResults())) {
        toTorch[oldResult] = newResult;
        for (Operation *user : llvm::make_early_inc_range(oldResult.getUsers()))
          if (user->getName().getStringRef() ==
              te::torch_c::kFromBuiltinTensor) {
            user->getResult(0).replaceAllUsesWith(newResult);
            user->erase();
          }
      }
    }
    // The old calls (last first: a later one may read an earlier one's
    // results), then the bridges left dead.
    for (func::CallOp call : llvm::reverse(calls)) {
      for (Value r : call.getResults())
        for (Operation *user : r.getUsers())
          if (!isa<func::CallOp>(user) ||
              !entries.count(cast<func::CallOp>(user).getCallee()))
            return user->emitError()
                   << "te-compile: --partition: '" << user->getName()
                   << "' reads a raised module's builtin result";
      call->dropAllUses();
      call.erase();
    }
    bool erased = true;
    while (erased) {
      erased = false;
      func.walk([&](Operation *op) {
        if (op->use_empty() && op->getNumResults() &&
            (te::torch_c::isBridge(op) ||
             (op->isRegistered() && isOpTriviallyDead(op)))) {
          op->erase();
          erased = true;
        }
      });
    }
    WalkResult left = func.walk([&](Operation *op) {
      bool builtin = llvm::any_of(op->getResultTypes(),
                                  [](Type t) { return isa<TensorType>(t); });
      if (te::torch_c::isBridge(op) || builtin) {
        op->emitError() << "te-compile: --partition: '" << op->getName()
                        << "' on builtin tensors is left in the residual "
                           "module";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      return failure();
  }
  // The library entries, declared with their torch signatures.
  OpBuilder b(ctx);
  b.setInsertionPointToStart(residual.getBody());
  for (StringRef name : called) {
    FunctionType type = entries.lookup(name);
    SmallVector<Type> inputs, results;
    for (Type t : type.getInputs())
      inputs.push_back(toVTensor(t));
    for (Type t : type.getResults())
      results.push_back(toVTensor(t));
    if (llvm::is_contained(inputs, Type()) ||
        llvm::is_contained(results, Type()))
      return residual.emitError()
             << "te-compile: --partition: @" << name
             << " has an argument or result that is not a ranked tensor";
    auto decl = func::FuncOp::create(b, residual.getLoc(), name,
                                     FunctionType::get(ctx, inputs, results));
    decl.setPrivate();
  }
  return success();
}

/// The error of a torch export that is not raised as a whole, without
/// --partition: the first op left and why, by te-import-torch's remark.
static void
reportNotRaised(ModuleOp module, Operation *firstLeft, unsigned torchOpsLeft,
                const DenseMap<const void *, std::string> &reasons) {
  std::string hint =
      "; --partition compiles the raised modules and writes the rest as "
      "a residual torch-mlir module (te-opt --te-import-torch=strict=true "
      "reports each op that is not raised as an error)";
  if (firstLeft) {
    auto it = reasons.find(firstLeft->getLoc().getAsOpaquePointer());
    std::string why = it != reasons.end()
                          ? it->second
                          : "te-import-torch left '" +
                                firstLeft->getName().getStringRef().str() +
                                "' as is";
    firstLeft->emitError() << "te-compile: " << why << " (" << torchOpsLeft
                           << " torch op" << (torchOpsLeft == 1 ? "" : "s")
                           << " left in the module)" << hint;
  } else {
    module->emitError() << "te-compile: torch types are left after "
                           "te-import-torch"
                        << hint;
  }
}

/// --partition: outlines the raised modules of `module` and splits it into
/// the library (the functions on builtin tensors) and `result.residual`
/// (the torch ones, calling the library's).
static int splitPartition(ModuleOp module, const Options &options,
                          ImportResult &result) {
  const std::string &inputFile = options.inputFile;
  PassManager outlinePm(module.getContext());
  if (failed(applyPassManagerCLOptions(outlinePm)))
    return fail("bad pass manager options");
  outlinePm.addPass(te::createTEOutlineRaisedPass());
  if (failed(outlinePm.run(module)))
    return fail("compilation of " + inputFile + " failed (see above)");
  // The library: the functions on builtin tensors; the residual: the
  // torch ones, calling the library's.
  result.residual = module.clone();
  llvm::StringMap<FunctionType> entries;
  for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
    if (hasTorch(func)) {
      func.erase();
    } else if (!func.isExternal()) {
      result.raised.push_back(func.getName().str());
      entries[func.getName()] = func.getFunctionType();
    }
  }
  for (auto func :
       llvm::make_early_inc_range(result.residual->getOps<func::FuncOp>()))
    if (!hasTorch(func))
      func.erase();
  if (result.raised.empty())
    return fail("--partition: te-import-torch raised no module of " +
                inputFile + "; there is nothing to compile");
  if (failed(rewriteResidual(*result.residual, entries)) ||
      failed(verify(*result.residual)))
    return fail("cannot write the residual module of " + inputFile);
  return 0;
}

int te::compile::importTorchExport(ModuleOp module, const Options &options,
                                   TimingScope &timing, ImportResult &result) {
  const std::string &inputFile = options.inputFile;
  MLIRContext *context = module.getContext();
  PassManager importPm(context);
  if (failed(applyPassManagerCLOptions(importPm)))
    return fail("bad pass manager options");
  importPm.enableTiming(timing);
  importPm.addPass(te::createTEImportTorchPass());
  // The reason of each op left, by location (te-import-torch's remarks).
  DenseMap<const void *, std::string> reasons;
  {
    ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Remark)
        reasons.try_emplace(diag.getLocation().getAsOpaquePointer(),
                            diag.str());
      return failure(); // printed (or not) by the handlers above
    });
    if (failed(importPm.run(module)))
      return fail("compilation of " + inputFile + " failed (see above)");
  }
  Operation *firstLeft = nullptr;
  module->walk([&](Operation *op) {
    if (isComputingTorchOp(op)) {
      if (!firstLeft)
        firstLeft = op;
      ++result.torchOpsLeft;
    }
  });
  if (isTorchExport(module) && !options.partition) {
    reportNotRaised(module, firstLeft, result.torchOpsLeft, reasons);
    return fail("cannot compile " + inputFile +
                " as a whole: it is not fully raised to te ops");
  }
  if (!isTorchExport(module) && options.partition)
    llvm::errs() << "te-compile: --partition: " << inputFile
                 << " is raised as a whole; no residual module written\n";
  if (isTorchExport(module))
    return splitPartition(module, options, result);
  return 0;
}

int te::compile::writeResidual(const Options &options, ImportResult &result) {
  const std::string &outputFile = options.outputFile;
  std::string path = options.residualFile;
  if (path.empty()) {
    SmallString<256> p(outputFile);
    llvm::sys::path::replace_extension(p, "residual.mlir");
    path = p.str().str();
  }
  std::string error;
  auto out = openOutputFile(path, &error);
  if (!out)
    return fail(error);
  result.residual->print(out->os());
  out->keep();
  SmallString<256> header(outputFile);
  llvm::sys::path::replace_extension(header, "h");
  unsigned regions = 0; // the entries the residual calls
  for (auto func : result.residual->getOps<func::FuncOp>())
    regions += func.isExternal();
  unsigned torchOpsLeft = result.torchOpsLeft;
  llvm::errs() << "te-compile: --partition: " << regions << " region"
               << (regions == 1 ? "" : "s") << " raised; library entries ("
               << llvm::join(result.raised, ", ") << ") in " << outputFile;
  if (options.emit == "so")
    llvm::errs() << " (+ " << header << ")";
  llvm::errs() << "; " << torchOpsLeft << " torch op"
               << (torchOpsLeft == 1 ? "" : "s") << " left in " << path
               << (options.pipeline.train
                       ? " (it calls the inference entries <name>)"
                       : "")
               << "\n";
  return 0;
}
