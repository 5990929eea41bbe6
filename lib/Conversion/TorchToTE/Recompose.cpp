//===- Recompose.cpp - Recomposition of decomposed torch forms --*- C++ -*-===//
//
// The driver of the rewrites that put torch-mlir's high-level ops back
// (per family in Norm.cpp, Linear.cpp, Activation.cpp), and the casts and
// broadcasts they look through.
//
//===----------------------------------------------------------------------===//

#include "TorchToTE.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::torch_import {

/// Replaces `root`'s result by `replacement` and erases the now-dead ops of
/// the pattern (in reverse program order).
void replaceChain(PatternRewriter &rewriter, Value root, Value replacement,
                  ArrayRef<Operation *> ops) {
  rewriter.replaceAllUsesWith(root, replacement);
  SmallVector<Operation *> sorted(ops.begin(), ops.end());
  llvm::sort(sorted,
             [](Operation *a, Operation *b) { return b->isBeforeInBlock(a); });
  for (Operation *op : sorted)
    if (op->use_empty())
      rewriter.eraseOp(op);
}

/// `prims.convert_element_type` / `aten.to.dtype` of a tensor: returns the
/// source value, or null when `op` is not a cast.
Value castSource(Operation *op) {
  if (isA(op, "torch.prims.convert_element_type") ||
      isA(op, "torch.aten.to.dtype") || isA(op, "torch.aten.type_as"))
    return op->getOperand(0);
  return {};
}

/// A cast to the type its operand already has (Gemma's `type_as` in f32).
LogicalResult dropIdentityCast(Operation *op, PatternRewriter &rewriter) {
  Value src = castSource(op);
  if (!src || src.getType() != op->getResult(0).getType())
    return failure();
  rewriter.replaceAllUsesWith(op->getResult(0), src);
  rewriter.eraseOp(op);
  return success();
}

Type elementTypeOf(Value v) {
  auto t = builtinType(v.getType());
  return t ? t.getElementType() : Type();
}

/// An f32 upcast of a narrower float (bf16/f16) tensor.
bool isUpcast(Operation *op) {
  Value src = castSource(op);
  if (!src)
    return false;
  Type from = elementTypeOf(src), to = elementTypeOf(op->getResult(0));
  return from && to && to.isF32() && (from.isBF16() || from.isF16());
}

/// A cast from f32 down to bf16/f16.
bool isDowncast(Operation *op) {
  Value src = castSource(op);
  if (!src)
    return false;
  Type from = elementTypeOf(src), to = elementTypeOf(op->getResult(0));
  return from && to && from.isF32() && (to.isBF16() || to.isF16());
}

tt::ValueTensorType withElementType(Type torchType, Type element) {
  auto vt = cast<tt::ValueTensorType>(torchType);
  return tt::ValueTensorType::get(vt.getContext(), vt.getHasSizes(),
                                  vt.getSizes(), element);
}

/// PyTorch's bf16/f16 modules run their norms and GEMMs in f32 between
/// casts. Casts are moved next to the computation (upcasts above views and
/// permutes, downcasts below views), so that the patterns above match, and
/// a norm or linear sandwiched between an upcast of all its tensor inputs
/// and a downcast of its result becomes the op in the narrow dtype (TE
/// computes in fp32 internally, with narrow inputs and outputs).
LogicalResult moveCast(Operation *op, PatternRewriter &rewriter) {
  // upcast(view|permute(v)) -> view|permute(upcast(v))
  if (isUpcast(op)) {
    Operation *shape = castSource(op).getDefiningOp();
    if ((isA(shape, "torch.aten.view") || isA(shape, "torch.aten.permute")) &&
        shape->getResult(0).hasOneUse()) {
      PatternRewriter &b = rewriter;
  b.setInsertionPoint(op);
      TorchBuilder tb(b, op->getLoc());
      Type f32 = elementTypeOf(op->getResult(0));
      Value v = shape->getOperand(0);
      Value up = tb.create(op->getName().getStringRef(), {v, op->getOperand(1)},
                           withElementType(v.getType(), f32));
      Value moved =
          tb.create(shape->getName().getStringRef(), {up, shape->getOperand(1)},
                    op->getResult(0).getType());
      replaceChain(rewriter, op->getResult(0), moved, {op, shape});
      return success();
    }
  }
  // view(downcast(v)) -> downcast(view(v))
  if (isA(op, "torch.aten.view")) {
    Operation *down = op->getOperand(0).getDefiningOp();
    if (down && isDowncast(down) && down->getResult(0).hasOneUse()) {
      PatternRewriter &b = rewriter;
  b.setInsertionPoint(op);
      TorchBuilder tb(b, op->getLoc());
      Value v = castSource(down);
      Value view = tb.create(
          "torch.aten.view", {v, op->getOperand(1)},
          withElementType(op->getResult(0).getType(), elementTypeOf(v)));
      Value cast =
          tb.create(down->getName().getStringRef(), {view, down->getOperand(1)},
                    op->getResult(0).getType());
      replaceChain(rewriter, op->getResult(0), cast, {op, down});
      return success();
    }
  }
  return failure();
}

