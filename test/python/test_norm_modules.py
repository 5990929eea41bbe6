"""te_mlir.torch.LayerNorm and RMSNorm (TE's standalone norm modules, issue #32) against
PyTorch formulas in fp32 under TE's tolerances (reference/transformer-engine.md §7.2
test_layernorm_accuracy / test_rmsnorm_accuracy, §7.3 TorchLayerNorm / TorchRMSNorm,
§8.1-8.2): forward and backward (dx, dgamma, dbeta), bf16 and fp32, zero_centered_gamma,
2-D and 3-D input; unquantized under an FP8 autocast; TE's arguments and parameter names;
state_dict; torch.compile(fullgraph=True)."""
import os

import pytest
import torch
import torch.nn.functional as F

import te_mlir
import te_mlir.torch as tet

# TE_MLIR_TEST_TARGET=auto (utils/gpu_python.sh on the H200) runs these on the GPU
TARGET = os.environ.get("TE_MLIR_TEST_TARGET", "cpu")
KINDS = {"LayerNorm": tet.LayerNorm, "RMSNorm": tet.RMSNorm}
H = 64

# TE's test_layernorm_accuracy / test_rmsnorm_accuracy (§7.2): output atol with the
# dtype's default rtol (dtype_tols); gradients: (atol LayerNorm, atol RMSNorm, rtol)
OUT_TOLS = {torch.float32: (1e-7, 1.3e-6), torch.bfloat16: (2e-2, 1.6e-2)}
GRAD_TOLS = {torch.float32: (1e-4, 2e-3, 1.3e-6), torch.bfloat16: (2e-2, 2e-2, 1.6e-2)}


def _make(kind, dtype=torch.float32, **kw):
    return KINDS[kind](H, params_dtype=dtype, target=TARGET, **kw)


def _dev(m):
    return next(m.parameters()).device


def _randomize(m, seed=0):
    """gamma around its identity value (1, or 0 when zero-centered), beta small."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        base = 0.0 if m.zero_centered_gamma else 1.0
        m.weight.copy_((base + 0.2 * torch.randn(H, generator=g)).to(m.weight.dtype))
        if isinstance(m, tet.LayerNorm):
            m.bias.copy_((0.2 * torch.randn(H, generator=g)).to(m.bias.dtype))
    return m


def _reference(m, x):
    """TE's TorchLayerNorm / TorchRMSNorm (§7.3) in fp32 on fp32 leaves [x, *params]."""
    leaves = [x.detach().float().requires_grad_()] + [
        p.detach().float().requires_grad_() for p in m.parameters()]
    xs, g = leaves[0], leaves[1]
    gamma = g + 1 if m.zero_centered_gamma else g
    if isinstance(m, tet.LayerNorm):
        y = F.layer_norm(xs, (H,), gamma, leaves[2], m.eps)
    else:
        y = xs * torch.rsqrt(xs.pow(2).mean(-1, keepdim=True) + m.eps) * gamma
    return y, leaves


def _data(shape, dtype, dev, seed=1):
    gen = torch.Generator().manual_seed(seed)
    x = (2 * torch.randn(shape, generator=gen) + 0.5).to(dtype)
    dy = torch.randn(shape, generator=gen).to(dtype)
    return x.to(dev), dy.to(dev)


