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
    Attaches a recipe to every `te.layernorm_linear`, `te.layernorm_mlp` and
    `te.linear` nested under the pass's anchor: a recipe name, with
    TransformerEngine's default parameters, or a recipe attribute with its
    own parameters (`recipe=#te.nvfp4<rht = false>`, what te-compile
    `--recipe` passes through). Ops that already carry a recipe keep it
    unless `override` is set. The pass backs `te-compile --recipe`, and the
    recipe names are its: `bf16`, `fp8-delayed`, `fp8-current`, `fp8-block`,
    `mxfp8`, `nvfp4` (what each means: [dialect.md](../dialect.md#recipes)).
    An unknown name is an error listing the valid ones, and an op the recipe
    cannot run (for example `nvfp4` with RHT on f32 activations) fails
    verification after the pass, with the op's location.

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
           "mxfp8, nvfp4, or a recipe attribute, quoted inside the pass "
           "options when it has spaces: "
           "--te-apply-recipe=\"recipe='#te.nvfp4<rht = false>'\" (or "
           "written without spaces: recipe=#te.nvfp4<rht=false>)">,
    Option<"override", "override", "bool", /*default=*/"false",
           "Replace recipes already set on ops">
  ];
  let dependentDialects = ["::mlir::te::TEDialect"];
}

def TEDescribePass : Pass<"te-describe", "::mlir::ModuleOp"> {
  let summary = "Report what every te op produces, saves and consumes (JSON)";
  let description = [{
    The fake-tensor report of [dialect.md](../dialect.md#fake-tensor-semantics):
    writes one JSON record per te module op, in program order, describing it
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

    After te-generate-backward, one more record per trained function gives
    its saved bundle as `@f_bwd`'s signature holds it: `function`,
    `forward`, `backward`, `bundle` (entries in argument order: `name`,
    `shape`, `dtype`, `bytes`, `aliases` = `input:N`/`output:N`/null, and
    `type`/`usage`/`inner` for quantized entries; dynamic dims are `d<i>` of
    that entry), `bundle_bytes` (what the forward saves), `aliased_bytes`
    (what aliasing spared) and `grads` (`in`/`out` with `of`).
  }];
  let options = [
    Option<"out", "out", "std::string", /*default=*/"\"-\"",
           "Output file for the JSON report ('-' for stdout)">,
    Option<"arch", "arch", "::mlir::te::ArchOption",
           /*default=*/"::mlir::te::kDefaultArch",
           "Architecture class: hopper or blackwell">,
    Option<"mode", "mode", "::mlir::te::DescribeModeOption",
           /*default=*/"::mlir::te::kDefaultDescribeMode",
           "training (saved tensors and gradients) or inference">,
    Option<"pretty", "pretty", "bool", /*default=*/"false",
           "Indent the JSON instead of one record per line">
  ];
  let dependentDialects = ["::mlir::te::TEDialect"];
}

def TETensorParallelPass : Pass<"te-tensor-parallel", "::mlir::ModuleOp"> {
  let summary = "Shard te module ops over a tensor-parallel group (TE's layout)";
  let description = [{
    Turns every function of a single-device model (global shapes, as
    exported) into one rank's program of a tensor-parallel group of `size`
    ranks, with TransformerEngine's placements (reference/tensor-parallel.md
    §1-2, §9; what te-mlir does with them:
    [tensor-parallel.md](../tensor-parallel.md)): each `te.layernorm_linear` column-parallel, each
    `te.layernorm_mlp` FC1 column- then FC2 row-parallel, with sequence
    parallelism when asked. The argument and result types become the
    rank's shapes, the ops get `tp = #te.tp<...>`, and te-decompose places
    the collectives.

    Every argument and result gets `te.tp_shard`, how the rank's tensor
    relates to the global one (what te-run --tp and the PyTorch layer slice
    and gather by): `rows` (dim 0 split into `size` blocks, block `rank`),
    `cols` (the last dim split), `gated_rows` (a gated FC1 weight or bias:
    each half of dim 0 split, the rank holding its block of both) or
    `replicated`. Replicated parameters whose gradients are partial sums
    under sequence parallelism (the norm weights, FC2's bias; Megatron-LM
    sums them over the group) also get `te.tp_grad = "partial"`, unless
    `reduce-param-grads` makes the backward all-reduce them. The function
    gets `te.tp = "<size>"` and `te.sequence_parallel`.

    Parameters may reach their module op as torch-mlir exports them
    (te-import-torch): a gated FC1 weight as the `tensor.concat` of its two
    halves (each split along its rows) and a transposed weight as a
    `linalg.transpose` (GPT-2's Conv1D: the other dim of the parameter is
    split). Values flow between module ops, and through elementwise ops (a
    residual add), only with the same layout (an MLP's sequence-parallel output into
    the next MLP); anything else (a column-sharded LayerNormLinear output
    into a module op, a reshape of a sharded value) is an error naming the
    op: te-mlir places no resharding collectives of its own. `te.linear` is
    not sharded yet.

    ```
    te-opt --te-tensor-parallel="size=2 sequence-parallel" model.mlir
    ```
  }];
  let options = [
    Option<"size", "size", "int64_t", /*default=*/"2",
           "ranks of the tensor-parallel group (2..1024)">,
    Option<"sequenceParallel", "sequence-parallel", "bool",
           /*default=*/"false",
           "shard the norm region along the rows (Megatron-LM's sequence "
           "parallelism): all-gather before FC1, reduce-scatter after FC2">,
    Option<"reduceParamGrads", "reduce-param-grads", "bool",
           /*default=*/"false",
           "with sequence-parallel: all-reduce the norm-weight and FC2-bias "
           "gradients in the backward instead of returning them partial">,
  ];
  let dependentDialects = ["::mlir::te::TEDialect",
                           "::mlir::func::FuncDialect"];
}