namespace {

/// Ops that only move elements: an upcast commutes with them.
bool isLayoutOp(Operation *op) {
  return isA(op, "torch.aten.view") || isA(op, "torch.aten.reshape") ||
         isA(op, "torch.aten._unsafe_view") || isA(op, "torch.aten.permute") ||
         isA(op, "torch.aten.t");
}

/// Can `v` be computed in `narrow` exactly: it is narrow, the upcast of a
/// narrow value, or a layout op (used only here) of such a value.
bool narrowable(Value v, Type narrow) {
  if (elementTypeOf(v) == narrow)
    return true;
  Operation *def = v.getDefiningOp();
  if (def && isUpcast(def))
    return elementTypeOf(castSource(def)) == narrow;
  return def && isLayoutOp(def) && v.hasOneUse() &&
         narrowable(def->getOperand(0), narrow);
}

/// `v` computed in `narrow` (narrowable(v) holds); the f32 ops it replaces
/// are appended to `dead`.
Value buildNarrow(Value v, Type narrow, PatternRewriter &rewriter,
                  SmallVectorImpl<Operation *> &dead) {
  if (elementTypeOf(v) == narrow)
    return v;
  Operation *def = v.getDefiningOp();
  dead.push_back(def);
  if (isUpcast(def))
    return castSource(def);
  Value src = buildNarrow(def->getOperand(0), narrow, rewriter, dead);
  rewriter.setInsertionPoint(def);
  TorchBuilder tb(rewriter, def->getLoc());
  SmallVector<Value> operands(def->getOperands());
  operands[0] = src;
  return tb.create(def->getName().getStringRef(), operands,
                   withElementType(v.getType(), narrow));
}

} // namespace

/// downcast(norm|linear(upcast(x), ...)) -> norm|linear(x, ...) in x's dtype.
LogicalResult removeCastSandwich(Operation *down, PatternRewriter &rewriter) {
  if (!isDowncast(down))
    return failure();
  Operation *op = castSource(down).getDefiningOp();
  bool isNorm =
      isA(op, "torch.aten.layer_norm") || isA(op, "torch.aten.rms_norm");
  bool isLinear = isA(op, "torch.aten.linear");
  if ((!isNorm && !isLinear) || !op->getResult(0).hasOneUse())
    return failure();
  Type narrow = elementTypeOf(down->getResult(0));
  // Every tensor operand: narrow already (PyTorch promotes bf16 parameters
  // against f32 activations), or an upcast of a narrow value, possibly
  // reshaped or transposed after it (GPT-2's Conv1D weight, activations
  // flattened twice); Gemma's `1 + weight.float()`, which matchNorm takes as
  // zero_centered_gamma of the narrow weight, stays as it is.
  auto isZeroCenteredF32 = [&](Value v) {
    Operation *def = v.getDefiningOp();
    Operation *inner = def && def->getNumOperands()
                           ? def->getOperand(0).getDefiningOp()
                           : nullptr;
    return isNorm && v == op->getOperand(2) &&
           isA(def, "torch.aten.add.Scalar") && inner && isUpcast(inner) &&
           elementTypeOf(castSource(inner)) == narrow;
  };
  for (Value v : op->getOperands())
    if (builtinType(v.getType()) && !narrowable(v, narrow) &&
        !isZeroCenteredF32(v))
      return failure();
  // The activation input itself must have been narrow.
  if (!narrowable(op->getOperand(0), narrow))
    return failure();
  SmallVector<Value> operands;
  SmallVector<Operation *> dead = {down, op};
  for (Value v : op->getOperands())
    operands.push_back(!builtinType(v.getType()) || isZeroCenteredF32(v)
                           ? v
                           : buildNarrow(v, narrow, rewriter, dead));
  PatternRewriter &b = rewriter;
  b.setInsertionPoint(down);
  TorchBuilder tb(b, down->getLoc());
  // rms_norm's default eps is finfo(dtype).eps of the dtype it ran in: f32.
  if (isA(op, "torch.aten.rms_norm") && isNone(operands[3]))
    operands[3] = tb.floatConst(1.1920928955078125e-07);
  Value narrowOp = tb.create(op->getName().getStringRef(), operands,
                             down->getResult(0).getType());
  replaceChain(rewriter, down->getResult(0), narrowOp, dead);
  return success();
}

