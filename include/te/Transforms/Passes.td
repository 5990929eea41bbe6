//===- Passes.td - TE transformation passes ----------------*- tablegen -*-===//
//
// Passes over the `te` dialect.
//
//===----------------------------------------------------------------------===//

#ifndef TE_TRANSFORMS_PASSES_TD
#define TE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TEApplyRecipePass : Pass<"te-apply-recipe"> {
  let summary = "Set the quantization recipe of te module ops";
  let description = [{
    Attaches a recipe, with TransformerEngine's default parameters, to every
    `te.layernorm_linear`, `te.layernorm_mlp` and `te.linear` nested under the
    pass's anchor. Ops that already carry a recipe keep it unless `override`
    is set. The recipe names are those of `te-compile --recipe`: `bf16`,
    `fp8-delayed`, `fp8-current`, `fp8-block`, `mxfp8`, `nvfp4`. An unknown
    name is an error, and an op the recipe cannot run (for example `nvfp4`
    with RHT on f32 activations) fails verification after the pass, with the
    op's location.

    ```mlir
    // te-opt --te-apply-recipe="recipe=fp8-delayed"
    %y = te.linear %x weight(%w) : (tensor<8x64xbf16>, tensor<32x64xbf16>) -> tensor<8x32xbf16>
    // becomes
    %y = te.linear %x weight(%w) recipe(#te.fp8_delayed<>) : ...
    ```
  }];
  let options = [
    Option<"recipe", "recipe", "std::string", /*default=*/"\"bf16\"",
           "Recipe to apply: bf16, fp8-delayed, fp8-current, fp8-block, "
           "mxfp8 or nvfp4">,
    Option<"override", "override", "bool", /*default=*/"false",
           "Replace recipes already set on ops">
  ];
  let dependentDialects = ["::mlir::te::TEDialect"];
}

#endif // TE_TRANSFORMS_PASSES_TD
