#!/usr/bin/env python3
"""Where a te_mlir module's host time goes, step by step (CPU µs per call, median of
rounds), on the seeds' shape [8, 2, 256] (LayerNormLinear 256 -> 768, bf16):

  te_module_run (Entry.run, arrays prebuilt)    the compiled entries alone
  op below autograd (fwd, bwd)                  + the dispatcher and the C++ kernel
  Function.apply fwd                            + the autograd.Function
  module fwd                                    + nn.Module and the module's forward
  module fwd + y.backward(dy)                   + the autograd engine
  module fwd + loss backward                    seed_overhead.py's step
  torch eager, same two steps                   the reference
  TE fwd + loss backward                        TransformerEngine's LayerNormLinear, same
                                                weights and step (when importable; imported
                                                before te_mlir)
  floor: null module fwd + loss backward        the least any module costs in this step:
                                                the same five tensors through one
                                                autograd.Function that does no work
                                                (PyTorch's engine, the loss, the
                                                gradient accumulation)
  ... under torch.compile                       the same three (te_mlir, torch, null)
                                                compiled with fullgraph=True: the floor
                                                of torch.compile's per-call runtime

    python bench/host_profile.py --device cuda [--out FILE.json] [--hidden 256]

--hidden H: the module is LayerNormLinear H -> 3H on [8, 2, H] (on a CPU machine, a small H
keeps the CPU backend's arithmetic out of the host time).
"""
import argparse, json, os, statistics, time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="cuda")
ap.add_argument("--out", default=None)
ap.add_argument("--iters", type=int, default=300)
ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile steps")
ap.add_argument("--cprofile", default="eager",
                help="comma list of the steps whose Python profile is printed at the end: "
                     "eager (module fwd + backward(dy)), compiled, null-compiled")
ap.add_argument("--hidden", type=int, default=256)
ap.add_argument("--te", default="auto", choices=["auto", "on", "off"],
                help="TransformerEngine's module as one more row (auto: when importable)")
args = ap.parse_args()
torch.set_num_threads(1)
H, N = args.hidden, 3 * args.hidden
tep = None
if args.te != "off" and args.device != "cpu":
    try:  # before te_mlir's runtime is loaded (docs/python.md)
        import transformer_engine.pytorch as tep
    except Exception as ex:
        if args.te == "on":
            raise
        print(f"(TransformerEngine not importable: {ex!r:.120})")
import te_mlir.torch as tet
from te_mlir import _abi
from te_mlir._abi import i64s

dev = torch.device(args.device)
sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
m = tet.LayerNormLinear(H, N, params_dtype=torch.bfloat16, device=dev)
x = torch.randn(8, 2, H, dtype=torch.bfloat16, device=dev, requires_grad=True)
y = m(x)
dy = torch.randn_like(y)
fn = m.function()
ops = fn.ops
fwd = ops.op("layernorm_linear_fwd")._op
bwd = ops.op("layernorm_linear_bwd")._op
ps = [x.detach().reshape(16, H)] + [p.detach() for p in m.parameters()]
below = torch._C._AutoDispatchBelowAutograd
with below():
    outs = fwd(*ps)
step = ops.step("layernorm_linear_fwd")
bargs = [ps[k] if kind == _abi.FEED_INPUT else
         (outs[k] if kind == _abi.FEED_RESULT else dy.reshape(16, N))
         for kind, k in step.feeds]


def tm(f, n=args.iters):
    for _ in range(20):
        f()
    sync()
    ts = []
    for _ in range(7):
        c0 = time.process_time()
        for _ in range(n):
            f()
        sync()
        ts.append((time.process_time() - c0) / n * 1e6)
    return round(statistics.median(ts), 1)


