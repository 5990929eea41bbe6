"""Damages a te-compile library the ways a bad copy or a hand edit would, for the
robustness tests: damage_library.py IN OUT MODE [ARG]

  edit-info        one byte of the module info's JSON ("name":"lin" -> "xin")
  strip-trailer    drops te-compile's 16-byte checksum trailer (an unchecked library)
  bad-magic        one byte of the trailer's magic changed
  symbol SYM ADDR  (after strip-trailer) the value of dynamic symbol SYM set to ADDR
"""
import struct
import sys

src, dst, mode = sys.argv[1], sys.argv[2], sys.argv[3]
b = bytearray(open(src, "rb").read())
TRAILER = 16
if mode == "edit-info":
    i = b.index(b'"name":"lin"')
    b[i + 8] = ord("x")
elif mode == "strip-trailer":
    assert b[-8:] == b"TEMLSUM1", "no trailer"
    del b[-TRAILER:]
elif mode == "bad-magic":
    b[-1] ^= 0x01
elif mode == "symbol":
    name, addr = sys.argv[4].encode(), int(sys.argv[5], 0)
    assert b[-8:] == b"TEMLSUM1", "no trailer"
    del b[-TRAILER:]
    shoff, = struct.unpack_from("<Q", b, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", b, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", b, shoff + i * shentsize)
                for i in range(shnum)]
    dynsym = next(s for s in sections if s[1] == 11)  # SHT_DYNSYM
    strtab = sections[dynsym[6]]                       # sh_link: its string table
    for off in range(dynsym[4], dynsym[4] + dynsym[5], 24):
        st_name, = struct.unpack_from("<I", b, off)
        end = b.index(b"\0", strtab[4] + st_name)
        if bytes(b[strtab[4] + st_name:end]) == name:
            struct.pack_into("<Q", b, off + 8, addr)  # st_value
            break
    else:
        sys.exit(f"no dynamic symbol {name.decode()}")
else:
    sys.exit(f"unknown mode {mode}")
open(dst, "wb").write(b)
