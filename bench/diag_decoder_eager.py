#!/usr/bin/env python3
"""Where the LLaMA-style decoder layer's eager step spends host time at 16 tokens, te_mlir's
modules against torch's layer (bench/decoder_layer.py's layers): µs per step by CUDA events
and by process CPU time, then torch.profiler's CPU self time per op over 20 steps for each.

    python bench/diag_decoder_eager.py [--tokens 16] [--recipe bf16]
"""
import argparse, os, statistics, sys, time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decoder_layer import ModuleLayer, TorchLayer, make_step, rotary  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--tokens", type=int, default=16)
ap.add_argument("--recipe", default="bf16")
ap.add_argument("--steps", type=int, default=50)
args = ap.parse_args()
import te_mlir.torch as tet  # noqa: E402

H, Fh, nh, eps, dt, dev = 4096, 14336, 32, 1e-5, torch.bfloat16, torch.device("cuda")
torch.manual_seed(0)
ref = TorchLayer(H, Fh, nh, eps, dt, dev)
W = {k: v.detach().clone() for k, v in ref.weights().items()}
tl = ModuleLayer(tet, H, Fh, nh, eps, dt, dev, recipe=args.recipe)
tl.load(W)
B, S = 1, args.tokens
cos, sin = rotary(S, H // nh, dev, dt)
x = torch.randn(B, S, H, device=dev, dtype=dt, requires_grad=True)
dy = torch.randn(B, S, H, device=dev, dtype=dt) * 0.1
steps = {"torch eager": make_step(ref, cos, sin)[0], "te_mlir eager": make_step(tl, cos, sin)[0]}


def timed(step):
    for _ in range(5):
        x.grad = None
        step(x, dy)
    torch.cuda.synchronize()
    ev, cpu = [], []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        c0 = time.process_time()
        a.record()
        for _ in range(args.steps):
            x.grad = None
            step(x, dy)
        b.record()
        b.synchronize()
        cpu.append((time.process_time() - c0) / args.steps * 1e6)
        ev.append(a.elapsed_time(b) * 1e3 / args.steps)
    return statistics.median(ev), statistics.median(cpu)


for _ in range(2):  # interleaved twice
    for k, s in steps.items():
        e, c = timed(s)
        print(f"{k:16s} {e:9.1f} us/step (events) {c:9.1f} us/step (process CPU)", flush=True)
from torch.profiler import profile, ProfilerActivity  # noqa: E402
for k, s in steps.items():
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            x.grad = None
            s(x, dy)
        torch.cuda.synchronize()
    print(f"\n== {k}: 20 steps")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40,
                                    max_name_column_width=56))
