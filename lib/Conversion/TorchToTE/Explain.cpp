//===- Explain.cpp - Why an op is not raised --------------------*- C++ -*-===//
//
// The reason te-import-torch gives for a torch op it leaves (a remark) or
// rejects (strict mode), for the ops real models have around their LN
// modules: attention, post-MLP norms, scalar multipliers, MLPs without a
// norm, split projections.
//
//===----------------------------------------------------------------------===//

#include "TorchToTE.h"

using namespace mlir;
using namespace mlir::te;

namespace mlir::te::torch_import {

namespace {

bool isPointwiseName(StringRef name) {
  return name == "torch.aten.silu" || name == "torch.aten.gelu" ||
         name == "torch.aten.relu" || name == "torch.aten.sigmoid" ||
         name == "torch.aten.tanh" || name == "torch.aten.mul.Tensor" ||
         name == "torch.aten.mul.Scalar" ||
         name == "torch.aten.add.Scalar" || name == "torch.aten.pow.Tensor_Scalar" ||
         name == "torch.aten.erf";
}

/// Looks through views, casts, copies and the bridges from raised te ops
/// (partial raising) to the op that computed `v`.
Operation *producer(Value v) {
  Operation *def = v.getDefiningOp();
  while (def && def->getNumOperands() &&
         (isA(def, "torch.aten.view") || isA(def, "torch.aten.reshape") ||
          isA(def, "torch.aten._unsafe_view") || castSource(def) ||
          isA(def, "torch.aten.clone") || isA(def, "torch.aten.contiguous") ||
          isA(def, "torch_c.from_builtin_tensor")))
    def = def->getOperand(0).getDefiningOp();
  return def;
}

/// A linear, or a raised module (whose output is a linear's).
bool isLinearLike(Operation *op) {
  return isA(op, "torch.aten.linear") || isA(op, "torch.aten.mm") ||
         isA(op, "torch.aten.addmm") || isA(op, "torch.aten.matmul") ||
         isa_and_nonnull<LinearOp, LayerNormLinearOp, LayerNormMLPOp>(op);
}

bool isNormOp(Operation *op) {
  return isA(op, "torch.aten.layer_norm") || isA(op, "torch.aten.rms_norm");
}

/// A linear on the output of a norm: the FC1 of a LayerNorm module.
bool readsNorm(Operation *linear) {
  if (isa_and_nonnull<LayerNormLinearOp, LayerNormMLPOp>(linear))
    return true;
  return linear && isA(linear, "torch.aten.linear") &&
         isNormOp(producer(linear->getOperand(0)));
}

} // namespace

std::string explainUnraised(Operation *op) {
  StringRef name = op->getName().getStringRef();
  // Attention and what surrounds it.
  static const char *attention[] = {
      "torch.aten.softmax.int", "torch.aten._softmax",
      "torch.aten.bmm", "torch.aten.scaled_dot_product_attention",
      "torch.aten._scaled_dot_product_flash_attention_for_cpu",
      "torch.aten.baddbmm", "torch.aten.masked_fill.Scalar",
      "torch.aten.masked_fill.Tensor", "torch.aten.where.self",
      "torch.aten.triu", "torch.aten.tril"};
  for (const char *a : attention)
    if (name == a)
      return "attention (softmax, batched matmuls, masks) is not part of a "
             "TransformerEngine LayerNorm module; it is left for another "
             "compiler (te-compile --partition)";
  if (name == "torch.aten.embedding" || name == "torch.aten.cos" ||
      name == "torch.aten.sin" || name == "torch.aten.arange.start_step" ||
      name == "torch.aten.arange")
    return "embeddings and rotary position encodings are not part of a "
           "TransformerEngine LayerNorm module";
  if (isNormOp(op)) {
    Operation *src = producer(op->getOperand(0));
    if (isLinearLike(src))
      return "a norm of a linear's output with no linear after it (a "
             "post-feedforward norm, as in Gemma 2/3 and OLMo 2): "
             "TransformerEngine's norms come before their linear; the "
             "module before it is raised, this norm is left";
    return "a normalization must feed an aten.linear (TransformerEngine has "
           "no standalone norm module)";
  }
  if ((name == "torch.aten.mul.Scalar" || name == "torch.aten.div.Scalar") &&
      isLinearLike(producer(op->getOperand(0))))
    return "a scalar multiplier of a linear's output (e.g. Granite's "
           "residual_multiplier, a query scaling) is not part of a "
           "TransformerEngine module";
  if (name == "torch.aten.split.Tensor" || name == "torch.aten.split_with_sizes" ||
      name == "torch.aten.chunk" || name == "torch.aten.slice.Tensor" ||
      name == "torch.prim.ListUnpack" || name == "torch.aten.unbind.int") {
    if (isLinearLike(producer(op->getOperand(0))))
      return "splitting a projection's output (e.g. attention's fused QKV) "
             "is not part of a TransformerEngine module; the linear before "
             "it is raised on its own";
  }
  // A pointwise op between two linears with no norm before the first: an
  // MLP TransformerEngine has no module for.
  if (op->getNumOperands() && builtinType(op->getOperand(0).getType())) {
    Operation *src = producer(op->getOperand(0));
    bool toLinear = llvm::any_of(op->getUsers(), [](Operation *u) {
      return isA(u, "torch.aten.linear") || isA(u, "torch.aten.mul.Tensor") ||
             isA(u, "torch_c.to_builtin_tensor");
    });
    if ((isA(src, "torch.aten.linear") || isa_and_nonnull<LinearOp>(src)) &&
        !readsNorm(src) && toLinear && isPointwiseName(name))
      return "an activation between linears with no norm before them (e.g. "
             "OLMo 2, which normalizes after its MLP): TransformerEngine's "
             "LayerNormMLP starts with its norm; the linears are raised as "
             "te.linear, the activation is left";
  }
  return "";
}

} // namespace mlir::te::torch_import
