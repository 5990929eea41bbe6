"""Checks te.main_grad end to end (main-grad.mlir): a library whose weights
are marked te.main_grad against the same model's without the mark, one
te-run --step of each with the same --random inputs and output gradients.

For every te.main_grad argument N the main-grad library returns, in fp32,
main_grad + the weight gradient accumulated in the wgrad GEMM's epilogue:
  - with main_grad zero (te-run's default) the result, rounded to the
    weight's dtype, is bit for bit the plain library's gradient (the same
    fp32 product, rounded once), and it is not that rounded value itself
    (the fp32 gradient carries more bits than bf16's);
  - with a main_grad M given (--grads DIR/main_grad_argN.npy) the result is
    exactly float32(M + the zero-main_grad result): one fp32 add, no
    rounding of the product to the weight's dtype in between.
Every other file the steps write (the forward results, the other
gradients, the recipe state) is byte-identical to the plain library's, but
for the bias gradients listed in the model as `// CLOSE: <function>
<argument>...`: where the plain library sums a bias gradient in the wgrad
GEMM's epilogue (BGRADB), a GEMM that accumulates into main_grad has none,
and the sum runs in its own reduction (fused with the activation's
derivative for FC1): the same sum in another order, equal to within a
rounding of the bf16 result.

usage: check_main_grad.py TE_BIN OUT_DIR MAIN.mlir PLAIN.mlir RECIPE [te-compile flags...]
"""
import filecmp
import os
import re
import sys

import numpy as np

from check_frozen import close, compile_pair, model_functions, run_step, written


def load(path):
    """A .npy or .bf16.npy file as float32 (bf16: its raw bits widened)."""
    a = np.load(path)
    if path.endswith(".bf16.npy"):
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a


def to_bf16_bits(x):
    """fp32 -> bf16 bits, round to nearest even (finite values)."""
    b = x.astype(np.float32).view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def main():
    te_bin, out, main_src, plain_src, recipe = sys.argv[1:6]
    flags = sys.argv[6:]
    tag, libs = compile_pair(te_bin, out, {"main": main_src, "plain": plain_src}, recipe,
                             flags)
    functions, close_args = model_functions(main_src)
    failures = []
    rng = np.random.default_rng(7)
    for name, args in functions:
        arg_list = re.split(r", (?=%)", args)
        mains = [i for i, a in enumerate(arg_list) if "{te.main_grad}" in a]
        shapes = {i: [int(d) for d in re.search(r"tensor<([\dx]+)x\w+>", arg_list[i])
                      .group(1).split("x")] for i in mains}
        grads_dir = os.path.join(out, f"grads-{tag}-{name}")
        os.makedirs(grads_dir, exist_ok=True)
        given = {}
        for i in mains:
            given[i] = rng.uniform(-4, 4, shapes[i]).astype(np.float32)
            np.save(os.path.join(grads_dir, f"main_grad_arg{i}.npy"), given[i])
        dirs = {}
        for kind, lib, extra in (("plain", libs["plain"], []),
                                 ("zero", libs["main"], []),
                                 ("given", libs["main"], ["--grads", grads_dir])):
            dirs[kind] = os.path.join(out, f"{kind}-{tag}-{name}")
            run_step(te_bin, lib, name, dirs[kind], extra)
        files = {k: written(d) for k, d in dirs.items()}
        main_files = {i: f"bwd/grad_arg{i}.npy" for i in mains}
        for i, f in main_files.items():
            plain_f = next((p for p in files["plain"]
                            if p.startswith(f"bwd/grad_arg{i}.")), None)
            if f not in files["zero"] or f not in files["given"] or plain_f is None:
                failures.append(f"{name}: no fp32 {f} (main-grad) or no plain "
                                f"gradient of argument {i}")
                continue
            zero = load(os.path.join(dirs["zero"], f))
            plain = load(os.path.join(dirs["plain"], plain_f))
            got = load(os.path.join(dirs["given"], f))
            if zero.dtype != np.float32 or got.dtype != np.float32:
                failures.append(f"{name}: {f} is {zero.dtype}, not float32")
                continue
            if plain_f.endswith(".bf16.npy"):
                if not np.array_equal(to_bf16_bits(zero), np.load(
                        os.path.join(dirs["plain"], plain_f))):
                    failures.append(f"{name}: argument {i}: the fp32 gradient "
                                    "rounded to bf16 is not the plain library's")
                if np.array_equal(zero, plain):
                    failures.append(f"{name}: argument {i}: the fp32 gradient is "
                                    "the bf16-rounded one (no fp32 accumulation)")
            elif not np.array_equal(zero, plain):
                failures.append(f"{name}: argument {i}: the fp32 gradient differs "
                                "from the plain fp32 library's")
            want = (given[i] + zero).astype(np.float32)
            if not np.array_equal(got, want):
                bad = np.abs(got - want).max()
                failures.append(f"{name}: argument {i}: main_grad + gradient is "
                                f"not float32(main_grad + gradient) (max diff {bad})")
        closes = {f"bwd/grad_arg{i}.bf16.npy" for i in close_args.get(name, ())}
        identical = 0
        others = [f for f in files["plain"]
                  if not any(f.startswith(f"bwd/grad_arg{i}.") for i in mains)]
        for f in others:
            for kind in ("zero", "given"):
                a, b = os.path.join(dirs["plain"], f), os.path.join(dirs[kind], f)
                if not os.path.exists(b):
                    failures.append(f"{name}: {f} is missing from the {kind} step")
                elif not filecmp.cmp(a, b, shallow=False):
                    if f not in closes:
                        failures.append(f"{name}: {f} differs ({kind} main_grad)")
                    elif not close(a, b):
                        failures.append(f"{name}: {f} differs by more than a "
                                        f"rounding ({kind} main_grad)")
                elif kind == "zero":
                    identical += 1
        extra = sorted(set(files["zero"]) - set(files["plain"]) - set(main_files.values()))
        if extra:
            failures.append(f"{name}: unexpected files {extra}")
        print(f"{tag} {name}: {len(mains)} main_grad argument(s) accumulated in "
              f"fp32; {identical} of {len(others)} other files identical")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
