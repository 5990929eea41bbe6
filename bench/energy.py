#!/usr/bin/env python3
"""Energy per training step, te_mlir.torch against TransformerEngine (issue 34's "measure
first"), on the GPU, one process, engines interleaved.

Per case (module, recipe) and round, each engine runs a fixed-length window of `--steps`
fwd+bwd steps (after a warm-up). Inside each window only that engine's steps run; the
GPU's total-energy counter (NVML nvmlDeviceGetTotalEnergyConsumption, mJ) is read at the
window's two synchronized ends, and a sampler thread reads the power draw and the SM
clock every `--sample-ms` ms. Per window: energy per step (mJ), step time (ms, wall
between the synchronized ends), average power (W, energy / time) and the average and
minimum sampled SM clock (MHz). Reported: the median over rounds and the (min-max),
and te_mlir / TE ratios.

    python3 bench/energy.py --out OUT/energy.json       # H200: TE from .te-peer
    python3 bench/weights_memory.py --prefill           # here: the libraries (same modules)

NVML is reached through ctypes (libnvidia-ml.so.1, the driver's), so no Python package is
needed."""
import argparse
import contextlib
import ctypes
import json
import os
import statistics
import threading
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--tokens", type=int, default=8192)
ap.add_argument("--hidden", type=int, default=4096)
ap.add_argument("--ffn", type=int, default=16384)
ap.add_argument("--recipes", default="fp8-current,fp8-delayed,bf16")
ap.add_argument("--kinds", default="ln_mlp_gelu,ln_linear")
ap.add_argument("--steps", type=int, default=150)
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--sample-ms", type=float, default=20.0)
ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "energy.json"))
a = ap.parse_args()


class NVML:
    """The few NVML calls used here, through ctypes."""

    CLOCK_SM = 1

    def __init__(self, index=0):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        self._check(self.lib.nvmlInit_v2(), "nvmlInit")
        self.dev = ctypes.c_void_p()
        self._check(self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(self.dev)),
                    "nvmlDeviceGetHandleByIndex")

    @staticmethod
    def _check(rc, what):
        if rc != 0:
            raise RuntimeError(f"NVML {what} failed (status {rc})")

    def energy_mj(self):
        v = ctypes.c_ulonglong()
        self._check(self.lib.nvmlDeviceGetTotalEnergyConsumption(self.dev, ctypes.byref(v)),
                    "nvmlDeviceGetTotalEnergyConsumption")
        return v.value

    def power_w(self):
        v = ctypes.c_uint()
        self._check(self.lib.nvmlDeviceGetPowerUsage(self.dev, ctypes.byref(v)),
                    "nvmlDeviceGetPowerUsage")
        return v.value / 1000.0

    def sm_clock_mhz(self):
        v = ctypes.c_uint()
        self._check(self.lib.nvmlDeviceGetClockInfo(self.dev, self.CLOCK_SM, ctypes.byref(v)),
                    "nvmlDeviceGetClockInfo")
        return v.value


