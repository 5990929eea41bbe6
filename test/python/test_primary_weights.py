"""FP8 primary weights (TE's quantized_model_init, issue #32): the modules built inside keep
their GEMM weights only quantized (te_mlir.torch.primary.QuantizedWeight), quantized with
TE's formulas at construction and again on every in-place update (the optimizer, a state
dict), and a step over them is bit-identical to a step of the same module whose weights
hold the dequantized values. Refusals are checked by name. The cpu backend here;
TE_MLIR_TEST_TARGET=auto runs them on the GPU."""
import io
import os

import pytest
import torch

import te_mlir
import te_mlir.torch as tet
from conftest import copy_module
from te_mlir.torch.primary import QuantizedWeight

TARGET = os.environ.get("TE_MLIR_TEST_TARGET", "cpu")
FP8_MAX = 448.0  # E4M3
MODULES = {
    "lin": lambda **k: tet.Linear(32, 48, target=TARGET, **k),
    "lnl": lambda **k: tet.LayerNormLinear(32, 48, target=TARGET, **k),
    "mlp": lambda **k: tet.LayerNormMLP(32, 48, target=TARGET, **k),
}
RECIPES = ["fp8-current", "fp8-delayed"]


def _build(kind, recipe, **kw):
    torch.manual_seed(3)
    with tet.quantized_model_init(recipe=recipe):
        return MODULES[kind](params_dtype=torch.bfloat16, **kw)


def _twin(m, kind):
    """A module like `m` (built by MODULES[`kind`], or by `kind` when callable) whose weights
    are plain, holding `m`'s dequantized values."""
    t = (kind if callable(kind) else MODULES[kind])(params_dtype=torch.bfloat16)
    with torch.no_grad():
        for n, p in t.named_parameters():
            q = getattr(m, n)
            p.copy_(q.dequantize() if isinstance(q, QuantizedWeight) else q)
    return t


def _step(m, recipe, x, seed=11, first=None):
    m.zero_grad()
    dev = next(m.parameters()).device
    xx = x.detach().to(dev).clone().requires_grad_()
    with tet.autocast(recipe=recipe):
        y = m(xx, is_first_microbatch=first)
    dy = torch.randn(y.shape, generator=torch.Generator().manual_seed(seed)).to(dev, y.dtype)
    y.backward(dy)
    return y.detach(), xx.grad, {n: p.grad.clone() for n, p in m.named_parameters()}


def _same(a, b):
    ya, dxa, ga = a
    yb, dxb, gb = b
    assert torch.equal(ya, yb)
    assert torch.equal(dxa, dxb)
    assert ga.keys() == gb.keys()
    for n in ga:
        assert torch.equal(ga[n], gb[n]), n


def _x(tokens=16):
    return torch.randn(tokens, 32, generator=torch.Generator().manual_seed(5)).bfloat16()


@pytest.mark.parametrize("recipe", RECIPES)
@pytest.mark.parametrize("kind", ["lin", "lnl", "mlp"])
def test_weights_kept_quantized_and_step_matches(kind, recipe):
    m = _build(kind, recipe)
    weights = m._gemm_weights()
    assert weights
    for n in weights:
        p = getattr(m, n)
        assert isinstance(p, QuantizedWeight) and isinstance(p, torch.nn.Parameter)
        assert p.dtype == torch.bfloat16 and p.requires_grad
        # only the FP8 bytes are held (data + transpose + scale_inv), no bf16 copy
        assert p._qbytes.dtype == torch.uint8
        assert p._qbytes.numel() < 2 * p.numel() + 1024
    plain = [n for n, p in m.named_parameters() if n not in weights]
    assert all(not isinstance(getattr(m, n), QuantizedWeight) for n in plain)
    # the twin quantizes its weights on the first step and reuses them after (TE's
    # weight cache): what an FP8 primary weight is (under DelayedScaling the weight's
    # scale then stays the one it was quantized with)
    twin = _twin(m, kind)
    _same(_step(m, recipe, _x()), _step(twin, recipe, _x(), first=True))
    _same(_step(m, recipe, _x(32).reshape(2, 16, 32)),
          _step(twin, recipe, _x(32).reshape(2, 16, 32), first=False))


