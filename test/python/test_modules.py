"""te_mlir.torch.LayerNormLinear / LayerNormMLP / Linear against plain PyTorch (TE's
tolerances, reference/transformer-engine.md §7.2), recipes, state, weight cache,
checkpointing, torch.compile."""
import copy

import pytest
import torch
import torch.nn.functional as F

import te_mlir
import te_mlir.torch as tet
from conftest import needs_gpu, run_python

GATED = set(tet.nn.GATED_ACTIVATIONS)


def _act(name, h):
    if name == "clamped_swiglu":  # GPT-OSS, TE's defaults (transformer-engine.md §8.3)
        a, b = h.chunk(2, dim=-1)
        a = torch.clamp(a, max=7.0)
        b = torch.clamp(b, -7.0, 7.0) + 1.0
        return a * torch.sigmoid(1.702 * a) * b
    if name in GATED:
        a, b = h.chunk(2, dim=-1)
        return _act({"geglu": "gelu", "glu": "sigmoid", "qgeglu": "qgelu", "reglu": "relu",
                     "sreglu": "srelu", "swiglu": "silu"}[name], a) * b
    if name == "gelu":
        return F.gelu(h, approximate="tanh")
    if name == "gelu_erf":
        return F.gelu(h)
    if name in ("qgelu",):
        return h * torch.sigmoid(1.702 * h)
    if name == "relu":
        return F.relu(h)
    if name == "srelu":
        return F.relu(h) ** 2
    if name == "silu":
        return F.silu(h)
    if name == "sigmoid":
        return torch.sigmoid(h)
    raise KeyError(name)


def _norm(m, x, H):
    g = m.layer_norm_weight.float()
    if m.zero_centered_gamma:
        g = g + 1
    if m.normalization == "LayerNorm":
        return F.layer_norm(x, (H,), g, m.layer_norm_bias.float(), m.eps)
    return F.rms_norm(x, (H,), g, m.eps)


def reference(m, x):
    """The module's math in fp32 on fp32 copies of its parameters (and input); returns
    (outputs, the fp32 leaves in [x, *params] order)."""
    leaves = [x.detach().float().requires_grad_()] + [
        p.detach().float().requires_grad_() for p in m.parameters()]
    saved = {n: p for (n, _), p in zip(m.named_parameters(), leaves[1:])}

    xs = leaves[0]
    get = lambda n: saved.get(n)  # noqa: E731
    if isinstance(m, tet.Linear):
        return [F.linear(xs, get("weight"), get("bias"))], leaves
    H = xs.shape[-1]
    g = get("layer_norm_weight") + (1 if m.zero_centered_gamma else 0)
    if m.normalization == "LayerNorm":
        ln = F.layer_norm(xs, (H,), g, get("layer_norm_bias"), m.eps)
    else:
        ln = F.rms_norm(xs, (H,), g, m.eps)
    if isinstance(m, tet.LayerNormLinear):
        y = F.linear(ln, get("weight"), get("bias"))
    else:
        h = _act(m.activation, F.linear(ln, get("fc1_weight"), get("fc1_bias")))
        y = F.linear(h, get("fc2_weight"), get("fc2_bias"))
    return ([y, ln] if m.return_layernorm_output else [y]), leaves


def randomize(m, seed=0):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in m.named_parameters():
            t = torch.randn(p.shape, generator=g)
            if p.dim() == 2:
                t = t * p.shape[1] ** -0.5
            elif "layer_norm_weight" in n:
                t = (0.0 if m.zero_centered_gamma else 1.0) + 0.1 * t
            else:
                t = 0.1 * t
            p.copy_(t.to(p.dtype))
    return m


# TE test_numerics tolerances (§7.2): (fwd atol, fwd rtol, grad atol, grad rtol)
TOLS = {
    ("mlp", torch.float32): (2e-2, 1e-3, 2e-2, 1e-3),
    ("mlp", torch.bfloat16): (5e-2, 4e-2, 2e-1, 4e-2),
    ("lnl", torch.float32): (2.5e-4, 1e-3, 1e-3, 1e-3),
    ("lnl", torch.bfloat16): (2e-2, 4e-2, 5e-2, 4e-2),
    ("lin", torch.float32): (5e-3, 1.3e-6, 5e-3, 1.3e-6),
    ("lin", torch.bfloat16): (5e-2, 2e-2, 5e-2, 2e-2),
    ("lin", torch.float16): (5e-2, 1e-2, 5e-2, 1e-2),
    ("lnl", torch.float16): (2e-3, 4e-2, 5e-2, 4e-2),
}


def check_against_torch(m, kind, shape, seed=1):
    dtype = m.params_dtype
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen).to(dtype).requires_grad_()
    outs = m(x)
    outs = list(outs) if isinstance(outs, tuple) else [outs]
    refs, leaves = reference(m, x)
    fa, fr, ga, gr = TOLS[(kind, dtype)]
    dys = [torch.randn(o.shape, generator=gen).to(dtype) for o in outs]
    for o, r in zip(outs, refs):
        assert o.shape == r.shape and o.dtype == dtype
        torch.testing.assert_close(o.float(), r.to(dtype).float(), atol=fa, rtol=fr)
    got = torch.autograd.grad(outs, [x, *m.parameters()], dys)
    want = torch.autograd.grad(refs, leaves, [d.float() for d in dys])
    names = ["input"] + [n for n, _ in m.named_parameters()]
    for n, a, b in zip(names, got, want):
        assert a.dtype == dtype and a.shape == b.shape, n
        torch.testing.assert_close(a.float(), b.to(dtype).float(), atol=ga, rtol=gr,
                                   msg=lambda s, n=n: f"grad of {n}: {s}")


