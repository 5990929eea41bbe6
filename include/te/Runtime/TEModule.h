/*===- TEModule.h - te-mlir module client C API -------------------*- C -*-===*\
|*                                                                          *|
|* The one client of te-compile'd libraries that te-run, bench/ and the     *|
|* Python package use: open a library (its file checked before dlopen),     *|
|* read its te_module_info() once (validated strictly), list its entries    *|
|* and their arguments and results, bind dynamic dims from argument shapes, *|
|* evaluate every shape and size, and run an entry or a training step       *|
|* (<fn>_fwd, then <fn>_bwd fed with the saved bundle) on caller-provided   *|
|* buffers on the caller's context, quantized results' padding zeroed.      *|
|* Nothing here allocates a buffer behind a run: te_module_tensor_alloc is  *|
|* the only call that does, and it is optional.                             *|
|*                                                                          *|
|* Plain C, <stdint.h> and TERuntime.h only. int32_t results are 0 on       *|
|* success and non-zero on failure; te_rt_last_error() then says why,       *|
|* naming the library, the entry and the argument.                          *|
|*                                                                          *|
|* Handles: a te_module owns its entries, tensors and steps' descriptions;  *|
|* te_module_entry / te_module_tensor pointers stay valid until             *|
|* te_module_close. Strings returned are owned by the module too.           *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/

#ifndef TE_RUNTIME_TEMODULE_H
#define TE_RUNTIME_TEMODULE_H

#include "te/Runtime/TERuntime.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct te_module te_module;
typedef struct te_module_entry te_module_entry;
typedef struct te_module_tensor te_module_tensor;
typedef struct te_module_step te_module_step;

/* Roles of an argument or result (te_module_tensor_role): the module
 * info's keys te.saved, te.grad_of, te.state, te.cached_weight, te.alias. */
enum {
  TE_MODULE_ROLE_SAVED = 0,
  TE_MODULE_ROLE_GRAD_OF = 1,
  TE_MODULE_ROLE_STATE = 2,
  TE_MODULE_ROLE_CACHED_WEIGHT = 3,
  TE_MODULE_ROLE_ALIAS = 4,
  /* te.main_grad_of "input:N": a backward's fp32 main_grad argument for
   * forward argument N, and its gradient result (main_grad + gradient),
   * whose buffer may be that argument's (accumulated in place). */
  TE_MODULE_ROLE_MAIN_GRAD_OF = 5,
  /* te.wgrad_stash "K": a value a backward returns for its deferred weight
   * gradients (te-split-wgrad), and the argument of <fn>_bwd_wgrad that
   * takes it. */
  TE_MODULE_ROLE_WGRAD_STASH = 6
};

/* Where a training step's backward argument comes from
 * (te_module_step_feed). */
enum {
  TE_MODULE_FEED_INPUT = 0,  /* forward argument `index` (te.alias input:N) */
  TE_MODULE_FEED_RESULT = 1, /* forward result `index` (te.alias output:N,
                                or the forward's te.saved result) */
  TE_MODULE_FEED_GRAD = 2,   /* the gradient of forward result `index` */
  TE_MODULE_FEED_STATE = 3,  /* recipe state: TE's initial value, or what the
                                previous step returned (caller's buffer) */
  TE_MODULE_FEED_MAIN_GRAD = 4, /* the fp32 main_grad of forward argument
                                  `index` (caller's buffer) */
  TE_MODULE_FEED_STASH = 5      /* the wgrad entry's: backward result `index`
                                  (te.wgrad_stash) */
};

/*===------------------------------------------------------------------===*
 * Modules
 *===------------------------------------------------------------------===*/

/* Opens the library at `path`: checks the file (a 64-bit ELF shared object
 * for this machine whose headers and segments lie inside the file), dlopens
 * it, checks te_module_info() against the digest te-compile recorded
 * (te_module_info_digest(), FNV-1a 64 of the text: an edited or damaged
 * module info is refused; hand-made libraries without it are not checked),
 * parses and validates it and resolves every entry's symbol. */
