"""TE's recipe field backward_override (recipe.py keeps it after "@"), for Linear and
LayerNormLinear in eager: "high_precision" (the quantized recipe's forward values, the
unquantized backward) and "dequantized" (the quantized forward, a backward without
quantization over the forward's quantized tensors dequantized)."""
import torch

from .._abi import TeMlirError
from .primary import _layout, dequantize_bytes, fp8_dtype_of
from .recipe import recipe_kind, split_override


class BackwardOverride:
    """The module methods of backward_override (a base of nn._TEModule). A module class
    that sets ``_refuses_backward_override`` refuses both (LayerNormMLP, as TE's)."""

    _refuses_backward_override = False

    def _forward_backward_override(self, inp, recipe, dtype):
        """TE's recipe field backward_override (recipe.py keeps it after "@"): Linear and
        LayerNormLinear, eager (under torch.compile the module's call runs outside the
        graph: nn.py's _outside_graph)."""
        base, override = split_override(recipe)
        name = type(self).__name__
        if self._refuses_backward_override:
            raise TeMlirError(f"{name}: backward_override={override!r} is not supported "
                              "(TransformerEngine's LayerNormMLP refuses it too)")
        if override == "dequantized":
            return self._forward_dequantized_backward(inp, base, dtype)
        return self._forward_high_precision_backward(inp, base, dtype)

    def _forward_dequantized_backward(self, inp, base, dtype):
        """TE's backward_override="dequantized": the quantized forward (its training
        entry: fp8-delayed's forward state advances), and a backward without
        quantization whose GEMM operands are the forward's quantized tensors dequantized
        (the saved norm output or input, the weight). Here: the unquantized library's
        backward entry, fed by te.saved name with the quantized entry's saved tensors,
        each quantized one dequantized from its rowwise copy (TE's forward quantizes
        rowwise under the override). Per-tensor FP8: the saved columnwise copy holds the
        same values (its transpose); the block recipes (Float8BlockScaling, MXFP8,
        NVFP4) quantize each copy in its own blocks, so their library is compiled with
        `save_rowwise` (the norm output or input saved with both copies; row-scaled
        NVFP4, whose backward is high precision, saves the GEMM's rowwise operands as
        `<name>_rowwise` beside the high-precision tensors)."""
        kind = recipe_kind(base)
        key = ("dequantized", base, dtype)
        run = self._runners.get(key)
        if run is None:
            qfn = (self.function(base, dtype) if kind in ("fp8-current", "fp8-delayed")
                   else self._rowwise_function(base, dtype))
            hfn = self.function("bf16", dtype)
            run = self._runners[key] = _dequantized_function(qfn, hfn, fp8_dtype_of(base))
        # the forward recipe state (fp8-delayed's buffers, built with its function; the
        # block recipes have none)
        fnames, _ = self._state.get((base, dtype), ([], []))
        args = self._args(inp, dtype, fnames)
        if (self.fuse_wgrad_accumulation or self.delay_wgrad_compute) and \
                torch.is_grad_enabled():
            # the weights' gradients to main_grad / held for backward_dw, as the plain
            # path routes them
            from .nn import _WgradRoute
            weights = self._gemm_weights()
            for i, n in enumerate(self._param_names):
                if n in weights and args[i + 1].requires_grad:
                    args[i + 1] = _WgradRoute.apply(args[i + 1], self, getattr(self, n))
        outs = list(run.apply(*args))
        return self._finisher(len(fnames), fnames)(self, inp, outs)

    def _rowwise_function(self, recipe, dtype):
        """The TeFunction of `recipe` (a block recipe: no recipe state) compiled with
        `save_rowwise`, for the dequantized backward override."""
        fn = self._fns.get((recipe, dtype, (), "save_rowwise"))
        if fn is None:
            if self._library_path is not None:
                raise TeMlirError(f"{type(self).__name__}: backward_override='dequantized' "
                                  f"under {recipe_kind(recipe)} with a prebuilt library= (it "
                                  "needs a library that saves the rowwise quantization)")
            fn = self._build(recipe, dtype, save_rowwise=True)
            if fn.state_specs or fn.bwd_state_specs:
                raise TeMlirError(f"{type(self).__name__}: {recipe}: a save_rowwise library "
                                  "with recipe state")
        return fn

    def _forward_high_precision_backward(self, inp, base, dtype):
        """TE's backward_override="high_precision": the forward's values are the
        quantized recipe `base`'s (its inference entry, which also advances
        fp8-delayed's forward state), the backward is the unquantized one (TE saves the
        unquantized norm output and weight; here the unquantized library's forward
        saves them)."""
        hp = self._runner_for(("bf16", dtype))(self, inp, None)
        fn = self.function(base, dtype)
        fnames, _ = self._state[(base, dtype)]
        with torch.no_grad():
            outs, _ = fn.call(*self._args(inp, dtype, fnames), training=False)
            q = self._finisher(len(fnames), fnames)(self, inp, outs)
        if isinstance(q, tuple):
            return tuple(_ValueOf.apply(a, b) for a, b in zip(q, hp))
        return _ValueOf.apply(q, hp)


