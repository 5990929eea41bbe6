"""FP8 primary weights (TE's quantized_model_init / fp8_model_init).

A module built inside ``quantized_model_init(recipe=...)`` keeps each GEMM weight only
quantized: a ``QuantizedWeight`` parameter holds the bytes of the weight as the module's
library takes them on its weight-cache entry (`<fn>_fwd_cached`: the FP8 data, its
transpose and scale_inv, laid out by the library), and no high-precision copy. Every step
runs that entry, so the weight is never quantized again in the step. The parameter's
nominal dtype is params_dtype: its gradient is a plain tensor of that dtype, and any other
torch op sees the dequantized values (data x scale_inv). An in-place update (the
optimizer's ``add_`` / ``addcdiv_``, ``copy_`` from a state dict) is done on the
dequantized values and quantized again by the module's own library (its training forward
on one zero token, ``return_weights``), so the bytes are exactly what a step of the
library would have made from those values: with Float8CurrentScaling a scale from the
new amax, with DelayedScaling the module's current delayed scale for the weight's slot
(whose amax history then records the weight's amax, as TE's quantizer does on update).

The FP8 recipes (DelayedScaling, Float8CurrentScaling, Float8BlockScaling, MXFP8BlockScaling)
and NVFP4BlockScaling (E2M1 codes two per byte, an E4M3 scale per 1x16 block or, TE's
default for weights, per 16x16 tile, and the weight's fp32 amax; 4-over-6 weight scales
included)."""
import math
import threading
import warnings
import weakref

import torch
from torch.utils._pytree import tree_map

from .._abi import TeMlirError, TeMlirWarning
from .recipe import QUANTIZED, recipe_kind, split_override

__all__ = ["QuantizedWeight", "PrimaryWeights", "primary_recipe"]

_PRIMARY = threading.local()
_SUPPORTED = ("fp8-current", "fp8-delayed", "fp8-block", "mxfp8", "nvfp4")


def push(spec, preserve):
    stack = getattr(_PRIMARY, "stack", None)
    if stack is None:
        stack = _PRIMARY.stack = []
    stack.append((spec, preserve))


def pop():
    _PRIMARY.stack.pop()


def primary_recipe():
    """(recipe spec, preserve_high_precision_init_val) of the innermost enabled
    quantized_model_init, or None."""
    stack = getattr(_PRIMARY, "stack", None)
    return stack[-1] if stack else None


def _layout(spec, dims):
    """{part: (byte offset, bytes, shape)} of the library's quantized-weight bytes."""
    from ..library import eval_dim
    shapes = {n: [eval_dim(d, dims) for d in s] for n, _, s in spec.inner}
    return {n: (o, b, shapes[n]) for n, o, b in spec.client_layout(dims)}


# -- a library's quantized bytes ({part: (byte offset, bytes, shape)}, _layout)


def _part(qbytes, parts, name, dtype):
    o, b, shape = parts[name]
    return qbytes.view(torch.uint8)[o:o + b].view(dtype).reshape(shape)


def _blocked(parts):
    return "rowwise_data" in parts  # Float8BlockScaling's and MXFP8's layout


def _mx(qtype):
    return "#te.mxfp8" in (qtype or "")


def _nv(qtype):
    return "#te.nvfp4" in (qtype or "")


# E2M1 magnitudes by code & 7 (the sign is bit 3)
_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def scale_inv_of(qbytes, parts, qtype):
    """The rowwise scale_inv: [1] per tensor; Float8BlockScaling's per block
    ([ceil(out/128), in blocks padded to 4] for 128x128 blocks, [in blocks, out padded to
    4] for 1x128, as the library lays them out); MXFP8's E8M0 bytes, one per 1x32 block,
    unswizzled ([rows padded, in/32 padded to 4])."""
    if _mx(qtype) or _nv(qtype):
        return _unswizzle(_part(qbytes, parts, "rowwise_scale_inv", torch.uint8),
                          "swizzled" in qtype)
    return _part(qbytes, parts, "rowwise_scale_inv" if _blocked(parts) else "scale_inv",
                 torch.float32)


