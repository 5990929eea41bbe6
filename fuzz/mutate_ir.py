#!/usr/bin/env python3
"""Mutation fuzzing of te-opt and te-compile over te IR and torch-mlir exports.

Seeds are the repository's own inputs (lit tests split at `// -----`, the
torch-mlir exports under test/Conversion/TorchToTE/Inputs, examples/). Each case is a seed
mutated a few times (numbers swapped for boundary values, lines deleted,
duplicated or swapped, keywords exchanged for others of the dialect, operands
dropped, the text truncated or bytes flipped), then run through one of the
tools' pipelines. A case fails when a tool dies by a signal, exits with a
code other than 0 or 1, prints a sanitizer, assertion or LLVM fatal-error
report, or runs past the time limit. Failing inputs are written to --out.

Standard library only; runs with any python3.

  fuzz/mutate_ir.py --bin build-asan/bin --cases 2000 --jobs 2 --out /tmp/ir-crashes
"""

import argparse
import concurrent.futures as cf
import os
import random
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Values that probe size arithmetic and verifier bounds.
NUMBERS = ["0", "1", "-1", "2", "3", "7", "8", "16", "127", "128", "129",
           "255", "256", "1023", "1024", "2147483647", "2147483648",
           "4294967296", "1099511627776", "1099511627777", "281474976710657",
           "9223372036854775807", "-9223372036854775808", "18446744073709551615",
           "1e308", "nan", "0.0", "-0.0", "1.0e-30"]
# Keywords of the te dialect and the torch export that a mutation may swap.
WORDS = ["layer_norm", "rms_norm", "gelu", "relu", "swiglu", "geglu", "reglu",
         "qgelu", "srelu", "silu", "clamped_swiglu", "tn", "nn", "nt",
         "rowwise", "columnwise", "both", "hopper", "blackwell", "e4m3",
         "e5m2", "e2m1", "f32", "bf16", "f16", "i64", "index", "i8",
         "#te.bf16", "#te.fp8_delayed<>", "#te.fp8_current<>", "#te.fp8_block<>",
         "#te.mxfp8", "#te.nvfp4<>", "#te.nvfp4<row_scaled>", "?",
         "torch.aten.linear", "torch.aten.layer_norm", "torch.aten.mm",
         "torch.aten.gelu", "torch.aten.add.Tensor", "torch.aten.mul.Tensor",
         "tensor.concat", "te.saved", "te.recompute", "func.return",
         "checkpoint", "zero_centered_gamma", "return_layernorm_output"]
SPLIT = re.compile(r"^// -----\s*$", re.M)
NUMBER = re.compile(r"(?<![%#\w.])-?\d+(\.\d+)?(e[-+]?\d+)?")
WORD = re.compile(r"[#\w.]+(<[^<>]*>)?")
OPERAND = re.compile(r",\s*%[\w.#]+")

# tool argument lists; {in} is the input file, {out} a scratch output.
TARGETS = {
    "import": ["te-opt", "{in}", "--te-import-torch", "-o", "/dev/null"],
    "pipeline": ["te-opt", "{in}", "--te-pipeline", "-o", "/dev/null"],
    "train-pipeline": ["te-opt", "{in}",
                       "--te-pipeline=train=true checkpoint=true",
                       "-o", "/dev/null"],
    "backward": ["te-opt", "{in}", "--te-generate-backward", "--te-decompose",
                 "--te-describe", "-o", "/dev/null"],
    "roundtrip": ["te-opt", "{in}", "--canonicalize", "--mlir-print-op-generic",
                  "-o", "/dev/null"],
    "compile": ["te-compile", "{in}", "--train", "--emit=mlir", "-o", "{out}"],
    "compile-fp8": ["te-compile", "{in}", "--train", "--recipe", "fp8-delayed",
                    "--emit=mlir", "-o", "{out}"],
}
REPORTS = ("AddressSanitizer", "runtime error:", "LeakSanitizer",
           "Assertion `", "LLVM ERROR", "PLEASE submit a bug report",
           "Stack dump:", "UNREACHABLE executed", "terminate called")


