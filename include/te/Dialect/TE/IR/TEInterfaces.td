//===- TEInterfaces.td - TE op interfaces ------------------*- tablegen -*-===//
//
// The interface every module op implements to describe, without running
// anything, what it produces, saves for backward and consumes.
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
      "::mlir::te::RecipeAttrInterface", "getRecipeOrDefault">
  ];
}

#endif // TE_DIALECT_TE_IR_TEINTERFACES_TD