def rowwise_of(qbytes, parts, fp8):
    """The rowwise FP8 data (a view of the bytes); per tensor, where only the transpose
    was kept, the transpose transposed back (the same values)."""
    if _blocked(parts):
        return _part(qbytes, parts, "rowwise_data", fp8)
    if "data" in parts:
        return _part(qbytes, parts, "data", fp8)
    return _part(qbytes, parts, "transpose", fp8).t()


def dequantize_bytes(qbytes, parts, fp8, qtype, dtype):
    """A library qtensor's values as a `dtype` tensor: its rowwise data times its
    scale_inv, per tensor, per 128x128 / 1x128 block (Float8BlockScaling), or per 1x32
    block as 2^(e - 127) (MXFP8)."""
    if _nv(qtype):
        return _dequantize_nvfp4(qbytes, parts, qtype, dtype)
    d = rowwise_of(qbytes, parts, fp8).to(torch.float32)
    s = scale_inv_of(qbytes, parts, qtype)
    rows, cols = d.shape
    if _mx(qtype):
        s = torch.exp2(s[:rows].to(torch.float32) - 127.0)
        return (d * s.repeat_interleave(32, 1)[:, :cols]).to(dtype)
    if _blocked(parts):
        if qtype and "block_2d" not in qtype:
            # 1x128 blocks: the scales "GEMM ready", [col blocks, rows padded to 4]
            s = s.t()[:rows].repeat_interleave(128, 1)[:, :cols]
        else:  # 128x128 blocks: [row blocks, col blocks padded to 4]
            s = s.repeat_interleave(128, 0)[:rows].repeat_interleave(128, 1)[:, :cols]
    return (d * s).to(dtype)


def _dequantize_nvfp4(qbytes, parts, qtype, dtype):
    """NVFP4's rowwise values, as the cpu backend decodes them: code x S_dec / S_enc in
    fp32 (the low nibble the even element; S_dec the block's E4M3 scale byte; S_enc =
    6 x 448 / amax, 1 when the amax is 0 or not finite, FLT_MAX on overflow; per row
    with row-scaled NVFP4's amax per row). With
    4-over-6 scales bounded by 256 the library stores the amax scaled by 448 / 256, so
    that this S_enc is the one it quantized with."""
    packed = _part(qbytes, parts, "rowwise_data", torch.uint8)
    rows = packed.shape[0]
    # (two codes a byte; an explicit width: zero rows have no -1 to infer)
    codes = torch.stack([packed & 0xF, packed >> 4], dim=-1).reshape(rows, 2 * packed.shape[1])
    cols = codes.shape[1]
    mag = torch.tensor(_E2M1, dtype=torch.float32, device=packed.device)[(codes & 7).long()]
    e2m1 = torch.where(codes >= 8, -mag, mag)
    s = scale_inv_of(qbytes, parts, qtype)[:rows].contiguous().view(torch.float8_e4m3fn)
    s = s.to(torch.float32).repeat_interleave(16, 1)[:, :cols]
    amax = _part(qbytes, parts, "amax_rowwise", torch.float32)
    # one amax per tensor, or per row (row-scaled NVFP4: [rows])
    amax = amax.reshape(()) if amax.numel() == 1 else amax.reshape(rows, 1)
    # (on the device, no host sync: 2688 / amax in fp32, +inf clamped to FLT_MAX)
    s_enc = torch.where((amax == 0) | ~torch.isfinite(amax), 1.0,
                        (6.0 * 448.0 / amax).clamp(max=torch.finfo(torch.float32).max))
    return ((e2m1 * s) / s_enc).to(dtype)


def fp8_dtype_of(spec):
    """The FP8 dtype of a recipe spec's weights and activations: E5M2 only with
    format = e5m2 (hybrid's forward tensors are E4M3)."""
    if recipe_kind(spec) == "nvfp4":
        return torch.uint8  # E2M1 codes, two per byte
    return torch.float8_e5m2 if "format = e5m2" in spec else torch.float8_e4m3fn


