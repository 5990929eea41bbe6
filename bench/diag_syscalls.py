#!/usr/bin/env python3
"""System calls and host time per call of a LayerNormLinear (256 -> 768, 16 tokens, bf16)
forward and training step, te_mlir's module against torch's LayerNorm + Linear, on the
GPU: read/write system calls and context switches per call from /proc/self/{io,status}
(no strace needed), wall and process CPU µs per call over 3000 calls.

    python3 bench/diag_syscalls.py [both|te_mlir|torch]

On the CPU backend `strace -c` found the kernels asking glibc for the CPU count ten times
per entry (each a read of /sys/devices/system/cpu/online); this checks the CUDA path.
"""
import sys
import time

import torch

import te_mlir.torch as tet

torch.manual_seed(0)
dev = "cuda"


def io():
    d = dict(l.strip().split(": ") for l in open("/proc/self/io"))
    return int(d["syscr"]), int(d["syscw"])


def ctx():
    d = dict(l.split(":\t") for l in open("/proc/self/status") if "ctxt" in l)
    return int(d["voluntary_ctxt_switches"]), int(d["nonvoluntary_ctxt_switches"])


te_m = tet.LayerNormLinear(256, 768, params_dtype=torch.bfloat16, device=dev)
ln = torch.nn.LayerNorm(256, dtype=torch.bfloat16, device=dev)
lin = torch.nn.Linear(256, 768, dtype=torch.bfloat16, device=dev)
x = torch.randn(16, 256, device=dev, dtype=torch.bfloat16, requires_grad=True)
dy = torch.randn(16, 768, device=dev, dtype=torch.bfloat16)
engines = {"te_mlir": lambda: te_m(x), "torch": lambda: lin(ln(x))}
which = sys.argv[1] if len(sys.argv) > 1 else "both"
for name, f in engines.items():
    if which not in ("both", name):
        continue
    for phase in ("fwd", "step"):
        def one():
            x.grad = None
            y = f()
            if phase == "step":
                y.backward(dy)
        for _ in range(200):
            one()
        torch.cuda.synchronize()
        n = 3000
        r0, c0, t0, p0 = io(), ctx(), time.perf_counter(), time.process_time()
        for _ in range(n):
            one()
        torch.cuda.synchronize()
        t1, p1, r1, c1 = time.perf_counter(), time.process_time(), io(), ctx()
        print(f"{name:8} {phase:5} wall {1e6*(t1-t0)/n:7.1f} us  cpu {1e6*(p1-p0)/n:7.1f} us  "
              f"read-syscalls/call {(r1[0]-r0[0])/n:.2f}  write-syscalls/call {(r1[1]-r0[1])/n:.2f}  "
              f"ctx-switches/call {(c1[0]-c0[0])/n:.2f}/{(c1[1]-c0[1])/n:.2f}", flush=True)
