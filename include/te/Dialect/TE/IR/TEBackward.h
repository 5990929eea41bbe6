//===- TEBackward.h - What a backward rule sees -----------------*- C++ -*-===//
//
// The context te-generate-backward hands to BackwardOpInterface rules: the
// gradients accumulated so far, the tensors a module op saved, the builder
// in the backward function; and the helpers the module ops' rules share.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEBACKWARD_H
#define TE_DIALECT_TE_IR_TEBACKWARD_H

#include "te/Dialect/TE/IR/TEAttrs.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::te {

/// The reverse sweep of one function as a rule sees it while it builds the
/// backward of the current op (the op whose buildBackward runs). Values
/// named "forward" are the forward function's; the others the backward's.
class GradientContext {
public:
  virtual ~GradientContext();

  /// Where the rule builds, in the backward function.
  virtual OpBuilder &getBuilder() = 0;
  /// The architecture class quantized tensors are laid out for.
  virtual TargetArch getArch() const = 0;

  /// Whether a gradient of `forward` is wanted: false for the function's
  /// arguments marked `te.frozen` and values computed from those only (and
  /// constants). Gradients of such values are not accumulated.
  virtual bool wantsGradient(Value forward) const = 0;

  /// The gradient accumulated so far for `forward` (null when none).
  virtual Value getGradient(Value forward) = 0;
  /// The gradient of `forward`, or zeros when none reached it (an error,
  /// reported, when its shape is dynamic).
  virtual FailureOr<Value> getGradientOrZeros(Value forward) = 0;
  /// Adds `grad` to the gradient of `forward` (arith.addf when one exists).
  virtual void accumulate(Value forward, Value grad) = 0;
  /// A zero tensor of `type` (an error, reported, when it is dynamic).
  virtual FailureOr<Value> zeros(Location loc, Type type) = 0;

  /// The backward function's copy of a forward value it needs: a bundle
  /// argument, or a clone of a constant.
  virtual Value lookupBackward(Value forward) = 0;
  /// The tensor the current module op saved as `name`, in the backward
  /// function (null when it saved none by that name).
  virtual Value getSaved(StringRef name) = 0;
  /// Every tensor the current module op saved, by name.
  virtual llvm::StringMap<Value> getAllSaved() = 0;

  /// Delayed scaling: the backward quantizers' scales of the current module
  /// op (null when it has no backward recipe state).
  virtual Value getBackwardScales() = 0;
  /// Records `backwardOp` as the backward of the current module op: under
  /// delayed scaling its amaxes update the backward recipe state.
  virtual void setBackwardOp(Operation *backwardOp) = 0;
};

/// The types of a module op's gradients: its operands' but the `scales'
/// and those of the operands numbered in `skipped` (frozen weights whose
/// weight-gradient GEMM the backward op leaves out).
SmallVector<Type> getModuleGradientTypes(Operation *moduleOp,
                                         ArrayRef<unsigned> skipped = {});

/// Ends a module op's rule: records `backwardOp` (ctx.setBackwardOp) and
/// accumulates its results, in order, into `moduleOp`'s operands (the
/// `scales` operand, last when present, and the operands numbered in
/// `skipped` get none).
LogicalResult finishModuleBackward(GradientContext &ctx, Operation *moduleOp,
                                   Operation *backwardOp,
                                   ArrayRef<unsigned> skipped = {});

} // namespace mlir::te

#endif // TE_DIALECT_TE_IR_TEBACKWARD_H
