"""torch.compile(backend="te_mlir") on Hugging Face blocks (docs/torch-compile.md).

The regions are exported by te-mlir's own FX writer (fx_to_torch.py), so these tests
need no torch_mlir; the ones that ask for export="torch-mlir" say so
(test_cached_export_without_torch_mlir is SKIPPED with the reason without it). Inductor's CPU codegen is slow: each compiled
model here is compiled once (module-scoped fixtures) and shapes are tiny.

    TE_MLIR_BUILD=/path/to/build python -m pytest test/python/test_backend.py -q
"""
import contextlib
import copy
import os
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch._dynamo.testing  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import te_mlir.torch  # noqa: E402,F401  (registers the backend)  # pyflakes: used for its side effect
import te_mlir.torch.backend as teb  # noqa: E402

try:
    import torch_mlir.fx  # noqa: F401
    _NO_TORCH_MLIR = None
except Exception as e:  # noqa: BLE001
    _NO_TORCH_MLIR = f"torch_mlir is not importable ({type(e).__name__}: {e})"

needs_torch_mlir = pytest.mark.skipif(_NO_TORCH_MLIR is not None,
                                      reason=str(_NO_TORCH_MLIR))

HIDDEN, INTER, HEADS = 32, 64, 4


def _perturb(m, seed=1):
    """Norm weights 1 and biases 0 made non-uniform, so a swapped operand shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in m.parameters():
            f = p.detach().reshape(-1)
            if f.numel() and bool((f == f[0]).all()):
                p.add_((torch.randn(p.shape, generator=g) * 0.1).to(p.dtype))
    return m


class LlamaLayer(nn.Module):
    """LlamaDecoderLayer with its rotary embedding: x [b, s, h] -> [b, s, h]."""

    def __init__(self):
        super().__init__()
        from transformers import LlamaConfig
        from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

        cfg = LlamaConfig(hidden_size=HIDDEN, intermediate_size=INTER, num_attention_heads=HEADS,
                          num_key_value_heads=2, num_hidden_layers=1, vocab_size=64,
                          max_position_embeddings=64, hidden_act="silu", rms_norm_eps=1e-6)
        cfg._attn_implementation = "sdpa"
        self.layer = LlamaDecoderLayer(cfg, layer_idx=0)
        self.rope = LlamaRotaryEmbedding(cfg)

    def forward(self, x):
        pos = torch.arange(x.shape[1], device=x.device).unsqueeze(0).expand(x.shape[0], -1)
        cos, sin = self.rope(x, pos)
        out = self.layer(x, attention_mask=None, position_ids=pos, position_embeddings=(cos, sin))
        return out[0] if isinstance(out, tuple) else out


class GPT2Layer(nn.Module):
    def __init__(self):
        super().__init__()
        from transformers import GPT2Config
        from transformers.models.gpt2.modeling_gpt2 import GPT2Block

        cfg = GPT2Config(n_embd=HIDDEN, n_layer=1, n_head=HEADS, n_inner=INTER, vocab_size=64,
                         n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                         bos_token_id=0, eos_token_id=1)
        cfg._attn_implementation = "sdpa"
        self.block = GPT2Block(cfg, layer_idx=0)

    def forward(self, x):
        out = self.block(x)
        return out[0] if isinstance(out, tuple) else out


# LayerNorm -> fc1 -> x * sigmoid(1.7 x) -> fc2: not an activation TE fuses (quick GELU is
# 1.702); the importer's negative of the same name in test/Integration/hf/hf_blocks.py.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "test" / "Integration" / "hf"))
from hf_blocks import _NegQuickGeluConst as OddActMLP  # noqa: E402


def _compile(model, **options):
    teb.clear_reports()
    return torch.compile(model, backend="te_mlir", fullgraph=True, options=options)


def _run(model, x, dy):
    """Output and the gradients of x and every parameter."""
    inner = getattr(model, "_orig_mod", model)
    inner.zero_grad(set_to_none=True)
    x = x.detach().clone().requires_grad_(True)
    torch._dynamo.mark_dynamic(x, 0)
    torch._dynamo.mark_dynamic(x, 1)
    y = model(x)
    y.backward(dy)
    return y.detach(), x.grad, {n: p.grad for n, p in inner.named_parameters()}


def _check_same(got, want, rtol, atol):
    y, dx, grads = got
    ye, dxe, gradse = want
    torch.testing.assert_close(y, ye, rtol=rtol, atol=atol, msg="forward output")
    torch.testing.assert_close(dx, dxe, rtol=rtol, atol=atol, msg="grad of the input")
    assert set(grads) == set(gradse)
    for n in gradse:
        assert grads[n] is not None, f"no gradient for {n}"
        torch.testing.assert_close(grads[n], gradse[n], rtol=rtol, atol=atol,
                                   msg=lambda m, n=n: f"grad of {n}: {m}")


class _Compiled:
    """One model compiled once (dynamic batch and sequence), with its eager twin."""

    def __init__(self, cls, dtype=torch.float32):
        torch.manual_seed(0)
        self.eager = _perturb(cls()).to(dtype)
        self.model = copy.deepcopy(self.eager)
        self.counter = torch._dynamo.testing.CompileCounterWithBackend("te_mlir")
        teb.clear_reports()
        self.compiled = torch.compile(self.model, backend=self.counter, fullgraph=True)
        self.dtype = dtype
        self.calls = []

    def inputs(self, b, s, seed=0):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(b, s, HIDDEN, generator=g).to(self.dtype)
        dy = torch.randn(b, s, HIDDEN, generator=g).to(self.dtype)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(x, 1)
        return x, dy

    def step(self, b, s, seed=0):
        x, dy = self.inputs(b, s, seed)
        got = _run(self.compiled, x, dy)
        if not self.calls:
            self.report = teb.last_report()
        self.calls.append((b, s))
        return got, _run(self.eager, x, dy)


@pytest.fixture(scope="module")
def llama():
    pytest.importorskip("transformers")
    return _Compiled(LlamaLayer)


@pytest.fixture(scope="module")
def gpt2():
    pytest.importorskip("transformers")
    return _Compiled(GPT2Layer)


@contextlib.contextmanager
def _entries_run():
    """The names of the te-mlir entries run inside the block, as torch.profiler shows
    them: each call is its op, te_mlir_<sha12>::<entry>, through the dispatcher."""
    ran = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        yield ran
    ran.extend(e.name.split("::", 1)[1] for e in prof.events()
               if e.name.startswith("te_mlir_") and "::" in e.name)


def test_llama_layer_regions_and_numerics(llama, monkeypatch):
    with _entries_run() as ran:
        got, want = llama.step(2, 6)
    # the compiled forward and backward ran the libraries' training entries
    assert sorted(set(ran)) == ["layernorm_linear_bwd", "layernorm_linear_fwd",
                                "layernorm_mlp_bwd", "layernorm_mlp_fwd"], ran
    r = llama.report
    assert [g.kind for g in r.candidates] == ["layernorm_linear", "layernorm_mlp"], r.summary()
    assert len(r.blocks_taken) == 2, r.summary()
    qkv, mlp = r.candidates
    assert "q_proj" in qkv.where and "v_proj" in qkv.where and len(qkv.outputs) == 3
    assert "gate_proj" in mlp.where and "down_proj" in mlp.where
    _check_same(got, want, rtol=1e-4, atol=1e-4)


def test_gpt2_block_regions_and_numerics(gpt2):
    got, want = gpt2.step(2, 6)
    r = gpt2.report
    assert [g.kind for g in r.candidates] == ["layernorm_linear", "layernorm_mlp"], r.summary()
    assert len(r.blocks_taken) == 2, r.summary()
    assert "c_attn" in r.candidates[0].where and "c_fc" in r.candidates[1].where
    _check_same(got, want, rtol=1e-4, atol=1e-4)


def test_dynamic_tokens_one_graph(llama):
    # conftest resets Dynamo after every test: the first call here compiles (again)
    start = llama.counter.frame_count
    for b, s in [(2, 6), (3, 5), (4, 9), (2, 11)]:  # sizes >= 2: Dynamo specializes 0 and 1
        got, want = llama.step(b, s, seed=b * 100 + s)
        _check_same(got, want, rtol=1e-4, atol=1e-4)
    n = llama.counter.frame_count - start
    assert n == 1, f"{n} graphs for 4 shapes"
    # the exported regions have dynamic leading dims: one library serves every size
    assert all(g.library for g in llama.report.blocks_taken)


@pytest.mark.parametrize("which", ["llama", "gpt2"])
def test_fullgraph_no_graph_breaks(which, request):
    c = request.getfixturevalue(which)
    x, _ = c.inputs(2, 6)
    e = torch._dynamo.explain(c.model)(x)
    assert e.graph_count == 1 and e.graph_break_count == 0, e
    # the backend itself: one call per compiled graph, no break counted while it ran
    assert not torch._dynamo.utils.counters["graph_break"], dict(torch._dynamo.utils.counters["graph_break"])


def test_refused_activation_falls_back_with_reason():
    torch.manual_seed(0)
    eager = _perturb(OddActMLP())
    model = copy.deepcopy(eager)
    c = _compile(model)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 4, HIDDEN, generator=g)
    dy = torch.randn(2, 4, HIDDEN, generator=g)
    got = _run(c, x, dy)
    r = teb.last_report()
    assert len(r.candidates) == 1 and r.candidates[0].kind == "layernorm_mlp", r.summary()
    mlp = r.candidates[0]
    assert mlp.status == "refused"
    assert "not an activation TransformerEngine fuses" in mlp.reason, mlp.reason
    assert "quick-gelu" in mlp.reason or "quick" in mlp.reason, mlp.reason
    # the norm + FC1 is still a LayerNormLinear; the activation and FC2 stay with Inductor
    assert [s.kind for s in r.blocks_split] == ["layernorm_mlp"]
    split = [s for s in r.regions if s.split_of is mlp]
    assert len(split) == 1 and split[0].status == "taken" and split[0].kind == "layernorm_linear"
    _check_same(got, _run(eager, x, dy), rtol=1e-4, atol=1e-4)


def test_llama_trains_like_eager_20_steps():
    """A 2-layer LlamaForCausalLM (bf16), 20 AdamW steps through the backend beside an
    eager copy on the same batches: the losses agree at every step."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(hidden_size=HIDDEN, intermediate_size=INTER, num_attention_heads=HEADS,
                      num_key_value_heads=HEADS, num_hidden_layers=2, vocab_size=128,
                      max_position_embeddings=64, tie_word_embeddings=False)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    base = LlamaForCausalLM(cfg).to(torch.bfloat16)

    class Loss(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids):
            logits = self.m(input_ids=ids, use_cache=False).logits
            return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                   ids[:, 1:].reshape(-1))

    eager, mine = Loss(copy.deepcopy(base)), Loss(base)
    c = _compile(mine)
    oe = torch.optim.AdamW(eager.parameters(), lr=1e-3)
    om = torch.optim.AdamW(mine.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1)
    diffs = []
    for step in range(20):
        ids = torch.randint(0, 128, (2, 8 + (step % 2) * 4), generator=g)
        torch._dynamo.mark_dynamic(ids, 1)
        losses = []
        for m, o in ((eager, oe), (c, om)):
            loss = m(ids)
            loss.backward()
            o.step()
            o.zero_grad(set_to_none=True)
            losses.append(loss.item())
        diffs.append(abs(losses[0] - losses[1]))
        assert diffs[-1] <= 1e-2 + 1e-3 * abs(losses[0]), (step, losses)
    reps = teb.reports()
    assert len(reps) == 1, [r.summary() for r in reps]
    assert len(reps[0].blocks_taken) == 5, reps[0].summary()  # 2 x (qkv, mlp) + norm/lm_head