ACTS = list(tet.nn.ACTIVATIONS)


@pytest.mark.parametrize("activation", ACTS)
@pytest.mark.parametrize("norm,dtype", [("LayerNorm", torch.float32), ("RMSNorm", torch.bfloat16)],
                         ids=["LayerNorm-f32", "RMSNorm-bf16"])
def test_layernorm_mlp(activation, norm, dtype):
    m = randomize(tet.LayerNormMLP(32, 48, normalization=norm, activation=activation,
                                   params_dtype=dtype, target="cpu"))
    names = {n for n, _ in m.named_parameters()}
    want = {"layer_norm_weight", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"}
    assert names == (want | {"layer_norm_bias"} if norm == "LayerNorm" else want)
    F1 = 96 if activation in GATED else 48
    assert m.fc1_weight.shape == (F1, 32) and m.fc2_weight.shape == (32, 48)
    check_against_torch(m, "mlp", (2, 8, 32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16],
                         ids=["f32", "bf16", "f16"])
@pytest.mark.parametrize("norm,zc,bias,ret", [("LayerNorm", False, True, False),
                                              ("LayerNorm", True, False, True),
                                              ("RMSNorm", False, True, True),
                                              ("RMSNorm", True, False, False)])
def test_layernorm_linear(norm, zc, bias, ret, dtype):
    m = randomize(tet.LayerNormLinear(32, 24, normalization=norm, zero_centered_gamma=zc,
                                      bias=bias, return_layernorm_output=ret, params_dtype=dtype,
                                      eps=1e-3, target="cpu"))
    check_against_torch(m, "lnl", (16, 32))
    check_against_torch(m, "lnl", (3, 5, 32), seed=2)  # [batch, seq, hidden], 15 tokens


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16],
                         ids=["f32", "bf16", "f16"])
@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias, dtype):
    m = randomize(tet.Linear(32, 16, bias=bias, params_dtype=dtype, target="cpu"))
    assert {n for n, _ in m.named_parameters()} == ({"weight", "bias"} if bias else {"weight"})
    check_against_torch(m, "lin", (2, 4, 32))


def test_mlp_checkpoint_is_bit_identical():
    a = randomize(tet.LayerNormMLP(32, 64, activation="swiglu", normalization="RMSNorm",
                                   target="cpu"))
    b = randomize(tet.LayerNormMLP(32, 64, activation="swiglu", normalization="RMSNorm",
                                   checkpoint=True, target="cpu"))
    la, lb = a.function().ops.library, b.function().ops.library
    assert la.sha256 != lb.sha256
    # the checkpointed forward saves only its operands
    sa = [r for r in la.entry("layernorm_mlp_fwd").results if r.is_saved]
    sb = [r for r in lb.entry("layernorm_mlp_fwd").results if r.is_saved]
    assert len(sb) < len(sa)
    x = torch.randn(16, 32, requires_grad=True)
    ya, yb = a(x), b(x)
    assert torch.equal(ya, yb)
    ga = torch.autograd.grad(ya.sum(), [x, *a.parameters()])
    gb = torch.autograd.grad(yb.sum(), [x, *b.parameters()])
    for u, v in zip(ga, gb):
        assert torch.equal(u, v)


def _rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


@pytest.mark.parametrize("recipe", ["fp8-current", "fp8-delayed"])
def test_fp8_module_loose(recipe):
    """FP8 against the fp32 reference: relative L2 error <= 0.1 (E4M3/E5M2 quantization
    noise is ~3-8 % on random data, bench/bench.py's FP8_TOL; the exact FP8 emulation
    is checked by test_ops.py::test_goldens). Delayed scaling after 3 steps (its first
    step quantizes with scale 1)."""
    m = randomize(tet.LayerNormMLP(32, 64, recipe=recipe, target="cpu"))
    x = torch.randn(32, 32, requires_grad=True)
    for _ in range(3):
        y = m(x)
        grads = torch.autograd.grad(y.sum(), [x, *m.parameters()])
    refs, leaves = reference(m, x)
    rgrads = torch.autograd.grad(refs[0].sum(), leaves)
    assert _rel(y, refs[0]) <= 0.1
    for n, a, b in zip(["x"] + [n for n, _ in m.named_parameters()], grads, rgrads):
        if b.norm() > 0:
            assert _rel(a, b) <= 0.1, n


def test_fp8_autocast_selects_the_recipe():
    a = randomize(tet.LayerNormLinear(32, 32, target="cpu"))
    b = randomize(tet.LayerNormLinear(32, 32, recipe="fp8-current", target="cpu"))
    x = torch.randn(16, 32)
    with tet.fp8_autocast(fp8_recipe="fp8-current"):
        ya = a(x)
    assert torch.equal(ya, b(x))
    assert not torch.equal(a(x), ya)  # bf16 outside


class _OpLog(torch.utils._python_dispatch.TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.__name__)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("recipe", ["bf16", "fp8-delayed"])
def test_eager_backward_makes_no_zeros(recipe):
    """The eager backward of a module creates no zeros: autograd materializes no
    gradient of the Function's non-differentiable outputs (under fp8-delayed, the new
    forward recipe state: a zeros tensor per state output and step before). (A fed
    gradient that comes as None is made zeros by the backward: test_ops' optional-grad
    cases.)"""
    m = randomize(tet.LayerNormMLP(32, 64, recipe=recipe, target="cpu"))
    x = torch.randn(16, 32, requires_grad=True)
    m(x).sum().backward()  # the first step compiles
    y = m(x)
    dy = torch.randn_like(y)
    with _OpLog() as log:
        y.backward(dy)
    made = [n for n in log.names if n.split(".")[0] in
            ("zeros", "zeros_like", "new_zeros", "zero_", "fill_")]
    assert not made, f"the backward made zeros: {made}"


