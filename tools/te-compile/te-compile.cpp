//===- te-compile.cpp - ahead-of-time compiler driver -----------*- C++ -*-===//
//
// te-compile IN.mlir -o OUT.so: a torch-mlir export (or te IR) in, a shared
// library with one C entry point per function (plus te_module_info()) and a
// header describing them out. The pipeline: te-import-torch (when the input
// is a torch export), te-apply-recipe, te-generate-backward (--train),
// te-decompose, te-lower-to-runtime, LLVM IR, an object from LLVM's code
// generator, and a link against libte_runtime. With --partition, an export
// that does not import as a whole is split: the raised modules, outlined,
// go into the library and the rest into a residual torch-mlir module that
// calls them (docs/partition.md).
//
//===----------------------------------------------------------------------===//

#include "te/Conversion/ModuleInfo.h"
#include "te/Conversion/Passes.h"
#include "te/Conversion/TorchConversion.h"
#include "te/InitAll.h"
#include "te/Support/InputGuards.h"
#include "te/Transforms/Passes.h"
#include "te/Transforms/Pipeline.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("te-compile options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("OUT.so"), cl::Required,
                                       cl::cat(category));
static cl::opt<std::string>
    recipe("recipe",
           cl::desc("Recipe of every module op: bf16, fp8-delayed, "
                    "fp8-current, fp8-block, mxfp8, nvfp4, or a recipe "
                    "attribute for non-default parameters, e.g. "
                    "'#te.nvfp4<rht = false>' (default: keep the ops' "
                    "recipes; bf16 where none is set)"),
           cl::init(""), cl::cat(category));
static cl::opt<bool> train("train",
                           cl::desc("Emit <fn>_fwd and <fn>_bwd entry points "
                                    "(and keep <fn> for inference)"),
                           cl::cat(category));
static cl::opt<bool> checkpoint(
    "checkpoint",
    cl::desc("Checkpoint every LayerNormMLP (recompute in backward)"),
    cl::cat(category));
static cl::opt<bool> weightCache(
    "weight-cache",
    cl::desc("Also emit <fn>_fwd_cached, which takes the quantized weights "
             "<fn>_fwd saved instead of quantizing them (TE's FP8 weight "
             "cache, is_first_microbatch false; needs --train)"),
    cl::cat(category));
static cl::opt<te::ActEpiloguesOption> gemmActEpilogues(
    "gemm-act-epilogues", cl::ValueOptional, cl::value_desc("off|auto|on"),
    cl::desc("Put GELU into the fprop GEMM's epilogue and its derivative "
             "into the dgrad GEMM's (cuBLASLt GELU_AUX_BIAS / DGELU; "
             "high-precision GEMMs only): off, auto (the default: GEMMs of "
             "a static row count >= --gemm-act-epilogue-min-rows only; on "
             "the H200 the epilogues are faster at many rows, slower at "
             "few) or on (every eligible GEMM; the bare flag means on)"),
    cl::init(te::kDefaultGemmActEpilogues), cl::cat(category));
static cl::opt<int64_t> gemmActEpilogueMinRows(
    "gemm-act-epilogue-min-rows",
    cl::desc("Under --gemm-act-epilogues=auto, the fewest GEMM rows "
             "(tokens) that fold (default 1024)"),
    cl::init(1024), cl::cat(category));
static cl::opt<int64_t> gemmDActEpilogueMaxRows(
    "gemm-dact-epilogue-max-rows",
    cl::desc("The most GEMM rows (tokens) whose dgrad GEMM takes dGELU in "
             "its epilogue (cuBLASLt DGELU) when --gemm-act-epilogues folds "
             "it; above, the plain dgrad GEMM + the fused dbias-dGELU kernel "
             "run (-1: no limit)"),
    cl::init(te::kDefaultDActEpilogueMaxRows), cl::cat(category));
static cl::opt<int64_t> gemmBiasGradEpilogueMaxRows(
    "gemm-bias-grad-epilogue-max-rows",
    cl::desc("The most GEMM rows (tokens) whose bias gradient comes from the "
             "wgrad GEMM's epilogue (cuBLASLt BGRADB); above, te-mlir's "
             "column reduction (or the dact kernel's fused one) computes it "
             "(-1: no limit)"),
    cl::init(te::kDefaultBiasGradEpilogueMaxRows), cl::cat(category));
