"""Compares a library whose weights are te.delay_wgrad against the same model's
without the attribute (split-wgrad.mlir): for every function, one te-run --step of
each with the same --random inputs (and --grads OUT_DIR/grads when it exists: a
main_grad file). The split
library's step runs <fn>_bwd, then <fn>_bwd_wgrad on what <fn>_bwd returned for it;
every file the plain step writes (the forward's results, every gradient, the recipe
state) must be byte-identical to the split step's, which writes only its stashes
(bwd/stashK.npy) besides. Prints, per function, the entries and how many files
were compared, for FileCheck.

usage: check_split_wgrad.py TE_BIN OUT_DIR SPLIT.mlir PLAIN.mlir RECIPE [te-compile flags...]
"""
import filecmp
import os
import sys

from check_frozen import compile_pair, model_functions, run_step, written


def main():
    te_bin, out, split_src, plain_src, recipe, *flags = sys.argv[1:]
    tag, libs = compile_pair(te_bin, out, {"split": split_src, "plain": plain_src},
                             recipe, flags)
    functions, _ = model_functions(split_src)
    failures = []
    for name, _ in functions:
        dirs = {}
        for kind in ("split", "plain"):
            dirs[kind] = os.path.join(out, f"{name}-{kind}-{tag}")
            extra = ["--grads", os.path.join(out, "grads")] \
                if os.path.isdir(os.path.join(out, "grads")) else []
            run_step(te_bin, libs[kind], name, dirs[kind], extra)
        split_files, plain_files = written(dirs["split"]), written(dirs["plain"])
        stashes = [f for f in split_files if f.startswith("bwd/stash")]
        if sorted(set(split_files) - set(stashes)) != plain_files:
            failures.append(f"{name}: the split step wrote {split_files}, the plain "
                            f"one {plain_files}")
            continue
        for f in plain_files:
            if not filecmp.cmp(os.path.join(dirs["split"], f),
                               os.path.join(dirs["plain"], f), shallow=False):
                failures.append(f"{name} ({tag}): {f} differs")
        print(f"{name} ({tag}): {len(plain_files)} files identical, "
              f"{len(stashes)} stashed")
    if failures:
        sys.exit("\n".join(failures))


if __name__ == "__main__":
    main()
