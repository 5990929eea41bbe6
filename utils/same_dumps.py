#!/usr/bin/env python3
"""Compares two directories of bench.py --dump files bit for bit:
    python3 utils/same_dumps.py DIR_A DIR_B
Prints one line per library (same / DIFF with the differing results and how many bytes
differ) and exits 1 when any library differs or is missing on one side."""
import os
import sys

import torch


def raw(t):
    return t.contiguous().reshape(-1).view(torch.uint8)


def main():
    a, b = sys.argv[1], sys.argv[2]
    names = sorted(set(os.listdir(a)) | set(os.listdir(b)))
    bad = 0
    for n in names:
        pa, pb = os.path.join(a, n), os.path.join(b, n)
        if not (os.path.exists(pa) and os.path.exists(pb)):
            print(f"MISSING {n}: only in {a if os.path.exists(pa) else b}")
            bad += 1
            continue
        x, y = torch.load(pa), torch.load(pb)
        diff = []
        for k in sorted(set(x) | set(y)):
            if k not in x or k not in y:
                diff.append(f"{k} (missing)")
            elif x[k].shape != y[k].shape or x[k].dtype != y[k].dtype:
                diff.append(f"{k} (shape/dtype)")
            else:
                d = int((raw(x[k]) != raw(y[k])).sum())
                if d:
                    diff.append(f"{k} ({d} of {raw(x[k]).numel()} bytes)")
        if diff:
            bad += 1
            print(f"DIFF {n}: " + ", ".join(diff[:8]))
        else:
            print(f"same {n} ({len(x)} results, {sum(raw(t).numel() for t in x.values())} bytes)")
    print(f"{len(names) - bad} of {len(names)} libraries bit-identical")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