def seeds():
    """Seed texts: lit tests split at their markers, exports, examples."""
    out = []
    for top in ("test", "examples"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                if not f.endswith(".mlir"):
                    continue
                path = os.path.join(dirpath, f)
                try:
                    text = open(path, encoding="utf-8").read()
                except (OSError, UnicodeDecodeError):
                    continue
                if len(text) > 400_000:
                    continue
                for chunk in SPLIT.split(text):
                    if "func.func" in chunk:
                        out.append((os.path.relpath(path, ROOT), chunk))
    return out


def mutate(text, rng):
    """One mutation of `text`."""
    kind = rng.randrange(10)
    lines = text.split("\n")
    if kind == 0 and len(lines) > 1:  # delete a line
        del lines[rng.randrange(len(lines))]
        return "\n".join(lines)
    if kind == 1 and lines:  # duplicate a line
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return "\n".join(lines)
    if kind == 2 and len(lines) > 1:  # swap two lines
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines)
    if kind in (3, 4):  # a number for a boundary value
        spans = [m.span() for m in NUMBER.finditer(text)]
        if spans:
            a, b = rng.choice(spans)
            return text[:a] + rng.choice(NUMBERS) + text[b:]
    if kind == 5:  # a keyword for another
        spans = [m.span() for m in WORD.finditer(text)]
        if spans:
            a, b = rng.choice(spans)
            return text[:a] + rng.choice(WORDS) + text[b:]
    if kind == 6:  # drop an operand
        spans = [m.span() for m in OPERAND.finditer(text)]
        if spans:
            a, b = rng.choice(spans)
            return text[:a] + text[b:]
    if kind == 7 and text:  # truncate
        return text[:rng.randrange(len(text))]
    if kind == 8 and text:  # flip bytes
        data = bytearray(text.encode("utf-8", "replace"))
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return data.decode("latin-1")
    # delete a span of characters
    if text:
        a = rng.randrange(len(text))
        return text[:a] + text[a + rng.randint(1, 40):]
    return text


def run_case(args):
    bindir, name, target, text, timeout = args
    with tempfile.TemporaryDirectory(prefix="te-fuzz-") as tmp:
        inp = os.path.join(tmp, "in.mlir")
        with open(inp, "w", encoding="latin-1") as f:
            f.write(text)
        cmd = [a.format(**{"in": inp, "out": os.path.join(tmp, "out.mlir")})
               for a in TARGETS[target]]
        cmd[0] = os.path.join(bindir, cmd[0])
        env = dict(os.environ)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=0:allow_user_poisoning=0")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return name, target, text, "hang", f"over {timeout} s"
        except OSError as e:  # the tool itself went missing (a rebuild)
            sys.exit(f"mutate_ir: cannot run {cmd[0]}: {e}")
        err = p.stderr.decode("utf-8", "replace")
        if p.returncode < 0:
            return name, target, text, f"signal {-p.returncode}", err[-3000:]
        if p.returncode not in (0, 1):
            return name, target, text, f"exit {p.returncode}", err[-3000:]
        for r in REPORTS:
            if r in err:
                return name, target, text, r.strip(), err[-3000:]
        return name, target, None, "ok" if p.returncode == 0 else "error", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"),
                    help="folder with te-opt and te-compile (an ASan build finds more)")
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=0,
                    help="stop after this long (0: run all cases)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "fuzz-ir-crashes"))
    a = ap.parse_args()
    a.bin = os.path.abspath(a.bin)
    targets = a.targets.split(",")
    for t in targets:
        if t not in TARGETS:
            sys.exit(f"mutate_ir: unknown target '{t}' ({', '.join(TARGETS)})")
    for tool in ("te-opt", "te-compile"):
        if not os.access(os.path.join(a.bin, tool), os.X_OK):
            sys.exit(f"mutate_ir: no {tool} in {a.bin}")
    rng = random.Random(a.seed)
    pool = seeds()
    if not pool:
        sys.exit("mutate_ir: no seed inputs found")

    def cases():
        for _ in range(a.cases):
            name, text = rng.choice(pool)
            for _ in range(rng.randint(1, 3)):
                text = mutate(text, rng)
            target = rng.choice(targets)
            if "torch." not in text and target == "import":
                target = "pipeline"
            yield a.bin, name, target, text, a.timeout

    start = time.time()
    counts, failures, done = {}, [], 0
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        it = cases()
        pending = set()
        for _ in range(a.jobs * 2):
            c = next(it, None)
            if c:
                pending.add(ex.submit(run_case, c))
        while pending:
            finished, pending = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
            for fut in finished:
                name, target, text, verdict, err = fut.result()
                done += 1
                counts[verdict] = counts.get(verdict, 0) + 1
                if text is not None:
                    os.makedirs(a.out, exist_ok=True)
                    path = os.path.join(a.out, f"crash-{len(failures):04d}-{target}.mlir")
                    with open(path, "w", encoding="latin-1") as f:
                        f.write(f"// seed: {name}\n// target: {target}: "
                                f"{' '.join(TARGETS[target])}\n// verdict: {verdict}\n")
                        f.write(text)
                    with open(path + ".log", "w") as f:
                        f.write(err)
                    failures.append((path, verdict))
                    print(f"mutate_ir: {verdict} in {target} (seed {name}): {path}",
                          flush=True)
                if a.seconds and time.time() - start > a.seconds:
                    continue
                c = next(it, None)
                if c:
                    pending.add(ex.submit(run_case, c))
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    print(f"mutate_ir: {done} mutated inputs through {len(targets)} targets in "
          f"{time.time() - start:.0f} s ({summary}); {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
