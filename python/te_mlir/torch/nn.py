"""TransformerEngine-named modules over te-mlir libraries: LayerNormLinear, LayerNormMLP,
Linear (LayerNorm and RMSNorm: norm.py, on the same base). Each module writes its own te IR (the `te` dialect's module op, the token dim
dynamic), compiles it with te_mlir.compile (cached on disk) for the recipe in use, and
calls the generated custom ops. Parameters carry TE's names."""
import contextlib
import math
import operator
import threading

import torch
import torch.nn as nn

from .. import compile as _te_compile
from .._abi import TeMlirError
from .ops import _compiling, hold_wgrad, load, main_grad_owner
from .overrides import BackwardOverride
from .primary import Dequantized, PrimaryWeights, StandIn, pop, push
from .recipe import BLACKWELL, QUANTIZED, recipe_kind, recipe_spec, split_override

__all__ = ["LayerNormLinear", "LayerNormMLP", "Linear",
           "fp8_autocast", "autocast",
           "quantized_model_init", "fp8_model_init",
           "ACTIVATIONS", "GATED_ACTIVATIONS", "get_recipe"]

ACTIVATIONS = ("gelu", "qgelu", "relu", "srelu", "silu", "gelu_erf", "geglu", "glu", "qgeglu",
               "reglu", "sreglu", "swiglu", "clamped_swiglu")
GATED_ACTIVATIONS = ("geglu", "glu", "qgeglu", "reglu", "sreglu", "swiglu", "clamped_swiglu")
_IR_DTYPES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}

# --------------------------------------------------------------------------- recipes

_AUTOCAST = threading.local()


def get_recipe():
    """The recipe of the innermost active fp8_autocast, or None."""
    stack = getattr(_AUTOCAST, "stack", None)
    return stack[-1] if stack else None


def _recipe_name(r):
    """te-compile's --recipe text for `r` (see recipe.py): TE recipe objects are read
    field by field."""
    return recipe_spec(r)


@contextlib.contextmanager
def fp8_autocast(enabled=True, calibrating=False, fp8_recipe="fp8-delayed", fp8_group=None,
                 recipe=None):
    """TE's fp8_autocast: modules constructed without ``recipe=`` run under this
    recipe (a te-compile --recipe name or #te.<recipe> attribute, or a TE recipe
    object, its fields passed through: te_mlir.torch.recipe). The
    library for a recipe is compiled the first time a module runs under it (do one
    eager step before torch.compile so compilation is not traced). ``calibrating``
    and ``fp8_group`` are not supported (refused when set)."""
    if calibrating:
        raise TeMlirError("te_mlir.torch.fp8_autocast: calibrating=True is not supported")
    if fp8_group is not None:
        raise TeMlirError("te_mlir.torch.fp8_autocast: fp8_group (distributed amax "
                          "reduction) is not supported")
    # TE's default recipe (fp8_recipe=None) is DelayedScaling
    name = (_recipe_name(recipe if recipe is not None else fp8_recipe) or "fp8-delayed"
            if enabled else "bf16")
    stack = getattr(_AUTOCAST, "stack", None)
    if stack is None:
        stack = _AUTOCAST.stack = []
    stack.append(name)
    try:
        yield
    finally:
        stack.pop()


def autocast(enabled=True, calibrating=False, recipe=None, amax_reduction_group=None,
             _graph=False):
    """te.autocast(enabled, calibrating, recipe, amax_reduction_group): fp8_autocast(enabled,
    fp8_recipe=recipe) (None: DelayedScaling, TE's default); calibrating and an amax
    reduction group are refused by name (fp8_autocast)."""
    return fp8_autocast(enabled=enabled, calibrating=calibrating, fp8_recipe=recipe,
                        fp8_group=amax_reduction_group)


@contextlib.contextmanager
def quantized_model_init(enabled=True, recipe=None, preserve_high_precision_init_val=False):
    """TE's quantized_model_init (fp8_model_init): the Linear / LayerNormLinear /
    LayerNormMLP built inside keep their GEMM weights only in FP8 (primary.QuantizedWeight:
    the bytes their library's weight-cache entry reads, quantized once here and again
    on each in-place update), for `recipe` (None: DelayedScaling, TE's default).
    The FP8 recipes (delayed, current, block scaling, MXFP8); NVFP4 is refused by name at
    construction.
    ``preserve_high_precision_init_val`` keeps the initial values on the CPU
    (``weight.get_high_precision_init_val()``)."""
    if not enabled:
        yield
        return
    push(_recipe_name(recipe) or "fp8-delayed", bool(preserve_high_precision_init_val))
    try:
        yield
    finally:
        pop()


fp8_model_init = quantized_model_init


def _f(x):
    return f"{float(x):.17e}"


# --------------------------------------------------------------------------- base