def _dequantized_function(qfn, hfn, fmt):
    """The autograd.Function of backward_override="dequantized" over the quantized
    function `qfn` and the unquantized `hfn` (see _forward_dequantized_backward)."""
    bwd = hfn.step.bwd
    bwd_op = hfn.ops.op(bwd.name)
    bwd_op = getattr(bwd_op, "_op", bwd_op)
    n_in = len(qfn.arg_specs)
    specs = {r.roles["te.saved"]: r for r in qfn.fwd.results if r.is_saved}
    plan = []  # per argument of hfn's backward: ("grad", output k) / ("saved", name) / ("input", k)
    for a in bwd.args:
        g, saved, alias = a.role("te.grad_of"), a.role("te.saved"), a.role("te.alias")
        if g is not None:
            plan.append(("grad", int(g.split(":")[1])))
        elif saved is not None and saved + "_rowwise" in specs:
            # row-scaled NVFP4's save_rowwise library: the GEMM's quantized operand,
            # saved beside the high-precision tensor its own backward reads
            plan.append(("saved", saved + "_rowwise"))
        elif saved in specs:
            plan.append(("saved", saved))
        elif alias is not None and alias.startswith("input:"):
            plan.append(("input", int(alias.split(":")[1])))
        else:
            raise TeMlirError(f"backward_override='dequantized': {bwd.name} argument "
                              f"{a.label} has no counterpart in {qfn.fwd.name}")
    grad_of = [(r.index, int(r.role("te.grad_of").split(":")[1])) for r in bwd.results
               if (r.role("te.grad_of") or "").startswith("input:")]
    below = torch._C._AutoDispatchBelowAutograd
    n_state = len(qfn.state_specs)

    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            outs, saved, entry = qfn.forward_saved(*inputs)
            dims = entry.bind_dims([None] * len(inputs), [list(t.shape) for t in inputs])
            names = sorted(n for k, n in plan if k == "saved")
            ctx.save_for_backward(*inputs, *[saved[n] for n in names])
            ctx.te = (names, dims, inputs[0].dtype)
            state = outs[len(outs) - n_state:] if n_state else []
            if state:
                ctx.mark_non_differentiable(*state)
            return tuple(outs)

        @staticmethod
        @torch.autograd.function.once_differentiable  # no double backward (ops.py)
        def backward(ctx, *grads):
            names, dims, dtype = ctx.te
            st = ctx.saved_tensors
            inputs, saved = st[:n_in], dict(zip(names, st[n_in:]))
            args = []
            for k, v in plan:
                if k == "grad":  # (materialized: zeros for an unused output)
                    args.append(grads[v])
                elif k == "input":
                    args.append(inputs[v])
                else:
                    t, spec = saved[v], specs[v]
                    args.append(dequantize_bytes(t, _layout(spec, dims), fmt,
                                                 spec.info.get("type"), dtype)
                                if spec.is_qtensor else t)
            with below():
                res = bwd_op(*args)
            res = res if isinstance(res, (tuple, list)) else [res]
            out = [None] * n_in
            for r, i in grad_of:
                if ctx.needs_input_grad[i]:
                    out[i] = res[r]
            return tuple(out)

    return Fn


class _ValueOf(torch.autograd.Function):
    """The values of `q` with the gradient of `hp` (backward_override)."""

    @staticmethod
    def forward(ctx, q, hp):
        return q.clone()

    @staticmethod
    def backward(ctx, g):
        return None, g
