#!/usr/bin/env python3
"""Host cost of a te_mlir module eager and under torch.compile, beside PyTorch's floor, on
the CPU backend (issue 30): µs per `x.grad = None; m(x).backward(dy)` of

  eager            te_mlir.torch.LayerNormLinear(32 -> 96), 16 tokens, bf16
  compiled         the same module under torch.compile(fullgraph=True)
  null eager       a module that does no work: one autograd.Function over the same
                   tensors, the output and gradients allocated (PyTorch's engine)
  null compiled    that module under torch.compile(fullgraph=True)

"compiled - null compiled" is what is te_mlir's in the compiled step. One thread,
interleaved rounds, medians.

    TE_MLIR_BUILD=build PYTHONPATH=python python bench/compiled_host_cpu.py [--rounds 9]
"""
import argparse, os, statistics, time

os.environ.setdefault("TE_RT_CPU_THREADS", "1")
import torch
import te_mlir.torch as tet

# compile afresh: a graph cached on disk by an older te_mlir would call the ops another way
torch._inductor.config.force_disable_caches = True

ap = argparse.ArgumentParser()
ap.add_argument("--rounds", type=int, default=9)
ap.add_argument("--iters", type=int, default=300)
args = ap.parse_args()
torch.set_num_threads(1)
T, H = 16, 32
m = tet.LayerNormLinear(H, 3 * H, params_dtype=torch.bfloat16, device="cpu", target="cpu")
x = torch.randn(T, H, dtype=torch.bfloat16, requires_grad=True)
dy = torch.randn_like(m(x))
P = [torch.nn.Parameter(p.detach().clone()) for p in m.parameters()]


class _Null(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, *p):
        return x.new_empty(x.shape[:-1] + (3 * H,))

    @staticmethod
    def backward(ctx, g):
        return (torch.empty_like(x),) + tuple(torch.empty_like(p) for p in P)


class NullModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        for i, p in enumerate(P):
            setattr(self, f"p{i}", p)

    def forward(self, x):
        return _Null.apply(x, self.p0, self.p1, self.p2, self.p3)


null = NullModule()


def step(mod):
    def f():
        x.grad = None
        mod(x).backward(dy)
    return f


steps = {"eager": step(m), "compiled": step(torch.compile(m, fullgraph=True)),
         "null eager": step(null), "null compiled": step(torch.compile(null, fullgraph=True))}
for f in steps.values():
    for _ in range(30):
        f()
res = {k: [] for k in steps}
for _ in range(args.rounds):
    for k, f in steps.items():
        t = time.perf_counter()
        for _ in range(args.iters):
            f()
        res[k].append((time.perf_counter() - t) / args.iters * 1e6)
med = {k: statistics.median(v) for k, v in res.items()}
for k, v in med.items():
    print(f"{k:14s} {v:7.1f} us")
print(f"{'compiled - null compiled':24s} {med['compiled'] - med['null compiled']:7.1f} us")
