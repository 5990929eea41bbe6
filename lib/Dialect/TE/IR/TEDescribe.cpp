//===- TEDescribe.cpp - ModuleOpInterface implementations -------*- C++ -*-===//
//
// What each module op produces, quantizes, saves for backward and consumes,
// for its recipe, an architecture class and a mode, following
// TransformerEngine's modules (reference §1.3-1.5, §2.3-2.6, §4).
//
//===----------------------------------------------------------------------===//

#include "te/Dialect/TE/IR/TEOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::te;

#include "te/Dialect/TE/IR/TEOpInterfaces.cpp.inc"

namespace {

/// `t` under another name (a second save of the same tensor).
TensorDesc renamed(TensorDesc t, StringRef name) {
  t.name = name.str();
  return t;
}

/// The role of a quantized tensor decides its format and block layout.
enum class Role { Activation, Weight, Grad };

/// Builds a ModuleDescription for one op. Shapes of activation-like tensors
/// reuse the input's leading dims, so symbolic dims keep the input's names
/// (`d<i>` for dynamic input dim i).
class Describer {
public:
  Describer(Operation *op, Value input, RecipeAttrInterface recipe,
            const DescribeOptions &options)
      : op(op), recipe(recipe), options(options) {
    inputType = cast<RankedTensorType>(input.getType());
    elementType = inputType.getElementType();
    for (unsigned i = 0, e = inputType.getRank() - 1; i < e; ++i)
      leading.push_back(SymDim::dimOf(inputType, i));
    rows = product(leading);
    desc.recipe = recipe.getRecipeName().str();
    desc.effectiveRecipe = desc.recipe;
    auto nvfp4 = dyn_cast<NVFP4RecipeAttr>(recipe);
    rowScaled = nvfp4 && nvfp4.getRowScaled();
  }

  /// Checks the recipe's alignment for every GEMM operand; on a static
  /// violation the op falls back to the unquantized path.
  void
  checkAlignment(ArrayRef<std::pair<StringRef, SmallVector<SymDim>>> operands) {
    if (!recipe.isQuantized())
      return;
    RecipeAlignment align = getRecipeAlignment(recipe);
    llvm::StringSet<> seen;
    for (auto &[name, shape] : operands) {
      SymDim m = product(ArrayRef<SymDim>(shape).drop_back());
      SymDim k = shape.back();
      for (auto [dim, multiple, what] :
           {std::tuple<SymDim, int64_t, StringRef>{m, align.rows, "rows"},
            {k, align.cols, "columns"}}) {
        if (multiple == 1)
          continue;
        if (!dim.isStatic()) {
          if (dim.getCoefficient() % multiple == 0)
            continue; // e.g. d0*8 rows are always a multiple of 8
          std::string check =
              dim.str() + " % " + std::to_string(multiple) + " == 0";
          if (seen.insert(check).second)
            desc.runtimeChecks.push_back(check);
          continue;
        }
        if (dim.getValue() % multiple == 0 || !desc.fallback.empty())
          continue;
        desc.fallback =
            ("recipe " + recipe.getRecipeName() + " needs the " + what +
             " of every GEMM operand divisible by " + std::to_string(multiple) +
             "; " + name + " has " + std::to_string(dim.getValue()) +
             ": this op runs unquantized (bf16 path)")
                .str();
      }
    }
    if (!desc.fallback.empty()) {
      desc.effectiveRecipe = "bf16";
      desc.runtimeChecks.clear();
    }
  }

  bool quantized() const {
    return recipe.isQuantized() && desc.fallback.empty();
  }
  /// TE runs row-scaled NVFP4 with a high-precision backward.
  bool quantizedBackward() const { return quantized() && !rowScaled; }

