#!/usr/bin/env python3
"""Builds a stand-in te-compile library whose module info is hand-written
(te-run-dim-expr.mlir): one entry `f` doing nothing, with an argument of
shape [d0, 4] (float32) and a float32 result of the given shape.

usage: fake_module.py OUT.so DIM...

Each DIM is an integer or a dim expression (a JSON string in the module
info), e.g. 'ceildiv(d0, 128)'.
"""
import json
import subprocess
import sys


def main():
    out, dims = sys.argv[1], sys.argv[2:]
    shape = [int(d) if d.lstrip("-").isdigit() else d for d in dims]
    info = {
        "format": "te-mlir module 1",
        "entries": [{
            "name": "f",
            "symbol": "te_entry_f",
            "args": [{"dtype": "float32", "shape": ["d0", 4]}],
            "results": [{"dtype": "float32", "shape": shape}],
            "dims": [{"arg": 0, "dim": 0}],
            "arena_slots": 0,
            "arena_bytes": "dynamic",
        }],
    }
    source = ("#include <stdint.h>\n"
              "const char *te_module_info(void) { return %s; }\n"
              "int32_t te_entry_f(void *ctx, void *const *args,\n"
              "                   void *const *results, const int64_t *dims)"
              " {\n  return 0;\n}\n" % json.dumps(json.dumps(info)))
    subprocess.run(["cc", "-shared", "-fPIC", "-x", "c", "-", "-o", out],
                   input=source.encode(), check=True)


if __name__ == "__main__":
    main()
