#!/usr/bin/env python3
"""Compile-time benchmark: te-compile on N chained LayerNormMLP layers.

  python3 bench/compile_time.py [--layers 1,12,96,250,500,1000]
                                [--recipes bf16,fp8-delayed] [--checkpoint]
                                [--te-compile build/bin/te-compile]
                                [--tokens 16 --hidden 64 --ffn 256]
                                [--flags "--dedup-layers=off"] [--keep DIR]
                                [--markdown]

Each model is one function of N layers (te IR): layer i is
`h_{i+1} = h_i + te.layernorm_mlp(h_i)` (LayerNorm, FC1 with bias, tanh GELU,
FC2 with bias; bf16; its own weights as arguments), the usual pre-norm
residual stack. Every model is compiled with `te-compile --train` (and
--recipe R for R != bf16) to a shared library under /usr/bin/time -v; the
table gives the wall time, the CPU time (user + system: what the compiler
itself costs on a busy machine), the peak RSS and te-compile's own phase times
(--mlir-timing: its passes, then the LLVM IR translation, LLVM's optimizer,
its code generator and the link), the largest first.

--check-identical OLD_TE_COMPILE compares instead: the N-layer models
compiled by OLD_TE_COMPILE (e.g. a build without layer deduplication) and by
--te-compile with --dedup-layers=off, auto and on (bf16 and fp8-delayed,
--train and --train --checkpoint) must list the same entries (te-run --list)
and give byte-identical te-run results on the CPU backend (the training step
and the inference entry, seeded random inputs).

Standard library only; runs with any python3.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tensor(*shape, dtype="bf16"):
    return "tensor<" + "x".join(map(str, shape)) + "x" + dtype + ">"


def model(n, tokens, hidden, ffn):
    """te IR of n chained pre-norm LayerNormMLP layers with residual adds."""
    x = tensor(tokens, hidden)
    args = [f"%x: {x}"]
    body = []
    h = "%x"
    mlp_types = ", ".join([x, tensor(hidden), tensor(hidden), tensor(ffn, hidden),
                           tensor(ffn), tensor(hidden, ffn), tensor(hidden)])
    for i in range(n):
        args += [f"%g{i}: {tensor(hidden)}", f"%b{i}: {tensor(hidden)}",
                 f"%w1_{i}: {tensor(ffn, hidden)}", f"%c1_{i}: {tensor(ffn)}",
                 f"%w2_{i}: {tensor(hidden, ffn)}", f"%c2_{i}: {tensor(hidden)}"]
        body.append(f"  %m{i} = te.layernorm_mlp {h} norm layer_norm(%g{i}, %b{i}) "
                    f"fc1(%w1_{i}, %c1_{i}) act gelu fc2(%w2_{i}, %c2_{i}) : "
                    f"({mlp_types}) -> {x}")
        body.append(f"  %h{i} = arith.addf {h}, %m{i} : {x}")
        h = f"%h{i}"
    return (f"func.func @model({', '.join(args)}) -> {x} {{\n" + "\n".join(body) +
            f"\n  return {h} : {x}\n}}\n")


def parse_time_v(text):
    """Wall seconds, CPU (user + system) seconds and peak RSS (MB) from
    /usr/bin/time -v."""
    wall = rss = None
    cpu = 0.0
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("User time (seconds)", "System time (seconds)")):
            cpu += float(line.rsplit(" ", 1)[-1])
        if line.startswith("Elapsed (wall clock) time"):
            parts = line.rsplit(" ", 1)[-1].split(":")
            wall = 0.0
            for p in parts:
                wall = wall * 60 + float(p)
        elif line.startswith("Maximum resident set size"):
            rss = int(line.rsplit(" ", 1)[-1]) / 1024.0
    return wall, cpu, rss


def parse_timing(text):
    """{name: wall seconds} from an MLIR timing report (--mlir-timing), top
    level and nested entries by their own names (pipeline wrappers skipped)."""
    phases = {}
    in_report = False
    for line in text.splitlines():
        if "Execution time report" in line:
            in_report = True
            continue
        if not in_report:
            continue
        m = re.match(r"\s*([0-9.]+)\s+\(\s*[0-9.]+%\)\s+(.*\S)\s*$", line)
        if not m:
            continue
        name = m.group(2).strip()
        if name in ("Total", "root", "Rest") or name.startswith(("'", "(A)")):
            continue
        phases[name] = phases.get(name, 0.0) + float(m.group(1))
    return phases


def short(name):
    """TEFuseGemmEpiloguesPass -> FuseGemmEpilogues."""
    name = re.sub(r"Pass$", "", name)
    name = re.sub(r"^TE", "", name)
    return name


def run_one(te_compile, src, out, recipe, checkpoint, flags, timing):
    cmd = [te_compile, src, "--train", "-o", out]
    if recipe != "bf16":
        cmd += ["--recipe", recipe]
    if checkpoint:
        cmd.append("--checkpoint")
    cmd += flags
    if timing:
        cmd.append("--mlir-timing")
    proc = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"failed: {' '.join(cmd)}")
    wall, cpu, rss = parse_time_v(proc.stderr)
    return wall, cpu, rss, parse_timing(proc.stderr), " ".join(cmd)


def files_of(d):
    out = {}
    for root, _, names in os.walk(d):
        for n in names:
            path = os.path.join(root, n)
            with open(path, "rb") as f:
                out[os.path.relpath(path, d)] = f.read()
    return out


def check_identical(a, work):
    """Compiles each model with the old and the new compiler (3 modes), runs
    te-run on each and compares every output file byte for byte."""
    te_run = os.path.join(os.path.dirname(a.te_compile), "te-run")
    env = dict(os.environ, TE_RT_BACKEND="cpu")
    ok = True
    for n in [int(s) for s in a.layers.split(",")]:
        src = os.path.join(work, f"chain{n}.mlir")
        with open(src, "w") as f:
            f.write(model(n, a.tokens, a.hidden, a.ffn))
        for recipe in a.recipes.split(","):
            for ck in ([], ["--checkpoint"]):
                flags = ["--train"] + ck + ([] if recipe == "bf16" else ["--recipe", recipe])
                results = {}
                for name, tc, extra in [("old", a.check_identical, []),
                                        ("off", a.te_compile, ["--dedup-layers=off"]),
                                        ("auto", a.te_compile, ["--dedup-layers=auto"]),
                                        ("on", a.te_compile, ["--dedup-layers=on"])]:
                    lib = os.path.join(work, f"chain{n}.{recipe}{''.join(ck)}.{name}.so")
                    subprocess.run([tc, src, "-o", lib] + flags + extra, check=True)
                    listing = subprocess.run([te_run, lib, "--list"], check=True, env=env,
                                             capture_output=True).stdout
                    outs = {"list": listing}
                    for what, args in (("step", ["--step", "model"]), ("inf", ["--entry", "model"])):
                        d = os.path.join(work, f"out.{n}.{recipe}{''.join(ck)}.{name}.{what}")
                        subprocess.run([te_run, lib, "--backend", "cpu", "--random", "7",
                                        "--outputs", d] + args, check=True, env=env,
                                       capture_output=True)
                        outs.update({f"{what}/{k}": v for k, v in files_of(d).items()})
                    results[name] = outs
                same = all(results[m] == results["old"] for m in ("off", "auto", "on"))
                ok &= same
                print(f"{n:5d} layers {recipe}{' --checkpoint' if ck else ''}: "
                      f"{len(results['old']) - 1} result files "
                      f"{'byte-identical' if same else 'DIFFERENT'} (old, off, auto, on)",
                      flush=True)
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", default="1,12,96,250,500,1000")
    p.add_argument("--recipes", default="bf16,fp8-delayed")
    p.add_argument("--checkpoint", action="store_true")
    p.add_argument("--te-compile", default=os.path.join(ROOT, "build", "bin", "te-compile"))
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--ffn", type=int, default=256)
    p.add_argument("--flags", default="", help="extra te-compile flags")
    p.add_argument("--no-timing", action="store_true",
                   help="do not pass --mlir-timing (a te-compile without it)")
    p.add_argument("--top", type=int, default=4, help="phases listed per row")
    p.add_argument("--keep", help="write the models and libraries here")
    p.add_argument("--markdown", action="store_true", help="a Markdown table")
    p.add_argument("--check-identical", metavar="OLD_TE_COMPILE",
                   help="compare results with this compiler's instead of timing")
    a = p.parse_args()

    work = a.keep or tempfile.mkdtemp(prefix="te-compile-time-")
    os.makedirs(work, exist_ok=True)
    if a.check_identical:
        ok = check_identical(a, work)
        if not a.keep:
            import shutil
            shutil.rmtree(work)
        raise SystemExit(0 if ok else 1)
    flags = a.flags.split()
    rows = []
    for recipe in a.recipes.split(","):
        for n in [int(s) for s in a.layers.split(",")]:
            src = os.path.join(work, f"chain{n}.mlir")
            if not os.path.exists(src):
                with open(src, "w") as f:
                    f.write(model(n, a.tokens, a.hidden, a.ffn))
            out = os.path.join(work, f"chain{n}.{recipe}.so")
            wall, cpu, rss, phases, cmd = run_one(a.te_compile, src, out, recipe,
                                             a.checkpoint, flags, not a.no_timing)
            top = sorted(phases.items(), key=lambda kv: -kv[1])[:a.top]
            rows.append((recipe, n, wall, cpu, rss, top))
            line = (f"{recipe:12s} {n:5d} layers  {wall:7.2f} s  cpu {cpu:7.2f} s  "
                    f"{rss:7.0f} MB  " +
                    "  ".join(f"{short(k)} {v:.2f}" for k, v in top))
            if not a.markdown:
                print(line, flush=True)
            else:
                sys.stderr.write(line + "\n")
    if a.markdown:
        mode = " --checkpoint" if a.checkpoint else ""
        print("| recipe | layers | seconds (wall) | CPU s | CPU ms / layer | peak RSS MB | "
              "largest phases (s) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
        for recipe, n, wall, cpu, rss, top in rows:
            print(f"| {recipe}{mode} | {n} | {wall:.2f} | {cpu:.2f} | {1000 * cpu / n:.1f} | "
                  f"{rss:.0f} | " +
                  ", ".join(f"{short(k)} {v:.2f}" for k, v in top) + " |")
    if not a.keep:
        for f in os.listdir(work):
            os.remove(os.path.join(work, f))
        os.rmdir(work)


if __name__ == "__main__":
    main()