TE_RT_API int32_t te_module_open(const char *path, te_module **module);
/* Closes the module (dlclose); null is fine. */
TE_RT_API void te_module_close(te_module *module);
/* The path it was opened with. */
TE_RT_API const char *te_module_path(const te_module *module);
/* The text of te_module_info(). */
TE_RT_API const char *te_module_info_text(const te_module *module);
/* A top-level string field of the module info ("target", "arch", "source",
 * "format"), or NULL when absent. */
TE_RT_API const char *te_module_get(const te_module *module, const char *key);

TE_RT_API int64_t te_module_num_entries(const te_module *module);
/* Entry `index` in the module info's order; NULL when out of range. */
TE_RT_API const te_module_entry *te_module_entry_at(const te_module *module,
                                                    int64_t index);
/* The entry named `name`; NULL (with the last error) when there is none. */
TE_RT_API const te_module_entry *te_module_find_entry(const te_module *module,
                                                      const char *name);

/*===------------------------------------------------------------------===*
 * Entries
 *===------------------------------------------------------------------===*/

TE_RT_API const char *te_module_entry_name(const te_module_entry *entry);
TE_RT_API const char *te_module_entry_symbol(const te_module_entry *entry);
/* A string field of the entry ("te.forward_of", "te.backward_of"), or NULL. */
TE_RT_API const char *te_module_entry_get(const te_module_entry *entry,
                                          const char *key);
TE_RT_API int64_t te_module_entry_num_args(const te_module_entry *entry);
TE_RT_API int64_t te_module_entry_num_results(const te_module_entry *entry);
/* The number of dynamic dims d0, d1, ... (the length of a dims array). */
TE_RT_API int64_t te_module_entry_num_dims(const te_module_entry *entry);
TE_RT_API const te_module_tensor *
te_module_entry_arg(const te_module_entry *entry, int64_t index);
TE_RT_API const te_module_tensor *
te_module_entry_result(const te_module_entry *entry, int64_t index);
/* The JSON text of the entry's arena_bytes: a number or "dynamic". */
TE_RT_API const char *te_module_entry_arena_text(const te_module_entry *entry);
/* The entry's arena bytes at `dims` in *bytes: the module info's number, or
 * for "dynamic" the library's te_arena_bytes_<fn>(dims) (module info key
 * arena_symbol; fails when a dim or an element count is out of the range
 * the entry accepts). -1 for a "dynamic" entry of a library older than
 * arena_symbol (it sizes its arena itself). What te_rt_context_set_arena
 * needs. */
TE_RT_API int32_t te_module_entry_arena_bytes(const te_module_entry *entry,
                                              const int64_t *dims,
                                              int64_t *bytes);
/* The JSON text of the entry's arena_bytes_donated (a number or "dynamic":
 * its arena when every donatable argument is donated), or NULL when it has
 * no donatable argument. */
TE_RT_API const char *
te_module_entry_arena_donated_text(const te_module_entry *entry);
/* The arena bytes at `dims` when the caller donates the arguments k with
 * donated[k] != 0 (one flag per argument; NULL: none, as
 * te_module_entry_arena_bytes), for te_module_run_donated with the same
 * flags: the library's te_arena_bytes_donated_<fn> (module info key
 * arena_donated_symbol), or te_module_entry_arena_bytes for an entry
 * without donatable arguments. Fails naming an argument that is flagged
 * but not donatable. */
TE_RT_API int32_t te_module_entry_arena_bytes_donated(
    const te_module_entry *entry, const int64_t *dims, const uint8_t *donated,
    int64_t *bytes);
/* The result that returns the new value of recipe-state argument
 * `arg_index` (the same te.state name), or -1. */
TE_RT_API int64_t te_module_entry_state_result(const te_module_entry *entry,
                                               int64_t arg_index);
/* 1 when the entry may write result `index`'s buffer beyond its tensors'
 * bytes (module info `padding_written`: copied out whole, or lent to
 * intermediates first; every result of a library without the key), 0 when
 * it never does (te_module_run zeroes such a quantized result's padding
 * before the entry, beside its work), -1 for a NULL entry or an index out
 * of range. */
TE_RT_API int32_t te_module_entry_result_padding_written(
    const te_module_entry *entry, int64_t index);