class QuantizedWeight(torch.Tensor):
    """A weight kept in FP8 (see the module docstring). ``_qbytes``: the library's
    cached-weight bytes; ``_parts``: where its data, transpose and scale_inv lie;
    ``_owner``: the module that quantizes updates (weakly held), ``_name`` the
    parameter's name there."""

    @staticmethod
    def __new__(cls, qbytes, parts, fp8_dtype, shape, dtype, requires_grad=False, qtype=None):
        t = torch.Tensor._make_wrapper_subclass(cls, shape, dtype=dtype, device=qbytes.device,
                                                requires_grad=requires_grad)
        t._qbytes, t._parts, t._fp8, t._qtype = qbytes, parts, fp8_dtype, qtype
        t._owner, t._name = None, None
        return t

    def scale_inv(self):
        """The rowwise scale_inv (scale_inv_of)."""
        return scale_inv_of(self._qbytes, self._parts, self._qtype)

    def fp8_data(self):
        """The rowwise FP8 data [out, in] (a view of the bytes)."""
        return rowwise_of(self._qbytes, self._parts, self._fp8)

    def dequantize(self, dtype=None):
        """The weight's values (dequantize_bytes), in `dtype` (default: the nominal one)."""
        with torch.no_grad():
            return dequantize_bytes(self._qbytes, self._parts, self._fp8, self._qtype,
                                    dtype or self.dtype)

    def _same_bytes(self, requires_grad=None):
        t = QuantizedWeight(self._qbytes, self._parts, self._fp8, self.shape, self.dtype,
                            self.requires_grad if requires_grad is None else requires_grad,
                            self._qtype)
        t._owner, t._name = self._owner, self._name
        return t

    def _requantize(self, hp):
        owner = self._owner() if self._owner is not None else None
        if owner is None:
            raise TeMlirError("QuantizedWeight: an in-place update of an FP8 primary weight "
                              "that belongs to no live te_mlir module (it quantizes updates)")
        owner._quantize_primary(self, hp)

    def _get_quantizer(self):
        """The quantizer that made these bytes (TE's QuantizedTensor._get_quantizer):
        the owning module's library, for this weight's shape and recipe."""
        return WeightQuantizer(self)

    # TE's preserve_high_precision_init_val
    def get_high_precision_init_val(self):
        return getattr(self, "_high_precision_init_val", None)

    def clear_high_precision_init_val(self):
        if hasattr(self, "_high_precision_init_val"):
            del self._high_precision_init_val

    def __repr__(self, *, tensor_contents=None):
        s = self.scale_inv()
        scale = (f"scale_inv={float(s):.6g}" if s.numel() == 1 else
                 f"{s.numel()} block scales")
        return (f"QuantizedWeight(shape={tuple(self.shape)}, dtype={self.dtype}, "
                f"fp8={self._fp8}, {scale}, device={self.device})")

    def __deepcopy__(self, memo):
        t = QuantizedWeight(self._qbytes.clone(), self._parts, self._fp8, self.shape,
                            self.dtype, self.requires_grad, self._qtype)
        t._owner, t._name = None, self._name  # the copied module claims it
        memo[id(self)] = t
        return t

    def __reduce_ex__(self, protocol):
        return (_rebuild, (self._qbytes, self._parts, str(self._fp8).split(".")[-1],
                           tuple(self.shape), str(self.dtype).split(".")[-1],
                           self.requires_grad, self._name, self._qtype))

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        aten = torch.ops.aten
        if func in (aten.detach.default, aten.alias.default):
            return args[0]._same_bytes(requires_grad=False)
        if func is aten._to_copy.default and isinstance(args[0], QuantizedWeight):
            src = args[0]
            dev = kwargs.get("device") or src.device
            dt = kwargs.get("dtype") or src.dtype
            if kwargs.get("layout") not in (None, torch.strided):
                raise TeMlirError("QuantizedWeight: only the strided layout")
            t = QuantizedWeight(src._qbytes.to(dev), src._parts, src._fp8, src.shape, dt,
                                False, src._qtype)
            t._owner, t._name = src._owner, src._name
            return t
        hp = {}  # id(QuantizedWeight) -> (it, its dequantized values)

        def unwrap(x):
            if isinstance(x, QuantizedWeight):
                if id(x) not in hp:
                    hp[id(x)] = (x, x.dequantize())
                return hp[id(x)][1]
            return x

        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))
        written = [a.name for a in func._schema.arguments
                   if a.alias_info is not None and a.alias_info.is_write]
        if not written or not hp:
            return out
        # an in-place op on a QuantizedWeight: its new values quantized again
        named = dict(zip([a.name for a in func._schema.arguments], args))
        named.update(kwargs)
        back = {}
        for name in written:
            for leaf in (named.get(name) if isinstance(named.get(name), (list, tuple))
                         else [named.get(name)]):
                if isinstance(leaf, QuantizedWeight):
                    q, values = hp[id(leaf)]
                    q._requantize(values)
                    back[id(values)] = q
        return tree_map(lambda o: back.get(id(o), o), out)


