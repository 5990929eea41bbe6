"""NVFP4BlockScaling's 4-over-6 block scales (nvfp4_4over6) on the cpu backend: the recipe
fields reach te-compile, and a Linear's forward matches a torch quantize-dequantize written
from TE's reference (NVFP4QuantizerRef with nvfp4_use_4over6) followed by the matmul."""
import pytest
import torch

import te_mlir
import te_mlir.torch as tet

FLT_MAX = torch.finfo(torch.float32).max


def _recipe(**fields):
    """A stand-in for TE's NVFP4BlockScaling with TE's defaults (matched by class name)."""
    defaults = dict(disable_rht=False, disable_stochastic_rounding=False,
                    disable_2d_quantization=False, row_scaled_activation=False,
                    nvfp4_4over6="none", nvfp4_4over6_e4m3_use_256="all",
                    nvfp4_4over6_err_mode="MAE", backward_override=None)
    obj = type("NVFP4BlockScaling", (), {})()
    for k, v in {**defaults, **fields}.items():
        setattr(obj, k, v)
    return obj


def _randomize(m, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            t = torch.randn(p.shape, generator=g)
            p.copy_(t * p.shape[-1] ** -0.5 if p.dim() == 2 else 0.1 * t)
    return m


def _e2m1(v):
    """Round to nearest E2M1 magnitude, ties to the even code (v already within +-6)."""
    a = v.abs()
    q = torch.full_like(a, 6.0)
    for bound, val, tie_down in ((5.0, 4.0, True), (3.5, 3.0, False), (2.5, 2.0, True),
                                 (1.75, 1.5, False), (1.25, 1.0, True), (0.75, 0.5, False),
                                 (0.25, 0.0, True)):
        q = torch.where(a <= bound if tie_down else a < bound, torch.full_like(a, val), q)
    return torch.where(v < 0, -q, q)


def _block_amax(x, tile2d):
    """The amax of each 1x16 block of x [m, n] ([m, n/16, 1]), or of its 16x16 tile
    (repeated over the tile's 16 rows)."""
    m, n = x.shape
    if tile2d:
        tiles = x.view(m // 16, 16, n // 16, 16).abs().amax(dim=(1, 3))
        return tiles.repeat_interleave(16, dim=0).unsqueeze(-1)
    return x.view(m, n // 16, 16).abs().amax(dim=-1, keepdim=True)


def qdq_4over6(x, bound, mse, tile2d):
    """TE's 4-over-6 NVFP4 quantization of x [m, n] (fp32), returned dequantized."""
    m, n = x.shape
    A = x.abs().max()
    enc = torch.clamp(bound * 6.0 / A, max=FLT_MAX)
    if A == 0 or enc == 0:
        enc = torch.tensor(1.0)
    dec = 1.0 / enc
    xb = x.view(m, n // 16, 16)
    base = _block_amax(x, tile2d) / 6.0 * enc
    cands = []
    for s in (torch.clamp(base * 1.5, max=448.0), torch.clamp(base, max=448.0)):
        s = s.to(torch.float8_e4m3fn).to(torch.float32)
        inv = torch.clamp(1.0 / (s * dec), max=FLT_MAX)
        q = _e2m1(torch.clamp(xb * inv, -6.0, 6.0))
        deq = q * s * A / (6.0 * bound)
        d = deq - xb
        e = d * d if mse else d.abs()
        err = torch.zeros(m, n // 16)
        for j in range(16):  # in element order, as the kernel
            err = err + e[..., j]
        if tile2d:
            rows = err.view(m // 16, 16, n // 16)
            for h in (8, 4, 2, 1):
                rows = rows[:, :h] + rows[:, h:2 * h]
            err = rows[:, 0].repeat_interleave(16, dim=0)
        cands.append((deq, err))
    (deq4, err4), (deq6, err6) = cands
    return torch.where((err4 < err6).unsqueeze(-1), deq4, deq6).view(m, n)


def qdq_plain(x, tile2d):
    """NVFP4 without 4-over-6 (448 bound, the 6 mapping), for contrast."""
    m, n = x.shape
    A = x.abs().max()
    enc = 448.0 * 6.0 / A
    xb = x.view(m, n // 16, 16)
    s = (_block_amax(x, tile2d) * enc / 6.0).to(torch.float8_e4m3fn).to(torch.float32)
    q = _e2m1(torch.clamp(xb * (enc / s), -6.0, 6.0))
    return (q * s / enc).view(m, n)


def test_recipe_fields_round_trip():
    spec = tet.nn.recipe_spec
    assert spec(_recipe()) == "nvfp4"
    assert spec(_recipe(disable_rht=True, nvfp4_4over6="all", nvfp4_4over6_err_mode="MSE")) \
        == "#te.nvfp4<rht = false, four_over_six = all, four_over_six_err_mode = mse>"
    assert spec(_recipe(nvfp4_4over6="weights", nvfp4_4over6_e4m3_use_256="activations")) \
        == "#te.nvfp4<four_over_six = weights, four_over_six_e4m3_use_256 = activations>"
    # the defaults spelled out are the defaults
    assert spec(_recipe(disable_rht=True, nvfp4_4over6="none",
                        nvfp4_4over6_e4m3_use_256="all")) == "#te.nvfp4<rht = false>"


@pytest.mark.parametrize("field,value,match", [
    ("nvfp4_4over6", "both", "nvfp4_4over6='both' must be one of none, weights"),
    ("nvfp4_4over6_e4m3_use_256", "some", "nvfp4_4over6_e4m3_use_256='some' must be one of"),
    ("nvfp4_4over6_err_mode", "MAX", "nvfp4_4over6_err_mode='MAX' must be one of MAE, MSE"),
])
def test_bad_values_refused_by_name(field, value, match):
    with pytest.raises(te_mlir.TeMlirError, match=match):
        tet.Linear(32, 32, recipe=_recipe(disable_rht=True, **{field: value}), target="cpu")


def test_activations_need_disable_rht():
    with pytest.raises(te_mlir.TeMlirError, match="nvfp4_4over6='all' needs disable_rht=True"):
        tet.Linear(32, 32, recipe=_recipe(nvfp4_4over6="all"), target="cpu")


@pytest.mark.parametrize("err_mode", ["MAE", "MSE"])
@pytest.mark.parametrize("use_256", ["all", "none"])
def test_linear_forward_matches_reference(err_mode, use_256):
    r = _recipe(disable_rht=True, nvfp4_4over6="all", nvfp4_4over6_err_mode=err_mode,
                nvfp4_4over6_e4m3_use_256=use_256)
    m = _randomize(tet.Linear(64, 48, bias=False, recipe=r, target="cpu",
                              params_dtype=torch.float32))
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(1)) * 3
    with torch.no_grad():
        y = m(x)
    bound = 256.0 if use_256 == "all" else 448.0
    mse = err_mode == "MSE"
    w = m.weight.detach()
    ref = (qdq_4over6(x, bound, mse, False).double()
           @ qdq_4over6(w, bound, mse, True).double().T).float()
    # TE's NVFP4 tolerances ...
    torch.testing.assert_close(y, ref, rtol=0.25, atol=0.125)
    # ... and, the same arithmetic emulated, much closer than that
    torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-4)
    plain = (qdq_plain(x, False).double() @ qdq_plain(w, True).double().T).float()
    assert (y - plain).abs().max() > 1e-3  # not NVFP4 without 4-over-6
    # the 4-over-6 quantization is closer to the unquantized product
    exact = x.double() @ w.double().T
    assert (ref - exact).norm() < (plain - exact).norm()


def test_layernorm_linear_4over6_differs_and_trains():
    outs = {}
    for four in ("none", "all", "weights"):
        r = _recipe(disable_rht=True, nvfp4_4over6=four)
        m = _randomize(tet.LayerNormLinear(64, 32, recipe=r, target="cpu",
                                           params_dtype=torch.float32))
        x = torch.randn(32, 64, generator=torch.Generator().manual_seed(2),
                        requires_grad=True)
        y = m(x)
        y.backward(torch.ones_like(y))
        assert torch.isfinite(x.grad).all() and torch.isfinite(m.weight.grad).all()
        outs[four] = y.detach()
    assert not torch.equal(outs["none"], outs["all"])
    assert not torch.equal(outs["none"], outs["weights"])
    assert not torch.equal(outs["weights"], outs["all"])
