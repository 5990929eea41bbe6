#!/usr/bin/env python3
"""Writes the te IR of the benchmark cases (bench/cases/*.mlir; committed).

  python3 bench/gen_cases.py [OUT_DIR] [--tiny]

--tiny writes small shapes of every kind (for a cpu-backend plumbing check of bench.py).
Every dim of every case (tokens, hidden, ffn/out) is a multiple of 16, as FP8 GEMMs on the
GPU need, so bench/compile_cases.sh builds each case in bf16, fp8-current and fp8-delayed.
"""
import os
import sys


def T(*s):
    return "tensor<" + "x".join(map(str, s)) + "xbf16>"


def func(args, op, out):
    sig = ", ".join(f"%{n}: {t}" for n, t in args)
    types = ", ".join(t for _, t in args)
    return (f"func.func @step({sig}) -> {out} {{\n"
            f"  %y = {op} : ({types}) -> {out}\n"
            f"  return %y : {out}\n}}\n")


def ln_mlp_gelu(M, H, F):
    return func([("x", T(M, H)), ("g", T(H)), ("b", T(H)), ("w1", T(F, H)), ("b1", T(F)),
                 ("w2", T(H, F)), ("b2", T(H))],
                "te.layernorm_mlp %x norm layer_norm(%g, %b) fc1(%w1, %b1) act gelu fc2(%w2, %b2)",
                T(M, H))


def rms_mlp_swiglu(M, H, F):
    # gated: fc1 is [2F, H], activated half first
    return func([("x", T(M, H)), ("g", T(H)), ("w1", T(2 * F, H)), ("w2", T(H, F))],
                "te.layernorm_mlp %x norm rms_norm(%g) fc1(%w1) act swiglu fc2(%w2)", T(M, H))


def ln_linear(M, H, N):
    return func([("x", T(M, H)), ("g", T(H)), ("b", T(H)), ("w", T(N, H)), ("bias", T(N))],
                "te.layernorm_linear %x norm layer_norm(%g, %b) weight(%w, %bias)", T(M, N))


KINDS = dict(ln_mlp_gelu=ln_mlp_gelu, rms_mlp_swiglu=rms_mlp_swiglu, ln_linear=ln_linear)
CASES = [(k, s) for s in [(4096, 1024, 4096), (8192, 4096, 16384), (16, 4096, 16384)]
         for k in ("ln_mlp_gelu", "rms_mlp_swiglu")] + [("ln_linear", (8192, 4096, 12288))]
# The seeds' host-bound shapes (input [8, 2, 256]: 16 tokens, hidden 256, ffn 1024; the
# anchors' seed_overhead.py LayerNormLinear is 256 -> 768, the older case 256 -> 256):
# where per-step host overhead dominates.
CASES += [("ln_linear", (16, 256, 256)), ("ln_linear", (16, 256, 768)),
          ("ln_mlp_gelu", (16, 256, 1024)), ("rms_mlp_swiglu", (16, 256, 1024))]
# 16-token tiny cases of every kind: compile_cases.sh builds their FP8 weight-cache
# libraries too (<case>.<recipe>.wc.so), so the plumbing check runs that path.
TINY = [(k, (64, 128, 256)) for k in KINDS] + [(k, (16, 128, 256)) for k in KINDS]

if __name__ == "__main__":
    argv = [a for a in sys.argv[1:] if a != "--tiny"]
    out = argv[0] if argv else os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")
    os.makedirs(out, exist_ok=True)
    for kind, (M, H, F) in (TINY if "--tiny" in sys.argv else CASES):
        name = f"{kind}_{M}x{H}x{F}"
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(KINDS[kind](M, H, F))
        print(name)
