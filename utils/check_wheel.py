#!/usr/bin/env python3
"""Checks a te-mlir wheel (scripts/build_wheel.sh): what it holds, what its binaries need
at run time, and that its tag and size are honest.

    python3 utils/check_wheel.py dist/te_mlir-0.1.0-py3-none-manylinux_2_36_x86_64.whl

Fails (exit 1, one line per problem) when:
  - the package, te_mlir/_native/bin/te-compile, lib/libte_runtime.so or
    lib/libte_torch_ops.so is missing;
  - a binary needs a library outside its allowed list (te-compile: the C and C++
    runtimes only, never libMLIR/libLLVM; the runtime: those plus the CUDA 13 libraries
    of torch's nvidia wheels; the op library: those plus libtorch_cpu and the runtime);
  - a binary has a runpath that is not $ORIGIN-relative, or is not stripped;
  - the tag is not py3-none-*, or is manylinux_X_Y while a binary needs a newer
    GLIBC_ symbol version than X.Y;
  - the wheel is larger than --max-mb (default 60).
Prints a summary: the size, each binary's size, needs and newest GLIBC version.
Needs readelf (binutils).
"""
import argparse
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

BASE = {"libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "libdl.so.2",
        "libpthread.so.0", "librt.so.1", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"}
CUDA = {"libcudart.so.13", "libcublasLt.so.13"}
ALLOWED = {
    "te_mlir/_native/bin/te-compile": BASE,
    "te_mlir/_native/lib/libte_runtime.so": BASE | CUDA,
    "te_mlir/_native/lib/libte_torch_ops.so": BASE | {"libtorch_cpu.so", "libte_runtime.so"},
}
REQUIRED = ["te_mlir/__init__.py", "te_mlir/_abi.py", "te_mlir/compile.py",
            "te_mlir/torch/__init__.py", *ALLOWED]


def readelf(args, path):
    return subprocess.run(["readelf", *args, str(path)], capture_output=True, text=True,
                          check=True).stdout


def elf_facts(path):
    """(needed sonames, runpath entries, newest GLIBC version tuple, has .symtab)."""
    dyn = readelf(["-d", "--wide"], path)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
    runpath = []
    for m in re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r\w*path: \[([^\]]*)\]", dyn):
        runpath += [p for p in m.split(":") if p]
    versions = re.findall(r"Name: GLIBC_([0-9.]+)", readelf(["-V", "--wide"], path))
    newest = max((tuple(int(x) for x in v.split(".")) for v in versions), default=(0,))
    symtab = ".symtab" in readelf(["-S", "--wide"], path)
    return needed, runpath, newest, symtab


def check(wheel, max_mb):
    problems, lines = [], []
    name = Path(wheel).name
    parts = name[:-len(".whl")].split("-")
    if len(parts) < 5 or parts[-3] != "py3" or parts[-2] != "none":
        problems.append(f"{name}: the tag is not py3-none-<platform>")
    plat = parts[-1] if parts else ""
    m = re.match(r"manylinux_(\d+)_(\d+)_", plat)
    tag_glibc = (int(m.group(1)), int(m.group(2))) if m else None
    size_mb = Path(wheel).stat().st_size / 2**20
    lines.append(f"{name}: {size_mb:.1f} MiB (limit {max_mb} MiB), platform {plat}")
    if size_mb > max_mb:
        problems.append(f"{name} is {size_mb:.1f} MiB, over {max_mb} MiB")
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        for req in REQUIRED:
            if req not in names:
                problems.append(f"{name} has no {req}")
        z.extractall(tmp)
        for rel, allowed in ALLOWED.items():
            path = Path(tmp) / rel
            if not path.exists():
                continue
            needed, runpath, newest, symtab = elf_facts(path)
            glibc = ".".join(map(str, newest))
            lines.append(f"  {rel}: {path.stat().st_size / 2**20:.1f} MiB, GLIBC <= {glibc}, "
                         f"needs {' '.join(needed)}" + (f", runpath {':'.join(runpath)}"
                                                        if runpath else ""))
            for lib in needed:
                if lib not in allowed:
                    problems.append(f"{rel} needs {lib}, which the wheel may not rely on")
            for p in runpath:
                if not p.startswith("$ORIGIN"):
                    problems.append(f"{rel} has the runpath {p} (not $ORIGIN-relative)")
            if symtab:
                problems.append(f"{rel} is not stripped")
            if tag_glibc and newest > tag_glibc:
                problems.append(f"{rel} needs GLIBC_{glibc}, newer than the tag {plat}")
    return problems, lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel")
    ap.add_argument("--max-mb", type=float, default=60)
    a = ap.parse_args()
    problems, lines = check(a.wheel, a.max_mb)
    print("\n".join(lines))
    for p in problems:
        print("check_wheel: FAIL:", p)
    if not problems:
        print("check_wheel: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