def test_under_torch_compile_runs_eagerly():
    """FP8 primary weights under torch.compile: the module's call runs outside the graph
    (a graph break, with a TeMlirWarning), the eager step's bits; fullgraph=True refuses
    it by te_mlir's reason."""
    import copy
    torch._dynamo.reset()
    m = _build("lnl", "fp8-current")
    c = copy.deepcopy(m)
    eager = _step(m, "fp8-current", _x())
    with pytest.warns(te_mlir.TeMlirWarning, match="FP8 primary weights"):
        compiled = _step(torch.compile(c), "fp8-current", _x())
    _same(eager, (compiled[0], compiled[1],
                  {k.replace("_orig_mod.", ""): v for k, v in compiled[2].items()}))
    with pytest.raises(Exception, match="run the module eagerly"):
        with tet.autocast(recipe="fp8-current"):
            torch.compile(copy.deepcopy(m), fullgraph=True)(_x().to(
                next(m.parameters()).device))


@pytest.mark.parametrize("recipe", RECIPES)
def test_delay_wgrad_compute(recipe):
    """FP8 primary weights with delay_wgrad_compute: the step passes stand-ins, whose
    deferred gradients backward_dw() gives the weights, the undeferred step's bits."""
    m = _build("mlp", recipe)
    d = _build("mlp", recipe, delay_wgrad_compute=True)
    want = _step(m, recipe, _x())
    d.zero_grad()
    dev = next(d.parameters()).device
    xx = _x().to(dev).requires_grad_()
    with tet.autocast(recipe=recipe):
        y = d(xx)
    y.backward(torch.randn(y.shape, generator=torch.Generator().manual_seed(11))
               .to(dev, y.dtype))
    assert d.fc1_weight.grad is None and d.fc2_weight.grad is None
    d.backward_dw()
    _same(want, (y.detach(), xx.grad, {n: p.grad for n, p in d.named_parameters()}))


def _quantize(hp, scale):
    return (hp.float() * scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)


@pytest.mark.parametrize("kind", ["lin", "mlp"])
def test_initial_quantization_is_te_formula(kind):
    """Float8CurrentScaling: scale = 448 / amax; DelayedScaling: its initial scale, 1."""
    torch.manual_seed(3)
    hp = MODULES[kind](params_dtype=torch.bfloat16)
    for recipe in RECIPES:
        torch.manual_seed(3)
        with tet.quantized_model_init(recipe=recipe):
            m = MODULES[kind](params_dtype=torch.bfloat16)
        for n in m._gemm_weights():
            w, q = getattr(hp, n).detach().cpu(), getattr(m, n)
            scale = (torch.tensor(FP8_MAX) / w.float().abs().max()
                     if recipe == "fp8-current" else torch.tensor(1.0))
            assert torch.allclose(q.scale_inv().cpu(), 1 / scale, rtol=1e-6)
            want = _quantize(w, scale)
            got = q.fp8_data().cpu()
            assert torch.equal(got.view(torch.uint8), want.view(torch.uint8)), (recipe, n)


@pytest.mark.parametrize("recipe", RECIPES)
def test_optimizer_update_requantizes(recipe):
    m = _build("mlp", recipe)
    _step(m, recipe, _x())
    n = "fc1_weight"
    q = getattr(m, n)
    before, grad = q.dequantize().clone(), q.grad.clone()
    qbytes = q._qbytes
    torch.optim.SGD(m.parameters(), lr=0.5).step()
    q2 = getattr(m, n)
    assert q2 is q and q2._qbytes is qbytes  # updated in place, still FP8
    hp = before - 0.5 * grad  # aten.add_(grad, alpha=-lr) on the bf16 values
    if recipe == "fp8-current":
        scale = torch.tensor(FP8_MAX) / hp.float().abs().max().cpu()
        assert torch.allclose(q2.scale_inv().cpu(), 1 / scale, rtol=1e-6)
    else:
        scale = torch.tensor(1.0)  # the delayed scale of the weight's slot, still 1
        hist = next(b for k, b in m.named_buffers() if k.endswith("amax_history_fwd"))
        assert float(hist[0, 1]) == float(hp.float().abs().max())  # recorded, as TE does
    want = _quantize(hp.cpu(), scale)
    assert torch.equal(q2.fp8_data().cpu().view(torch.uint8), want.view(torch.uint8))
    # and the next step runs on the updated weights (under DelayedScaling the module's
    # advanced state makes a fresh twin no reference: the update itself is checked above)
    y = _step(m, recipe, _x())[0]
    assert torch.isfinite(y.float()).all()
    if recipe == "fp8-current":
        _same(_step(m, recipe, _x()), _step(_twin(m, "mlp"), recipe, _x()))