class Sampler:
    """Power and SM clock every `period` seconds while the window is open."""

    def __init__(self, nvml, period):
        self.nvml, self.period = nvml, period
        self.samples, self._stop = [], threading.Event()

    def __enter__(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.samples.append((self.nvml.power_w(), self.nvml.sm_clock_mhz()))
            time.sleep(self.period)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


import transformer_engine.pytorch as tep  # noqa: E402  (before te_mlir's runtime loads)
from transformer_engine.common import recipe as ter  # noqa: E402
import te_mlir.torch as tem  # noqa: E402

DT = torch.bfloat16


def build(ns, kind):
    if kind == "ln_mlp_gelu":
        return ns.LayerNormMLP(a.hidden, a.ffn, bias=True, activation="gelu", params_dtype=DT,
                               device="cuda")
    return ns.LayerNormLinear(a.hidden, 3 * a.hidden, bias=True, params_dtype=DT, device="cuda")


def ctx(engine, r):
    if r == "bf16":
        return contextlib.nullcontext()
    if engine == "te_mlir":
        return tem.fp8_autocast(enabled=True, fp8_recipe=r)
    return tep.fp8_autocast(enabled=True, fp8_recipe={"fp8-current": ter.Float8CurrentScaling,
                                                       "fp8-delayed": ter.DelayedScaling}[r]())


def step(m, engine, r, x, dy):
    with ctx(engine, r):
        y = m(x)
    y.backward(dy)
    x.grad = None
    for p in m.parameters():
        p.grad = None


def window(nvml, m, engine, r, x, dy):
    torch.cuda.synchronize()
    with Sampler(nvml, a.sample_ms / 1000.0) as s:
        e0, t0 = nvml.energy_mj(), time.perf_counter()
        for _ in range(a.steps):
            step(m, engine, r, x, dy)
        torch.cuda.synchronize()
        e1, t1 = nvml.energy_mj(), time.perf_counter()
    secs = t1 - t0
    clocks = [c for _, c in s.samples] or [0]
    return dict(mj_per_step=(e1 - e0) / a.steps, ms_per_step=1e3 * secs / a.steps,
                avg_w=(e1 - e0) / 1e3 / secs, sm_mhz_avg=statistics.fmean(clocks),
                sm_mhz_min=min(clocks), samples=len(s.samples),
                sampled_w_avg=statistics.fmean([p for p, _ in s.samples] or [0]))


def summary(ws, key):
    v = sorted(w[key] for w in ws)
    return dict(median=statistics.median(v), min=v[0], max=v[-1])


nvml = NVML(torch.cuda.current_device())
results = []
for kind in a.kinds.split(","):
    for r in a.recipes.split(","):
        torch.manual_seed(0)
        mods = {e: build(ns, kind) for e, ns in (("te", tep), ("te_mlir", tem))}
        with torch.no_grad():  # the same weights in both
            ref = dict(mods["te"].named_parameters())
            for n, q in mods["te_mlir"].named_parameters():
                q.copy_(ref[n])
        x = torch.randn(a.tokens, a.hidden, dtype=DT, device="cuda", requires_grad=True)
        out = 3 * a.hidden if kind == "ln_linear" else a.hidden
        dy = torch.randn(a.tokens, out, dtype=DT, device="cuda")
        for e, m in mods.items():
            for _ in range(10):  # warm-up: libraries, workspaces, recipe state, clocks
                step(m, e, r, x, dy)
        wins = {"te": [], "te_mlir": []}
        for k in range(a.rounds):
            order = ("te", "te_mlir") if k % 2 == 0 else ("te_mlir", "te")
            for e in order:
                wins[e].append(window(nvml, mods[e], e, r, x, dy))
        rec = dict(kind=kind, recipe=r, tokens=a.tokens, steps=a.steps, rounds=a.rounds,
                   windows=wins)
        for e in wins:
            rec[e] = {key: summary(wins[e], key)
                      for key in ("mj_per_step", "ms_per_step", "avg_w", "sm_mhz_avg",
                                  "sm_mhz_min")}
        rec["te_mlir_over_te"] = {
            key: rec["te_mlir"][key]["median"] / rec["te"][key]["median"]
            for key in ("mj_per_step", "ms_per_step", "avg_w", "sm_mhz_avg")}
        print(json.dumps({k: v for k, v in rec.items() if k != "windows"}), flush=True)
        results.append(rec)
        del mods, x, dy
        torch.cuda.empty_cache()
json.dump(results, open(a.out, "w"), indent=1)


def cell(s, fmt="%.0f"):
    return f"{fmt % s['median']} ({fmt % s['min']}-{fmt % s['max']})"


print("\n| module | recipe | engine | mJ / step | ms / step | W | SM MHz avg | SM MHz min |")
print("|---|---|---|---|---|---|---|---|")
for rec in results:
    for e in ("te", "te_mlir"):
        s = rec[e]
        print(f"| {rec['kind']} | {rec['recipe']} | {e} | {cell(s['mj_per_step'])} | "
              f"{cell(s['ms_per_step'], '%.2f')} | {cell(s['avg_w'])} | "
              f"{cell(s['sm_mhz_avg'])} | {cell(s['sm_mhz_min'])} |")
    q = rec["te_mlir_over_te"]
    print(f"| {rec['kind']} | {rec['recipe']} | te_mlir / TE | {q['mj_per_step']:.3f} | "
          f"{q['ms_per_step']:.3f} | {q['avg_w']:.3f} | {q['sm_mhz_avg']:.3f} | |")
