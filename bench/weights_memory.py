#!/usr/bin/env python3
"""GPU memory of one training step by how the weights are kept, te_mlir.torch against
TransformerEngine, same shapes and recipe, engines interleaved in one process. The method
is the anchors' module_memory.py (MiB above the pre-step level): held = allocated between
forward and backward (saved tensors + output), peak = max_memory_allocated during fwd+bwd;
resident = what the module holds after construction (its parameters), and kept = what it
holds between steps after two warm-up steps (TE's persistent FP8 weight workspaces too). Variants:
trained (the weights in params_dtype), frozen (requires_grad=False) and, for the FP8
recipes, fp8_params (built inside quantized_model_init: FP8 primary weights).

    python3 bench/weights_memory.py --out OUT.json          # H200: TE from .te-peer
    python3 bench/weights_memory.py --prefill               # here: compile te_mlir's
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
ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "weights_memory.json"))
ap.add_argument("--variants", default="trained,frozen,fp8_params")
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
    raise SystemExit(0)  # (fp8_params: the trained library of the recipe)

try:  # (without TE, te_mlir's rows alone: a quick check against an earlier TE run)
    import transformer_engine.pytorch as tep  # noqa: E402
    from transformer_engine.common import recipe as ter  # noqa: E402
except ImportError as ex:
    print(f"TransformerEngine not importable ({ex}): te_mlir's rows only", flush=True)
    tep = ter = None


def te_recipe(r):
    return {"fp8-current": ter.Float8CurrentScaling, "fp8-delayed": ter.DelayedScaling,
            "fp8-block": ter.Float8BlockScaling}[r]()


def ctx(engine, r):
    if r == "bf16":
        return contextlib.nullcontext()
    if engine == "te_mlir":
        return tem.fp8_autocast(enabled=True, fp8_recipe=r)
    return tep.fp8_autocast(enabled=True, fp8_recipe=te_recipe(r))


def init_ctx(engine, r, variant):
    if variant != "fp8_params":
        return contextlib.nullcontext()
    if engine == "te_mlir":
        return tem.quantized_model_init(enabled=True, recipe=r)
    return tep.quantized_model_init(enabled=True, recipe=te_recipe(r))


def measure(engine, ns, kind, r, variant, weights):
    gc.collect()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    with init_ctx(engine, r, variant):
        m = build(ns, kind, "cuda")
    torch.cuda.synchronize()
    gc.collect()
    resident = (torch.cuda.memory_allocated() - base) * MiB
    if variant == "frozen":
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
    # what the module keeps between steps (parameters, recipe state and, for TE, its
    # persistent FP8 weight workspaces, made at the first step), x aside
    kept = (pre - base - x.numel() * x.element_size()) * MiB
    torch.cuda.reset_peak_memory_stats()
    with ctx(engine, r):
        y = m(x)
    torch.cuda.synchronize()
    held = (torch.cuda.memory_allocated() - pre) * MiB
    y.backward(torch.ones_like(y))
    torch.cuda.synchronize()
    peak = (torch.cuda.max_memory_allocated() - pre) * MiB
    grads = sorted(n for n, p in m.named_parameters() if p.grad is not None)
    return dict(kind=kind, recipe=r, variant=variant, engine=engine,
                resident_mib=round(resident, 1), kept_between_steps_mib=round(kept, 1),
                held_fwd_to_bwd_mib=round(held, 1),
                peak_step_mib=round(peak, 1), grads=grads)


res = []
rows = []
for kind, weights in KINDS.items():
    for r in a.recipes.split(","):
        for variant in a.variants.split(","):
            if variant == "fp8_params" and r == "bf16":
                continue
            rows.append((kind, r, variant))
            for engine, ns in (("te", tep), ("te_mlir", tem)):
                if ns is None:
                    continue
                try:
                    rec = measure(engine, ns, kind, r, variant, weights)
                except Exception as ex:  # reported, the other rows still run
                    rec = dict(kind=kind, recipe=r, variant=variant, engine=engine,
                               error=f"{type(ex).__name__}: {str(ex).splitlines()[0]}")
                print(json.dumps(rec), flush=True)
                res.append(rec)
json.dump(res, open(a.out, "w"), indent=1)
print("\n| module | recipe | weights | resident TE / te_mlir | kept between steps TE / te_mlir "
      "| held TE / te_mlir | peak TE / te_mlir |")
print("|---|---|---|---|---|---|---|")
for kind, r, variant in rows:
    t = {x["engine"]: x for x in res
         if x["kind"] == kind and x["recipe"] == r and x["variant"] == variant}

    def pair(key):
        return " / ".join(str(t[e].get(key, t[e].get("error", "?"))) if e in t else "-"
                          for e in ("te", "te_mlir"))
    print(f"| {kind} | {r} | {variant} | {pair('resident_mib')} | "
          f"{pair('kept_between_steps_mib')} | {pair('held_fwd_to_bwd_mib')} | "
          f"{pair('peak_step_mib')} |")
