"""Row-scaled NVFP4 (NVFP4BlockScaling's row_scaled_activation) on the cpu backend: each
GEMM input activation is quantized with one global amax per row (weights keep one per
tensor, in 16x16 tiles), the forward's GEMM applies each row's scale to its output row, and
the backward is high precision (TE's: row-scaled NVFP4 has no quantized backward). Checked
against a torch quantize-dequantize written from TE's formulas, and the backward against
the unquantized module's."""
import pytest
import torch

import te_mlir
import te_mlir.torch as tet
from test_nvfp4_4over6 import _e2m1, _randomize, _recipe, qdq_plain


def qdq_rows(x):
    """NVFP4 with one global amax per row of x [m, n] (1x16 blocks), dequantized."""
    m, n = x.shape
    A = x.abs().amax(dim=1, keepdim=True)
    enc = torch.where(A > 0, 448.0 * 6.0 / A, torch.ones_like(A)).unsqueeze(-1)
    xb = x.view(m, n // 16, 16)
    s = (xb.abs().amax(dim=-1, keepdim=True) * enc / 6.0).to(torch.float8_e4m3fn)
    s = s.to(torch.float32)
    q = _e2m1(torch.clamp(torch.where(s > 0, xb * (enc / s), torch.zeros_like(xb)),
                          -6.0, 6.0))
    return (q * s / enc).view(m, n)


def _rows_of_many_scales(m, n, seed):
    """Rows whose magnitudes span 1e-3 .. 1e3: what row scaling is for."""
    x = torch.randn(m, n, generator=torch.Generator().manual_seed(seed))
    return x * (10.0 ** (torch.arange(m) % 7 - 3.0)).unsqueeze(1)


def test_recipe_field_reaches_te_compile():
    assert tet.nn.recipe_spec(_recipe(row_scaled_activation=True, disable_rht=True)) == \
        "#te.nvfp4<rht = false, row_scaled = true>"


def test_linear_forward_matches_reference():
    r = _recipe(row_scaled_activation=True, disable_rht=True)
    m = _randomize(tet.Linear(64, 48, bias=True, recipe=r, target="cpu",
                              params_dtype=torch.float32))
    x = _rows_of_many_scales(32, 64, 1)
    with torch.no_grad():
        y = m(x)
    w, b = m.weight.detach(), m.bias.detach()
    ref = (qdq_rows(x).double() @ qdq_plain(w, True).double().T).float() + b
    # relative to each row's scale: the emulated arithmetic, to fp32 rounding
    row = ref.abs().amax(dim=1, keepdim=True)
    assert ((y - ref).abs() / row).max() < 1e-5
    # without a bias (which would hide them): a per-tensor NVFP4 Linear loses the
    # small rows, row scaling keeps them
    errs = {}
    for name, r in (("rows", r), ("tensor", _recipe(disable_rht=True))):
        p = tet.Linear(64, 48, bias=False, recipe=r, target="cpu",
                       params_dtype=torch.float32)
        with torch.no_grad():
            p.weight.copy_(w)
            out = p(x)
        exact = x @ w.T
        errs[name] = (out - exact).norm(dim=1) / exact.norm(dim=1)  # per row
    small = torch.arange(32) % 7 == 0  # the rows of scale 1e-3
    assert errs["rows"].max() < 0.3  # NVFP4's usual error, on every row
    assert errs["tensor"][small].min() > 3 * errs["rows"].max()


@pytest.mark.parametrize("kind", ["linear", "lnl", "mlp"])
def test_backward_is_high_precision(kind):
    """The forward is row-scaled NVFP4; the gradients are the unquantized module's,
    bit for bit (the backward reads the saved high-precision tensors)."""
    make = {"linear": lambda **k: tet.Linear(64, 48, **k),
            "lnl": lambda **k: tet.LayerNormLinear(64, 48, **k),
            "mlp": lambda **k: tet.LayerNormMLP(64, 96, **k)}[kind]
    q = _randomize(make(recipe=_recipe(row_scaled_activation=True, disable_rht=True),
                        target="cpu", params_dtype=torch.float32))
    h = _randomize(make(target="cpu", params_dtype=torch.float32))
    x = _rows_of_many_scales(32, 64, 2)
    xq, xh = x.clone().requires_grad_(), x.clone().requires_grad_()
    yq, yh = q(xq), h(xh)
    assert not torch.equal(yq, yh)  # the forward is quantized
    dy = torch.randn(yq.shape, generator=torch.Generator().manual_seed(3))
    yq.backward(dy)
    yh.backward(dy)
    if kind != "mlp":
        assert torch.equal(xq.grad, xh.grad)
        for (n, a), b in zip(q.named_parameters(), h.parameters()):
            assert torch.equal(a.grad, b.grad), n
        return
    # LayerNormMLP: the backward is high precision over the quantized forward's saved
    # tensors (FC1's output and the activation come from the row-scaled GEMM): FC2's
    # gradients and FC1's, computed from those saved tensors in float64
    fn = q._build(q._active_recipe(), torch.float32)
    _, saved, _ = fn.forward_saved(*q._args(x, torch.float32, []))
    sv = {k.rsplit(".", 1)[-1]: v.double() for k, v in saved.items()}
    assert set(sv) >= {"ln_out", "fc1_out", "act_out"}
    assert all(not isinstance(v, tuple) for v in sv.values())
    d = dy.double()
    w2 = q.fc2_weight.detach().double()
    torch.testing.assert_close(q.fc2_weight.grad.double(), d.T @ sv["act_out"],
                               rtol=1e-5, atol=1e-6)
    f = sv["fc1_out"].clone().requires_grad_()
    act = torch.nn.functional.gelu(f, approximate="tanh")
    torch.testing.assert_close(act, sv["act_out"], rtol=1e-5, atol=1e-6)
    (dfc1,) = torch.autograd.grad(act, f, d @ w2)
    torch.testing.assert_close(q.fc1_weight.grad.double(), dfc1.T @ sv["ln_out"],
                               rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(q.fc1_bias.grad.double(), dfc1.sum(0), rtol=1e-4, atol=1e-5)


def test_bf16_with_te_defaults_trains():
    """TE's defaults (rht on: it applies to columnwise copies, which row-scaled
    activations do not have) in bf16: a Linear step runs, its forward keeps every row
    (per-row error against the unquantized forward) where per-tensor NVFP4 loses the
    small ones, and its input gradient is the unquantized module's."""
    x = _rows_of_many_scales(32, 64, 4).to(torch.bfloat16)
    outs, grads = {}, {}
    for name, r in (("rows", _recipe(row_scaled_activation=True)), ("tensor", _recipe()),
                    ("none", None)):
        m = _randomize(tet.Linear(64, 32, bias=False, recipe=r, target="cpu",
                                  params_dtype=torch.bfloat16))
        xi = x.clone().requires_grad_()
        y = m(xi)
        y.float().sum().backward()
        outs[name], grads[name] = y.detach().float(), xi.grad
    err = {k: (outs[k] - outs["none"]).norm(dim=1) / outs["none"].norm(dim=1)
           for k in ("rows", "tensor")}
    assert err["rows"].max() < 0.3
    assert err["tensor"].max() > 3 * err["rows"].max()
    assert torch.equal(grads["rows"], grads["none"])


@pytest.mark.parametrize("kind", ["linear", "lnl"])
def test_dequantized_override(kind):
    """TE's backward_override="dequantized" under row-scaled NVFP4: the forward is the
    row-scaled one, and the backward's GEMMs read the forward's quantized operands
    dequantized: the row-scaled activation (one amax per row) and the 16x16-tiled
    weight. Checked against torch quantize-dequantize references written from TE's
    formulas (qdq_rows, qdq_plain): wgrad = dy^T . qdq_rows(x or ln_out) and, for
    Linear, dgrad = dy . qdq_plain(W); the high-precision override's gradients differ."""
    make = {"linear": lambda **k: tet.Linear(64, 48, bias=True, **k),
            "lnl": lambda **k: tet.LayerNormLinear(64, 48, **k)}[kind]
    rs = dict(row_scaled_activation=True, disable_rht=True)
    d = _randomize(make(recipe=_recipe(backward_override="dequantized", **rs),
                        target="cpu", params_dtype=torch.float32))
    h = _randomize(make(recipe=_recipe(backward_override="high_precision", **rs),
                        target="cpu", params_dtype=torch.float32))
    x = _rows_of_many_scales(32, 64, 5)
    dy = torch.randn(32, 48, generator=torch.Generator().manual_seed(6))
    grads = {}
    for name, m in (("d", d), ("h", h)):
        xi = x.clone().requires_grad_()
        y = m(xi)
        y.backward(dy)
        grads[name] = (y.detach(), xi.grad, m.weight.grad)
    (yd, gxd, gwd), (yh, gxh, gwh) = grads["d"], grads["h"]
    assert torch.equal(yd, yh)  # the same row-scaled forward
    if kind == "linear":
        a = x
    else:
        a = torch.nn.functional.layer_norm(x, (64,), d.layer_norm_weight.detach(),
                                           d.layer_norm_bias.detach(), 1e-5)
    wgrad = dy.double().T @ qdq_rows(a).double()
    # (fp32 sums against float64: 1e-7 of the norm; the high-precision override's
    # gradient is 1e-1 away)
    torch.testing.assert_close(gwd.double(), wgrad, rtol=1e-4, atol=1e-4)
    assert (gwd.double() - wgrad).norm() < 1e-5 * wgrad.norm()
    assert (gwh.double() - wgrad).norm() > 1e-2 * wgrad.norm()
    if kind == "linear":
        dgrad = dy.double() @ qdq_plain(d.weight.detach(), True).double()
        torch.testing.assert_close(gxd.double(), dgrad, rtol=1e-4, atol=1e-4)
        assert (gxd.double() - dgrad).norm() < 1e-5 * dgrad.norm()
        assert (gxh.double() - dgrad).norm() > 1e-2 * dgrad.norm()


def test_dequantized_override_library_saves_the_rowwise_operands():
    """The save_rowwise library of row-scaled NVFP4: its forward returns the GEMM's
    row-scaled activation and weight (te.saved <name>_rowwise, one amax per row for the
    activation) beside the high-precision tensors its own backward reads."""
    m = tet.Linear(64, 48, recipe=_recipe(row_scaled_activation=True, disable_rht=True,
                                          backward_override="dequantized"),
                   target="cpu", params_dtype=torch.float32)
    fn = m._rowwise_function(m._active_recipe().split("@")[0], torch.float32)
    saved = {r.roles["te.saved"].rsplit(".", 1)[-1]: r for r in fn.fwd.results if r.is_saved}
    assert saved["input_rowwise"].is_qtensor and saved["weight_rowwise"].is_qtensor
    assert "row_scaled>" in saved["input_rowwise"].info["type"]
    assert "row_scaled>" not in saved["weight_rowwise"].info["type"]
    # the high-precision override and no override compile no such library
    for override in ("high_precision", None):
        p = tet.Linear(64, 48, recipe=_recipe(row_scaled_activation=True, disable_rht=True,
                                              backward_override=override),
                       target="cpu", params_dtype=torch.float32)
        p(torch.randn(16, 64))
        assert not [k for k in p._fns if k[-1] == "save_rowwise"]
