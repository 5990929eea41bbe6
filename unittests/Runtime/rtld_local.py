#!/usr/bin/env python3
"""The Python package's runtime, loaded RTLD_LOCAL, is the one compiled libraries use.

usage: rtld_local.py RUNTIME LIBRARY ABI_PY

Copies RUNTIME (libte_runtime.so) into a temporary directory, as a wheel ships its own,
and loads the copy with ABI_PY's Runtime (python/te_mlir/_abi.py, imported by path: no
torch needed). Then checks that
  * no te_rt_* symbol is in the process's global scope (RTLD_LOCAL);
  * LIBRARY, linked with the build's libte_runtime.so as te-compile links (DT_NEEDED
    libte_runtime.so, a runpath to the build's lib/), opens through te_module_open and
    its entry `add` (te_rt_add on the caller's context) runs on a cpu context of the copy;
  * the copy is the only libte_runtime.so mapped (/proc/self/maps): the library bound to
    it by its SONAME instead of loading the build's.
Prints PASS: or FAIL: lines (ctest TERuntime.python-rtld-local); exit status 0 or 1.
"""
import ctypes
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path


def mapped_runtimes():
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line[line.find("/"):].strip() if "/" in line else ""
            if path.endswith("/libte_runtime.so"):
                paths.add(str(Path(path).resolve()))
    return paths


def main(runtime, library, abi_py):
    spec = importlib.util.spec_from_file_location("te_mlir_abi", abi_py)
    abi = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(abi)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "libte_runtime.so"
        shutil.copy(runtime, copy)
        rt = abi.Runtime(copy)
        if hasattr(ctypes.CDLL(None), "te_rt_version"):
            failures.append("te_rt_version is in the global scope (loaded RTLD_GLOBAL?)")

        module = ctypes.c_void_p()
        if rt.lib.te_module_open(str(library).encode(), ctypes.byref(module)) != 0:
            print(f"FAIL: te_module_open({library}): {rt.error()}")
            return 1
        entry = rt.lib.te_module_find_entry(module, b"add")
        if not entry:
            print(f"FAIL: no entry add: {rt.error()}")
            return 1
        ctx = rt.context("cpu")
        a = (ctypes.c_float * 4)(1, 2, 3, 4)
        b = (ctypes.c_float * 4)(0.5, 0.25, -3, 8)
        c = (ctypes.c_float * 4)()
        args = (ctypes.c_void_p * 2)(ctypes.addressof(a), ctypes.addressof(b))
        results = (ctypes.c_void_p * 1)(ctypes.addressof(c))
        dims = (ctypes.c_int64 * 1)(4)
        if rt.lib.te_module_run(entry, ctx.handle, args, results, dims) != 0:
            failures.append(f"te_module_run(add): {rt.error()}")
        elif list(c) != [1.5, 2.25, 0, 12]:
            failures.append(f"add gave {list(c)}, expected [1.5, 2.25, 0, 12]")

        mapped = mapped_runtimes()
        if mapped != {str(copy.resolve())}:
            failures.append(f"libte_runtime.so mapped from {sorted(mapped)}, expected only "
                            f"the copy loaded first ({copy}): the library did not bind to it")
        if hasattr(ctypes.CDLL(None), "te_rt_version"):
            failures.append("te_rt_version is in the global scope after te_module_open")
        rt.lib.te_module_close(module)
    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print(f"PASS: {library} ran on the RTLD_LOCAL copy of the runtime, the only one mapped")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
