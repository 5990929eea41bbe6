"""TransformerEngine-named modules over te-mlir libraries: LayerNormLinear, LayerNormMLP,
Linear. Each module writes its own te IR (the `te` dialect's module op, the token dim
dynamic), compiles it with te_mlir.compile (cached on disk) for the recipe in use, and
calls the generated custom ops. Parameters carry TE's names."""
import contextlib
import threading

import torch
import torch.nn as nn

from .. import compile as _te_compile
from .._abi import TeMlirError
from .ops import _compiling, load
from .recipe import BLACKWELL, QUANTIZED, recipe_kind, recipe_spec

__all__ = ["LayerNormLinear", "LayerNormMLP", "Linear", "fp8_autocast", "autocast",
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


def autocast(enabled=True, recipe=None):
    """te.autocast(enabled, recipe): fp8_autocast(enabled, fp8_recipe=recipe) (None:
    DelayedScaling, TE's default)."""
    return fp8_autocast(enabled=enabled, fp8_recipe=recipe)


def _f(x):
    return f"{float(x):.17e}"


# --------------------------------------------------------------------------- base


class _TEModule(nn.Module):
    """Shared machinery: the parameter list in the IR's argument order, one library
    per recipe (compiled or given), recipe-state buffers, the weight cache."""

    _func = None  # the IR function name

    def _setup(self, recipe, library, target, cache_dir, params_dtype, device, strict):
        self.params_dtype = params_dtype if params_dtype is not None else torch.get_default_dtype()
        if self.params_dtype not in _IR_DTYPES:
            raise TeMlirError(f"{type(self).__name__}: params_dtype {self.params_dtype} is not "
                              "supported (float32, bfloat16 or float16)")
        self.recipe = _recipe_name(recipe)
        self.target = target
        self.cache_dir = cache_dir
        self.strict = strict  # te-compile's warnings as errors (None: TE_MLIR_STRICT)
        self._library_path = library
        self._fns = {}  # recipe -> TeFunction
        self._runners = {}  # recipe -> its forward (_runner)
        self._state = {}  # recipe -> (fwd buffer names, bwd buffer names)
        self._weight_cache = None
        if device is None:  # TE's default is the GPU: here, where the library will run
            from .. import runtime
            device = "cuda" if runtime().select_backend(target) == "cuda" else "cpu"
        self._device = torch.device(device)

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

    def _norm_ir(self):
        """The norm's part of a LayerNorm* op: `norm <kind>(<weights>)` and the attribute
        dict (eps, zero_centered_gamma, return_layernorm_output)."""
        norm = "%layer_norm_weight" + (", %layer_norm_bias" if "layer_norm_bias" in
                                       self._param_names else "")
        attrs = _attrs({"eps": _f(self.eps) + " : f64",
                        "zero_centered_gamma": self.zero_centered_gamma,
                        "return_layernorm_output": self.return_layernorm_output})
        return f"norm {_norm_name(self.normalization)}({norm})", attrs

    def _active_recipe(self):
        return self.recipe or get_recipe() or "bf16"

    def _compile_options(self, recipe):
        extra = ()
        if recipe_kind(recipe) in BLACKWELL:  # their GEMM layouts are Blackwell's
            _check_blackwell(recipe, self.target, self._device)
            extra = ("--arch=sm_100a",)
        return dict(recipe=recipe, train=True, checkpoint=getattr(self, "checkpoint", False),
                    weight_cache=recipe_kind(recipe) in QUANTIZED, target=self.target,
                    cache_dir=self.cache_dir, strict=self.strict, extra_args=extra)

    @torch.compiler.disable
    def _build(self, recipe):
        if self._library_path is not None:
            path = self._library_path
        else:
            path = _te_compile(self._ir(), **self._compile_options(recipe))
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
                    self.register_buffer(bname, t, persistent=True)
                names[which].append(bname)
        self._state[recipe] = names
        self._fns[recipe] = fn
        return fn

    def function(self, recipe=None):
        """The TeFunction for `recipe` (default: the active one), compiling if needed."""
        recipe = recipe or self._active_recipe()
        fn = self._fns.get(recipe)
        return fn if fn is not None else self._build(recipe)

    def forward(self, inp, is_first_microbatch=None):
        recipe = self.recipe or get_recipe() or "bf16"
        if _compiling():  # traced once: plain attribute reads, the op's autograd
            fn = self.function(recipe)
            fnames, bnames = self._state[recipe]
            x = inp.reshape(-1, inp.shape[-1])
            if x.dtype != self.params_dtype:
                x = x.to(self.params_dtype)
            args = ([x] + [getattr(self, n) for n in self._param_names]
                    + [getattr(self, n) for n in fnames])
            return self._run_general(fn, inp, args, bnames, is_first_microbatch,
                                     self._finisher(len(fnames), fnames))
        run = self._runners.get(recipe)
        if run is None:
            run = self._runners[recipe] = self._runner(recipe)
        return run(self, inp, is_first_microbatch)

    def _runner(self, recipe):
        """The forward for `recipe`, with what depends only on the module and the recipe
        (the function, the parameter and state names, the entry's autograd.Function)
        worked out once: a call reads the parameters, reshapes and runs."""
        fn = self._fns.get(recipe)
        if fn is None:
            fn = self._build(recipe)
        fnames, bnames = self._state[recipe]
        pnames = list(self._param_names)
        dtype = self.params_dtype
        fast = fn.training_function()
        finish = self._finisher(len(fnames), fnames)
        grad_enabled = torch.is_grad_enabled

        # (the closures hold no module: a deepcopy of the module shares them safely)
        def run(mod, inp, is_first_microbatch):
            params = mod._parameters
            x = inp if inp.dim() == 2 else inp.reshape(-1, inp.shape[-1])
            if x.dtype != dtype:
                x = x.to(dtype)
            args = [x]
            args += [params[n] for n in pnames]
            if fnames:
                args += [mod._buffers[n] for n in fnames]
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

    @staticmethod
    def _finisher(n_state, fnames):
        """outs -> the module's result: the new forward recipe state copied into its
        buffers, the outputs reshaped to the input's leading dims."""
        def finish(mod, inp, outs):
            if n_state:
                with torch.no_grad():
                    for n, new in zip(fnames, outs[len(outs) - n_state:]):
                        getattr(mod, n).copy_(new)
                outs = outs[:len(outs) - n_state]
            if inp.dim() != 2:
                lead = inp.shape[:-1]
                outs = [o.reshape(*lead, o.shape[-1]) for o in outs]
            return outs[0] if len(outs) == 1 else tuple(outs)
        return finish

    def _run_general(self, fn, inp, args, bnames, is_first_microbatch, finish):
        bstate = [getattr(self, n) for n in bnames] if bnames else None
        cached = None
        want_weights = False
        if is_first_microbatch is not None and fn.cached is not None:
            if is_first_microbatch:
                want_weights = True
            else:
                cached = self._weight_cache
                if cached is None:
                    raise TeMlirError(f"{type(self).__name__}: is_first_microbatch=False before "
                                      "a first microbatch stored the cached weights")
        outs, weights = fn.call(*args, bwd_state=bstate, cached_weights=cached,
                                return_weights=want_weights)
        if want_weights:
            self._weight_cache = weights
        return finish(self, inp, outs)

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
                 init_method=None, **unsupported):
        super().__init__()
        _refuse(type(self).__name__, unsupported, return_bias)
        self._setup(recipe, library, target, cache_dir, params_dtype, device, strict)
        self.in_features, self.out_features = in_features, out_features
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
            names.append("bias")
        self._param_names = names
        if init_method is not None:
            init_method(self.weight)
        self._build(self._active_recipe())

    def _ir(self):
        dt = _IR_DTYPES[self.params_dtype]
        K, N = self.in_features, self.out_features
        shapes = {"layer_norm_weight": [K], "layer_norm_bias": [K], "weight": [N, K],
                  "bias": [N]}
        args = [("x", ["?", K])] + [(n, shapes[n]) for n in self._param_names]
        w = "%weight" + (", %bias" if self.use_bias else "")
        res = [_tensor(["?", N], dt)] + ([_tensor(["?", K], dt)]
                                         if self.return_layernorm_output else [])
        norm, attrs = self._norm_ir()
        return _func_text(self._func, args, dt, res,
                          f"te.layernorm_linear %x {norm} weight({w}){attrs}")