  SmallVector<SymDim> act(int64_t features) const {
    SmallVector<SymDim> s(leading);
    s.push_back(SymDim(features));
    return s;
  }
  /// [..., features] with dim 0 gathered over a sequence-parallel group
  /// (what a tensor-parallel op computes between its all-gather and its
  /// reduce-scatter).
  SmallVector<SymDim> gathered(int64_t features) const {
    SmallVector<SymDim> s = act(features);
    if (gather > 1 && s.size() >= 2)
      s[0] = s[0] * SymDim(gather);
    return s;
  }
  SmallVector<SymDim> matrix(int64_t r, int64_t c) const {
    return {SymDim(r), SymDim(c)};
  }

  /// Element types are named as PyTorch names them (`float32`, `bfloat16`,
  /// `float16`), like the inner tensors' `uint8`/`float32`.
  TensorDesc highPrecision(StringRef name, SmallVector<SymDim> shape) const {
    std::string dtype = elementType.isF32()    ? "float32"
                        : elementType.isBF16() ? "bfloat16"
                                               : "float16";
    return TensorDesc{name.str(), std::move(shape), dtype,
                      elementType.getIntOrFloatBitWidth() / 8, Type()};
  }
  TensorDesc fp32(StringRef name, SmallVector<SymDim> shape) const {
    return TensorDesc{name.str(), std::move(shape), "float32", 4, Type()};
  }
  TensorDesc quantizedTensor(StringRef name, SmallVector<SymDim> shape,
                             Role role, QuantUsage usage) const {
    SmallVector<int64_t> dims;
    for (const SymDim &d : shape)
      dims.push_back(d.toShapedDim());
    QuantFormat format = role == Role::Grad ? getBackwardFormat(recipe)
                                            : getForwardFormat(recipe);
    bool block2d = false;
    if (auto block = dyn_cast<FP8BlockRecipeAttr>(recipe)) {
      int64_t dim = role == Role::Activation ? block.getXBlockDim()
                    : role == Role::Weight   ? block.getWBlockDim()
                                             : block.getGradBlockDim();
      block2d = dim == 2;
    }
    // NVFP4 (§4.5): 16x16 blocks for weights, the Hadamard transform on the
    // columnwise (wgrad) copies of activations and gradients.
    bool rht = false;
    if (auto nvfp4 = dyn_cast<NVFP4RecipeAttr>(recipe)) {
      block2d = role == Role::Weight && nvfp4.getWeight_2d();
      rht = role != Role::Weight && nvfp4.getRht() &&
            usage != QuantUsage::Rowwise;
    }
    bool swizzled = isa<MXFP8RecipeAttr, NVFP4RecipeAttr>(recipe);
    bool rowScaledHere = rowScaled && role == Role::Activation &&
                         usage != QuantUsage::Columnwise;
    auto type = QuantizedTensorType::get(op->getContext(), dims, format, recipe,
                                         usage, options.arch, block2d, swizzled,
                                         rowScaledHere, rht);
    TensorDesc t{name.str(), std::move(shape),
                 stringifyQuantFormat(format).str(), 0, type};
    return t;
  }

  /// A GEMM operand: quantized with the forward usage (both in training,
  /// rowwise in inference), recorded in the description.
  TensorDesc addQuantized(StringRef name, SmallVector<SymDim> shape, Role role,
                          std::optional<QuantUsage> forced = std::nullopt) {
    // Columnwise copies exist for the backward GEMMs only (not for TE's
    // high-precision backward of row-scaled NVFP4).
    QuantUsage usage = options.training && quantizedBackward()
                           ? QuantUsage::Both
                           : QuantUsage::Rowwise;
    if (forced)
      usage = *forced;
    TensorDesc t = quantizedTensor(name, std::move(shape), role, usage);
    desc.quantized.push_back({roleName(role), t});
    return t;
  }

  /// The forward-usage tensor `full` minus the inner buffers that the saved
  /// columnwise copy keeps: what is freed right after the forward GEMM.
  SymDim transientPart(const TensorDesc &full, const TensorDesc &saved) const {
    auto fullType = cast<QuantizedTensorType>(full.quantized);
    llvm::StringSet<> kept;
    if (auto savedType = dyn_cast_or_null<QuantizedTensorType>(saved.quantized))
      for (const InnerTensor &t : savedType.getInnerTensors())
        kept.insert(t.name);
    SymDim bytes(0);
    for (const InnerTensor &t : fullType.getInnerTensors())
      if (!kept.contains(t.name))
        bytes = bytes + t.bytes();
    return bytes;
  }

