#!/usr/bin/env python3
"""A repro attempt for the illegal memory access seen under torch.compile
mode="reduce-overhead" in bench/decoder_layer.py's 16-token runs with TransformerEngine in
the process (2026-12-06 (q) and (s), H100; docs/bench.md): the pure-torch LLaMA-style layer
stepped eagerly, then under torch.compile default, then reduce-overhead, in one process,
after importing the packages in the order given.

    python3 bench/diag_ro_crash.py IMPORTS [--sdpa cudnn|flash|math|default] [--steps N]

IMPORTS: a comma list of te (transformer_engine.pytorch) and tm (te_mlir.torch), in import
order, or "none". Prints "<stage> ok" after each stage's steps and a synchronize, so the
last line says which stage failed.
"""
import argparse
import os
import sys

import torch

ap = argparse.ArgumentParser()
ap.add_argument("imports")
ap.add_argument("--sdpa", default="default", choices=["default", "cudnn", "flash", "math"])
ap.add_argument("--steps", type=int, default=200)
args = ap.parse_args()
for m in args.imports.split(","):
    if m == "te":
        import transformer_engine.pytorch  # noqa: F401
    elif m == "tm":
        import te_mlir.torch  # noqa: F401
    elif m != "none":
        sys.exit(f"unknown import {m!r}")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import decoder_layer as dl  # noqa: E402

if args.sdpa != "default":  # only the chosen SDPA backend
    torch.backends.cuda.enable_cudnn_sdp(args.sdpa == "cudnn")
    torch.backends.cuda.enable_flash_sdp(args.sdpa == "flash")
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    torch.backends.cuda.enable_math_sdp(args.sdpa == "math")
dev = torch.device("cuda")
dt = torch.bfloat16
torch.manual_seed(0)
layer = dl.TorchLayer(4096, 14336, 32, 1e-5, dt, dev)
cos, sin = dl.rotary(16, 128, dev, dt)
x = torch.randn(1, 16, 4096, device=dev, dtype=dt, requires_grad=True)
dy = torch.randn_like(x)
for stage in ("eager", "default", "reduce-overhead"):
    f = layer if stage == "eager" else torch.compile(
        layer, mode=None if stage == "default" else stage)
    for _ in range(args.steps):
        x.grad = None
        f(x, cos, sin).backward(dy)
    torch.cuda.synchronize()
    print(f"{args.imports} sdpa={args.sdpa}: {stage} ok", flush=True)
    torch._dynamo.reset()
