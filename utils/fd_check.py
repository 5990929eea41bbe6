#!/usr/bin/env python3
"""Finite-difference check of a te-compile --train library's backward (f32 cases).

With a fixed seeded random output gradient g (one array per forward result), the
scalar L(args) = sum_r sum(g_r * main(args)_r) (accumulated in float64) has the gradient
dL/d arg_i = the backward's grad_arg<i> given g.  This script

  1. runs `te-run LIB --entry ENTRY` once on the inputs to learn the result shapes, writes
     g (N(0,1), --seed) to a temporary directory as result<r>.npy;
  2. runs `te-run LIB --step ENTRY --grads G` for the analytic gradients grad_arg<i>;
  3. for --samples random elements of every argument i, runs `te-run --entry ENTRY` with
     that argument perturbed to x+eps and x-eps (--input arg<i>=FILE) and forms the central
     difference (L(x+eps) - L(x-eps)) / (x+eps - (x-eps)), the denominator being the
     actual float32 step;
  4. checks |fd - an| <= atol + rtol * |an| per sample.

Prints one line per argument (`OK arg3: 4 samples, max |fd-an| = ...` or `FAIL ...` with
the worst sample) and exits 0 if all pass, 1 on any failed sample, 2 on bad input or a
te-run failure.

Choice of eps (f32): L sums O(100-1000) products of ~N(0,1) values, so float32 rounding
makes L noisy at ~1e-6 absolute; the central difference's noise is ~noise/eps and its
truncation error ~eps^2 * |d3L|.  eps = 1e-2 keeps both around 1e-4 for these modules
(eps = 1e-3 gives ~1e-3 noise, at the edge of atol); hence the default 1e-2.

Usage:
    fd_check.py --te-run build/bin/te-run --lib lib.so --inputs CASE/args \\
        [--entry main] [--eps 1e-2] [--samples 4] [--seed 0] [--rtol 2e-2] [--atol 1e-3]
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

TIMEOUT_S = 300


class CheckError(Exception):
    """Bad input or a failed te-run: reported as one message, exit status 2."""


def run_te(te_run: str, argv: list[str], what: str) -> None:
    cmd = [te_run] + argv
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except OSError as e:
        raise CheckError(f"cannot run {te_run}: {e.strerror or e}") from None
    except subprocess.TimeoutExpired:
        raise CheckError(f"{what}: te-run timed out after {TIMEOUT_S} s") from None
    if r.returncode != 0:
        tail = "\n".join((r.stderr.strip() or r.stdout.strip()).splitlines()[-8:])
        raise CheckError(f"{what}: te-run failed (exit {r.returncode}):\n  "
                         + tail.replace("\n", "\n  ") + "\n  command: " + " ".join(cmd))


def load_f32(path: str, what: str) -> np.ndarray:
    try:
        arr = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise CheckError(f"{what}: missing file {path}") from None
    except Exception as e:
        raise CheckError(f"{what}: cannot read {path} ({type(e).__name__}: {e})") from None
    if not isinstance(arr, np.ndarray):
        raise CheckError(f"{what}: {path} is not a single .npy array")
    if arr.dtype != np.float32:
        raise CheckError(f"{what}: {path} has dtype {arr.dtype}; fd_check handles f32 only")
    return arr


def find_args(inputs: str) -> list[str]:
    """Paths of arg0.npy .. arg<n-1>.npy (contiguous)."""
    if not os.path.isdir(inputs):
        raise CheckError(f"--inputs {inputs!r} is not a directory")
    idx = {}
    for f in os.listdir(inputs):
        m = re.fullmatch(r"arg(\d+)(\.bf16)?\.npy", f)
        if not m:
            continue
        if m.group(2):
            raise CheckError(f"{os.path.join(inputs, f)}: bf16 argument; fd_check handles f32 "
                             "cases only (finite differences in bf16 are meaningless)")
        idx[int(m.group(1))] = os.path.join(inputs, f)
    if not idx:
        raise CheckError(f"no arg<i>.npy files in {inputs}")
    missing = [i for i in range(max(idx) + 1) if i not in idx]
    if missing:
        raise CheckError(f"{inputs}: arguments not contiguous, missing arg{missing[0]}.npy")
    return [idx[i] for i in range(len(idx))]


def read_results(d: str, what: str) -> list[np.ndarray]:
    res = []
    while os.path.exists(os.path.join(d, f"result{len(res)}.npy")):
        res.append(load_f32(os.path.join(d, f"result{len(res)}.npy"), what))
    if not res:
        bf = [f for f in os.listdir(d) if f.endswith(".bf16.npy")] if os.path.isdir(d) else []
        if bf:
            raise CheckError(f"{what}: bf16 results ({bf[0]}); fd_check handles f32 only")
        raise CheckError(f"{what}: te-run wrote no result0.npy in {d}")
    return res


def loss(results: list[np.ndarray], g: list[np.ndarray], what: str) -> float:
    if len(results) != len(g):
        raise CheckError(f"{what}: {len(results)} results, expected {len(g)}")
    total = 0.0
    for r, gr in zip(results, g):
        if r.shape != gr.shape:
            raise CheckError(f"{what}: result shape {list(r.shape)} != {list(gr.shape)}")
        total += float(np.sum(r.astype(np.float64) * gr.astype(np.float64)))
    return total


def parse_scale(spec: str | None) -> tuple[int, float] | None:
    if spec is None:
        return None
    m = re.fullmatch(r"(?:arg)?(\d+)=([^=]+)", spec)
    try:
        if not m:
            raise ValueError
        return int(m.group(1)), float(m.group(2))
    except ValueError:
        raise CheckError(f"--debug-scale-grad expects I=FACTOR (e.g. 3=1.1), got {spec!r}") \
            from None


def check(a) -> int:
    if not math.isfinite(a.eps) or a.eps <= 0:
        raise CheckError(f"--eps must be a finite number > 0, got {a.eps}")
    for name, v in (("--rtol", a.rtol), ("--atol", a.atol)):
        if not math.isfinite(v) or v < 0:
            raise CheckError(f"{name} must be a finite number >= 0, got {v}")
    if a.samples < 1:
        raise CheckError(f"--samples must be >= 1, got {a.samples}")
    if not (os.path.isfile(a.te_run) and os.access(a.te_run, os.X_OK)):
        raise CheckError(f"--te-run {a.te_run!r} is not an executable file")
    if not os.path.isfile(a.lib):
        raise CheckError(f"--lib {a.lib!r} is not a file")
    scale = parse_scale(a.debug_scale_grad)
    lib = os.path.abspath(a.lib)
    arg_paths = find_args(a.inputs)
    args = [load_f32(p, f"argument {i}") for i, p in enumerate(arg_paths)]
    if scale is not None and scale[0] >= len(args):
        raise CheckError(f"--debug-scale-grad: no argument {scale[0]} ({len(args)} arguments)")
    inputs = os.path.abspath(a.inputs)
    rng = np.random.default_rng(a.seed)

    with tempfile.TemporaryDirectory(prefix="fd_check.") as tmp:
        # 1. result shapes, output gradient g
        base = os.path.join(tmp, "base")
        run_te(a.te_run, [lib, "--entry", a.entry, "--inputs", inputs, "--outputs", base],
               f"--entry {a.entry} (unperturbed)")
        res0 = read_results(base, f"--entry {a.entry}")
        gdir = os.path.join(tmp, "g")
        os.makedirs(gdir)
        g = []
        for r, out in enumerate(res0):
            gr = rng.standard_normal(out.shape).astype(np.float32)
            np.save(os.path.join(gdir, f"result{r}.npy"), gr)
            g.append(gr)
        l0 = loss(res0, g, "unperturbed")
        if not math.isfinite(l0):
            raise CheckError(f"L at the unperturbed inputs is not finite ({l0})")

        # 2. analytic gradients
        step = os.path.join(tmp, "step")
        run_te(a.te_run, [lib, "--step", a.entry, "--inputs", inputs, "--grads", gdir,
                          "--outputs", step], f"--step {a.entry}")
        bwd = os.path.join(step, "bwd")
        n_grads = len([f for f in os.listdir(bwd) if re.fullmatch(r"grad_arg\d+(\.bf16)?\.npy", f)]) \
            if os.path.isdir(bwd) else 0
        if n_grads != len(args):
            raise CheckError(f"--step {a.entry} gave {n_grads} gradients but --inputs has "
                             f"{len(args)} arguments: library and inputs do not match")
        print(f"L = {l0:.6e} over {len(res0)} result(s); eps={a.eps:g} samples={a.samples} "
              f"seed={a.seed} (|fd-an| <= {a.atol:g} + {a.rtol:g}*|an|)")

        # 3. + 4. central differences
        failed = 0
        pert = os.path.join(tmp, "pert.npy")
        for i, x in enumerate(args):
            an_all = load_f32(os.path.join(bwd, f"grad_arg{i}.npy"),
                              f"analytic gradient of arg{i}")
            if an_all.shape != x.shape:
                raise CheckError(f"grad_arg{i} has shape {list(an_all.shape)}, argument "
                                 f"{list(x.shape)}")
            if scale is not None and scale[0] == i:
                an_all = an_all * np.float32(scale[1])
            n = min(a.samples, x.size)
            picks = rng.choice(x.size, size=n, replace=False) if x.size else []
            worst = None  # (excess, flat, fd, an)
            nbad = 0
            max_err = 0.0
            for flat in picks:
                flat = int(flat)
                ls = []
                steps = []
                for sign in (1.0, -1.0):
                    xp = x.copy()
                    xp.flat[flat] = np.float32(x.flat[flat] + sign * a.eps)
                    steps.append(float(xp.flat[flat]))
                    np.save(pert, xp)
                    od = os.path.join(tmp, f"o{i}_{flat}_{'p' if sign > 0 else 'm'}")
                    run_te(a.te_run, [lib, "--entry", a.entry, "--inputs", inputs,
                                      "--input", f"arg{i}={pert}", "--outputs", od],
                           f"--entry {a.entry} with arg{i} perturbed")
                    ls.append(loss(read_results(od, "perturbed run"), g, "perturbed run"))
                h = steps[0] - steps[1]
                if h == 0.0:
                    raise CheckError(f"arg{i}[{flat}] = {x.flat[flat]!r}: eps {a.eps:g} is "
                                     "below float32 resolution there; use a larger --eps")
                fd = (ls[0] - ls[1]) / h
                an = float(an_all.flat[flat])
                err = abs(fd - an) if math.isfinite(fd) and math.isfinite(an) else math.inf
                max_err = max(max_err, err)
                excess = err - (a.atol + a.rtol * abs(an))
                if not excess <= 0:  # NaN fails too
                    nbad += 1
                    if worst is None or excess > worst[0]:
                        worst = (excess, flat, fd, an)
            if worst is None:
                print(f"OK arg{i}: {n} samples, max |fd-an| = {max_err:.3e}")
            else:
                failed += 1
                _, flat, fd, an = worst
                where = "[" + ", ".join(str(int(k)) for k in np.unravel_index(flat, x.shape)) + "]"
                print(f"FAIL arg{i}: {n} samples, max |fd-an| = {max_err:.3e}; {nbad} out of "
                      f"tolerance, worst at {where}: fd={fd:.6e} analytic={an:.6e} "
                      f"(allowed {a.atol + a.rtol * abs(an):.3e})")
    if failed:
        print(f"FAILED: {failed} of {len(args)} arguments have gradients that disagree with "
              "finite differences")
        return 1
    print(f"PASSED: {len(args)} arguments")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description="Finite-difference check of a te-compile --train library's gradients "
                    "(f32): central differences of L = sum(g * ENTRY(args)) vs te-run --step.")
    ap.add_argument("--te-run", required=True, help="path of the te-run binary")
    ap.add_argument("--lib", required=True, help="library from te-compile --train")
    ap.add_argument("--inputs", required=True, help="directory with arg<i>.npy (f32)")
    ap.add_argument("--entry", default="main", help="entry (default: %(default)s); "
                    "the library needs ENTRY, ENTRY_fwd and ENTRY_bwd")
    ap.add_argument("--eps", type=float, default=1e-2,
                    help="absolute perturbation (default: %(default)g; see the docstring)")
    ap.add_argument("--samples", type=int, default=4,
                    help="elements checked per argument (default: %(default)s)")
    ap.add_argument("--seed", type=int, default=0, help="seed of g and the samples")
    ap.add_argument("--rtol", type=float, default=2e-2)
    ap.add_argument("--atol", type=float, default=1e-3)
    # testing the checker itself: multiply the analytic gradient of argument I by FACTOR
    ap.add_argument("--debug-scale-grad", metavar="I=FACTOR", default=None,
                    help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    try:
        return check(a)
    except CheckError as e:
        print(f"ERROR {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
