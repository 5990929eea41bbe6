#!/usr/bin/env python3
"""GPU memory of one training step with frozen weights (requires_grad=False), te_mlir.torch
against TransformerEngine, same shapes and recipe, engines interleaved in one process. The
method is the anchors' module_memory.py (MiB above the pre-step level): held = allocated
between forward and backward (saved tensors + output), peak = max_memory_allocated during
fwd+bwd. Each module with its weights trainable, then frozen.

    python3 bench/frozen_memory.py --out OUT.json          # H200: TE from .te-peer
    python3 bench/frozen_memory.py --prefill               # here: compile te_mlir's
                                                           # libraries into TE_MLIR_CACHE
"""
import argparse
import contextlib
import gc
import json
import os

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--tokens", type=int, default=8192)
ap.add_argument("--hidden", type=int, default=4096)
ap.add_argument("--ffn", type=int, default=16384)
ap.add_argument("--recipes", default="bf16,fp8-current")
ap.add_argument("--prefill", action="store_true")
ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "frozen_memory.json"))
a = ap.parse_args()

import te_mlir.torch as tem  # noqa: E402

DT = torch.bfloat16
MiB = 1 / 2**20
KINDS = {"ln_mlp_gelu": ("fc1_weight", "fc2_weight"), "ln_linear": ("weight",)}


def build(ns, kind, device):
    if kind == "ln_mlp_gelu":
        return ns.LayerNormMLP(a.hidden, a.ffn, bias=True, activation="gelu", params_dtype=DT,
                               device=device)
    return ns.LayerNormLinear(a.hidden, 3 * a.hidden, bias=True, params_dtype=DT, device=device)


if a.prefill:  # the libraries the GPU run needs (target auto: the same cache keys)
    for kind, weights in KINDS.items():
        m = build(tem, kind, "cpu")
        for r in a.recipes.split(","):
            m._build(r, DT)
            m._build(r, DT, weights)
    raise SystemExit(0)

import transformer_engine.pytorch as tep  # noqa: E402
from transformer_engine.common import recipe as ter  # noqa: E402


def ctx(engine, r):
    if r == "bf16":
        return contextlib.nullcontext()
    if engine == "te_mlir":
        return tem.fp8_autocast(enabled=True, fp8_recipe=r)
    return tep.fp8_autocast(enabled=True, fp8_recipe={"fp8-current": ter.Float8CurrentScaling,
                                                       "fp8-delayed": ter.DelayedScaling}[r]())


res = []
for kind, weights in KINDS.items():
    for r in a.recipes.split(","):
        for frozen in (False, True):
            for engine, ns in (("te", tep), ("te_mlir", tem)):
                gc.collect()
                torch.cuda.empty_cache()
                m = build(ns, kind, "cuda")
                if frozen:
                    for n in weights:
                        m.get_parameter(n).requires_grad_(False)
                x = torch.randn(a.tokens, a.hidden, dtype=DT, device="cuda", requires_grad=True)
                for _ in range(2):  # warm-up: libraries, workspaces, recipe state
                    with ctx(engine, r):
                        y = m(x)
                    y.backward(torch.ones_like(y))
                    x.grad = None
                    for p in m.parameters():
                        p.grad = None
                torch.cuda.synchronize()
                gc.collect()
                pre = torch.cuda.memory_allocated()
                torch.cuda.reset_peak_memory_stats()
                with ctx(engine, r):
                    y = m(x)
                torch.cuda.synchronize()
                held = (torch.cuda.memory_allocated() - pre) * MiB
                y.backward(torch.ones_like(y))
                torch.cuda.synchronize()
                peak = (torch.cuda.max_memory_allocated() - pre) * MiB
                grads = sorted(n for n, p in m.named_parameters() if p.grad is not None)
                rec = dict(kind=kind, recipe=r, frozen=frozen, engine=engine,
                           held_fwd_to_bwd_mib=round(held, 1), peak_step_mib=round(peak, 1),
                           grads=grads)
                print(json.dumps(rec), flush=True)
                res.append(rec)
                del m, x, y
json.dump(res, open(a.out, "w"), indent=1)
print("\n| module | recipe | weights | held TE | held te_mlir | peak TE | peak te_mlir |")
print("|---|---|---|---|---|---|---|")
for kind in KINDS:
    for r in a.recipes.split(","):
        for frozen in (False, True):
            t = {x["engine"]: x for x in res
                 if x["kind"] == kind and x["recipe"] == r and x["frozen"] == frozen}
            print(f"| {kind} | {r} | {'frozen' if frozen else 'trained'} | "
                  f"{t['te']['held_fwd_to_bwd_mib']} | {t['te_mlir']['held_fwd_to_bwd_mib']} | "
                  f"{t['te']['peak_step_mib']} | {t['te_mlir']['peak_step_mib']} |")