class WeightQuantizer:
    """TE's quantizer interface for an FP8 primary weight (``make_empty``,
    ``update_quantized``, ``quantize``): values of the weight's shape quantized by the
    module that owns it, exactly as its in-place updates are (``_requantize``). Another
    shape is refused: the library's layout is the weight's."""

    def __init__(self, weight):
        self._weight = weight

    def _check_shape(self, shape, what):
        if tuple(shape) != tuple(self._weight.shape):
            raise TeMlirError(f"QuantizedWeight quantizer: {what} of shape {tuple(shape)}; "
                              f"this quantizer lays out {tuple(self._weight.shape)} (the "
                              "weight it belongs to)")

    def make_empty(self, shape, *, dtype=None, device=None, requires_grad=False):
        """A QuantizedWeight of zero bytes, quantized later by ``update_quantized``."""
        self._check_shape(shape, "make_empty")
        w = self._weight
        q = QuantizedWeight(torch.zeros_like(w._qbytes, device=device or w.device),
                            w._parts, w._fp8, w.shape, dtype or w.dtype, requires_grad,
                            w._qtype)
        q._owner, q._name = w._owner, w._name
        return q

    def update_quantized(self, src, dst, *, noop_flag=None):
        """`dst`'s bytes := `src` quantized (in place); returns `dst`."""
        if noop_flag is not None:
            raise TeMlirError("QuantizedWeight quantizer: update_quantized(noop_flag=) is "
                              "not supported (quantization is never skipped here)")
        if not isinstance(dst, QuantizedWeight):
            raise TeMlirError("QuantizedWeight quantizer: update_quantized writes a "
                              f"QuantizedWeight, not {type(dst).__name__}")
        self._check_shape(src.shape, "update_quantized of values")
        with torch.no_grad():
            dst._requantize(src.detach().to(dst.device, dst.dtype))
        return dst

    def quantize(self, tensor):
        """`tensor` quantized into a new QuantizedWeight."""
        return self.update_quantized(tensor, self.make_empty(tensor.shape,
                                                             dtype=tensor.dtype))

    __call__ = quantize


