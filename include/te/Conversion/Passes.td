//===- Passes.td - TE conversion passes --------------------*- tablegen -*-===//
//
// The lowerings between levels: torch-mlir exports to te (te-import-torch)
// and te primitives to the runtime ABI in the LLVM dialect
// (te-lower-to-runtime).
//
//===----------------------------------------------------------------------===//

#ifndef TE_CONVERSION_PASSES_TD
#define TE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def TEImportTorchPass : Pass<"te-import-torch", "::mlir::ModuleOp"> {
  let summary = "Raise torch-mlir exports to te module ops";
  let description = [{
    Rewrites every function whose signature or body uses the `torch` import
    subset into builtin tensors and `te` ops:

    - `aten.layer_norm` / `aten.rms_norm` over the last dim feeding
      `aten.linear` becomes `te.layernorm_linear` (`return_layernorm_output`
      when the norm output has other users, which then read the op's second
      result; further linears on the same norm output become `te.linear`).
    - norm + linear + activation + linear becomes `te.layernorm_mlp`:
      `gelu(approximate="tanh")` (TE's gelu), `gelu()` (erf, `gelu_erf`),
      `relu`, `silu`, quick-GELU
      (`x * sigmoid(1.702 x)`), squared ReLU (`relu(x)**2`), and the gated
      forms `act(a) * b` with `a`, `b` from two linears on the norm output
      (FC1 weights concatenated, activated half first) or from one linear
      split in two halves (`split`/`split_with_sizes`/`chunk` +
      `ListUnpack`).
    - a norm weight `add.Scalar(gamma, 1, 1)` becomes `zero_centered_gamma`.
    - a lone `aten.linear` becomes `te.linear`; `aten.add.Tensor` (alpha 1)
      of two tensors becomes `arith.addf`.
    - `torch.vtensor.literal` weights become `arith.constant`s of the
      module (the same dense resources); parameters passed as function
      arguments stay arguments.

    Partial raising (the default): a function that is recognized as a
    whole is rewritten as above, on builtin tensors. In any other function
    every recognized block is raised in place and every other op is left
    as it was, with one remark at its location naming it and why it was
    left (the recognizers' reason, e.g. a norm over more than the last dim
    or a gated erf GELU, else "not part of a recognized module"; constants,
    lists and symbolic shape ops get none). Where a torch value meets a te
    op, torch-mlir's bridge ops `torch_c.to_builtin_tensor` /
    `torch_c.from_builtin_tensor` connect them, so that the function stays
    valid torch-mlir; `te-outline-raised` then moves each raised op into a
    function of its own (docs/partition.md).

    `strict=true`: all or nothing. Anything not recognized, and every near
    miss (a norm over more than the last dim, a linear whose weight does
    not match, a gated erf GELU), is an error naming the op, its location
    and what is supported. Malformed torch ops (operand counts torch-mlir
    does not produce) are errors in both modes. `recipe` sets the recipe
    of the created ops.
  }];
  let options = [
    Option<"recipe", "recipe", "std::string", /*default=*/"\"\"",
           "Recipe of the created te ops (te-compile --recipe names, or a "
           "recipe attribute, quoted when it has spaces: "
           "recipe='#te.nvfp4<rht = false>'); empty for none (bf16)">,
    Option<"strict", "strict", "bool", /*default=*/"false",
           "All or nothing: an op that is not part of a recognized module "
           "is an error (default: raise what is recognized, leave the rest "
           "with a remark)">
  ];
  let dependentDialects = [
    "::mlir::te::TEDialect", "::mlir::te::torch_c::TorchConversionDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::func::FuncDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def TEOutlineRaisedPass : Pass<"te-outline-raised", "::mlir::ModuleOp"> {
  let summary = "Outline the te module ops of partially raised functions";
  let description = [{
    In each function that still has torch ops or torch types (a function
    te-import-torch raised in part), moves each te module op
    (`te.layernorm_linear`, `te.layernorm_mlp`, `te.linear`) into a
    function of its own on builtin tensors and replaces it by a
    `func.call`. The outlined function takes the op's operands in order
    (each distinct value once) and returns all of its results; the
    builtin-tensor ops that feed only it (`arith.constant` ones for a
    missing gamma, the `tensor.concat` of a two-linear gated FC1's weights,
    the `linalg.transpose` of a GPT-2 Conv1D weight, ...) move with it,
    and constants used elsewhere too are cloned in. It is named
    `<func>_<opkind>_<index>`, e.g. `main_layernorm_mlp_0`, with `<index>`
    counting that kind of op in program order within `<func>` (the next
    free index if that name is taken). Functions on builtin tensors only
    (fully imported ones) are left as they are.

    ```mlir
    %x = torch_c.to_builtin_tensor %arg0 : !torch.vtensor<[4,32],f32> -> tensor<4x32xf32>
    %0 = call @main_layernorm_mlp_0(%x, %g, %b, ...) : (tensor<4x32xf32>, ...) -> tensor<4x32xf32>
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def TELowerToRuntimePass : Pass<"te-lower-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lower L2 primitives to LLVM-dialect entry points calling te_rt_*";
  let description = [{
    Turns every function of L2 primitives (after te-decompose) into an entry
    point `int32_t te_entry_<name>(te_rt_context *ctx, void *const *args,
    void *const *results, const int64_t *dims)` in the LLVM dialect that
    calls the runtime ABI (TERuntime.def), checks every status and returns
    the first failure. `dims` holds one value per class of dynamic dims that
    the program requires equal, in order of first appearance among the
    arguments.

    Quantized recipes' alignment on dynamic dims (te-describe's
    `runtime_checks`, e.g. `d0 % 128 == 0` under fp8-block) is checked on
    entry, before anything is allocated, by `te_rt_check_multiple`, once per
    distinct condition: the entry fails with
    "<name>: recipe R needs <condition>, got <value>".

    Memory planning: every intermediate tensor gets a slot of one arena,
    allocated once per call; tensors whose live ranges do not overlap share
    a slot, whose size is the largest member's (computed at run time, so
    the plan is valid for any dynamic dims); slots are 256-byte aligned.
    Returned tensors are written in place into the caller's result buffers;
    reshapes are views. Constants (weights frozen into an export) are
    copied from read-only globals into their slot.

    A function `const char *te_module_info(void)` returns a JSON description
    of the entries: for each, `name`, `symbol`, `args` and `results`
    (`dtype`, `shape` with `d<k>` for the k-th dynamic dim, and the te.*
    attributes: `te.saved`, `te.alias`, `te.grad_of`, `te.state`), `dims`
    (where the caller reads each: argument and dim), `arena_slots` and
    `arena_bytes` (the planned peak, or "dynamic").

    Layer deduplication (`dedup-layers`): a function's body is cut into
    segments, the maximal runs of consecutive ops with the same location
    (the ops te-generate-backward and te-decompose make from one module op
    carry its location; the residual add between layers has its own). A
    segment can be outlined: its runtime calls go into an internal
    `noinline` function `te_segment_<k>(ctx, <values it reads>...) -> i32`
    (each buffer, planned by the entry as before, as a base and a byte
    offset: the arena and its slot's offset, or an argument's, result's or
    constant's address and 0; then the dims; it returns the first failing
    status), called from the entry, which branches to its failure exit on
    a non-zero status; the entry computes the addresses it passes at the
    call, so none lives across layers. Outlined functions that are structurally the same (ops,
    attributes, types, argument use; locations aside) are one function:
    identical layers are compiled once by LLVM's code generator. The calls
    made at run time, in order, with their arguments, and the arena plan
    and the module description are those of the inlined form. `off` (the
    default here) outlines nothing; `auto` (te-compile's and te-pipeline's
    default) outlines the segments (of 2 ops or more) whose ops and types
    repeat within their function, e.g. a stack of identical layers; `on`
    outlines every segment of 2 ops or more.
  }];
  let options = [
    Option<"dedupLayers", "dedup-layers", "::mlir::te::DedupLayersOption",
           /*default=*/"::mlir::te::kDefaultPassDedupLayers",
           "Outline segments (the ops of one module op) into shared "
           "functions: off, auto (segments that repeat in their function) "
           "or on (every segment)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // TE_CONVERSION_PASSES_TD
