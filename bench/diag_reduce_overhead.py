#!/usr/bin/env python3
"""Where the decoder layer's reduce-overhead step spends host time: torch's layer against
te_mlir's modules, both under torch.compile(mode="reduce-overhead"), in one process.

    python3 bench/diag_reduce_overhead.py [--tokens 16] [--steps 200] [--rounds 5]
                                          [--mode reduce-overhead] [--profile-steps 200]

Per engine, interleaved rounds of --steps steps (bench/decoder_layer.py's layer and step):
  wall      µs per step, CUDA events around the steps (what decoder_layer.py reports)
  host      µs per step the calling thread spent issuing the steps (perf_counter, no sync)
  fwd, bwd  µs per step spent in the layer's call and in y.backward(dy) (perf_counter)
then the guards Dynamo installed on the layer's forward (count of guard lines, and the
guard manager's check timed alone on the step's arguments) and a cProfile of
--profile-steps steps per engine: the functions by own time, so the Python that runs per
step on one side and not the other shows by name.
"""
import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decoder_layer as dl  # noqa: E402


def guard_info(fn_code):
    """(guard line count, µs per check) of the cache entries of `fn_code`, or (None, None)."""
    try:
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list
        entries = _debug_get_cache_entry_list(fn_code)
    except Exception:  # noqa: BLE001
        return None, None
    lines = 0
    for e in entries:
        gm = getattr(e, "guard_manager", None)
        code = getattr(gm, "code_parts", None) or []
        if not code:
            try:  # the guard manager prints its tree: one line per guard or accessor
                code = str(gm).splitlines()
            except Exception:  # noqa: BLE001
                code = []
        lines += len(code)
    return lines, len(entries)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--ffn", type=int, default=14336)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--recipe", default="bf16")
    ap.add_argument("--mode", default="reduce-overhead")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile-steps", type=int, default=200)
    ap.add_argument("--top", type=int, default=35)
    ap.add_argument("--device", default="cuda",
                    help="cpu: a dry run of the script (Inductor's CPU code, no CUDA graphs)")
    args = ap.parse_args()
    import te_mlir.torch as tet

    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    dt = torch.bfloat16
    H, Fh, nh, eps = args.hidden, args.ffn, args.heads, 1e-5
    torch.manual_seed(0)
    ref = dl.TorchLayer(H, Fh, nh, eps, dt, dev)
    with torch.no_grad():
        for p in ref.parameters():
            p.normal_(0.0, 0.02)
    tl = dl.ModuleLayer(tet, H, Fh, nh, eps, dt, dev, recipe=args.recipe)
    tl.load(ref.weights())
    cos, sin = dl.rotary(args.tokens, H // nh, dev, dt)
    g = torch.Generator(device=dev).manual_seed(1)
    x0 = torch.randn(1, args.tokens, H, device=dev, dtype=dt, generator=g)
    dy = torch.randn(1, args.tokens, H, device=dev, dtype=dt, generator=g) * 0.1
    mode = None if args.mode == "default" or not cuda else args.mode
    engines = {}
    for name, layer, full in (("torch", ref, False), ("te_mlir", tl, True)):
        c = torch.compile(layer, mode=mode, fullgraph=full)
        params = list(layer.weights().values())
        x = x0.clone().requires_grad_(True)
        engines[name] = (c, params, x, layer)

    def one(c, params, x, t):
        f, b = dl.step_phases(c, params, x, cos, sin, dy, time.perf_counter)
        t[0] += f
        t[1] += b

    from torch._dynamo.utils import counters
    for name, (c, params, x, _) in engines.items():
        counters.clear()
        t = [0.0, 0.0]
        for _ in range(5):
            one(c, params, x, t)
        sync()
        # (cudagraph skips, non-static inputs copied per replay, graph counts)
        print(f"{name}: compile counters " + str({k: dict(v) for k, v in counters.items()
                                                   if k in ("inductor", "stats", "aot_autograd")}))
    res = {n: {"wall": [], "host": [], "fwd": [], "bwd": []} for n in engines}
    for _ in range(args.rounds):
        for name, (c, params, x, _) in engines.items():
            t = [0.0, 0.0]
            sync()
            if cuda:
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
            h0 = time.perf_counter()
            for _ in range(args.steps):
                one(c, params, x, t)
            h1 = time.perf_counter()
            n = args.steps
            if cuda:
                e1.record()
                e1.synchronize()
                res[name]["wall"].append(e0.elapsed_time(e1) * 1e3 / n)
            else:
                res[name]["wall"].append((time.perf_counter() - h0) * 1e6 / n)
            res[name]["host"].append((h1 - h0) * 1e6 / n)
            res[name]["fwd"].append(t[0] * 1e6 / n)
            res[name]["bwd"].append(t[1] * 1e6 / n)
    print(f"tokens {args.tokens}, {args.recipe}, mode {args.mode}, {torch.cuda.get_device_name() if cuda else 'cpu'},"
          f" torch {torch.__version__}; µs per step, median (min-max) of {args.rounds} rounds"
          f" x {args.steps} steps")
    print(f"{'engine':10s} " + " ".join(f"{k:>22s}" for k in ("wall", "host", "fwd call",
                                                             "backward call")))
    for name, r in res.items():
        cells = [f"{statistics.median(v):8.1f} ({min(v):6.1f}-{max(v):6.1f})"
                 for v in (r["wall"], r["host"], r["fwd"], r["bwd"])]
        print(f"{name:10s} " + " ".join(f"{c:>22s}" for c in cells))
    for name, (c, params, x, layer) in engines.items():
        lines, n = guard_info(type(layer).forward.__code__)
        if lines is None:
            lines, n = guard_info(layer.forward.__code__)
        print(f"{name}: Dynamo cache entries on forward: {n}, guard-manager lines: {lines}")
    for name, (c, params, x, _) in engines.items():
        pr = cProfile.Profile()
        t = [0.0, 0.0]
        pr.enable()
        for _ in range(args.profile_steps):
            one(c, params, x, t)
        sync()
        pr.disable()
        s = io.StringIO()
        st = pstats.Stats(pr, stream=s)
        print(f"\n== {name}: cProfile of {args.profile_steps} steps, by own time")
        st.sort_stats("tottime").print_stats(args.top)
        print("\n".join(s.getvalue().splitlines()[:args.top + 12]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
