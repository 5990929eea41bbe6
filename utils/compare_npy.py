#!/usr/bin/env python3
"""Compare every .npy file under --expected with the same-named file under --actual.

    compare_npy.py --expected DIR --actual DIR --atol A --rtol R [--names NAME ...]

Rule (torch.testing.assert_close's): elementwise |actual - expected| <= atol + rtol*|expected|,
shapes must be equal, NaN anywhere is a mismatch unless --equal-nan (then NaN must face
NaN), infinities must be equal.  Values are compared in float64.

File convention (test/Integration/Inputs/README.md): `NAME.bf16.npy` holds bf16 values as
their raw bits in a uint16 array and is decoded before comparing; any other `.npy` must
hold a numeric array (float, int or bool).  A 2-byte void array (what NumPy makes of an
ml_dtypes bfloat16 file) is also read as bf16 bits.

With --atol-scale S the absolute tolerance of a file is atol + S * max|expected| (a bound
at the tensor's scale, for sums split over ranks whose parts are rounded at the parts'
magnitude: tensor-parallel runs against one device).

With --max-norm-rel X a file must also satisfy ||actual - expected|| / ||expected|| <= X
(2-norms over its finite elements; ||actual - expected|| <= X when expected is all zero): a
check that a quantized computation follows the same rounding decisions as its emulation,
which an elementwise bound loose enough for the quantization error cannot see.

Files are matched by their path relative to the directory (subdirectories included).
--names restricts the comparison to these names (with or without `.npy` / `.bf16.npy`,
relative paths allowed); every named file must exist in --expected.

One line per file:
    OK NAME max_abs_err=... max_rel_err=... (atol=..., rtol=...)
    MISMATCH NAME ... (with the count and the worst element)
    MISSING / ERROR NAME: why
Exit status: 0 when every file is OK, 1 when any file mismatches or is missing, corrupt or
of another shape, 2 for a usage error (bad directory, nothing to compare).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

BF16_SUFFIX = ".bf16.npy"


class BadFile(Exception):
    pass


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def load(path: str) -> np.ndarray:
    """The file's values as float64; raises BadFile with a readable reason."""
    if not os.path.isfile(path):
        raise BadFile("not a regular file" if os.path.exists(path) else "no such file")
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except OSError as e:
        raise BadFile(f"cannot open ({e.strerror})") from None
    if magic != b"\x93NUMPY":
        raise BadFile("not a .npy file (bad magic)")
    try:
        arr = np.load(path, allow_pickle=False)
    except Exception as e:  # corrupt header, truncated data, pickled object, ...
        raise BadFile(f"cannot read as .npy ({type(e).__name__}: {e})") from None
    if not isinstance(arr, np.ndarray):
        raise BadFile("not a single array (.npz?)")
    if path.endswith(BF16_SUFFIX):
        if arr.dtype == np.uint16 or arr.dtype == np.int16:
            return bf16_bits_to_f32(arr.view(np.uint16)).astype(np.float64)
        raise BadFile(f"a {BF16_SUFFIX} file must hold uint16 bf16 bits, found dtype {arr.dtype}")
    if arr.dtype.kind == "V" and arr.dtype.itemsize == 2 and arr.dtype.names is None:
        return bf16_bits_to_f32(arr.view(np.uint16)).astype(np.float64)
    if arr.dtype.kind not in "fiub":
        raise BadFile(f"unsupported dtype {arr.dtype}")
    return arr.astype(np.float64)


def collect(root: str) -> list[str]:
    names = []
    for d, subdirs, files in os.walk(root):
        subdirs.sort()
        for f in sorted(files):
            if f.endswith(".npy"):
                names.append(os.path.relpath(os.path.join(d, f), root))
    return names


def resolve(root: str, name: str) -> str | None:
    """`name` as given, or with .npy / .bf16.npy appended, whichever exists under root."""
    for cand in (name, name + ".npy", name + BF16_SUFFIX):
        if cand.endswith(".npy") and os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def fmt(v: float) -> str:
    return f"{v:.3e}"