def test_delayed_state_advances_over_three_steps():
    """The module's amax-history/scale buffers advance every step exactly as threading
    the state through TeFunction by hand does (new state = the entries' state results,
    the backward's updated in place)."""
    m = randomize(tet.LayerNormMLP(32, 64, recipe="fp8-delayed", target="cpu"))
    f = m.function()
    assert [s.roles["te.state"] for s in f.state_specs] == [
        "layernorm_mlp_0.amax_history_fwd", "layernorm_mlp_0.scales_fwd"]
    fst = f.initial_state()
    bst = f.initial_state(backward=True)
    params = [p.detach().clone().requires_grad_() for p in m.parameters()]
    bufs = [b for n, b in m.named_buffers()]
    assert len(bufs) == 4
    prev = [b.clone() for b in bufs]
    for step in range(3):
        x = torch.randn(16, 32, generator=torch.Generator().manual_seed(step))
        xm = x.clone().requires_grad_()
        y = m(xm)
        gm = torch.autograd.grad(y.sum(), [xm, *m.parameters()])
        xf = x.clone().requires_grad_()
        y2, *new = f(xf, *params, *fst, bwd_state=bst)
        g2 = torch.autograd.grad(y2.sum(), [xf, *params])
        fst = [t.detach() for t in new]
        assert torch.equal(y, y2)
        for u, v in zip(gm, g2):
            assert torch.equal(u, v)
        # (eager replaces the forward state buffers by the new state tensors)
        now = [b.clone() for _, b in m.named_buffers()]
        hist_f = m.get_buffer("fp8_delayed_layernorm_mlp_0_amax_history_fwd")
        torch.testing.assert_close(hist_f, fst[0], rtol=0, atol=0)
        torch.testing.assert_close(m.get_buffer("fp8_delayed_layernorm_mlp_0_scales_bwd"),
                                   bst[1], rtol=0, atol=0)
        # the amax histories roll every step (scales may repeat: y.sum()'s gradient is
        # the same every step)
        names = [n for n, _ in m.named_buffers()]
        for n, a, b in zip(names, now, prev):
            if "amax_history" in n:
                assert not torch.equal(a, b), f"step {step}: {n}"
        prev = now
    # scales of the quantized GEMM operands moved off TE's initial 1 (each GEMM's
    # output slot is not quantized and keeps it)
    assert (m.get_buffer("fp8_delayed_layernorm_mlp_0_scales_fwd") != 1).sum() == 4


def test_weight_cache_is_first_microbatch():
    m = randomize(tet.LayerNormMLP(32, 64, recipe="fp8-current", target="cpu"))
    f = m.function()
    assert f.cached is not None and len(f.cached_weight_specs) == 2
    x = torch.randn(16, 32, requires_grad=True)
    with pytest.raises(te_mlir.TeMlirError, match="before a first microbatch"):
        m(x, is_first_microbatch=False)
    y0 = m(x)
    y1 = m(x, is_first_microbatch=True)
    assert set(m._weight_cache) == {"layernorm_mlp_0.fc1_weight", "layernorm_mlp_0.fc2_weight"}
    y2 = m(x, is_first_microbatch=False)
    assert torch.equal(y0, y1) and torch.equal(y0, y2)
    g0 = torch.autograd.grad(y0.sum(), [x, *m.parameters()])
    g2 = torch.autograd.grad(y2.sum(), [x, *m.parameters()])
    for u, v in zip(g0, g2):
        assert torch.equal(u, v)
    # the cached weights are used as they were: changed weights do not show
    with torch.no_grad():
        m.fc1_weight.mul_(2)
    assert torch.equal(m(x, is_first_microbatch=False), y0)
    assert not torch.equal(m(x, is_first_microbatch=True), y0)


def test_refusals():
    with pytest.raises(te_mlir.TeMlirError, match="sequence_parallel=True is not supported"):
        tet.LayerNormLinear(32, 32, sequence_parallel=True)
    with pytest.raises(TypeError, match="unexpected argument 'bogus'"):
        tet.Linear(32, 32, bogus=1)
    with pytest.raises(te_mlir.TeMlirError, match="activation 'tanh' is not supported"):
        tet.LayerNormMLP(32, 64, activation="tanh")
    with pytest.raises(te_mlir.TeMlirError, match="normalization must be"):
        tet.LayerNormLinear(32, 32, normalization="BatchNorm")


def test_prebuilt_library():
    a = randomize(tet.LayerNormMLP(32, 64, target="cpu"))
    # (device="cpu": the default device is the GPU when one is visible, as in TE)
    b = randomize(tet.LayerNormMLP(32, 64, library=a.function().ops.library.path,
                                   device="cpu"))
    assert b.function().ops is a.function().ops
    x = torch.randn(8, 32)
    assert torch.equal(a(x), b(x))


# --------------------------------------------------------------------------- torch.compile


class Block(torch.nn.Module):
    def __init__(self, recipe=None, checkpoint=False):
        super().__init__()
        self.mlp = randomize(tet.LayerNormMLP(32, 64, recipe=recipe, target="cpu",
                                              checkpoint=checkpoint), 3)
        self.proj = randomize(tet.LayerNormLinear(32, 16, normalization="RMSNorm", recipe=recipe,
                                                  target="cpu"), 4)
        self.out = randomize(tet.Linear(16, 16, recipe=recipe, target="cpu"), 5)

    def forward(self, x):
        h = x + self.mlp(x)
        return self.out(torch.relu(self.proj(h)))


