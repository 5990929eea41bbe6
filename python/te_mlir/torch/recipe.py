"""TransformerEngine recipe objects -> te-compile's --recipe (a name, or a `#te.<recipe><...>`
attribute with the fields that differ from the defaults). Every field of TE's
DelayedScaling, Float8CurrentScaling, Float8BlockScaling, MXFP8BlockScaling and
NVFP4BlockScaling is either passed through, checked to be at a value te-mlir computes
anyway, or refused by name (include/te/Dialect/TE/IR/TEAttrs.td has the parameters)."""
from .._abi import TeMlirError

__all__ = ["QUANTIZED", "recipe_spec", "recipe_kind", "split_override", "BLACKWELL"]

QUANTIZED = ("fp8-delayed", "fp8-current", "fp8-block", "mxfp8", "nvfp4")
NAMES = ("bf16",) + QUANTIZED
BLACKWELL = ("mxfp8", "nvfp4")  # recipes whose GEMM layouts need sm_100a

# attribute mnemonic -> --recipe name
_MNEMONIC = {"bf16": "bf16", "fp8_delayed": "fp8-delayed", "fp8_current": "fp8-current",
             "fp8_block": "fp8-block", "mxfp8": "mxfp8", "nvfp4": "nvfp4"}


# A spec may end in "@high_precision": TE's backward_override, which is the modules'
# business (an unquantized backward), not te-compile's.
OVERRIDE = "@"


def split_override(spec):
    """spec -> (te-compile's --recipe text, backward_override or None)."""
    if spec is None or OVERRIDE not in spec:
        return spec, None
    base, _, override = spec.partition(OVERRIDE)
    return base, override


def recipe_kind(spec):
    """The --recipe name of a spec ("fp8-delayed" for "#te.fp8_delayed<margin = 3>")."""
    if spec is None or spec in NAMES:
        return spec
    s = split_override(str(spec))[0]
    if s in NAMES:
        return s
    if s.startswith("#te."):
        m = s[4:].split("<", 1)[0].strip()
        if m in _MNEMONIC:
            return _MNEMONIC[m]
    raise TeMlirError(f"te_mlir.torch: unknown recipe {spec!r} (a te-compile --recipe name: "
                      + ", ".join(NAMES) + ", a #te.<recipe> attribute, or a TE recipe object)")


def _fmt(cls, field, v, allowed):
    """A TE Format (enum member, or its name) as te-mlir's format keyword."""
    name = getattr(v, "name", v)
    name = str(name).split(".")[-1].lower()
    if name not in allowed:
        raise TeMlirError(f"te_mlir.torch: {cls}.{field}={v!r} is not supported (te-mlir's "
                          f"{cls} takes " + " or ".join(f.upper() for f in allowed) + ")")
    return name


def _want(cls, r, field, ok, why):
    """Refuses field `field` of `r` by name unless absent or ok(value)."""
    if not hasattr(r, field):
        return
    v = getattr(r, field)
    if not ok(v):
        raise TeMlirError(f"te_mlir.torch: {cls}.{field}={v!r} is not supported ({why})")


def _common(cls, r):
    _want(cls, r, "backward_override", lambda v: v in (None, "high_precision", "dequantized"),
          "one of None, 'high_precision', 'dequantized'")
    _want(cls, r, "fp8_dpa", lambda v: not v, "no FP8 attention in te-mlir's modules")
    _want(cls, r, "fp8_mha", lambda v: not v, "no FP8 attention in te-mlir's modules")


def _delayed(cls, r):
    _common(cls, r)
    algo = getattr(r, "amax_compute_algo", "max")
    if callable(algo) or algo not in ("max", "most_recent"):
        raise TeMlirError(f"te_mlir.torch: {cls}.amax_compute_algo={algo!r} is not supported "
                          "(only 'max' or 'most_recent': the history reduction is compiled)")
    _want(cls, r, "scaling_factor_compute_algo", lambda v: v is None,
          "the scale is compiled as TE's default (fp8_max / amax) / 2^margin")
    margin = getattr(r, "margin", 0)
    hist = getattr(r, "amax_history_len", 1024)
    if int(margin) != margin or margin < 0:
        raise TeMlirError(f"te_mlir.torch: {cls}.margin={margin!r} must be an integer >= 0")
    if int(hist) != hist or hist < 1:
        raise TeMlirError(f"te_mlir.torch: {cls}.amax_history_len={hist!r} must be an "
                          "integer >= 1")
    # reduce_amax: an all-reduce over the amax group, a no-op on one device
    fields = [("margin", int(margin), 0), ("amax_history_len", int(hist), 1024),
              ("amax_compute_algo", algo, "max"),
              ("format", _fmt(cls, "fp8_format", getattr(r, "fp8_format", "hybrid"),
                              ("e4m3", "e5m2", "hybrid")), "hybrid")]
    return "fp8_delayed", fields


def _current(cls, r):
    _common(cls, r)
    pow2 = getattr(r, "use_power_2_scales", None)
    qps = [getattr(r, n, None) for n in ("fp8_quant_fwd_inp", "fp8_quant_fwd_weight",
                                         "fp8_quant_bwd_grad")]
    qps = [q for q in qps if q is not None]
    p2s = {bool(getattr(q, "power_2_scale", False)) for q in qps}
    if pow2 is None:
        if len(p2s) > 1:
            raise TeMlirError(f"te_mlir.torch: {cls}: power_2_scale differing between "
                              "fp8_quant_fwd_inp/fwd_weight/bwd_grad is not supported (one "
                              "power_2_scales for every tensor)")
        pow2 = p2s.pop() if p2s else False
    for n in ("fp8_quant_fwd_inp", "fp8_quant_fwd_weight", "fp8_quant_bwd_grad"):
        q = getattr(r, n, None)
        if q is not None and getattr(q, "amax_epsilon", 0.0) != 0.0:
            raise TeMlirError(f"te_mlir.torch: {cls}.{n}.amax_epsilon="
                              f"{q.amax_epsilon!r} is not supported (te-mlir's amax "
                              "epsilon is 0)")
    fields = [("format", _fmt(cls, "fp8_format", getattr(r, "fp8_format", "hybrid"),
                              ("e4m3", "e5m2", "hybrid")), "hybrid"),
              ("power_2_scales", bool(pow2), False)]
    return "fp8_current", fields


