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

def TEDescribePass : Pass<"te-describe", "::mlir::ModuleOp"> {
  let summary = "Report what every te op produces, saves and consumes (JSON)";
  let description = [{
    Writes one JSON record per te module op, in program order, describing it
    without running anything (its fake-tensor semantics): `op`, `loc`,
    `recipe` and `effective_recipe` (`bf16` when the recipe's alignment is
    not met and the op falls back, with `fallback` saying why and a remark at
    the op), `runtime_checks` (alignment conditions on dynamic dims),
    `outputs`, `quantized` (GEMM operands with their usage, `!te.qtensor`
    type and `inner`, the list of its buffers with name, shape and dtype),
    `saved` (each with `aliases`
    = `input:N`, `output:N` or null), `saved_bytes` (aliases excluded),
    `grads` (`in`: one per differentiable output, the norm output's marked
    optional; `out`: one per differentiable input), `state` (delayed
    scaling's amax history and scales) and `workspace_bytes` (forward
    buffers freed before the op returns, cuBLASLt workspace excluded).
    Dynamic dims are printed as expressions over `d<i>`, the input's
    dynamic dim i. The IR is left unchanged.
  }];
  let options = [
    Option<"out", "out", "std::string", /*default=*/"\"-\"",
           "Output file for the JSON report ('-' for stdout)">,
    Option<"arch", "arch", "std::string", /*default=*/"\"hopper\"",
           "Architecture class: hopper or blackwell">,
    Option<"mode", "mode", "std::string", /*default=*/"\"training\"",
           "training (saved tensors and gradients) or inference">,
    Option<"pretty", "pretty", "bool", /*default=*/"false",
           "Indent the JSON instead of one record per line">
  ];
  let dependentDialects = ["::mlir::te::TEDialect"];
}

#endif // TE_TRANSFORMS_PASSES_TD
