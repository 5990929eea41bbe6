//===- TEInterfaces.td - TE op interfaces ------------------*- tablegen -*-===//
//
// The interface every module op implements to describe, without running
// anything, what it produces, saves for backward and consumes; and the
// interface of ops te-generate-backward differentiates.
//
//===----------------------------------------------------------------------===//

#ifndef TE_DIALECT_TE_IR_TEINTERFACES_TD
#define TE_DIALECT_TE_IR_TEINTERFACES_TD

include "mlir/IR/OpBase.td"

def TE_ModuleOpInterface : OpInterface<"ModuleOpInterface"> {
  let cppNamespace = "::mlir::te";
  let description = [{
    A TransformerEngine module op. `describe` reports, for the op's recipe,
    an architecture class and a mode (training or inference): its outputs,
    its quantized GEMM operands with their inner tensors, the tensors it
    saves for backward (with the op input or output each one aliases), the
    gradients it consumes and produces, recipe state, and its workspace.
    Backward generation, memory planning and te-describe read this one
    interface.
  }];
  let methods = [
    InterfaceMethod<
      "Describes the op under `options`.",
      "::mlir::te::ModuleDescription", "describe",
      (ins "const ::mlir::te::DescribeOptions &":$options)>,
    InterfaceMethod<
      "The recipe the op runs under (`#te.bf16` when none is set).",
      "::mlir::te::RecipeAttrInterface", "getRecipeOrDefault">,
    InterfaceMethod<
      "The recipe set on the op (null when none is).",
      "::mlir::te::RecipeAttrInterface", "getModuleRecipe", (ins), [{}],
      [{ return $_op.getRecipeAttr(); }]>,
    InterfaceMethod<
      "Sets (or, with null, clears) the op's recipe.",
      "void", "setModuleRecipe", (ins "::mlir::te::RecipeAttrInterface":$recipe),
      [{}], [{ $_op.setRecipeAttr(recipe); }]>,
    InterfaceMethod<
      "The delayed-scaling state operand `scales` (null when absent).",
      "::mlir::Value", "getScalesOperand", (ins), [{}],
      [{ return $_op.getScales(); }]>,
    InterfaceMethod<
      "Sets (or, with null, removes) the `scales` operand.",
      "void", "setScalesOperand", (ins "::mlir::Value":$scales), [{}],
      [{ $_op.getScalesMutable().assign(scales); }]>,
    InterfaceMethod<
      "TE's delayed-scaling quantizer slots of the forward (reference §0.2: "
      "input, weight, output per GEMM).", "int64_t", "getNumForwardSlots">,
    InterfaceMethod<
      "TE's delayed-scaling quantizer slots of the backward (grad output, "
      "grad input per GEMM).", "int64_t", "getNumBackwardSlots">
  ];
}

def TE_BackwardOpInterface : OpInterface<"BackwardOpInterface"> {
  let cppNamespace = "::mlir::te";
  let description = [{
    An op te-generate-backward differentiates (reverse mode). `buildBackward`
    is called once per op, in reverse order of the forward function, when a
    gradient reached at least one of its results; it reads those gradients
    from the `GradientContext`, builds the backward computation at the
    context's builder and accumulates one gradient per differentiated
    operand. Module ops implement it in ODS (lib/Dialect/TE/IR/Backward/);
    the upstream ops the importer leaves between them (arith, tensor,
    linalg.transpose) get it as external models
    (`registerBackwardOpInterfaceExternalModels`).
  }];
  let methods = [
    InterfaceMethod<
      "Builds the op's backward with `ctx`; an op it cannot differentiate "
      "is an error at its location.",
      "::llvm::LogicalResult", "buildBackward",
      (ins "::mlir::te::GradientContext &":$ctx)>,
    InterfaceMethod<
      "Whether the backward reads the tensor the op saves as `name`, given "
      "which of its operands want a gradient (`ctx.wantsGradient`: all but "
      "those computed from `te.frozen` arguments only). A module op's saved "
      "tensor that only a skipped weight-gradient GEMM reads is not saved.",
      "bool", "needsSaved",
      (ins "::llvm::StringRef":$name, "::mlir::te::GradientContext &":$ctx),
      /*methodBody=*/"", /*defaultImplementation=*/[{ return true; }]>
  ];
}

def TE_ModuleBackwardOpInterface : OpInterface<"ModuleBackwardOpInterface"> {
  let cppNamespace = "::mlir::te";
  let description = [{
    The backward op of a module op (`te.<op>_bwd`, built by its
    `buildBackward`): what the dialect's checks ask of it without naming it
    (te.amax's quantizer-slot count, te.recompute's "forward only" rule).
  }];
  let methods = [
    InterfaceMethod<
      "TE's delayed-scaling quantizer slots of this backward (its module "
      "op's getNumBackwardSlots).", "int64_t", "getNumSlots">,
    InterfaceMethod<
      "The delayed-scaling state operand `scales` (null when absent).",
      "::mlir::Value", "getScalesOperand", (ins), [{}],
      [{ return $_op.getScales(); }]>
  ];
}

#endif // TE_DIALECT_TE_IR_TEINTERFACES_TD
