#!/usr/bin/env python3
"""Writes the malformed .npy files of te-run-robustness.mlir into DIR:
headers that break NumPy's grammar, shapes whose data the file does not
hold (or overflows), and files with extra bytes."""
import struct
import sys

import numpy as np


def raw(path, header, data=b"", major=1):
    h = header.encode("latin1")
    length = struct.pack("<H", len(h)) if major == 1 else struct.pack("<I", len(h))
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY" + bytes([major, 0]) + length + h + data)


def main():
    d = sys.argv[1]
    f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }"
    # 192 bytes declaring 16 GiB of float32.
    raw(d + "/huge.npy", (f4 % "(65536, 65536)").ljust(117) + "\n", b"\0" * 64)
    raw(d + "/overflow.npy", f4 % "(4294967296, 4294967296)" + "\n")
    raw(d + "/float_dim.npy", f4 % "(8.0, 32)" + "\n", b"\0" * 1024)
    raw(d + "/neg_dim.npy", f4 % "(-1, 32)" + "\n")
    raw(d + "/int_not_tuple.npy", f4 % "(8)" + "\n", b"\0" * 32)
    raw(d + "/dup.npy", "{'descr': '<f4', 'descr': '<f4', 'fortran_order': "
        "False, 'shape': (8,), }\n", b"\0" * 32)
    raw(d + "/extra_key.npy", "{'descr': '<f4', 'fortran_order': False, "
        "'shape': (8,), 'x': 1}\n", b"\0" * 32)
    raw(d + "/no_shape.npy", "{'descr': '<f4', 'fortran_order': False}\n",
        b"\0" * 32)
    raw(d + "/unterminated.npy", "{'descr': '<f4', 'fortran_order': False, "
        "'shape': (8,), \n", b"\0" * 32)
    raw(d + "/garbage.npy", f4 % "(8,)" + " xyz\n", b"\0" * 32)
    raw(d + "/order.npy", "{'descr': '<f4', 'fortran_order': Maybe, "
        "'shape': (8,), }\n", b"\0" * 32)
    raw(d + "/trailing.npy", f4 % "(8,)" + "\n", b"\0" * 36)
    raw(d + "/short.npy", f4 % "(8,)" + "\n", b"\0" * 28)
    raw(d + "/header_len.npy", "{'descr'", b"")
    with open(d + "/header_len.npy", "r+b") as f:  # claims 4096 header bytes
        f.seek(8)
        f.write(struct.pack("<H", 4096))
    # Well-formed ones: a v2.0 header, and uint8 bytes for a float32.
    with open(d + "/v2.npy", "wb") as f:
        np.lib.format.write_array(f, np.ones((5, 64), "f4"), version=(2, 0))
    np.save(d + "/u8.npy", np.zeros((5, 64), "u1"))


if __name__ == "__main__":
    main()
