#!/usr/bin/env python3
"""Checks an installed te-mlir wheel as a PyTorch user meets it: no build tree, no
TE_MLIR_BUILD, no C compiler, no torch-mlir. Run by scripts/test_wheel.sh (CPU, here) and
utils/gpu_wheel.sh (cuda, on the H200), with an empty TE_MLIR_CACHE so that every library
is compiled live by the wheel's te-compile.

    python check_installed.py [--device cpu|cuda] [--hf] [--no-cc]

Checks, each printed as "ok: ..." (the first failure raises):
  1. te_mlir is the installed package (not a checkout), finds its binaries in
     te_mlir/_native with no environment variable, and its te-compile needs no
     libMLIR / libLLVM (ldd, every library found);
  2. TE_MLIR_BUILD is unset and torch_mlir cannot be imported; with --no-cc, no C
     compiler or linker is on PATH either (te-compile links in-process). Inductor
     compiles C++ (CPU) or Triton launchers with one, so without one the backend hands
     the rest of the graph to eager PyTorch (option inductor=False) instead;
  3. te_mlir.torch.LayerNormLinear forward + backward matches torch's LayerNorm +
     Linear, through the op library's C++ kernels;
  4. torch.compile(backend="te_mlir") on a LLaMA-style decoder MLP block written in
     torch (RMSNorm, SwiGLU): every candidate block taken, loss and gradients match eager;
  5. with --hf (transformers installed): a 2-layer LlamaForCausalLM and GPT2LMHeadModel trained 3 steps
     through the backend, losses matching eager, one graph, no graph break.
"""
import argparse
import copy
import importlib.util
import os
import shutil
import subprocess
from pathlib import Path


def ok(what):
    print("ok:", what, flush=True)


def check_install(no_cc):
    import te_mlir
    from te_mlir.compile import te_compile_path

    pkg = Path(te_mlir.__file__).resolve().parent
    native = pkg / "_native"
    assert "site-packages" in pkg.parts, f"te_mlir comes from {pkg}, not an installed wheel"
    assert not (pkg.parents[1] / "CMakeLists.txt").exists(), f"{pkg} is a checkout"
    assert "TE_MLIR_BUILD" not in os.environ, "TE_MLIR_BUILD is set"
    assert te_mlir.find_build() == native, f"find_build() is {te_mlir.find_build()}"
    exe = te_compile_path()
    assert exe == native / "bin" / "te-compile", exe
    ok(f"te_mlir {te_mlir.__file__}, binaries in {native}")
    ldd = subprocess.run([shutil.which("ldd") or "/usr/bin/ldd", str(exe)], capture_output=True,
                         text=True).stdout
    assert "not found" not in ldd, ldd
    bad = [line.split()[0] for line in ldd.splitlines() if "libMLIR" in line or "libLLVM" in line]
    assert not bad, f"te-compile needs {bad}"
    ok("te-compile needs " + " ".join(line.split()[0] for line in ldd.splitlines()))
    assert importlib.util.find_spec("torch_mlir") is None, "torch_mlir is importable"
    if no_cc:
        found = [t for t in ("cc", "c++", "gcc", "clang", "ld") if shutil.which(t)]
        assert not found, f"{found} on PATH"
    ok("no torch_mlir" + (", no cc / c++ / gcc / clang / ld on PATH" if no_cc else ""))


def _options():
    """The backend's options: Inductor for the rest of the graph when a C compiler is
    there for it."""
    return {"inductor": shutil.which("cc") is not None}


