#!/usr/bin/env python3
"""What a te_mlir module's eager step asks of the CUDA runtime, beside PyTorch's own
(issue 30: at the seeds' shape the step with the seeds' loss costs more host time than
the module's ops and the loss add up to). For LayerNormLinear 256 -> 768 bf16 at
[8, 2, 256] and torch's LayerNorm + Linear, each with `backward(dy)` and with the seeds'
loss, prints: CPU µs per step by process time and by the calling thread's time (the
difference is the other threads: the autograd engine's device thread and anything
spinning), wall µs, and the CUDA runtime calls of 20 steps from torch.profiler (a
synchronize, a memcpy or a malloc in a step shows here).

    python bench/diag_step_api.py [--iters 300]
"""
import argparse, statistics, time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--iters", type=int, default=300)
ap.add_argument("--recipe", default="bf16", help="te_mlir's recipe (fp8 recipes: under "
                "te_mlir.torch.fp8_autocast; torch's layer stays bf16)")
args = ap.parse_args()
torch.set_num_threads(1)
import te_mlir.torch as tet

dev = torch.device("cuda")
m = tet.LayerNormLinear(256, 768, params_dtype=torch.bfloat16, device=dev)
ref = torch.nn.Sequential(torch.nn.LayerNorm(256), torch.nn.Linear(256, 768)).to(dev, torch.bfloat16)
x = torch.randn(8, 2, 256, dtype=torch.bfloat16, device=dev, requires_grad=True)
dy = torch.randn(8, 2, 768, dtype=torch.bfloat16, device=dev)


import contextlib  # noqa: E402


def ctx(mod):
    if mod is m and args.recipe != "bf16":
        return tet.fp8_autocast(enabled=True, fp8_recipe=args.recipe)
    return contextlib.nullcontext()


def with_dy(mod):
    def f():
        x.grad = None
        with ctx(mod):
            y = mod(x)
        y.backward(dy)
    return f


def with_loss(mod):
    def f():
        x.grad = None
        with ctx(mod):
            y = mod(x)
        y.float().square().sum().backward()
    return f


def with_sum(mod):  # the loss without the fp32 cast and the square
    def f():
        x.grad = None
        with ctx(mod):
            y = mod(x)
        y.sum().backward()
    return f


def tm(f, n):
    for _ in range(30):
        f()
    torch.cuda.synchronize()
    p, t, w = [], [], []
    for _ in range(7):
        p0, t0, w0 = time.process_time(), time.thread_time(), time.perf_counter()
        for _ in range(n):
            f()
        torch.cuda.synchronize()
        p.append((time.process_time() - p0) / n * 1e6)
        t.append((time.thread_time() - t0) / n * 1e6)
        w.append((time.perf_counter() - w0) / n * 1e6)
    return [round(statistics.median(v), 1) for v in (p, t, w)]


cases = {f"{name} {how.__name__}": how(mod) for name, mod in (("te_mlir", m), ("torch", ref))
         for how in (with_dy, with_loss, with_sum)}
print(f"{'step':24s} {'process':>9s} {'thread':>9s} {'wall':>9s}  (µs per step)")
for k, f in cases.items():
    p, t, w = tm(f, args.iters)
    print(f"{k:24s} {p:9.1f} {t:9.1f} {w:9.1f}", flush=True)
from torch.profiler import profile, ProfilerActivity
for k in ("torch with_loss", "te_mlir with_loss", "te_mlir with_dy"):  # (the first
    # profiled case carries the profiler's start-up: torch's, the reference, goes first)
    f = cases[k]
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            f()
        torch.cuda.synchronize()
    print(f"\n== {k}: 20 steps")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40, max_name_column_width=48))