def test_without_torch_mlir_falls_back(monkeypatch):
    """export="torch-mlir" without torch_mlir (the H200 image): a warning, the report says
    why, the whole graph is Inductor's and the result is eager's. Runs with or without
    torch_mlir."""
    monkeypatch.setattr(teb, "_torch_mlir_missing", lambda: "torch_mlir is not importable (test)")
    torch.manual_seed(0)
    m = nn.Sequential(nn.LayerNorm(24), nn.Linear(24, 40))  # never exported: no cached export
    c = _compile(m, inductor=False, export="torch-mlir")  # the FX writer needs no torch_mlir
    x = torch.randn(2, 4, 24)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = c(x)
    assert any("torch_mlir is not importable" in str(i.message) for i in w), [str(i.message) for i in w]
    r = teb.last_report()
    assert "whole graph runs on Inductor" in r.fallback and not r.taken
    assert "no cached export" in r.regions[0].reason
    torch.testing.assert_close(y, m(x))


@needs_torch_mlir
def test_cached_export_without_torch_mlir(monkeypatch):
    """A region exported once (here, with torch_mlir) compiles from the export cache when
    torch_mlir is missing (a machine without the wheel, sharing TE_MLIR_CACHE)."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.LayerNorm(HIDDEN), nn.Linear(HIDDEN, 48))
    x = torch.randn(2, 4, HIDDEN)
    _compile(m, inductor=False, export="torch-mlir")(x)
    assert len(teb.last_report().taken) == 1
    torch._dynamo.reset()
    teb._exports.clear()  # the disk cache only
    monkeypatch.setattr(teb, "_torch_mlir_missing", lambda: "torch_mlir is not importable (test)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = _compile(m, inductor=False, export="torch-mlir")(x)
    r = teb.last_report()
    assert len(r.taken) == 1 and "from cached exports" in r.fallback, r.summary()
    torch.testing.assert_close(y, m(x), rtol=1e-5, atol=1e-5)


def test_unknown_option_is_an_error():
    with pytest.raises(ValueError, match="unknown option"):
        teb.configure(no_such_option=1)


def _delayed_pair(kind):
    """A torch block (LayerNorm + Linear, or + tanh GELU + Linear) and te_mlir's module of
    the same weights, f32 parameters (the CPU backend)."""
    import te_mlir.torch as tet
    torch.manual_seed(0)
    if kind == "linear":
        ref = _perturb(nn.Sequential(nn.LayerNorm(HIDDEN), nn.Linear(HIDDEN, 64)))
        mod = tet.LayerNormLinear(HIDDEN, 64, eps=1e-5, params_dtype=torch.float32,
                                  device="cpu", target="cpu")
        names = {"layer_norm_weight": "0.weight", "layer_norm_bias": "0.bias",
                 "weight": "1.weight", "bias": "1.bias"}
    else:
        ref = _perturb(nn.Sequential(nn.LayerNorm(HIDDEN), nn.Linear(HIDDEN, 64),
                                     nn.GELU(approximate="tanh"), nn.Linear(64, HIDDEN)))
        mod = tet.LayerNormMLP(HIDDEN, 64, eps=1e-5, activation="gelu",
                               params_dtype=torch.float32, device="cpu", target="cpu")
        names = {"layer_norm_weight": "0.weight", "layer_norm_bias": "0.bias",
                 "fc1_weight": "1.weight", "fc1_bias": "1.bias",
                 "fc2_weight": "3.weight", "fc2_bias": "3.bias"}
    ps = dict(ref.named_parameters())
    with torch.no_grad():
        for a, b in names.items():
            getattr(mod, a).copy_(ps[b])
    return ref, mod, names


@pytest.mark.parametrize("kind,inductor,checkpoint", [("linear", True, False),
                                                     ("mlp", False, False),
                                                     ("mlp", True, True)])
def test_fp8_delayed_regions_carry_their_state(kind, inductor, checkpoint):
    """fp8-delayed: a region's recipe state (amax histories and scales, forward and
    backward) lives in buffers of the graph, updated by each step's forward (copied
    back) and backward (in place): four steps at two token counts (one dynamic graph)
    give, bit for bit, the outputs, input and parameter gradients and the state of
    te_mlir's module run eagerly under fp8_autocast(DelayedScaling); with
    checkpoint=True too (the region's recompute quantizes with the scales its forward
    ran with, not with the state the forward's copy-back updated)."""
    import te_mlir.torch as tet
    ref, mod, names = _delayed_pair(kind)
    c = _compile(ref, inductor=inductor, recipe="fp8-delayed", checkpoint=checkpoint)
    g = torch.Generator().manual_seed(3)
    for t in (16, 24, 16, 24):
        x = torch.randn(t, HIDDEN, generator=g)
        xa, xb = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
        torch._dynamo.mark_dynamic(xa, 0)
        ya = c(xa)
        ya.square().sum().backward()
        with tet.fp8_autocast(enabled=True, fp8_recipe="fp8-delayed"):
            yb = mod(xb)
        yb.square().sum().backward()
        assert torch.equal(ya, yb) and torch.equal(xa.grad, xb.grad)
        ps = dict(ref.named_parameters())
        for a, b in names.items():
            assert torch.equal(ps[b].grad, getattr(mod, a).grad), (a, t)
    r = teb.last_report()
    (region,) = r.taken
    assert "recipe-state buffers" in region.describe()
    theirs = {n[len("fp8_delayed_"):]: v for n, v in mod.named_buffers()
              if n.startswith("fp8_delayed_")}
    assert len(region.state) == len(theirs) == 4
    kinds = ("amax_history_fwd", "scales_fwd", "amax_history_bwd", "scales_bwd")
    for n, v in region.state.items():
        assert n.startswith("_te_mlir_state_") and n.count("layernorm_") == 1, n
        (kind,) = [kd for kd in kinds if n.endswith(kd)]
        (k,) = [k for k in theirs if k.endswith(kind)]
        assert torch.equal(v, theirs[k]), n
        if "amax_history" in n:
            assert v.abs().sum() > 0, n  # the steps recorded their amaxes
    assert any((v != 1).any() for n, v in region.state.items() if "scales" in n)


def test_dynamic_true_one_graph():
    """dynamic=True: Dynamo lifts the norms' float eps to graph inputs (.item()); the
    backend bakes it and every shape runs in one graph (surgery only, no Inductor)."""
    torch.manual_seed(0)
    eager = _perturb(LlamaLayer())
    model = copy.deepcopy(eager)
    counter = torch._dynamo.testing.CompileCounterWithBackend("te_mlir")
    teb.configure(inductor=False)
    try:
        c = torch.compile(model, backend=counter, fullgraph=True, dynamic=True)
        for b, s in [(2, 6), (3, 9)]:
            x = torch.randn(b, s, HIDDEN)
            torch.testing.assert_close(c(x), eager(x), rtol=1e-4, atol=1e-4)
    finally:
        teb.configure(inductor=True)
    assert counter.frame_count == 1
    assert len(teb.last_report().blocks_taken) == 2, teb.last_report().summary()