class LayerNormMLP(_TEModule):
    """TE's LayerNormMLP(hidden_size, ffn_hidden_size, eps=1e-5, bias=True,
    normalization="LayerNorm", activation="gelu", return_layernorm_output=False,
    zero_centered_gamma=False, params_dtype=None, device=None, checkpoint=False).
    Parameters: layer_norm_weight, layer_norm_bias (LayerNorm), fc1_weight [F1, H]
    (F1 = 2 * ffn_hidden_size for gated activations), fc1_bias, fc2_weight [H, F],
    fc2_bias. ``checkpoint=True`` compiles with --checkpoint (TE's selective
    recompute). Extras as LayerNormLinear's."""

    _func = "layernorm_mlp"

    def __init__(self, hidden_size, ffn_hidden_size, eps=1e-5, bias=True,
                 normalization="LayerNorm", activation="gelu", return_layernorm_output=False,
                 zero_centered_gamma=False, params_dtype=None, device=None, checkpoint=False,
                 recipe=None, library=None, target="auto", cache_dir=None, strict=None,
                 return_bias=False, init_method=None, output_layer_init_method=None,
                 **unsupported):
        super().__init__()
        _refuse(type(self).__name__, unsupported, return_bias)
        if activation not in ACTIVATIONS:
            raise TeMlirError(f"LayerNormMLP: activation {activation!r} is not supported; one "
                              "of " + ", ".join(ACTIVATIONS))
        self._setup(recipe, library, target, cache_dir, params_dtype, device, strict)
        self.hidden_size, self.ffn_hidden_size = hidden_size, ffn_hidden_size
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
            names.append("fc2_bias")
        self._param_names = names
        self._shapes = {"layer_norm_weight": [H], "layer_norm_bias": [H], "fc1_weight": [F1, H],
                        "fc1_bias": [F1], "fc2_weight": [H, F], "fc2_bias": [H]}
        if init_method is not None:
            init_method(self.fc1_weight)
        if output_layer_init_method is not None:
            output_layer_init_method(self.fc2_weight)
        self._build(self._active_recipe())

    def _ir(self):
        dt = _IR_DTYPES[self.params_dtype]
        H = self.hidden_size
        args = [("x", ["?", H])] + [(n, self._shapes[n]) for n in self._param_names]
        fc1 = "%fc1_weight" + (", %fc1_bias" if self.use_bias else "")
        fc2 = "%fc2_weight" + (", %fc2_bias" if self.use_bias else "")
        res = [_tensor(["?", H], dt)] + ([_tensor(["?", H], dt)]
                                         if self.return_layernorm_output else [])
        norm, attrs = self._norm_ir()
        return _func_text(self._func, args, dt, res,
                          f"te.layernorm_mlp %x {norm} fc1({fc1}) act {self.activation} "
                          f"fc2({fc2}){attrs}")


