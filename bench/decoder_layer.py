#!/usr/bin/env python3
"""A LLaMA-style decoder layer's training step: te-mlir's PyTorch modules vs PyTorch and
TransformerEngine, in one process.

The layer is Hugging Face's LlamaDecoderLayer written out in plain PyTorch (the H200 machine
has no transformers): RMSNorm -> fused QKV projection -> rotary embedding -> causal SDPA ->
output projection -> residual -> RMSNorm -> SwiGLU MLP (gate/up fused, act(gate) * up) ->
down projection -> residual; no biases. Three builds of it share one set of weights:

  * torch:   torch.nn.RMSNorm + nn.Linear + F.silu;
  * te_mlir: te_mlir.torch.LayerNormLinear (RMSNorm + QKV), Linear (o_proj) and
             LayerNormMLP (RMSNorm + SwiGLU MLP), libraries compiled ahead of time by
             te-compile (cached by te_mlir.compile; `--prepare` fills the cache on a machine
             with te-compile, and the GPU run reuses it);
  * te:      transformer_engine.pytorch's LayerNormLinear / Linear / LayerNormMLP (when TE is
             importable: ../shared/tools/te-peer installs it on the H200).

Engines (each a full step: forward, backward into every parameter and the input):
  torch eager, torch.compile default, torch.compile mode="reduce-overhead";
  te_mlir eager, te_mlir under torch.compile default and reduce-overhead (the attention
  around the te ops goes to Inductor; the te ops run on torch's stream with memory from
  its allocator, so CUDA graphs capture them), per recipe (bf16, fp8-current, fp8-delayed);
  TE eager per recipe (bf16, Float8CurrentScaling, DelayedScaling under fp8_autocast).
and the torch layer under torch.compile(backend="te_mlir") (its regions written as
torch-dialect text from the FX graph and compiled by te-compile on the spot, no torch-mlir;
bf16). Each record also has the first step's wall time (first_step_s: the compile, for the
compiled engines).

Checks, in the same run, before timing: every engine's output and gradients against torch
eager: bf16 engines max|a-b|/max|b| <= 5e-2; FP8 engines ||a-b||/||b|| <= 0.25 (FP8 noise
through a whole layer, attention included, is ~0.15 for TE and te-mlir alike) and, where TE
ran the same recipe, te-mlir's error within 10% of TE's. Timing: CUDA events on torch's current stream around
N back-to-back steps, median (and min/max) of --reps repetitions, after warm-up.

Writes one JSON record per (tokens, engine) to --out and a table to stdout.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

TOL_BF16 = 5e-2
TOL_FP8 = 0.25
FP8_VS_TE = 1.10


def rotary(S, hd, device, dtype, base=10000.0):
    inv = 1.0 / (base ** (torch.arange(0, hd, 2, device=device, dtype=torch.float32) / hd))
    t = torch.arange(S, device=device, dtype=torch.float32)
    f = torch.outer(t, inv)
    emb = torch.cat([f, f], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat([-b, a], dim=-1)


def attention(qkv, B, S, nh, cos, sin):
    H = qkv.shape[-1] // 3
    hd = H // nh
    q, k, v = qkv.view(B, S, 3, nh, hd).unbind(2)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return o.transpose(1, 2).reshape(B, S, H)


class TorchLayer(nn.Module):
    def __init__(self, H, Fh, nh, eps, dtype, device):
        super().__init__()
        kw = dict(dtype=dtype, device=device)
        self.nh, self.eps = nh, eps
        self.ln1 = nn.RMSNorm(H, eps=eps, **kw)
        self.qkv = nn.Linear(H, 3 * H, bias=False, **kw)
        self.o = nn.Linear(H, H, bias=False, **kw)
        self.ln2 = nn.RMSNorm(H, eps=eps, **kw)
        self.gate_up = nn.Linear(H, 2 * Fh, bias=False, **kw)
        self.down = nn.Linear(Fh, H, bias=False, **kw)

    def forward(self, x, cos, sin):
        B, S, _ = x.shape
        x = x + self.o(attention(self.qkv(self.ln1(x)), B, S, self.nh, cos, sin))
        g, u = self.gate_up(self.ln2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u)

    def weights(self):
        return dict(ln1=self.ln1.weight, qkv=self.qkv.weight, o=self.o.weight,
                    ln2=self.ln2.weight, fc1=self.gate_up.weight, fc2=self.down.weight)


class ModuleLayer(nn.Module):
    """The same layer on TE-named modules: `lib` is te_mlir.torch or transformer_engine.pytorch."""

    def __init__(self, lib, H, Fh, nh, eps, dtype, device, **kw):
        super().__init__()
        self.nh = nh
        self.qkv = lib.LayerNormLinear(H, 3 * H, eps=eps, bias=False, normalization="RMSNorm",
                                       params_dtype=dtype, device=device, **kw)
        self.o = lib.Linear(H, H, bias=False, params_dtype=dtype, device=device, **kw)
        self.mlp = lib.LayerNormMLP(H, Fh, eps=eps, bias=False, normalization="RMSNorm",
                                    activation="swiglu", params_dtype=dtype, device=device, **kw)

    def forward(self, x, cos, sin):
        B, S, H = x.shape
        x = x + self.o(attention(self.qkv(x), B, S, self.nh, cos, sin))
        return x + self.mlp(x)

    def load(self, w):
        with torch.no_grad():
            self.qkv.layer_norm_weight.copy_(w["ln1"])
            self.qkv.weight.copy_(w["qkv"])
            self.o.weight.copy_(w["o"])
            self.mlp.layer_norm_weight.copy_(w["ln2"])
            self.mlp.fc1_weight.copy_(w["fc1"])
            self.mlp.fc2_weight.copy_(w["fc2"])

    def weights(self):
        return dict(ln1=self.qkv.layer_norm_weight, qkv=self.qkv.weight, o=self.o.weight,
                    ln2=self.mlp.layer_norm_weight, fc1=self.mlp.fc1_weight,
                    fc2=self.mlp.fc2_weight)


class _NullFn(torch.autograd.Function):
    """No work: the output is allocated, the gradients are kept zero tensors."""

    @staticmethod
    def forward(ctx, owner, x, *params):
        ctx.owner = owner
        return x.new_empty(x.shape[:-1] + (owner.out_features,))

    @staticmethod
    def backward(ctx, dy):
        return (None,) + ctx.owner.zero_grads


class _NullModule(nn.Module):
    """A module with a TE-named module's parameters whose step does no work: one Python
    autograd.Function per call, as te_mlir's modules have. Its step is the floor of any
    module built on a Python autograd.Function (PyTorch's engine, the gradient
    accumulation, nn.Module's call)."""

    def __init__(self, names_shapes, out_features, dtype, device):
        super().__init__()
        self.out_features = out_features
        for name, shape in names_shapes:
            setattr(self, name, nn.Parameter(torch.zeros(shape, dtype=dtype, device=device)))
        self.zero_grads = None

    def forward(self, x):
        if self.zero_grads is None:
            self.zero_grads = (torch.zeros_like(x),) + tuple(
                torch.zeros_like(p) for p in self.parameters())
        return _NullFn.apply(self, x, *self.parameters())


class NullLib:
    """ModuleLayer's modules as _NullModule (bench --floor)."""

    @staticmethod
    def LayerNormLinear(H, N, params_dtype, device, **_):
        return _NullModule([("layer_norm_weight", (H,)), ("weight", (N, H))], N,
                           params_dtype, device)

    @staticmethod
    def Linear(H, N, params_dtype, device, **_):
        return _NullModule([("weight", (N, H))], N, params_dtype, device)

    @staticmethod
    def LayerNormMLP(H, Fh, params_dtype, device, **_):
        return _NullModule([("layer_norm_weight", (H,)), ("fc1_weight", (2 * Fh, H)),
                            ("fc2_weight", (H, Fh))], H, params_dtype, device)


def make_step(layer, cos, sin, ctx=None):
    params = list(layer.weights().values())

    def step(x, dy):
        for p in params:
            p.grad = None
        if ctx is not None:
            with ctx():
                y = layer(x, cos, sin)
        else:
            y = layer(x, cos, sin)
        y.backward(dy)
        return y
    return step, params


def step_phases(layer, params, x, cos, sin, dy, clock):
    """One step of `layer` with its forward call and its backward call timed apart by
    `clock` (time.perf_counter, time.process_time, ...): (forward s, backward s)."""
    for p in params:
        p.grad = None
    x.grad = None
    t0 = clock()
    y = layer(x, cos, sin)
    t1 = clock()
    y.backward(dy)
    return t1 - t0, clock() - t1


def grads_of(y, x, params):
    return [y.detach().float()] + [x.grad.float()] + [p.grad.float() for p in params]


def errors(got, ref):
    mx = max(float((a - b).abs().max() / b.abs().max().clamp_min(1e-30)) for a, b in zip(got, ref))
    fro = max(float((a - b).norm() / b.norm().clamp_min(1e-30)) for a, b in zip(got, ref))
    return mx, fro


def time_step(step, x, dy, n, reps, warmup=3):
    for _ in range(warmup):
        x.grad = None
        step(x, dy)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            x.grad = None
            step(x, dy)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) * 1e3 / n)  # us per step
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--ffn", type=int, default=14336)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--tokens", default="8192,16", help="comma list; 8192 runs as batch 4 x seq 2048")
    ap.add_argument("--recipes", default="bf16,fp8-current,fp8-delayed")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=0, help="steps per repetition (0: by size)")
    ap.add_argument("--out", default="decoder_layer.json")
    ap.add_argument("--report", nargs="+", metavar="JSON",
                    help="print the table of earlier runs' JSON files (no GPU needed), and exit")
    ap.add_argument("--prepare", action="store_true",
                    help="only build the te_mlir modules (compiles their libraries into the "
                         "cache) on the CPU, and exit")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile engines")
    ap.add_argument("--no-torch-compile", action="store_true",
                    help="skip the torch layer's compiled engines (torch.compile and "
                         "backend=\"te_mlir\" in bf16); te_mlir's modules still compile")
    ap.add_argument("--compile-modes", default="default,reduce-overhead",
                    help="torch.compile modes of the torch and te_mlir engines")
    ap.add_argument("--backend-recipes", default="fp8-delayed",
                    help="FP8 recipes the torch layer also runs with under backend=\"te_mlir\"")
    ap.add_argument("--compile-recipes", default="bf16,fp8-current",
                    help="recipes whose te_mlir layer also runs under torch.compile")
    ap.add_argument("--floor", action="store_true",
                    help="also time the layer on modules that do no work (one Python "
                         "autograd.Function each, as te_mlir's): the least an eager layer "
                         "with such modules can cost (no numerics check)")
    args = ap.parse_args()
    if args.report:
        runs = [json.load(open(f)) for f in args.report]
        recs = [r for run in runs for r in run["records"]]
        rs = list(dict.fromkeys(r["recipe"] for r in recs))
        report(recs, runs[0]["hidden"], runs[0]["ffn"], runs[0]["heads"],
               len(recs[0].get("times_us", [])) or args.reps, rs)
        return 0
    import te_mlir.torch as tet

    H, Fh, nh, eps = args.hidden, args.ffn, args.heads, 1e-5
    dt = torch.bfloat16
    recipes = [r for r in args.recipes.split(",") if r]
    if args.prepare:
        for r in recipes:
            t0 = time.time()
            ModuleLayer(tet, H, Fh, nh, eps, dt, "meta" if False else "cpu", recipe=r)
            print(f"prepared te_mlir modules for {r} in {time.time() - t0:.1f} s", flush=True)
        return 0
    dev = torch.device("cuda")
    torch.manual_seed(0)
    ref = TorchLayer(H, Fh, nh, eps, dt, dev)
    with torch.no_grad():
        for p in (ref.ln1.weight, ref.ln2.weight):
            p.uniform_(0.8, 1.2)
        for p in (ref.qkv.weight, ref.o.weight, ref.gate_up.weight, ref.down.weight):
            p.normal_(0.0, 0.02)
    W = {k: v.detach().clone() for k, v in ref.weights().items()}

    try:
        import transformer_engine.pytorch as te
        from transformer_engine.common import recipe as te_recipe
        te_recipes = {"bf16": None, "fp8-current": te_recipe.Float8CurrentScaling(),
                      "fp8-delayed": te_recipe.DelayedScaling()}
    except Exception as ex:  # noqa: BLE001
        te = None
        print(f"TransformerEngine not importable ({type(ex).__name__}: {ex}): no TE engines",
              flush=True)

    records = []
    for tokens in [int(t) for t in args.tokens.split(",")]:
        B, S = (4, tokens // 4) if tokens >= 1024 else (1, tokens)
        cos, sin = rotary(S, H // nh, dev, dt)
        g = torch.Generator(device=dev).manual_seed(tokens)
        x0 = torch.randn(B, S, H, device=dev, dtype=dt, generator=g)
        dy = torch.randn(B, S, H, device=dev, dtype=dt, generator=g) * 0.1
        n = args.steps or (5 if tokens >= 4096 else 50)

        def run_engine(name, recipe, layer, step, params, fp8, check=True):
            x = x0.clone().requires_grad_(True)
            try:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                y = step(x, dy)  # the first step: compiles, for the compiled engines
                torch.cuda.synchronize()
                first = time.perf_counter() - t0
                got = grads_of(y, x, params)
                x.grad = None
                mx, fro = errors(got, refv) if check else (None, None)
                ok = None if not check else fro <= TOL_FP8 if fp8 else mx <= TOL_BF16
                times = time_step(step, x, dy, n, args.reps)
                rec = dict(tokens=tokens, engine=name, recipe=recipe, ok=ok, max_rel=mx,
                           fro_rel=fro, first_step_s=first, median_us=statistics.median(times), min_us=min(times),
                           max_us=max(times), times_us=times)
            except Exception as ex:  # noqa: BLE001
                rec = dict(tokens=tokens, engine=name, recipe=recipe, ok=False,
                           error=f"{type(ex).__name__}: {str(ex)[:400]}")
            records.append(rec)
            print(json.dumps(rec), flush=True)
            torch._dynamo.reset()
            return rec

        # The reference: torch eager.
        xr = x0.clone().requires_grad_(True)
        step, params = make_step(ref, cos, sin)
        refv = grads_of(step(xr, dy), xr, params)
        run_engine("torch eager", "bf16", ref, step, params, False)
        if not args.no_compile and not args.no_torch_compile:
            for mode in args.compile_modes.split(","):
                c = torch.compile(ref, mode=None if mode == "default" else mode)
                step, _ = make_step(c, cos, sin)
                run_engine(f"torch.compile {mode}", "bf16", ref, step, params, False)
            # the same torch layer through backend="te_mlir": its norm + linear and norm +
            # MLP regions compiled by te-mlir (written from the FX graph), the rest eager
            c = torch.compile(ref, backend="te_mlir")
            step, _ = make_step(c, cos, sin)
            run_engine("te_mlir backend=te_mlir", "bf16", ref, step, params, False)
        if args.floor:
            nl = ModuleLayer(NullLib, H, Fh, nh, eps, dt, dev)
            step, nparams = make_step(nl, cos, sin)
            run_engine("floor eager (null modules)", "bf16", nl, step, nparams, False,
                       check=False)
            del nl
        for r in args.backend_recipes.split(","):
            if r and r != "bf16" and r in recipes and not args.no_compile:
                # the torch layer's regions compiled with an FP8 recipe (fp8-delayed: the
                # regions' recipe state in the compiled graph's buffers); a fresh copy of
                # the layer, since the backend's state buffers belong to the graph
                lay = TorchLayer(H, Fh, nh, eps, dt, dev)
                lay.load_state_dict(ref.state_dict())
                c = torch.compile(lay, backend="te_mlir", options={"recipe": r})
                step, bparams = make_step(c, cos, sin)
                run_engine("te_mlir backend=te_mlir", r, lay, step, bparams, True)
                del lay, c
        for r in recipes:
            fp8 = r != "bf16"
            tl = ModuleLayer(tet, H, Fh, nh, eps, dt, dev, recipe=r)
            tl.load(W)
            step, tparams = make_step(tl, cos, sin)
            run_engine("te_mlir eager", r, tl, step, tparams, fp8)
            if not args.no_compile and r in args.compile_recipes.split(","):
                for mode in args.compile_modes.split(","):
                    c = torch.compile(tl, mode=None if mode == "default" else mode, fullgraph=True)
                    step, _ = make_step(c, cos, sin)
                    run_engine(f"te_mlir torch.compile {mode}", r, tl, step, tparams, fp8)
            del tl
            if te is not None:
                ml = ModuleLayer(te, H, Fh, nh, eps, dt, dev)
                ml.load(W)
                rc = te_recipes[r]
                ctx = None if rc is None else (lambda rc=rc: te.fp8_autocast(enabled=True,
                                                                             fp8_recipe=rc))
                step, mparams = make_step(ml, cos, sin, ctx)
                run_engine("TE eager", r, ml, step, mparams, fp8)
                del ml
            torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(dict(hidden=H, ffn=Fh, heads=nh, torch=torch.__version__,
                       device=torch.cuda.get_device_name(), records=records), f, indent=1)
    report(records, H, Fh, nh, args.reps, recipes)
    return 0


def fp8_verdicts(records):
    """FP8 records' ok: within TOL_FP8 of torch eager and, where TE ran the recipe at the
    size, within FP8_VS_TE of TE's error."""
    for r in records:
        if r.get("recipe", "bf16") == "bf16" or "fro_rel" not in r:
            continue
        te_ = [t for t in records if t["engine"] == "TE eager" and t["recipe"] == r["recipe"]
               and t["tokens"] == r["tokens"] and "fro_rel" in t]
        r["te_fro_rel"] = te_[0]["fro_rel"] if te_ else None
        r["ok"] = r["fro_rel"] <= TOL_FP8 and (
            not te_ or r["engine"].startswith("TE") or
            r["fro_rel"] <= FP8_VS_TE * te_[0]["fro_rel"])


def report(records, H, Fh, nh, reps, recipes):
    fp8_verdicts(records)

    # The table: each engine's median, and te_mlir's ratio to the best peer of its recipe.
    print(f"\nLLaMA-style decoder layer, hidden {H}, ffn {Fh}, heads {nh}, bf16 params; "
          "training step (fwd + bwd), median us (min-max) of "
          f"{reps}")
    for tokens in sorted({r["tokens"] for r in records}, reverse=True):
        rows = [r for r in records if r["tokens"] == tokens]
        print(f"\n tokens {tokens}")
        for r in rows:
            if "median_us" in r and r["ok"] is None:  # the floor: not checked
                print(f"  {r['engine']:32} {r['recipe']:12} {r['median_us']:10.1f} "
                      f"({r['min_us']:.1f}-{r['max_us']:.1f})  (no work: not checked)")
            elif "median_us" in r:
                print(f"  {r['engine']:32} {r['recipe']:12} {r['median_us']:10.1f} "
                      f"({r['min_us']:.1f}-{r['max_us']:.1f})  max_rel {r['max_rel']:.2e} "
                      f"fro_rel {r['fro_rel']:.2e}" + (f" (TE {r['te_fro_rel']:.2e})" if r.get('te_fro_rel') else '') + f" {'ok' if r['ok'] else 'MISMATCH'}"
                      + (f"  first step {r['first_step_s']:.2f} s" if "first_step_s" in r else ""))
            else:
                print(f"  {r['engine']:32} {r['recipe']:12} failed: {r['error']}")
        for rec in recipes:
            ours = [r for r in rows if r["recipe"] == rec and r["engine"].startswith("te_mlir")
                    and "median_us" in r]
            peers = [r for r in rows if "median_us" in r and r["ok"] is not None
                     and not r["engine"].startswith("te_mlir")
                     and (r["recipe"] == rec or r["engine"].startswith("torch"))]
            if ours and peers:
                b, p = min(ours, key=lambda r: r["median_us"]), min(peers, key=lambda r: r["median_us"])
                print(f"  {rec}: best te_mlir ({b['engine']}) {b['median_us']:.1f} us vs best peer "
                      f"({p['engine']}, {p['recipe']}) {p['median_us']:.1f} us: "
                      f"{p['median_us'] / b['median_us']:.2f}x "
                      f"(spread {p['min_us'] / b['max_us']:.2f}-{p['max_us'] / b['min_us']:.2f}x)")


if __name__ == "__main__":
    sys.exit(main())
