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
    subset into builtin tensors and `te` ops. What the importer recognises in
    real models, and why it refuses the rest: [import.md](../import.md).

    **The torch subset.** `lib/Dialect/Torch` defines the part of
    torch-mlir's `torch` dialect that te-mlir reads: its types
    (`!torch.vtensor<[dims],dtype>` with `?` dims and `unk` dtype,
    `!torch.int/float/bool/str/none/Device/number`, `!torch.list<T>`,
    `!torch.optional<T>`) and parse/print hooks for its operations in the
    forms torch-mlir prints: `torch.constant.*`, `torch.prim.ListConstruct`,
    `torch.vtensor.literal(dense_resource<...>)`, `torch.symbolic_int`,
    `torch.bind_symbolic_shape`, `torch.operator "..."` and torch-mlir's
    default syntax for every `torch.aten.*` / `torch.prims.*` /
    `torch.prim.ListUnpack` op. Operations stay unregistered (the dialect
    allows unknown operations), so any export parses and prints back; the
    importer decides what it understands. Every committed export
    round-trips (`test/Conversion/TorchToTE/parse-exports.mlir`).

    **What is raised:**

    | torch pattern | becomes |
    | --- | --- |
    | `layer_norm`/`rms_norm` over `[K]` (the last dim) -> `linear` | `te.layernorm_linear`; other users of the norm output read its second result (`return_layernorm_output`), further linears on it become `te.linear` |
    | norm -> `linear` -> act -> `linear` with act = `gelu(approximate="tanh")` (TE's gelu), `gelu()` (erf), `relu`, `silu`, `x*sigmoid(1.702x)` (quick-GELU), `relu(x)**2` (squared ReLU) | `te.layernorm_mlp` with `gelu`, `gelu_erf`, `relu`, `silu`, `qgelu`, `srelu` |
    | norm -> two `linear`s `a`, `b` -> `act(a) * b` -> `linear` | gated `te.layernorm_mlp` (`geglu`, `reglu`, `swiglu`, `qgeglu`, `sreglu`, `glu` for sigmoid); FC1 = `tensor.concat` of the two weights (and biases, a missing one as zeros), activated half first |
    | norm -> `linear` -> `split`/`split_with_sizes`/`chunk` (+ `ListUnpack`) in two halves -> `act(a) * b` -> `linear` | gated `te.layernorm_mlp`; if the activation reads the second half, FC1's rows are reordered |
    | `layer_norm` weight `add.Scalar(g, 1, 1)` | `zero_centered_gamma` with gamma `g` |
    | norm without weight / `rms_norm` without eps | gamma = ones / eps = `finfo(dtype).eps` |
    | lone `linear` (2-D weight) | `te.linear` |
    | `add.Tensor(a, b, 1)`, same types | `arith.addf` |
    | `view`/`reshape`/`_unsafe_view` between modules (static shapes) | `tensor.reshape` |
    | float casts between modules (`prims.convert_element_type`, `to.dtype`) | `arith.extf` / `arith.truncf` |
    | `vtensor.literal` | `arith.constant` with the same dense resource (weights frozen into the module); parameters passed as arguments stay arguments |
    | `constant.*`, `ListConstruct`, `symbolic_int`, `bind_symbolic_shape`, `_assert_tensor_metadata` | consumed by the patterns |

    **Recomposition.** Before raising, the importer recomposes what
    PyTorch's core-ATen decompositions (torch-mlir's default `raw` output)
    and torch-mlir's own decompositions (its `torch` output) broke apart, as
    torch-mlir's own recompose patterns do, each only when every
    intermediate is used inside the pattern alone:

    | decomposed form | recomposed to |
    | --- | --- |
    | `var_mean.correction(x, [-1], 0, keepdim)` -> `add.Scalar(eps)` -> `rsqrt`; `sub(x, mean) * rstd` [`* gamma`] [`+ beta`] | `layer_norm` (a correction other than 0, i.e. unbiased variance, is left alone and reported) |
    | `pow(x, 2)` -> `mean.dim([-1], keepdim)` -> `add.Scalar(eps)` -> `rsqrt`; `x * rstd` [`* gamma`] (LLaMA's RMSNorm) | `rms_norm` |
    | [`view`] -> `mm(x2, permute(W, [1,0]) \| t(W) \| transpose.int(W, 0, 1))` [-> `mul.Scalar 1` + `mul.Scalar(b, 1)` / `add.Tensor(b)`] [-> `view` back to the input's leading dims], or `matmul` on the N-D input | `linear(x, W, b)` |
    | the same with `mm(x2, W)` on an `[in, out]` weight (GPT-2's Conv1D) | `linear(x, t(W), b)`; `t` becomes `linalg.transpose` |
    | `x * sigmoid(x)` | `silu` |
    | `to.dtype(x, f64)`, sums and divisions by K giving an f64 variance cast back, and an f32 mean (torch-mlir's `torch` output) | `var_mean.correction(x, [-1], 0)`, then LayerNorm as above |
    | `x * x` -> `sum.dim_IntList([-1])` -> `div.Scalar(K)` (the `torch` output's RMSNorm mean) | the mean of the RMSNorm pattern |
    | `sum(x)/K`, `c = x - mean`, `sum(c*c)/K` in the input's dtype, with `broadcast_to` before the elementwise ops (torch-mlir's decomposition of `native_layer_norm`) | `var_mean.correction`, then LayerNorm (`broadcast_to` feeding only elementwise ops is dropped: torch broadcasts implicitly) |
    | FC1 output sliced `[..., :F]` and `[..., F:]` (`slice.Tensor`) | the split form of the gated MLP |
    | casts: `prims.convert_element_type`/`to.dtype` up to f32 are moved above `view`/`permute`, down-casts below `view`; then `downcast(norm\|linear(upcast(x), ...))` | the norm or linear in the narrow dtype (how PyTorch runs bf16/f16 modules in f32) |
    | `0.5x * (1 + tanh(0.79788456 (x + 0.044715 x^3)))` (GPT-2's gelu_new) | `gelu(x, "tanh")` |

    `bind_symbolic_shape`, `_assert_tensor_metadata` and the size arithmetic
    of views (`size.int`, `mul.int`) are dropped: shapes, dynamic dims
    included, are in the types.

    **What is not raised.** Near misses stay unmatched and are reported
    rather than mis-compiled: a norm over more than the last dim, a gated
    erf GELU, a standalone norm, a split into unequal parts, unbiased
    variance, broadcasting adds, non-float arguments, and a linear whose
    weight does not fit (the te op's verifier message is shown).

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
    function of its own ([partition.md](../partition.md)).

    `strict=true`: all or nothing (te-pipeline and te-compile import this
    way). Anything not recognized, and every near miss, is an error at the
    op's location that names it and lists what is supported. Malformed
    torch ops (operand counts torch-mlir does not produce) are errors in
    both modes. `recipe` sets the recipe of the created ops.

    Every committed export of a forward module imports in every form
    (`test/Conversion/TorchToTE/te-import-torch-all.mlir`;
    `test/Conversion/TorchToTE/Inputs/README.md` lists the exports).
    aot_autograd graphs are not imported: they are already split into
    forward and backward with `native_layer_norm`'s statistics as outputs,
    while te-mlir generates the backward itself from the forward module
    (te-generate-backward).
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
    te-import-torch raised in part; [partition.md](../partition.md)), moves each te module op
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
    Turns every function of L2 primitives (after te-decompose) into an
    LLVM-dialect entry point

    ```c
    int32_t te_entry_<fn>(te_rt_context *ctx, void *const *args,
                          void *const *results, const int64_t *dims);
    ```

    that calls the runtime ABI (`include/te/Runtime/TERuntime.def`) in
    program order, checks every status and returns the first failure (the
    runtime's last error says which call and argument). Dynamic dims are
    grouped into classes that the program requires equal (residual adds,
    the wgrad GEMM's rows, norm backward); `dims` holds one value per class,
    in order of first appearance among the arguments. The calling convention
    of these entries (the caller's stream, arena and workspace) and the byte
    layout of a quantized value are the runtime's:
    [runtime.md](../runtime.md).

    Quantized recipes' alignment on dynamic dims (te-describe's
    `runtime_checks`, e.g. `d0 % 128 == 0` under fp8-block) is checked on
    entry, before anything is allocated, by `te_rt_check_multiple`, once per
    distinct condition: the entry fails with
    `<name>: recipe R needs <condition>, got <value>`.

    **Memory planning:** every intermediate tensor gets a slot of one arena,
    allocated once per call; tensors whose live ranges do not overlap share
    a slot, whose size is the largest member's (computed at run time, so
    one plan serves every value of the dynamic dims); slots are 256-byte
    aligned. Returned tensors are computed in place in the caller's result
    buffers; reshapes are views. All-zero constants that are concat parts
    get no buffer (the concat memsets their slice, or, in a delayed-scaling
    amax vector only `te.amax_update` reads, nothing writes it: the update
    is told those slots record no amax), other all-zero constants are a
    `te_rt_zero`, other constants (weights frozen into an export) are
    copied from read-only globals into their slot.

    **Quantized ops:** `te.quantize` lowers to `te_rt_quantize_fp8`, an FP8
    `te.gemm` to `te_rt_gemm_fp8` on the inner buffers in TN form (fprop:
    `x.data` x `w.data`; dgrad: `dy.data` x `w.transpose`; wgrad:
    `dy.transpose` x `x.transpose`), `te.amax_update` to `te_rt_amax_update`
    (fp8_max 448 forward / 57344 backward under HYBRID), or, when its amax
    vector is a concat with zero parts (the slots no op records, e.g. a
    GEMM output's) that nothing else reads, to `te_rt_amax_update_unused`
    with those slots as a mask (at most 64 slots), the zero parts never
    written. Under fp8-block,
    `te.quantize` lowers to `te_rt_quantize_fp8_block` (block shape and pow2
    flag from the type and recipe) and the GEMMs to `te_rt_gemm_fp8_block`
    on the same operands (rowwise data or the transposed columnwise data,
    each with its scales and block shape). Under mxfp8,
    `te_rt_quantize_mxfp8` and `te_rt_gemm_mxfp8`, whose operands are a
    rowwise copy of [m, k] or the (untransposed) columnwise copy of [k, m],
    a flag each (fprop 0/0, dgrad 0/1, wgrad 1/1). Under nvfp4,
    `te_rt_quantize_nvfp4` (block_2d, rht, stochastic rounding and seed from
    the type and op) and `te_rt_gemm_nvfp4` in TN form like fp8-block's
    (NVFP4's columnwise data is transposed), each operand with its global
    amax.

    **Module description:** a function `const char *te_module_info(void)`
    returns the JSON signature of the entries: for each, `name`, `symbol`,
    `args` and `results` (`dtype`, `shape` with `d<k>` for the k-th dynamic
    dim and products such as `d0*d1` for per-row statistics, and the te.*
    attributes: `te.saved`, `te.alias`, `te.grad_of`, `te.state`), `dims`
    (where the caller reads each: argument and dim), `arena_slots` and
    `arena_bytes` (the planned peak, or "dynamic").

    **Layer deduplication** (`dedup-layers`): a function's body is cut into
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
    call, so none lives across layers. Outlined functions that are
    structurally the same (ops, attributes, types, argument use; locations
    aside) are one function: identical layers are compiled once by LLVM's
    code generator. The calls made at run time, in order, with their
    arguments, and the arena plan and the module description are those of
    the inlined form. `off` (the default here) outlines nothing; `auto`
    (te-compile's and te-pipeline's default) outlines the segments (of 2
    ops or more) whose ops and types repeat within their function, e.g. a
    stack of identical layers; `on` outlines every segment of 2 ops or
    more.
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
