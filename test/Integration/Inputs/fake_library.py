#!/usr/bin/env python3
"""Builds a stand-in te-compile library whose te_module_info() returns the
given text verbatim (te-run-robustness.mlir): the module info a hostile or
broken library could hold. Its entries `f` and `g` do nothing.

usage: fake_library.py OUT.so (--info FILE | --info-text TEXT | --null-info
                               | --no-info)
"""
import json
import subprocess
import sys


def main():
    out, mode = sys.argv[1], sys.argv[2]
    entries = ("int32_t te_entry_f(void *c, void *const *a, void *const *r,"
               " const long *d) { return 0; }\n"
               "int32_t te_entry_g(void *c, void *const *a, void *const *r,"
               " const long *d) { return 0; }\n")
    if mode == "--no-info":
        info = ""
    elif mode == "--null-info":
        info = "const char *te_module_info(void) { return 0; }\n"
    else:
        text = (open(sys.argv[3]).read() if mode == "--info"
                else sys.argv[3])
        info = ("const char *te_module_info(void) { return %s; }\n"
                % json.dumps(text))
    source = "#include <stdint.h>\n" + info + entries
    subprocess.run(["cc", "-shared", "-fPIC", "-x", "c", "-", "-o", out],
                   input=source.encode(), check=True)


if __name__ == "__main__":
    main()