  unsigned operandIndex(Value v) const {
    for (OpOperand &operand : op->getOpOperands())
      if (operand.get() == v)
        return operand.getOperandNumber();
    llvm_unreachable("value is not an operand");
  }

  /// An operand's shape, its dynamic dims named by position.
  static SmallVector<SymDim> shapeOf(Value operand) {
    auto type = cast<RankedTensorType>(operand.getType());
    SmallVector<SymDim> shape;
    for (unsigned i = 0, e = type.getRank(); i < e; ++i)
      shape.push_back(SymDim::dimOf(type, i));
    return shape;
  }

  void saveAlias(StringRef name, Value operand) {
    desc.saved.push_back({highPrecision(name, shapeOf(operand)),
                          Alias{Alias::Input, operandIndex(operand)}});
  }
  void save(TensorDesc t, Alias alias = {}) {
    desc.saved.push_back({std::move(t), alias});
  }

  void gradIn(TensorDesc t, StringRef of, bool optional) {
    desc.gradsIn.push_back({std::move(t), of.str(), optional});
  }
  void gradOut(StringRef of, Value operand) {
    desc.gradsOut.push_back(
        {highPrecision(("grad_" + of).str(), shapeOf(operand)), of.str(),
         false});
  }

  /// Delayed scaling's amax history and scales, per direction (§0.2, §4.1):
  /// 3 forward and 2 backward quantizer slots per GEMM.
  void addDelayedScalingState(unsigned numGemms) {
    auto delayed = dyn_cast<FP8DelayedRecipeAttr>(recipe);
    if (!delayed || !quantized())
      return;
    int64_t len = delayed.getAmaxHistoryLen();
    auto add = [&](StringRef dir, int64_t slots) {
      desc.state.push_back(
          {fp32(("amax_history_" + dir).str(), matrix(len, slots))});
      desc.state.push_back({fp32(("scale_" + dir).str(), {SymDim(slots)})});
    };
    add("fwd", 3 * numGemms);
    if (options.training)
      add("bwd", 2 * numGemms);
  }

  static const char *roleName(Role role) {
    switch (role) {
    case Role::Activation:
      return "activation";
    case Role::Weight:
      return "weight";
    case Role::Grad:
      return "grad";
    }
    llvm_unreachable("unknown role");
  }

  Operation *op;
  RecipeAttrInterface recipe;
  DescribeOptions options;
  RankedTensorType inputType;
  Type elementType;
  SmallVector<SymDim> leading;
  SymDim rows;
  bool rowScaled = false;
  /// The sequence-parallel group size (1 without sequence parallelism).
  int64_t gather = 1;
  ModuleDescription desc;
};

/// Norm outputs and statistics shared by the two LayerNorm modules. Returns
/// the description of the (possibly quantized) norm output used by the GEMM.
struct NormParts {
  TensorDesc stats[2];
  unsigned numStats;
};

NormParts normStatistics(Describer &d, NormalizationKind kind) {
  NormParts parts{{d.fp32("mu", {d.rows}), d.fp32("rsigma", {d.rows})}, 2};
  if (kind == NormalizationKind::RMSNorm) {
    parts.stats[0] = parts.stats[1];
    parts.numStats = 1;
  }
  return parts;
}

} // namespace

//===----------------------------------------------------------------------===//
// LayerNormLinearOp
//===----------------------------------------------------------------------===//

