"""The backend's own region export (te_mlir.torch.fx_to_torch, docs/torch-compile.md):
torch-dialect text written from a region's FX graph, no torch-mlir needed.

- Every region the backend finds in the suite's models (test_backend.py's LLaMA layer,
  GPT-2 block and LlamaForCausalLM, and the 20 architectures of
  test/Integration/hf/hf_blocks.py, f32 and bf16) is written, and te-import-torch
  raises the written text to the same te IR as torch-mlir's export of the region
  (needs torch_mlir for the comparison; the import alone runs without it).
- GPT-2 under torch.compile(dynamic=True) with torch_mlir unimportable: both blocks
  taken (its gelu_new constant sqrt(2/math.pi) is computed in the graph from the lifted
  math.pi and evaluated), results as eager's.
- An op the writer does not write is refused with its name; the MLP's norm + FC1 is
  still taken.

    TE_MLIR_BUILD=/path/to/build python -m pytest test/python/test_fx_export.py -q
"""
import copy
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "test" / "python"))
sys.path.insert(0, str(ROOT / "test" / "Integration" / "hf"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import te_mlir  # noqa: E402
import te_mlir.torch  # noqa: E402,F401  (registers the backend)
import te_mlir.torch.backend as teb  # noqa: E402
from te_mlir.torch.fx_to_torch import region_text  # noqa: E402
from te_mlir.torch.matcher import find_regions  # noqa: E402
from te_mlir.torch.region_export import Refused, build_region_module, export_region  # noqa: E402

pytest.importorskip("transformers")
import hf_blocks  # noqa: E402
from test_backend import HIDDEN, GPT2Layer, LlamaLayer, _check_same, _perturb, _run  # noqa: E402

try:
    import torch_mlir.fx  # noqa: F401
    _NO_TORCH_MLIR = None
except Exception as e:  # noqa: BLE001
    _NO_TORCH_MLIR = f"torch_mlir is not importable ({type(e).__name__}: {e})"


def _te_opt_import(text: str) -> str:
    """te-opt --te-import-torch of the text (te-compile's import, strict)."""
    te_opt = te_mlir.find_build("bin/te-opt") / "bin" / "te-opt"
    p = subprocess.run([str(te_opt), "--te-import-torch"], input=text, capture_output=True, text=True)
    assert p.returncode == 0, f"te-import-torch failed:\n{p.stderr}\n--- text:\n{text}"
    return p.stdout


def _regions(model, x, dynamic=None):
    """[(region, module, ext, dyn)] of the graph Dynamo gives for model(x): batch and
    sequence dims dynamic (mark_dynamic), or dynamic=True."""
    got = []

    def backend(gm, example_inputs):
        for r in find_regions(gm):
            mod, ext, dyn = build_region_module(gm, r, example_inputs)
            got.append((r, mod, ext, dyn))
        return gm.forward

    torch._dynamo.reset()
    if dynamic is None:
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(x, 1)
    with torch.no_grad():
        torch.compile(model, backend=backend, fullgraph=True, dynamic=dynamic)(x)
    return got


class _LlamaLM(nn.Module):
    """LlamaForCausalLM, 1 layer: the final norm + lm_head region beside the layer's."""

    def __init__(self):
        super().__init__()
        from transformers import LlamaConfig, LlamaForCausalLM

        cfg = LlamaConfig(hidden_size=HIDDEN, intermediate_size=64, num_attention_heads=4,
                          num_key_value_heads=4, num_hidden_layers=1, vocab_size=128,
                          max_position_embeddings=64, tie_word_embeddings=False)
        cfg._attn_implementation = "sdpa"
        self.m = LlamaForCausalLM(cfg)

    def forward(self, ids):
        return self.m(input_ids=ids, use_cache=False).logits


# the suite's models: (name, builder, input, dynamic, the region kinds the backend finds)
def _suite_cases():
    x = lambda dt: torch.randn(2, 6, HIDDEN).to(dt)  # noqa: E731
    two = ["layernorm_linear", "layernorm_mlp"]
    cases = []
    for dt, tag in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        for dyn in (None, True):
            d = "_dynamic" if dyn else ""
            cases.append((f"llama{d}_{tag}", lambda dt=dt: LlamaLayer().to(dt), lambda dt=dt: x(dt), dyn, two))
            cases.append((f"gpt2{d}_{tag}", lambda dt=dt: GPT2Layer().to(dt), lambda dt=dt: x(dt), dyn, two))
    cases.append(("llama_lm_f32", _LlamaLM, lambda: torch.randint(0, 128, (2, 8)), None,
                  two + ["layernorm_linear"]))
    cases.append(("layernorm_linear_f32", lambda: nn.Sequential(nn.LayerNorm(HIDDEN), nn.Linear(HIDDEN, 48)),
                  lambda: x(torch.float32), None, ["layernorm_linear"]))
    return cases


_SUITE = _suite_cases()
_HF = [(a, b, d) for a in hf_blocks.ARCHS for b in ("mlp", "linear") for d in ("f32", "bf16")]


def _suite_regions(case):
    name, build, inp, dyn, kinds = case
    torch.manual_seed(0)
    got = _regions(_perturb(build()).eval(), inp(), dyn)
    assert [r.kind for r, *_ in got] == kinds, (name, [r.kind for r, *_ in got])
    return got


@pytest.mark.parametrize("case", _SUITE, ids=[c[0] for c in _SUITE])
def test_written_text_imports(case):
    """Runs without torch_mlir: every region of the suite's models is written, and
    te-import-torch raises all of it (strict: nothing left in the torch dialect)."""
    for r, mod, ext, dyn in _suite_regions(case):
        text = region_text(mod, ext, dyn, r.kind)
        te = _te_opt_import(text)
        assert f"te.{r.kind}" in te, te
        assert "torch.aten" not in te, te
        # the batch and sequence dims of the input are `?` (one library serves every size)
        assert sorted(dyn) == [0, 1], dyn
        assert f"%arg0: !torch.vtensor<[?,?,{HIDDEN}]," in text, text


@pytest.mark.skipif(_NO_TORCH_MLIR is not None, reason=str(_NO_TORCH_MLIR))
@pytest.mark.parametrize("case", _SUITE, ids=[c[0] for c in _SUITE])
def test_suite_regions_import_as_torch_mlir(case):
    for r, mod, ext, dyn in _suite_regions(case):
        mine = _te_opt_import(region_text(mod, ext, dyn, r.kind))
        theirs = _te_opt_import(export_region(mod, ext, dyn, r.kind, r.outputs))
        assert mine == theirs, f"{case[0]} {r.kind}:\n--- written:\n{mine}\n--- torch-mlir:\n{theirs}"


@pytest.mark.skipif(_NO_TORCH_MLIR is not None, reason=str(_NO_TORCH_MLIR))
@pytest.mark.parametrize("arch,block,dtype", _HF, ids=[f"{a}_{b}_{d}" for a, b, d in _HF])
def test_hf_regions_import_as_torch_mlir(arch, block, dtype):
    """The 20 architectures of hf_blocks (docs/models.md): the same te IR from the
    written text as from torch-mlir's export, for every region found."""
    m = hf_blocks.build_block(arch, block, dtype)
    got = _regions(m, torch.randn(2, 4, hf_blocks.HIDDEN).to(hf_blocks.DTYPES[dtype]))
    if arch == "olmo2":  # an activation between linears with no norm before them
        assert not got
        return
    assert got, f"{arch} {block}: no region"
    for r, mod, ext, dyn in got:
        mine = _te_opt_import(region_text(mod, ext, dyn, r.kind))
        theirs = _te_opt_import(export_region(mod, ext, dyn, r.kind, r.outputs))
        assert mine == theirs, f"{arch} {block} {dtype} {r.kind}:\n--- written:\n{mine}\n--- torch-mlir:\n{theirs}"


class _ActMLP(nn.Module):
    """LayerNorm -> fc1 -> act -> fc2 (or RMSNorm -> gate/up -> act(gate) * up -> fc2)."""

    def __init__(self, act, gated=False, rms=False):
        super().__init__()
        self.norm = nn.RMSNorm(HIDDEN, eps=1e-6) if rms else nn.LayerNorm(HIDDEN)
        self.fc1 = nn.Linear(HIDDEN, 128 if gated else 64, bias=not gated)
        self.fc2 = nn.Linear(64, HIDDEN, bias=not gated)
        self.act, self.gated = act, gated

    def forward(self, x):
        h = self.fc1(self.norm(x))
        if self.gated:
            a, b = h.chunk(2, dim=-1)
            return self.fc2(self.act(a) * b)
        return self.fc2(self.act(h))


_ACTS = {
    "gelu_tanh": (lambda h: F.gelu(h, approximate="tanh"), False),
    "gelu_erf": (F.gelu, False),
    "gelu_erf_spelled": (lambda h: h * 0.5 * (1.0 + torch.erf(h / math.sqrt(2.0))), False),
    "relu": (F.relu, False),
    "srelu": (lambda h: torch.relu(h) ** 2, False),
    "quick_gelu": (lambda h: h * torch.sigmoid(1.702 * h), False),
    "silu_spelled": (lambda h: h / (1 + torch.exp(-h)), False),
    "swiglu_chunk": (F.silu, True),
    "geglu_chunk": (lambda a: F.gelu(a, approximate="tanh"), True),
}


@pytest.mark.skipif(_NO_TORCH_MLIR is not None, reason=str(_NO_TORCH_MLIR))
@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
@pytest.mark.parametrize("act", sorted(_ACTS))
def test_activation_spellings_import_as_torch_mlir(act, static):
    """Activations spelled as TE's (gelu's approximate, erf and sigmoid forms, scalars
    on either side, a chunked gated FC1), static and dynamic shapes: the same te IR
    as torch-mlir's, and a te.layernorm_mlp."""
    fn, gated = _ACTS[act]
    torch.manual_seed(0)
    m = _perturb(_ActMLP(fn, gated, rms=gated)).eval()
    x = torch.randn(2, 4, HIDDEN)
    got = _regions(m, x, dynamic=False if static else None)
    assert [r.kind for r, *_ in got] == ["layernorm_mlp"], [r.kind for r, *_ in got]
    (r, mod, ext, dyn), = got
    assert bool(dyn) != static, dyn
    mine = _te_opt_import(region_text(mod, ext, dyn, r.kind))
    theirs = _te_opt_import(export_region(mod, ext, dyn, r.kind, r.outputs))
    assert "te.layernorm_mlp" in mine and "torch.aten" not in mine, mine
    assert mine == theirs, f"{act}:\n--- written:\n{mine}\n--- torch-mlir:\n{theirs}"


@pytest.fixture
def no_torch_mlir(monkeypatch):
    """torch_mlir unimportable, as on a machine without its wheel."""
    for k in [k for k in sys.modules if k == "torch_mlir" or k.startswith("torch_mlir.")]:
        monkeypatch.delitem(sys.modules, k)
    monkeypatch.setitem(sys.modules, "torch_mlir", None)
    monkeypatch.setitem(sys.modules, "torch_mlir.fx", None)
    with pytest.raises(ImportError):
        import torch_mlir.fx  # noqa: F401
    teb._exports.clear()


def test_gpt2_dynamic_true_without_torch_mlir(no_torch_mlir, tmp_path):
    """dynamic=True lifts math.pi to a graph input: gelu_new's sqrt(2/math.pi) is a
    symbolic float computed outside the MLP region; it is evaluated, and the MLP is
    taken as under mark_dynamic. No torch_mlir: the FX writer exports every region."""
    torch.manual_seed(0)
    eager = _perturb(GPT2Layer())
    model = copy.deepcopy(eager)
    teb.clear_reports()
    c = torch.compile(model, backend="te_mlir", fullgraph=True, dynamic=True,
                      options={"inductor": False})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no "torch_mlir is not importable"
        for b, s, seed in ((2, 6, 0), (3, 9, 1)):
            g = torch.Generator().manual_seed(seed)
            x = torch.randn(b, s, HIDDEN, generator=g)
            dy = torch.randn(b, s, HIDDEN, generator=g)
            _check_same(_run(c, x, dy), _run(eager, x, dy), rtol=1e-4, atol=1e-4)
    r = teb.last_report()
    assert not r.fallback, r.summary()
    assert [g.kind for g in r.candidates] == ["layernorm_linear", "layernorm_mlp"], r.summary()
    assert len(r.blocks_taken) == 2, r.summary()
    assert "c_fc" in r.candidates[1].where
    assert len(teb.reports()) == 1, [x.summary() for x in teb.reports()]


class _MishMLP(nn.Module):
    """LayerNorm -> fc1 -> mish -> fc2: mish is pointwise to the matcher, but neither the
    writer nor TE has it."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(HIDDEN)
        self.fc1 = nn.Linear(HIDDEN, 64)
        self.fc2 = nn.Linear(64, HIDDEN)

    def forward(self, x):
        return self.fc2(F.mish(self.fc1(self.ln(x))))


def test_unwritten_op_refused_by_name(no_torch_mlir):
    torch.manual_seed(0)
    eager = _perturb(_MishMLP())
    model = copy.deepcopy(eager)
    teb.clear_reports()
    c = torch.compile(model, backend="te_mlir", fullgraph=True, options={"inductor": False})
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 4, HIDDEN, generator=g)
    dy = torch.randn(2, 4, HIDDEN, generator=g)
    got = _run(c, x, dy)
    r = teb.last_report()
    assert [g.kind for g in r.candidates] == ["layernorm_mlp"], r.summary()
    mlp = r.candidates[0]
    assert mlp.status == "refused" and "mish" in mlp.reason and "FX export" in mlp.reason, mlp.reason
    # the norm + FC1 is still a LayerNormLinear; mish and FC2 stay in the graph
    split = [s for s in r.regions if s.split_of is mlp]
    assert len(split) == 1 and split[0].status == "taken" and split[0].kind == "layernorm_linear", r.summary()
    _check_same(got, _run(eager, x, dy), rtol=1e-4, atol=1e-4)


def test_region_text_refuses_by_name():
    """region_text alone: the op is named in the Refused message."""
    got = _regions(_MishMLP(), torch.randn(2, 4, HIDDEN))
    (r, mod, ext, dyn), = got
    with pytest.raises(Refused, match="does not write call_function mish"):
        region_text(mod, ext, dyn, r.kind)


def test_export_option(tmp_path):
    """export= picks the writer; the export cache keys on it (file names too)."""
    m = nn.Sequential(nn.LayerNorm(HIDDEN), nn.Linear(HIDDEN, 48))
    x = torch.randn(2, 4, HIDDEN)
    with pytest.raises(Exception) as ei:  # Dynamo wraps the backend's ValueError
        torch.compile(m, backend="te_mlir", options={"export": "nope", "inductor": False})(x)
    assert "export='nope'; known: fx, torch-mlir" in str(ei.value), ei.value
    torch._dynamo.reset()
    teb._exports.clear()
    y = torch.compile(m, backend="te_mlir", options={"inductor": False, "cache_dir": str(tmp_path)})(x)
    assert len(teb.last_report().taken) == 1, teb.last_report().summary()
    torch.testing.assert_close(y, m(x), rtol=1e-5, atol=1e-5)
    files = sorted(p.name for p in (tmp_path / "exports").iterdir())
    assert len(files) == 1 and files[0].startswith("layernorm_linear-fx-"), files
    text = (tmp_path / "exports" / files[0]).read_text()
    assert "torch.aten.layer_norm" in text and "torch.aten.linear" in text, text