res = {}
lib = ops.library
for name, a_, r_ in (("layernorm_linear_fwd", ps, outs), ("layernorm_linear_bwd", bargs, None)):
    e = lib.entry(name)
    with below():
        r_ = r_ if r_ is not None else bwd(*bargs)
    ctx = lib.context(dev.index or 0) if dev.type == "cuda" else lib.context(0)
    if dev.type == "cuda":
        nws = lib._rt.workspace_bytes()
        ws = torch.empty(nws + 256, dtype=torch.uint8, device=dev)
        ctx.set_workspace((ws.data_ptr() + 255) // 256 * 256, nws)
        ctx.set_stream(torch.cuda.current_stream().cuda_stream)
    n = e.arena_bytes([16])
    arena = torch.empty(n + 256, dtype=torch.uint8, device=dev)
    if n:
        ctx.set_arena((arena.data_ptr() + 255) // 256 * 256, n)
    # the arrays built once: what is timed is Entry.run's te_module_run call
    aa = _abi.addresses([t.data_ptr() for t in a_])
    rr = _abi.addresses([t.data_ptr() for t in r_])
    d = i64s([16])
    res[f"te_module_run {name}"] = tm(lambda: e.run(ctx, aa, rr, d))
    if n:
        ctx.set_arena(None, 0)


def f1():
    with below():
        fwd(*ps)


def f2():
    with below():
        bwd(*bargs)


res["op fwd (below autograd)"] = tm(f1)
res["op bwd (below autograd)"] = tm(f2)
Fn = fn.training_function()
pl = [x.reshape(16, H)] + list(m.parameters())
res["Function.apply fwd"] = tm(lambda: Fn.apply(*pl))
res["module fwd"] = tm(lambda: m(x))


def loss_step(mod):
    def f():
        x.grad = None
        mod(x).float().square().sum().backward()
    return f


def s1():
    x.grad = None
    m(x).backward(dy)


def s2():
    x.grad = None
    m(x).float().square().sum().backward()


res["module fwd + backward(dy)"] = tm(s1)
res["module fwd + loss backward"] = tm(s2)
ref = torch.nn.Sequential(torch.nn.LayerNorm(H), torch.nn.Linear(H, N)).to(dev, torch.bfloat16)


def t1():
    x.grad = None
    ref(x).backward(dy)


def t2():
    x.grad = None
    ref(x).float().square().sum().backward()


res["torch fwd + backward(dy)"] = tm(t1)
res["torch fwd + loss backward"] = tm(t2)
yy = ref(x).detach().requires_grad_()
if tep is not None:
    te_m = tep.LayerNormLinear(H, N, params_dtype=torch.bfloat16, device=dev)
    with torch.no_grad():
        for (_, a), b in zip(te_m.named_parameters(), m.parameters()):
            a.copy_(b)
    res["TE fwd + loss backward"] = tm(loss_step(te_m))
res["loss alone (fwd + backward)"] = tm(lambda: yy.float().square().sum().backward())


class _Null(torch.autograd.Function):
    """No work: the output is allocated, the gradients are kept tensors."""
    @staticmethod
    def forward(ctx, x, *params):
        return x.new_empty(x.shape[:-1] + (N,))

    @staticmethod
    def backward(ctx, dy):
        return _NULL_GRADS


class NullModule(torch.nn.Module):
    def __init__(self, like):
        super().__init__()
        for k, p in enumerate(like.parameters()):  # plain attributes: Dynamo traces them
            setattr(self, f"p{k}", torch.nn.Parameter(p.detach().clone()))

    def forward(self, x):
        return _Null.apply(x, self.p0, self.p1, self.p2, self.p3)


null = NullModule(m)
_NULL_GRADS = (torch.zeros_like(x),) + tuple(torch.zeros_like(p) for p in null.parameters())


res["floor: null module fwd + loss backward"] = tm(loss_step(null))
compiled = {}
for name, mod in () if args.no_compile else (("module", m), ("torch", ref),
                                               ("floor: null module", null)):
    compiled[name] = loss_step(torch.compile(mod, fullgraph=True))
    res[f"{name} compiled + loss backward"] = tm(compiled[name])
for k, v in res.items():
    print(f"{k:40s} {v:8.1f} us")
if args.out:
    json.dump(res, open(args.out, "w"), indent=1)
import cProfile, pstats
for what in filter(None, args.cprofile.split(",")):
    f = s1 if what == "eager" else compiled.get(
        {"compiled": "module", "null-compiled": "floor: null module"}[what])
    if f is None:
        print(f"\n(no Python profile of {what}: --no-compile)")
        continue
    print(f"\n== Python profile: {what}, 300 steps")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(300):
        f()
    sync()
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(30)