ModuleDescription LayerNormLinearOp::describe(const DescribeOptions &options) {
  Describer d(*this, getInput(), getRecipeOrDefault(), options);
  if (TensorParallelAttr tp = getTpAttr(); tp && tp.getSequenceParallel())
    d.gather = tp.getSize();
  int64_t k = getInput().getType().getShape().back();
  int64_t n = getWeight().getType().getDimSize(0);
  bool returnsNorm = getReturnLayernormOutput();

  SmallVector<std::pair<StringRef, SmallVector<SymDim>>> gemmOperands = {
      {"ln_out", d.gathered(k)}, {"weight", d.matrix(n, k)}};
  if (options.training)
    gemmOperands.push_back({"grad_output", d.gathered(n)});
  d.checkAlignment(gemmOperands);

  d.desc.outputs.push_back(d.highPrecision("output", d.gathered(n)));
  if (returnsNorm)
    d.desc.outputs.push_back(d.highPrecision("ln_output", d.act(k)));

  NormParts stats = normStatistics(d, getNormalization());
  TensorDesc lnOutHP = d.highPrecision("ln_out", d.act(k));
  SymDim workspace(0);
  if (d.quantized()) {
    // Under sequence parallelism the norm output is quantized after its
    // all-gather (the group's amax) and saved gathered.
    TensorDesc lnOut =
        d.addQuantized("ln_out", d.gathered(k), Role::Activation);
    TensorDesc weight = d.addQuantized("weight", d.matrix(n, k), Role::Weight);
    if (options.training) {
      if (d.quantizedBackward()) {
        d.addQuantized("grad_output", d.gathered(n), Role::Grad);
        // TE §1.4: the norm output keeps only its columnwise copy (for the
        // wgrad GEMM); the weight workspace keeps both usages
        // (update_usage(columnwise_usage=True) adds, it does not drop).
        // (save_rowwise: both copies, for a dequantized backward override.)
        TensorDesc savedLn =
            getSaveRowwise() ? lnOut
                             : d.quantizedTensor("ln_out", d.gathered(k),
                                                 Role::Activation,
                                                 QuantUsage::Columnwise);
        TensorDesc savedW = weight;
        workspace = d.transientPart(lnOut, savedLn);
        d.saveAlias("input", getInput());
        d.saveAlias("ln_weight", getLnWeight());
        d.save(savedW);
        d.save(savedLn);
      } else {
        // Row-scaled NVFP4: high-precision backward on saved HP tensors.
        // (save_rowwise: the GEMM's row-scaled operands are saved too, not
        // transient: TE's dequantized backward override reads them instead
        // of the HP ones.)
        workspace =
            getSaveRowwise() ? SymDim(0) : lnOut.bytes() + weight.bytes();
        d.saveAlias("input", getInput());
        d.saveAlias("ln_weight", getLnWeight());
        d.saveAlias("weight", getWeight());
        d.save(lnOutHP, returnsNorm ? Alias{Alias::Output, 1} : Alias{});
        if (getSaveRowwise()) {
          d.save(renamed(lnOut, "ln_out_rowwise"));
          d.save(renamed(weight, "weight_rowwise"));
        }
      }
    } else {
      workspace = lnOut.bytes() + weight.bytes();
    }
  } else if (options.training) {
    d.saveAlias("input", getInput());
    d.saveAlias("ln_weight", getLnWeight());
    d.saveAlias("weight", getWeight());
    d.save(lnOutHP, returnsNorm ? Alias{Alias::Output, 1} : Alias{});
  } else if (!returnsNorm) {
    workspace = lnOutHP.bytes();
  }
  for (unsigned i = 0; i < stats.numStats; ++i) {
    if (options.training)
      d.save(stats.stats[i]);
    else
      workspace = workspace + stats.stats[i].bytes();
  }
  d.desc.workspaceBytes = workspace;

  if (options.training) {
    d.gradIn(d.highPrecision("grad_output", d.gathered(n)), "output", false);
    if (returnsNorm)
      d.gradIn(d.highPrecision("grad_ln_output", d.act(k)), "ln_output", true);
    d.gradOut("input", getInput());
    d.gradOut("ln_weight", getLnWeight());
    if (getLnBias())
      d.gradOut("ln_bias", getLnBias());
    d.gradOut("weight", getWeight());
    if (getBias())
      d.gradOut("bias", getBias());
  }
  d.addDelayedScalingState(/*numGemms=*/1);
  return d.desc;
}

