//===- Options.cpp - te-compile's command line ------------------*- C++ -*-===//
//
// te-compile's flags: its own (input, output, --target, --emit, ...) and
// the pipeline's, generated from te/Transforms/PipelineOptions.def and
// copied into TEPipelineOptions in one generated loop.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::te;
using namespace mlir::te::compile;
namespace cl = llvm::cl;

static cl::OptionCategory category("te-compile options");
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input.mlir>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("OUT.so"), cl::Required,
                                       cl::cat(category));

// The pipeline's flags, from their one declaration: --FLAG is MemberFlag.
#define TE_PIPELINE_OPTION(MEMBER, FLAG, TYPE, DEFAULT, VALUE, HELP,           \
                           FLAG_HELP)                                          \
  static cl::opt<TYPE> MEMBER##Flag(FLAG, cl::value_desc(VALUE),               \
                                    cl::desc(FLAG_HELP), cl::init(DEFAULT),    \
                                    cl::cat(category));
#include "te/Transforms/PipelineOptions.def"

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

int te::compile::fail(const llvm::Twine &message) {
  llvm::errs() << "te-compile: error: " << message << "\n";
  return 1;
}

int te::compile::parseCommandLine(int argc, char **argv, Options &options) {
  // A bare --gemm-act-epilogues (no value) means on (checkPipelineFlags).
  gemmActEpiloguesFlag.setValueExpectedFlag(cl::ValueOptional);
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

  options.argv0 = argv[0];
  options.inputFile = inputFile;
  options.outputFile = outputFile;
  options.target = target;
  options.arch = arch;
  options.emit = emit;
  options.runtimeDir = runtimeDir;
  options.residualFile = residualFile;
  options.remarks = remarks;
  options.partition = partition;
  TEPipelineOptions &pipeline = options.pipeline;
  pipeline.importTorch = false; // te-compile imports first, on its own
#define TE_PIPELINE_OPTION(MEMBER, FLAG, TYPE, DEFAULT, VALUE, HELP,           \
                           FLAG_HELP)                                          \
  pipeline.MEMBER = MEMBER##Flag.getValue();
#include "te/Transforms/PipelineOptions.def"
  pipeline.arch = *archClass;
  return 0;
}

int te::compile::checkFlagCombinations(const Options &options) {
  const TEPipelineOptions &pipeline = options.pipeline;
  // --checkpoint without --train would silently do nothing.
  if (pipeline.checkpoint && !pipeline.train)
    return fail("--checkpoint needs --train");
  if (pipeline.weightCache && !pipeline.train)
    return fail("--weight-cache needs --train");
  if (pipeline.tp < 1 || pipeline.tp > te::kMaxTensorParallelSize)
    return fail("--tp must be in [1, " +
                std::to_string(te::kMaxTensorParallelSize) + "], got " +
                std::to_string(pipeline.tp.getValue()));
  if (pipeline.sequenceParallel && pipeline.tp == 1)
    return fail("--sequence-parallel needs --tp N with N > 1");
  if (pipeline.tpReduceParamGrads && !pipeline.sequenceParallel)
    return fail("--tp-reduce-param-grads needs --sequence-parallel");
  if (!options.residualFile.empty() && !options.partition)
    return fail("--residual needs --partition");
  return 0;
}

int te::compile::checkPipelineFlags(Options &options) {
  TEPipelineOptions &pipeline = options.pipeline;
  // A bare --gemm-act-epilogues (no value) means on.
  te::ActEpiloguesOption actMode = pipeline.gemmActEpilogues;
  if (!actMode.isValid() && actMode.spelling().empty())
    actMode = te::ActEpilogues::On;
  if (!actMode.isValid())
    return fail("--gemm-act-epilogues must be off, auto or on, got '" +
                actMode.spelling() + "'");
  if (pipeline.gemmActEpilogueMinRows < 0)
    return fail("--gemm-act-epilogue-min-rows must be >= 0");
  if (pipeline.gemmDActEpilogueMaxRows < -1)
    return fail("--gemm-dact-epilogue-max-rows must be >= 0 (or -1: no "
                "limit)");
  if (pipeline.gemmBiasGradEpilogueMaxRows < -1)
    return fail("--gemm-bias-grad-epilogue-max-rows must be >= 0 (or -1: no "
                "limit)");
  if (pipeline.branchMaxRows < 0)
    return fail("--branch-max-rows must be >= 0 (0: no branch)");
  const te::DedupLayersOption &dedup = pipeline.dedupLayers;
  if (!dedup.isValid())
    return fail("--dedup-layers must be off, auto or on, got '" +
                dedup.spelling() + "'");
  pipeline.gemmActEpilogues = actMode;
  return 0;
}