def test_adamw_and_unquantized_step():
    """AdamW's in-place ops keep the weight FP8; a step under no FP8 recipe (TE: the
    weights dequantized) equals the plain module's."""
    m = _build("lnl", "fp8-current")
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    for _ in range(2):
        _step(m, "fp8-current", _x())
        opt.step()
    assert isinstance(m.weight, QuantizedWeight)
    _same(_step(m, "bf16", _x()), _step(_twin(m, "lnl"), "bf16", _x()))


@pytest.mark.parametrize("how", ["state_dict", "deepcopy", "pickle", "torch.save"])
def test_copies_and_state_dict(how):
    recipe = "fp8-delayed"
    m = _build("lin", recipe)
    _step(m, recipe, _x())
    torch.optim.SGD(m.parameters(), lr=0.25).step()
    if how == "state_dict":
        buf = io.BytesIO()
        torch.save(m.state_dict(), buf)
        buf.seek(0)
        c = _build("lin", recipe)
        c.load_state_dict(torch.load(buf, weights_only=False))
    else:
        c = copy_module(m, how)
    assert isinstance(c.weight, QuantizedWeight)
    assert torch.equal(c.weight._qbytes.cpu(), m.weight._qbytes.cpu())
    _same(_step(c, recipe, _x()), _step(m, recipe, _x()))
    # the copy quantizes its own updates (its weight's bytes are its own)
    torch.optim.SGD(c.parameters(), lr=0.25).step()
    assert not torch.equal(c.weight._qbytes.cpu(), m.weight._qbytes.cpu())


def test_preserve_high_precision_init_val():
    torch.manual_seed(3)
    hp = MODULES["lin"](params_dtype=torch.bfloat16).weight.detach().cpu()
    torch.manual_seed(3)
    with tet.quantized_model_init(recipe="fp8-current", preserve_high_precision_init_val=True):
        m = MODULES["lin"](params_dtype=torch.bfloat16)
    assert torch.equal(m.weight.get_high_precision_init_val(), hp)
    m.weight.clear_high_precision_init_val()
    assert m.weight.get_high_precision_init_val() is None


@pytest.mark.parametrize("recipe", RECIPES + ["fp8-block"])
def test_quantizer_requantizes_the_init_values_bit_exactly(recipe):
    """TE's quantizer interface (_get_quantizer().make_empty / update_quantized): the
    preserved high-precision values quantized again give the weight's own bytes."""
    torch.manual_seed(3)
    with tet.quantized_model_init(recipe=recipe, preserve_high_precision_init_val=True):
        # (Float8BlockScaling quantizes dims that are multiples of 128)
        m = tet.LayerNormLinear(128, 256, target=TARGET, params_dtype=torch.bfloat16)
    w = m.weight
    assert isinstance(w, QuantizedWeight)
    qz = w._get_quantizer()
    new = qz.make_empty(shape=w.shape, dtype=w.dtype, device=w.device)
    assert isinstance(new, QuantizedWeight) and not torch.equal(new._qbytes, w._qbytes)
    assert qz.update_quantized(w.get_high_precision_init_val().to(w.device), new) is new
    assert torch.equal(new._qbytes, w._qbytes)
    assert torch.equal(new.dequantize(dtype=w.dtype), w.dequantize(dtype=w.dtype))
    # other values: the new bytes dequantize to them within E4M3's rounding, the
    # weight's own bytes are untouched
    before = w._qbytes.clone()
    v = torch.randn(w.shape, dtype=torch.bfloat16, device=w.device) * 0.05
    q = qz.quantize(v)
    torch.testing.assert_close(q.dequantize(torch.float32), v.float(), rtol=0.0625,
                               atol=2.0 ** -9)
    assert torch.equal(w._qbytes, before)


