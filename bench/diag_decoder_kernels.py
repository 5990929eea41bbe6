#!/usr/bin/env python3
"""The GPU kernels of one decoder-layer training step, per engine: where te_mlir's step
spends device time against torch's at few tokens (the CUDA-graph step is device time).

    python3 bench/diag_decoder_kernels.py [--tokens 16] [--recipe bf16] [--steps 5]
                                          [--compile default|reduce-overhead] [--time-rounds 7]

Builds bench/decoder_layer.py's LLaMA-style layer (same weights) as torch eager and as
te_mlir's modules (eager), runs --steps steps of each under torch.profiler (CUDA activity:
CUPTI sees every kernel, the runtime's included) and prints, per engine, the kernel time
per step and the kernels summed by name (count and µs per step), then the same kernels
grouped into GEMMs, copies/memsets and the rest. The device time of one step is what a
CUDA graph of it costs at least.

--compile MODE compiles both layers with torch.compile (te_mlir's with fullgraph=True)
first. With --time-rounds N the two steps are also timed interleaved in the same process
(N rounds, CUDA events around --time-steps steps each, median (min-max) µs per step): under
reduce-overhead the step is the replay of its CUDA graphs, so step time minus kernel time is
what the graphs leave between kernels (gaps, host work that is not captured). --host adds
the host time of the forward and the backward calls apart and the host-side ops by self CPU
time, per engine.
"""
import argparse
import collections
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decoder_layer as dl  # noqa: E402


def profiled(step, x, dy, steps, activity):
    """torch.profiler over `steps` steps of `step` (after three unprofiled ones)."""
    from torch.profiler import profile
    for _ in range(3):
        x.grad = None
        step(x, dy)
    torch.cuda.synchronize()
    with profile(activities=[activity]) as prof:
        for _ in range(steps):
            x.grad = None
            step(x, dy)
        torch.cuda.synchronize()
    return prof


def kernels(step, x, dy, steps):
    from torch.profiler import ProfilerActivity
    prof = profiled(step, x, dy, steps, ProfilerActivity.CUDA)
    sums = collections.defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            s = sums[e.name]
            s[0] += 1
            s[1] += e.device_time  # µs
    return {k: (c / steps, t / steps) for k, (c, t) in sums.items()}


def host_phases(layer, cos, sin, x, dy, steps, top):
    """Host time of the step's two calls apart (process CPU µs per step, no synchronize
    between them: what queueing the forward and the backward costs the host) and the
    host-side ops of `steps` steps under torch.profiler, by self CPU time: under
    reduce-overhead, what runs on the host around the graphs' replays."""
    import time
    from torch.profiler import ProfilerActivity
    step, params = dl.make_step(layer, cos, sin)  # the timed step's own
    prof = profiled(step, x, dy, steps, ProfilerActivity.CPU)  # (warms up too)
    fwd = bwd = 0.0
    for _ in range(steps):
        f, b = dl.step_phases(layer, params, x, cos, sin, dy, time.process_time)
        fwd, bwd = fwd + f, bwd + b
        torch.cuda.synchronize()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=top)
    return fwd / steps * 1e6, bwd / steps * 1e6, table


def timed(step, x, dy, steps):
    """µs per step over one batch of `steps` (decoder_layer.py's timer)."""
    return dl.time_step(step, x, dy, steps, 1, warmup=0)[0]


def group(name):
    n = name.lower()
    if any(k in n for k in ("gemm", "sm90_xmma", "cutlass", "nvjet", "ampere", "cublas")):
        return "GEMM"
    if "memcpy" in n or "memset" in n or "copy" in n or "fill" in n:
        return "copy/memset/fill"
    if "flash" in n or "attention" in n or "fmha" in n:
        return "attention"
    return "other"