static cl::opt<int64_t> tensorParallel(
    "tp", cl::value_desc("N"),
    cl::desc("Compile one rank's program of a tensor-parallel group of N "
             "ranks (te-tensor-parallel): LayerNormLinear column-parallel, "
             "LayerNormMLP FC1 column / FC2 row-parallel, collectives through "
             "the runtime's communicator (NCCL on cuda, MPI on cpu); the "
             "model is the single-device one, in global shapes (default 1)"),
    cl::init(1), cl::cat(category));
static cl::opt<bool> sequenceParallel(
    "sequence-parallel",
    cl::desc("With --tp: sequence parallelism (the norm region on the "
             "rank's rows; all-gather before FC1, reduce-scatter after FC2)"),
    cl::cat(category));
static cl::opt<bool> tpReduceParamGrads(
    "tp-reduce-param-grads",
    cl::desc("With --sequence-parallel: all-reduce the norm-weight and "
             "FC2-bias gradients in the backward (default: returned as "
             "partial sums, te.tp_grad = partial, for the caller to sum as "
             "Megatron-LM does)"),
    cl::cat(category));
static cl::opt<bool> strictRecipe(
    "strict-recipe",
    cl::desc("Fail when the recipe cannot apply to a module op (e.g. "
             "fp8-block or mxfp8 with a GEMM dim that is not a multiple of "
             "the block); without it that op runs unquantized with a "
             "warning"),
    cl::init(false), cl::cat(category));

static cl::opt<te::DedupLayersOption> dedupLayers(
    "dedup-layers", cl::value_desc("off|auto|on"),
    cl::desc("Compile each distinct layer once: the runtime calls of a "
             "module op go into a function shared by every identical one "
             "(te-lower-to-runtime dedup-layers): off, auto (the default: "
             "when a layer repeats in its function) or on (every layer)"),
    cl::init(te::kDefaultDedupLayers), cl::cat(category));
static cl::opt<bool> remarks(
    "remarks",
    cl::desc("Print the passes' remarks (fusions that did not apply, "
             "alignment fallbacks); errors and warnings are always printed"),
    cl::cat(category));
static cl::opt<std::string>
    target("target",
           cl::desc("Default backend of the library: cpu, cuda or auto "
                    "(te-run --backend and TE_RT_BACKEND override it)"),
           cl::init("auto"), cl::cat(category));
static cl::opt<std::string>
    arch("arch",
         cl::desc("GPU architecture: sm_90a (Hopper) "
                  "or sm_100a (Blackwell)"),
         cl::init(te::getTargetName(te::kDefaultArch).str()),
         cl::cat(category));
static cl::opt<std::string> emit("emit",
                                 cl::desc("What to write: mlir (LLVM dialect), "
                                          "llvm (LLVM IR), obj or so"),
                                 cl::init("so"), cl::cat(category));
static cl::opt<std::string>
    runtimeDir("runtime-dir",
               cl::desc("Directory of libte_runtime.so (default: ../lib "
                        "next to te-compile, or $TE_RUNTIME_DIR)"),
               cl::init(""), cl::cat(category));

static cl::opt<bool> partition(
    "partition",
    cl::desc("For a torch export that does not import as a whole: compile "
             "the raised modules (outlined, one entry each) and write the "
             "rest as a residual torch-mlir module calling them"),
    cl::cat(category));
static cl::opt<std::string> residualFile(
    "residual",
    cl::desc("With --partition: the residual torch-mlir module (default: "
             "<output stem>.residual.mlir)"),
    cl::value_desc("FILE"), cl::init(""), cl::cat(category));

/// Prints `message` as te-compile's error and returns 1.
static int fail(const llvm::Twine &message) {
  llvm::errs() << "te-compile: error: " << message << "\n";
  return 1;
}

