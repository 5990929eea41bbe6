#!/usr/bin/env python3
"""Checks the launch discipline of the CUDA kernel library (runtime-kernels/src):

- every kernel (a __global__ function with a body) begins with `gridWait();`: kernels go
  out as programmatic dependent launches on Hopper (internal.cuh's launchKernel), and a
  kernel that touched global memory before waiting could read what the kernel before it
  has not written yet, or overwrite what it still reads;
- no kernel is launched with <<<...>>> (the launch would not be programmatic, and a kernel
  after it could not tell): launchKernel queues them all.

device.cu's self-test kernel, launched on the legacy stream before any state exists, is
the one exception (--allow FILE).

    utils/check_kernel_sources.py [--allow device.cu] FILE_OR_DIR...

Prints each violation as FILE:LINE: message and exits 1 if there is one.
"""
import argparse
import re
import sys
from pathlib import Path


def strip_comments(text):
    """The text with // and /* */ comments blanked (newlines kept, so lines stay)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r"//[^\n]*|/\*.*?\*/", blank, text, flags=re.S)


def body_start(text, i):
    """The index of the '{' opening the body of the function declared at i, or -1 for a
    declaration (';' first)."""
    depth = 0
    for j in range(i, len(text)):
        c = text[j]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and c == "{":
            return j
        elif depth == 0 and c == ";":
            return -1
    return -1


def check(path, allow):
    text = strip_comments(path.read_text())
    line = lambda k: text.count("\n", 0, k) + 1
    errors = []
    if path.name in allow:
        return errors
    for m in re.finditer(r"\b__global__\b", text):
        b = body_start(text, m.end())
        if b < 0:
            continue
        name = re.search(r"(\w+)\s*\(", text[m.end():b])
        first = re.match(r"\s*([^;{}]*;)", text[b + 1:])
        if not first or re.sub(r"\s+", "", first.group(1)) != "gridWait();":
            errors.append(f"{path}:{line(m.start())}: kernel "
                          f"{name.group(1) if name else '?'} does not begin with gridWait()")
    for m in re.finditer(r"<<<", text):
        errors.append(f"{path}:{line(m.start())}: a <<<...>>> launch (use launchKernel)")
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--allow", action="append", default=[],
                    help="a file name left unchecked")
    args = ap.parse_args()
    files = []
    for p in map(Path, args.paths):
        files += sorted(p.glob("*.cu")) + sorted(p.glob("*.cuh")) if p.is_dir() else [p]
    if not files:
        print("check_kernel_sources: no .cu/.cuh files", file=sys.stderr)
        return 1
    errors = [e for f in files for e in check(f, set(args.allow))]
    for e in errors:
        print(e)
    print(f"check_kernel_sources: {len(files)} files, {len(errors)} violations")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
