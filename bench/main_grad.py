"""fuse_wgrad_accumulation: the weight gradient added to main_grad after the step (the
bf16 gradient, then an add: how te_mlir's modules did it before te.main_grad) against the
wgrad GEMM accumulating into main_grad in its epilogue (te.main_grad), interleaved, in one
process: step time (host or device, per --device), the backward entry's planned results
and arena, and (cuda) the step's peak allocation above the pre-step level.

  bench/main_grad.py [--device cpu|cuda] [--cases small,seed,large] [--rounds 3] [--out F]
"""
import argparse
import json
import time

import torch

import te_mlir.torch as tet

CASES = {  # (in, out, tokens, steps per timing on the cpu)
    "small": (32, 96, 16, 2000),
    "seed": (256, 768, 16, 300),
    "large": (1024, 1024, 256, 20),
    "8192": (4096, 12288, 8192, 5),
}


def build(inp, out, in_gemm, dev):
    m = tet.LayerNormLinear(inp, out, params_dtype=torch.bfloat16, device=dev,
                            fuse_wgrad_accumulation=True)
    if not in_gemm:  # the after-step add (what autocast / primary weights still use)
        m._main_grad_in_gemm = lambda: False
    for p in m.parameters():
        p.main_grad = torch.zeros(p.shape, dtype=torch.float32, device=dev)
    return m


def time_steps(m, x, dy, steps, dev):
    for _ in range(3):
        m(x).backward(dy)
    if dev == "cuda":
        torch.cuda.synchronize()
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            m(x).backward(dy)
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) * 1e3 / steps
    ts = []
    for _ in range(steps):
        t = time.perf_counter()
        m(x).backward(dy)
        ts.append(time.perf_counter() - t)
    ts.sort()
    return ts[len(ts) // 2] * 1e6


def peak(m, x, dy):
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    m(x).backward(dy)
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--cases", default="small,seed,large")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.device == "cpu":
        torch.set_num_threads(1)
    report = {"device": a.device, "cases": {}}
    for name in a.cases.split(","):
        inp, out, tokens, steps = CASES[name]
        if a.device == "cuda":
            steps = max(steps, 20)
        mods = {k: build(inp, out, k == "in_gemm", a.device) for k in ("after_step", "in_gemm")}
        x = torch.randn(tokens, inp, dtype=torch.bfloat16, device=a.device, requires_grad=True)
        dy = torch.randn(tokens, out, dtype=torch.bfloat16, device=a.device)
        times = {k: [] for k in mods}
        for _ in range(a.rounds):
            for k, m in mods.items():
                times[k].append(time_steps(m, x, dy, steps, a.device))
        rec = {"shape": [inp, out, tokens], "unit": "us per fwd+bwd" +
               (" (CUDA events)" if a.device == "cuda" else " (host, median)")}
        for k, m in mods.items():
            t = sorted(times[k])
            fn = [f for key, f in m._fns.items()][-1]
            plan = fn.memory_plan([[tokens, inp]] + [list(s.shape) for s in fn.fwd.args[1:]])
            rec[k] = {"time": t[len(t) // 2], "min": t[0], "max": t[-1],
                      "bwd_results": plan["backward"]["results"],
                      "bwd_arena": plan["backward"]["arena"]}
            if a.device == "cuda":
                rec[k]["peak"] = peak(m, x, dy)
        report["cases"][name] = rec
        b, n = rec["after_step"], rec["in_gemm"]
        print(f"{name} {inp}->{out} x{tokens}: after-step add {b['time']:.1f} "
              f"({b['min']:.1f}-{b['max']:.1f}), in the GEMM {n['time']:.1f} "
              f"({n['min']:.1f}-{n['max']:.1f}); backward results {b['bwd_results']} -> "
              f"{n['bwd_results']} bytes" + (f"; peak {b['peak']} -> {n['peak']} bytes"
                                             if a.device == "cuda" else ""), flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
