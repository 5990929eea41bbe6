"""Donation of the saved tensors to the backward entry (te_module_run_donated): the
eager backward of a module hands `<fn>_bwd` the buffers of the saved forward
intermediates only its autograd node holds, unless the graph is kept; the gradients
are the same bits, the arena it allocates shrinks, the saved buffers are written."""
import pytest
import torch

import te_mlir.torch as tet
from te_mlir._abi import FEED_INPUT, FEED_RESULT, TeMlirError
from te_mlir.torch.ops import SMALL_ARENA_BYTES
from conftest import needs_gpu
from test_modules import gpu_models, randomize


def _mlp(dtype=torch.float32, activation="gelu"):
    m = tet.LayerNormMLP(32, 64, activation=activation, params_dtype=dtype, target="cpu")
    return randomize(m)


def _step(m, x, dy, retain):
    """fwd + bwd of `m` on x; the gradients of x and the parameters, and (pack hook)
    each saved tensor with a copy of it taken when it was saved."""
    saved = []

    def pack(t):
        saved.append((t, t.detach().clone()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        xx = x.detach().clone().requires_grad_()
        y = m(xx)
    params = list(m.parameters())
    grads = torch.autograd.grad(y, [xx, *params], dy, retain_graph=retain)
    return grads, saved


def _changed(saved):
    return sum(not torch.equal(t, copy) for t, copy in saved)


@pytest.mark.parametrize("activation,dtype", [("gelu", torch.float32),
                                              ("gelu", torch.bfloat16),
                                              ("swiglu", torch.bfloat16)])
def test_donated_backward_is_bit_identical(activation, dtype):
    m = _mlp(dtype=dtype, activation=activation)
    fn = m.function()
    ops, lib = fn.ops, fn.ops.library
    bwd = lib.entry("layernorm_mlp_bwd")
    assert bwd.donatable, "the backward has donatable saved arguments"
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(24, 32, generator=gen).to(dtype)
    dy = torch.randn(24, 32, generator=gen).to(dtype)
    # retain_graph: nothing donated, the saved tensors come back as they were saved
    kept, saved_kept = _step(m, x, dy, retain=True)
    assert _changed(saved_kept) == 0
    before = [p.detach().clone() for p in m.parameters()]
    # the graph freed by the backward: the saved intermediates are donated (written)
    got, saved = _step(m, x, dy, retain=False)
    assert _changed(saved) > 0
    assert ops.donated_bytes("layernorm_mlp_bwd") > 0
    for a, b in zip(kept, got):
        assert torch.equal(a, b)
    # only the saved forward intermediates are ever written: never a parameter
    for p, b in zip(m.parameters(), before):
        assert torch.equal(p, b)
    assert _changed(saved) <= len(bwd.donatable)


def test_arena_shrinks_by_what_is_donated():
    m = _mlp(dtype=torch.bfloat16)
    lib = m.function().ops.library
    bwd = lib.entry("layernorm_mlp_bwd")
    dims = [24] * bwd.num_dims
    full, donated = bwd.arena_bytes(dims), bwd.arena_bytes(dims, bwd.donatable)
    assert donated < full
    assert m.function().ops.donated_bytes("layernorm_mlp_bwd") in (0, full - donated)
    # every intermediate of this backward fits in a saved tensor dead by then (each wgrad
    # runs before its dgrad): with everything donated no arena at all, at any token
    # count (the module info's static figure, though the tokens are dynamic)
    assert donated == 0 and bwd.arena_donated == 0


def test_retain_graph_twice_then_free():
    m = _mlp(dtype=torch.bfloat16)
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(16, 32, generator=gen).to(torch.bfloat16).requires_grad_()
    dy = torch.randn(16, 32, generator=gen).to(torch.bfloat16)
    y = m(x)
    y.backward(dy, retain_graph=True)
    g1 = x.grad.clone()
    y.backward(dy, retain_graph=True)
    assert torch.equal(x.grad, g1 + g1)
    # the last backward frees the graph (and donates): still the same gradient
    y.backward(dy)
    assert torch.equal(x.grad, g1 + g1 + g1)
    with pytest.raises(RuntimeError, match="second time|already been freed"):
        y.backward(dy)


def test_entry_run_donated_matches_and_refuses_non_donatable():
    m = _mlp(dtype=torch.float32)
    ops = m.function().ops
    lib = ops.library
    fwd, bwd = lib.entry("layernorm_mlp_fwd"), lib.entry("layernorm_mlp_bwd")
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(8, 32, generator=gen)
    fargs = [x] + [p.detach() for p in m.parameters()]
    outs = ops.op("layernorm_mlp_fwd")(*fargs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    step = ops.step("layernorm_mlp_fwd")
    dy = torch.randn(outs[0].shape, generator=gen)
    bargs = [fargs[k] if kind == FEED_INPUT else outs[k] if kind == FEED_RESULT else dy
             for kind, k in step.feeds]
    op = ops.op(bwd.name)
    want = op(*[a.clone() for a in bargs])
    op(*[a.clone() for a in bargs])  # (a call of this signature went through)
    own = [a.clone() for a in bargs]
    ops.donate_next(bwd.name, bwd.donatable)
    try:
        got = op(*own)
    finally:
        ops.donate_next(bwd.name, [])
    for a, b in zip(want, got):
        assert torch.equal(a, b)
    assert any(not torch.equal(own[j], bargs[j]) for j in bwd.donatable)
    assert all(torch.equal(own[j], bargs[j]) for j in range(len(bargs))
               if j not in bwd.donatable)
    # the module client refuses to donate what is not donatable, before running
    not_donatable = next(j for j in range(len(bargs)) if j not in bwd.donatable)
    with pytest.raises(TeMlirError, match="not donatable"):
        bwd.arena_bytes([8] * bwd.num_dims, [not_donatable])


def test_nothing_donated_under_torch_compile():
    # a library of its own (a shape no other test uses): its counter starts at 0
    m = randomize(tet.LayerNormMLP(48, 96, params_dtype=torch.bfloat16, target="cpu"))
    ops = m.function().ops
    gen = torch.Generator().manual_seed(13)
    x = torch.randn(16, 48, generator=gen).to(torch.bfloat16)
    dy = torch.randn(16, 48, generator=gen).to(torch.bfloat16)
    compiled = torch.compile(m, backend="aot_eager", fullgraph=True)

    def run(model):
        xx = x.clone().requires_grad_()
        y = model(xx)
        return torch.autograd.grad(y, [xx, *m.parameters()], dy)

    got = run(compiled)
    assert ops.donated_bytes("layernorm_mlp_bwd") == 0
    # the same step in eager donates, with the same gradients
    want, _ = _step(m, x, dy, retain=False)
    assert ops.donated_bytes("layernorm_mlp_bwd") > 0
    for a, b in zip(got, want):
        assert torch.equal(a, b)


def test_small_arenas_come_from_the_region():
    """The C++ kernel takes an arena of at most SMALL_ARENA_BYTES from the region its
    context keeps, a larger one from torch's allocator (cpu here; on CUDA the region sits
    after the workspace); a step repeated on the region gives the same bits (what an
    earlier call left there is never read)."""
    m = randomize(tet.LayerNormMLP(64, 128, activation="gelu", params_dtype=torch.bfloat16,
                                   recipe="fp8-current", target="cpu"))
    fn = m.function()
    ops, bwd = fn.ops, fn.ops.library.entry(fn.name + "_bwd")
    assert ops.kernel == "c++"  # (the ctypes fallback has no region)
    gen = torch.Generator().manual_seed(3)
    for tokens, region in ((512, True), (16384, False)):
        assert (bwd.arena_bytes([tokens]) <= SMALL_ARENA_BYTES) == region
        x = torch.randn(tokens, 64, generator=gen).to(torch.bfloat16)
        dy = torch.randn(tokens, 64, generator=gen).to(torch.bfloat16)
        before = ops.arena_calls(bwd.name)
        got, _ = _step(m, x, dy, retain=True)  # retained: nothing donated
        allocated, from_region = (a - b for a, b in zip(ops.arena_calls(bwd.name), before))
        assert (allocated, from_region) == ((0, 1) if region else (1, 0)), tokens
        again, _ = _step(m, x, dy, retain=True)
        for a, b in zip(got, again):
            assert torch.equal(a, b)


@needs_gpu
def test_cuda_donation_lowers_the_peak():
    """On CUDA (the C++ kernel) a signature donates once a call of it went through (the
    workspace settled): the retained step first, then the freed one donates, with the
    same gradients and a lower peak (no arena for what went into the saved tensors). At
    16384 tokens the arena is above the context's small-arena region, so it comes from
    torch's allocator on every call."""
    m = randomize(gpu_models("cuda")["mlp_bf16"])
    ops = m.function().ops
    gen = torch.Generator().manual_seed(17)
    x = torch.randn(16384, 64, generator=gen).to(torch.bfloat16).cuda()
    dy = torch.randn(16384, 64, generator=gen).to(torch.bfloat16).cuda()
    peaks = []
    for retain in (True, True, False):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        grads, saved = _step(m, x, dy, retain=retain)
        torch.cuda.synchronize()
        peaks.append(torch.cuda.max_memory_allocated())
        if retain:
            kept = grads
            assert _changed(saved) == 0
    assert _changed(saved) > 0 and ops.donated_bytes("layernorm_mlp_bwd") > 0
    for a, b in zip(kept, grads):
        assert torch.equal(a, b)
    assert peaks[2] < peaks[1]


@needs_gpu
@pytest.mark.parametrize("tokens", [4096, 16384])
@pytest.mark.parametrize("recipe", [None, "fp8-current"], ids=["bf16", "fp8_current"])
def test_cuda_backward_peak_is_the_plans(recipe, tokens):
    """The plan's peak checked against torch's allocator (issue 34): what the eager
    backward adds to the allocated memory at its peak is its entry's results and its
    arena as the plan sizes it (donated as the eager backward donates; intermediates
    lent a result's buffer cost nothing more), and nothing else: the bytes requested from
    the caching allocator (its `requested_bytes` statistics; the blocks it hands out are
    rounded up, to 512 bytes, or to a whole cached 2 MiB block it will not split when
    less than 1 MiB would remain). An arena of at most SMALL_ARENA_BYTES comes from the
    region the op layer's context keeps (4096 tokens): then the results alone."""
    m = randomize(gpu_models("cuda")["mlp_bf16" if recipe is None else "mlp_bf16_fp8_current"])
    fn = m.function()
    ops, bwd = fn.ops, fn.ops.library.entry(fn.name + "_bwd")
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(tokens, 64, generator=gen).to(torch.bfloat16).cuda().requires_grad_()
    dy = torch.randn(tokens, 64, generator=gen).to(torch.bfloat16).cuda()
    for _ in range(3):  # the workspace settles, then the signature donates
        m.zero_grad(set_to_none=True)
        x.grad = None
        m(x).backward(dy)
    m.zero_grad(set_to_none=True)
    x.grad = None
    y = m(x)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_stats()["requested_bytes.all.current"]
    torch.cuda.reset_peak_memory_stats()
    y.backward(dy)
    torch.cuda.synchronize()
    rise = torch.cuda.memory_stats()["requested_bytes.all.peak"] - base
    results = sum(r.bytes_at([tokens]) for r in bwd.results)
    donated = bwd.donatable if ops.donated_bytes(bwd.name) > 0 else None
    arena = bwd.arena_bytes([tokens], donated)
    if recipe:  # (the FP8 plan's arena, donated: 1.5 MiB at 4096 tokens, 6 MiB at 16384)
        assert (arena <= SMALL_ARENA_BYTES) == (tokens == 4096), arena
    expected = results + (arena if arena > SMALL_ARENA_BYTES else 0)
    assert rise == expected, (f"backward rise {rise} bytes; the plan's: results {results} + "
                              f"arena {arena} (donated: {donated is not None})")


def test_memory_plan_reports_the_plans():
    """Module.memory_plan(tokens): the bytes the forward leaves for the backward (the
    saved ln_out's columnwise copy, the FP8 weight, the statistics: TE's layouts), and
    each entry's results, arena and peak. An FP8 LayerNormLinear's backward lends its
    dgrad output the weight gradient's buffer while it fits (24 tokens: 24 x 64 bf16
    <= 32 x 64), so its arena is the quantized dy's alone; at 48 tokens it is not."""
    m = tet.LayerNormLinear(64, 32, params_dtype=torch.bfloat16, target="cpu",
                            recipe="fp8-current")
    p24, p48 = m.memory_plan(24), m.memory_plan(48)
    r256 = lambda n: (n + 255) // 256 * 256
    for t, p in ((24, p24), (48, p48)):
        ln_out = 256 + r256(64 * t)            # scale_inv, the transpose
        weight = 256 + 2 * r256(32 * 64)       # scale_inv, transpose and data
        assert p["held"] == ln_out + weight + 2 * 4 * t  # + mu, rsigma (fp32)
        for e in ("forward", "backward"):
            assert p[e]["peak"] == p[e]["results"] + p[e]["arena"]
        # dx, dgamma, dbeta, dW, dbias (bf16)
        assert p["backward"]["results"] == 2 * (t * 64 + 64 + 64 + 32 * 64 + 32)
    dy_q = lambda t: 256 + 2 * r256(32 * t)     # both copies of the quantized dy
    assert dy_q(24) <= p24["backward"]["arena"] < dy_q(24) + 256 * 2
    assert p48["backward"]["arena"] >= dy_q(48) + 48 * 64 * 2
