"""TransformerEngine drop-in behaviour of te_mlir.torch's modules (issue #32): return_bias,
fuse_wgrad_accumulation (main_grad), delay_wgrad_compute (backward_dw), fp8-delayed state
with reuse before backward / microbatches / checkpointing, the recipe state as extra state
(state_dict into a fresh module), deepcopy / pickle / torch.save, .half(), torch.autocast,
and the input checks. Each test compares against TE's semantics (reference/
transformer-engine.md §1) on the cpu backend; the numerics against torch are
test_modules.py's."""
import io
import os

import pytest
import torch

import te_mlir
import te_mlir.torch as tet
from conftest import copy_module
from test_modules import TOLS, check_against_torch, randomize, reference

# TE_MLIR_TEST_TARGET=auto (utils/gpu_python.sh on the H200) runs these on the GPU: the
# modules on cuda, inputs made on the CPU (seeded generators) and moved to them
TARGET = os.environ.get("TE_MLIR_TEST_TARGET", "cpu")
MODULES = {
    "lin": lambda **k: tet.Linear(32, 48, target=TARGET, **k),
    "lnl": lambda **k: tet.LayerNormLinear(32, 48, target=TARGET, **k),
    "mlp": lambda **k: tet.LayerNormMLP(32, 48, target=TARGET, **k),
}


def _te_compile_runs():
    """Whether te-compile can run here (not on the GPU machine: no MLIR libraries, its
    libraries come from a cache filled elsewhere)."""
    import subprocess
    from te_mlir.compile import te_compile_path
    try:
        return subprocess.run([str(te_compile_path()), "--version"],
                              capture_output=True).returncode == 0
    except (OSError, te_mlir.TeMlirError):
        return False


needs_compiler = pytest.mark.skipif(not _te_compile_runs(), reason="te-compile cannot run on "
                                    "this machine (no MLIR): these tests compile afresh")


def _on(m, t):
    """`t` on module `m`'s device."""
    return t.to(next(m.parameters()).device)
BIAS = {"lin": "bias", "lnl": "bias", "mlp": "fc2_bias"}


def _step(m, x, seed=7):
    """One fwd+bwd: (outputs, input grad, {param name: grad})."""
    m.zero_grad()
    xx = _on(m, x.detach()).clone().requires_grad_()
    y = m(xx)
    outs = list(y) if isinstance(y, tuple) else [y]
    gen = torch.Generator().manual_seed(seed)
    dys = [torch.randn(o.shape, generator=gen).to(o.device, o.dtype) for o in outs]
    torch.autograd.backward(outs, dys)
    return outs, xx.grad, {n: p.grad for n, p in m.named_parameters()}


# --------------------------------------------------------------------------- return_bias


