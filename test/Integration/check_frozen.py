"""Compares a library with te.frozen arguments against the same model's
without them (frozen-weights.mlir): for every function, one te-run --step
of each with the same --random inputs; every file the frozen library's step
writes (the forward result, the gradients it still returns, the recipe
state) must be byte-identical to the full library's, the full library must
write exactly one more gradient per frozen float argument, and the frozen
forward must save fewer tensors (no more under --checkpoint).

One exception, listed in the model as `// CLOSE: <function> <argument>...`:
the bias gradient of a layer whose weight is frozen. The full library sums
it in the wgrad GEMM's epilogue (cuBLASLt's BGRADB, and its CPU
reference), the frozen one, without that GEMM, in its own reduction (fused
with the activation's derivative where there is one): the same sum in
another order, so equal to within a rounding of the bf16 result, not to the
bit (TransformerEngine's bias gradient also changes kernels when the weight
is frozen).

usage: check_frozen.py TE_BIN OUT_DIR FROZEN.mlir FULL.mlir RECIPE [te-compile flags...]
"""
import filecmp
import os
import re
import struct
import subprocess
import sys


def read_bf16(path):
    """The values of a `.bf16.npy` file (raw bf16 bits in a uint16 array)."""
    data = open(path, "rb").read()
    major = data[6]
    if major == 1:
        (n,) = struct.unpack_from("<H", data, 8)
        start = 10 + n
    else:
        (n,) = struct.unpack_from("<I", data, 8)
        start = 12 + n
    bits = struct.unpack_from(f"<{(len(data) - start) // 2}H", data, start)
    return [struct.unpack("<f", struct.pack("<I", b << 16))[0] for b in bits]


def close(a_path, b_path):
    """Equal to within one rounding of bf16 (8 bits of mantissa), relative
    to each element and to the tensor's largest magnitude."""
    a, b = read_bf16(a_path), read_bf16(b_path)
    if len(a) != len(b):
        return False
    scale = max((abs(v) for v in b), default=0.0)
    return all(abs(x - y) <= 2 ** -7 * abs(y) + 2 ** -9 * scale
               for x, y in zip(a, b))


def compile_pair(te_bin, out, sources, recipe, flags):
    """(tag, {kind: library}): each of `sources` ({kind: model}) compiled with --train
    under `recipe` and te-compile `flags` into OUT/<kind>-<tag>.so."""
    tag = "-".join([recipe] + [f.lstrip("-") for f in flags])
    libs = {}
    for kind, src in sources.items():
        lib = os.path.join(out, f"{kind}-{tag}.so")
        cmd = [os.path.join(te_bin, "te-compile"), src, "--train", "-o", lib]
        if recipe != "bf16":
            cmd += ["--recipe", recipe]
        subprocess.run(cmd + flags, check=True)
        libs[kind] = lib
    return tag, libs


def model_functions(src):
    """The model's functions [(name, argument text)] and its `// CLOSE: <function>
    <argument>...` lines as {function: {argument index}}."""
    text = open(src).read()
    functions = re.findall(r"func\.func @(\w+)\((.*?)\) ->", text)
    close_args = {}
    for name, args in re.findall(r"// CLOSE: (\w+) ([\d ]+)", text):
        close_args[name] = {int(a) for a in args.split()}
    return functions, close_args


def run_step(te_bin, lib, name, out_dir, extra=()):
    """One te-run --step of function `name` of `lib` with the --random 3 inputs and
    output gradients, its files written to `out_dir`."""
    subprocess.run([os.path.join(te_bin, "te-run"), lib, "--step", name, "--random", "3",
                    "--outputs", out_dir, *extra], check=True, stdout=subprocess.DEVNULL)


def written(out_dir):
    """The files a step wrote, relative to `out_dir`, sorted."""
    return sorted(os.path.relpath(os.path.join(r, f), out_dir)
                  for r, _, fs in os.walk(out_dir) for f in fs)


def main():
    te_bin, out, frozen_src, full_src, recipe = sys.argv[1:6]
    flags = sys.argv[6:]
    tag, libs = compile_pair(te_bin, out, {"frozen": frozen_src, "full": full_src}, recipe,
                             flags)
    functions, close_args = model_functions(frozen_src)
    failures = []
    for name, args in functions:
        frozen_args = {i for i, a in enumerate(re.split(r", (?=%)", args))
                       if "{te.frozen}" in a}
        dirs = {}
        for kind, lib in libs.items():
            dirs[kind] = os.path.join(out, f"{kind}-{tag}-{name}")
            run_step(te_bin, lib, name, dirs[kind])
        files = {kind: written(d) for kind, d in dirs.items()}
        missing = sorted(set(files["full"]) - set(files["frozen"]))
        expected = sorted(f"bwd/grad_arg{i}.bf16.npy" for i in frozen_args)
        if missing != expected:
            failures.append(f"{name}: the full library's extra files are "
                            f"{missing}, expected {expected}")
        closes = {f"bwd/grad_arg{i}.bf16.npy" for i in close_args.get(name, ())}
        identical = 0
        for f in files["frozen"]:
            a, b = (os.path.join(dirs[k], f) for k in ("frozen", "full"))
            if not os.path.exists(b):
                failures.append(f"{name}: {f} is missing from the full step")
            elif filecmp.cmp(a, b, shallow=False):
                identical += 1
            elif f not in closes:
                failures.append(f"{name}: {f} differs")
            elif not close(a, b):
                failures.append(f"{name}: {f} differs by more than a rounding")
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
        print(f"{tag} {name}: {identical} of {len(files['frozen'])} files "
              f"identical ({len(files['frozen']) - identical} within a rounding), "
              f"{len(missing)} frozen gradients absent, saved "
              f"{saved['frozen']} of {saved['full']} tensors")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
