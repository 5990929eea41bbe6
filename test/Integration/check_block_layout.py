#!/usr/bin/env python3
"""Checks te-run's Float8 block-scaled buffers (qtensor-layout-block.mlir).

usage: check_block_layout.py X.npy OUTDIR

OUTDIR holds result0..3 of @q: x [M, K] quantized with 128x128 blocks
(both usages), that buffer's rowwise- and columnwise-only views, and x
quantized with 1x128 blocks (both usages). Decodes E4M3 with numpy alone
and prints one line per property (FileCheck reads them).
"""
import sys

import numpy as np

ALIGN = 256


def align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def e4m3(codes):
    """E4M3 (fn) bytes -> float32 (no inf; 0x7F/0xFF are NaN)."""
    c = codes.astype(np.int32)
    sign = np.where(c & 0x80, -1.0, 1.0)
    exp = (c >> 3) & 0xF
    man = c & 0x7
    val = np.where(exp == 0, man / 8.0 * 2.0**-6, (1 + man / 8.0) * 2.0 ** (exp - 7.0))
    val = np.where((c & 0x7F) == 0x7F, np.nan, val)
    return (sign * val).astype(np.float32)


def parts(buf, specs):
    """Splits a buffer into named arrays, each at a 256-byte aligned offset."""
    out, off = {}, 0
    for name, shape, dtype in specs:
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        out[name] = buf[off:off + n].view(dtype).reshape(shape)
        off += align(n)
    assert off == buf.size, (off, buf.size)
    return out


def ceil_div(a, b):
    return -(-a // b)


def round_up(a, b):
    return ceil_div(a, b) * b


def expected_scale_inv(amax):
    """1 / scale with TE's rule: scale = 448 / amax (1 for amax 0, FLT_MAX on
    overflow), rounded down to a power of two (mantissa bits cleared)."""
    amax = np.asarray(amax, np.float32)
    with np.errstate(divide="ignore", over="ignore"):
        s = np.float32(448) / amax
    s = np.where(amax == 0, np.float32(1), s)
    s = np.where(np.isinf(s), np.finfo(np.float32).max, s).astype(np.float32)
    s = (s.view(np.uint32) & np.uint32(0xFF800000)).view(np.float32)
    return (np.float32(1) / s).astype(np.float32)


def block_amax(x, rows, cols):
    """max |x| over blocks of rows x cols (edge blocks partial)."""
    m, k = x.shape
    out = np.zeros((ceil_div(m, rows), ceil_div(k, cols)), np.float32)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = np.abs(x[i * rows:(i + 1) * rows, j * cols:(j + 1) * cols]).max()
    return out


def check_values(x, deq, scale_inv):
    """Values within E4M3's half-ulp (relative 2^-4) of x, or of its
    subnormal step at this scale."""
    err = np.abs(deq - x)
    bound = np.maximum(np.abs(x) * 2.0**-4, 2.0**-10 * scale_inv) + 1e-30
    return bool(np.all(err <= bound))


def main():
    x = np.load(sys.argv[1]).astype(np.float32)
    m, k = x.shape
    r = [np.load(f"{sys.argv[2]}/result{i}.npy") for i in range(4)]
    # 128x128 blocks: scales [ceil(M/128), roundup(ceil(K/128), 4)] and the
    # transposed [ceil(K/128), roundup(ceil(M/128), 4)].
    rs2 = (ceil_div(m, 128), round_up(ceil_div(k, 128), 4))
    cs2 = (ceil_div(k, 128), round_up(ceil_div(m, 128), 4))
    both = parts(r[0], [("cdata", (k, m), "u1"), ("cscale", cs2, "f4"),
                        ("rdata", (m, k), "u1"), ("rscale", rs2, "f4")])
    print("sizes", [b.size for b in r])
    ncol = align(k * m) + align(4 * cs2[0] * cs2[1])
    print("views", bool((r[2] == r[0][:ncol]).all()), bool((r[1] == r[0][ncol:]).all()))
    print("2d transposed", bool((both["cdata"].T == both["rdata"]).all()),
          bool((both["cscale"][:, :rs2[0]].T == both["rscale"][:, :cs2[0]]).all()))
    kb, mb = ceil_div(k, 128), ceil_div(m, 128)
    inv = np.repeat(np.repeat(both["rscale"][:, :kb], 128, 0), 128, 1)[:m, :k]
    print("2d scales", bool((both["rscale"][:, :kb] ==
                             expected_scale_inv(block_amax(x, 128, 128))).all()),
          check_values(x, e4m3(both["rdata"]) * inv, inv))
    # 1x128 blocks: rowwise scales [ceil(K/128), roundup(M, 4)] (row i, block
    # jb at [jb][i]); columnwise is the same of x^T [K, M].
    rs1 = (ceil_div(k, 128), round_up(m, 4))
    cs1 = (ceil_div(m, 128), round_up(k, 4))
    one = parts(r[3], [("cdata", (k, m), "u1"), ("cscale", cs1, "f4"),
                       ("rdata", (m, k), "u1"), ("rscale", rs1, "f4")])
    rinv = np.repeat(one["rscale"][:, :m].T, 128, 1)[:, :k]
    cinv = np.repeat(one["cscale"][:, :k].T, 128, 1)[:, :m]
    print("1d rowwise", bool((one["rscale"][:, :m] ==
                              expected_scale_inv(block_amax(x, 1, 128)).T).all()),
          check_values(x, e4m3(one["rdata"]) * rinv, rinv))
    print("1d columnwise", bool((one["cscale"][:, :k] ==
                                 expected_scale_inv(block_amax(x.T, 1, 128)).T).all()),
          check_values(x.T, e4m3(one["cdata"]) * cinv, cinv))
    # Independent quantizations: the columnwise copy is not the transpose.
    print("1d independent", bool((one["cdata"].T != one["rdata"]).any()))
    pad = [one["rscale"][:, m:], one["cscale"][:, k:], both["rscale"][:, kb:],
           both["cscale"][:, mb:]]
    print("padding zero", all(bool((p == 0).all()) for p in pad))


if __name__ == "__main__":
    main()
