//===- Decomposer.h - What te-decompose's patterns share --------*- C++ -*-===//
//
// The builders te-decompose's patterns share: the norm, GEMMs in TE's
// layouts, quantization at TE's quantizer slots, the collectives of tensor
// parallelism, and the replacement of te.saved and te.amax users.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_TRANSFORMS_DECOMPOSE_DECOMPOSER_H
#define TE_LIB_TRANSFORMS_DECOMPOSE_DECOMPOSER_H

#include "te/Dialect/TE/IR/TEOps.h"
#include "te/Transforms/Patterns.h"

#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::te::decompose {

/// How an op's GEMM operands are quantized: not at all (null recipe), or
/// under an FP8 recipe with, for delayed scaling, the op's scales.
struct Quant {
  RecipeAttrInterface recipe;
  Value scales;
  explicit operator bool() const { return bool(recipe); }
};

/// The quantization `op` runs with: none for unquantized recipes, alignment
/// fallbacks (the module op says so) and backward ops on high-precision
/// saved tensors; per-tensor FP8 and fp8-block for `target` Hopper, MXFP8
/// for Blackwell; an error otherwise.
FailureOr<Quant> quantOf(Operation *op, RecipeAttrInterface recipe,
                         Value scales, bool isForward, TargetArch target);

/// Builds primitives at the rewriter's insertion point.
class Decomposer {
public:
  Decomposer(RewriterBase &b, DecomposeState &state) : b(b), state(state) {}

  TargetArch getArch() const { return state.arch; }

  struct Norm {
    Value out, rsigma, mu;
  };
  Norm norm(Location loc, Value x, Value gamma, Value beta,
            NormalizationKind kind, APFloat eps, bool zeroCentered);
  /// One GEMM; its result is in `element` (default: lhs's element type,
  /// required when lhs is quantized).
  Value gemm(Location loc, GemmLayout layout, Value lhs, Value rhs,
             Value bias = {}, Type element = {});
  static ArrayRef<int64_t> shapeOf(Value v);
  static Type elementOf(Value v);
  /// Quantizes `x` under `q` (the backward format for gradients) at
  /// quantizer `slot`; the result type is that of the te.saved `name` of
  /// `source` when that save is quantized (the bundle's usage), else
  /// rowwise. Appends the amax to `amaxes[slot]`.
  /// `*saveOut` (when given) becomes the value to save under `name` when
  /// that save is quantized; a high-precision save keeps the caller's value.
  Value quantize(Location loc, Value x, const Quant &q, bool grad, int64_t slot,
                 SmallVectorImpl<Value> &amaxes,
                 QuantUsage usage = QuantUsage::Rowwise, Value source = {},
                 StringRef name = {}, Value *saveOut = nullptr);
  /// A gradient quantized with both usages (the dgrad GEMM reads it
  /// rowwise, the wgrad columnwise; rowwise only without a `wgrad`, a
  /// frozen weight's) at backward quantizer `slot`; `g` itself without `q`.
  Value quantizeGrad(Location loc, Value g, const Quant &q, int64_t slot,
                     SmallVectorImpl<Value> &amaxes, bool wgrad = true);
  /// Replaces the te.amax users of `source` with the vector of `amaxes`
  /// (one tensor<1xf32> per quantizer slot, 0 where none was recorded).
  /// Under tensor parallelism the amaxes are the group's maximum (TE's
  /// reduce_amax over the TP group), so every rank's history and scales
  /// stay the same.
  LogicalResult replaceAmax(Value source, ArrayRef<Value> amaxes,
                            TensorParallelAttr tp = {});
  Value biasGrad(Location loc, Value dy);
  /// Collectives of a tensor-parallel op (reference/tensor-parallel.md
  /// §1-2): dim 0 gathered from, or reduce-scattered to, the group's ranks;
  /// all-reduced sums. Identity without `tp`.
  static RankedTensorType withDim0(Value v, int64_t mul, int64_t div);
  /// Each collective placed is a remark saying what and why.
  static void placed(Location loc, StringRef collective, TensorParallelAttr tp,
                     StringRef what);
  Value allGather(Location loc, Value v, TensorParallelAttr tp, StringRef what);
  /// A row-parallel GEMM's partial sums: reduce-scattered with sequence
  /// parallelism, else all-reduced.
  Value reducePartial(Location loc, Value v, TensorParallelAttr tp,
                      StringRef what);
  /// A parameter gradient that is a partial sum under sequence parallelism:
  /// all-reduced when the layout asks for it, else returned partial.
  Value reduceParamGrad(Location loc, Value g, TensorParallelAttr tp,
                        StringRef what);
  /// fp32 [rows] with the rows of `x` (dynamic if any leading dim is).
  Type rowsVector(Value x);
  /// Replaces the te.saved users of `source` with the named values.
  LogicalResult replaceSaved(Value source,
                             const llvm::StringMap<Value> &values);
  static SmallVector<Value> concat(std::initializer_list<Value> values);

  /// Ends a module op's pattern: its te.saved users become `saved`, its
  /// te.amax users `amaxes`, its results `results`.
  LogicalResult finishForward(Operation *op,
                              const llvm::StringMap<Value> &saved,
                              ArrayRef<Value> amaxes, ValueRange results);
  /// Ends a backward op's pattern: its te.amax users become `amaxes`, its
  /// results `grads`.
  LogicalResult finishBackward(Operation *op, ArrayRef<Value> amaxes,
                               ValueRange grads);

private:
  RewriterBase &b;
  DecomposeState &state;
};

/// The pattern of each op family, added by populateTEDecomposePatterns.
void addRecomputePatterns(RewritePatternSet &patterns, DecomposeState &state);
void addLayerNormLinearPatterns(RewritePatternSet &patterns,
                                DecomposeState &state);
void addLayerNormMLPPatterns(RewritePatternSet &patterns,
                             DecomposeState &state);
void addLinearPatterns(RewritePatternSet &patterns, DecomposeState &state);
void addNormalizationPatterns(RewritePatternSet &patterns,
                              DecomposeState &state);

} // namespace mlir::te::decompose

#endif // TE_LIB_TRANSFORMS_DECOMPOSE_DECOMPOSER_H