def _step(model, x, dynamic=False):
    x = x.clone().requires_grad_()
    if dynamic:
        torch._dynamo.mark_dynamic(x, 0)
    y = model(x)
    loss = (y * y).sum()
    grads = torch.autograd.grad(loss, [x, *model.parameters()])
    return y.detach(), grads


def test_compile_fullgraph_no_graph_breaks():
    model = Block()
    x = torch.randn(2, 8, 32)
    ex = torch._dynamo.explain(model)(x)
    assert ex.graph_break_count == 0 and ex.graph_count == 1, ex.break_reasons
    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True)  # Inductor's CPU code generation
    ye, ge = _step(model, x)
    yc, gc = _step(compiled, x)
    torch.testing.assert_close(yc, ye, rtol=1e-6, atol=1e-6)
    for a, b in zip(gc, ge):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("recipe", ["bf16", "fp8-current"])
def test_compile_dynamic_tokens_one_graph(recipe):
    """One graph for every token count (fp8: every multiple of 8, the recipe's rule
    becoming a guard of the symbolic dim)."""
    from torch._dynamo.testing import CompileCounterWithBackend
    model = Block(recipe)
    cnt = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(model, fullgraph=True, backend=cnt)
    for M in (16, 24, 40):
        x = torch.randn(M, 32)
        ye, ge = _step(model, x)
        yc, gc = _step(compiled, x, dynamic=True)
        assert torch.equal(yc, ye)
        for a, b in zip(gc, ge):
            assert torch.equal(a, b)
    assert cnt.frame_count == 1


@pytest.mark.parametrize("checkpoint", [False, True])
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fp8_delayed_state_matches_eager(backend, checkpoint):
    """fp8-delayed under torch.compile: the state buffers advance as in eager (the
    forward's copy_ into the buffers and the backward's in-place update are traced).
    With checkpoint=True the MLP's recompute quantizes with the scales its forward ran
    with (the forward returns a copy; an alias of the state buffer would have been
    updated by then: a version-counter error before, silently other scales with a
    copy AOTAutograd's partitioner recomputes in the backward), bit for bit as eager."""
    eager, comp = Block("fp8-delayed", checkpoint), Block("fp8-delayed", checkpoint)
    _steps_match_eager(eager, comp, torch.compile(comp, fullgraph=True, backend=backend), 3)


def _steps_match_eager(eager, comp, compiled, steps, no_grad=False):
    """`steps` training steps of `compiled` (a compiled `comp`, built as `eager`) give
    eager's output and gradients bit for bit (and, with no_grad, a no-grad call after
    each), and the recipe-state buffers end as eager's."""
    for step in range(steps):
        x = torch.randn(16, 32, generator=torch.Generator().manual_seed(step))
        ye, ge = _step(eager, x)
        yc, gc = _step(compiled, x)
        assert torch.equal(yc, ye), step
        for a, b in zip(gc, ge):
            assert torch.equal(a, b)
        if no_grad:
            with torch.no_grad():
                assert torch.equal(compiled(x), eager(x)), step
    for (n, a), (_, b) in zip(eager.named_buffers(), comp.named_buffers()):
        assert torch.equal(a, b), n


@pytest.mark.parametrize("recipe", ["bf16", "fp8-delayed"])
def test_compile_guards_skip_the_library_objects(recipe):
    """Under torch.compile a module's forward calls the ops bound once per (recipe,
    dtype) (_traced_runner): no guard of the compiled frame reads the library's Python
    objects (TeFunction, OpLibrary, their entries and steps), each read of which Dynamo
    would check on every call. Training and no-grad calls (the inference entry) give
    eager's results and advance the recipe state as eager does."""
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    torch._dynamo.reset()
    eager, comp = Block(recipe), Block(recipe)
    _steps_match_eager(eager, comp, torch.compile(comp, fullgraph=True, backend="aot_eager"),
                       2, no_grad=True)
    entries = _debug_get_cache_entry_list(Block.forward.__code__)
    assert len(entries) == 2  # training, no-grad
    guards = "\n".join(str(e.guard_manager) for e in entries)
    for word in ("._fns", ".arg_specs", ".output_index", "._steps", ".namespace", ".fwd"):
        assert word not in guards, word


def test_compile_weight_cache():
    """is_first_microbatch under torch.compile: a Python flag Dynamo guards on; the
    cached weights stored by the first microbatch are reused by the next."""
    m = randomize(tet.LayerNormMLP(32, 64, recipe="fp8-current", target="cpu"))
    cf = torch.compile(lambda x, first: m(x, is_first_microbatch=first), fullgraph=True,
                       backend="aot_eager")
    x = torch.randn(16, 32, requires_grad=True)
    ref = m(x)
    a, b = cf(x, True), cf(x, False)
    assert torch.equal(a, ref) and torch.equal(b, ref)
    ga = torch.autograd.grad(a.sum(), x)[0]
    gb = torch.autograd.grad(b.sum(), x)[0]
    assert torch.equal(ga, gb)


def test_compile_under_fp8_autocast():
    """fp8_autocast around a compiled module: Dynamo guards on the recipe (one eager
    step first compiles the library for it)."""
    m = randomize(tet.LayerNormLinear(32, 32, target="cpu"))
    cm = torch.compile(m, fullgraph=True, backend="aot_eager")
    x = torch.randn(16, 32)
    with tet.fp8_autocast(fp8_recipe="fp8-current"):
        m(x)
        a = cm(x)
        assert torch.equal(a, m(x))
    b = cm(x)
    assert torch.equal(b, m(x)) and not torch.equal(a, b)