//===----------------------------------------------------------------------===//
// LayerNormMLPOp
//===----------------------------------------------------------------------===//

ModuleDescription LayerNormMLPOp::describe(const DescribeOptions &options) {
  Describer d(*this, getInput(), getRecipeOrDefault(), options);
  if (TensorParallelAttr tp = getTpAttr(); tp && tp.getSequenceParallel())
    d.gather = tp.getSize();
  int64_t h = getInput().getType().getShape().back();
  int64_t f1 = getFc1Weight().getType().getDimSize(0);
  int64_t f = getFfnSize();
  bool returnsNorm = getReturnLayernormOutput();
  bool checkpointed = getCheckpoint() && options.training;

  SmallVector<std::pair<StringRef, SmallVector<SymDim>>> gemmOperands = {
      {"ln_out", d.gathered(h)},
      {"fc1_weight", d.matrix(f1, h)},
      {"act_out", d.gathered(f)},
      {"fc2_weight", d.matrix(h, f)}};
  if (options.training) {
    gemmOperands.push_back({"fc2_grad_output", d.gathered(h)});
    gemmOperands.push_back({"fc1_grad_output", d.gathered(f1)});
  }
  d.checkAlignment(gemmOperands);

  d.desc.outputs.push_back(d.highPrecision("output", d.act(h)));
  if (returnsNorm)
    d.desc.outputs.push_back(d.highPrecision("ln_output", d.act(h)));

  NormParts stats = normStatistics(d, getNormalization());
  TensorDesc lnOutHP = d.highPrecision("ln_out", d.act(h));
  TensorDesc fc1Out = d.highPrecision("fc1_out", d.gathered(f1));
  TensorDesc actOutHP = d.highPrecision("act_out", d.gathered(f));
  Alias lnAlias = returnsNorm ? Alias{Alias::Output, 1} : Alias{};
  SymDim workspace(0);
  // What the backward adds to the saved act_out (its columnwise copy when
  // the forward kept the rowwise one only).
  SymDim actTransient(0);

  // Forward tensors and their bytes if nothing is kept.
  SmallVector<TensorDesc> forwardTensors;
  if (d.quantized()) {
    // With checkpointing the activations are recomputed for the backward:
    // the forward quantizes them rowwise only.
    std::optional<QuantUsage> actUsage;
    if (checkpointed)
      actUsage = QuantUsage::Rowwise;
    forwardTensors.push_back(
        d.addQuantized("ln_out", d.gathered(h), Role::Activation, actUsage));
    forwardTensors.push_back(
        d.addQuantized("fc1_weight", d.matrix(f1, h), Role::Weight));
    // TE §0.2, §2.5: per-tensor FP8 sets FC2's input quantizer rowwise only
    // when the columnwise copy is a transpose (Hopper); the backward makes
    // it just before FC2's wgrad (update_usage(columnwise_usage=True)).
    TensorDesc actCol = d.quantizedTensor("act_out", d.gathered(f),
                                          Role::Activation,
                                          QuantUsage::Columnwise);
    if (options.training && !checkpointed && d.quantizedBackward() &&
        cast<QuantizedTensorType>(actCol.quantized).hasTransposedColumnwise())
      actUsage = QuantUsage::Rowwise;
    forwardTensors.push_back(
        d.addQuantized("act_out", d.gathered(f), Role::Activation, actUsage));
    actTransient = d.transientPart(actCol, forwardTensors[2]);
    forwardTensors.push_back(
        d.addQuantized("fc2_weight", d.matrix(h, f), Role::Weight));
    if (options.training && d.quantizedBackward()) {
      d.addQuantized("fc2_grad_output", d.gathered(h), Role::Grad);
      d.addQuantized("fc1_grad_output", d.gathered(f1), Role::Grad);
    }
  } else {
    if (!returnsNorm)
      forwardTensors.push_back(lnOutHP);
    forwardTensors.push_back(actOutHP);
  }

  if (!options.training || checkpointed) {
    // Nothing but the inputs is kept: every intermediate is transient.
    for (const TensorDesc &t : forwardTensors)
      workspace = workspace + t.bytes();
    workspace = workspace + fc1Out.bytes();
    for (unsigned i = 0; i < stats.numStats; ++i)
      workspace = workspace + stats.stats[i].bytes();
    if (checkpointed) {
      // TE §2.6: only the inputs and parameters are saved.
      d.saveAlias("input", getInput());
      d.saveAlias("ln_weight", getLnWeight());
      if (getLnBias())
        d.saveAlias("ln_bias", getLnBias());
      d.saveAlias("fc1_weight", getFc1Weight());
      if (getFc1Bias())
        d.saveAlias("fc1_bias", getFc1Bias());
      d.saveAlias("fc2_weight", getFc2Weight());
      if (getFc2Bias())
        d.saveAlias("fc2_bias", getFc2Bias());
      // Delayed scaling: the recompute quantizes with the forward's scales
      // (TE restores the forward FP8 meta), so they are kept too.
      if (getScales())
        d.desc.saved.push_back(
            {d.fp32("scales", {SymDim(6)}),
             Alias{Alias::Input, d.operandIndex(getScales())}});
    }
  } else {
    d.saveAlias("input", getInput());
    d.saveAlias("ln_weight", getLnWeight());
    if (d.quantizedBackward()) {
      // TE §2.4: LayerNormMLP saves the quantized weights and activation
      // output as they are (per-tensor FP8 on Hopper quantizes act_out
      // rowwise only, above; its transpose is the backward's transient).
      // The norm output keeps its columnwise copy only, as LayerNormLinear's
      // (§1.4; TE's LayerNormMLP keeps both): FC1's wgrad reads nothing
      // else. The forward writes that copy straight into the saved result
      // (a split result of the memory plan) and its rowwise copy, FC1's
      // operand, is transient.
      TensorDesc savedLn = d.quantizedTensor("ln_out", d.gathered(h),
                                             Role::Activation,
                                             QuantUsage::Columnwise);
      workspace = d.transientPart(forwardTensors[0], savedLn);
      d.save(savedLn);
      d.save(forwardTensors[1]);
      d.save(fc1Out);
      d.save(forwardTensors[2]);
      d.save(forwardTensors[3]);
      d.desc.backwardWorkspaceBytes = actTransient;
    } else {
      if (d.quantized())
        for (const TensorDesc &t : forwardTensors)
          workspace = workspace + t.bytes();
      d.save(lnOutHP, lnAlias);
      d.saveAlias("fc1_weight", getFc1Weight());
      d.save(fc1Out);
      d.save(actOutHP);
      d.saveAlias("fc2_weight", getFc2Weight());
    }
    for (unsigned i = 0; i < stats.numStats; ++i)
      d.save(stats.stats[i]);
  }
  d.desc.workspaceBytes = workspace;

  if (options.training) {
    d.gradIn(d.highPrecision("grad_output", d.act(h)), "output", false);
    if (returnsNorm)
      d.gradIn(d.highPrecision("grad_ln_output", d.act(h)), "ln_output", true);
    d.gradOut("input", getInput());
    d.gradOut("ln_weight", getLnWeight());
    if (getLnBias())
      d.gradOut("ln_bias", getLnBias());
    d.gradOut("fc1_weight", getFc1Weight());
    if (getFc1Bias())
      d.gradOut("fc1_bias", getFc1Bias());
    d.gradOut("fc2_weight", getFc2Weight());
    if (getFc2Bias())
      d.gradOut("fc2_bias", getFc2Bias());
  }
  d.addDelayedScalingState(/*numGemms=*/2);
  return d.desc;
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

ModuleDescription LinearOp::describe(const DescribeOptions &options) {
  Describer d(*this, getInput(), getRecipeOrDefault(), options);
  int64_t k = getInput().getType().getShape().back();
  int64_t n = getWeight().getType().getDimSize(0);

  SmallVector<std::pair<StringRef, SmallVector<SymDim>>> gemmOperands = {
      {"input", d.act(k)}, {"weight", d.matrix(n, k)}};
  if (options.training)
    gemmOperands.push_back({"grad_output", d.act(n)});
  d.checkAlignment(gemmOperands);

  d.desc.outputs.push_back(d.highPrecision("output", d.act(n)));
  SymDim workspace(0);
  if (d.quantized()) {
    TensorDesc input = d.addQuantized("input", d.act(k), Role::Activation);
    TensorDesc weight = d.addQuantized("weight", d.matrix(n, k), Role::Weight);
    if (options.training && d.quantizedBackward()) {
      d.addQuantized("grad_output", d.act(n), Role::Grad);
      TensorDesc savedIn =
          getSaveRowwise() ? input
                           : d.quantizedTensor("input", d.act(k),
                                               Role::Activation,
                                               QuantUsage::Columnwise);
      // The input keeps its columnwise copy (§1.7; save_rowwise: both);
      // the weight both usages.
      TensorDesc savedW = weight;
      workspace = d.transientPart(input, savedIn);
      d.save(savedIn);
      d.save(savedW);
    } else {
      // (Row-scaled NVFP4 with save_rowwise: the GEMM's operands are saved
      // too, not transient, for TE's dequantized backward override.)
      const bool rowwise = options.training && getSaveRowwise();
      workspace = rowwise ? SymDim(0) : input.bytes() + weight.bytes();
      if (options.training) {
        d.saveAlias("input", getInput());
        d.saveAlias("weight", getWeight());
        if (rowwise) {
          d.save(renamed(input, "input_rowwise"));
          d.save(renamed(weight, "weight_rowwise"));
        }
      }
    }
  } else if (options.training) {
    d.saveAlias("input", getInput());
    d.saveAlias("weight", getWeight());
  }
  d.desc.workspaceBytes = workspace;

  if (options.training) {
    d.gradIn(d.highPrecision("grad_output", d.act(n)), "output", false);
    d.gradOut("input", getInput());
    d.gradOut("weight", getWeight());
    if (getBias())
      d.gradOut("bias", getBias());
  }
  d.addDelayedScalingState(/*numGemms=*/1);
  return d.desc;
}

//===----------------------------------------------------------------------===//
// NormalizationOp
//===----------------------------------------------------------------------===//

ModuleDescription NormalizationOp::describe(const DescribeOptions &options) {
  Describer d(*this, getInput(), getRecipeOrDefault(), options);
  // The recipe set on the op is reported as is; it runs unquantized by
  // design (no GEMM), which is no fallback.
  if (RecipeAttrInterface recipe = getRecipeAttr())
    d.desc.recipe = recipe.getRecipeName().str();
  int64_t k = getInput().getType().getShape().back();
  d.desc.outputs.push_back(d.highPrecision("output", d.act(k)));
  NormParts stats = normStatistics(d, getNormalization());
  SymDim workspace(0);
  if (options.training) {
    // TE's norm modules save the input and the statistics (gamma is the
    // parameter itself).
    d.saveAlias("input", getInput());
    d.saveAlias("ln_weight", getLnWeight());
    for (unsigned i = 0; i < stats.numStats; ++i)
      d.save(stats.stats[i]);
    d.gradIn(d.highPrecision("grad_output", d.act(k)), "output", false);
    d.gradOut("input", getInput());
    d.gradOut("ln_weight", getLnWeight());
    if (getLnBias())
      d.gradOut("ln_bias", getLnBias());
  } else {
    for (unsigned i = 0; i < stats.numStats; ++i)
      workspace = workspace + stats.stats[i].bytes();
  }
  d.desc.workspaceBytes = workspace;
  return d.desc;
}