def _step(m, x, dy):
    """Output, and the gradients of x and the parameters."""
    xx = x.detach().clone().requires_grad_()
    y = m(xx)
    grads = torch.autograd.grad(y, [xx, *m.parameters()], dy)
    return y, grads


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("zcg", [False, True], ids=["gamma", "zcg"])
@pytest.mark.parametrize("shape", [(48, H), (3, 16, H)], ids=["2d", "3d"])
def test_against_torch(kind, dtype, zcg, shape):
    m = _randomize(_make(kind, dtype, zero_centered_gamma=zcg))
    x, dy = _data(shape, dtype, _dev(m))
    y, grads = _step(m, x, dy)
    ref, leaves = _reference(m, x)
    assert y.shape == x.shape and y.dtype == dtype
    atol, rtol = OUT_TOLS[dtype]
    torch.testing.assert_close(y.float(), ref.to(dtype).float(), atol=atol, rtol=rtol)
    want = torch.autograd.grad(ref, leaves, dy.float())
    ln_atol, rms_atol, grtol = GRAD_TOLS[dtype]
    gatol = ln_atol if kind == "LayerNorm" else rms_atol
    names = ["input"] + [n for n, _ in m.named_parameters()]
    assert len(grads) == (3 if kind == "LayerNorm" else 2)
    for n, a, b in zip(names, grads, want):
        assert a.dtype == dtype and a.shape == b.shape, n
        torch.testing.assert_close(a.float(), b.to(dtype).float(), atol=gatol, rtol=grtol,
                                   msg=lambda s, n=n: f"grad of {n}: {s}")


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("recipe", ["fp8-delayed", "fp8-current", "fp8-block"])
def test_unquantized_under_fp8_autocast(kind, recipe):
    """TE's norm modules quantize nothing inside fp8_autocast: the same values as
    without it, bit for bit, and no recipe state."""
    m = _randomize(_make(kind, torch.bfloat16, zero_centered_gamma=True))
    x, dy = _data((4, 8, H), torch.bfloat16, _dev(m))
    y0, g0 = _step(m, x, dy)
    with tet.fp8_autocast(fp8_recipe=recipe):
        y1, g1 = _step(m, x, dy)
    assert torch.equal(y0, y1)
    for a, b in zip(g0, g1):
        assert torch.equal(a, b)
    assert not m._state_buffers and set(m.state_dict()["_extra_state"]) == set()
    assert m.recipe == "bf16"


@pytest.mark.parametrize("kind", list(KINDS))
def test_quantized_model_init_keeps_norm_parameters(kind):
    """TE's quantized_model_init keeps GEMM weights in FP8; a norm's gamma and beta stay
    plain parameters in params_dtype, and the module computes what one built outside."""
    with tet.quantized_model_init(enabled=True, recipe="fp8-current"):
        m = _make(kind, torch.bfloat16)
    plain = _make(kind, torch.bfloat16)
    for n, p in m.named_parameters():
        assert type(p) is torch.nn.Parameter and p.dtype == torch.bfloat16, n
    x, dy = _data((8, H), torch.bfloat16, _dev(m))
    ya, ga = _step(m, x, dy)
    yb, gb = _step(plain, x, dy)
    assert torch.equal(ya, yb) and all(torch.equal(a, b) for a, b in zip(ga, gb))


def test_compiler_ignores_the_recipe():
    """te-compile with an FP8 recipe accepts te.normalization with no warning (strict:
    a warning would raise) and computes what the unquantized library computes."""
    m = _randomize(_make("LayerNorm", zero_centered_gamma=True))
    x, _ = _data((16, H), torch.float32, _dev(m))
    args = [x, m.weight.detach(), m.bias.detach()]
    outs = []
    for recipe in ("bf16", "fp8-delayed"):
        path = te_mlir.compile(m._ir(torch.float32), recipe=recipe, strict=True, target=TARGET)
        fn = tet.load(path).function("layernorm")
        assert not fn.state_specs  # no delayed-scaling state
        with torch.no_grad():
            outs.append(fn.call(*args, training=False)[0][0])
    assert torch.equal(outs[0], outs[1])


@pytest.mark.parametrize("kind", list(KINDS))
def test_te_parameters_and_init(kind):
    """TE's names (weight, bias; RMSNorm has no bias) and init (gamma ones, or zeros
    when zero-centered; beta zeros)."""
    m = _make(kind)
    names = [n for n, _ in m.named_parameters()]
    assert names == (["weight", "bias"] if kind == "LayerNorm" else ["weight"])
    assert torch.equal(m.weight, torch.ones(H, device=_dev(m)))
    if kind == "LayerNorm":
        assert torch.equal(m.bias, torch.zeros(H, device=_dev(m)))
    else:
        assert not hasattr(m, "bias")
    z = _make(kind, zero_centered_gamma=True)
    assert torch.equal(z.weight, torch.zeros(H, device=_dev(z)))
    # the identity gamma gives the plain normalization
    x, _ = _data((8, H), torch.float32, _dev(m))
    with torch.no_grad():
        torch.testing.assert_close(m(x), z(x), atol=1e-6, rtol=1e-6)
    assert m.normalized_shape == (H,) and m.hidden_size == H