/* The recipe-state argument whose buffer the caller may also pass as
 * result `index`'s (module info `state_in_place`: a backward's new amax
 * history or scales, written over the old ones; te-compile lists a pair
 * only where the entry reads no old state after writing the new), or -1
 * (none, a NULL entry or an index out of range). Passing separate buffers
 * is always allowed. */
TE_RT_API int64_t te_module_entry_result_state_in_place(
    const te_module_entry *entry, int64_t index);

/* Binds the dims d<k> of `entry` from its arguments' shapes. For argument
 * i: dtypes[i] (NULL array or entry: not checked) must be its dtype;
 * ranks[i] < 0 means no shape is given (a quantized tensor's raw bytes),
 * else shapes[i] holds ranks[i] dims, which must match the fixed dims and
 * agree on every symbol. Writes te_module_entry_num_dims values to `dims`;
 * fails naming the argument when a dim is wrong or a symbol is left
 * unbound. */
TE_RT_API int32_t te_module_bind_dims(const te_module_entry *entry,
                                      const char *const *dtypes,
                                      const int64_t *const *shapes,
                                      const int64_t *ranks, int64_t *dims);

/* Runs `entry` on `ctx` with the caller's buffers (one per argument and per
 * result, on the context's backend) at `dims`. Queues the work on the
 * context's stream; does not synchronize, allocate or free. Every quantized
 * (qtensor) result comes out with its padding zeroed: the bytes between its
 * inner tensors and after the last one, up to te_module_tensor_bytes, which
 * the entry itself leaves as they were or fills with other data; so a
 * result buffer may start uninitialized and still come out the same bytes
 * for the same inputs. The zeroing is queued after the entry: one
 * te_rt_zero_ranges call (on cuda one kernel launch, recorded by a CUDA
 * graph capture) per TE_RT_ZERO_RANGES_PER_LAUNCH padding ranges, the
 * ranges cached per entry for its last 8 dims (computing them at new dims
 * allocates; nothing else does). A quantized result's buffer must not be
 * NULL. No result buffer may overlap an argument's or another result's: the
 * entry may place its intermediates in a result's buffer before it writes
 * the result there (a loan of the memory plan), so a result's contents
 * before the call are never read and are undefined after a failed call.
 * On a cuda context a call repeated with the same buffers, dims, arena,
 * donation flags and workspace replays a CUDA graph of the entry recorded
 * at its second call (one launch, the same kernels and bits; not while the
 * caller's stream is being captured; TE_RT_ENTRY_GRAPHS=0 turns this
 * off; docs/runtime.md "Entry graphs").
 * On failure the last error is "<entry> failed: <why>". */
TE_RT_API int32_t te_module_run(const te_module_entry *entry,
                                te_rt_context *ctx, void *const *args,
                                void *const *results, const int64_t *dims);

/* te_module_run, with the buffers of the arguments k with donated[k] != 0
 * (one flag per argument; NULL: none) handed over for this run: the entry
 * may place its intermediates there after the argument's last read, so
 * their contents are undefined afterwards and the arena it needs shrinks
 * (te_module_entry_arena_bytes_donated with the same flags; a caller's
 * arena set by te_rt_context_set_arena must be at least that). Only
 * arguments marked donatable (te_module_tensor_donatable: saved forward
 * intermediates of a backward entry, te.saved without te.alias) may be
 * flagged; the others fail the call before it runs. The results are the
 * same bits as te_module_run's. Donate only buffers nothing else reads
 * after the run (not a weight cache's, not ones a user still holds). A
 * donated run that fails may have overwritten them already, so it cannot
 * be retried (say, after growing a workspace that was too small: donate
 * once a run of the same shapes went through with that workspace). */
TE_RT_API int32_t te_module_run_donated(const te_module_entry *entry,
                                        te_rt_context *ctx, void *const *args,
                                        void *const *results,
                                        const int64_t *dims,
                                        const uint8_t *donated);

/*===------------------------------------------------------------------===*
 * Arguments and results
 *===------------------------------------------------------------------===*/

/* "float32", "bfloat16", "float16" or "qtensor". */
TE_RT_API const char *te_module_tensor_dtype(const te_module_tensor *tensor);
/* "arg<N>" or "result<N>", followed by its roles, e.g.
 * "arg2 (te.saved=linear_0.input)". */