def test_compile_alignment_rule_is_a_guard():
    """An fp8 token count that breaks d0 % 8 fails clearly under torch.compile too."""
    model = tet.LayerNormLinear(32, 32, recipe="fp8-current", target="cpu")
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    compiled(torch.randn(16, 32))
    with pytest.raises(Exception, match=r"needs d0 % 8 == 0"):
        compiled(torch.randn(12, 32))


# --------------------------------------------------------------------------- GPU
# The GPU tests' modules compile with target="auto" (cuda where a GPU is visible).


def gpu_models(device):
    return {
        "mlp_f32": tet.LayerNormMLP(64, 128, activation="gelu", params_dtype=torch.float32,
                                    device=device),
        "mlp_bf16": tet.LayerNormMLP(64, 128, activation="gelu", params_dtype=torch.bfloat16,
                                     device=device),
        "lin_bf16": tet.Linear(64, 64, params_dtype=torch.bfloat16, device=device),
        # test_donation's test_cuda_backward_peak_is_the_plans
        "mlp_bf16_fp8_current": tet.LayerNormMLP(64, 128, activation="gelu",
                                                 params_dtype=torch.bfloat16, device=device,
                                                 recipe="fp8-current"),
        # test_cuda_reduce_overhead_delayed_scaling_matches_eager's
        "ln_linear_delayed": tet.LayerNormLinear(256, 512, params_dtype=torch.bfloat16,
                                                 device=device, recipe="fp8-delayed"),
        "ln_mlp_delayed": tet.LayerNormMLP(256, 512, activation="gelu",
                                           params_dtype=torch.bfloat16, device=device,
                                           recipe="fp8-delayed"),
    }


def test_gpu_libraries_compile():
    """Compiles the GPU tests' libraries here too (a cache filled on this machine then
    serves a GPU machine that cannot run te-compile: docs/python.md)."""
    for m in gpu_models("cpu").values():
        assert m.function().ops.library.target == "auto"


@needs_gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_cuda_modules_match_torch(dtype):
    m = randomize(gpu_models("cuda")["mlp_f32" if dtype == torch.float32 else "mlp_bf16"])
    assert m.function().ops.library.backend == "cuda"
    check_against_torch_cuda(m, dtype)


def check_against_torch_cuda(m, dtype):
    x = torch.randn(64, 64, device="cuda", dtype=dtype, requires_grad=True)
    y = m(x)
    refs, leaves = reference(m, x)
    fa, fr, ga, gr = TOLS[("mlp", dtype)]
    torch.testing.assert_close(y.float(), refs[0].to(dtype).float(), atol=fa, rtol=fr)
    got = torch.autograd.grad(y.sum(), [x, *m.parameters()])
    want = torch.autograd.grad(refs[0].sum(), leaves)
    for a, b in zip(got, want):
        torch.testing.assert_close(a.float(), b.to(dtype).float(), atol=ga, rtol=gr)


@needs_gpu
def test_cuda_reduce_overhead_fresh_inputs():
    """Fresh inputs each step under reduce-overhead: the CUDA-graphed steps match eager,
    and Inductor skipped no graph (a skip runs eager and would pass the comparison)."""
    torch.manual_seed(0)
    counters = torch._dynamo.utils.counters
    counters.clear()
    ms = gpu_models("cuda")
    model = torch.nn.Sequential(randomize(ms["mlp_bf16"]), randomize(ms["lin_bf16"]))
    compiled = torch.compile(model, mode="reduce-overhead", fullgraph=True)
    for i in range(6):
        x = torch.randn(128, 64, device="cuda", dtype=torch.bfloat16)
        ye, ge = _step(model, x)
        yc, gc = _step(compiled, x)
        # stale CUDA-graph buffers (work off the capture stream) are O(1) wrong; Inductor's
        # own ops around the te ops may round differently from eager by a bf16 ulp
        torch.testing.assert_close(yc, ye, rtol=1.6e-2, atol=1e-2,
                                   msg=lambda s, i=i: f"step {i}: {s}")
        for a, b in zip(gc, ge):
            torch.testing.assert_close(a, b, rtol=1.6e-2, atol=1e-2)
    assert not counters["inductor"]["cudagraph_skips"], dict(counters["inductor"])


@needs_gpu
@pytest.mark.parametrize("module", ["ln_linear", "ln_mlp"])
def test_cuda_reduce_overhead_delayed_scaling_matches_eager(module):
    """fp8-delayed modules under reduce-overhead (torch's CUDA graphs, inside which the
    runtime forks each amax update to a branch beside the GEMMs: te-fork-amax-update,
    te_rt_amax_update_fork) take eager's steps bit for bit: outputs, gradients, and the
    recipe state (amax histories and scales) after every step. A fork joined too late,
    or an amax vector overwritten before its update read it, shows up as state that
    differs. The backward writes its new state over its state arguments (module info
    state_in_place, Tensor(a!)): mutated buffers, which the cudagraph trees must still
    capture rather than skip (a skip would run eager and pass the comparison)."""
    torch.manual_seed(0)
    counters = torch._dynamo.utils.counters
    counters.clear()
    eager = gpu_models("cuda")[module + "_delayed"]
    comp = copy.deepcopy(eager)
    eager.function(), comp.function()  # the libraries built outside the trace
    compiled = torch.compile(comp, mode="reduce-overhead", fullgraph=True)
    for step in range(6):
        x = torch.randn(32, 256, device="cuda", dtype=torch.bfloat16,
                        generator=torch.Generator("cuda").manual_seed(step))
        ye, ge = _step(eager, x)
        yc, gc = _step(compiled, x)
        assert torch.equal(yc, ye), step
        for a, b in zip(gc, ge):
            assert torch.equal(a, b), step
        states = 0
        for (n, a), (_, b) in zip(eager.named_buffers(), comp.named_buffers()):
            assert torch.equal(a, b), (step, n)
            states += "amax_history" in n
        assert states >= 2  # forward and backward histories
    assert not counters["inductor"]["cudagraph_skips"], dict(counters["inductor"])