def check_module(device):
    import torch
    import torch.nn.functional as F
    import te_mlir.torch as tt
    from te_mlir.torch import ops

    torch.manual_seed(0)
    m = tt.LayerNormLinear(64, 32, params_dtype=torch.float32, device=device)
    with torch.no_grad():
        m.layer_norm_weight.normal_(1.0, 0.1)
        m.layer_norm_bias.normal_(0.0, 0.1)
    x = torch.randn(8, 64, device=device, requires_grad=True)
    y = m(x)
    dy = torch.randn_like(y)
    y.backward(dy)
    xr = x.detach().clone().requires_grad_()
    ref = [p.detach().clone().requires_grad_() for p in
           (m.layer_norm_weight, m.layer_norm_bias, m.weight, m.bias)]
    yr = F.linear(F.layer_norm(xr, (64,), ref[0], ref[1], m.eps), ref[2], ref[3])
    yr.backward(dy)
    tol = dict(rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(y, yr, **tol)
    torch.testing.assert_close(x.grad, xr.grad, **tol)
    for p, r in zip((m.layer_norm_weight, m.layer_norm_bias, m.weight, m.bias), ref):
        torch.testing.assert_close(p.grad, r.grad, **tol)
    kind, where = ops.kernel_info()
    assert kind == "c++" and "/_native/lib/" in where, (kind, where)
    ok(f"LayerNormLinear fwd + bwd on {device} matches torch (kernels: {where})")


def check_backend(device):
    import torch
    import torch.nn as nn
    import te_mlir.torch  # noqa: F401  (registers backend="te_mlir")
    import te_mlir.torch.backend as teb

    class RMSNorm(nn.Module):
        def __init__(self, n, eps=1e-6):
            super().__init__()
            self.weight, self.eps = nn.Parameter(torch.ones(n)), eps

        def forward(self, x):
            v = x.float().pow(2).mean(-1, keepdim=True)
            return self.weight * (x.float() * torch.rsqrt(v + self.eps)).to(x.dtype)

    class Block(nn.Module):  # a LLaMA decoder layer's MLP half, as Hugging Face writes it
        def __init__(self, h=64, f=128):
            super().__init__()
            self.norm = RMSNorm(h)
            self.gate = nn.Linear(h, f, bias=False)
            self.up = nn.Linear(h, f, bias=False)
            self.down = nn.Linear(f, h, bias=False)

        def forward(self, x):
            y = self.norm(x)
            return x + self.down(nn.functional.silu(self.gate(y)) * self.up(y))

    torch.manual_seed(0)
    eager = nn.Sequential(Block(), Block()).to(device)
    with torch.no_grad():
        for p in eager.parameters():
            p.add_(0.01 * torch.randn_like(p))
    model = copy.deepcopy(eager)
    step = torch.compile(model, backend="te_mlir", fullgraph=True, options=_options())
    x = torch.randn(2, 8, 64, device=device)
    out, ref = step(x), eager(x)
    out.square().mean().backward()
    ref.square().mean().backward()
    report = teb.last_report()
    assert report is not None and report.candidates and \
        len(report.blocks_taken) == len(report.candidates), \
        f"the backend did not take every block:\n{report}"
    tol = dict(rtol=2e-4, atol=2e-4)
    torch.testing.assert_close(out, ref, **tol)
    for (n, p), q in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, **tol, msg=lambda m: f"{n}: {m}")
    ok(f"backend='te_mlir' on a LLaMA-style MLP block on {device}: "
       f"{len(report.blocks_taken)} of {len(report.candidates)} blocks taken, "
       f"output and gradients match eager (rest of the graph: "
       f"{'Inductor' if _options()['inductor'] else 'eager'})")


def _hf_models():
    """The main job's two model families, tiny: (name, config, model class)."""
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
    llama = LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                        num_key_value_heads=4, num_hidden_layers=2, vocab_size=128,
                        max_position_embeddings=64, rms_norm_eps=1e-6, hidden_act="silu",
                        tie_word_embeddings=False, attention_dropout=0.0)
    gpt2 = GPT2Config(n_embd=64, n_layer=2, n_head=4, n_positions=64, vocab_size=128,
                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                      activation_function="gelu_new", bos_token_id=0, eos_token_id=1)
    for cfg in (llama, gpt2):
        cfg._attn_implementation = "sdpa"
    return [("LlamaForCausalLM", llama, LlamaForCausalLM),
            ("GPT2LMHeadModel", gpt2, GPT2LMHeadModel)]


def check_hf(device):
    import torch
    import torch._dynamo
    import torch._dynamo.utils
    import te_mlir.torch  # noqa: F401
    import te_mlir.torch.backend as teb

    for name, cfg, cls in _hf_models():
        torch.manual_seed(0)
        eager = cls(cfg).to(device)
        model = copy.deepcopy(eager)
        torch._dynamo.reset()
        teb.clear_reports()
        torch._dynamo.utils.counters.clear()
        step = torch.compile(model, backend="te_mlir", fullgraph=True, options=_options())
        opts = [torch.optim.AdamW(m.parameters(), lr=1e-3) for m in (eager, model)]
        gen = torch.Generator().manual_seed(1)
        for i in range(3):
            ids = torch.randint(0, 128, (2, 16), generator=gen).to(device)
            losses = []
            for f, opt in ((eager, opts[0]), (step, opts[1])):
                # next-token cross entropy in fp32, computed here as the main job does
                # (Hugging Face's own loss logs from inside the graph under torch.compile)
                logits = f(input_ids=ids).logits
                loss = torch.nn.functional.cross_entropy(
                    logits[:, :-1].reshape(-1, logits.shape[-1]).float(), ids[:, 1:].reshape(-1))
                loss.backward()
                opt.step()
                opt.zero_grad()
                losses.append(loss.item())
            assert abs(losses[0] - losses[1]) < 1e-3, \
                f"{name} step {i}: eager {losses[0]} te_mlir {losses[1]}"
        reps = teb.reports()
        taken = sum(len(r.blocks_taken) for r in reps)
        blocks = sum(len(r.candidates) for r in reps)
        breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
        assert blocks and taken == blocks, f"the backend did not take every block of {name}:\n" + \
            "\n".join(r.summary() for r in reps)
        assert len(reps) == 1 and breaks == 0, f"{name}: {len(reps)} graphs, {breaks} graph breaks"
        ok(f"{name} (2 layers) 3 training steps on {device} through backend='te_mlir': "
           f"losses match eager, {taken} of {blocks} blocks taken, one graph, no graph break")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--hf", action="store_true", help="also train a tiny LlamaForCausalLM and GPT2LMHeadModel "
                    "(the main job's two model families)")
    ap.add_argument("--no-cc", action="store_true", help="check that no C compiler is on PATH")
    a = ap.parse_args()
    check_install(a.no_cc)
    check_module(a.device)
    check_backend(a.device)
    if a.hf:
        check_hf(a.device)
    print("check_installed: PASS")


if __name__ == "__main__":
    main()