TE_RT_API const char *te_module_tensor_label(const te_module_tensor *tensor);
TE_RT_API int64_t te_module_tensor_rank(const te_module_tensor *tensor);
/* The text of dim `d`: "128", "d0" or an expression "roundup(d0/32, 4)". */
TE_RT_API const char *te_module_tensor_dim(const te_module_tensor *tensor,
                                           int64_t d);
/* The JSON text of the shape, e.g. ["d0",128]. */
TE_RT_API const char *
te_module_tensor_shape_text(const te_module_tensor *tensor);
/* The value of a TE_MODULE_ROLE_* ("layernorm_mlp_0.mu", "output:0"), or
 * NULL when the tensor does not have that role. */
TE_RT_API const char *te_module_tensor_role(const te_module_tensor *tensor,
                                            int32_t role);
/* Any string field ("type" of a qtensor, ...), or NULL. */
TE_RT_API const char *te_module_tensor_get(const te_module_tensor *tensor,
                                           const char *key);
/* A qtensor's alignment of its inner tensors (256 unless stated); 0 for
 * other dtypes. */
TE_RT_API int64_t te_module_tensor_alignment(const te_module_tensor *tensor);
/* A qtensor's inner tensors (TransformerEngine's names: data, scale_inv,
 * ...); 0 for other dtypes. */
TE_RT_API int64_t te_module_tensor_num_inner(const te_module_tensor *tensor);
TE_RT_API const char *
te_module_tensor_inner_name(const te_module_tensor *tensor, int64_t index);
TE_RT_API const char *
te_module_tensor_inner_dtype(const te_module_tensor *tensor, int64_t index);
/* The rank and dim `d` (as te_module_tensor_dim) of inner tensor `index`. */
TE_RT_API int64_t te_module_tensor_inner_rank(const te_module_tensor *tensor,
                                              int64_t index);
TE_RT_API const char *te_module_tensor_inner_dim(const te_module_tensor *tensor,
                                                 int64_t index, int64_t d);
/* Inner tensor `index` in the qtensor's buffer at `dims`: its first byte
 * (a multiple of the alignment) and its bytes. */
TE_RT_API int32_t te_module_tensor_inner_layout(const te_module_tensor *tensor,
                                                int64_t index,
                                                const int64_t *dims,
                                                int64_t *offset,
                                                int64_t *bytes);
/* The shape at `dims` (te_module_tensor_rank values), every expression
 * evaluated with overflow and exactness checks. */
TE_RT_API int32_t te_module_tensor_shape(const te_module_tensor *tensor,
                                         const int64_t *dims, int64_t *shape);
/* The buffer bytes at `dims`: elements times element size, or for a
 * qtensor the sum of its inner tensors, each padded to the alignment. */
TE_RT_API int32_t te_module_tensor_bytes(const te_module_tensor *tensor,
                                         const int64_t *dims, int64_t *bytes);
/* 1 when the argument's buffer may be donated (module info te.donatable:
 * the entry places intermediates in it when te_module_run_donated flags
 * it), else 0. */
TE_RT_API int32_t te_module_tensor_donatable(const te_module_tensor *tensor);
/* For a float32 te.state tensor: TE's initial value of every element (amax
 * histories 0, scales 1) in *value; fails for other tensors. */
TE_RT_API int32_t te_module_tensor_initial_state(const te_module_tensor *tensor,
                                                 float *value);
/* Optional: te_rt_alloc of the tensor's bytes at `dims` on `ctx` into *ptr
 * (*bytes, when not NULL, gets the size). Free it with te_rt_free. */
TE_RT_API int32_t te_module_tensor_alloc(const te_module_tensor *tensor,
                                         te_rt_context *ctx,
                                         const int64_t *dims, void **ptr,
                                         int64_t *bytes);

/* Evaluates the dim expression `expr` (the grammar of the module info's
 * shapes) at `dims` (num_dims values) into *value. Returns 0, or 1 with the
 * last error set; *inexact_divisor (when not NULL) is the divisor of a
 * division that was not exact, 0 for other failures. */