def _unswizzle(scales, swizzled):
    """MXFP8's or NVFP4's scale bytes [rows, cols] (rows padded to 128, cols to 4) in row-major order,
    from cuBLAS's tile order when `swizzled` (128x4 tiles of 512 bytes, row-major over the
    tiles; in a tile row r, column c at (r % 32) * 16 + (r // 32) * 4 + c)."""
    if not swizzled:
        return scales
    rows, cols = scales.shape
    i = torch.arange(rows, device=scales.device)[:, None]
    j = torch.arange(cols, device=scales.device)[None, :]
    r = i % 128
    off = ((i // 128) * (cols // 4) + j // 4) * 512 + (r % 32) * 16 + (r // 32) * 4 + j % 4
    return scales.reshape(-1)[off]


def _rebuild(qbytes, parts, fp8, shape, dtype, requires_grad, name, qtype=None):
    t = QuantizedWeight(qbytes, parts, getattr(torch, fp8), shape, getattr(torch, dtype),
                        requires_grad, qtype)
    t._name = name
    return t


class StandIn(torch.autograd.Function):
    """A QuantizedWeight as the plain argument the weight-cache entry takes in its
    place (the entry reads the cached bytes, not this argument): a view of the weight's
    own bytes where they are large enough, else an uninitialized tensor; the gradient
    goes to the weight."""

    @staticmethod
    def forward(ctx, w, dtype):
        # (no gradient materialized: with fuse_wgrad_accumulation the step gives none, and
        # the weight's .grad stays None)
        ctx.set_materialize_grads(False)
        n = w.numel() * dtype.itemsize
        if w._qbytes.numel() >= n:
            return w._qbytes[:n].view(dtype).view(w.shape)
        return torch.empty(w.shape, dtype=dtype, device=w.device)

    @staticmethod
    def backward(ctx, g):
        return g, None


class Dequantized(torch.autograd.Function):
    """A QuantizedWeight's values as a plain tensor (recipes other than the weight's, a
    checkpointed library that has no weight-cache entry); gradient to the weight."""

    @staticmethod
    def forward(ctx, w, dtype):
        ctx.set_materialize_grads(False)  # (as StandIn)
        return w.dequantize(dtype)

    @staticmethod
    def backward(ctx, g):
        return g, None


def check_recipe(cls_name, spec):
    from .recipe import recipe_kind, split_override
    base, override = split_override(spec)
    kind = recipe_kind(base)
    if kind not in _SUPPORTED:
        raise TeMlirError(f"{cls_name}: quantized_model_init(recipe={kind}): FP8 primary "
                          "weights are supported with the FP8 and FP4 recipes (DelayedScaling, "
                          "Float8CurrentScaling, Float8BlockScaling, MXFP8BlockScaling, "
                          "NVFP4BlockScaling), not " + kind)
    # (a backward_override is the step's business, not the weights': they are quantized
    # the same way; a step under it reads their values, recipe.py / nn.py)
    return base


def attach(module, name, hp, qbytes, parts, fp8_dtype, preserve, qtype=None):
    """Make parameter `name` of `module` a QuantizedWeight over `qbytes` (the weight's
    quantized bytes), keeping `hp` on the CPU when `preserve` (TE's
    preserve_high_precision_init_val)."""
    old = module._parameters[name]
    q = QuantizedWeight(qbytes, parts, fp8_dtype, old.shape, old.dtype, qtype=qtype)
    p = torch.nn.Parameter(q, requires_grad=old.requires_grad)
    p._owner, p._name = weakref.ref(module), name
    if preserve:
        p._high_precision_init_val = hp.detach().cpu()
    module._parameters[name] = p
    return p


class PrimaryWeights:
    """The module methods of FP8 primary weights (a base of nn._TEModule): the weights
    quantized at construction (``_init_primary_weights``) and on every in-place update
    (``_quantize_primary``, called by QuantizedWeight), and how a step feeds them
    (``_primary_plan``)."""

    _primary = None  # the recipe the weights are kept quantized for, or None

    def _primary_plan(self, fn, recipe, dtype):
        """How a step under `recipe` feeds the FP8 primary weights: [(argument index,
        parameter name, the cached-weight name its bytes go to, or None: its values
        dequantized)], or None without primary weights. The weight-cache entry of the
        weights' own recipe kind reads their bytes; an unquantized recipe their values
        (as TE's modules dequantize them); another quantized kind is refused, as TE does."""
        if self._primary is None:
            return None
        kind = recipe_kind(split_override(recipe)[0])
        names = self._gemm_weights()
        index = {n: i + 1 for i, n in enumerate(self._param_names)}
        if kind not in QUANTIZED:
            return [(index[n], n, None) for n in names]
        if kind != recipe_kind(self._primary):
            raise TeMlirError(f"{type(self).__name__}: its weights are kept in FP8 for "
                              f"{recipe_kind(self._primary)} (quantized_model_init) and the "
                              f"step's recipe is {kind}: recipe mismatch (TransformerEngine "
                              "refuses it too)")
        if fn.cached is None:
            raise TeMlirError(f"{type(self).__name__}: FP8 primary weights need the library's "
                              "weight-cache entry (not with checkpoint=True)")
        saved = {s.roles["te.cached_weight"].rsplit(".", 1)[-1]: s.roles["te.cached_weight"]
                 for s in fn.cached_weight_specs}
        return [(index[n], n, saved[n]) for n in names]

    def _init_primary_weights(self):
        """Inside quantized_model_init (at the end of construction, the library of the
        active recipe built): the GEMM weights quantized and kept only so."""
        init = primary_recipe()
        if init is None:
            return
        spec, preserve = init
        name = type(self).__name__
        self._primary = check_recipe(name, spec)
        if getattr(self, "checkpoint", False):
            raise TeMlirError(f"{name}: quantized_model_init with checkpoint=True is not "
                              "supported (a checkpointed library keeps no quantized weights)")
        if self._library_path is not None:
            raise TeMlirError(f"{name}: quantized_model_init with a prebuilt library= is not "
                              "supported (the module compiles the library its weights need)")
        if self.function(self._primary, self.params_dtype).cached is None:
            # the library runs unquantized (te-compile warned: the dims do not fit the
            # recipe's alignment): so do the weights, with a warning saying why
            warnings.warn(f"{name}: quantized_model_init({self._primary}): the weights stay in "
                          f"{self.params_dtype}: the module's library for {self._primary} "
                          "quantizes no weight (the dims do not fit the recipe's alignment)",
                          TeMlirWarning, stacklevel=4)
            self._primary = None
            return
        values = {n: self._parameters[n].detach() for n in self._gemm_weights()}
        for n, (qbytes, parts, fmt, qtype) in self._primary_bytes(values).items():
            attach(self, n, values[n], qbytes, parts, fmt, preserve, qtype)

    def _gemm_weights(self):
        """The GEMM weights' parameter names, in GEMM order (TE's slot 3g+1)."""
        return [n for n in self._param_names
                if n.endswith("weight") and not n.startswith("layer_norm")]

    def _primary_function(self):
        fn = self.function(self._primary, self.params_dtype)
        if fn.cached is None:
            raise TeMlirError(f"{type(self).__name__}: FP8 primary weights for {self._primary}: "
                              "its library quantizes no weight (the dims do not fit the "
                              "recipe's alignment: see te-compile's warning)")
        return fn

    def _primary_bytes(self, values):
        """{name: (quantized bytes, parts, fp8 dtype)} of the GEMM weights `values`
        ({name: values}), quantized by the library's training forward on zero tokens
        (as few as its alignment allows; its saved weights, return_weights): what a step
        would make of them. The forward recipe state is a copy (nothing advances)."""
        fn, dtype = self._primary_function(), self.params_dtype
        fnames, _ = self._state[(self._primary, dtype)]
        ps, gemm = self._parameters, self._gemm_weights()
        # the recipe's alignment, and 16: cuBLASLt's FP8 GEMMs take dims that are
        # multiples of 16; below that the cuda runtime's fallback GEMM dequantizes the
        # weight into fp32 scratch (256 MiB for 4096 x 16384), which the op layer would
        # then keep as its workspace for the process
        tokens = math.lcm(16, *(m for _, m, _ in fn.fwd.checks))
        x = torch.zeros(tokens, self._in_features, dtype=dtype, device=self._device)
        args = [x]
        for n in self._param_names:
            v = values.get(n)
            if v is None:
                p = ps[n]
                v = (torch.zeros(p.shape, dtype=dtype, device=self._device)
                     if n in gemm else p.detach())
            args.append(v.to(dtype))
        args += [self._buffers[n].clone() for n in fnames]
        with torch.no_grad():
            _, weights = fn.call(*args, return_weights=True)
        fmt = fp8_dtype_of(self._primary)
        dims = [1] * fn.cached.num_dims  # (a weight's layout has no token dim)
        out = {}
        for s in fn.cached_weight_specs:
            saved = s.roles["te.cached_weight"]
            n = saved.rsplit(".", 1)[-1]
            if n in values:
                out[n] = (weights[saved], _layout(s, dims), fmt, s.info.get("type"))
        return out

    def _quantize_primary(self, q, hp):
        """An in-place update of QuantizedWeight `q` (values `hp`): its bytes quantized
        again (in place, so every alias sees them). Under DelayedScaling the weight's
        amax goes into the newest row of its slot's history, as TE's quantizer records it."""
        name = q._name
        new = self._primary_bytes({name: hp})[name][0]
        q._qbytes.copy_(new)
        if recipe_kind(self._primary) == "fp8-delayed":
            g = self._gemm_weights().index(name)
            fnames, _ = self._state[(self._primary, self.params_dtype)]
            hist = next(self._buffers[n] for n in fnames if n.endswith("amax_history_fwd"))
            hist[0, 3 * g + 1] = hp.detach().abs().max().to(hist.dtype)