def test_quantizer_refuses_another_shape():
    with tet.quantized_model_init(recipe="fp8-current"):
        m = MODULES["lin"](params_dtype=torch.bfloat16)
    qz = m.weight._get_quantizer()
    with pytest.raises(te_mlir.TeMlirError, match=r"make_empty of shape \(8, 8\)"):
        qz.make_empty((8, 8))
    with pytest.raises(te_mlir.TeMlirError, match="noop_flag"):
        qz.update_quantized(m.weight.dequantize(), qz.make_empty(m.weight.shape),
                            noop_flag=torch.zeros(1))


def test_disabled_is_plain():
    with tet.quantized_model_init(enabled=False, recipe="fp8-current"):
        m = MODULES["lin"](params_dtype=torch.bfloat16)
    assert not isinstance(m.weight, QuantizedWeight)


def test_refusals_name_the_problem():
    with pytest.raises(te_mlir.TeMlirError, match="FP8 primary weights are supported"):
        with tet.quantized_model_init(recipe="bf16"):
            MODULES["lin"](params_dtype=torch.bfloat16)
    # 32 columns: no fp8-block quantization in the library, so the weights stay plain
    with pytest.warns(te_mlir.TeMlirWarning, match="weights stay in"), \
            tet.quantized_model_init(recipe="fp8-block"):
        plain = MODULES["lin"](params_dtype=torch.bfloat16)
    assert not isinstance(plain.weight, QuantizedWeight) and plain._primary is None
    with pytest.raises(te_mlir.TeMlirError, match="checkpoint=True"):
        with tet.quantized_model_init(recipe="fp8-current"):
            MODULES["mlp"](params_dtype=torch.bfloat16, checkpoint=True)
    m = _build("lin", "fp8-current")
    with pytest.raises(te_mlir.TeMlirError, match="recipe mismatch"):
        _step(m, "fp8-block", _x())
    orphan = m.weight.detach()
    orphan._owner = None
    with pytest.raises(te_mlir.TeMlirError, match="no live te_mlir module"):
        with torch.no_grad():
            orphan.add_(1.0)