class Linear(_TEModule):
    """TE's Linear(in_features, out_features, bias=True, params_dtype=None, device=None).
    Parameters: weight [out, in], bias [out]. Extras as LayerNormLinear's."""

    _func = "linear"

    def __init__(self, in_features, out_features, bias=True, params_dtype=None, device=None,
                 recipe=None, library=None, target="auto", cache_dir=None, strict=None,
                 return_bias=False, init_method=None, **unsupported):
        super().__init__()
        _refuse(type(self).__name__, unsupported, return_bias)
        self._setup(recipe, library, target, cache_dir, params_dtype, device, strict)
        self.in_features, self.out_features, self.use_bias = in_features, out_features, bias
        self.weight = self._new(out_features, in_features)
        names = ["weight"]
        if bias:
            self.bias = self._new(out_features, init="zeros")
            names.append("bias")
        self._param_names = names
        if init_method is not None:
            init_method(self.weight)
        self._build(self._active_recipe())

    def _ir(self):
        dt = _IR_DTYPES[self.params_dtype]
        K, N = self.in_features, self.out_features
        shapes = {"weight": [N, K], "bias": [N]}
        args = [("x", ["?", K])] + [(n, shapes[n]) for n in self._param_names]
        w = "%weight" + (", %bias" if self.use_bias else "")
        return _func_text(self._func, args, dt, [_tensor(["?", N], dt)],
                          f"te.linear %x weight({w})")


def _func_text(name, args, dt, results, op):
    sig = ", ".join(f"%{n}: {_tensor(s, dt)}" for n, s in args)
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
            "fuse_wgrad_accumulation": False, "parallel_mode": None, "ub_overlap_ag": False,
            "ub_overlap_rs": False, "ub_overlap_rs_dgrad": False, "ub_bulk_dgrad": False,
            "ub_bulk_wgrad": False, "ub_name": None, "delay_wgrad_compute": False,
            "set_parallel_mode": False, "skip_weight_param_allocation": False,
            "rng_tracker_name": None, "symmetric_ar_type": None, "name": None,
            "parameters_split": None, "ub_overlap_ag_fprop": False, "ub_overlap_rs_fprop": False,
            "ub_overlap_ag_dgrad": False, "ub_overlap_rs_dgrad": False,
            "seq_length": None, "micro_batch_size": None}


def _refuse(cls, unsupported, return_bias):
    if return_bias:
        raise TeMlirError(f"{cls}: return_bias=True is not supported (add the bias outside, or "
                          "use bias=True)")
    for k, v in unsupported.items():
        if k not in _NEUTRAL:
            raise TypeError(f"{cls}: unexpected argument {k!r}")
        if v != _NEUTRAL[k]:
            raise TeMlirError(f"{cls}: {k}={v!r} is not supported by te-mlir's modules "
                              "(single device, no tensor/sequence parallelism or userbuffers)")