/// True when the module holds torch dialect ops or types (an export).
static bool isTorchExport(ModuleOp module) {
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

static std::string cIdentifier(StringRef s) {
  std::string out;
  for (char c : s)
    out.push_back(llvm::isAlnum(c) ? llvm::toUpper(c) : '_');
  return out;
}

/// OUT.h: the entry points, their argument order, shapes (dynamic dims as
/// the dims array), the saved-bundle layout and recipe state.
static LogicalResult writeHeader(StringRef path, StringRef json) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  if (!parsed)
    return failure();
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file)
    return failure();
  llvm::raw_ostream &os = file->os();
  std::string guard = cIdentifier(llvm::sys::path::filename(path));
  os << "/* Generated by te-compile from " << inputFile
     << ". Do not edit. */\n#ifndef " << guard << "\n#define " << guard
     << "\n\n#include \"te/Runtime/TERuntime.h\"\n\n#ifdef __cplusplus\n"
        "extern \"C\" {\n#endif\n\n"
        "/* JSON description of every entry (the same as this header). */\n"
        "const char *te_module_info(void);\n\n";
  auto shapeStr = [](const llvm::json::Array *shape) {
    std::string s = "[";
    for (auto [i, d] : llvm::enumerate(*shape)) {
      if (i)
        s += ", ";
      if (auto n = d.getAsInteger())
        s += std::to_string(*n);
      else if (auto str = d.getAsString())
        s += str->str();
    }
    return s + "]";
  };
  const llvm::json::Array *entries = parsed->getAsObject()->getArray("entries");
  for (const llvm::json::Value &e : *entries) {
    const llvm::json::Object *o = e.getAsObject();
    StringRef name = *o->getString("name");
    std::string id = cIdentifier(name);
    os << "/* " << name << "\n";
    auto list = [&](StringRef what, const llvm::json::Array *values) {
      os << " * " << what << ":\n";
      for (auto [i, v] : llvm::enumerate(*values)) {
        const llvm::json::Object *t = v.getAsObject();
        os << " *   [" << i << "] " << *t->getString("dtype") << " "
           << shapeStr(t->getArray("shape"));
        // Attributes in a stable (sorted) order.
        std::vector<std::string> keys;
        for (const auto &kv : *t)
          if (StringRef(kv.first).starts_with("te."))
            keys.push_back(kv.first.str());
        llvm::sort(keys);
        for (const std::string &key : keys) {
          if (auto s = t->getString(key))
            os << "  " << key << "=" << *s;
          else
            os << "  " << key;
        }
        os << "\n";
        // A quantized tensor is one buffer: its type and inner tensors at
        // aligned byte offsets (sizes need every dim static; otherwise the
        // offsets follow from the dims at run time).
        if (const llvm::json::Array *inner = t->getArray("inner")) {
          os << " *       " << t->getString("type").value_or("") << "\n";
          int64_t align = t->getInteger("alignment").value_or(256);
          int64_t offset = 0;
          bool known = true; // every size so far static
          for (const llvm::json::Value &part : *inner) {
            const llvm::json::Object *p = part.getAsObject();
            const llvm::json::Array *shape = p->getArray("shape");
            os << " *       " << *p->getString("name") << ": "
               << *p->getString("dtype") << " " << shapeStr(shape);
            if (known)
              os << " at byte " << offset;
            os << "\n";
            int64_t bytes = *p->getString("dtype") == "float32" ? 4 : 1;
            for (const llvm::json::Value &d : *shape) {
              if (std::optional<int64_t> n = d.getAsInteger())
                bytes *= *n;
              else
                known = false;
            }
            offset += llvm::alignTo(bytes, align);
          }
          if (known)
            os << " *       (" << offset << " bytes)\n";
        }
      }
    };
    list("args", o->getArray("args"));
    list("results", o->getArray("results"));
    const llvm::json::Array *dims = o->getArray("dims");
    os << " * dims:";
    if (dims->empty())
      os << " none (static shapes)";
    for (auto [k, d] : llvm::enumerate(*dims))
      os << " d" << k << " = args[" << *d.getAsObject()->getInteger("arg")
         << "].shape[" << *d.getAsObject()->getInteger("dim") << "];";
    os << "\n * planned arena: ";
    if (auto bytes = o->getInteger("arena_bytes"))
      os << *bytes << " bytes";
    else
      os << "depends on the dynamic dims";
    os << "\n */\n#define TE_" << id << "_NUM_ARGS "
       << o->getArray("args")->size() << "\n#define TE_" << id
       << "_NUM_RESULTS " << o->getArray("results")->size() << "\n#define TE_"
       << id << "_NUM_DIMS " << dims->size() << "\n";
    if (auto bytes = o->getInteger("arena_bytes"))
      os << "#define TE_" << id << "_ARENA_BYTES " << *bytes << "\n";
    os << "int32_t " << *o->getString("symbol")
       << "(te_rt_context *ctx, void *const *args, void *const *results,\n"
          "    const int64_t *dims);\n\n";
  }
  os << "#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard << " */\n";
  file->keep();
  return success();
}

