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
void replaceChain(Value root, Value replacement, ArrayRef<Operation *> ops) {
  root.replaceAllUsesWith(replacement);
  SmallVector<Operation *> sorted(ops.begin(), ops.end());
  llvm::sort(sorted,
             [](Operation *a, Operation *b) { return b->isBeforeInBlock(a); });
  for (Operation *op : sorted)
    if (op->use_empty())
      op->erase();
}

/// `prims.convert_element_type` / `aten.to.dtype` of a tensor: returns the
/// source value, or null when `op` is not a cast.
Value castSource(Operation *op) {
  if (isA(op, "torch.prims.convert_element_type") ||
      isA(op, "torch.aten.to.dtype"))
    return op->getOperand(0);
  return {};
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
bool moveCast(Operation *op) {
  // upcast(view|permute(v)) -> view|permute(upcast(v))
  if (isUpcast(op)) {
    Operation *shape = castSource(op).getDefiningOp();
    if ((isA(shape, "torch.aten.view") || isA(shape, "torch.aten.permute")) &&
        shape->getResult(0).hasOneUse()) {
      OpBuilder b(op);
      TorchBuilder tb(b, op->getLoc());
      Type f32 = elementTypeOf(op->getResult(0));
      Value v = shape->getOperand(0);
      Value up = tb.create(op->getName().getStringRef(), {v, op->getOperand(1)},
                           withElementType(v.getType(), f32));
      Value moved =
          tb.create(shape->getName().getStringRef(), {up, shape->getOperand(1)},
                    op->getResult(0).getType());
      replaceChain(op->getResult(0), moved, {op, shape});
      return true;
    }
  }
  // view(downcast(v)) -> downcast(view(v))
  if (isA(op, "torch.aten.view")) {
    Operation *down = op->getOperand(0).getDefiningOp();
    if (down && isDowncast(down) && down->getResult(0).hasOneUse()) {
      OpBuilder b(op);
      TorchBuilder tb(b, op->getLoc());
      Value v = castSource(down);
      Value view = tb.create(
          "torch.aten.view", {v, op->getOperand(1)},
          withElementType(op->getResult(0).getType(), elementTypeOf(v)));
      Value cast =
          tb.create(down->getName().getStringRef(), {view, down->getOperand(1)},
                    op->getResult(0).getType());
      replaceChain(op->getResult(0), cast, {op, down});
      return true;
    }
  }
  return false;
}

/// downcast(norm|linear(upcast(x), ...)) -> norm|linear(x, ...) in x's dtype.
bool removeCastSandwich(Operation *down) {
  if (!isDowncast(down))
    return false;
  Operation *op = castSource(down).getDefiningOp();
  bool isNorm =
      isA(op, "torch.aten.layer_norm") || isA(op, "torch.aten.rms_norm");
  bool isLinear = isA(op, "torch.aten.linear");
  if ((!isNorm && !isLinear) || !op->getResult(0).hasOneUse())
    return false;
  Type narrow = elementTypeOf(down->getResult(0));
  // Every tensor operand: an upcast from `narrow`, or already `narrow`
  // (PyTorch promotes bf16 parameters against f32 activations).
  SmallVector<Value> operands;
  SmallVector<Operation *> upcasts;
  for (Value v : op->getOperands()) {
    if (!builtinType(v.getType())) {
      operands.push_back(v);
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (def && isUpcast(def) && elementTypeOf(castSource(def)) == narrow) {
      operands.push_back(castSource(def));
      upcasts.push_back(def);
    } else if (elementTypeOf(v) == narrow) {
      operands.push_back(v);
    } else {
      return false;
    }
  }
  // The activation input itself must have been narrow.
  if (elementTypeOf(operands[0]) != narrow)
    return false;
  OpBuilder b(down);
  TorchBuilder tb(b, down->getLoc());
  // rms_norm's default eps is finfo(dtype).eps of the dtype it ran in: f32.
  if (isA(op, "torch.aten.rms_norm") && isNone(operands[3]))
    operands[3] = tb.floatConst(1.1920928955078125e-07);
  Value narrowOp = tb.create(op->getName().getStringRef(), operands,
                             down->getResult(0).getType());
  SmallVector<Operation *> dead = {down, op};
  dead.append(upcasts.begin(), upcasts.end());
  replaceChain(down->getResult(0), narrowOp, dead);
  return true;
}

/// `broadcast_to` feeding only elementwise binary ops is implicit in torch
/// semantics: use the source directly.
bool stripBroadcast(Operation *op) {
  if (!isA(op, "torch.aten.broadcast_to") || op->use_empty())
    return false;
  for (Operation *u : op->getResult(0).getUsers())
    if (!isA(u, "torch.aten.sub.Tensor") && !isA(u, "torch.aten.mul.Tensor") &&
        !isA(u, "torch.aten.add.Tensor") && !isA(u, "torch.aten.div.Tensor"))
      return false;
  op->getResult(0).replaceAllUsesWith(op->getOperand(0));
  op->erase();
  return true;
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
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(func.getBody().front())) {
      if (stripBroadcast(&op) || moveCast(&op) || recomposeVarMean(&op) ||
          recomposeVarMeanSameDtype(&op) || recomposeLayerNorm(&op) ||
          recomposeRMSNorm(&op) || recomposeLinear(&op) || recomposeSiLU(&op) ||
          recomposeGeluTanh(&op) || removeCastSandwich(&op)) {
        changed = true;
        break;
      }
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