@needs_gpu
def test_cuda_calls_on_two_streams_keep_their_order():
    """A module called on one stream and then on another: the runtime context that the
    op layer shares between them (workspace, scratch) orders the switch, so the second
    stream's call waits on the device for the first's, and both results are right. The
    first stream is held back by a sleep kernel queued before its call: the second
    stream's work must still be pending while it sleeps."""
    torch.manual_seed(0)
    m = tet.Linear(256, 512, bias=False, params_dtype=torch.bfloat16, device="cuda")
    xs = [torch.randn(64, 256, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
    with torch.no_grad():
        want = [m(x) for x in xs]
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.no_grad():
        with torch.cuda.stream(s1):
            torch.cuda._sleep(200_000_000)  # ~0.1 s on an H100 / H200
            y1 = m(xs[0])
        with torch.cuda.stream(s2):
            y2 = m(xs[1])
            done = torch.cuda.Event()
            done.record(s2)
    pending = not done.query()
    torch.cuda.synchronize()
    assert pending, "the second stream's call ran beside the first stream's"
    torch.testing.assert_close(y1, want[0], rtol=0, atol=0)
    torch.testing.assert_close(y2, want[1], rtol=0, atol=0)


@needs_gpu
@pytest.mark.parametrize("recipe", ["fp8-delayed", "fp8-current"])
def test_cuda_small_arena_frozen_weight_backward(recipe):
    """TransformerEngine's frozen-weights memory check, as its users meet it: Linear
    1024 -> 1024 (fp32, no bias), the weight frozen, FP8. The backward writes dx (4 MiB)
    and quantizes the output gradient rowwise into its arena (1 MiB and the scale); that
    arena comes from the context's small-arena region, so the backward's peak rises by
    its results only (an arena from the caching allocator adds 1-2 MiB: it is just above
    the allocator's 1 MiB small/large boundary, where TE's test allows 5.5 MB in all).
    The region serves the stream of the process's first call that used it: torch's
    default stream in this test process."""
    m = tet.Linear(1024, 1024, bias=False, device="cuda")
    m.weight.requires_grad_(False)
    x = torch.randn(1024, 1024, device="cuda", requires_grad=True)
    rises = []
    for _ in range(3):
        x.grad = None
        with tet.autocast(recipe=recipe):
            o = m(x)
        g = torch.randn_like(o)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.max_memory_allocated()
        o.backward(g)
        torch.cuda.synchronize()
        rises.append(torch.cuda.max_memory_allocated() - before)
    dx = 1024 * 1024 * 4
    assert x.grad is not None and x.grad.shape == x.shape
    # dx and the recipe state's few KiB, no arena
    assert all(r < dx + (256 << 10) for r in rises[1:]), (rises, dx)
    assert rises[-1] / 1e6 < 5.5


_FRESH_PROCESS = """
import sys, torch
import te_mlir.torch as tet
torch.manual_seed(0)
def make():
    m = tet.LayerNormMLP(64, 128, activation="gelu", params_dtype=torch.bfloat16, device="cuda")
    with torch.no_grad():
        for n, p in m.named_parameters():
            p.copy_(torch.randn_like(p) * 0.1 + (1.0 if n == "layer_norm_weight" else 0.0))
    return m
"""


def _fresh_process(body):
    """Runs `body` after _FRESH_PROCESS in a new Python (the runtime's context, and its
    workspace, are the process's): (returncode, stdout + stderr)."""
    r = run_python(_FRESH_PROCESS + body)
    return r.returncode, r.stdout + r.stderr


@needs_gpu
def test_cuda_reduce_overhead_first_te_call():
    """The process's first te-mlir call is reduce-overhead's warm-up, where PyTorch routes
    the thread's allocations to the graph's private pool: the workspace the runtime's
    context keeps for the process must not come from there (Inductor's cudagraph trees
    then fail the step: 'tensor(s) in the cudagraph pool not tracked as outputs')."""
    rc, out = _fresh_process("""
m = make()
c = torch.compile(m, mode="reduce-overhead", fullgraph=True)
xs = [torch.randn(32, 64, device="cuda", dtype=torch.bfloat16) for _ in range(4)]
ys = []
for x in xs:
    ys.append(c(x).clone())
for x, y in zip(xs, ys):
    torch.testing.assert_close(y, m(x), rtol=1.6e-2, atol=1e-2)
print("ok", len(ys))
""")
    assert rc == 0 and "ok 4" in out, out[-3000:]


@needs_gpu
def test_cuda_entries_with_empty_arenas_replay():
    """Entry graphs: every entry of an eager bf16 training step is captured on its second
    call and replayed after, also those whose arena has no bytes at the call's dims (the
    forwards, whose results back their intermediates, and the backwards with donation).
    Until 2026-12-06 such an entry allocated its empty arena inside the capture, the
    capture failed twice and the entry ran its kernels one launch at a time for the rest of
    the process (TE_RT_ENTRY_GRAPHS_LOG said: "its capture failed ... the entry allocated
    buffers while captured"). The eager loop keeps the last output alive while the next is
    allocated, so the caching allocator hands an entry's results a few addresses in turn:
    each is a key of its own (up to four graphs an entry), captured when first seen after
    the first call; from then on the calls replay, so of 16 calls at most 11 are logged."""
    r = run_python("""
import torch
import te_mlir.torch as tet
torch.manual_seed(0)
for m in (tet.LayerNormLinear(64, 192, normalization="RMSNorm", bias=False,
                              params_dtype=torch.bfloat16, device="cuda"),
          tet.LayerNormMLP(64, 256, params_dtype=torch.bfloat16, device="cuda")):
    print("plan", m.memory_plan(16))
    x = torch.randn(16, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    for _ in range(16):
        x.grad = None
        y = m(x)
        y.backward(torch.ones_like(y))
torch.cuda.synchronize()
print("ok")
""", TE_RT_ENTRY_GRAPHS_LOG="1")
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "ok" in r.stdout, out[-3000:]
    assert "'arena': 0" in out, out[-3000:]  # the case this covers: forwards with empty arenas
    log = [line for line in out.splitlines() if line.startswith("te-mlir entry graphs:")]
    assert not [line for line in log if "failed" in line or "off from now" in line], log
    for entry in ("layernorm_linear_fwd", "layernorm_linear_bwd", "layernorm_mlp_fwd",
                  "layernorm_mlp_bwd"):
        mine = [line for line in log if line.startswith(f"te-mlir entry graphs: {entry}:")]
        assert any("captured" in line for line in mine), (entry, log)
        # a replay writes no line: at least five of the 16 calls replayed
        assert len(mine) <= 11, (entry, mine)


@needs_gpu
def test_cuda_workspace_not_allocated_in_a_capture():
    """A module whose process never ran te-mlir, called first inside torch.cuda.graph:
    a clear refusal naming the capture (the workspace would be the graph's memory), not
    a crash or a graph that owns the context's workspace; after one plain call the same
    capture records and replays the module's result."""
    rc, out = _fresh_process("""
m = make()
x = torch.randn(32, 64, device="cuda", dtype=torch.bfloat16)
g = torch.cuda.CUDAGraph()
try:
    with torch.no_grad(), torch.cuda.graph(g):
        m(x)
    print("captured without a workspace")
except Exception as e:
    print("refused:", e)
with torch.no_grad():
    want = m(x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        m(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = m(x)
    g.replay()
torch.cuda.synchronize()
print("replay equal", torch.equal(y, want))
""")
    assert rc == 0, out[-3000:]
    assert "refused:" in out and "being captured" in out, out[-3000:]
    assert "replay equal True" in out, out[-3000:]


@pytest.mark.parametrize("recipe", ["bf16", "fp8-current", "nvfp4", "mxfp8"])
def test_zero_tokens(recipe):
    """An empty batch runs (empty tensors get a valid address: the runtime refuses NULL)
    and gives empty outputs and zero weight gradients; with every recipe (TE's
    zero-token sanity tests; NVFP4's quantizer and GEMM take zero rows too)."""
    dt = torch.bfloat16 if recipe in ("nvfp4", "mxfp8") else torch.float32
    m = randomize(tet.LayerNormMLP(32, 64, recipe=recipe, target="cpu", params_dtype=dt))
    x = torch.randn(0, 32, dtype=dt, requires_grad=True)
    y = m(x)
    assert y.shape == (0, 32)
    g = torch.autograd.grad(y.sum(), [x, m.fc1_weight])
    assert g[0].shape == (0, 32) and torch.equal(g[1], torch.zeros_like(g[1]))


# --------------------------------------------------------------------------- drop-in (issue #32)

class Format(__import__("enum").Enum):  # TE's recipe.Format, by member name
    E4M3 = "e4m3"
    E5M2 = "e5m2"
    HYBRID = "hybrid"


def _te_recipe(cls_name, **fields):
    """An object of TE's recipe class `cls_name` (only its name and fields are read)."""
    defaults = {
        "DelayedScaling": dict(margin=0, fp8_format=Format.HYBRID, amax_history_len=1024,
                               amax_compute_algo="max", scaling_factor_compute_algo=None,
                               reduce_amax=True, fp8_dpa=False, fp8_mha=False,
                               backward_override=None),
        "Float8CurrentScaling": dict(fp8_format=Format.HYBRID, use_power_2_scales=False,
                                     fp8_dpa=False, fp8_mha=False, backward_override=None),
        "Float8BlockScaling": dict(fp8_format=Format.E4M3, use_f32_scales=False,
                                   x_block_scaling_dim=1, w_block_scaling_dim=2,
                                   grad_block_scaling_dim=1, backward_override=None),
        "MXFP8BlockScaling": dict(margin=0, fp8_format=Format.E4M3,
                                  enable_2d_quantization=False, backward_override=None),
        "NVFP4BlockScaling": dict(disable_rht=False, disable_stochastic_rounding=False,
                                  disable_2d_quantization=False, row_scaled_activation=False,
                                  nvfp4_4over6="none", backward_override=None),
    }[cls_name]
    obj = type(cls_name, (), {})()
    for k, v in {**defaults, **fields}.items():
        setattr(obj, k, v)
    return obj


def test_te_recipe_fields_are_passed_through():
    spec = tet.nn.recipe_spec
    assert spec(_te_recipe("DelayedScaling")) == "fp8-delayed"
    r = _te_recipe("DelayedScaling", amax_history_len=16, margin=3, fp8_format=Format.E4M3,
                   amax_compute_algo="most_recent")
    assert spec(r) == ("#te.fp8_delayed<margin = 3, amax_history_len = 16, "
                       "amax_compute_algo = most_recent, format = e4m3>")
    assert spec(_te_recipe("Float8CurrentScaling", fp8_format=Format.E4M3)) == \
        "#te.fp8_current<format = e4m3>"
    assert spec(_te_recipe("Float8BlockScaling", use_f32_scales=True, x_block_scaling_dim=2,
                           w_block_scaling_dim=1)) == \
        "#te.fp8_block<x_block_dim = 2, w_block_dim = 1, fp32_scales = true>"
    assert spec(_te_recipe("NVFP4BlockScaling", disable_rht=True,
                           disable_2d_quantization=True)) == \
        "#te.nvfp4<rht = false, weight_2d = false>"
    assert spec(_te_recipe("MXFP8BlockScaling")) == "mxfp8"
    # the history length sizes the state; the margin and format change the numbers
    m = randomize(tet.LayerNormLinear(32, 32, recipe=r, target="cpu"))
    d = randomize(tet.LayerNormLinear(32, 32, recipe="fp8-delayed", target="cpu"))
    assert m.get_buffer("fp8_delayed_layernorm_linear_0_amax_history_fwd").shape[0] == 16
    assert d.get_buffer("fp8_delayed_layernorm_linear_0_amax_history_fwd").shape[0] == 1024
    assert m.function().ops.library.path != d.function().ops.library.path
    x = torch.randn(16, 32, requires_grad=True)
    for _ in range(2):
        ym, yd = m(x), d(x)
    assert not torch.equal(ym, yd)
    # under fp8_autocast too, and Float8CurrentScaling's format reaches the backward
    a = randomize(tet.LayerNormLinear(32, 32, target="cpu"))
    gs = []
    dy = torch.randn(16, 32)
    for fmt in (Format.HYBRID, Format.E4M3):
        with tet.fp8_autocast(fp8_recipe=_te_recipe("Float8CurrentScaling", fp8_format=fmt)):
            gs.append(torch.autograd.grad(a(x), x, dy)[0])
    assert not torch.equal(gs[0], gs[1])


@pytest.mark.parametrize("cls,field,value", [
    ("DelayedScaling", "amax_compute_algo", lambda h: h.max()),
    ("DelayedScaling", "backward_override", "fp8"),
    ("DelayedScaling", "scaling_factor_compute_algo", lambda *a: 1.0),
    ("DelayedScaling", "fp8_dpa", True),
    ("Float8CurrentScaling", "backward_override", "fp8"),
    ("Float8BlockScaling", "w_block_scaling_dim", 3),
    ("Float8BlockScaling", "grad_block_scaling_dim", 2),
    ("MXFP8BlockScaling", "enable_2d_quantization", True),
    ("NVFP4BlockScaling", "nvfp4_4over6", "all"),
])
def test_te_recipe_fields_refused_by_name(cls, field, value):
    with pytest.raises(te_mlir.TeMlirError, match=f"{cls}.*{field}"):
        tet.Linear(32, 32, recipe=_te_recipe(cls, **{field: value}), target="cpu")


def test_compile_warnings_reach_python(tmp_path, monkeypatch):
    """te-compile's warning (fp8-block needs dims % 128: this op runs unquantized) is a
    TeMlirWarning on the compile and on every cache hit; strict makes it an error."""
    monkeypatch.delenv("TE_MLIR_STRICT", raising=False)
    for _ in range(2):  # compiled, then from the cache
        with pytest.warns(te_mlir.TeMlirWarning, match="divisible by 128.*unquantized"):
            tet.Linear(32, 32, recipe="fp8-block", target="cpu", cache_dir=tmp_path)
    with pytest.raises(te_mlir.TeMlirError, match="divisible by 128"):
        tet.Linear(32, 32, recipe="fp8-block", target="cpu", cache_dir=tmp_path, strict=True)
    monkeypatch.setenv("TE_MLIR_STRICT", "1")
    with pytest.raises(te_mlir.TeMlirError, match="strict"):
        tet.Linear(32, 32, recipe="fp8-block", target="cpu", cache_dir=tmp_path)
    with pytest.raises(te_mlir.TeMlirError, match="strict"):  # a fresh compile too
        tet.Linear(32, 64, recipe="fp8-block", target="cpu", cache_dir=tmp_path)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an aligned module compiles without one
        tet.Linear(128, 128, recipe="fp8-block", target="cpu", cache_dir=tmp_path)


@pytest.mark.parametrize("recipe", ["mxfp8", "nvfp4"])
def test_blackwell_recipes_compile(recipe):
    """MXFP8 / NVFP4 compile for sm_100a (te-compile refuses their layout for the default
    sm_90a), on the cpu backend too, and run there."""
    m = randomize(tet.LayerNormMLP(64, 128, recipe=recipe, target="cpu",
                                   params_dtype=torch.bfloat16))  # (nvfp4's RHT: bf16)
    x = torch.randn(32, 64, dtype=torch.bfloat16, requires_grad=True)
    y = m(x)
    ref, _ = reference(m, x)
    assert _rel(y, ref[0]) <= 0.25
    y.sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()


def test_blackwell_recipes_refused_on_hopper(monkeypatch):
    m = tet.Linear(64, 64, device="cpu", target="cpu")  # bf16
    monkeypatch.setattr(te_mlir.runtime(), "select_backend", lambda target: "cuda")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: (9, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d=None: "NVIDIA H200")
    with pytest.raises(te_mlir.TeMlirError, match=r"recipe nvfp4 needs a Blackwell.*H200.*9\.0"):
        tet.Linear(64, 64, recipe="nvfp4", device="cpu")
    with tet.fp8_autocast(fp8_recipe=_te_recipe("MXFP8BlockScaling")):
        with pytest.raises(te_mlir.TeMlirError, match=r"recipe mxfp8 needs.*capability 9\.0"):
            m(torch.randn(32, 64))
