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


def check_scales(x, deq, scale_inv):
    """Power-of-two scales with amax*scale in (224, 448]; values within E4M3's
    half-ulp (relative 2^-4) of x, or of its subnormal step."""
    s = 1.0 / scale_inv
    pow2 = bool(np.all(np.frexp(s)[0] == 0.5))
    err = np.abs(deq - x)
    bound = np.maximum(np.abs(x) * 2.0**-4, 2.0**-10 * scale_inv) + 1e-30
    return pow2, bool(np.all(err <= bound))


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
    inv = np.repeat(np.repeat(both["rscale"][:, :ceil_div(k, 128)], 128, 0), 128, 1)[:m, :k]
    print("2d values", *check_scales(x, e4m3(both["rdata"]) * inv, inv))
    # 1x128 blocks: rowwise scales [ceil(K/128), roundup(M, 4)] (row i, block
    # jb at [jb][i]); columnwise is the same of x^T [K, M].
    rs1 = (ceil_div(k, 128), round_up(m, 4))
    cs1 = (ceil_div(m, 128), round_up(k, 4))
    one = parts(r[3], [("cdata", (k, m), "u1"), ("cscale", cs1, "f4"),
                       ("rdata", (m, k), "u1"), ("rscale", rs1, "f4")])
    rinv = np.repeat(one["rscale"][:, :m].T, 128, 1)[:, :k]
    cinv = np.repeat(one["cscale"][:, :k].T, 128, 1)[:, :m]
    print("1d rowwise", *check_scales(x, e4m3(one["rdata"]) * rinv, rinv))
    print("1d columnwise", *check_scales(x.T, e4m3(one["cdata"]) * cinv, cinv))
    # Independent quantizations: the columnwise copy is not the transpose.
    print("1d independent", bool((one["cdata"].T != one["rdata"]).any()))
    pad = [one["rscale"][:, m:], one["cscale"][:, k:], both["rscale"][:, ceil_div(k, 128):]]
    print("padding zero", all(bool((p == 0).all()) for p in pad))


if __name__ == "__main__":
    main()