@pytest.mark.parametrize("kind", ["lin", "mlp"])
def test_block_scaling(kind):
    """Float8BlockScaling: the weight in 128x128 blocks, each with its own scale; a step
    equals the dequantized twin's first-microbatch step, and an update keeps it FP8."""
    recipe = "fp8-block"
    def init(w):  # one block 64x larger: its scale_inv 64x larger
        with torch.no_grad():
            w.normal_(0.0, 0.023)
            w[:128, :128] *= 64
    make = {"lin": lambda **k: tet.Linear(256, 384, target=TARGET, init_method=init, **k),
            "mlp": lambda **k: tet.LayerNormMLP(256, 384, target=TARGET, init_method=init,
                                                output_layer_init_method=init, **k)}[kind]
    torch.manual_seed(3)
    hp = make(params_dtype=torch.bfloat16)
    torch.manual_seed(3)
    with tet.quantized_model_init(recipe=recipe):
        m = make(params_dtype=torch.bfloat16)
    for n in m._gemm_weights():
        q, w = getattr(m, n), getattr(hp, n).detach().float()
        assert isinstance(q, QuantizedWeight)
        s = q.scale_inv()
        assert s.shape[0] == -(-w.shape[0] // 128)  # one scale per 128 rows (2-D blocks)
        # each block within E4M3's half ulp (2^-4 relative) of the block's amax / 448 scale
        err = (q.dequantize().float() - w).abs()
        assert float(err.max()) <= float(w.abs().max()) * 2 ** -4
        assert torch.equal(s[0, 0], s[-1, 1] * 64)  # each block its own scale_inv
    twin = _twin(m, make)
    x = torch.randn(128, 256, generator=torch.Generator().manual_seed(5)).bfloat16()
    _same(_step(m, recipe, x), _step(twin, recipe, x, first=True))
    w0 = m._gemm_weights()[0]
    before = getattr(m, w0).dequantize().clone()
    torch.optim.SGD(m.parameters(), lr=1.0).step()
    q = getattr(m, w0)
    assert isinstance(q, QuantizedWeight) and not torch.equal(q.dequantize(), before)
    want = (before.float() - q.grad.float()).bfloat16().float()
    assert float((q.dequantize().float() - want).abs().max()) <= float(want.abs().max()) * 2 ** -4


@pytest.mark.parametrize("recipe", RECIPES)
def test_step_holds_the_weight_bytes_not_a_copy(recipe):
    """Between forward and backward the step holds the weights' own bytes (what
    <fn>_fwd_cached copies into its saved results is not kept), as TE holds its FP8
    weights; the same for TE's weight cache (is_first_microbatch=False)."""
    m = _build("mlp", recipe)
    saved = []

    def pack(t):
        saved.append(t)
        return t
    x = _x().to(next(m.parameters()).device).requires_grad_()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), \
            tet.autocast(recipe=recipe):
        y = m(x)
    sizes = {}
    for t in saved:
        sizes.setdefault(t.numel() * t.element_size(), set()).add(t.data_ptr())
    own = {}
    for n in m._gemm_weights():
        q = getattr(m, n)._qbytes
        own.setdefault(q.numel(), set()).add(q.data_ptr())
    for size, ptrs in own.items():
        assert sizes.get(size) == ptrs  # the weights' bytes themselves, and no copy
    y.float().sum().backward()
    # the plain module's weight cache: the cached weights, not copies
    twin = _twin(m, "mlp")
    with tet.autocast(recipe=recipe):
        twin(x, is_first_microbatch=True)
        saved.clear()
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            twin(x, is_first_microbatch=False)
    ptrs = {t.data_ptr() for t in saved}
    for w in twin._weight_cache.values():
        assert w.data_ptr() in ptrs


def _needs_blackwell_on_cuda(what):
    from te_mlir import runtime
    if runtime().select_backend(TARGET) == "cuda" and \
            torch.cuda.get_device_capability()[0] != 10:
        pytest.skip(f"{what} runs on a Blackwell GPU or the cpu backend, not on this GPU")


def _plain_and_primary(make, recipe):
    """The weight `make` initializes (fp32 values) and a module `make` builds, from the
    same seed, inside quantized_model_init(recipe)."""
    torch.manual_seed(3)
    hp = make(params_dtype=torch.bfloat16).weight.detach().float()
    torch.manual_seed(3)
    with tet.quantized_model_init(recipe=recipe):
        m = make(params_dtype=torch.bfloat16)
    return hp, m


def _same_as_cached_twin(m, make, recipe, features):
    """A step of `m` (one FP8 primary weight) equals the cached-weight step of its plain
    twin holding the same bytes."""
    twin = _twin(m, make)
    x = torch.randn(32, features, generator=torch.Generator().manual_seed(5)).bfloat16()
    _step(twin, recipe, x, first=True)
    (name,) = twin._weight_cache
    twin._weight_cache[name] = m.weight._qbytes.clone()
    _same(_step(m, recipe, x), _step(twin, recipe, x, first=False))


def test_mxfp8():
    """MXFP8BlockScaling: E8M0 scales per 1x32 block (swizzled in the bytes, as cuBLAS
    reads them); a step equals the plain module's cached-weight step on the same bytes, and
    the dequantized values are the hp ones to E4M3's precision."""
    _needs_blackwell_on_cuda("MXFP8")
    recipe = "mxfp8"
    make = lambda **k: tet.Linear(256, 384, target=TARGET, **k)  # noqa: E731
    hp, m = _plain_and_primary(make, recipe)
    q = m.weight
    assert isinstance(q, QuantizedWeight) and "swizzled" in q._qtype
    e = q.scale_inv()[:384].int()  # one E8M0 byte per 1x32 block: 2^ceil(log2(amax / 448))
    amax = hp.abs().reshape(384, 8, 32).amax(-1).cpu()
    assert torch.equal(e[:, :8].cpu(), (torch.ceil(torch.log2(amax / 448)) + 127).int())
    err = (q.dequantize().float() - hp).abs()
    assert float(err.max()) <= float(hp.abs().max()) * 2 ** -4
    _same_as_cached_twin(m, make, recipe, 256)
    before = q.dequantize().clone()
    torch.optim.SGD(m.parameters(), lr=1.0).step()
    want = (before.float() - q.grad.float()).bfloat16().float()
    assert isinstance(m.weight, QuantizedWeight)
    assert float((q.dequantize().float() - want).abs().max()) <= float(want.abs().max()) * 2 ** -4


