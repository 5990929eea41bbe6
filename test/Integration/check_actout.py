"""What a per-tensor FP8 LayerNormMLP library saves of FC2's input and what
its backward computes from it (actout-rowwise.mlir).

usage: check_actout.py LIBRARY.so STEP_OUT_DIR...

Prints, from the library's module info (te_module_info()), the inner
tensors of every saved act_out and ln_out (each forward result and backward
argument with that te.saved name) and, for each te-run --step output
directory, the sha256 of its gradients and recipe state (every file of
bwd/, in name order, its raw bytes) and of its forward output.
"""
import hashlib
import json
import os
import sys

import numpy as np


def module_info(path):
    """The library's module info, read from its bytes (the NUL-terminated JSON constant
    te_module_info returns; its keys are sorted, "arch" first): not loaded, so that an
    instrumented (ASan) library needs no sanitizer runtime in this Python."""
    data = open(path, "rb").read()
    start = data.find(b'{"arch":')
    if start < 0:
        sys.exit(f"check_actout.py: {path}: no module info")
    return json.loads(data[start:data.index(b"\0", start)])


def saved_parts(info):
    for entry in info["entries"]:
        for kind in ("args", "results"):
            for i, t in enumerate(entry[kind]):
                name = t.get("te.saved", "")
                if name.endswith((".act_out", ".ln_out")):
                    inner = ",".join(p["name"] for p in t["inner"])
                    print(f"{entry['name']} {kind}[{i}] {name}: {t['type']} inner {inner}")


def digest(files):
    h = hashlib.sha256()
    for f in files:
        h.update(np.load(f).tobytes())
    return h.hexdigest()[:16]


def main():
    saved_parts(module_info(sys.argv[1]))
    for out in sys.argv[2:]:
        bwd = os.path.join(out, "bwd")
        files = [os.path.join(bwd, f) for f in sorted(os.listdir(bwd))]
        fwd = os.path.join(out, "fwd")
        outs = [os.path.join(fwd, f) for f in sorted(os.listdir(fwd))]
        print(f"{os.path.basename(out)}: {len(files)} bwd files {digest(files)}, "
              f"fwd {digest(outs)}")


if __name__ == "__main__":
    main()