def show(label, ks, top):
    tot = sum(t for _, t in ks.values())
    cnt = sum(c for c, _ in ks.values())
    print(f"\n== {label}: {tot:.1f} µs of kernels per step, {cnt:.0f} kernels")
    g = collections.defaultdict(lambda: [0.0, 0.0])
    for k, (c, t) in ks.items():
        g[group(k)][0] += c
        g[group(k)][1] += t
    for k, (c, t) in sorted(g.items(), key=lambda kv: -kv[1][1]):
        print(f"   {k:<20} {c:5.0f} kernels {t:9.1f} µs")
    for k, (c, t) in sorted(ks.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"   {t:8.1f} µs {c:4.0f}x  {k[:150]}")
    return tot


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--recipe", default="bf16")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--ffn", type=int, default=14336)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--compile", default="", choices=["", "default", "reduce-overhead"],
                    help="torch.compile both layers in this mode first")
    ap.add_argument("--time-rounds", type=int, default=0,
                    help="also time the two steps interleaved, this many rounds")
    ap.add_argument("--time-steps", type=int, default=50)
    ap.add_argument("--host", action="store_true",
                    help="also the host time of the forward and backward calls apart, and "
                         "the host-side ops by self CPU time (torch.profiler), per engine")
    args = ap.parse_args()
    import te_mlir.torch as tet

    H, Fh, nh, eps, dt = args.hidden, args.ffn, args.heads, 1e-5, torch.bfloat16
    dev = torch.device("cuda")
    torch.manual_seed(0)
    ref = dl.TorchLayer(H, Fh, nh, eps, dt, dev)
    with torch.no_grad():
        for p in (ref.ln1.weight, ref.ln2.weight):
            p.uniform_(0.8, 1.2)
        for p in (ref.qkv.weight, ref.o.weight, ref.gate_up.weight, ref.down.weight):
            p.normal_(0.0, 0.02)
    T = args.tokens
    B, S = (4, T // 4) if T >= 1024 else (1, T)
    cos, sin = dl.rotary(S, H // nh, dev, dt)
    x = torch.randn(B, S, H, device=dev, dtype=dt).requires_grad_(True)
    dy = torch.randn(B, S, H, device=dev, dtype=dt) * 0.1
    how = f"torch.compile {args.compile}" if args.compile else "eager"
    mode = None if args.compile in ("", "default") else args.compile
    ref_run = torch.compile(ref, mode=mode) if args.compile else ref
    step_torch, _ = dl.make_step(ref_run, cos, sin)
    t_torch = show(f"torch {how}, {T} tokens", kernels(step_torch, x, dy, args.steps), args.top)
    tl = dl.ModuleLayer(tet, H, Fh, nh, eps, dt, dev, recipe=args.recipe)
    tl.load({k: v.detach() for k, v in ref.weights().items()})
    tl_run = torch.compile(tl, mode=mode, fullgraph=True) if args.compile else tl
    step_te, _ = dl.make_step(tl_run, cos, sin)
    t_te = show(f"te_mlir {how} ({args.recipe}), {T} tokens",
                kernels(step_te, x, dy, args.steps), args.top)
    print(f"\nkernel time per step: te_mlir / torch = {t_te / t_torch:.3f}")
    if args.compile:  # what Inductor left out of its CUDA graphs, if anything
        from torch._dynamo.utils import counters
        print("inductor counters:", {k: dict(v) for k, v in counters.items()
                                     if k in ("inductor", "graph_break") and v})
    if args.time_rounds:
        got = {"torch": [], "te_mlir": []}
        for _ in range(args.time_rounds):
            got["torch"].append(timed(step_torch, x, dy, args.time_steps))
            got["te_mlir"].append(timed(step_te, x, dy, args.time_steps))
        med = {}
        for name, kt in (("torch", t_torch), ("te_mlir", t_te)):
            v = sorted(got[name])
            med[name] = v[len(v) // 2]
            print(f"step time {name} {how}: {med[name]:.1f} µs ({v[0]:.1f}-{v[-1]:.1f}), "
                  f"kernels {kt:.1f} µs, step - kernels {med[name] - kt:.1f} µs")
        print(f"step time te_mlir / torch = {med['te_mlir'] / med['torch']:.3f}")
    if args.host:
        for name, layer in (("torch", ref_run), ("te_mlir", tl_run)):
            f, b, table = host_phases(layer, cos, sin, x, dy, max(args.time_steps, 20), args.top)
            print(f"\n== host, {name} {how}: forward call {f:.1f} µs, backward call {b:.1f} µs "
                  "(process CPU per step)")
            print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