@pytest.mark.parametrize("spec", ["nvfp4", "#te.nvfp4<four_over_six = weights>",
                                  "#te.nvfp4<weight_2d = false>"])
def test_nvfp4(spec):
    """NVFP4BlockScaling: E2M1 codes two per byte, E4M3 scales per 16x16 tile (1x16
    without weight_2d; 4-over-6 scales bounded by 256), the weight's amax. Its dequantized
    values are exactly the library's: a forward over the identity (one-hot rows quantize
    exactly) gives them back; a step equals the plain module's cached-weight step on the
    same bytes; an SGD step keeps the weight NVFP4."""
    _needs_blackwell_on_cuda("NVFP4")
    make = lambda **k: tet.Linear(64, 128, bias=False, target=TARGET, **k)  # noqa: E731
    hp, m = _plain_and_primary(make, spec)
    q = m.weight
    assert isinstance(q, QuantizedWeight) and "#te.nvfp4" in q._qtype
    assert q._qbytes.numel() < 1.2 * q.numel() + 1024  # 4-bit codes, both usages, scales
    d = q.dequantize().float()
    assert float((d - hp).norm() / hp.norm()) < 0.15  # NVFP4's error on N(0, s) weights
    dev = q.device
    with torch.no_grad(), tet.autocast(recipe=spec):
        y = m(torch.eye(64, device=dev).bfloat16())
    assert torch.equal(y.float(), d.t().bfloat16().float())
    _same_as_cached_twin(m, make, spec, 64)
    before = d.clone()
    torch.optim.SGD(m.parameters(), lr=1.0).step()
    assert isinstance(m.weight, QuantizedWeight)
    want = (before - q.grad.float()).bfloat16().float()
    got = q.dequantize().float()
    assert not torch.equal(got, before)
    assert float((got - want).norm() / want.norm()) < 0.15


@pytest.mark.parametrize("override", ["high_precision", "dequantized"])
def test_backward_override_on_primary_weights(override):
    """A recipe with TE's backward_override given to quantized_model_init: the weights are
    kept as without it; a step under it (its backward from the weights' values) equals
    the dequantized twin's under the same recipe."""
    recipe = "fp8-current@" + override
    m = _build("lin", recipe)
    assert isinstance(m.weight, QuantizedWeight)
    assert torch.equal(m.weight._qbytes, _build("lin", "fp8-current").weight._qbytes)
    _same(_step(m, recipe, _x()), _step(_twin(m, "lin"), recipe, _x()))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA memory: the H200 run")
def test_construction_keeps_no_fallback_scratch_on_cuda():
    """Quantizing the weights at construction runs the library's forward on a few zero
    tokens: at least 16 (cuBLASLt's FP8 GEMM dims), so the runtime never takes its
    dequantized fallback GEMM, whose fp32 scratch (here 2 x 64 MiB of weight copies) the
    op layer would keep as its workspace for the rest of the process."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    with tet.quantized_model_init(recipe="fp8-current"):
        m = tet.LayerNormMLP(2048, 8192, params_dtype=torch.bfloat16, device="cuda",
                             target="auto")
    torch.cuda.synchronize()
    grown = torch.cuda.memory_allocated() - before
    held = sum(p._qbytes.numel() if isinstance(p, QuantizedWeight) else
               p.numel() * p.element_size() for p in m.parameters())
    # the weights' bytes, the runtime's default 48 MiB workspace and slack; the fallback's
    # scratch alone would be 128 MiB more
    assert grown <= held + (48 << 20) + (8 << 20), (grown, held)