@pytest.mark.parametrize("kind", ["lin", "lnl", "mlp"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_return_bias(kind, dtype):
    """TE: the (last) bias is returned, not added: (out, bias[, ln_out]); out + bias is
    the module's math, and the bias's gradient flows through the caller's add."""
    kw = dict(params_dtype=dtype)
    if kind == "lnl":
        kw["return_layernorm_output"] = True
    m = randomize(MODULES[kind](return_bias=True, **kw))
    # the library does not take the returned bias
    assert BIAS[kind] not in m._param_names and hasattr(m, BIAS[kind])
    x = _on(m, torch.randn(2, 8, 32).to(dtype)).requires_grad_()
    res = m(x)
    assert isinstance(res, tuple) and len(res) == (3 if kind == "lnl" else 2)
    out, bias = res[0], res[1]
    assert bias.dtype == dtype and torch.equal(bias, getattr(m, BIAS[kind]))
    refs, leaves = reference(m, x)
    fa, fr, ga, gr = TOLS[(kind, dtype)]
    torch.testing.assert_close((out + bias).float(), refs[0].to(dtype).float(), atol=fa, rtol=fr)
    if kind == "lnl":
        torch.testing.assert_close(res[2].float(), refs[1].to(dtype).float(), atol=fa, rtol=fr)
    got = torch.autograd.grad((out + bias).sum(), [x, *m.parameters()])
    want = torch.autograd.grad(refs[0].sum(), leaves)
    for (n, _), a, b in zip([("input", 0)] + list(m.named_parameters()), got, want):
        torch.testing.assert_close(a.float(), b.to(dtype).float(), atol=ga, rtol=gr,
                                   msg=lambda s, n=n: f"grad of {n}: {s}")


def test_return_bias_without_bias():
    m = tet.Linear(32, 16, bias=False, return_bias=True, target=TARGET)
    out, bias = m(_on(m, torch.randn(4, 32)))
    assert out.shape == (4, 16) and bias.numel() == 0


# --------------------------------------------------------------- main_grad, backward_dw


@pytest.mark.parametrize("kind", ["lin", "lnl", "mlp"])
def test_fuse_wgrad_accumulation_two_microbatches(kind):
    """main_grad (fp32) += each microbatch's weight gradient; .grad of the weights stays
    None (or zeros where Megatron's grad_added_to_main_grad is set); the other
    parameters' gradients are as usual."""
    torch.manual_seed(0)
    ref = randomize(MODULES[kind](params_dtype=torch.bfloat16))
    fused = randomize(MODULES[kind](params_dtype=torch.bfloat16, fuse_wgrad_accumulation=True))
    weights = [n for n, _ in fused.named_parameters()
               if n.endswith("weight") and not n.startswith("layer_norm")]
    init = {}
    for n in weights:
        p = fused.get_parameter(n)
        p.main_grad = torch.randn(p.shape, dtype=torch.float32).to(p.device)
        init[n] = p.main_grad.clone()
    xs = [torch.randn(16, 32).to(torch.bfloat16) for _ in range(2)]
    wsum = {n: torch.zeros_like(fused.get_parameter(n), dtype=torch.float32) for n in weights}
    wabs = {n: torch.zeros_like(wsum[n]) for n in weights}
    for i, x in enumerate(xs):
        ref.zero_grad()
        _, gx_r, g_r = _step(ref, x, seed=i)
        fused.zero_grad()
        _, gx_f, g_f = _step(fused, x, seed=i)
        assert torch.equal(gx_r, gx_f)
        for n in weights:
            assert g_f[n] is None, n
            wsum[n] += g_r[n].float()
            wabs[n] += g_r[n].float().abs()
        for n in g_r:
            if n == "fc1_bias":
                # summed by the dact kernel, not in FC1's wgrad epilogue (no BGRADB with
                # main_grad accumulation): the same sum in another order
                torch.testing.assert_close(g_r[n], g_f[n], rtol=2 ** -7, atol=2 ** -7)
            elif n not in weights:
                assert torch.equal(g_r[n], g_f[n]), n
    for n in weights:
        # (the wgrad GEMM adds its fp32 product: each microbatch within the bf16
        # rounding of the reference's gradient, half an ulp, 2^-8 relative; exact in
        # test_fuse_wgrad_accumulation_in_the_gemm)
        diff = (fused.get_parameter(n).main_grad - (init[n] + wsum[n])).abs()
        assert torch.all(diff <= 2 ** -8 * wabs[n] + 1e-5), (n, float(diff.max()))
    # Megatron's marker: a zero dummy gradient, the marker set
    p = fused.get_parameter(weights[0])
    p.grad_added_to_main_grad = False
    fused.zero_grad()
    _step(fused, xs[0])
    assert p.grad_added_to_main_grad and torch.count_nonzero(p.grad) == 0


def test_fuse_wgrad_accumulation_needs_main_grad():
    m = MODULES["lin"](fuse_wgrad_accumulation=True)
    with pytest.raises(te_mlir.TeMlirError, match="has no main_grad"):
        _step(m, torch.randn(4, 32))


def _main_grad_weights(m):
    return [n for n, _ in m.named_parameters()
            if n.endswith("weight") and not n.startswith("layer_norm")]


@pytest.mark.parametrize("kind", ["lin", "lnl", "mlp"])
@pytest.mark.parametrize("recipe", ["bf16", "fp8-current", "fp8-delayed"])
def test_fuse_wgrad_accumulation_in_the_gemm(kind, recipe):
    """TE's fuse_wgrad_accumulation: the library's wgrad GEMM adds its fp32 product to
    main_grad in its epilogue (te.main_grad), in place: from a zero main_grad the result
    rounds to the plain module's bf16 gradient bit for bit yet keeps fp32 bits of its
    own; from main_grad M it is exactly float32(M + that product), in M's own storage;
    with overwrite_main_grad it is the product alone."""
    torch.manual_seed(0)
    plain = randomize(MODULES[kind](params_dtype=torch.bfloat16, recipe=recipe))
    weights_sd = {k: v.clone() for k, v in plain.state_dict().items()
                  if isinstance(v, torch.Tensor)}

    def fused(main, overwrite=False):
        """A fresh module (fresh recipe state: fp8-delayed's scales move per step) with
        the plain one's parameters and main_grad `main(p)` per weight."""
        m = MODULES[kind](params_dtype=torch.bfloat16, recipe=recipe,
                          fuse_wgrad_accumulation=True)
        m.load_state_dict(weights_sd, strict=False)
        for n in _main_grad_weights(m):
            p = m.get_parameter(n)
            p.main_grad = main(p)
            if overwrite:
                p.overwrite_main_grad = True
        return m

    x = torch.randn(16, 32).to(torch.bfloat16)
    _, gx_p, g_p = _step(plain, x)
    zero = fused(lambda p: torch.zeros(p.shape, dtype=torch.float32, device=p.device))
    _, gx_f, g_f = _step(zero, x)
    # the library was compiled with te.main_grad (no Python add after the step)
    assert any(isinstance(k[-1], tuple) and any(str(m).endswith(":main_grad") for m in k[-1])
               for k in zero._fns), list(zero._fns)
    exact = TARGET == "cpu"  # (cuBLASLt may pick another algorithm for an fp32 output)
    assert torch.equal(gx_p, gx_f) or not exact
    weights = _main_grad_weights(zero)
    prod = {}
    for n in weights:
        assert g_f[n] is None, n
        prod[n] = zero.get_parameter(n).main_grad.clone()
        if exact:
            assert torch.equal(prod[n].to(torch.bfloat16), g_p[n]), n
        else:
            torch.testing.assert_close(prod[n].to(torch.bfloat16), g_p[n], rtol=2 ** -7,
                                       atol=1e-3)
        assert not torch.equal(prod[n], prod[n].to(torch.bfloat16).float()), \
            f"{n}: main_grad holds the bf16-rounded gradient"
    # from main_grad M: M + the product, one fp32 add, in M's storage
    gen = torch.Generator().manual_seed(3)
    given = fused(lambda p: torch.randn(p.shape, generator=gen).to(p.device))
    before = {n: (given.get_parameter(n).main_grad.clone(),
                  given.get_parameter(n).main_grad.data_ptr()) for n in weights}
    _step(given, x)
    over = fused(lambda p: torch.randn(p.shape).to(p.device), overwrite=True)
    _step(over, x)
    for n in weights:
        got = given.get_parameter(n).main_grad
        assert got.data_ptr() == before[n][1]
        want = before[n][0] + prod[n]
        if exact:
            assert torch.equal(got, want), n
            assert torch.equal(over.get_parameter(n).main_grad, prod[n]), n
        else:
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(over.get_parameter(n).main_grad, prod[n], rtol=1e-5,
                                       atol=1e-5)


@pytest.mark.parametrize("kind", ["lin", "mlp"])
def test_fuse_wgrad_accumulation_with_delay_wgrad_compute(kind):
    """delay_wgrad_compute with fuse_wgrad_accumulation: main_grad is untouched by the
    backward and, after backward_dw(), holds the same bits as a module without the
    delay (TE's own test compares them exactly): the wgrad GEMM accumulates into a zero
    fp32 buffer that backward_dw adds in one fp32 add, as the epilogue does."""
    torch.manual_seed(1)
    a = randomize(MODULES[kind](params_dtype=torch.bfloat16, fuse_wgrad_accumulation=True))
    b = MODULES[kind](params_dtype=torch.bfloat16, fuse_wgrad_accumulation=True,
                      delay_wgrad_compute=True)
    b.load_state_dict(a.state_dict())
    weights = _main_grad_weights(a)
    for m in (a, b):
        gen = torch.Generator().manual_seed(5)
        for n in weights:
            p = m.get_parameter(n)
            p.main_grad = torch.randn(p.shape, generator=gen).to(p.device)
    before = {n: b.get_parameter(n).main_grad.clone() for n in weights}
    x = torch.randn(16, 32).to(torch.bfloat16)
    for step in range(2):  # two microbatches, one backward_dw each
        _step(a, x, seed=step)
        _step(b, x, seed=step)
        for n in weights:
            assert torch.equal(b.get_parameter(n).main_grad, before[n]), n
        b.backward_dw()
        for n in weights:
            got, want = b.get_parameter(n).main_grad, a.get_parameter(n).main_grad
            assert torch.equal(got, want) if TARGET == "cpu" else \
                torch.allclose(got, want, rtol=1e-5, atol=1e-5), n
            before[n] = got.clone()


def test_delay_wgrad_compute_megatron_flag():
    """fuse_wgrad_accumulation + delay_wgrad_compute on weights Megatron marks with
    grad_added_to_main_grad: at backward the flag is set and .grad is TE's zero dummy,
    main_grad is untouched; backward_dw() accumulates into it (TE's order)."""
    torch.manual_seed(3)
    m = MODULES["lnl"](params_dtype=torch.bfloat16, fuse_wgrad_accumulation=True,
                       delay_wgrad_compute=True)
    w = m.weight
    w.main_grad = torch.zeros(w.shape, device=w.device)
    w.grad_added_to_main_grad = False
    _step(m, torch.randn(16, 32).to(torch.bfloat16))
    assert w.grad_added_to_main_grad and w.grad is not None and not w.grad.any()
    assert not w.main_grad.any()
    m.backward_dw()
    assert w.main_grad.any()


def _zero_main_grads(m):
    for n in _main_grad_weights(m):
        p = m.get_parameter(n)
        p.main_grad = torch.zeros(p.shape, dtype=torch.float32, device=p.device)


def test_fuse_wgrad_accumulation_under_autocast():
    """Under torch.autocast the step passes bf16 casts of the fp32 weights: the GEMM
    still accumulates into the weights' own main_grad (fp32 bits: from zero, rounded to
    bf16 it is the plain module's gradient, which autocast's cast-back leaves in bf16
    values)."""
    torch.manual_seed(2)
    plain = randomize(MODULES["lnl"]())
    fused = MODULES["lnl"](fuse_wgrad_accumulation=True)
    fused.load_state_dict(plain.state_dict())
    _zero_main_grads(fused)
    x = torch.randn(16, 32)
    with torch.autocast(next(plain.parameters()).device.type, dtype=torch.bfloat16):
        _, gx_p, g_p = _step(plain, x)
        _, gx_f, g_f = _step(fused, x)
    assert any(isinstance(k[-1], tuple) and k[1] == torch.bfloat16 for k in fused._fns)
    main = fused.weight.main_grad
    assert g_f["weight"] is None
    assert not torch.equal(main, main.to(torch.bfloat16).float())
    if TARGET == "cpu":
        assert torch.equal(main.to(torch.bfloat16).float(), g_p["weight"])
        assert torch.equal(gx_p, gx_f)
    else:
        torch.testing.assert_close(main, g_p["weight"], rtol=2 ** -7, atol=1e-3)


@pytest.mark.parametrize("recipe", ["fp8-current", "fp8-delayed"])
def test_fuse_wgrad_accumulation_primary_weights(recipe):
    """FP8 primary weights (quantized_model_init) with fuse_wgrad_accumulation
    (Megatron's FP8 parameters): the GEMM accumulates into each QuantizedWeight's
    main_grad; from zero, rounded to bf16 it is the plain module's gradient."""
    def build(**kw):
        torch.manual_seed(3)
        with tet.quantized_model_init(recipe=recipe):
            return MODULES["lin"](params_dtype=torch.bfloat16, recipe=recipe, **kw)
    plain, fused = build(), build(fuse_wgrad_accumulation=True)
    _zero_main_grads(fused)
    x = torch.randn(16, 32).to(torch.bfloat16)
    _, _, g_p = _step(plain, x)
    _, _, g_f = _step(fused, x)
    main = fused.weight.main_grad
    assert g_f["weight"] is None and torch.count_nonzero(main) > 0
    if TARGET == "cpu":
        assert torch.equal(main.to(torch.bfloat16), g_p["weight"])
    else:
        torch.testing.assert_close(main.to(torch.bfloat16), g_p["weight"], rtol=2 ** -7,
                                   atol=1e-3)


def test_fuse_wgrad_accumulation_dequantized_override():
    """backward_override="dequantized" with fuse_wgrad_accumulation: the weight's
    gradient goes to main_grad (not .grad), the same values as without the flag."""
    from test_modules import _te_recipe
    r = _te_recipe("Float8CurrentScaling", backward_override="dequantized")
    torch.manual_seed(4)
    plain = randomize(MODULES["lin"](recipe=r))
    fused = MODULES["lin"](recipe=r, fuse_wgrad_accumulation=True)
    fused.load_state_dict(plain.state_dict())
    _zero_main_grads(fused)
    x = torch.randn(16, 32)
    _, _, g_p = _step(plain, x)
    _, _, g_f = _step(fused, x)
    assert g_f["weight"] is None
    assert torch.equal(fused.weight.main_grad, g_p["weight"].float())


def test_fuse_wgrad_accumulation_main_grad_checked():
    """A main_grad the GEMM cannot accumulate into is refused by name: another dtype,
    shape or a non-contiguous view."""
    m = randomize(MODULES["lin"](params_dtype=torch.bfloat16, fuse_wgrad_accumulation=True))
    x = torch.randn(4, 32).to(torch.bfloat16)
    w = m.weight
    for bad, what in ((torch.zeros(w.shape, dtype=torch.bfloat16), "float32"),
                      (torch.zeros(w.shape[1], w.shape[0]).t(), "not contiguous"),
                      (torch.zeros(3, 5), "float32 tensor of the weight's shape")):
        w.main_grad = _on(m, bad)
        with pytest.raises(te_mlir.TeMlirError, match=what):
            _step(m, x)


@pytest.mark.parametrize("kind", ["lin", "lnl", "mlp"])
@pytest.mark.parametrize("recipe", ["bf16", "fp8-current"])
def test_delay_wgrad_compute(kind, recipe):
    """The library is compiled te.delay_wgrad: the backward runs no wgrad GEMM (the
    <fn>_bwd_wgrad op has not run) and the weights' .grad is None; backward_dw() runs
    it and gives them, bit-identical to the immediate wgrad (TE's own test is bit-exact
    too). A bias gradient the wgrad GEMM computes waits with it (TE's backward_dw gives
    it too); one the FP8 output gradient's cast computes is immediate; the rest is
    immediate."""
    a = randomize(MODULES[kind](recipe=recipe))
    b = randomize(MODULES[kind](recipe=recipe, delay_wgrad_compute=True))
    x = torch.randn(16, 32)
    _, gxa, ga = _step(a, x)
    _, gxb, gb = _step(b, x)
    assert torch.equal(gxa, gxb)
    fns = [f for f in b._fns.values()
           if any(e.endswith("_bwd_wgrad") for e in f.ops.library.entries)]
    assert len(fns) == 1, list(b._fns)
    wgrad = next(e for e in fns[0].ops.library.entries if e.endswith("_bwd_wgrad"))
    assert fns[0].ops.calls(wgrad) == 0  # deferred: no wgrad GEMM ran yet
    weights = [n for n in ga if n.endswith("weight") and not n.startswith("layer_norm")]
    for n in ga:
        if n in weights:
            assert gb[n] is None, n
        elif gb[n] is not None or not n.endswith("bias") or n.startswith("layer_norm"):
            assert torch.equal(ga[n], gb[n]), n
    b.backward_dw()
    assert fns[0].ops.calls(wgrad) in (1, -1)  # (-1: the ctypes path counts no calls)
    for n in ga:
        assert torch.equal(ga[n], b.get_parameter(n).grad), n
    b.backward_dw()  # nothing pending: no change
    for n in ga:
        assert torch.equal(ga[n], b.get_parameter(n).grad), n


def test_delay_wgrad_compute_microbatches_and_autocast():
    """Two microbatches' backwards before one backward_dw(): their deferred gradients
    accumulate, bit-identical to two undeferred steps; under torch.autocast the step
    passes cast weights, whose deferred gradients still reach the parameters."""
    torch.manual_seed(2)
    a = randomize(MODULES["mlp"](params_dtype=torch.float32))
    b = MODULES["mlp"](params_dtype=torch.float32, delay_wgrad_compute=True)
    b.load_state_dict(a.state_dict())
    xs = [torch.randn(16, 32, generator=torch.Generator().manual_seed(k)) for k in (1, 2)]
    for m in (a, b):
        m.zero_grad()
        for k, x in enumerate(xs):
            with torch.autocast(_on(m, x).device.type, dtype=torch.bfloat16):
                y = m(_on(m, x))
            y.backward(_on(m, torch.randn(y.shape, generator=torch.Generator().manual_seed(9 + k)))
                       .to(y.dtype))
    assert b.fc1_weight.grad is None and b.fc2_weight.grad is None
    b.backward_dw()
    for n, p in a.named_parameters():
        assert torch.equal(p.grad, b.get_parameter(n).grad), n


@pytest.mark.parametrize("recipe", ["fp8-current", "fp8-delayed"])
def test_delay_wgrad_compute_weight_cache_and_checkpoint(recipe):
    """delay_wgrad_compute through the weight cache (is_first_microbatch True then
    False: the op's autograd kernel path) and with checkpoint=True (the backward
    recomputes the forward): backward_dw() gives the undeferred step's bits."""
    for kw in ({}, {"checkpoint": True}):
        torch.manual_seed(0)
        a = MODULES["mlp"](recipe=recipe, **kw)
        b = MODULES["mlp"](recipe=recipe, delay_wgrad_compute=True, **kw)
        b.load_state_dict(a.state_dict())
        for step, first in enumerate((True, False) if not kw else (None,)):
            x = torch.randn(16, 32, generator=torch.Generator().manual_seed(step))
            for m in (a, b):
                m.zero_grad()
                xx = _on(m, x).requires_grad_()
                y = m(xx, is_first_microbatch=first)
                y.backward(torch.ones_like(y))
            assert b.fc1_weight.grad is None and b.fc2_weight.grad is None
            b.backward_dw()
            for n, p in a.named_parameters():
                assert torch.equal(p.grad, b.get_parameter(n).grad), (kw, step, n)


# ------------------------------------------------------------------- backward_override


@pytest.mark.parametrize("kind", ["lin", "lnl"])
@pytest.mark.parametrize("cls", ["Float8CurrentScaling", "DelayedScaling"])
def test_backward_override_high_precision(kind, cls):
    """TE's backward_override="high_precision": the output is the quantized recipe's,
    bit for bit; the gradients are the unquantized backward's, bit for bit; with
    DelayedScaling the forward state advances as the quantized forward's and the
    backward state is not touched (TE runs no backward quantizer)."""
    from test_modules import _te_recipe
    plain = "fp8-current" if cls == "Float8CurrentScaling" else "fp8-delayed"
    o = randomize(MODULES[kind](recipe=_te_recipe(cls, backward_override="high_precision")))
    q = randomize(MODULES[kind](recipe=plain))
    hp = randomize(MODULES[kind]())
    for step in range(2):
        x = torch.randn(16, 32, generator=torch.Generator().manual_seed(step))
        yo, gxo, go = _step(o, x, seed=step)
        with torch.no_grad():
            yq = q(_on(q, x))
        yh, gxh, gh = _step(hp, x, seed=step)
        assert torch.equal(yo[0], yq) and not torch.equal(yo[0], yh[0])
        assert torch.equal(gxo, gxh)
        for n in go:
            assert torch.equal(go[n], gh[n]), n
    so, sq = _states(o), _states(q)
    for n in so:
        if n.endswith("_fwd"):
            assert torch.equal(so[n], sq[n]), n
        else:  # the backward state: TE's initial (history 0, scales 1)
            assert torch.equal(so[n], torch.full_like(so[n], 0.0 if "amax" in n else 1.0)), n


def _fp8_dq(t):
    """TE's per-tensor current scaling of `t` to E4M3 and back, in fp32 (scale =
    448 / amax): an independent emulation."""
    t = t.detach().float()
    scale = 448.0 / t.abs().max()
    return (t * scale).to(torch.float8_e4m3fn).float() / scale


@pytest.mark.parametrize("kind", ["lin", "lnl"])
def test_backward_override_dequantized(kind):
    """TE's backward_override="dequantized": the output is the quantized recipe's, bit
    for bit; the backward is unquantized but its GEMM operands are the forward's
    quantized tensors dequantized: dgrad = dy . dq(W), wgrad = dy^T . dq(x or ln_out).
    Checked against an fp32 emulation of those formulas (TE's tolerances), and closer
    to it than high_precision's gradients are."""
    from test_modules import _te_recipe, _norm
    d = randomize(MODULES[kind](recipe=_te_recipe("Float8CurrentScaling",
                                                  backward_override="dequantized")))
    q = randomize(MODULES[kind](recipe="fp8-current"))
    h = randomize(MODULES[kind](recipe=_te_recipe("Float8CurrentScaling",
                                                  backward_override="high_precision")))
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(3))
    yd, gxd, gd = _step(d, x)
    with torch.no_grad():
        assert torch.equal(yd[0], q(_on(q, x)))
    _, gxh, gh = _step(h, x)
    dy = torch.randn(yd[0].shape, generator=torch.Generator().manual_seed(7)).to(yd[0])
    xx = _on(d, x).float()
    a = _norm(d, xx, 32) if kind == "lnl" else xx
    wgrad = dy.float().t() @ _fp8_dq(a)
    dgrad = dy.float() @ _fp8_dq(d.weight)
    torch.testing.assert_close(gd["weight"].float(), wgrad, rtol=1.3e-6 * 10, atol=1e-4)
    assert (gd["weight"].float() - wgrad).norm() < (gh["weight"].float() - wgrad).norm()
    if kind == "lin":
        torch.testing.assert_close(gxd.float(), dgrad, rtol=1e-5, atol=1e-4)
        assert (gxd.float() - dgrad).norm() < (gxh.float() - dgrad).norm()


def test_backward_override_dequantized_delayed_state():
    """With DelayedScaling the dequantized override's forward advances the forward
    state exactly as the quantized forward does, over steps; the backward state stays
    TE's initial one (no backward quantizer)."""
    from test_modules import _te_recipe
    d = randomize(MODULES["lnl"](recipe=_te_recipe("DelayedScaling",
                                                   backward_override="dequantized")))
    q = randomize(MODULES["lnl"](recipe="fp8-delayed"))
    for step in range(3):
        x = torch.randn(16, 32, generator=torch.Generator().manual_seed(step))
        yd, _, g = _step(d, x)
        with torch.no_grad():
            assert torch.equal(yd[0], q(_on(q, x))), step
        assert all(v is not None for v in g.values())
    sd, sq = _states(d), _states(q)
    for n in sd:
        if n.endswith("_fwd"):
            assert torch.equal(sd[n], sq[n]), n
        else:
            assert torch.equal(sd[n], torch.full_like(sd[n], 0.0 if "amax" in n else 1.0)), n


@pytest.mark.parametrize("kind", ["lin", "lnl"])
@pytest.mark.parametrize("cls", ["Float8BlockScaling", "MXFP8BlockScaling",
                                 "NVFP4BlockScaling"])
def test_backward_override_dequantized_block_recipes(kind, cls):
    """backward_override="dequantized" under the block recipes: the forward's rowwise
    quantization (saved beside the columnwise copy: the library is compiled with
    save_rowwise) dequantized is what the backward's GEMMs read. Checked through the
    forward itself: its output is the GEMM of the same dequantized operands (the cpu
    backend's quantized GEMM multiplies dequantized values), so the saved rowwise copies
    and their decoding are the forward's; then wgrad = dy^T . dq(x or ln_out) and, for
    Linear, dgrad = dy . dq(W), closer to those than high_precision's gradients."""
    from test_modules import _te_recipe
    from te_mlir.torch.primary import _layout, dequantize_bytes
    from te_mlir import runtime
    if cls != "Float8BlockScaling" and runtime().select_backend(TARGET) == "cuda" and \
            torch.cuda.get_device_capability()[0] != 10:
        pytest.skip(f"{cls} runs on a Blackwell GPU or the cpu backend")
    make = {"lin": lambda **k: tet.Linear(128, 256, target=TARGET, **k),
            "lnl": lambda **k: tet.LayerNormLinear(128, 256, target=TARGET, **k)}[kind]
    extra = {"NVFP4BlockScaling": dict(disable_rht=True,
                                       disable_stochastic_rounding=True)}.get(cls, {})
    d = randomize(make(recipe=_te_recipe(cls, backward_override="dequantized", **extra)))
    h = randomize(make(recipe=_te_recipe(cls, backward_override="high_precision", **extra)))
    x = torch.randn(128, 128, generator=torch.Generator().manual_seed(3))
    yd, gxd, gd = _step(d, x)
    _, gxh, gh = _step(h, x)
    base = [k for k in d._fns if k[-1] == "save_rowwise"]
    assert base, "the override compiled no save_rowwise library"
    fn = d._fns[base[0]]
    args = d._args(_on(d, x), torch.float32, [])
    _, saved, entry = fn.forward_saved(*args)
    dims = entry.bind_dims([None] * len(args), [list(t.shape) for t in args])
    spec = {r.roles["te.saved"]: r for r in entry.results if r.is_saved}
    deq = {}
    for n, t in saved.items():
        if spec[n].is_qtensor:
            deq[n.rsplit(".", 1)[-1]] = dequantize_bytes(
                t, _layout(spec[n], dims), torch.float8_e4m3fn, spec[n].info["type"],
                torch.float32).float()
    a = deq["ln_out" if kind == "lnl" else "input"]
    w = deq["weight"]
    assert a.shape == (128, 128) and w.shape == (256, 128)
    # the cpu backend multiplies the dequantized values in fp32 (exact to rounding); a
    # Hopper FP8 GEMM accumulates the block-scaled products in the tensor cores' own
    # precision (measured on the H200: 1.7e-3 at outputs of order 1): a wrong byte,
    # scale or layout in the saved copy is an O(1) error either way
    on_gpu = d.function().ops.library.backend == "cuda"
    fwd_tol = dict(rtol=1e-2, atol=1e-2) if on_gpu else dict(rtol=1e-5, atol=1e-5)
    bwd_tol = dict(rtol=1e-3, atol=1e-3) if on_gpu else dict(rtol=1e-5, atol=1e-4)
    yref = a @ w.t() + d.bias.detach().float()
    torch.testing.assert_close(yd[0].float(), yref, **fwd_tol)
    dy = torch.randn(yd[0].shape, generator=torch.Generator().manual_seed(7)).to(yd[0])
    wgrad = dy.float().t() @ a
    torch.testing.assert_close(gd["weight"].float(), wgrad, **bwd_tol)
    assert (gd["weight"].float() - wgrad).norm() < (gh["weight"].float() - wgrad).norm()
    if kind == "lin":
        dgrad = dy.float() @ w
        torch.testing.assert_close(gxd.float(), dgrad, **bwd_tol)
        assert (gxd.float() - dgrad).norm() < (gxh.float() - dgrad).norm()


@pytest.mark.parametrize("cls", ["Float8BlockScaling", "MXFP8BlockScaling",
                                 "NVFP4BlockScaling"])
def test_backward_override_dequantized_zero_tokens(cls):
    """The dequantized override on an empty batch (TE's zero-token sanity tests): the
    saved rowwise copies have no rows and decode to [0, K] (NVFP4's decoder inferred a
    width from zero elements before)."""
    from test_modules import _te_recipe
    from te_mlir import runtime
    if cls != "Float8BlockScaling" and runtime().select_backend(TARGET) == "cuda" and \
            torch.cuda.get_device_capability()[0] != 10:
        pytest.skip(f"{cls} runs on a Blackwell GPU or the cpu backend")
    extra = {"NVFP4BlockScaling": dict(disable_rht=True,
                                       disable_stochastic_rounding=True)}.get(cls, {})
    m = randomize(tet.Linear(128, 256, target=TARGET, params_dtype=torch.bfloat16,
                             recipe=_te_recipe(cls, backward_override="dequantized",
                                               **extra)))
    x = _on(m, torch.zeros(0, 128, dtype=torch.bfloat16)).requires_grad_()
    y = m(x)
    y.sum().backward()
    assert y.shape == (0, 256) and x.grad.shape == (0, 128)
    assert torch.equal(m.weight.grad, torch.zeros_like(m.weight.grad))


def test_backward_override_refusals():
    from test_modules import _te_recipe
    with pytest.raises(te_mlir.TeMlirError, match="backward_override='bogus'"):
        MODULES["lnl"](recipe=_te_recipe("Float8CurrentScaling", backward_override="bogus"))
    m = MODULES["mlp"](recipe=_te_recipe("Float8CurrentScaling",
                                         backward_override="high_precision"))
    with pytest.raises(te_mlir.TeMlirError, match="LayerNormMLP: backward_override"):
        m(torch.randn(4, 32))


# ------------------------------------------------------------------- frozen weights


def _saved_bytes(m, x):
    """Bytes autograd holds for the backward of one forward of `m` (the tensors saved
    between forward and backward, each storage once; the parameters, held anyway,
    excluded)."""
    seen = {}
    params = {p.untyped_storage().data_ptr() for p in m.parameters()}

    def pack(t):
        if t.untyped_storage().data_ptr() not in params:
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = m(x)
    return y, sum(seen.values())


@pytest.mark.parametrize("recipe", ["bf16", "fp8-current"])
@pytest.mark.parametrize("kind,frozen", [("lin", ("weight",)), ("lnl", ("weight",)),
                                         ("mlp", ("fc1_weight",)), ("mlp", ("fc2_weight",)),
                                         ("mlp", ("fc1_weight", "fc2_weight"))])
def test_frozen_weights_skip_the_wgrad(kind, frozen, recipe):
    """requires_grad=False on a weight compiles it te.frozen: no gradient, no wgrad
    GEMM, and nothing saved only for it (TE frees ln_out / the FC input there), so the
    step holds less between forward and backward; every other gradient and the output
    are the full library's, bit for bit (a bias whose weight is frozen: its sum no
    longer comes from the wgrad GEMM's epilogue, equal to a rounding)."""
    full = randomize(MODULES[kind](recipe=recipe))
    part = randomize(MODULES[kind](recipe=recipe))
    for n in frozen:
        part.get_parameter(n).requires_grad_(False)
    x = _on(full, torch.randn(64, 32, generator=torch.Generator().manual_seed(5)))
    yf, held_full = _saved_bytes(full, x.clone().requires_grad_())
    yp, held_part = _saved_bytes(part, x.clone().requires_grad_())
    assert torch.equal(yf, yp)
    assert held_part < held_full, (held_part, held_full)
    key = [k for k in part._fns if len(k) == 3]
    assert key and key[0][2] == frozen
    _, gxf, gf = _step(full, x)
    _, gxp, gp = _step(part, x)
    assert torch.equal(gxf, gxp)
    for n in gf:
        if n in frozen:
            assert gp[n] is None
        elif n.endswith("bias") and n.replace("bias", "weight") in frozen:
            # (summed by its own reduction instead of the wgrad GEMM's epilogue: the
            # cpu backend's FC1 bias in bf16 and cuBLASLt's BGRADB on the GPU differ
            # in rounding)
            torch.testing.assert_close(gp[n], gf[n], rtol=1.6e-2, atol=1e-5)
        else:
            assert torch.equal(gf[n], gp[n]), n


def test_frozen_after_construction_and_back():
    """Freezing a weight after construction (the usual fine-tuning pattern) switches to
    the frozen library at the next call, and unfreezing back."""
    m = randomize(MODULES["lnl"]())
    ref = randomize(MODULES["lnl"]())
    x = torch.randn(16, 32)
    for frozen in (False, True, False):
        m.weight.requires_grad_(not frozen)
        _, gx, g = _step(m, x)
        _, gxr, gr = _step(ref, x)
        assert torch.equal(gx, gxr)
        assert (g["weight"] is None) == frozen
        if not frozen:
            assert torch.equal(g["weight"], gr["weight"])


# ------------------------------------------------------------------- fp8-delayed state


def _states(m):
    return {n: b.clone() for n, b in m.named_buffers()}


def test_delayed_reuse_before_backward():
    """A delayed-scaling module run twice before one backward (a shared layer, or two
    microbatches summed into one loss) works (it failed autograd's version check); the
    state afterwards is what two sequential steps leave: the forward state exactly; the
    backward state holds the same two amax records (autograd runs the second forward's
    backward first, so they come in the other order, each paired with the other
    backward scale: equal to FP8 noise, 1e-2, exactly on the cpu backend here) and
    the scales they give; the gradients are the two steps' sum within FP8 noise.
    Seeded: the input is random (across seeds 0-11 the worst gradient's relative L2 is
    0.032-0.047; unseeded, the draw depended on the tests before it)."""
    torch.manual_seed(0)
    a = randomize(MODULES["mlp"](recipe="fp8-delayed"))
    b = randomize(MODULES["mlp"](recipe="fp8-delayed"))
    x = _on(a, torch.randn(16, 32))
    # sequential: two steps
    xa = x.clone().requires_grad_()
    for _ in range(2):
        a(xa).sum().backward()
    # both forwards, then one backward
    xb = x.clone().requires_grad_()
    (b(xb).sum() + b(xb).sum()).backward()
    sa, sb = _states(a), _states(b)
    assert sa.keys() == sb.keys() and len(sa) == 4
    for n in sa:
        if n.endswith("amax_history_bwd"):
            torch.testing.assert_close(sa[n].sort(dim=0).values, sb[n].sort(dim=0).values,
                                       rtol=1e-2, atol=0, msg=n)
            assert not torch.equal(sa[n], sb[n])  # (the records' order)
        elif n.endswith("_bwd"):
            torch.testing.assert_close(sa[n], sb[n], rtol=1e-2, atol=0, msg=n)
        else:
            assert torch.equal(sa[n], sb[n]), n
    # (the gradients pair each forward scale with another backward scale than the
    # sequential steps do: equal within FP8 noise, relative L2 as test_fp8_module_loose)
    for (n, p), q in zip(list(a.named_parameters()) + [("input", xa)], list(b.parameters()) + [xb]):
        assert ((q.grad - p.grad).norm() / p.grad.norm()).item() <= 0.05, n


@pytest.mark.parametrize("recipe", ["fp8-delayed", "fp8-current"])
def test_checkpoint_fp8_bit_identical_over_steps(recipe):
    """checkpoint=True with an FP8 recipe: outputs, gradients and the recipe state equal
    the stored backward's, bit for bit, over three steps (it failed on the first
    backward with fp8-delayed)."""
    a = randomize(MODULES["mlp"](recipe=recipe))
    b = randomize(MODULES["mlp"](recipe=recipe, checkpoint=True))
    for step in range(3):
        x = torch.randn(16, 32, generator=torch.Generator().manual_seed(step))
        oa, gxa, ga = _step(a, x, seed=step)
        ob, gxb, gb = _step(b, x, seed=step)
        assert torch.equal(oa[0], ob[0]) and torch.equal(gxa, gxb)
        for n in ga:
            assert torch.equal(ga[n], gb[n]), (step, n)
        a.zero_grad()
        b.zero_grad()
        sa, sb = _states(a), _states(b)
        for n in sa:
            assert torch.equal(sa[n], sb[n]), (step, n)


def test_checkpoint_with_first_microbatch():
    """checkpoint=True and is_first_microbatch True then False (it failed: "no cached
    weight"): the checkpointed forward saves no quantized weights, so each microbatch
    quantizes them again, which for fp8-current equals the cached ones exactly."""
    a = randomize(MODULES["mlp"](recipe="fp8-current"))
    b = randomize(MODULES["mlp"](recipe="fp8-current", checkpoint=True))
    assert b.function().cached is None and a.function().cached is not None
    for first in (True, False):
        x = _on(a, torch.randn(16, 32))
        ya = a(x.clone().requires_grad_(), is_first_microbatch=first)
        yb = b(x.clone().requires_grad_(), is_first_microbatch=first)
        assert torch.equal(ya, yb)
        yb.sum().backward()


# ------------------------------------------------------------- state dict, copies, dtype


def _delayed_trained(recipe_kw, steps=2):
    m = randomize(MODULES["lnl"](**recipe_kw))
    for s in range(steps):
        x = torch.randn(16, 32, generator=torch.Generator().manual_seed(10 + s))
        if "recipe" in recipe_kw:
            _step(m, x)
        else:
            with tet.fp8_autocast(fp8_recipe="fp8-delayed"):
                _step(m, x)
    m.zero_grad()
    return m


def _same_next_step(a, b, autocast=False):
    x = torch.randn(16, 32, generator=torch.Generator().manual_seed(99))
    ctx = tet.fp8_autocast(fp8_recipe="fp8-delayed") if autocast else tet.fp8_autocast(False)
    with ctx:
        oa, gxa, ga = _step(a, x)
    with (tet.fp8_autocast(fp8_recipe="fp8-delayed") if autocast else tet.fp8_autocast(False)):
        ob, gxb, gb = _step(b, x)
    assert torch.equal(oa[0], ob[0]) and torch.equal(gxa, gxb)
    for n in ga:
        assert torch.equal(ga[n], gb[n]), n
    sa, sb = _states(a), _states(b)
    assert sa.keys() == sb.keys()
    for n in sa:
        assert torch.equal(sa[n], sb[n]), n


@pytest.mark.parametrize("how", ["recipe", "autocast"])
def test_state_dict_into_fresh_module(how):
    """The recipe state is the modules' extra state: a state_dict loads into a freshly
    built module, also when the recipe came from fp8_autocast (its state did not exist
    at construction: "Unexpected key(s)" before), and the next step is bit-identical."""
    kw = {"recipe": "fp8-delayed"} if how == "recipe" else {}
    a = _delayed_trained(kw)
    sd = a.state_dict()
    assert "_extra_state" in sd and len(sd["_extra_state"]) == 4
    b = MODULES["lnl"](**kw)
    b.load_state_dict(sd)
    _same_next_step(a, b, autocast=how == "autocast")
    # through torch.save / torch.load(weights_only=True)
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    c = MODULES["lnl"](**kw)
    c.load_state_dict(torch.load(buf, weights_only=True))
    d = MODULES["lnl"](**kw)
    d.load_state_dict(sd)  # (`a` has stepped on)
    _same_next_step(d, c, autocast=how == "autocast")


def test_state_dict_of_the_old_layout_loads():
    """State dicts that kept the recipe state as plain buffers still load."""
    a = _delayed_trained({"recipe": "fp8-delayed"})
    sd = a.state_dict()
    for n, t in sd.pop("_extra_state").items():
        sd[n] = t
    b = MODULES["lnl"](recipe="fp8-delayed")
    b.load_state_dict(sd)
    _same_next_step(a, b)


def test_bad_extra_state_is_refused():
    m = MODULES["lnl"](recipe="fp8-delayed")
    sd = m.state_dict()
    sd["_extra_state"] = {"weight_hack": torch.zeros(3)}
    with pytest.raises(te_mlir.TeMlirError, match="not a recipe-state buffer"):
        m.load_state_dict(sd)
    sd["_extra_state"] = [1, 2]
    with pytest.raises(te_mlir.TeMlirError, match="must be a dict"):
        m.load_state_dict(sd)


@pytest.mark.parametrize("how", ["deepcopy", "pickle", "torch.save"])
def test_copies_step_bit_identically(how):
    """deepcopy, pickle and torch.save(module) (ctypes errors before): the copy loads
    its library again at its first call and steps bit-identically to the original."""
    a = _delayed_trained({"recipe": "fp8-delayed"})
    b = copy_module(a, how)
    assert b._fns == {} and b.weight is not a.weight
    _same_next_step(a, b)


def test_half_after_construction():
    """module.half(): the parameters go to fp16 and the module compiles for fp16 at its
    next call; the recipe state stays fp32."""
    m = randomize(MODULES["lnl"](recipe="fp8-delayed", params_dtype=torch.float32))
    m.half()
    assert m.params_dtype == torch.float16
    assert all(b.dtype == torch.float32 for b in m.buffers())
    x = torch.randn(16, 32).half()
    out, _, grads = _step(m, x)
    assert out[0].dtype == torch.float16
    assert all(g.dtype == torch.float16 for g in grads.values())


def test_torch_autocast_runs_in_its_dtype():
    """Under torch.autocast the activation dtype is autocast's (TE's rule): an fp32
    module runs the bf16 library on its parameters cast to bf16, the same as a bf16
    module holding those values, and its fp32 parameters get the bf16 gradients."""
    a = randomize(MODULES["mlp"](params_dtype=torch.float32))
    b = MODULES["mlp"](params_dtype=torch.bfloat16)
    with torch.no_grad():
        for p, q in zip(a.parameters(), b.parameters()):
            q.copy_(p.to(torch.bfloat16))
    x = _on(a, torch.randn(16, 32))
    xa = x.clone().requires_grad_()
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        ya = a(xa)
    yb = b(x.to(torch.bfloat16).requires_grad_())
    assert ya.dtype == torch.bfloat16 and torch.equal(ya, yb)
    ya.float().sum().backward()
    yb.float().sum().backward()
    for p, q in zip(a.parameters(), b.parameters()):
        assert p.grad.dtype == torch.float32 and torch.equal(p.grad, q.grad.float())


def test_input_checks():
    m = MODULES["lin"](params_dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="input dtype torch.float32 does not match"):
        m(torch.randn(4, 32))
    with pytest.raises(ValueError, match=r"input of shape \(\)"):
        m(torch.tensor(1.0, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="last dimension must be in_features = 32"):
        m(torch.randn(4, 31, dtype=torch.bfloat16))
    with pytest.raises(te_mlir.TeMlirError, match="activation_params"):
        tet.LayerNormMLP(32, 64, activation="clamped_swiglu",
                         activation_params={"limit": 5.0, "beta": 1.0})


# ------------------------------------------------------------------------ the cache


_CACHE_CHILD = """
import sys, warnings, torch, te_mlir, te_mlir.torch as tet
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    torch.manual_seed(0)
    m = tet.LayerNormLinear(32, 48, target="cpu", cache_dir=sys.argv[1])
    y = m(torch.randn(4, 32))
print(m.function().ops.library.path)
print(float(y.double().sum()))
print(sum("compiling it again" in str(x.message) for x in w))
"""


def _cache_child(cache):
    import os
    import subprocess
    import sys
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    p = subprocess.run([sys.executable, "-c", _CACHE_CHILD, str(cache)], capture_output=True,
                       text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    path, total, rebuilt = p.stdout.split()[-3:]
    return __import__("pathlib").Path(path), total, int(rebuilt)


@needs_compiler
@pytest.mark.parametrize("record", [True, False], ids=["recorded", "unrecorded"])
def test_truncated_cache_entry_is_rebuilt(tmp_path, record):
    """A truncated library in the compile cache is compiled again (it failed every later
    process until deleted by hand): caught by its size/sha256 record before loading,
    or, for an entry without a record, by the failed load, then rebuilt once. (Each
    process here is a child: a library a process has mapped is not damaged under it.)"""
    import hashlib
    path, total, rebuilt = _cache_child(tmp_path)
    whole = path.read_bytes()
    assert rebuilt == 0
    assert path.with_suffix(".sha256").read_text().split() == [
        hashlib.sha256(whole).hexdigest(), str(len(whole))]
    path.write_bytes(whole[: len(whole) // 2])
    if not record:
        path.with_suffix(".sha256").unlink()
    path2, total2, rebuilt = _cache_child(tmp_path)
    assert path2 == path and rebuilt == 1
    # (the link is not byte-reproducible, the build id differs: the record is the new file's)
    again = path.read_bytes()
    assert len(again) == len(whole) and total2 == total
    assert path.with_suffix(".sha256").read_text().split()[0] == hashlib.sha256(again).hexdigest()


@needs_compiler
def test_edited_module_info_is_refused(tmp_path):
    """A library whose module info was edited after te-compile wrote it (one byte of
    its JSON) is refused at open with a clear error: the checksum te-compile appends
    to the file does not match; without that trailer (an older te-compile's library)
    te_module_info_digest() does not. The module's library= path gives the same
    errors."""
    m = tet.Linear(32, 48, target="cpu", cache_dir=tmp_path / "cache")
    data = m.function().ops.library.path.read_bytes()
    assert data.endswith(b"TEMLSUM1")
    i = data.index(b'"name":"linear"')
    edited = tmp_path / "edited.so"
    edited.write_bytes(data[:i + 9] + b"x" + data[i + 10:])  # "linear" -> "lxnear"
    with pytest.raises(te_mlir.TeMlirError, match="do not match the checksum te-compile "
                                                  "recorded.*compile it again"):
        te_mlir.Library(edited)
    with pytest.raises(te_mlir.TeMlirError, match="do not match the checksum"):
        tet.Linear(32, 48, target="cpu", library=edited)
    old = tmp_path / "edited_old.so"
    old.write_bytes(edited.read_bytes()[:-16])
    with pytest.raises(te_mlir.TeMlirError, match="does not match the digest te-compile "
                                                  "recorded.*compile it again"):
        te_mlir.Library(old)
    with pytest.raises(te_mlir.TeMlirError, match="does not match the digest"):
        tet.Linear(32, 48, target="cpu", library=old)


def test_under_torch_compile():
    """return_bias, torch.autocast and a frozen weight under torch.compile(fullgraph)
    give eager's results (the compiled path calls the full library: a frozen weight's
    gradient is computed there and dropped)."""
    torch.manual_seed(0)
    m = MODULES["lnl"](return_bias=True, return_layernorm_output=True)
    x = _on(m, torch.randn(16, 32)).requires_grad_()
    for a, b in zip(m(x), torch.compile(m, fullgraph=True)(x)):
        assert torch.equal(a, b)
    m2 = randomize(MODULES["mlp"](params_dtype=torch.float32))
    with torch.autocast(x.device.type, dtype=torch.bfloat16):
        a, b = m2(x), torch.compile(m2, fullgraph=True)(x)
    assert a.dtype == b.dtype == torch.bfloat16 and torch.equal(a, b)
    m3 = randomize(MODULES["lnl"]())
    m3.weight.requires_grad_(False)
    _, gx, g = _step(m3, x)
    _, gxc, gc = _step(torch.compile(m3, fullgraph=True), x)
    gc = {k.replace("_orig_mod.", ""): v for k, v in gc.items()}
    assert g["weight"] is None and gc["weight"] is None and torch.equal(gx, gxc)
    # (eager's frozen library sums the bias gradient itself, the compiled full library in
    # its wgrad GEMM's epilogue: the same on the cpu backend, to a rounding on cuda)
    torch.testing.assert_close(g["bias"], gc["bias"], rtol=1e-5, atol=1e-5)


def _compiled_step(m, x, seed=7, **compile_kw):
    """_step through torch.compile(m), the parameter names without _orig_mod."""
    outs, gx, g = _step(torch.compile(m, **compile_kw), x, seed)
    return outs, gx, {k.replace("_orig_mod.", ""): v for k, v in g.items()}


def test_eager_only_options_break_the_graph():
    """fuse_wgrad_accumulation, delay_wgrad_compute, backward_override and FP8 primary
    weights keep Python state beside the graph (main_grad read at backward, held
    gradients, the FP8 copies): under torch.compile the module's call runs eagerly, a
    graph break as TE's modules take, with a TeMlirWarning naming why; the results are
    eager's bit for bit; fullgraph=True refuses it, naming te_mlir's reason."""
    from test_modules import _te_recipe
    torch._dynamo.reset()
    x = torch.randn(16, 32).to(torch.bfloat16)
    # fuse_wgrad_accumulation: main_grad accumulated in the GEMM, as eagerly
    pair = []
    for _ in range(2):
        torch.manual_seed(3)
        m = randomize(MODULES["lnl"](params_dtype=torch.bfloat16,
                                     fuse_wgrad_accumulation=True))
        m.weight.main_grad = torch.ones(m.weight.shape, device=m.weight.device)
        pair.append(m)
    _, gx_e, _ = _step(pair[0], x)
    with pytest.warns(te_mlir.TeMlirWarning, match="fuse_wgrad_accumulation runs outside "
                      "the torch.compile graph"):
        _, gx_c, _ = _compiled_step(pair[1], x)
    assert torch.equal(gx_e, gx_c)
    assert torch.equal(pair[0].weight.main_grad, pair[1].weight.main_grad)
    assert not torch.equal(pair[1].weight.main_grad, torch.ones_like(pair[1].weight.main_grad))
    # delay_wgrad_compute: held for backward_dw, then the eager bits
    torch.manual_seed(4)
    a = randomize(MODULES["mlp"](delay_wgrad_compute=True))
    b = copy_module(a, "deepcopy")
    _, gx_a, ga = _step(a, x.float())
    _, gx_b, gb = _compiled_step(b, x.float())
    assert torch.equal(gx_a, gx_b) and gb["fc1_weight"] is None
    a.backward_dw()
    b.backward_dw()
    for n in ("fc1_weight", "fc2_weight"):
        assert torch.equal(a.get_parameter(n).grad, b.get_parameter(n).grad), n
    # backward_override="high_precision"
    torch.manual_seed(5)
    o = randomize(MODULES["lnl"](recipe=_te_recipe("Float8CurrentScaling",
                                                   backward_override="high_precision")))
    o2 = copy_module(o, "deepcopy")
    yo, gxo, go = _step(o, x.float())
    yc, gxc, gc = _compiled_step(o2, x.float())
    assert torch.equal(yo[0], yc[0]) and torch.equal(gxo, gxc)
    assert all(torch.equal(go[n], gc[n]) for n in go)
    # fullgraph=True: Dynamo's refusal carries te_mlir's reason
    m = MODULES["lin"](fuse_wgrad_accumulation=True)
    m.weight.main_grad = torch.zeros(m.weight.shape, device=m.weight.device)
    with pytest.raises(Exception, match="run the module eagerly"):
        torch.compile(m, fullgraph=True)(_on(m, x.float()))


def test_te_context_managers_refuse_by_name():
    """TE's context managers exist under their names: what te-mlir cannot do is refused
    naming the argument (not an AttributeError or an unexpected-keyword TypeError)."""
    with pytest.raises(te_mlir.TeMlirError, match="quantized_model_init.*FP8 primary"):
        with tet.quantized_model_init(enabled=True, recipe="bf16"):
            MODULES["lin"]()
    with tet.fp8_model_init(enabled=False):  # a no-op
        m = MODULES["lin"]()
    assert m.weight.dtype == torch.get_default_dtype()
    with pytest.raises(te_mlir.TeMlirError, match="calibrating=True"):
        with tet.autocast(calibrating=True):
            pass
    with pytest.raises(te_mlir.TeMlirError, match="fp8_group"):
        with tet.autocast(amax_reduction_group=object()):
            pass
    with tet.autocast(enabled=True, recipe="fp8-current"):
        assert tet.nn.get_recipe() == "fp8-current"


def test_activation_params_of_clamped_swiglu():
    """TE's activation_params for clamped_swiglu (limit, alpha, glu_linear_offset): TE's
    defaults give the default library; other values reach the op and change the result
    as TE's formula says; other keys, or params for another activation, are refused."""
    torch.manual_seed(0)
    mk = lambda p: tet.LayerNormMLP(32, 48, activation="clamped_swiglu",  # noqa: E731
                                    activation_params=p, target=TARGET)
    base = randomize(mk(None))
    same = mk({"limit": 7.0, "alpha": 1.702})
    assert same._ir(torch.float32) == base._ir(torch.float32)
    other = mk({"limit": 0.5, "alpha": 1.0, "glu_linear_offset": 0.5})
    assert "clamped_swiglu<limit = " in other._ir(torch.float32)
    other.load_state_dict(base.state_dict())
    x = _on(base, torch.randn(16, 32))
    with torch.no_grad():
        ln = torch.nn.functional.layer_norm(x, (32,), base.layer_norm_weight,
                                            base.layer_norm_bias, base.eps)
        h = ln @ base.fc1_weight.t() + base.fc1_bias
        a, b = h.chunk(2, dim=-1)
        a = a.clamp(max=0.5)
        b = b.clamp(-0.5, 0.5)
        act = a * torch.sigmoid(1.0 * a) * (b + 0.5)
        want = act @ base.fc2_weight.t() + base.fc2_bias
        got = other(x)
    atol, rtol = TOLS[("mlp", torch.float32)][:2]
    torch.testing.assert_close(got, want, atol=atol, rtol=rtol)
    assert not torch.allclose(got, base(x), atol=atol, rtol=rtol)
    with pytest.raises(te_mlir.TeMlirError, match="beta"):
        mk({"beta": 1.0})
    with pytest.raises(te_mlir.TeMlirError, match="only clamped_swiglu"):
        tet.LayerNormMLP(32, 48, activation="gelu", activation_params={"limit": 1.0},
                         target=TARGET)


def test_save_original_input_accepted_same_bits():
    """TE's Linear(save_original_input=True): the same results (TE saves the input
    unquantized and quantizes it again); refused with DelayedScaling, as TE does."""
    torch.manual_seed(0)
    a = randomize(MODULES["lin"](params_dtype=torch.bfloat16))
    b = MODULES["lin"](params_dtype=torch.bfloat16, save_original_input=True)
    b.load_state_dict(a.state_dict())
    x = torch.randn(16, 32).bfloat16()
    with tet.autocast(recipe="fp8-current"):
        ra, rb = _step(a, x), _step(b, x)
    assert torch.equal(ra[0][0], rb[0][0]) and torch.equal(ra[1], rb[1])
    with pytest.raises(ValueError, match="DelayedScaling"):
        with tet.autocast(recipe="fp8-delayed"):
            b(_on(b, x))


def test_double_backward_is_an_error():
    """A te module's backward is not differentiable again: a second backward through
    gradients taken with create_graph=True raises (it gave zero second-order gradients
    silently), while create_graph=True itself, and the first-order gradients it gives,
    still work."""
    torch.manual_seed(0)
    for name in ("lin", "lnl", "mlp"):
        m = MODULES[name]()
        x = _on(m, torch.randn(8, 32)).requires_grad_()
        g, = torch.autograd.grad((m(x) ** 2).sum(), x, create_graph=True)
        g0, = torch.autograd.grad((m(x) ** 2).sum(), x)
        assert torch.equal(g, g0)
        with pytest.raises(RuntimeError, match="differentiate twice"):
            g.sum().backward()


def test_meta_parameter_is_refused():
    """A weight left on the meta device (a model built under torch.device("meta") and
    never materialized): the call dispatches to the op's fake impl, which used to
    return uninitialized memory on the input's device; now a clear error."""
    m = MODULES["lin"]()
    x = _on(m, torch.randn(4, 32))
    m.weight = torch.nn.Parameter(torch.empty(48, 32, device="meta"))
    with pytest.raises(te_mlir.TeMlirError, match="arguments on different devices: "
                                                  r"arg0 on (cpu|cuda:\d+), arg1 on meta"):
        m(x)


def test_weight_cache_of_another_recipe_is_refused():
    """is_first_microbatch=True caches the weights quantized for that step's recipe; a
    later is_first_microbatch=False step under another recipe used to run on those
    bytes (another layout, or the other recipe's scale) or fail on a buffer size; now
    it names both recipes. The same recipe reuses them."""
    torch.manual_seed(0)
    m = MODULES["lin"]()
    x = _on(m, torch.randn(32, 32))
    with tet.fp8_autocast(fp8_recipe="fp8-current"):
        m(x, is_first_microbatch=True)
        m(x, is_first_microbatch=False)
    with tet.fp8_autocast(fp8_recipe="fp8-delayed"):
        with pytest.raises(te_mlir.TeMlirError, match="cached weights were quantized for "
                                                      "fp8-current.*this step runs fp8-delayed"):
            m(x, is_first_microbatch=False)
        m(x, is_first_microbatch=True)
        m(x, is_first_microbatch=False)


def test_bad_arguments_are_named():
    """Arguments of the wrong kind are refused naming the argument (they failed deep in
    te-compile's parser, torch.empty or the compile cache, or were split into letters)."""
    with pytest.raises(TypeError, match="in_features must be an int, got bool"):
        tet.Linear(True, 8, target=TARGET)
    with pytest.raises(TypeError, match="in_features must be an int, got float"):
        tet.LayerNormLinear(8.0, 8, target=TARGET)
    with pytest.raises(TypeError, match="ffn_hidden_size must be an int, got str"):
        tet.LayerNormMLP(8, "16", target=TARGET)
    with pytest.raises(TypeError, match="normalized_shape must be an int"):
        tet.RMSNorm(16.0, target=TARGET)
    for eps in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ValueError, match="eps must be finite and >= 0"):
            tet.LayerNorm(16, eps=eps, target=TARGET)
        with pytest.raises(ValueError, match="eps must be finite and >= 0"):
            tet.LayerNormLinear(16, 8, eps=eps, target=TARGET)
    with pytest.raises(TypeError, match="params_dtype must be a torch.dtype"):
        tet.Linear(8, 8, params_dtype="float32", target=TARGET)
    import numpy as np
    assert tet.Linear(np.int64(8), 8, target=TARGET).weight.shape == (8, 8)
    m = MODULES["lin"]()
    with pytest.raises(ValueError, match="tokens must be >= 0"):
        m.memory_plan(-5)
    with pytest.raises(TypeError, match="tokens must be an int"):
        m.memory_plan(7.9)
    src = "func.func @f() { return }"
    with pytest.raises(te_mlir.TeMlirError, match="source is empty"):
        te_mlir.compile("  ")
    with pytest.raises(TypeError, match="extra_args must be a list"):
        te_mlir.compile(src, extra_args="--remarks")
    for arg in ("-o", "--emit=mlir", "--recipe=fp8-delayed", "--target=cpu"):
        with pytest.raises(te_mlir.TeMlirError, match="is set by te_mlir.compile itself"):
            te_mlir.compile(src, extra_args=[arg])
    m = MODULES["lin"](params_dtype=torch.float32)
    m.weight = torch.nn.Parameter(torch.zeros(48, 32, dtype=torch.float64, device=m.bias.device))
    with pytest.raises((RuntimeError, te_mlir.TeMlirError),
                       match=r"must be float32, got (torch\.)?float64"):
        m(_on(m, torch.randn(4, 32)))


def test_removed_parameter_is_named():
    """A parameter the library takes set to None or deleted: a TeMlirError naming it
    (it was an AttributeError on NoneType or a KeyError)."""
    m = MODULES["lin"]()
    x = _on(m, torch.randn(4, 32))
    m.bias = None
    with pytest.raises(te_mlir.TeMlirError, match="parameter 'bias' is None"):
        m(x)
    m = MODULES["lnl"]()
    del m.weight
    with pytest.raises(te_mlir.TeMlirError, match="parameter 'weight' is missing"):
        m(x)
