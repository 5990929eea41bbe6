"""te_rt_transpose_bytes on a GPU against numpy's transpose, bit for bit: ragged,
multi-tile and aligned shapes, with source and destination offset by 0, 1 and 8 bytes
(the kernel's vector and byte paths), then its time on the FP8 weights' shapes (wall
time of 50 calls between synchronizes).
    python3 utils/check_transpose_bytes.py RUNTIME.so [--backend cuda|cpu] [--out FILE]"""
import argparse
import ctypes
import json
import sys
import time

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runtime")
    ap.add_argument("--out")
    ap.add_argument("--backend", default="cuda", choices=["cuda", "cpu"])
    a = ap.parse_args()
    rt = ctypes.CDLL(a.runtime)
    rt.te_rt_context_create.restype = ctypes.c_void_p
    rt.te_rt_context_create.argtypes = [ctypes.c_int32]
    rt.te_rt_alloc.restype = ctypes.c_void_p
    rt.te_rt_alloc.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    rt.te_rt_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    for f in (rt.te_rt_copy_to_backend, rt.te_rt_copy_to_host):
        f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    rt.te_rt_synchronize.argtypes = [ctypes.c_void_p]
    rt.te_rt_transpose_bytes.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.c_int64, ctypes.c_int64]
    rt.te_rt_last_error.restype = ctypes.c_char_p
    ctx = rt.te_rt_context_create(1 if a.backend == "cuda" else 0)
    if not ctx:
        sys.exit(f"no {a.backend} context: " + rt.te_rt_last_error().decode())

    def ok(rc):
        if rc:
            raise RuntimeError(rt.te_rt_last_error().decode())

    rng = np.random.default_rng(0)
    failures, checked = [], 0
    shapes = [(33, 65), (64, 64), (1024, 512), (1000, 520), (1, 9), (7, 1), (0, 5),
              (4096, 16384), (8192, 4096), (65535 * 32 + 7, 3)]
    for rows, cols in shapes:
        for so, do in ((0, 0), (1, 0), (0, 1), (8, 8)):
            n = rows * cols
            src = rt.te_rt_alloc(ctx, n + 16)
            dst = rt.te_rt_alloc(ctx, n + 16)
            x = rng.integers(0, 256, size=n, dtype=np.uint8)
            ok(rt.te_rt_copy_to_backend(ctx, src + so, x.ctypes.data, n))
            ok(rt.te_rt_transpose_bytes(ctx, src + so, dst + do, rows, cols))
            got = np.empty(n, np.uint8)
            ok(rt.te_rt_copy_to_host(ctx, got.ctypes.data, dst + do, n))
            ok(rt.te_rt_synchronize(ctx))
            want = x.reshape(rows, cols).T.reshape(-1)
            checked += 1
            if not np.array_equal(got, want):
                failures.append(f"{rows}x{cols} src+{so} dst+{do}: "
                                f"{int((got != want).sum())} bytes differ")
            rt.te_rt_free(ctx, src)
            rt.te_rt_free(ctx, dst)
    times = {}
    for rows, cols in ((4096, 16384), (16384, 4096), (4096, 12288), (8192, 4096)):
        n = rows * cols
        src, dst = rt.te_rt_alloc(ctx, n), rt.te_rt_alloc(ctx, n)
        for _ in range(3):
            ok(rt.te_rt_transpose_bytes(ctx, src, dst, rows, cols))
        ok(rt.te_rt_synchronize(ctx))
        reps = 50
        t0 = time.perf_counter()
        for _ in range(reps):
            ok(rt.te_rt_transpose_bytes(ctx, src, dst, rows, cols))
        ok(rt.te_rt_synchronize(ctx))
        us = (time.perf_counter() - t0) / reps * 1e6
        times[f"{rows}x{cols}"] = {"us": round(us, 1), "GB/s (read + write)": round(2 * n / us / 1e3, 1)}
        rt.te_rt_free(ctx, src)
        rt.te_rt_free(ctx, dst)
    res = {"checked": checked, "failures": failures, "times": times}
    print(json.dumps(res, indent=1))
    if a.out:
        json.dump(res, open(a.out, "w"), indent=1)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
