"""TransformerEngine's standalone norm modules, LayerNorm and RMSNorm: one te.normalization
op each (no GEMM, nothing quantized), on the same module machinery as nn.py's."""
import torch

from .._abi import TeMlirError
from .nn import (_IR_DTYPES, _TEModule, _attrs, _f, _func_text, _norm_name, _refuse, _tensor,
                 check_eps, check_sizes)

__all__ = ["LayerNorm", "RMSNorm"]


class _Normalization(_TEModule):
    """TE's standalone norm modules (LayerNorm, RMSNorm): one te.normalization op.
    TE's signature: (normalized_shape, eps=1e-5, sequence_parallel=None,
    params_dtype=None, zero_centered_gamma=False, hidden_size=None (deprecated name of
    normalized_shape), device=None, dtype=None (params_dtype's new name), sm_margin=0).
    The norm has no GEMM, so it quantizes nothing: under any recipe (fp8_autocast, or
    recipe=, accepted for uniformity and checked) it runs unquantized, as TE's norm
    modules do; its library is the one unquantized library, and quantized_model_init
    leaves its parameters in params_dtype (TE keeps only GEMM weights in FP8).
    sequence_parallel is
    accepted as None or False (refused by name otherwise), sm_margin as 0, and
    normalized_shape must be one dimension."""

    _normalization = None  # "LayerNorm" | "RMSNorm"

    def __init__(self, normalized_shape=None, eps=1e-5, sequence_parallel=None,
                 params_dtype=None, zero_centered_gamma=False, hidden_size=None, device=None,
                 dtype=None, sm_margin=0, recipe=None, library=None, target="auto",
                 cache_dir=None, strict=None, **unsupported):
        super().__init__()
        name = type(self).__name__
        _refuse(name, unsupported)
        if normalized_shape is None and hidden_size is None:
            raise TeMlirError(f"{name}: normalized_shape (or hidden_size) is required")
        if normalized_shape is not None and hidden_size is not None:
            raise TeMlirError(f"{name}: both normalized_shape and hidden_size (its "
                              "deprecated name) are given")
        shape = normalized_shape if normalized_shape is not None else hidden_size
        if isinstance(shape, (list, tuple, torch.Size)):
            shape = tuple(shape)
            if len(shape) != 1:
                raise TeMlirError(f"{name}: normalized_shape {shape} is not supported: "
                                  "te-mlir normalizes over the last dimension only (one "
                                  "dimension)")
            shape = shape[0]
        check_sizes(name, normalized_shape=shape)
        check_eps(name, eps)
        if int(shape) <= 0:
            raise ValueError(f"{name}: normalized_shape must be positive, got {shape}")
        if dtype is not None and params_dtype is not None:
            raise TeMlirError(f"{name}: both dtype and params_dtype (its deprecated name) "
                              "are given")
        if sequence_parallel not in (None, False):
            raise TeMlirError(f"{name}: sequence_parallel={sequence_parallel!r} is not "
                              "supported by te-mlir's modules (single device, no sequence "
                              "parallelism)")
        if sm_margin != 0:
            raise TeMlirError(f"{name}: sm_margin={sm_margin!r} is not supported (te-mlir's "
                              "norm kernels keep no SMs free)")
        self._setup(recipe, library, target, cache_dir,
                    dtype if dtype is not None else params_dtype, device, strict)
        self.recipe = "bf16"  # nothing to quantize: the unquantized library, always
        self._wgrad_options(False, False, False)
        self.normalized_shape = (int(shape),)
        self.hidden_size = self._in_features = int(shape)
        self.eps, self.zero_centered_gamma = eps, bool(zero_centered_gamma)
        self.sequence_parallel = sequence_parallel
        self.normalization = self._normalization
        self.weight = self._new(self.hidden_size)
        names = ["weight"]
        if self._normalization == "LayerNorm":
            self.bias = self._new(self.hidden_size)
            names.append("bias")
        self._param_names = names
        self.reset_parameters()
        if sequence_parallel is not None:  # (TE's flag on the parameters, for Megatron-LM)
            for n in names:
                getattr(self, n).sequence_parallel = sequence_parallel
        # (not _finish_init: inside quantized_model_init the norm's parameters stay in
        # params_dtype, as TE's do; only GEMM weights are kept in FP8)
        self._build(self._active_recipe())

    def _gemm_weights(self):
        return []  # no GEMM: nothing for FP8 primary weights either

    def reset_parameters(self):
        """TE's init: weight ones (zeros with zero_centered_gamma), bias zeros."""
        with torch.no_grad():
            self.weight.fill_(0.0 if self.zero_centered_gamma else 1.0)
            if "bias" in self._param_names:
                self.bias.zero_()

    def _ir(self, dtype, frozen=()):
        dt = _IR_DTYPES[dtype]
        H = self.hidden_size
        args = [("x", ["?", H])] + [(n, [H]) for n in self._param_names]
        params = ", ".join("%" + n for n in self._param_names)
        attrs = _attrs({"eps": _f(self.eps) + " : f64",
                        "zero_centered_gamma": self.zero_centered_gamma})
        return _func_text(self._func, args, dt, [_tensor(["?", H], dt)],
                          f"te.normalization %x norm {_norm_name(self._normalization)}"
                          f"({params}){attrs}", frozen)

    def extra_repr(self):
        return (f"{self.hidden_size}, eps={self.eps}, zero_centered_gamma="
                f"{self.zero_centered_gamma}, params_dtype={self.params_dtype}")


class LayerNorm(_Normalization):
    """TE's LayerNorm(normalized_shape, eps=1e-5, sequence_parallel=None,
    params_dtype=None, zero_centered_gamma=False, device=None):
    y = (x - mean) / sqrt(var + eps) * gamma + beta over the last dimension (gamma + 1
    with zero_centered_gamma), in the input's dtype with fp32 statistics. Parameters:
    weight (gamma) and bias (beta), [hidden]. Unquantized under every recipe (TE's
    LayerNorm too). Extras as LayerNormLinear's (target=, cache_dir=, library=: a
    prebuilt library whose function `layernorm` has this signature, strict=)."""

    _func = "layernorm"
    _normalization = "LayerNorm"


class RMSNorm(_Normalization):
    """TE's RMSNorm(normalized_shape, eps=1e-5, sequence_parallel=None, params_dtype=None,
    zero_centered_gamma=False, device=None): y = x / sqrt(mean(x^2) + eps) * gamma over the
    last dimension (gamma + 1 with zero_centered_gamma). Parameter: weight (gamma),
    [hidden]; no bias. As LayerNorm otherwise (library function `rmsnorm`)."""

    _func = "rmsnorm"
    _normalization = "RMSNorm"