//===----------------------------------------------------------------------===//
// --partition
//===----------------------------------------------------------------------===//

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

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // MLIR's pass-manager and timing options (--mlir-timing,
  // --mlir-pass-statistics, --mlir-print-ir-after-all, ...), hidden from
  // --help with the other unrelated options.
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "te-compile: torch-mlir export or te IR -> shared library + header\n");

  if (emit != "mlir" && emit != "llvm" && emit != "obj" && emit != "so")
    return fail("--emit must be mlir, llvm, obj or so, got '" + emit + "'");
  if (target != "cpu" && target != "cuda" && target != "auto")
    return fail("--target must be cpu, cuda or auto, got '" + target + "'");
  std::optional<te::TargetArch> archClass = te::getArchOfTarget(arch);
  if (!archClass)
    return fail("--arch must be sm_90a or sm_100a, got '" + arch + "'");

  DialectRegistry registry;
  te::registerAllTEDialects(registry);
  te::torch_c::registerTorchConversionDialect(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Without --remarks the remarks are dropped: do not print an operation
  // into each (the "see current operation" note numbers the names of its
  // whole function, per remark: quadratic over a model of many layers).
  if (!remarks)
    context.printOpOnDiagnostic(false);

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  // Remarks only on request (registered last, so it runs first).
  ScopedDiagnosticHandler remarkFilter(&context, [](Diagnostic &diag) {
    return success(!remarks &&
                   diag.getSeverity() == DiagnosticSeverity::Remark);
  });
  std::string error;
  auto input = openInputFile(inputFile, &error);
  if (!input)
    return fail(error);
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  // What crashes upstream MLIR is refused first (te/Support/InputGuards.h):
  // the text before the parse, the IR before the verifier.
  if (failed(te::checkInputText(sourceMgr, sourceMgr.getMainFileID())))
    return fail("cannot parse " + inputFile);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(
      sourceMgr, ParserConfig(&context, /*verifyAfterParse=*/false));
  if (!module || failed(te::checkBeforeVerify(*module)) ||
      failed(verify(*module)))
    return fail("cannot parse " + inputFile);

  // --checkpoint without --train would silently do nothing.
  if (checkpoint && !train)
    return fail("--checkpoint needs --train");
  if (weightCache && !train)
    return fail("--weight-cache needs --train");
  if (tensorParallel < 1 || tensorParallel > te::kMaxTensorParallelSize)
    return fail("--tp must be in [1, " +
                std::to_string(te::kMaxTensorParallelSize) + "], got " +
                std::to_string(tensorParallel));
  if (sequenceParallel && tensorParallel == 1)
    return fail("--sequence-parallel needs --tp N with N > 1");
  if (tpReduceParamGrads && !sequenceParallel)
    return fail("--tp-reduce-param-grads needs --sequence-parallel");
  if (!residualFile.empty() && !partition)
    return fail("--residual needs --partition");
  // --mlir-timing: the passes, then the LLVM phases, in one report.
  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();

  // A torch export is imported first, on its own: what te-import-torch
  // leaves decides between one library and a partition.
  OwningOpRef<ModuleOp> residual;
  SmallVector<std::string> raised;
  unsigned torchOpsLeft = 0;
  if (isTorchExport(*module)) {
    PassManager importPm(&context);
    if (failed(applyPassManagerCLOptions(importPm)))
      return fail("bad pass manager options");
    importPm.enableTiming(timing);
    importPm.addPass(te::createTEImportTorchPass());
    // The reason of each op left, by location (te-import-torch's remarks).
    DenseMap<const void *, std::string> reasons;
    {
      ScopedDiagnosticHandler capture(&context, [&](Diagnostic &diag) {
        if (diag.getSeverity() == DiagnosticSeverity::Remark)
          reasons.try_emplace(diag.getLocation().getAsOpaquePointer(),
                              diag.str());
        return failure(); // printed (or not) by the handlers above
      });
      if (failed(importPm.run(*module)))
        return fail("compilation of " + inputFile + " failed (see above)");
    }
    Operation *firstLeft = nullptr;
    module->walk([&](Operation *op) {
      if (isComputingTorchOp(op)) {
        if (!firstLeft)
          firstLeft = op;
        ++torchOpsLeft;
      }
    });
    if (isTorchExport(*module) && !partition) {
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
        firstLeft->emitError()
            << "te-compile: " << why << " (" << torchOpsLeft << " torch op"
            << (torchOpsLeft == 1 ? "" : "s") << " left in the module)" << hint;
      } else {
        module->emitError() << "te-compile: torch types are left after "
                               "te-import-torch"
                            << hint;
      }
      return fail("cannot compile " + inputFile +
                  " as a whole: it is not fully raised to te ops");
    }
    if (!isTorchExport(*module) && partition)
      llvm::errs() << "te-compile: --partition: " << inputFile
                   << " is raised as a whole; no residual module written\n";
    if (isTorchExport(*module)) {
      PassManager outlinePm(&context);
      if (failed(applyPassManagerCLOptions(outlinePm)))
        return fail("bad pass manager options");
      outlinePm.addPass(te::createTEOutlineRaisedPass());
      if (failed(outlinePm.run(*module)))
        return fail("compilation of " + inputFile + " failed (see above)");
      // The library: the functions on builtin tensors; the residual: the
      // torch ones, calling the library's.
      residual = module->clone();
      llvm::StringMap<FunctionType> entries;
      for (auto func :
           llvm::make_early_inc_range(module->getOps<func::FuncOp>())) {
        if (hasTorch(func)) {
          func.erase();
        } else if (!func.isExternal()) {
          raised.push_back(func.getName().str());
          entries[func.getName()] = func.getFunctionType();
        }
      }
      for (auto func :
           llvm::make_early_inc_range(residual->getOps<func::FuncOp>()))
        if (!hasTorch(func))
          func.erase();
      if (raised.empty())
        return fail("--partition: te-import-torch raised no module of " +
                    inputFile + "; there is nothing to compile");
      if (failed(rewriteResidual(*residual, entries)) ||
          failed(verify(*residual)))
        return fail("cannot write the residual module of " + inputFile);
    }
  }

  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return fail("bad pass manager options");
  pm.enableTiming(timing);
  te::TEPipelineOptions options;
  options.importTorch = false; // done above
  options.recipe = recipe;
  options.train = train;
  options.checkpoint = checkpoint;
  options.weightCache = weightCache;
  // A bare --gemm-act-epilogues (no value) means on.
  te::ActEpiloguesOption actMode = gemmActEpilogues;
  if (!actMode.isValid() && actMode.spelling().empty())
    actMode = te::ActEpilogues::On;
  if (!actMode.isValid())
    return fail("--gemm-act-epilogues must be off, auto or on, got '" +
                actMode.spelling() + "'");
  if (gemmActEpilogueMinRows < 0)
    return fail("--gemm-act-epilogue-min-rows must be >= 0");
  if (gemmDActEpilogueMaxRows < -1)
    return fail("--gemm-dact-epilogue-max-rows must be >= 0 (or -1: no "
                "limit)");
  if (gemmBiasGradEpilogueMaxRows < -1)
    return fail("--gemm-bias-grad-epilogue-max-rows must be >= 0 (or -1: no "
                "limit)");
  if (!dedupLayers.isValid())
    return fail("--dedup-layers must be off, auto or on, got '" +
                dedupLayers.spelling() + "'");
  options.dedupLayers = dedupLayers;
  options.gemmActEpilogues = actMode;
  options.gemmActEpilogueMinRows = gemmActEpilogueMinRows;
  options.gemmDActEpilogueMaxRows = gemmDActEpilogueMaxRows;
  options.gemmBiasGradEpilogueMaxRows = gemmBiasGradEpilogueMaxRows;
  options.arch = *archClass;
  options.strictRecipe = strictRecipe;
  options.tp = tensorParallel;
  options.sequenceParallel = sequenceParallel;
  options.tpReduceParamGrads = tpReduceParamGrads;
  te::buildTEPipeline(pm, options);
  if (failed(pm.run(*module)))
    return fail("compilation of " + inputFile + " failed (see above)");

  if (residual) {
    std::string path = residualFile;
    if (path.empty()) {
      SmallString<256> p(outputFile);
      llvm::sys::path::replace_extension(p, "residual.mlir");
      path = p.str().str();
    }
    auto out = openOutputFile(path, &error);
    if (!out)
      return fail(error);
    residual->print(out->os());
    out->keep();
    SmallString<256> header(outputFile);
    llvm::sys::path::replace_extension(header, "h");
    unsigned regions = 0; // the entries the residual calls
    for (auto func : residual->getOps<func::FuncOp>())
      regions += func.isExternal();
    llvm::errs() << "te-compile: --partition: " << regions << " region"
                 << (regions == 1 ? "" : "s") << " raised; library entries ("
                 << llvm::join(raised, ", ") << ") in " << outputFile;
    if (emit == "so")
      llvm::errs() << " (+ " << header << ")";
    llvm::errs() << "; " << torchOpsLeft << " torch op"
                 << (torchOpsLeft == 1 ? "" : "s") << " left in " << path
                 << (train ? " (it calls the inference entries <name>)" : "")
                 << "\n";
  }

  // The default backend goes into the module description.
  std::string info = te::getModuleInfo(*module);
  if (auto parsed = llvm::json::parse(info)) {
    parsed->getAsObject()->try_emplace("target", std::string(target));
    parsed->getAsObject()->try_emplace("arch", std::string(arch));
    parsed->getAsObject()->try_emplace("source", std::string(inputFile));
    std::string updated;
    llvm::raw_string_ostream os(updated);
    os << *parsed;
    info = updated;
    if (failed(te::setModuleInfo(*module, updated)))
      return fail("internal: no module description to amend");
  } else {
    llvm::consumeError(parsed.takeError());
    return fail("internal: no module description");
  }

  if (emit == "mlir") {
    auto output = openOutputFile(outputFile, &error);
    if (!output)
      return fail(error);
    module->print(output->os());
    output->keep();
    return 0;
  }

  llvm::LLVMContext llvmContext;
  TimingScope translateTiming = timing.nest("LLVM IR translation");
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, "te-mlir");
  if (!llvmModule)
    return fail("translation to LLVM IR failed");
  translateTiming.stop();

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget)
    return fail("no LLVM target for " + triple.str() + ": " + error);
  std::unique_ptr<llvm::TargetMachine> machine(llvmTarget->createTargetMachine(
      triple, "generic", "", llvm::TargetOptions(), llvm::Reloc::PIC_));
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());
  auto optimize = makeOptimizingTransformer(2, 0, machine.get());
  TimingScope optTiming = timing.nest("LLVM optimization (O2)");
  if (llvm::Error err = optimize(llvmModule.get()))
    return fail("LLVM optimization failed: " + llvm::toString(std::move(err)));
  optTiming.stop();

  if (emit == "llvm") {
    auto output = openOutputFile(outputFile, &error);
    if (!output)
      return fail(error);
    llvmModule->print(output->os(), nullptr);
    output->keep();
    return 0;
  }

  // The object: OUT itself for --emit=obj, a temporary for --emit=so.
  SmallString<128> objPath(outputFile);
  if (emit == "so") {
    if (llvm::sys::fs::createTemporaryFile("te-compile", "o", objPath))
      return fail("cannot create a temporary object file");
  }
  {
    TimingScope codegenTiming = timing.nest("LLVM code generation");
    std::error_code ec;
    llvm::raw_fd_ostream obj(objPath, ec);
    if (ec)
      return fail("cannot write " + objPath + ": " + ec.message());
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, obj, nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return fail("the target cannot emit object files");
    codegen.run(*llvmModule);
  }
  if (emit == "obj")
    return 0;

  // Link against libte_runtime.
  std::string libDir = runtimeDir;
  if (libDir.empty())
    if (const char *env = std::getenv("TE_RUNTIME_DIR"))
      libDir = env;
  if (libDir.empty()) {
    std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&fail);
    SmallString<256> dir(
        llvm::sys::path::parent_path(llvm::sys::path::parent_path(self)));
    llvm::sys::path::append(dir, "lib");
    libDir = dir.str().str();
  }
  SmallString<256> runtimeLib(libDir);
  llvm::sys::path::append(runtimeLib, "libte_runtime.so");
  if (!llvm::sys::fs::exists(runtimeLib))
    return fail("cannot find " + runtimeLib +
                " (set --runtime-dir or TE_RUNTIME_DIR)");
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    cc = llvm::sys::findProgramByName("c++");
  if (!cc)
    return fail("no C compiler driver (cc) on PATH to link the library");
  std::string rpath = "-Wl,-rpath," + libDir;
  SmallVector<StringRef> linkArgs = {*cc,     "-shared",  "-o", outputFile,
                                     objPath, runtimeLib, rpath};
  std::string linkError;
  TimingScope linkTiming = timing.nest("link");
  int rc = llvm::sys::ExecuteAndWait(*cc, linkArgs, std::nullopt, {}, 0, 0,
                                     &linkError);
  linkTiming.stop();
  llvm::sys::fs::remove(objPath);
  if (rc != 0)
    return fail("linking " + outputFile + " failed" +
                (linkError.empty() ? "" : ": " + linkError));

  // The header beside the library.
  SmallString<256> header(outputFile);
  llvm::sys::path::replace_extension(header, "h");
  if (failed(writeHeader(header, info)))
    return fail("cannot write " + header);
  return 0;
}