/// `broadcast_to` feeding only elementwise binary ops is implicit in torch
/// semantics: use the source directly.
LogicalResult stripBroadcast(Operation *op, PatternRewriter &rewriter) {
  if (!isA(op, "torch.aten.broadcast_to") || op->use_empty())
    return failure();
  for (Operation *u : op->getResult(0).getUsers())
    if (!isA(u, "torch.aten.sub.Tensor") && !isA(u, "torch.aten.mul.Tensor") &&
        !isA(u, "torch.aten.add.Tensor") && !isA(u, "torch.aten.div.Tensor"))
      return failure();
  rewriter.replaceAllUsesWith(op->getResult(0), op->getOperand(0));
  rewriter.eraseOp(op);
  return success();
}

namespace {

/// One rewrite of a decomposed form as a pattern. The rewrite (above, and
/// per family in Norm.cpp, Linear.cpp, Activation.cpp) checks the op
/// itself and changes the IR through the rewriter only.
class RecomposePattern : public RewritePattern {
public:
  using Rewrite = LogicalResult (*)(Operation *, PatternRewriter &);
  /// A rewrite rooted at ops named `root`.
  RecomposePattern(MLIRContext *ctx, StringRef name, StringRef root,
                   Rewrite rewrite)
      : RewritePattern(root, /*benefit=*/1, ctx), rewrite(rewrite) {
    setDebugName(name);
  }
  /// A rewrite whose root is one of several ops (it tells them apart).
  RecomposePattern(MLIRContext *ctx, StringRef name, Rewrite rewrite)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx),
        rewrite(rewrite) {
    setDebugName(name);
  }

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    return rewrite(op, rewriter);
  }

private:
  Rewrite rewrite;
};

} // namespace

void populateRecomposeTorchPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  auto add = [&](auto... args) {
    patterns.add(std::make_unique<RecomposePattern>(ctx, args...));
  };
  // In the order they are tried on each op.
  add("strip-broadcast", "torch.aten.broadcast_to", stripBroadcast);
  add("identity-cast", dropIdentityCast); // convert, to.dtype, type_as
  add("move-cast", moveCast); // upcasts, views
  add("var-mean-f64", "torch.aten.to.dtype", recomposeVarMean);
  add("var-mean", recomposeVarMeanSameDtype); // sum.dim_IntList, mean.dim
  add("layer-norm", "torch.aten.var_mean.correction", recomposeLayerNorm);
  add("rms-norm", recomposeRMSNorm); // pow.Tensor_Scalar, mul.Tensor
  add("linear", recomposeLinear);    // mm, matmul
  add("silu", "torch.aten.sigmoid", recomposeSiLU);
  add("gelu-tanh", "torch.aten.tanh", recomposeGeluTanh);
  add("remove-cast-sandwich", removeCastSandwich); // downcasts
  add("norm-affine", "torch.aten.mul.Tensor", absorbNormAffine);
}

/// Dead scalar bookkeeping left by the rewrites (sizes of views).
bool isDeadBookkeeping(Operation &op) {
  StringRef name = op.getName().getStringRef();
  if (op.getNumResults() == 0 || !op.use_empty())
    return false;
  return name.starts_with("torch.constant.") ||
         name == "torch.prim.ListConstruct" || name == "torch.aten.size.int" ||
         name == "torch.aten.mul.int" || name == "torch.symbolic_int";
}

void recomposeDecomposedForms(func::FuncOp func) {
  // Shape bookkeeping would make every intermediate look multiply used;
  // the importer does not need it (shapes are in the types).
  for (Operation &op : llvm::make_early_inc_range(func.getBody().front()))
    if (isA(&op, "torch.bind_symbolic_shape") ||
        isA(&op, "torch.aten._assert_tensor_metadata"))
      op.erase();
  // First match wins, then the scan starts over: the order the rewrites
  // were designed in (not applyPatternsGreedily's worklist order, which
  // would build the same ops in another order).
  MLIRContext *ctx = func.getContext();
  RewritePatternSet patterns(ctx);
  populateRecomposeTorchPatterns(patterns);
  PatternRewriter rewriter(ctx);
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(func.getBody().front())) {
      for (const std::unique_ptr<RewritePattern> &pattern :
           patterns.getNativePatterns()) {
        std::optional<OperationName> root = pattern->getRootKind();
        if (root && *root != op.getName())
          continue;
        if (succeeded(pattern->matchAndRewrite(&op, rewriter))) {
          changed = true;
          break;
        }
      }
      if (changed)
        break;
    }
  }
  // Drop dead scalar ops, repeatedly (lists keep their constants alive).
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation &op :
         llvm::make_early_inc_range(llvm::reverse(func.getBody().front())))
      if (isDeadBookkeeping(op)) {
        op.erase();
        erased = true;
      }
  }
}

} // namespace mlir::te::torch_import