def compare(name: str, exp: np.ndarray, act: np.ndarray, atol: float, rtol: float,
            equal_nan: bool, max_norm_rel: float | None = None,
            atol_scale: float = 0.0) -> tuple[bool, str]:
    if atol_scale and exp.size:
        finite_exp = exp[np.isfinite(exp)]
        if finite_exp.size:
            atol = atol + atol_scale * float(np.abs(finite_exp).max())
    tol = f"(atol={atol:g}, rtol={rtol:g})"
    if exp.shape != act.shape:
        return False, f"MISMATCH {name}: shape {list(act.shape)} != expected {list(exp.shape)}"
    if exp.size == 0:
        return True, f"OK {name} (empty) {tol}"
    nan_e, nan_a = np.isnan(exp), np.isnan(act)
    nan_bad = (nan_e != nan_a) if equal_nan else (nan_e | nan_a)
    both_nan = nan_e & nan_a if equal_nan else np.zeros_like(nan_e)
    inf_e, inf_a = np.isinf(exp), np.isinf(act)
    inf_bad = (inf_e | inf_a) & ~(exp == act) & ~nan_e & ~nan_a
    finite = ~(nan_e | nan_a | inf_e | inf_a)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.where(finite, np.abs(act - exp), 0.0)
        allowed = atol + rtol * np.abs(exp)
        val_bad = finite & (diff > allowed)
        rel = np.where(finite & (exp != 0), diff / np.abs(exp), 0.0)
    bad = val_bad | inf_bad | (nan_bad & ~both_nan)
    max_abs = float(diff.max()) if finite.any() else 0.0
    max_rel = float(rel.max()) if finite.any() else 0.0
    stats = f"max_abs_err={fmt(max_abs)} max_rel_err={fmt(max_rel)}"
    n_bad = int(bad.sum())
    if max_norm_rel is not None:
        e_norm = float(np.linalg.norm(np.where(finite, exp, 0.0)))
        d_norm = float(np.linalg.norm(diff))
        norm_rel = d_norm / e_norm if e_norm > 0 else d_norm
        stats += f" norm_rel_err={fmt(norm_rel)}"
        tol = f"(atol={atol:g}, rtol={rtol:g}, max_norm_rel={max_norm_rel:g})"
        if n_bad == 0 and not norm_rel <= max_norm_rel:
            return False, (f"MISMATCH {name} {stats} {tol}: every element within tolerance, "
                           f"but ||actual - expected|| / ||expected|| = {fmt(norm_rel)} "
                           f"> {max_norm_rel:g}")
    if n_bad == 0:
        return True, f"OK {name} {stats} {tol}"
    # the worst element: the largest excess over the allowed error (non-finite first)
    excess = np.where(val_bad, diff - allowed, -np.inf)
    excess = np.where(inf_bad | (nan_bad & ~both_nan), np.inf, excess)
    idx = np.unravel_index(int(np.argmax(excess)), exp.shape)
    where = "[" + ", ".join(str(int(i)) for i in idx) + "]"
    extra = []
    if int((nan_bad & ~both_nan).sum()):
        extra.append(f"{int((nan_bad & ~both_nan).sum())} NaN")
    if int(inf_bad.sum()):
        extra.append(f"{int(inf_bad.sum())} inf")
    extra = (" (" + ", ".join(extra) + ")") if extra else ""
    return False, (f"MISMATCH {name} {stats} {tol}: {n_bad}/{exp.size} elements out of "
                   f"tolerance{extra}; worst at {where}: actual={float(act[idx])!r} "
                   f"expected={float(exp[idx])!r}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description="Compare expected .npy files with actual ones "
                    "(|a-e| <= atol + rtol*|e|; bf16 in NAME.bf16.npy as uint16 bits).")
    ap.add_argument("--expected", required=True, help="directory of expected .npy files")
    ap.add_argument("--actual", required=True, help="directory of actual .npy files")
    ap.add_argument("--atol", type=float, required=True)
    ap.add_argument("--rtol", type=float, required=True)
    ap.add_argument("--names", nargs="+", default=None,
                    help="compare only these files (relative names, .npy optional)")
    ap.add_argument("--equal-nan", action="store_true", help="NaN facing NaN is equal")
    ap.add_argument("--max-norm-rel", type=float, default=None,
                    help="also require ||actual - expected|| / ||expected|| <= this per file")
    ap.add_argument("--atol-scale", type=float, default=0.0,
                    help="per file, add this times max|expected| to --atol (a bound "
                         "at the tensor's scale: sums split over ranks round their "
                         "parts at the parts' magnitude, not the result's)")
    args = ap.parse_args(argv)

    for what, d in (("--expected", args.expected), ("--actual", args.actual)):
        if not os.path.isdir(d):
            print(f"ERROR {what} {d!r} is not a directory", file=sys.stderr)
            return 2
    checks = [("--atol", args.atol), ("--rtol", args.rtol), ("--atol-scale", args.atol_scale)]
    if args.max_norm_rel is not None:
        checks.append(("--max-norm-rel", args.max_norm_rel))
    for what, v in checks:
        if not math.isfinite(v) or v < 0:
            print(f"ERROR {what} must be a finite number >= 0, got {v}", file=sys.stderr)
            return 2

    failed = 0
    if args.names:
        names = []
        for n in args.names:
            r = resolve(args.expected, n)
            if r is None:
                print(f"MISSING {n}: not found in expected directory {args.expected}")
                failed += 1
            else:
                names.append(r)
    else:
        names = collect(args.expected)
        if not names:
            print(f"ERROR no .npy files under {args.expected}", file=sys.stderr)
            return 2

    ok = 0
    for name in names:
        try:
            exp = load(os.path.join(args.expected, name))
        except BadFile as e:
            print(f"ERROR {name}: expected file: {e}")
            failed += 1
            continue
        apath = os.path.join(args.actual, name)
        if not os.path.exists(apath):
            print(f"MISSING {name}: no such file in actual directory {args.actual}")
            failed += 1
            continue
        try:
            act = load(apath)
        except BadFile as e:
            print(f"ERROR {name}: actual file: {e}")
            failed += 1
            continue
        good, line = compare(name, exp, act, args.atol, args.rtol, args.equal_nan,
                             args.max_norm_rel, args.atol_scale)
        print(line)
        if good:
            ok += 1
        else:
            failed += 1

    total = ok + failed
    if failed:
        print(f"FAILED: {failed} of {total} files did not match")
        return 1
    print(f"PASSED: {ok} files")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