@pytest.mark.parametrize("kind", list(KINDS))
def test_te_argument_spellings(kind):
    """normalized_shape as a one-element tuple, hidden_size= (TE's deprecated name),
    dtype= (params_dtype's new name), sequence_parallel None or False."""
    cls = KINDS[kind]
    a = cls((H,), target=TARGET, dtype=torch.bfloat16, sequence_parallel=False)
    b = cls(hidden_size=H, eps=1e-3, target=TARGET)
    assert a.params_dtype == torch.bfloat16 and a.weight.dtype == torch.bfloat16
    assert a.weight.sequence_parallel is False
    assert b.hidden_size == H and b.eps == 1e-3


@pytest.mark.parametrize("kind", list(KINDS))
def test_refusals(kind):
    cls = KINDS[kind]
    with pytest.raises(te_mlir.TeMlirError, match="sequence_parallel=True is not supported"):
        cls(H, sequence_parallel=True, target=TARGET)
    with pytest.raises(te_mlir.TeMlirError, match="sm_margin=8 is not supported"):
        cls(H, sm_margin=8, target=TARGET)
    with pytest.raises(te_mlir.TeMlirError, match=r"normalized_shape \(4, 64\) is not supported"):
        cls((4, H), target=TARGET)
    with pytest.raises(te_mlir.TeMlirError, match="both normalized_shape and hidden_size"):
        cls(H, hidden_size=H, target=TARGET)
    with pytest.raises(te_mlir.TeMlirError, match="both dtype and params_dtype"):
        cls(H, dtype=torch.float32, params_dtype=torch.float32, target=TARGET)
    with pytest.raises(TypeError, match="unexpected argument 'bogus'"):
        cls(H, bogus=1, target=TARGET)


@pytest.mark.parametrize("kind", list(KINDS))
def test_wrong_input_width(kind):
    m = _make(kind)
    with pytest.raises(ValueError, match="last dimension must be in_features = 64"):
        m(torch.randn(4, H + 1, device=_dev(m)))
    with pytest.raises(TypeError, match="input dtype torch.bfloat16 does not match"):
        m(torch.randn(4, H, device=_dev(m), dtype=torch.bfloat16))


@pytest.mark.parametrize("kind", list(KINDS))
def test_state_dict_round_trip(kind):
    src = _randomize(_make(kind, zero_centered_gamma=True), seed=3)
    sd = src.state_dict()
    assert set(sd) == ({"weight", "bias", "_extra_state"} if kind == "LayerNorm"
                       else {"weight", "_extra_state"})
    dst = _make(kind, zero_centered_gamma=True)
    dst.load_state_dict(sd)
    x, dy = _data((2, 8, H), torch.float32, _dev(src))
    ya, ga = _step(src, x, dy)
    yb, gb = _step(dst, x, dy)
    assert torch.equal(ya, yb)
    for a, b in zip(ga, gb):
        assert torch.equal(a, b)


def test_frozen_gamma():
    """A gamma with requires_grad=False gets no gradient; dx and dbeta are unchanged."""
    m = _randomize(_make("LayerNorm"))
    x, dy = _data((16, H), torch.float32, _dev(m))
    _, (gx, gg, gb) = _step(m, x, dy)
    m.weight.requires_grad_(False)
    xx = x.clone().requires_grad_()
    y = m(xx)
    gx2, gb2 = torch.autograd.grad(y, [xx, m.bias], dy)
    assert m.weight.grad is None
    assert torch.equal(gx, gx2) and torch.equal(gb, gb2)


@pytest.mark.parametrize("kind", list(KINDS))
def test_under_torch_compile(kind):
    """torch.compile(fullgraph=True) gives eager's output and gradients."""
    m = _randomize(_make(kind, torch.bfloat16, zero_centered_gamma=True))
    x, dy = _data((2, 8, H), torch.bfloat16, _dev(m))
    y, g = _step(m, x, dy)
    yc, gc = _step(torch.compile(m, fullgraph=True), x, dy)
    assert torch.equal(y, yc)
    for a, b in zip(g, gc):
        assert torch.equal(a, b)