def TEGenerateBackwardPass : Pass<"te-generate-backward", "::mlir::ModuleOp"> {
  let summary = "Emit forward (with saved bundle) and backward functions";
  let description = [{
    For every public function `@f` that contains te module ops, adds, next
    to it,

    - `@f_fwd(args...) -> (results..., fresh bundle entries...)`: `@f`'s
      arguments; `@f`'s results followed by the saved bundle's fresh
      entries (result attribute `te.saved = "<name>"`);
    - `@f_bwd(bundle..., one gradient per float result) -> (one gradient
      per float argument)`: the whole saved bundle in order (argument
      attribute `te.saved`; entries that alias a forward argument or result
      also carry `te.alias = "input:N"` / `"output:N"`), then one gradient
      per float result (`te.grad_of = "output:N"`; a returned norm output's
      gradient is marked `te.optional_grad`); results: one gradient per
      float argument (`te.grad_of = "input:N"`).

    `@f` itself stays (the inference entry).

    **The saved bundle.** What each module op saves comes from its
    description (the same `ModuleOpInterface::describe` te-describe prints,
    in training mode). An intermediate (`mu`, `rsigma`, `ln_out`, `fc1_out`,
    `act_out`, a quantized weight workspace) is taken with `te.saved`
    (`%mu = te.saved %y["mu"]`, verified against the description: name,
    exact type, not an alias), a quantized one with only the usages the
    backward reads. A saved value that is an argument or a result of `@f`
    is not saved again: the bundle records it as `input:N` / `output:N` and
    the caller passes its own copy. A value several ops need (a shared
    input, a block's output feeding the next block) is one entry. Constants
    (weights frozen into an export) are rematerialized in `@f_bwd`, never
    saved. Names are `<op>_<index>.<what>`, e.g. `layernorm_mlp_0.fc1_out`.
    te-describe adds a record per trained function with the bundle's
    layout, `bundle_bytes` (what the forward keeps) and `aliased_bytes`
    (what dedup spared); `dedup=false` saves copies, to measure.

    **Frozen arguments.** An argument with the unit attribute `te.frozen`
    (`%w: tensor<32x64xbf16> {te.frozen}`: a weight with
    `requires_grad=False`) wants no gradient: `@f_bwd` returns none for it
    (its `te.grad_of = "input:N"` result is simply absent), nor for values
    computed from frozen arguments (and constants) only. A frozen weight of
    `te.linear`, `te.layernorm_linear` or `te.layernorm_mlp` (FC1 and FC2
    each) has no wgrad GEMM, and what only that GEMM reads is not saved:
    the GEMM input of `te.linear`, the norm output (`ln_out`) of
    `te.layernorm_linear` and of the MLP's FC1, the activation output
    (`act_out`) of its FC2 (BackwardOpInterface::needsSaved). Under FP8 the
    gradient that only the left-out wgrad reads transposed (the output
    gradient, the activation's gradient for FC1) is quantized rowwise only,
    and the forward quantizes the unsaved input rowwise only, as
    TransformerEngine does for `requires_grad=False`. A frozen bias gets no
    gradient. Without `te.frozen` nothing changes.

    **main_grad.** An argument with the unit attribute `te.main_grad`
    (`%w: tensor<32x64xbf16> {te.main_grad}`: a weight under TE's
    `fuse_wgrad_accumulation`, Megatron's fp32 `main_grad`) gets an fp32
    `@f_bwd` argument of its shape, `te.main_grad_of = "input:N"`, after the
    backward recipe state; its gradient result is fp32, `main_grad +
    gradient` (`arith.addf` of `arith.extf`), with `te.grad_of` and
    `te.main_grad_of = "input:N"`. te-fuse-gemm-epilogues folds the add into
    the wgrad GEMM (`te.gemm nt ... accumulate(%main)`), so the gradient is
    never rounded to the weight's dtype, and a caller may pass the
    main_grad's buffer as that result's: the GEMM accumulates in place.
    Refused with `te.frozen` or `te.tp_shard`.

    **Backward ops.** Module ops get their backward ops
    (`te.layernorm_linear_bwd`, `te.layernorm_mlp_bwd`, `te.linear_bwd`),
    which take the gradients in and the saved tensors by name and produce
    one gradient per forward operand (biases per `with_*` flags). Their
    verifiers check shapes against each other, that saved GEMM operands are
    all quantized (under the op's recipe, with the columnwise copy the
    dgrad/wgrad GEMM reads) or all high precision (bf16, or an alignment
    fallback), and the gradient types. The glue the importer leaves between
    and before module ops is differentiated too: residual `arith.addf`,
    casts, static reshapes, `tensor.concat` of gated FC1 weights,
    `tensor.extract_slice`, weight `linalg.transpose`; the gradients of a
    value used several times (a residual block's input, read by the block
    and by the add) are summed.
    Any other op on a gradient path, one with no derivative rule, is an
    error at its location.

    **Checkpointing.** A `te.layernorm_mlp` with `checkpoint` saves only its
    operands (inputs and parameters). `@f_bwd` starts its backward with a
    `te.recompute` region that re-runs norm, FC1 and the activation: the
    inputs become block arguments, the forward op (without `checkpoint`)
    runs inside, and only `te.saved` intermediates are yielded, so FC2 is
    dead. The region is `IsolatedFromAbove` and side-effect free, and its
    verifier rejects backward ops, nested checkpoints, side effects and
    yields of anything but `te.saved` values: CSE cannot merge across it, so
    recompute never turns back into saving. `checkpoint=true`
    (`te-compile --checkpoint`) checkpoints every MLP.

    **Delayed scaling state** is explicit. Module ops take an optional
    `scales(%s)` operand (`[3 x GEMMs]` forward, `[2 x GEMMs]` backward),
    `te.amax` reads the amaxes an op recorded, and `te.amax_update` does
    TE's history roll and scale update (§4.1). The pass adds, per delayed
    op, `amax_history_fwd`/`scales_fwd` arguments and updated results to
    `@f_fwd` (tagged `te.state`), and the backward pair to `@f_bwd`. A
    checkpointed MLP keeps the forward scales in its bundle so that the
    recompute quantizes exactly as the forward did.

    Measured: every committed export under every recipe, with and without
    checkpointing (242 configurations; NVFP4 with RHT is rejected on the f32
    exports, as the verifier requires), generates and verifies
    (`test/Transforms/te-generate-backward-exports.mlir`).
  }];
  let options = [
    Option<"arch", "arch", "::mlir::te::ArchOption",
           /*default=*/"::mlir::te::kDefaultArch",
           "Architecture class of quantized saved tensors: hopper or "
           "blackwell">,
    Option<"dedup", "dedup", "bool", /*default=*/"true",
           "Do not save tensors that alias a function argument or result, "
           "and save a value several ops need once (false: every op saves its "
           "own copy; for measuring)">,
    Option<"checkpoint", "checkpoint", "bool", /*default=*/"false",
           "Checkpoint every te.layernorm_mlp (te-compile --checkpoint)">
  ];
  let dependentDialects = ["::mlir::te::TEDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TEThreadRecipeStatePass : Pass<"te-thread-recipe-state", "::mlir::ModuleOp"> {
  let summary = "Make delayed-scaling state explicit in functions that lack it";
  let description = [{
    A delayed-scaling module op (`#te.fp8_delayed`) quantizes with scales
    from an amax history and records this step's amaxes (reference §4.1).
    For every function whose module ops run under delayed scaling without a
    `scales` operand (the inference entry `@f`, or every function when
    compiling without `--train`), the state becomes explicit the way
    te-generate-backward makes it for `@f_fwd`: per op, arguments
    `<op>_<i>.amax_history_fwd` [len, slots] and `<op>_<i>.scales_fwd`
    [slots] (tagged `te.state`) and the updated pair returned after the
    results (`te.amax` + `te.amax_update`). Functions already threaded are
    left alone.
  }];
  let dependentDialects = ["::mlir::te::TEDialect",
                           "::mlir::func::FuncDialect"];
}

def TEDecomposePass : Pass<"te-decompose", "::mlir::ModuleOp"> {
  let summary = "Decompose module ops into L2 primitives";
  let description = [{
    Rewrites `te.layernorm_linear`, `te.layernorm_mlp`, `te.linear`, their
    backward ops and `te.recompute` regions into level-2 primitives, in
    TransformerEngine's kernel order (§1.3, §1.5, §2.3, §2.5):

    - LayerNormLinear: `te.norm_fwd`, `te.gemm tn` (fprop, bias in the
      GEMM); backward: `te.gemm nn` (dgrad), `te.gemm nt` (wgrad),
      `te.bias_grad`, the returned norm output's gradient added,
      `te.norm_bwd`.
    - LayerNormMLP: norm, FC1 `tn`, `te.act`, FC2 `tn`; backward: FC2 dgrad
      and wgrad, FC2 bias gradient, `te.dact` on the saved pre-activation,
      FC1 bias gradient, FC1 dgrad and wgrad, norm backward.
    - Linear: `te.gemm tn`; backward `nn`, `nt`, bias gradient.

    `te.saved` values become the primitive results that compute them; a
    `te.recompute` region is inlined into the backward, where its unused FC2
    is dead and removed.

    **Per-tensor FP8** (`fp8-current`, `fp8-delayed`; Hopper layout)
    decomposes the way TE quantizes (§0.1, §0.2, §1.3-§2.5): `te.quantize`
    turns the norm output, each weight (marked `{weight}`) and the
    activation output into `!te.qtensor` values in the forward format (E4M3
    under HYBRID), and, before their dgrad/wgrad GEMMs, the incoming
    gradient and the activation gradient into the backward format (E5M2)
    with both copies. The GEMMs read the quantized operands in the usage
    TE's `general_gemm` reads (`tn`: both rowwise; `nn`: lhs rowwise, rhs
    columnwise; `nt`: both columnwise). Bias gradients come from the
    high-precision gradients (an FP8 GEMM has no bias-gradient epilogue: the
    remark of te-fuse-gemm-epilogues says so), the activation derivative
    reads the saved high-precision pre-activation. A save that keeps only
    the columnwise copy (LayerNormLinear's `ln_out`, Linear's input) is a
    `te.drop_usage` of the `both` value. LayerNormMLP's activation output
    is quantized rowwise only and saved so (TE's FC2 input quantizer under
    per-tensor FP8, §0.2); its backward first makes the columnwise copy
    that FC2's wgrad reads with `te.add_columnwise` (the transpose of the
    FP8 bytes, TE's `update_usage`, §2.5). Delayed scaling: each quantization
    takes `scale(%scales[slot])`, its scale from the op's `scales` vector at
    TE's quantizer slot (§0.2; forward: GEMM1 input, weight, output, GEMM2
    input, weight, output; backward: GRAD_OUTPUT1, GRAD_INPUT1,
    GRAD_OUTPUT2, GRAD_INPUT2), and `te.amax` becomes the `tensor.concat` of
    the amaxes the quantizations recorded (0 for unused slots), which
    `te.amax_update` folds into the history.

    **Float8 block scaling** (`fp8-block`, §4.4; Hopper) decomposes at the
    same points with E4M3 everywhere (gradients too) and the block shape of
    each role: 1x128 blocks for the norm/activation outputs (`x_block_dim`)
    and gradients (`grad_block_dim`), 128x128 (`block_2d` on the type) for
    weights (`w_block_dim`), power-of-two scales unless `fp32_scales`.
    Columnwise copies are quantized from the transposed high-precision
    tensor (independently of the rowwise copy for 1x128 blocks, the byte
    transpose for 128x128). The recipe is stateless: no scales operand, no
    amax (`te.quantize` has no amax result), no `te.amax`. Bias gradients
    are the high-precision sums, as in TE.

    **MXFP8** (`mxfp8`, §4.3) is a Blackwell recipe: E4M3 everywhere, one
    E8M0 scale per 32 elements along the contraction dim, every columnwise
    copy (weights included) a separate quantization in the tensor's own
    layout, scales `swizzled` for the GEMM; stateless like fp8-block.

    **NVFP4** (`nvfp4`, §4.5) is Blackwell's too: E2M1 everywhere with E4M3
    block scales (`swizzled`) and an fp32 global amax per copy inside the
    qtensor; weights in 16x16 tiles (`block_2d` when `weight_2d`), the norm
    output, the activation and the gradients with the random Hadamard
    transform on their columnwise (wgrad) copies (the type's `rht` flag
    when the recipe's `rht`; te.gemm refuses a GEMM whose transformed
    operand meets an untransformed one), gradients rounded stochastically
    (`te.quantize {stochastic_rounding, seed = N}`, the function's SR
    quantizations numbered 0, 1, ... in program order).

    `arch` is the GPU class the quantized values are laid out for: hopper
    (per-tensor FP8, fp8-block) or blackwell (mxfp8, nvfp4). A recipe asked
    for in the other class's layout is an error naming the recipe and the
    `--arch` it needs (so MXFP8 and NVFP4 decompose only for
    `--arch blackwell` saves, and Blackwell per-tensor layouts are
    refused). Row-scaled NVFP4 stops here with an error too: it is not
    decomposed yet (an op on its alignment fallback runs the bf16 path).

    A module op whose quantized recipe cannot apply (e.g. `fp8-block` or
    `mxfp8` with a GEMM dim that is not a multiple of the block) runs on the
    unquantized path, as TE would refuse to quantize it; the user asked for
    the recipe, so this is a warning at the op saying why, and an error
    under `strict-recipe`.
  }];
  let options = [
    Option<"arch", "arch", "::mlir::te::ArchOption",
           /*default=*/"::mlir::te::kDefaultArch",
           "Architecture class of the quantized layouts: hopper or blackwell">,
    Option<"strictRecipe", "strict-recipe", "bool", /*default=*/"false",
           "Make a quantized recipe that cannot apply to a module op (its "
           "GEMM dims not multiples of the recipe's block) an error instead "
           "of a warning">
  ];
  let dependentDialects = ["::mlir::te::TEDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TESplitWgradPass : Pass<"te-split-wgrad", "::mlir::ModuleOp"> {
  let summary = "Split the deferred weight gradients out of a backward";
  let description = [{
    TransformerEngine's `delay_wgrad_compute` ahead of time: the input
    gradients now, the weight gradients when the caller asks for them
    (`backward_dw()`). For every backward `@f_bwd` whose forward has
    arguments tagged `te.delay_wgrad` (unit), the results that are their
    gradients (`te.grad_of` or `te.main_grad_of` "input:N") move to a new
    entry `@f_bwd_wgrad` (`te.wgrad_of = @f_bwd`) with every op only they
    need. `@f_bwd` keeps what its other results need and returns, after
    them, the values the moved ops still read (`te.wgrad_stash = "stashK"` on the
    result and on `@f_bwd_wgrad`'s argument); `@f_bwd_wgrad` takes those and
    the backward arguments the moved ops read (with their roles: `te.saved`,
    `te.grad_of`, `te.main_grad_of`, ...). Arguments only the weight
    gradients read leave `@f_bwd`. Running `@f_bwd` then `@f_bwd_wgrad`
    gives the unsplit backward's results bit for bit (the same ops on the
    same values). A tagged argument's gradient that an op of the others
    computes too (FP8's bias gradient, a by-product of the output
    gradient's cast; a bias gradient in the epilogue of a wgrad GEMM whose
    weight is not tagged) stays in `@f_bwd`, with a remark: it is ready with
    them. A stashed quantized value with both usages whose moved readers
    are all GEMMs reading its columnwise copy is stashed as `te.drop_usage`
    to columnwise (a view of its buffer's prefix: TE keeps the output
    gradient's columnwise data alone for a delayed wgrad); its rowwise copy
    dies with the dgrad instead of waiting for `backward_dw()`. Errors: the
    attribute with `te.frozen` or `te.tp_shard`, on a non-float argument,
    or on a function without a backward. Runs last before
    te-lower-to-runtime, on the fused ops.
  }];
  let dependentDialects = ["::mlir::te::TEDialect",
                           "::mlir::func::FuncDialect"];
}

def TEForkAmaxUpdatePass : Pass<"te-fork-amax-update", "::mlir::func::FuncOp"> {
  let summary = "Let delayed scaling's amax updates run beside the GEMMs after them";
  let description = [{
    A `te.amax_update` reads the amax vector its step's casts record and
    the recipe state the function takes, and writes the new state the
    function returns: nothing after the last cast that records one of its
    amaxes depends on it. This pass moves each such update (with the
    `tensor.concat` that assembles its amax vector and that concat's zero
    parts) to right after that cast and marks it `te.fork`:
    te-lower-to-runtime then calls `te_rt_amax_update_fork`, which in a
    CUDA graph (the runtime's entry graphs, torch's reduce-overhead) runs
    the update on a branch beside the GEMMs that follow, joined at the
    entry's end (`te_rt_arena_release`), and the memory plan keeps the amax
    vector's slot to the end of the function. At the seeds' 16 tokens an
    update is a 2-3 µs kernel on the graph's path, two per delayed step.

    ```mlir
    %q, %a0 = te.norm_quantize %x ... scale(%s[0]) ...
    %w, %a1 = te.quantize %w0 scale(%s[1]) {weight} ...
    %y = te.gemm tn %q, %w ...
    %v = tensor.concat dim(0) %a0, %a1, %zero ...
    %h2, %s2 = te.amax_update %h, %s, %v recipe(#te.fp8_delayed<>) ...
    // becomes
    %w, %a1 = te.quantize %w0 scale(%s[1]) {weight} ...
    %v = tensor.concat dim(0) %a0, %a1, %zero ...
    %h2, %s2 = te.amax_update %h, %s, %v recipe(#te.fp8_delayed<>) {te.fork} ...
    %y = te.gemm tn %q, %w ...
    ```

    An update is left as it is (in order, no mark) when anything but the
    function's return reads its results, when an op after its new place
    reads the history or the scales it reads, or when its amax vector is
    not a static concat (or a value) of the same block that only it reads.
    The lowering forks only updates whose results are computed in place in
    the caller's buffers (no copy out of the arena at the entry's end);
    the others run in order. Runs after the fusions, before
    te-lower-to-runtime.
  }];
  let dependentDialects = ["::mlir::te::TEDialect",
                           "::mlir::tensor::TensorDialect"];
}

def TEForkBranchesPass : Pass<"te-fork-branches", "::mlir::func::FuncOp"> {
  let summary = "Let weight gradients and weight casts of few rows run on branches of a CUDA graph";
  let description = [{
    At few rows every kernel of a training step is a 2-4 µs node of the
    step's CUDA graph and the step's time is the length of the graph's
    longest path. Two kinds of ops are off the path of the ops after them:

    - a backward's weight-gradient GEMMs (`te.gemm nt`), whose results are
      only returned: the dgrad GEMM, the activation's derivative and the
      norm's backward after them never wait for them;
    - a forward's weight casts (`te.quantize {weight}`), which read only
      arguments: the norm before the first GEMM needs none of them, and
      the second GEMM's weight can be cast beside the first GEMM.

    This pass moves each wgrad GEMM whose results are only returned (with
    the `te.add_columnwise` copies only it reads), and each weight cast
    whose quantized weight only GEMMs read (or the return), when a GEMM
    involved has static rows (tokens) of at most `max-rows`, to right after
    the last op that defines one of its operands, and marks it `te.branch`.
    te-lower-to-runtime brackets each marked op with `te_rt_branch_begin` /
    `te_rt_branch_end` and calls `te_rt_branch_join` (up to the latest run
    it needs) before the first unmarked op that reads what a marked op
    wrote, and for everything at the entry's end: in a CUDA graph (the
    runtime's entry graphs, torch's reduce-overhead, `te_rt_capture_begin`)
    the marked ops are a branch beside the ops after them, with a stream,
    GEMM workspace and scratch of their own and the same GEMM algorithms
    (the same bits); elsewhere everything runs in order. The memory plan
    keeps every value a marked op reads or writes live until its join, so
    that nothing beside it shares their memory: a few slots at few rows,
    which `max-rows` bounds (at many rows the GEMMs fill the GPU and a
    branch gains little).

    ```mlir
    %t = te.add_columnwise %act ...        // only the wgrad reads it
    %dyq, %a, %db = te.dbias_quantize %dy ...
    %dw = te.gemm nt %dyq, %t ...          // returned
    %dx = te.gemm nn %dyq, %w ...
    // becomes
    %dyq, %a, %db = te.dbias_quantize %dy ...
    %t = te.add_columnwise %act ... {te.branch}
    %dw = te.gemm nt %dyq, %t ... {te.branch}
    %dx = te.gemm nn %dyq, %w ...
    ```

    An op is left as it is when the rows of its GEMMs are dynamic or above
    `max-rows`, when anything but the return reads a wgrad's results (or
    anything but GEMMs and the return a cast weight), or when no op of the
    dialect would run beside it (a function of wgrads only, such as
    te-split-wgrad's). Runs after te-fork-amax-update, before
    te-lower-to-runtime.
  }];
  let options = [
    Option<"maxRows", "max-rows", "int64_t", /*default=*/"256",
           "The most rows (tokens, static) of a GEMM whose wgrad or weight "
           "cast is put on a branch; 0 puts none">
  ];
  let dependentDialects = ["::mlir::te::TEDialect"];
}

def TEWeightCachePass : Pass<"te-weight-cache", "::mlir::ModuleOp"> {
  let summary = "Add forward entries that reuse cached FP8 weights";
  let description = [{
    TransformerEngine's FP8 weight cache (reference §1.2) ahead of time
    (`te-compile --weight-cache`): with `is_first_microbatch` true TE
    refreshes the quantized weight, with false it reuses it. Ahead of time
    that is two entry points. For every decomposed training forward
    `@f_fwd` whose weights are quantized (`te.quantize {weight}` of a
    function argument), which quantizes them and returns them in its saved
    bundle (`is_first_microbatch` true), this pass adds `@f_fwd_cached`
    (false): the same forward taking each quantized weight as an extra
    argument (tagged `te.cached_weight` with the saved-bundle name `@f_fwd`
    returns it under) instead of quantizing it. Call `@f_fwd` on the first
    micro-batch and `@f_fwd_cached` with its saved weights on the following
    ones; the results are bit-identical while the weights are unchanged.
    Under delayed scaling the cached weights' amax slots record 0 (no
    quantization ran), as in TE.

    `@f_fwd_cached` returns the cached weights again as its saved results
    (the backward reads them there); a caller that passes those result
    buffers themselves as the cached-weight arguments (bench/bench.py does)
    moves no weight bytes for that, since `te_rt_copy` of a buffer onto
    itself does nothing. Runs after te-decompose.
  }];
  let dependentDialects = ["::mlir::te::TEDialect",
                           "::mlir::arith::ArithDialect"];
}

def TEFuseGemmEpiloguesPass : Pass<"te-fuse-gemm-epilogues"> {
  let summary = "Fold bias gradients (BGRADB) and, by mode, GELU into GEMM epilogues";
  let description = [{
    A `te.bias_grad %dy` whose `%dy` a `te.gemm nt %dy, %x` (wgrad) also
    reads becomes that GEMM's second result: the bias gradient comes out of
    the GEMM's epilogue (cuBLASLt BGRADB), as TransformerEngine's bf16
    backward does for both biases of LayerNormLinear and LayerNormMLP. A
    bias gradient with no such GEMM stays and gets a remark saying why (an
    FP8 GEMM has no bias-gradient epilogue, for one).

    **main_grad.** First, a function result marked `te.main_grad_of`
    computed as `arith.addf %main, (arith.extf) %dw` (te-generate-backward's
    form for a `te.main_grad` argument) whose `%dw` is a `te.gemm nt` read by
    nothing else becomes `te.gemm nt ... accumulate(%main)`: the fp32 product
    is added to main_grad in the GEMM's epilogue, never rounded to the
    operands' dtype (high precision: `te_rt_gemm_wgrad_fp32`; FP8: the FP8
    GEMMs with an fp32 output and accumulate). Such a GEMM takes no BGRADB
    epilogue: its bias gradient stays a `te.bias_grad` (remark).

    **GELU in the GEMM epilogues.** With `act-epilogues` (a mode: `off`,
    `auto` or `on`; te-compile `--gemm-act-epilogues=off|auto|on` and
    te-pipeline `gemm-act-epilogues` default to `auto`, the pass alone to
    `off`), the activation goes into the GEMMs' epilogues too, before the
    BGRADB folding (so FC1's bias gradient, the bias gradient of the
    activation derivative's result, still comes out of FC1's wgrad GEMM):

    - `%pre = te.gemm tn %x, %w bias(%b)` whose result a `te.act gelu %pre`
      reads becomes `%y[, %pre] = te.gemm_act gelu %x, %w [bias(%b)]`
      (cuBLASLt GELU_AUX_BIAS), with the `pre` result (the aux output) only
      when something else (the saved pre-activation of the backward) reads
      `%pre`;
    - `te.dact gelu %dh, %pre` of a `%dh = te.gemm nn %dy, %w` (dgrad) that
      nothing else reads becomes `%dx = te.gemm_dact gelu %dy, %w pre(%pre)`
      (cuBLASLt DGELU).

    They lower to `te_rt_gemm_fprop_act` (aux null without `pre`) and
    `te_rt_gemm_dgrad_dact`, whose results agree with the unfused pair to
    one rounding (the activation reads the fp32 GEMM result).
    High-precision GEMMs only (the FP8 recipes fuse the activation with its
    cast instead, te-fuse-act-quantize), GELU (tanh) only. Each `te.act` /
    `te.dact` that does not fold gets a remark saying why (another
    activation, quantized operands, an amax result, no GEMM of the right
    layout, other readers of the GEMM result, another block, and under
    `auto` the GEMM's rows).

    `on` folds every eligible pair. `auto` folds only GEMMs whose row count
    (the product of the leading dims of the GEMM's lhs: the tokens) is
    static and at least `act-epilogue-min-rows` (te-compile
    `--gemm-act-epilogue-min-rows`, te-pipeline `gemm-act-epilogue-min-rows`;
    1024), and says so in the remark for the others ("16 rows < 1024; auto
    folds static row counts >= 1024 only ...", "rows are dynamic; ...").
    The reason is the H200 (bf16 LayerNorm + GELU MLP training step, against
    the unfused build in the same session): the epilogues made the step
    2.2% faster at 8192 tokens x 4096 x 16384 (10.06 against 10.29 ms) and
    2.5% at 4096 x 1024 x 4096 (0.393 against 0.403 ms), but 5.5% slower at
    16 tokens x 4096 x 16384 (0.245 against 0.232 ms): at few rows the
    epilogue GEMM kernels are slower than the plain GEMM plus a small
    activation kernel. A library compiled for dynamic tokens keeps the
    separate kernels under `auto` (its size is unknown at compile time);
    `--gemm-act-epilogues` (bare, meaning `on`) forces the fold.

    `dact-epilogue-max-rows` and `bias-grad-epilogue-max-rows` (te-compile
    `--gemm-dact-epilogue-max-rows` / `--gemm-bias-grad-epilogue-max-rows`;
    default -1: no limit) keep the DGELU and BGRADB folds to GEMMs of at
    most that many static rows, with a remark for the others, for measuring
    each fold on its own. On the H200 (bf16, the 2026-12-02 run of
    [bench.md](../bench.md), `bench/results/h200_2026-12-02_*`) neither limit
    paid at 8192 tokens, and the DGELU fold is faster at 4096: without the
    DGELU fold LN-MLP 8192x4096x16384 ran 10.097 against 10.106 ms (within
    the spread) and 4096x1024x4096 0.404 against 0.394 ms; without BGRADB
    above 64 rows LN-MLP 8192 ran 10.13 against 10.05-10.11 ms and
    LN-Linear 8192x4096->12288 3.736 against 3.750-3.766 ms. No limit is
    the default.
  }];
  let options = [
    Option<"actEpilogues", "act-epilogues", "::mlir::te::ActEpiloguesOption",
           /*default=*/"::mlir::te::kDefaultPassActEpilogues",
           "Fold GELU into the fprop GEMM (GELU_AUX_BIAS) and its derivative "
           "into the dgrad GEMM (DGELU): off, auto (static row counts >= "
           "act-epilogue-min-rows only) or on">,
    Option<"actEpilogueMinRows", "act-epilogue-min-rows", "int64_t",
           /*default=*/"1024",
           "Under act-epilogues=auto, the fewest GEMM rows (tokens) that "
           "fold">,
    Option<"dactEpilogueMaxRows", "dact-epilogue-max-rows", "int64_t",
           /*default=*/"-1",
           "The most GEMM rows (tokens) whose dgrad GEMM takes the "
           "derivative of GELU in its epilogue (DGELU), on top of "
           "act-epilogues; -1: no limit. Above it (and for dynamic rows) the "
           "plain dgrad GEMM runs, followed by te.dact (fused with its bias "
           "gradient by te-fuse-dbias-dact)">,
    Option<"biasGradEpilogueMaxRows", "bias-grad-epilogue-max-rows",
           "int64_t", /*default=*/"-1",
           "The most GEMM rows (tokens) whose bias gradient folds into the "
           "wgrad GEMM's BGRADB epilogue; -1: no limit. Above it (and for "
           "dynamic rows) te.bias_grad stays: te-fuse-dbias-dact fuses it "
           "with an activation's derivative, else the runtime's column "
           "reduction computes it">,
    Option<"reportWork", "report-work", "bool", /*default=*/"false",
           "Remark the work done: candidates, remarks and operations "
           "numbered to print the remarks' operations (each function once, "
           "again after a fusion; linear in the function, for tests)">,
  ];
  let dependentDialects = ["::mlir::te::TEDialect"];
}

def TEFuseDBiasDActPass : Pass<"te-fuse-dbias-dact"> {
  let summary = "Fuse an activation derivative with its bias gradient";
  let description = [{
    `te.dact` followed by `te.bias_grad` of its result becomes one
    `te.dbias_dact` (TransformerEngine's `dbias_d<act>` kernels): dact and the
    column sums in one pass over the data. Only non-gated activations have
    the fused form; a gated one gets a remark. In te-compile's pipeline this
    runs after te-fuse-gemm-epilogues, so the bf16 path keeps TE's choice
    (FC1's bias gradient from the wgrad GEMM's epilogue) and this fusion
    catches the bias gradients no wgrad GEMM produces.
  }];
  let options = [
    Option<"reportWork", "report-work", "bool", /*default=*/"false",
           "Remark the work done: candidates, remarks and operations "
           "numbered to print the remarks' operations (each function once, "
           "again after a fusion; linear in the function, for tests)">,
  ];
  let dependentDialects = ["::mlir::te::TEDialect"];
}

def TEFuseQuantizeAmaxPass : Pass<"te-fuse-quantize-amax"> {
  let summary = "Let the kernel producing a tensor compute its amax for current-scaling FP8";
  let description = [{
    Float8 current scaling needs `max |x|` before it can cast `x`: unfused,
    `te.quantize` reads `x` twice (an amax pass, then the cast and the
    transposed copy). When `x` is the result of `te.act`, `te.dact` or
    `te.dbias_dact`, that op gets an amax result: its kernel computes the
    amax while it writes `x` (TransformerEngine's fused activation + amax
    for current scaling, §1.3, §2.5; the `amax` argument of
    `te_rt_act_fwd`, `te_rt_act_bwd`, `te_rt_dbias_dact`), and the
    quantization takes it as `amax(%a)`, so that `te_rt_quantize_fp8` skips
    its own amax pass (`amax_in`). The quantized bytes, the scale and the
    recorded amax are the same.

    ```mlir
    %y = te.act gelu %x : (tensor<64x256xbf16>) -> tensor<64x256xbf16>
    %q, %a = te.quantize %y : tensor<64x256xbf16>
        -> !te.qtensor<64x256xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
    // becomes
    %y, %a = te.act gelu %x : (tensor<64x256xbf16>) -> (tensor<64x256xbf16>, tensor<1xf32>)
    %q = te.quantize %y amax(%a) : tensor<64x256xbf16> amax tensor<1xf32>
        -> !te.qtensor<64x256xe4m3, #te.fp8_current<>, both, hopper>
    ```

    A current-scaling quantization of any other value (a weight, an
    incoming gradient, a norm output that te-fuse-norm-quantize left
    unfused) keeps its amax pass and gets a remark saying why. In
    te-pipeline this runs after te-fuse-dbias-dact and
    te-fuse-norm-quantize. Delayed scaling needs no such fusion (its cast
    records the amax in the same pass); the block-scaled recipes record
    none.
  }];
  let options = [
    Option<"reportWork", "report-work", "bool", /*default=*/"false",
           "Remark the work done: candidates, remarks and operations "
           "numbered to print the remarks' operations (each function once, "
           "again after a fusion; linear in the function, for tests)">,
  ];
  let dependentDialects = ["::mlir::te::TEDialect"];
}

def TEFuseDBiasQuantizePass : Pass<"te-fuse-dbias-quantize"> {
  let summary = "Fuse a bias gradient with the per-tensor FP8 cast of the same tensor";
  let description = [{
    In an FP8 backward the wgrad GEMM reads the quantized output gradient,
    and an FP8 GEMM has no bias-gradient epilogue, so te-fuse-gemm-epilogues
    leaves `te.bias_grad %dy` as a reduction of its own over `dy`.
    TransformerEngine sums the columns in the cast-transpose of `dy`
    instead (`cast_transpose_dbias` + `reduce_dbias`, `tex.bgrad_quantize`,
    §3.2). A `te.bias_grad %x` and a per-tensor FP8 `te.quantize %x`
    (`#te.fp8_delayed` with `scale(%s[slot])`, or `#te.fp8_current`
    without `amax(...)`) of the same value in the same block become one
    `te.dbias_quantize`. In LayerNormLinear's backward and LayerNormMLP's
    FC2 that value is `dy`.

    ```mlir
    %db = te.bias_grad %dy : (tensor<64x256xbf16>) -> tensor<256xbf16>
    %q, %a = te.quantize %dy scale(%s[2]) : tensor<64x256xbf16>, tensor<6xf32>
        -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
    // becomes
    %q, %a, %db = te.dbias_quantize %dy scale(%s[2]) : tensor<64x256xbf16>, tensor<6xf32>
        -> !te.qtensor<64x256xe5m2, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>,
           tensor<256xbf16>
    ```

    It lowers to `te_rt_dbias_quantize_fp8`: the cast-transpose kernel also
    sums each tile-row band's columns in fp32 into a scratch partial,
    reduced by one small kernel (under current scaling the amax pass runs
    first). The quantized bytes, `scale_inv`, the recorded amax and the bias
    gradient are those of `te_rt_bias_grad` + `te_rt_quantize_fp8` (the bias
    gradient is the fp32 column sums of `x`, rounded once, as `te.bias_grad`
    computes it; bit for bit on the cpu backend, which runs that pair).

    Runs after te-fuse-gemm-epilogues (a high-precision wgrad GEMM takes
    the bias gradient into its epilogue first) and te-fuse-dbias-dact (an
    activation's derivative takes its own bias gradient, then its cast in
    te-fuse-act-quantize), and after te-fuse-quantize-amax. Every bias
    gradient left unfused gets a remark saying why: no quantization of the
    same value, a block-scaled recipe (fp8-block, MXFP8, NVFP4: the
    gradient is summed separately, as TE does), a current-scaling
    quantization that takes its producer's amax (`amax(...)`), another
    block, or the scales computed after a read of the bias gradient.
  }];
  let options = [
    Option<"reportWork", "report-work", "bool", /*default=*/"false",
           "Remark the work done: candidates, remarks and operations "
           "numbered to print the remarks' operations (each function once, "
           "again after a fusion; linear in the function, for tests)">,
  ];
  let dependentDialects = ["::mlir::te::TEDialect"];
}

def TEFuseActQuantizePass : Pass<"te-fuse-act-quantize"> {
  let summary = "Fuse an activation (or its derivative) with its delayed-scaling FP8 cast";
  let description = [{
    The delayed-scaling counterpart of te-fuse-quantize-amax. Under Float8
    delayed scaling the cast's scale is known before the tensor is (element
    `slot` of the recipe state), so the kernel computing an activation can
    cast its result directly (TransformerEngine's fused activation-cast,
    and `dbias_d<act>` + cast in the backward, §1.3, §2.5) and the
    high-precision tensor is never written. A `te.quantize scale(%s[slot])`
    under `#te.fp8_delayed` of the main result of `te.act`, `te.dact` or
    `te.dbias_dact` becomes one `te.act_quantize` or `te.dact_quantize`
    when that quantization is the result's only use and the producer's
    `amax` result, if any, is unused:

    ```mlir
    %y = te.act gelu %x : (tensor<64x256xbf16>) -> tensor<64x256xbf16>
    %q, %a = te.quantize %y scale(%s[3]) : tensor<64x256xbf16>, tensor<6xf32>
        -> !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
    // becomes
    %q, %a = te.act_quantize gelu %x scale(%s[3]) : tensor<64x256xbf16>, tensor<6xf32>
        -> !te.qtensor<64x256xe4m3, #te.fp8_delayed<>, both, hopper>, tensor<1xf32>
    ```

    and, in the backward, `%q, %a[, %db] = te.dact_quantize gelu %dy, %x
    scale(%s[4]) : ... -> !te.qtensor<..>, tensor<1xf32>[, tensor<Kxbf16>]`,
    which keeps `te.dbias_dact`'s bias gradient as its last result. They
    lower to `te_rt_act_quantize_fp8` and `te_rt_dact_quantize_fp8`: the
    quantized bytes, `scale_inv` and the recorded amax are those of the
    unfused pair. In the LayerNormMLP step that is FC2's input in the
    forward and FC1's gradient (with its bias gradient) in the backward.

    Runs after te-fuse-dbias-quantize. A delayed-scaling quantization of an
    activation's result that cannot be fused (another op reads the
    high-precision tensor, e.g. it is saved for the backward or returned)
    stays, with a remark naming that op. Current scaling cannot fuse this
    way (its scale needs the amax first: te-fuse-quantize-amax's case), and
    the fused ops' verifiers reject any recipe but fp8-delayed; the
    block-scaled recipes are not fused.
  }];
  let options = [
    Option<"reportWork", "report-work", "bool", /*default=*/"false",
           "Remark the work done: candidates, remarks and operations "
           "numbered to print the remarks' operations (each function once, "
           "again after a fusion; linear in the function, for tests)">,
  ];
  let dependentDialects = ["::mlir::te::TEDialect"];
}

def TEFuseNormQuantizePass : Pass<"te-fuse-norm-quantize"> {
  let summary = "Fuse a normalization with the per-tensor FP8 cast of its output";
  let description = [{
    TransformerEngine's LayerNorm / RMSNorm kernels write an FP8 output
    directly when the following GEMM reads it quantized (§1.3; issue #6):
    the normalized tensor is cast (and its transposed copy written) as it
    is computed and never stored in high precision. A per-tensor FP8
    `te.quantize` of the output of `te.norm_fwd` that is that output's only
    use becomes one `te.norm_quantize`, under delayed scaling
    (`scale(%s[slot])`, the scale known beforehand; the fused op sits where
    the norm was when the scales are available there, else at the
    quantization) and under current scaling (without `amax(...)`: the
    kernel takes the amax while it normalizes, then casts;
    `power_2_scales` from the recipe). The norm's `rsigma` and `mu` and the
    quantization's `amax` are the fused op's results, `mu` last so that
    only one result is optional: `%q, %rs, %a[, %mu] = te.norm_quantize %x
    norm layer_norm(%g, %b) [scale(%s[0])] {eps = ...} : (...) ->
    (!te.qtensor<..>, tensor<Mxf32>, tensor<1xf32>[, tensor<Mxf32>])`, e.g.

    ```mlir
    %z, %rs, %mu = te.norm_fwd %x norm layer_norm(%g, %b) {eps = 1.0e-05 : f64}
        : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>)
        -> (tensor<64x128xbf16>, tensor<64xf32>, tensor<64xf32>)
    %q, %a = te.quantize %z : tensor<64x128xbf16>
        -> !te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>, tensor<1xf32>
    // becomes
    %q, %rs, %a, %mu = te.norm_quantize %x norm layer_norm(%g, %b) {eps = 1.0e-05 : f64}
        : (tensor<64x128xbf16>, tensor<128xbf16>, tensor<128xbf16>)
        -> (!te.qtensor<64x128xe4m3, #te.fp8_current<>, both, hopper>,
            tensor<64xf32>, tensor<1xf32>, tensor<64xf32>)
    ```

    It lowers to `te_rt_norm_quantize_fp8`: the quantized bytes,
    `scale_inv`, the recorded amax and the statistics are those of
    `te_rt_norm_fwd` followed by `te_rt_quantize_fp8`, and the
    high-precision norm output is never stored.

    A per-tensor FP8 quantization of a norm output that another op also
    reads (LayerNormLinear's `return_layernorm_output`, a second
    quantization) stays, with a remark naming that op. The block-scaled
    recipes (fp8-block, mxfp8, nvfp4) are not fused. Runs before
    te-fuse-quantize-amax, which would otherwise only remark on the norm
    output.
  }];
  let options = [
    Option<"reportWork", "report-work", "bool", /*default=*/"false",
           "Remark the work done: candidates, remarks and operations "
           "numbered to print the remarks' operations (each function once, "
           "again after a fusion; linear in the function, for tests)">,
  ];
  let dependentDialects = ["::mlir::te::TEDialect"];
}

#endif // TE_TRANSFORMS_PASSES_TD