TE_RT_API int32_t te_module_eval_dim(const char *expr, const int64_t *dims,
                                     int64_t num_dims, int64_t *value,
                                     int64_t *inexact_divisor);

/*===------------------------------------------------------------------===*
 * Training steps
 *===------------------------------------------------------------------===*/

/* The training step `name`: entries <name>_fwd and <name>_bwd. With a NULL
 * name, the one pair linked by te.forward_of / te.backward_of. Checks that
 * every backward argument can be fed (te_module_step_feed). */
TE_RT_API int32_t te_module_step_create(const te_module *module,
                                        const char *name,
                                        te_module_step **step);
TE_RT_API void te_module_step_destroy(te_module_step *step);
TE_RT_API const te_module_entry *te_module_step_fwd(const te_module_step *step);
TE_RT_API const te_module_entry *te_module_step_bwd(const te_module_step *step);
/* Where backward argument `bwd_arg` comes from: *kind is a
 * TE_MODULE_FEED_*, *index the forward argument or result it names (-1 for
 * TE_MODULE_FEED_STATE). */
TE_RT_API int32_t te_module_step_feed(const te_module_step *step,
                                      int64_t bwd_arg, int32_t *kind,
                                      int64_t *index);
/* Fills bwd_args[i] for every backward argument fed from the forward:
 * fwd_args / fwd_results as the forward ran, grads[k] the gradient of
 * forward result k (NULL where the backward takes none). Recipe-state
 * and main_grad arguments are left as the caller set them. */
TE_RT_API int32_t te_module_step_bwd_args(const te_module_step *step,
                                          void *const *fwd_args,
                                          void *const *fwd_results,
                                          void *const *grads, void **bwd_args);
/* The backward's dims from the forward's (the shapes of what feeds it). */
TE_RT_API int32_t te_module_step_bwd_dims(const te_module_step *step,
                                          const int64_t *fwd_dims,
                                          int64_t *bwd_dims);
/* One step: the forward on fwd_args/fwd_results at fwd_dims, then the
 * backward on bwd_args (te_module_step_bwd_args filled in; state and
 * main_grad arguments from the caller) and bwd_results. New recipe state lands
 * in the state results (te_module_entry_state_result); carrying it to the next
 * step is the caller's (swap or copy the buffers). Queues work, no sync. */
TE_RT_API int32_t te_module_step_run(const te_module_step *step,
                                     te_rt_context *ctx, void *const *fwd_args,
                                     void *const *fwd_results,
                                     void *const *grads, void **bwd_args,
                                     void *const *bwd_results,
                                     const int64_t *fwd_dims);

/* Deferred weight gradients (te-split-wgrad, TE's delay_wgrad_compute): a
 * step whose forward tagged arguments te.delay_wgrad has a third entry,
 * <fn>_bwd_wgrad (te.wgrad_of the backward), which computes their gradients
 * from what the backward returned for it (te.wgrad_stash results) and the
 * step's other tensors; te_module_step_run does not run it. NULL when the
 * step has none. */
TE_RT_API const te_module_entry *
te_module_step_wgrad(const te_module_step *step);
/* Where wgrad argument `arg` comes from (as te_module_step_feed, plus
 * TE_MODULE_FEED_STASH: backward result *index). */
TE_RT_API int32_t te_module_step_wgrad_feed(const te_module_step *step,
                                            int64_t arg, int32_t *kind,
                                            int64_t *index);
/* Fills wgrad_args[i] for every wgrad argument fed from the forward, the
 * output gradients or the backward's results (te_module_step_bwd_args'
 * rules; bwd_results as the backward ran). Recipe-state and main_grad
 * arguments are left as the caller set them. */
TE_RT_API int32_t te_module_step_wgrad_args(
    const te_module_step *step, void *const *fwd_args, void *const *fwd_results,
    void *const *grads, void *const *bwd_results, void **wgrad_args);
/* The wgrad entry's dims from the forward's (the shapes of what feeds it;
 * a stash at the backward's dims). */
TE_RT_API int32_t te_module_step_wgrad_dims(const te_module_step *step,
                                            const int64_t *fwd_dims,
                                            int64_t *wgrad_dims);

#ifdef __cplusplus
}
#endif

#endif /* TE_RUNTIME_TEMODULE_H */
