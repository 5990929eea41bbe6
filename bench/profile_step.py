#!/usr/bin/env python3
"""Where a te-mlir training step spends its GPU time: one case library (bench/build), a few
steps under torch.profiler (CUPTI sees every stream, including the runtime's own), kernels
summed by name. Run on the GPU machine, like bench.py:

    python3 bench/profile_step.py bench/build/ln_mlp_gelu_8192x4096x16384.fp8-current.so

Prints the step's total kernel time and the kernels sorted by their share of it, then the
timeline: the span from the first kernel's start to the last one's end per step, the idle
time between consecutive kernels (the difference between span and kernel time), and the
largest idle gaps with the kernels on either side.

--te: also profiles TransformerEngine's module of the same case and recipe (the recipe from
the library name; same seeded weights, x and dy; bench.py's te_module / te_autocast, as
/work/shared/anchors/profile_pair.py did) over the same number of steps, and prints its
kernels the same way (total ms and count per step, share of the step's kernel time).
"""
import argparse
import collections
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--runtime", default=os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build-rt-cuda", "lib",
        "libte_runtime.so"))
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--te", action="store_true",
                    help="also profile TransformerEngine's module of the same case and recipe")
    ap.add_argument("--graph", action="store_true",
                    help="profile replays of the step captured as one CUDA graph (fwd, bwd and "
                    "the recipe state's copies, as bench.py times it), and list one replay's "
                    "kernels and copies in start order with their streams (the graph's own "
                    "streams; under the profiler a replay runs slower, so its gaps are "
                    "partly the profiler's: bench.py times the graph)")
    args = ap.parse_args()
    parts = os.path.basename(args.lib).split(".")
    name = parts[0]
    recipe = parts[1] if len(parts) > 2 else "bf16"
    kind, M, H, F_ = bench.parse_case(name)
    _, inputs, _, dy, flops = bench.make_inputs(kind, M, H, F_, "cuda")
    rt = bench.Runtime(args.runtime, "cuda")
    te = bench.TEStep(rt, args.lib, inputs, [dy], "cuda")
    if args.graph:
        te.call(0)  # the first step allocates; a capture must not
        rt.sync()
        g = bench.capture(te, rt, bool(te.pairs))
        try:
            report(f"te-mlir {name} {recipe}, CUDA graph replays", g.launch, rt, args, flops)
        finally:
            rt.sync()
            g.destroy()
    else:
        report(f"te-mlir {name} {recipe}", te, rt, args, flops)
    del te
    rt.sync()
    torch.cuda.empty_cache()
    if args.te:
        TE, info = bench.load_te("on", "cuda")
        print(f"\nTransformerEngine {info['version']} ({info['path']})")
        m, params = bench.te_module(TE, kind, H, F_, inputs)
        x = inputs[0].detach().clone().requires_grad_()

        def te_step():
            with bench.te_autocast(TE, recipe):
                y = m(x)
            torch.autograd.grad(y, [x] + params, dy)

        for _ in range(bench.DELAYED_WARMUP):
            te_step()
        report(f"TE {name} {recipe}", te_step, rt, args, flops)


def report(label, step, rt, args, flops):
    """`args.steps` steps of `step` under torch.profiler (after 3 more): per kernel name its
    total time and count per step and share of the step's kernel time; then the timeline."""
    for _ in range(3):
        step()
    rt.sync()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(args.steps):
            step()
        rt.sync()
    per = collections.defaultdict(lambda: [0.0, 0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per[e.name][0] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
            per[e.name][1] += 1
    total = sum(t for t, _ in per.values())
    print(f"== {label}: {args.steps} steps, kernel time {total / args.steps / 1e3:.3f} ms per "
          f"step, GEMM work {flops / 1e12:.2f} TFLOP per step")
    print(f"  {'share':>6s}  {'ms/step':>9s}  {'count':<6s} kernel")
    for n, (t, c) in sorted(per.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {100 * t / max(total, 1e-9):5.1f}%  {t / args.steps / 1e3:9.4f}  "
              f"x{c / args.steps:<5.3g} {n[:110]}")
    # Timeline: device activity in start order; overlapping events (none on one stream)
    # are merged, so idle = span - busy.
    ev = sorted(((e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                 if e.device_type == torch.autograd.DeviceType.CUDA), key=lambda x: x[0])
    if ev:
        span = ev[-1][1] - ev[0][0]
        busy, gaps, cur_end, prev = 0.0, [], ev[0][0], None
        for start, end, n in ev:
            if start > cur_end:
                gaps.append((start - cur_end, prev, n))
            busy += max(0.0, end - max(start, cur_end))
            if end > cur_end:
                cur_end, prev = end, n
        idle = sum(g for g, _, _ in gaps)
        print(f"timeline: span {span / args.steps / 1e3:.3f} ms per step, busy "
              f"{busy / args.steps / 1e3:.3f} ms, idle {idle / args.steps / 1e3:.3f} ms in "
              f"{len(gaps) // args.steps} gaps per step")
        by_pair = collections.defaultdict(lambda: [0.0, 0])
        for g, a, b in gaps:
            key = (a or "")[:50] + "  ->  " + (b or "")[:50]
            by_pair[key][0] += g
            by_pair[key][1] += 1
        for k, (g, c) in sorted(by_pair.items(), key=lambda kv: -kv[1][0])[:12]:
            print(f"  idle {g / args.steps:8.1f} us/step  x{c // args.steps:<3d} {k}")
    if args.graph:
        print_last_step(prof, args.steps)


def print_last_step(prof, steps):
    """The last step's device events in start order: start (us after the step's first),
    duration, stream, name."""
    try:
        ev = [(e.start_ns(), e.duration_ns(), e.device_resource_id(), e.name())
              for e in prof.profiler.kineto_results.events()
              if e.device_type() == torch.autograd.DeviceType.CUDA]
    except AttributeError as ex:
        print(f"(no per-stream events from this torch: {ex})")
        return
    ev.sort()
    per = len(ev) // max(steps, 1)
    last = ev[-per:] if per else []
    if not last:
        return
    t0 = last[0][0]
    streams = {}
    print(f"last step: {per} device events (start us, duration us, stream, name)")
    for start, dur, stream, n in last:
        sid = streams.setdefault(stream, len(streams))
        print(f"  {(start - t0) / 1e3:7.2f} {dur / 1e3:6.2f}  s{sid}  {n[:90]}")
    end = max(s + d for s, d, _, _ in last)
    print(f"  step span {(end - t0) / 1e3:.2f} us on {len(streams)} streams")


if __name__ == "__main__":
    main()