class _TEModule(PrimaryWeights, BackwardOverride, nn.Module):
    """Shared machinery: the parameter list in the IR's argument order, one library
    per recipe (compiled or given), recipe-state buffers, the weight cache."""

    _func = None  # the IR function name

    def _setup(self, recipe, library, target, cache_dir, params_dtype, device, strict):
        self.params_dtype = params_dtype if params_dtype is not None else torch.get_default_dtype()
        if not isinstance(self.params_dtype, torch.dtype):
            raise TypeError(f"{type(self).__name__}: params_dtype must be a torch.dtype "
                            "(torch.float32, torch.bfloat16 or torch.float16), got "
                            f"{type(self.params_dtype).__name__} {self.params_dtype!r}")
        if self.params_dtype not in _IR_DTYPES:
            raise TeMlirError(f"{type(self).__name__}: params_dtype {self.params_dtype} is not "
                              "supported (float32, bfloat16 or float16)")
        self.recipe = _recipe_name(recipe)
        self.target = target
        self.cache_dir = cache_dir
        self.strict = strict  # te-compile's warnings as errors (None: TE_MLIR_STRICT)
        self._library_path = library
        self._fns = {}  # (recipe, activation dtype) -> TeFunction
        self._runners = {}  # (recipe, activation dtype) -> its forward (_runner)
        self._traced = {}  # (recipe, activation dtype) -> what torch.compile traces
        self._state = {}  # (recipe, activation dtype) -> (fwd buffer names, bwd buffer names)
        self._state_buffers = set()  # names of the recipe-state buffers (the extra state)
        self._weight_cache = self._weight_cache_owner = None
        self._pending_wgrads = []  # delay_wgrad_compute: (parameter, gradient) for backward_dw
        if device is None:  # TE's default is the GPU: here, where the library will run
            from .. import runtime
            device = "cuda" if runtime().select_backend(target) == "cuda" else "cpu"
        self._device = torch.device(device)
        self._dev_type = self._device.type

    def _wgrad_options(self, return_bias, fuse_wgrad_accumulation, delay_wgrad_compute):
        self.return_bias = bool(return_bias)
        self.fuse_wgrad_accumulation = bool(fuse_wgrad_accumulation)
        self.delay_wgrad_compute = bool(delay_wgrad_compute)

    save_original_input = False  # (Linear's argument)


    def _finish_init(self):
        """The end of construction: the library of the active recipe built; inside
        quantized_model_init the GEMM weights quantized and kept only so (primary.py)."""
        self._build(self._active_recipe())
        self._init_primary_weights()





    def _new(self, *shape, init=None):
        p = torch.empty(*shape, dtype=self.params_dtype, device=self._device)
        with torch.no_grad():
            if init == "ones":
                p.fill_(1.0)
            elif init == "zeros":
                p.zero_()
            else:  # TE's default init_method: normal(0, 0.023)
                p.normal_(0.0, 0.023)
        return nn.Parameter(p)

    def _ir(self):
        raise NotImplementedError

    def _norm_ir(self, save_rowwise=False):
        """The norm's part of a LayerNorm* op: `norm <kind>(<weights>)` and the attribute
        dict (eps, zero_centered_gamma, return_layernorm_output, save_rowwise)."""
        norm = "%layer_norm_weight" + (", %layer_norm_bias" if "layer_norm_bias" in
                                       self._param_names else "")
        attrs = _attrs({"eps": _f(self.eps) + " : f64",
                        "zero_centered_gamma": self.zero_centered_gamma,
                        "return_layernorm_output": self.return_layernorm_output,
                        "save_rowwise": save_rowwise})
        return f"norm {_norm_name(self.normalization)}({norm})", attrs

    def _active_recipe(self):
        """The recipe te-compile builds for now (a backward_override is the module's)."""
        return split_override(self.recipe or get_recipe() or "bf16")[0]

    def _compile_options(self, recipe):
        extra = ()
        if recipe_kind(recipe) in BLACKWELL:  # their GEMM layouts are Blackwell's
            _check_blackwell(recipe, self.target, self._device)
            extra = ("--arch=sm_100a",)
        return dict(recipe=recipe, train=True, checkpoint=getattr(self, "checkpoint", False),
                    weight_cache=recipe_kind(recipe) in QUANTIZED, target=self.target,
                    cache_dir=self.cache_dir, strict=self.strict, extra_args=extra)

    @torch.compiler.disable
    def _build(self, recipe, dtype=None, frozen=(), save_rowwise=False):
        """The TeFunction of `recipe` in `dtype` with the parameters `frozen`, compiled
        (or the prebuilt library=) and loaded, its recipe-state buffers registered.
        ``save_rowwise`` (Linear, LayerNormLinear; not with library=): the op saves its
        quantized input's rowwise copy too, keyed apart (backward_override)."""
        dtype = dtype or self.params_dtype
        # (only Linear's and LayerNormLinear's _ir take save_rowwise)
        rowwise = {"save_rowwise": True} if save_rowwise else {}
        if self._library_path is not None:
            if frozen:  # (a prebuilt library computes every gradient; unused ones dropped)
                return self.function(recipe, dtype)
            if dtype != self.params_dtype:
                raise TeMlirError(f"{type(self).__name__}: torch.autocast to {dtype} with a "
                                  f"prebuilt library= (compiled for {self.params_dtype}); "
                                  "leave library= unset to compile one for the autocast dtype")
            path = self._library_path
        else:
            path = _te_compile(self._ir(dtype, frozen, **rowwise),
                               **self._compile_options(recipe))
        try:
            ops = load(path)
        except TeMlirError as ex:
            if self._library_path is not None:
                raise
            # a cached library that does not load (damaged where no record tells):
            # compiled again, once
            import warnings
            from .._abi import TeMlirWarning
            warnings.warn(f"{type(self).__name__}: the cached library {path} does not load "
                          f"({str(ex).splitlines()[0]}); compiling it again", TeMlirWarning,
                          stacklevel=3)
            path = _te_compile(self._ir(dtype, frozen, **rowwise), rebuild=True,
                               **self._compile_options(recipe))
            ops = load(path)
        fn = ops.function(self._func)
        n = len(self._param_names) + 1
        if len(fn.arg_specs) - len(fn.state_specs) != n:
            raise TeMlirError(f"{type(self).__name__}: library {ops.library.path.name} function "
                              f"{self._func} takes {len(fn.arg_specs)} arguments, the module "
                              f"has {n} inputs")
        dev = next(iter(self.parameters())).device
        names = ([], [])
        for which, specs in ((0, fn.state_specs), (1, fn.bwd_state_specs)):
            for s, t in zip(specs, fn.initial_state(device=dev, backward=bool(which))):
                bname = (recipe_kind(recipe).replace("-", "_") + "_" +
                         s.roles["te.state"].replace(".", "_"))
                old = self._buffers.get(bname)
                # (another DelayedScaling's amax_history_len: a fresh history of its length)
                if old is None or old.shape != t.shape:
                    self.register_buffer(bname, t, persistent=False)
                self._state_buffers.add(bname)
                names[which].append(bname)
        key = (recipe, dtype, frozen) if frozen else (recipe, dtype)
        if save_rowwise:
            key = (recipe, dtype, frozen, "save_rowwise")
        self._state[key] = names
        self._fns[key] = fn
        if len(key) == 2:
            self._traced[key] = self._traced_runner(fn, names, dtype)
        return fn

    def function(self, recipe=None, dtype=None):
        """The TeFunction for `recipe` (default: the active one) and activation `dtype`
        (default: params_dtype), compiling if needed."""
        key = (recipe or self._active_recipe(), dtype or self.params_dtype)
        fn = self._fns.get(key)
        return fn if fn is not None else self._build(*key)

    def memory_plan(self, tokens, recipe=None, dtype=None):
        """The memory plans of one training step at `tokens` rows (TeFunction.memory_plan:
        bytes held between forward and backward, each entry's results, arena and peak,
        the backward's with its saved tensors donated), compiling if needed."""
        check_sizes(f"{type(self).__name__}.memory_plan", tokens=tokens)
        if tokens < 0:
            raise ValueError(f"{type(self).__name__}.memory_plan: tokens must be >= 0, got "
                             f"{tokens}")
        fn = self.function(recipe, dtype)
        shapes = [[int(tokens), self._in_features] if i == 0 else
                  (None if a.is_qtensor else [int(d) for d in a.shape])
                  for i, a in enumerate(fn.fwd.args)] if fn.fwd is not None else []
        return fn.memory_plan(shapes)

    def _activation_dtype(self, inp):
        """TE's activation dtype: torch.autocast's when it is on for the input's device
        (parameters and input are cast to it), else the input's, which must be the
        parameters' (TE asserts the same)."""
        if not isinstance(inp, torch.Tensor):
            raise TypeError(f"{type(self).__name__}: input must be a torch.Tensor, got "
                            f"{type(inp).__name__}")
        if inp.dim() == 0 or inp.shape[-1] != self._in_features:
            raise ValueError(f"{type(self).__name__}: input of shape {tuple(inp.shape)}: the "
                             f"last dimension must be in_features = {self._in_features}")
        dev = inp.device.type
        if torch.is_autocast_enabled(dev):
            return torch.get_autocast_dtype(dev)
        if inp.dtype != self.params_dtype:
            raise TypeError(f"{type(self).__name__}: input dtype {inp.dtype} does not match "
                            f"the parameters' {self.params_dtype} (cast the input, or run under "
                            "torch.autocast, as TransformerEngine requires)")
        return self.params_dtype

    def forward(self, inp, is_first_microbatch=None, fp8_output=False, fp8_grad=False):
        if fp8_output or fp8_grad:
            raise TeMlirError(f"{type(self).__name__}: fp8_output / fp8_grad (quantized "
                              "tensors between modules) are not supported")
        recipe = self.recipe or get_recipe() or "bf16"
        if self.save_original_input and recipe_kind(split_override(recipe)[0]) == "fp8-delayed":
            raise ValueError(f"{type(self).__name__}: save_original_input=True with "
                             "DelayedScaling is not supported (as in TransformerEngine)")
        # TE's activation dtype (the common case inline: one host microsecond matters here)
        dtype = self.params_dtype
        if (torch.is_autocast_enabled(self._dev_type) or inp.dtype != dtype
                or not inp.dim() or inp.shape[-1] != self._in_features):
            dtype = self._activation_dtype(inp)
        if _compiling():  # traced once: plain attribute reads, the op's autograd
            why = self._outside_graph_reason(recipe)
            if why:  # run eagerly: a graph break, as TransformerEngine's modules take
                out = _outside_graph(self, why, inp, is_first_microbatch, recipe, dtype)
            elif is_first_microbatch is None and (recipe, dtype) in self._traced:
                out = self._traced[(recipe, dtype)](self, inp)
            else:
                fn = self.function(recipe, dtype)
                fnames, bnames = self._state[(recipe, dtype)]
                args = self._args(inp, dtype, fnames)
                out = self._run_general(fn, inp, args, bnames, is_first_microbatch,
                                        self._finisher(len(fnames), fnames, rebind=False))
        else:
            out = self._eager_forward(inp, is_first_microbatch, recipe, dtype)
        if self.return_bias:  # TE's order: (out, bias, ln_out)
            bias = self._returned_bias()
            bias = bias.to(dtype) if bias is not None else torch.empty(0, dtype=dtype,
                                                                       device=inp.device)
            return (out[0], bias) + tuple(out[1:]) if isinstance(out, tuple) else (out, bias)
        return out

    def _eager_forward(self, inp, is_first_microbatch, recipe, dtype):
        """The forward outside torch.compile: a backward_override, or the runner of the
        (recipe, dtype, frozen weights) key."""
        if "@" in recipe:  # recipe.py: a backward_override
            return self._forward_backward_override(inp, recipe, dtype)
        key = (recipe, dtype)
        try:
            if torch.is_grad_enabled():  # parameters with requires_grad=False: te.frozen
                ps = self._parameters
                frozen = tuple(n for n in self._param_names if not ps[n].requires_grad)
                if self.fuse_wgrad_accumulation and self._main_grad_in_gemm():
                    # te.main_grad: the wgrad GEMMs accumulate into main_grad
                    frozen += tuple(n + _MAIN_GRAD for n in self._gemm_weights()
                                    if ps[n].requires_grad)
                if self.delay_wgrad_compute and self._library_path is None:
                    # te.delay_wgrad: the GEMMs' weight and bias gradients computed by
                    # <fn>_bwd_wgrad when backward_dw() asks
                    frozen += tuple(n + _DELAY for n in self._delayed_params()
                                    if ps[n].requires_grad)
                if frozen:
                    key = (recipe, dtype, frozen)
            return self._runner_for(key)(self, inp, is_first_microbatch)
        except (KeyError, AttributeError, TypeError):
            self._check_parameters()  # a removed or None parameter: say which
            raise

    def _outside_graph_reason(self, recipe):
        """What makes this call run outside a torch.compile graph (None: nothing): TE's
        backward_override, FP8 primary weights, fuse_wgrad_accumulation and
        delay_wgrad_compute read or write state beside the graph (the weights'
        main_grad at backward time, the held gradients, the FP8 copies)."""
        if "@" in recipe:
            return f"backward_override={split_override(recipe)[1]!r}"
        if self._primary is not None:
            return "FP8 primary weights (quantized_model_init)"
        if self.fuse_wgrad_accumulation:
            return "fuse_wgrad_accumulation"
        if self.delay_wgrad_compute:
            return "delay_wgrad_compute"
        return None

    def _gemm_weights(self):
        """The names of the GEMM weights (not the norm's)."""
        return [n for n in self._param_names
                if n.endswith("weight") and not n.startswith("layer_norm")]

    def _delayed_params(self):
        """What delay_wgrad_compute defers (TE's backward_dw: the GEMMs' weight and bias
        gradients; the norm's come with the input gradient)."""
        return [n for n in self._param_names if not n.startswith("layer_norm")]

    def _main_grad_in_gemm(self):
        """fuse_wgrad_accumulation in the library (te.main_grad: the wgrad GEMM adds its
        fp32 product to main_grad in its epilogue, in place): not with a prebuilt
        library=, which adds the weight gradient to main_grad after the step. Under
        torch.autocast and with FP8 primary weights the step passes cast copies or
        stand-ins, which accumulate into their weight's main_grad
        (ops.main_grad_owner). With delay_wgrad_compute the GEMM runs at backward_dw()
        (te.delay_wgrad) and accumulates into main_grad then."""
        return self._library_path is None

    def _returned_bias(self):
        return getattr(self, "bias", None)

    def _check_parameters(self):
        """Raises a TeMlirError naming a parameter the library takes that is no longer a
        tensor (set to None, deleted, or replaced by a non-parameter attribute)."""
        for n in self._param_names:
            p = self._parameters.get(n)
            if not isinstance(p, torch.Tensor):
                raise TeMlirError(
                    f"{type(self).__name__}: parameter {n!r} is "
                    f"{'missing' if n not in self._parameters else repr(p)}, but the "
                    "module's library takes it (build the module without it instead, e.g. "
                    "bias=False)")

    def _args(self, inp, dtype, fnames):
        """The library's arguments, read from the module (the paths that are not the
        per-call fast runner): the input as [tokens, features] and the parameters in
        `dtype`, then the forward recipe state buffers `fnames`."""
        return ([inp.reshape(-1, inp.shape[-1]).to(dtype)]
                + [getattr(self, n).to(dtype) for n in self._param_names]
                + [getattr(self, n) for n in fnames])

    def _runner_for(self, key):
        """The forward of `key` ((recipe, dtype[, frozen]): _runner), built once."""
        run = self._runners.get(key)
        if run is None:
            run = self._runners[key] = self._runner(*key)
        return run




    def _runner(self, recipe, dtype, frozen=()):
        """The forward for `recipe` in activation `dtype` with the parameters `frozen`
        (requires_grad=False: compiled te.frozen), with what depends only on those (the
        function, the parameter and state names, the entry's autograd.Function) worked
        out once: a call reads the parameters, reshapes and runs."""
        key = (recipe, dtype, frozen) if frozen else (recipe, dtype)
        fn = self._fns.get(key)
        if fn is None:
            fn = self._build(recipe, dtype, frozen)
            key = key if key in self._state else (recipe, dtype)  # (library=: not frozen)
        fnames, bnames = self._state[key]
        pnames = list(self._param_names)
        cast = dtype != self.params_dtype  # torch.autocast: parameters cast per call
        # fuse_wgrad_accumulation / delay_wgrad_compute: the weights' gradients routed
        # (unless the library accumulates into main_grad itself: te.main_grad)
        mains = [n[:-len(_MAIN_GRAD)] for n in frozen if n.endswith(_MAIN_GRAD)]
        # te.delay_wgrad: <fn>_bwd_wgrad's call waits in the module's pending list
        delayed = [n[:-len(_DELAY)] for n in frozen if n.endswith(_DELAY)]
        route = ([pnames.index(n) + 1 for n in self._gemm_weights()]
                 if (self.fuse_wgrad_accumulation or self.delay_wgrad_compute)
                 and not mains and not delayed else [])
        fast = fn.training_function()
        finish = self._finisher(len(fnames), fnames)
        grad_enabled = torch.is_grad_enabled
        primary = self._primary_plan(fn, recipe, dtype)
        # te.main_grad weights the step passes as something else (a cast copy, an FP8
        # primary weight's stand-in): (argument index, parameter name)
        stand_ins = {n for _, n, _ in primary or ()}
        owned = [(pnames.index(n) + 1, n) for n in dict.fromkeys(mains + delayed)
                 if cast or n in stand_ins]

        # (the closures hold no module: a deepcopy of the module shares them safely)
        def run(mod, inp, is_first_microbatch):
            params = mod._parameters
            x = inp if inp.dim() == 2 else inp.reshape(-1, inp.shape[-1])
            if x.dtype != dtype:
                x = x.to(dtype)
            args = [x]
            if cast:
                args += [params[n].to(dtype) for n in pnames]
            else:
                args += [params[n] for n in pnames]
            cached = None
            if primary is not None:  # FP8 primary weights: their bytes, or their values
                cached = {}
                for i, n, saved in primary:
                    p = params[n]
                    if saved is None:
                        args[i] = Dequantized.apply(p, dtype)
                    else:
                        args[i], cached[saved] = StandIn.apply(p, dtype), p._qbytes
            if route and grad_enabled():
                for i in route:
                    if args[i].requires_grad:
                        args[i] = _WgradRoute.apply(args[i], mod, params[pnames[i - 1]])
            if owned and grad_enabled():  # cast copies / stand-ins: the weight's main_grad
                for i, n in owned:
                    main_grad_owner(args[i], params[n])
            if delayed and grad_enabled():  # <fn>_bwd_wgrad waits for backward_dw
                for n in delayed:
                    hold_wgrad(params[n], mod._pending_wgrads)
            if fnames:
                args += [mod._buffers[n] for n in fnames]
            if cached:
                return mod._run_general(fn, inp, args, bnames, None, finish, cached)
            if fast is not None and is_first_microbatch is None and grad_enabled():
                for a in args:
                    if a.requires_grad:
                        if bnames:
                            outs = fast.apply(*args, *[mod._buffers[n] for n in bnames])
                        else:
                            outs = fast.apply(*args)
                        if not fnames and inp.dim() == 2 and len(outs) == 1:
                            return outs[0]
                        return finish(mod, inp, list(outs))
            return mod._run_general(fn, inp, args, bnames, is_first_microbatch, finish)

        return run

    def _traced_runner(self, fn, names, dtype):
        """The forward torch.compile traces for one (recipe, activation dtype): the op of
        `fn`'s forward entry (or, without gradients, its inference entry) called on the
        parameters and recipe-state buffers by name. What depends only on the key (the
        ops, the names, the result positions, whether an entry takes the backward's
        recipe state) is bound here, once, so that Dynamo reads a few closure values
        instead of walking the library's Python objects (TeFunction.call), every read
        of which it guards on each call. The same ops, arguments and results as
        TeFunction.call."""
        fnames, bnames = (tuple(n) for n in names)
        pnames = tuple(self._param_names)
        ns = getattr(torch.ops, fn.ops.namespace)

        def convention(entry):  # its op, the state buffers it takes last, all results?
            takes_state, whole = fn.entry_convention(entry)
            return getattr(ns, entry.name).default, bnames if takes_state else (), whole

        train_op, train_bstate, _ = convention(fn.fwd) if fn.fwd is not None else (None, (), False)
        infer_op, infer_bstate, infer_all = convention(fn.inference or fn.fwd)
        out_index = tuple(fn.output_index)
        finish = self._finisher(len(fnames), fnames, rebind=False)
        grad_enabled = torch.is_grad_enabled

        def run(mod, inp):
            x = inp if inp.dim() == 2 else inp.reshape(-1, inp.shape[-1])
            params, bufs = mod._parameters, mod._buffers
            args = [x] + [params[n] for n in pnames]
            if dtype != mod.params_dtype or x.dtype != dtype:  # torch.autocast
                args = [a.to(dtype) for a in args]
            args += [bufs[n] for n in fnames]
            if grad_enabled() and any(a.requires_grad for a in args):
                if train_op is None:  # (TeFunction.call says why)
                    return mod._run_general(fn, inp, args, bnames, None, finish)
                res = train_op(*args, *[bufs[n] for n in train_bstate])
                whole = False
            else:
                res = infer_op(*args, *[bufs[n] for n in infer_bstate])
                whole = infer_all
            res = list(res) if isinstance(res, (tuple, list)) else [res]
            return finish(mod, inp, res if whole else [res[i] for i in out_index])

        return run

    @staticmethod
    def _finisher(n_state, fnames, rebind=True):
        """outs -> the module's result: the new forward recipe state made the module's
        buffers, the outputs reshaped to the input's leading dims. In eager the new
        state tensors replace the buffers (``rebind``): the old ones, which a pending
        backward or a checkpointed recompute may have saved, are left as they were.
        Traced (torch.compile) they are copied in, a mutation functionalization sees."""
        def finish(mod, inp, outs):
            if n_state:
                if rebind:
                    bufs = mod._buffers
                    for n, new in zip(fnames, outs[len(outs) - n_state:]):
                        bufs[n] = new
                else:
                    with torch.no_grad():
                        for n, new in zip(fnames, outs[len(outs) - n_state:]):
                            getattr(mod, n).copy_(new)
                outs = outs[:len(outs) - n_state]
            if inp.dim() != 2:
                lead = inp.shape[:-1]
                outs = [o.reshape(*lead, o.shape[-1]) for o in outs]
            return outs[0] if len(outs) == 1 else tuple(outs)
        return finish

    def _run_general(self, fn, inp, args, bnames, is_first_microbatch, finish, cached=None):
        bstate = [getattr(self, n) for n in bnames] if bnames else None
        want_weights = False
        if cached is None and is_first_microbatch is not None and fn.cached is not None:
            if is_first_microbatch:
                want_weights = True
            else:
                if self._weight_cache is None:
                    raise TeMlirError(f"{type(self).__name__}: is_first_microbatch=False before "
                                      "a first microbatch stored the cached weights")
                cached, owner = self._weight_cache, self._weight_cache_owner
                if owner is not fn:  # another recipe or dtype: other bytes, other layout
                    raise TeMlirError(
                        f"{type(self).__name__}: is_first_microbatch=False: the cached weights "
                        f"were quantized for {owner.ops.library.recipe or 'no recipe'} "
                        f"({owner!r}), this step runs {fn.ops.library.recipe or 'no recipe'} "
                        f"({fn!r}); call it with is_first_microbatch=True to cache them again")
        outs, weights = fn.call(*args, bwd_state=bstate, cached_weights=cached,
                                return_weights=want_weights)
        if want_weights:
            self._weight_cache, self._weight_cache_owner = weights, fn
        return finish(self, inp, outs)

    def backward_dw(self):
        """delay_wgrad_compute=True: the weight and bias gradients the last backward(s)
        deferred, added to the parameters' .grad (or, with fuse_wgrad_accumulation,
        accumulated into main_grad). The library is compiled te.delay_wgrad: the
        backward computes the input gradients and returns what the weight gradients
        still need; this runs <fn>_bwd_wgrad on it (the wgrad GEMMs), bit-identical to
        the undeferred step. (With library= or a backward_override the gradients come
        from the backward and are handed over here.)"""
        # (the list itself stays: ops.hold_wgrad's backwards append to it)
        pending = list(self._pending_wgrads)
        self._pending_wgrads.clear()
        with torch.no_grad():
            # a te.delay_wgrad library's backward left <fn>_bwd_wgrad's call (it returns
            # [(parameter, gradient)]; main_grad ones it accumulated in place)
            pending = [pair for item in pending
                       for pair in (item() if callable(item) else [item])]
            weights = {id(getattr(self, n)) for n in self._gemm_weights()}
            for param, g in pending:
                if self.fuse_wgrad_accumulation and id(param) in weights:
                    _to_main_grad(param, g)  # (biases: .grad, as TE's)
                elif param.grad is None:
                    param.grad = g.to(param.dtype)
                else:
                    param.grad += g

    # -- state: recipe-state buffers as the module's extra state; pickling; .half()

    def get_extra_state(self):
        """The recipe state (fp8-delayed amax histories and scales), by buffer name:
        `state_dict()["_extra_state"]`, so a fresh module loads it whatever recipe it was
        built with."""
        return {n: self._buffers[n] for n in sorted(self._state_buffers) if n in self._buffers}

    def set_extra_state(self, state):
        if isinstance(state, torch.Tensor):  # TransformerEngine's serialized FP8 metadata
            import warnings
            from .._abi import TeMlirWarning
            warnings.warn(f"{type(self).__name__}: TransformerEngine's FP8 metadata in the "
                          "state dict is not read; the recipe state starts fresh",
                          TeMlirWarning, stacklevel=3)
            return
        if state is None:
            return
        if not isinstance(state, dict) or not all(
                isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
            raise TeMlirError(f"{type(self).__name__}: _extra_state must be a dict of recipe "
                              f"state tensors, got {type(state).__name__}")
        dev = self._device
        for n, t in state.items():
            if not n.startswith(tuple(k.replace("-", "_") + "_" for k in QUANTIZED)):
                raise TeMlirError(f"{type(self).__name__}: _extra_state has {n!r}, which is "
                                  "not a recipe-state buffer")
            old = self._buffers.get(n)
            if old is not None:
                dev = old.device
            self.register_buffer(n, t.detach().to(device=dev, dtype=torch.float32).clone(),
                                 persistent=False)
            self._state_buffers.add(n)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # state dicts written before the recipe state was extra state: its buffers by name
        kinds = tuple(k.replace("-", "_") + "_" for k in QUANTIZED)
        old = {k[len(prefix):]: state_dict[k] for k in list(state_dict)
               if k.startswith(prefix) and "." not in k[len(prefix):]
               and k[len(prefix):].startswith(kinds)}
        if old and prefix + "_extra_state" not in state_dict:
            state_dict = dict(state_dict)
            for n in old:
                del state_dict[prefix + n]
            state_dict[prefix + "_extra_state"] = old
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    _TRANSIENT = ("_fns", "_runners", "_traced", "_state")

    def __getstate__(self):
        """deepcopy / pickle / torch.save: the libraries' handles are not copied; a copy
        loads them again (from the compile cache, or library=) at its first call."""
        d = dict(self.__dict__)
        for k in self._TRANSIENT:
            d[k] = {}
        d["_weight_cache"] = d["_weight_cache_owner"] = None
        d["_pending_wgrads"] = []
        return d

    def __setstate__(self, state):
        super().__setstate__(state)
        import weakref
        for p in self._parameters.values():  # FP8 primary weights: this module quantizes
            if hasattr(p, "_qbytes"):
                p._owner = weakref.ref(self)

    def _apply(self, fn, recurse=True):
        # .to(device) / .cuda() move the recipe state; .half() / .to(dtype) leave it fp32
        state = {n: self._buffers.pop(n) for n in list(self._state_buffers)
                 if n in self._buffers}
        try:
            super()._apply(fn, recurse)
        finally:
            for n, t in state.items():
                self._buffers[n] = t.to(device=fn(t[:0]).device)
        p = next(iter(self._parameters.values()), None)
        if p is not None and (p.dtype != self.params_dtype or p.device != self._device):
            if p.dtype not in _IR_DTYPES:
                raise TeMlirError(f"{type(self).__name__}: parameters of dtype {p.dtype} are "
                                  "not supported (float32, bfloat16 or float16)")
            self.params_dtype, self._device, self._dev_type = p.dtype, p.device, p.device.type
            self._runners = {}
            self._weight_cache = self._weight_cache_owner = None
        return self

    def extra_repr(self):
        return f"recipe={self.recipe or 'autocast/bf16'}, params_dtype={self.params_dtype}"


def _check_blackwell(recipe, target, device):
    """mxfp8 / nvfp4 compile for sm_100a (on the cpu backend too: it emulates that
    layout); on a cuda device that is not a Blackwell (compute capability 10.x) they
    cannot run: refused here, naming the recipe and the device."""
    from .. import runtime
    if runtime().select_backend(target) != "cuda":
        return
    dev = device if device.type == "cuda" else torch.device("cuda",
                                                            torch.cuda.current_device())
    cap = torch.cuda.get_device_capability(dev)
    if cap[0] != 10:
        raise TeMlirError(f"te_mlir.torch: recipe {recipe} needs a Blackwell GPU (sm_100a, "
                          f"compute capability 10.x); {dev} ({torch.cuda.get_device_name(dev)}) "
                          f"has compute capability {cap[0]}.{cap[1]} (use target='cpu', or "
                          "fp8-current / fp8-delayed / fp8-block here)")


def _to_main_grad(param, g):
    """fuse_wgrad_accumulation: `g` added to param.main_grad in its dtype (fp32: the
    Megatron convention), or copied over it when param.overwrite_main_grad is set."""
    main = getattr(param, "main_grad", None)
    if main is None:
        raise TeMlirError("fuse_wgrad_accumulation=True: the weight has no main_grad (give each "
                          "weight a main_grad tensor, fp32, of its shape, as Megatron-LM does)")
    if main.shape != param.shape:
        raise TeMlirError(f"fuse_wgrad_accumulation=True: main_grad of shape "
                          f"{tuple(main.shape)} for a weight of shape {tuple(param.shape)}")
    if getattr(param, "overwrite_main_grad", False):
        main.copy_(g)
    else:
        main.add_(g)


def _run_outside_graph(mod, why, inp, is_first_microbatch, recipe, dtype):
    """A module call torch.compile leaves to eager (`_outside_graph`), with a
    TeMlirWarning the first time for the module."""
    if not mod.__dict__.get("_te_outside_graph_warned"):
        mod.__dict__["_te_outside_graph_warned"] = True
        import warnings
        from .._abi import TeMlirWarning
        warnings.warn(f"{type(mod).__name__}: {why} runs outside the torch.compile graph "
                      "(a graph break, as TransformerEngine's modules take; "
                      "torch.compile(fullgraph=True) refuses it)", TeMlirWarning,
                      stacklevel=2)
    return mod._eager_forward(inp, is_first_microbatch, recipe, dtype)


# Under torch.compile Dynamo does not trace into it: the graph breaks there and the call
# runs eagerly (what _outside_graph_reason names needs Python state at backward time).
_outside_graph = torch.compiler.disable(
    _run_outside_graph,
    reason="te_mlir: backward_override, FP8 primary weights, fuse_wgrad_accumulation and "
           "delay_wgrad_compute run the module eagerly (they read or write the weights' "
           "main_grad, held gradients or FP8 copies beside the graph), as "
           "TransformerEngine's modules always do")


class _WgradRoute(torch.autograd.Function):
    """Identity on a weight whose gradient goes elsewhere: held for backward_dw()
    (delay_wgrad_compute) or added to main_grad (fuse_wgrad_accumulation). The weight's
    own .grad then gets nothing, or, where Megatron marks the weight with
    grad_added_to_main_grad, zeros (TE's dummy wgrad)."""

    @staticmethod
    def forward(ctx, w, mod, param):
        ctx.mod, ctx.param = mod, param
        return w.view_as(w)

    @staticmethod
    def backward(ctx, g):
        mod, param = ctx.mod, ctx.param
        if mod.delay_wgrad_compute:
            mod._pending_wgrads.append((param, g))
            return None, None, None
        with torch.no_grad():
            _to_main_grad(param, g)
        if hasattr(param, "grad_added_to_main_grad"):
            param.grad_added_to_main_grad = True
            return torch.zeros_like(g), None, None
        return None, None, None


def check_sizes(cls_name, **sizes):
    """Each of `sizes` is an integer (an int or anything with __index__, such as a NumPy
    integer; not a bool, a float or a string: TE's sizes are ints)."""
    for name, v in sizes.items():
        try:
            if isinstance(v, bool):
                raise TypeError
            operator.index(v)
        except TypeError:
            raise TypeError(f"{cls_name}: {name} must be an int, got {type(v).__name__} "
                            f"{v!r}") from None


def check_eps(cls_name, eps):
    """`eps`, the norm's epsilon, is a finite number >= 0."""
    if isinstance(eps, bool) or not isinstance(eps, (int, float)):
        raise TypeError(f"{cls_name}: eps must be a number, got {type(eps).__name__} {eps!r}")
    if not math.isfinite(eps) or eps < 0:
        raise ValueError(f"{cls_name}: eps must be finite and >= 0, got {eps!r}")


def _tensor(shape, dt):
    return "tensor<" + "x".join(str(s) for s in shape) + "x" + dt + ">"


def _attrs(d):
    items = []
    for k, v in d.items():
        if v is True:
            items.append(k)
        elif v is not None and v is not False:
            items.append(f"{k} = {v}")
    return (" {" + ", ".join(items) + "}") if items else ""


def _norm_name(normalization):
    if normalization == "LayerNorm":
        return "layer_norm"
    if normalization == "RMSNorm":
        return "rms_norm"
    raise TeMlirError(f"normalization must be 'LayerNorm' or 'RMSNorm', got {normalization!r}")


class LayerNormLinear(_TEModule):
    """TE's LayerNormLinear(in_features, out_features, eps=1e-5, bias=True,
    normalization="LayerNorm", return_layernorm_output=False, zero_centered_gamma=False,
    params_dtype=None, device=None). Parameters: layer_norm_weight, layer_norm_bias
    (LayerNorm), weight [out, in], bias [out]; on `device`, by default where the
    library runs (cuda when `target` resolves to it). te-mlir extras: recipe=, library= (a
    prebuilt te-compile'd .so whose function `layernorm_linear` has this signature),
    target=, cache_dir=, strict= (te-compile's warnings, TeMlirWarning, as errors;
    default TE_MLIR_STRICT). forward(inp, is_first_microbatch=None) -> out, or (out, ln_out)
    with return_layernorm_output."""

    _func = "layernorm_linear"

    def __init__(self, in_features, out_features, eps=1e-5, bias=True,
                 normalization="LayerNorm", return_layernorm_output=False,
                 zero_centered_gamma=False, params_dtype=None, device=None, recipe=None,
                 library=None, target="auto", cache_dir=None, strict=None, return_bias=False,
                 init_method=None, fuse_wgrad_accumulation=False, delay_wgrad_compute=False,
                 **unsupported):
        super().__init__()
        _refuse(type(self).__name__, unsupported)
        check_sizes(type(self).__name__, in_features=in_features, out_features=out_features)
        check_eps(type(self).__name__, eps)
        self._setup(recipe, library, target, cache_dir, params_dtype, device, strict)
        self._wgrad_options(return_bias, fuse_wgrad_accumulation, delay_wgrad_compute)
        self.in_features, self.out_features = in_features, out_features
        self._in_features = in_features
        self.eps, self.use_bias, self.normalization = eps, bias, normalization
        self.return_layernorm_output = return_layernorm_output
        self.zero_centered_gamma = zero_centered_gamma
        _norm_name(normalization)
        self.layer_norm_weight = self._new(in_features,
                                           init="zeros" if zero_centered_gamma else "ones")
        names = ["layer_norm_weight"]
        if normalization == "LayerNorm":
            self.layer_norm_bias = self._new(in_features, init="zeros")
            names.append("layer_norm_bias")
        self.weight = self._new(out_features, in_features)
        names.append("weight")
        if bias:
            self.bias = self._new(out_features, init="zeros")
            if not self.return_bias:  # (else returned, not added: not the library's)
                names.append("bias")
        self._param_names = names
        if init_method is not None:
            init_method(self.weight)
        self._finish_init()

    def _ir(self, dtype, frozen=(), save_rowwise=False):
        dt = _IR_DTYPES[dtype]
        K, N = self.in_features, self.out_features
        shapes = {"layer_norm_weight": [K], "layer_norm_bias": [K], "weight": [N, K],
                  "bias": [N]}
        args = [("x", ["?", K])] + [(n, shapes[n]) for n in self._param_names]
        w = "%weight" + (", %bias" if "bias" in self._param_names else "")
        res = [_tensor(["?", N], dt)] + ([_tensor(["?", K], dt)]
                                         if self.return_layernorm_output else [])
        norm, attrs = self._norm_ir(save_rowwise)
        return _func_text(self._func, args, dt, res,
                          f"te.layernorm_linear %x {norm} weight({w}){attrs}", frozen)


class LayerNormMLP(_TEModule):
    """TE's LayerNormMLP(hidden_size, ffn_hidden_size, eps=1e-5, bias=True,
    normalization="LayerNorm", activation="gelu", return_layernorm_output=False,
    zero_centered_gamma=False, params_dtype=None, device=None, checkpoint=False).
    Parameters: layer_norm_weight, layer_norm_bias (LayerNorm), fc1_weight [F1, H]
    (F1 = 2 * ffn_hidden_size for gated activations), fc1_bias, fc2_weight [H, F],
    fc2_bias. ``checkpoint=True`` compiles with --checkpoint (TE's selective
    recompute). Extras as LayerNormLinear's."""

    _func = "layernorm_mlp"
    _refuses_backward_override = True  # (as TE's LayerNormMLP)

    def __init__(self, hidden_size, ffn_hidden_size, eps=1e-5, bias=True,
                 normalization="LayerNorm", activation="gelu", return_layernorm_output=False,
                 zero_centered_gamma=False, params_dtype=None, device=None, checkpoint=False,
                 recipe=None, library=None, target="auto", cache_dir=None, strict=None,
                 return_bias=False, init_method=None, output_layer_init_method=None,
                 fuse_wgrad_accumulation=False, delay_wgrad_compute=False,
                 activation_params=None, **unsupported):
        super().__init__()
        _refuse(type(self).__name__, unsupported)
        check_sizes(type(self).__name__, hidden_size=hidden_size, ffn_hidden_size=ffn_hidden_size)
        check_eps(type(self).__name__, eps)
        if activation not in ACTIVATIONS:
            raise TeMlirError(f"LayerNormMLP: activation {activation!r} is not supported; one "
                              "of " + ", ".join(ACTIVATIONS))
        self._act = _activation_ir(activation, activation_params)
        self._setup(recipe, library, target, cache_dir, params_dtype, device, strict)
        self._wgrad_options(return_bias, fuse_wgrad_accumulation, delay_wgrad_compute)
        self.hidden_size, self.ffn_hidden_size = hidden_size, ffn_hidden_size
        self._in_features = hidden_size
        self.eps, self.use_bias, self.normalization = eps, bias, normalization
        self.activation, self.checkpoint = activation, checkpoint
        self.return_layernorm_output = return_layernorm_output
        self.zero_centered_gamma = zero_centered_gamma
        _norm_name(normalization)
        H, F = hidden_size, ffn_hidden_size
        F1 = 2 * F if activation in GATED_ACTIVATIONS else F
        self.layer_norm_weight = self._new(H, init="zeros" if zero_centered_gamma else "ones")
        names = ["layer_norm_weight"]
        if normalization == "LayerNorm":
            self.layer_norm_bias = self._new(H, init="zeros")
            names.append("layer_norm_bias")
        self.fc1_weight = self._new(F1, H)
        names.append("fc1_weight")
        if bias:
            self.fc1_bias = self._new(F1, init="zeros")
            names.append("fc1_bias")
        self.fc2_weight = self._new(H, F)
        names.append("fc2_weight")
        if bias:
            self.fc2_bias = self._new(H, init="zeros")
            if not self.return_bias:  # (else returned, not added: not the library's)
                names.append("fc2_bias")
        self._param_names = names
        self._shapes = {"layer_norm_weight": [H], "layer_norm_bias": [H], "fc1_weight": [F1, H],
                        "fc1_bias": [F1], "fc2_weight": [H, F], "fc2_bias": [H]}
        if init_method is not None:
            init_method(self.fc1_weight)
        if output_layer_init_method is not None:
            output_layer_init_method(self.fc2_weight)
        self._finish_init()

    def _returned_bias(self):
        return getattr(self, "fc2_bias", None)

    def _ir(self, dtype, frozen=()):
        dt = _IR_DTYPES[dtype]
        H = self.hidden_size
        args = [("x", ["?", H])] + [(n, self._shapes[n]) for n in self._param_names]
        fc1 = "%fc1_weight" + (", %fc1_bias" if "fc1_bias" in self._param_names else "")
        fc2 = "%fc2_weight" + (", %fc2_bias" if "fc2_bias" in self._param_names else "")
        res = [_tensor(["?", H], dt)] + ([_tensor(["?", H], dt)]
                                         if self.return_layernorm_output else [])
        norm, attrs = self._norm_ir()
        return _func_text(self._func, args, dt, res,
                          f"te.layernorm_mlp %x {norm} fc1({fc1}) act {self._act} "
                          f"fc2({fc2}){attrs}", frozen)


_ACT_PARAMS = {"limit": 7.0, "alpha": 1.702, "glu_linear_offset": 1.0}  # TE's defaults


def _activation_ir(activation, params):
    """The activation's text in the op: TE's ``activation_params`` (clamped_swiglu's
    limit, alpha, glu_linear_offset) as its parameters, those at TE's defaults left out
    (the IR, and so the compile cache key, of TE's defaults is the plain name)."""
    if not params:
        return activation
    if not isinstance(params, dict):
        raise TypeError(f"LayerNormMLP: activation_params must be a dict, got "
                        f"{type(params).__name__}")
    if activation != "clamped_swiglu":
        raise TeMlirError(f"LayerNormMLP: activation_params={params!r} with activation "
                          f"{activation!r}: only clamped_swiglu takes parameters (limit, "
                          "alpha, glu_linear_offset)")
    unknown = sorted(set(params) - set(_ACT_PARAMS))
    if unknown:
        raise TeMlirError(f"LayerNormMLP: activation_params {unknown} are not clamped_swiglu's "
                          "(limit, alpha, glu_linear_offset)")
    given = []
    for k, default in _ACT_PARAMS.items():
        v = params.get(k, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"LayerNormMLP: activation_params[{k!r}] must be a number, got {v!r}")
        if float(v) != default:
            given.append(f"{k} = {_f(v)}")
    return activation + (f"<{', '.join(given)}>" if given else "")


class Linear(_TEModule):
    """TE's Linear(in_features, out_features, bias=True, params_dtype=None, device=None).
    Parameters: weight [out, in], bias [out]. Extras as LayerNormLinear's."""

    _func = "linear"

    def __init__(self, in_features, out_features, bias=True, params_dtype=None, device=None,
                 recipe=None, library=None, target="auto", cache_dir=None, strict=None,
                 return_bias=False, init_method=None, fuse_wgrad_accumulation=False,
                 delay_wgrad_compute=False, save_original_input=False, **unsupported):
        super().__init__()
        _refuse(type(self).__name__, unsupported)
        check_sizes(type(self).__name__, in_features=in_features, out_features=out_features)
        # TE: save the unquantized input and quantize it again in the backward (memory
        # shared with a caller that keeps it anyway); the results are the same bits. Here
        # the library saves what its backward reads: accepted, with no effect.
        self.save_original_input = bool(save_original_input)
        self._setup(recipe, library, target, cache_dir, params_dtype, device, strict)
        self._wgrad_options(return_bias, fuse_wgrad_accumulation, delay_wgrad_compute)
        self.in_features, self.out_features, self.use_bias = in_features, out_features, bias
        self._in_features = in_features
        self.weight = self._new(out_features, in_features)
        names = ["weight"]
        if bias:
            self.bias = self._new(out_features, init="zeros")
            if not self.return_bias:
                names.append("bias")
        self._param_names = names
        if init_method is not None:
            init_method(self.weight)
        self._finish_init()

    def _ir(self, dtype, frozen=(), save_rowwise=False):
        dt = _IR_DTYPES[dtype]
        K, N = self.in_features, self.out_features
        shapes = {"weight": [N, K], "bias": [N]}
        args = [("x", ["?", K])] + [(n, shapes[n]) for n in self._param_names]
        w = "%weight" + (", %bias" if "bias" in self._param_names else "")
        return _func_text(self._func, args, dt, [_tensor(["?", N], dt)],
                          f"te.linear %x weight({w})" + _attrs({"save_rowwise": save_rowwise}),
                          frozen)


# A mark of `frozen` (the parameters' compile-time attributes): NAME + _MAIN_GRAD is
# te.main_grad on parameter NAME (fuse_wgrad_accumulation in the wgrad GEMM), NAME +
# _DELAY te.delay_wgrad (delay_wgrad_compute: its gradient from <fn>_bwd_wgrad, which
# backward_dw() runs).
_MAIN_GRAD = ":main_grad"
_DELAY = ":delay_wgrad"


def _func_text(name, args, dt, results, op, frozen=()):
    # te.frozen: a parameter with requires_grad=False, no gradient (no wgrad GEMM, and
    # nothing saved only for it); te.main_grad: its gradient accumulated into an fp32
    # main_grad by the wgrad GEMM (fuse_wgrad_accumulation)
    def mark(n):
        if n in frozen:
            return " {te.frozen}"
        attrs = [a for a, m in (("te.main_grad", _MAIN_GRAD), ("te.delay_wgrad", _DELAY))
                 if n + m in frozen]
        return " {" + ", ".join(attrs) + "}" if attrs else ""
    sig = ", ".join(f"%{n}: {_tensor(s, dt)}" + mark(n) for n, s in args)
    types = ", ".join(_tensor(s, dt) for _, s in args)
    rt = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
    vals = ", ".join(f"%r{i}" for i in range(len(results)))
    return (f"func.func @{name}({sig}) -> {rt} {{\n"
            f"  {vals} = {op} : ({types}) -> {rt}\n"
            f"  return {vals} : {', '.join(results)}\n"
            "}\n")


# TE arguments that only change parallelism/memory management (accepted at their
# defaults, refused otherwise: they would silently change nothing here).
_NEUTRAL = {"sequence_parallel": False, "tp_group": None, "tp_size": 1, "get_rng_state_tracker": None,
            "parallel_mode": None, "ub_overlap_ag": False,
            "ub_overlap_rs": False, "ub_overlap_rs_dgrad": False, "ub_bulk_dgrad": False,
            "ub_bulk_wgrad": False, "ub_name": None, "return_layernorm_output_gathered": False,
            "set_parallel_mode": False, "skip_weight_param_allocation": False,
            "rng_tracker_name": None, "symmetric_ar_type": None, "name": None,
            "parameters_split": None, "ub_overlap_ag_fprop": False, "ub_overlap_rs_fprop": False,
            "ub_overlap_ag_dgrad": False, "ub_overlap_rs_dgrad": False,
            "seq_length": None, "micro_batch_size": None}


def _refuse(cls, unsupported):
    for k, v in unsupported.items():
        if k not in _NEUTRAL:
            raise TypeError(f"{cls}: unexpected argument {k!r}")
        if v != _NEUTRAL[k]:
            raise TeMlirError(f"{cls}: {k}={v!r} is not supported by te-mlir's modules "
                              "(single device, no tensor/sequence parallelism or userbuffers)")
