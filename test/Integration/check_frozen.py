"""Compares a library with te.frozen arguments against the same model's
without them (frozen-weights.mlir): for every function, one te-run --step
of each with the same --random inputs; every file the frozen library's step
writes (the forward result, the gradients it still returns, the recipe
state) must be byte-identical to the full library's, the full library must
write exactly one more gradient per frozen float argument, and the frozen
forward must save fewer tensors (no more under --checkpoint).

usage: check_frozen.py TE_BIN OUT_DIR FROZEN.mlir FULL.mlir RECIPE [te-compile flags...]
"""
import filecmp
import os
import re
import subprocess
import sys


def main():
    te_bin, out, frozen_src, full_src, recipe = sys.argv[1:6]
    flags = sys.argv[6:]
    tag = "-".join([recipe] + [f.lstrip("-") for f in flags])
    libs = {}
    for kind, src in (("frozen", frozen_src), ("full", full_src)):
        lib = os.path.join(out, f"{kind}-{tag}.so")
        cmd = [os.path.join(te_bin, "te-compile"), src, "--train", "-o", lib]
        if recipe != "bf16":
            cmd += ["--recipe", recipe]
        subprocess.run(cmd + flags, check=True)
        libs[kind] = lib
    text = open(frozen_src).read()
    functions = re.findall(r"func\.func @(\w+)\((.*?)\) ->", text)
    failures = []
    for name, args in functions:
        frozen_args = {i for i, a in enumerate(re.split(r", (?=%)", args))
                       if "{te.frozen}" in a}
        dirs = {}
        for kind, lib in libs.items():
            d = os.path.join(out, f"{kind}-{tag}-{name}")
            subprocess.run([os.path.join(te_bin, "te-run"), lib, "--step", name,
                            "--random", "3", "--outputs", d], check=True,
                           stdout=subprocess.DEVNULL)
            dirs[kind] = d
        files = {}
        for kind, d in dirs.items():
            files[kind] = sorted(os.path.relpath(os.path.join(r, f), d)
                                 for r, _, fs in os.walk(d) for f in fs)
        missing = sorted(set(files["full"]) - set(files["frozen"]))
        expected = sorted(f"bwd/grad_arg{i}.bf16.npy" for i in frozen_args)
        if missing != expected:
            failures.append(f"{name}: the full library's extra files are "
                            f"{missing}, expected {expected}")
        for f in files["frozen"]:
            a, b = (os.path.join(dirs[k], f) for k in ("frozen", "full"))
            if not os.path.exists(b) or not filecmp.cmp(a, b, shallow=False):
                failures.append(f"{name}: {f} differs")
        saved = {}
        for kind, lib in libs.items():
            listing = subprocess.run([os.path.join(te_bin, "te-run"), lib,
                                      "--list"], check=True, text=True,
                                     capture_output=True).stdout
            section = listing.split(f"\n{name}_fwd\n")[1].split("\n\n")[0]
            section = re.split(r"\n(?=\S)", section)[0]
            saved[kind] = section.count("te.saved=")
        # A checkpointed MLP saves its inputs only, frozen or not.
        fewer = (saved["frozen"] <= saved["full"] if "--checkpoint" in flags
                 else saved["frozen"] < saved["full"])
        if not fewer:
            failures.append(f"{name}: the frozen forward saves {saved['frozen']}"
                            f" tensors, the full one {saved['full']}")
        print(f"{tag} {name}: {len(files['frozen'])} files identical, "
              f"{len(missing)} frozen gradients absent, saved "
              f"{saved['frozen']} of {saved['full']} tensors")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