def _block(cls, r):
    _common(cls, r)
    _fmt(cls, "fp8_format", getattr(r, "fp8_format", "e4m3"), ("e4m3",))
    dims = []
    for te_name, ours, default in (("x_block_scaling_dim", "x_block_dim", 1),
                                   ("w_block_scaling_dim", "w_block_dim", 2),
                                   ("grad_block_scaling_dim", "grad_block_dim", 1)):
        v = getattr(r, te_name, default)
        if v not in (1, 2):
            raise TeMlirError(f"te_mlir.torch: {cls}.{te_name}={v!r} must be 1 or 2")
        dims.append((ours, int(v), default))
    x, w, g = (d for _, d, _ in dims)
    if (x, w, g).count(2) >= 2:  # fprop x.w, dgrad grad.w, wgrad x.grad: some pair 2x2
        raise TeMlirError(f"te_mlir.torch: {cls} with x/w/grad_block_scaling_dim = {x}/{w}/{g} "
                          "has a GEMM whose two operands are both 2-D scaled (refused, as in TE)")
    return "fp8_block", dims + [("fp32_scales", bool(getattr(r, "use_f32_scales", False)),
                                 False)]


def _mxfp8(cls, r):
    _common(cls, r)
    _fmt(cls, "fp8_format", getattr(r, "fp8_format", "e4m3"), ("e4m3",))
    _want(cls, r, "enable_2d_quantization", lambda v: not v,
          "te-mlir's MXFP8 quantizes weights in 1x32 blocks")
    # margin: unused by TE's MXFP8 too
    return "mxfp8", []


def _nvfp4(cls, r):
    _common(cls, r)
    _fmt(cls, "fp4_format", getattr(r, "fp4_format", "e2m1"), ("e2m1",))
    _fmt(cls, "fp8_format", getattr(r, "fp8_format", "e4m3"), ("e4m3",))
    scopes = ("none", "weights", "activations", "all")
    four = getattr(r, "nvfp4_4over6", "none")
    four = "none" if four in (None, False) else four
    use_256 = getattr(r, "nvfp4_4over6_e4m3_use_256", "all")
    err = getattr(r, "nvfp4_4over6_err_mode", "MAE")
    for name, v, allowed in (("nvfp4_4over6", four, scopes),
                             ("nvfp4_4over6_e4m3_use_256", use_256, scopes),
                             ("nvfp4_4over6_err_mode", str(err).upper(), ("MAE", "MSE"))):
        if v not in allowed:
            raise TeMlirError(f"te_mlir.torch: {cls}.{name}={v!r} must be one of "
                              + ", ".join(allowed))
    if four in ("activations", "all") and not getattr(r, "disable_rht", False):
        raise TeMlirError(f"te_mlir.torch: {cls}.nvfp4_4over6={four!r} needs disable_rht=True "
                          "(4-over-6 activations are not Hadamard-transformed, as in TE)")
    if four != "none" and getattr(r, "row_scaled_activation", False):
        raise TeMlirError(f"te_mlir.torch: {cls}.nvfp4_4over6 with row_scaled_activation "
                          "is not implemented")
    fields = [("rht", not getattr(r, "disable_rht", False), True),
              ("stochastic_rounding", not getattr(r, "disable_stochastic_rounding", False),
               True),
              ("weight_2d", not getattr(r, "disable_2d_quantization", False), True),
              ("row_scaled", bool(getattr(r, "row_scaled_activation", False)), False),
              ("four_over_six", four, "none"),
              ("four_over_six_e4m3_use_256", use_256, "all"),
              ("four_over_six_err_mode", str(err).lower(), "mae")]
    return "nvfp4", fields


_TE_CLASSES = {"DelayedScaling": _delayed, "Float8CurrentScaling": _current,
               "Float8BlockScaling": _block, "MXFP8BlockScaling": _mxfp8,
               "NVFP4BlockScaling": _nvfp4}


def _value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def recipe_spec(r):
    """A recipe (None, a --recipe name, a #te.<recipe> attribute, or a TE recipe object)
    as te-compile's --recipe text: the plain name when every field is at its default,
    else the attribute with the fields that differ."""
    if r is None:
        return None
    if isinstance(r, str):
        recipe_kind(r)
        return r
    cls = type(r).__name__
    if cls not in _TE_CLASSES:
        raise TeMlirError(f"te_mlir.torch: unknown recipe {r!r} (a te-compile --recipe name: "
                          + ", ".join(NAMES) + ", or one of TE's "
                          + ", ".join(_TE_CLASSES) + ")")
    mnemonic, fields = _TE_CLASSES[cls](cls, r)
    diff = [f"{k} = {_value(v)}" for k, v, default in fields if v != default]
    spec = f"#te.{mnemonic}<" + ", ".join(diff) + ">" if diff else _MNEMONIC[mnemonic]
    override = getattr(r, "backward_override", None)
    return spec + OVERRIDE + override if override else spec
