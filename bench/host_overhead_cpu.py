#!/usr/bin/env python3
"""Host cost of te_mlir.torch on the CPU backend: a module's eager fwd+bwd against
`te-run --step --bench` of the very same library (the compiled step with no Python).

    TE_MLIR_BUILD=build python bench/host_overhead_cpu.py [--iters 400] [--json OUT]

For LayerNormLinear and LayerNormMLP at 16 tokens, hidden 32 (FFN 128), bf16: the
median CPU time of `y = m(x); y.backward(dy)` over rounds of iterations (one thread),
and the median fwd + bwd of te-run --step NAME --bench N on the module's library, on
the same inputs, parameters and output gradient
(te-run --step takes the function's name). Both on one thread (TE_RT_CPU_THREADS=1,
torch.set_num_threads(1)); both wall time per step (te-run's --bench reports wall
medians; CPU time is reported too for the module). Prints the ratio module / te-run
(issue 30's target: at most 2.5x).

Also PyTorch's own floor for such a call, measured the same way: a step through a
Python autograd.Function that computes nothing (the module's input and parameters in,
an empty output of the module's shape out, empty gradients back, accumulated into the
same .grad tensors): what torch's autograd costs around any Python-autograd op, which
the module pays on top of the compiled step. `floor_ratio` = (that + te-run's step) /
te-run's step is the least ratio a module with a Python autograd.Function can reach;
`overhead_us` = module - (that + te-run's step) is te_mlir's own.

te-run is run three times and the fastest is kept: on a shared 2-core VM a te-run
process now and then runs 1.6x slower than the same command a moment later (the
module's rounds, interleaved, do not show it).
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile, time
from pathlib import Path

os.environ.setdefault("TE_RT_CPU_THREADS", "1")  # both sides on one thread
import numpy as np
import torch

ap = argparse.ArgumentParser()
ap.add_argument("--iters", type=int, default=400)
ap.add_argument("--rounds", type=int, default=7)
ap.add_argument("--json", default=None)
args = ap.parse_args()
torch.set_num_threads(1)

import te_mlir
import te_mlir.torch as tet

T, H, F = 16, 32, 128
out = []
for kind in ("LayerNormLinear", "LayerNormMLP"):
    m = (tet.LayerNormLinear(H, 3 * H, params_dtype=torch.bfloat16, device="cpu", target="cpu")
         if kind == "LayerNormLinear" else
         tet.LayerNormMLP(H, F, params_dtype=torch.bfloat16, device="cpu", target="cpu"))
    x = torch.randn(T, H, dtype=torch.bfloat16, requires_grad=True)
    y = m(x)
    dy = torch.randn_like(y)
    for _ in range(20):
        x.grad = None
        m(x).backward(dy)
    times, cpu = [], []
    for _ in range(args.rounds):
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(args.iters):
            x.grad = None
            m(x).backward(dy)
        times.append((time.perf_counter() - w0) / args.iters * 1e6)
        cpu.append((time.process_time() - c0) / args.iters * 1e6)
    # PyTorch's floor: the same inputs, output and gradients through a Function that
    # computes nothing
    params = [getattr(m, n) for n in m._param_names]

    class Null(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            return torch.empty_like(dy)

        @staticmethod
        def backward(ctx, g):
            return tuple(torch.empty_like(t) for t in [x] + params)

    for _ in range(20):
        x.grad = None
        Null.apply(x, *params).backward(dy)
    null = []
    for _ in range(args.rounds):
        w0 = time.perf_counter()
        for _ in range(args.iters):
            x.grad = None
            Null.apply(x, *params).backward(dy)
        null.append((time.perf_counter() - w0) / args.iters * 1e6)
    fn = m.function()
    lib = fn.ops.library.path
    terun = te_mlir.find_build("bin/te-run") / "bin" / "te-run"
    # te-run gets the module's very data: x, the parameters and dy (its --random values,
    # uniform in [-1, 1) for the weights too, run another code path's speed)
    d = Path(tempfile.mkdtemp())
    (d / "grads").mkdir()
    save = lambda f, t: np.save(f, t.detach().contiguous().view(torch.int16).numpy().view(np.uint16))
    for i, t in enumerate([x] + [getattr(m, n) for n in m._param_names]):
        save(d / f"arg{i}.bf16.npy", t)
    save(d / "grads" / "result0.bf16.npy", dy)
    runs = []
    for _ in range(3):
        r = subprocess.run([str(terun), str(lib), "--step", fn.name, "--inputs", str(d),
                            "--grads", str(d / "grads"), "--backend", "cpu",
                            "--bench", str(args.iters * 2)],
                           capture_output=True, text=True,
                           env={**os.environ, "OMP_NUM_THREADS": "1"})
        if r.returncode != 0:
            sys.exit(f"te-run failed: {r.stderr}")
        runs.append([float(v) for v in re.findall(r"median ([0-9.]+) us", r.stdout)])
    print(" ".join(map(str, r.args)), file=sys.stderr)
    med = min(runs, key=sum)
    step_us = sum(med)
    mod_us = statistics.median(times)
    null_us = statistics.median(null)
    rec = dict(module=kind, tokens=T, hidden=H, dtype="bf16", kernel=tet.ops.kernel_info()[0],
               module_us=round(mod_us, 1), module_us_min=round(min(times), 1),
               module_us_max=round(max(times), 1), module_cpu_us=round(statistics.median(cpu), 1),
               te_run_step_us=round(step_us, 1),
               te_run_entries_us=med, te_run_steps_us=[round(sum(v), 1) for v in runs],
               ratio=round(mod_us / step_us, 2), torch_floor_us=round(null_us, 1),
               floor_ratio=round((null_us + step_us) / step_us, 2),
               overhead_us=round(mod_us - null_us - step_us, 1))
    print(json.dumps(rec), flush=True)
    out.append(rec)
if args.json:
    Path(args.json).write_text(json.dumps(out, indent=1))
