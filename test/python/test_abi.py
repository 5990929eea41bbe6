"""The package's view of the runtime's C ABI: _abi's ctypes table against the headers
(include/te/Runtime/TERuntime.def for te_rt_*, TEModule.h for te_module_*), the load-time
version check, and the Python dim-expression parser (te_mlir.library.DimExpr) against the
runtime's (lib/Runtime/module/DimExpr.cpp, through te_module_eval_dim)."""
import ctypes
import re

import pytest

import te_mlir
from te_mlir import _abi
from te_mlir.library import DimExpr
from conftest import REPO

HEADERS = REPO / "include" / "te" / "Runtime"

# --------------------------------------------------------------------------- the headers


def _strip_comments(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def _c_type(text):
    """(base type, pointer depth) of a C type or a parameter declaration ("const int64_t
    *const *shapes" -> ("int64_t", 2)); `const` and the parameter name dropped."""
    words = [w for w in text.replace("*", " * ").split() if w != "const"]
    stars = words.count("*")
    names = [w for w in words if w != "*"]
    if len(names) > 1:  # a named parameter: the name is last
        names = names[:-1]
    assert len(names) == 1, f"cannot read the C type {text!r}"
    return names[0], stars


def _params(text):
    text = text.strip()
    if text in ("", "void"):
        return []
    return [_c_type(p) for p in text.split(",")]


def declared():
    """{name: (result type, [parameter types])} of every function of the ABI."""
    out = {}
    rt = _strip_comments((HEADERS / "TERuntime.def").read_text())
    for m in re.finditer(r"TE_RT_FUNC\(\s*([^,]+?)\s*,\s*(te_rt_\w+)\s*,\s*\(([^()]*)\)\s*\)",
                         rt):
        out[m.group(2)] = (_c_type(m.group(1)), _params(m.group(3)))
    mod = _strip_comments((HEADERS / "TEModule.h").read_text())
    for m in re.finditer(r"TE_RT_API\s+([^;(]*?)\b(te_module_\w+)\s*\(([^()]*)\)\s*;", mod):
        out[m.group(2)] = (_c_type(m.group(1)), _params(m.group(3)))
    return out


_SCALARS = {"int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64, "uint32_t": ctypes.c_uint32,
            "uint64_t": ctypes.c_uint64, "double": ctypes.c_double, "float": ctypes.c_float,
            "uint8_t": ctypes.c_uint8, "char": ctypes.c_char}


def compatible(ct, c):
    """Whether ctypes type `ct` passes or returns C type `c` = (base, pointer depth):
    the scalar itself; for a pointer, c_void_p (an address), c_char_p for char *, or a
    POINTER to a type compatible with the pointee."""
    base, stars = c
    if stars == 0:
        if base == "void":
            return ct is None
        return ct is _SCALARS.get(base)
    if ct is ctypes.c_void_p:
        return True
    if (base, stars) == ("char", 1) and ct is ctypes.c_char_p:
        return True
    pointee = getattr(ct, "_type_", None)
    return (isinstance(ct, type) and issubclass(ct, ctypes._Pointer)
            and compatible(pointee, (base, stars - 1)))


def test_headers_parse():
    d = declared()
    # both headers were read, with what the parser must see through (a multi-line
    # parameter list, a pointer result, a pointer-to-pointer parameter)
    assert d["te_rt_version"] == (("char", 1), [])
    assert d["te_rt_capture_end"][1] == [("te_rt_context", 1), ("te_rt_graph", 2)]
    assert d["te_module_entry_arg"] == (("te_module_tensor", 1),
                                        [("te_module_entry", 1), ("int64_t", 0)])
    assert d["te_module_bind_dims"][1][2] == ("int64_t", 2)
    assert len([n for n in d if n.startswith("te_rt_")]) > 60
    assert len([n for n in d if n.startswith("te_module_")]) > 40


def test_abi_table_matches_headers():
    d = declared()
    bad = []
    for name, (res, args) in _abi._SIGS.items():
        if name not in d:
            bad.append(f"{name}: not declared by TERuntime.def / TEModule.h")
            continue
        cres, cargs = d[name]
        if not compatible(res, cres):
            bad.append(f"{name}: result {res} for C {cres}")
        if len(args) != len(cargs):
            bad.append(f"{name}: {len(args)} arguments, the header has {len(cargs)}")
            continue
        for i, (a, c) in enumerate(zip(args, cargs)):
            if not compatible(a, c):
                bad.append(f"{name}: argument {i} is {a.__name__}, the header has {c}")
    assert not bad, "\n".join(bad)


def test_every_function_is_bound_or_listed():
    d = declared()
    unknown = sorted(n for n in d if n not in _abi._SIGS and n not in _abi.NOT_BOUND)
    assert not unknown, "exported but neither in _abi._SIGS nor in _abi.NOT_BOUND: " + \
        ", ".join(unknown)
    stale = sorted(n for n in _abi.NOT_BOUND if n not in d)
    assert not stale, "_abi.NOT_BOUND names what the headers no longer declare: " + \
        ", ".join(stale)
    assert not set(_abi._SIGS) & _abi.NOT_BOUND


def test_runtime_exports_the_headers():
    lib = te_mlir.runtime().lib
    missing = sorted(n for n in declared() if not hasattr(lib, n))
    assert not missing, "declared but not exported by libte_runtime.so: " + ", ".join(missing)


def test_version_mismatch_is_an_error_at_load(monkeypatch):
    rt = te_mlir.runtime()
    assert rt.version.split()[:2] == ["te-mlir", te_mlir.__version__]
    monkeypatch.setattr(_abi, "VERSION", "0.0.0-other")
    with pytest.raises(te_mlir.TeMlirError, match=r"is not the one of this package .*ship "
                       "together"):
        _abi.Runtime(rt.path)


def test_find_build_order(monkeypatch, tmp_path):
    """An installed wheel's te_mlir/_native is found with no environment variable, before
    a checkout's build/; $TE_MLIR_BUILD wins over both, and one without the file asked
    for is an error (no fallback)."""
    native = tmp_path / "_native"
    (native / "bin").mkdir(parents=True)
    (native / "bin" / "te-compile").write_text("")
    monkeypatch.setattr(_abi, "_NATIVE", native)
    monkeypatch.delenv("TE_MLIR_BUILD", raising=False)
    assert _abi.find_build("bin/te-compile") == native
    other = tmp_path / "build"
    (other / "bin").mkdir(parents=True)
    (other / "bin" / "te-compile").write_text("")
    monkeypatch.setenv("TE_MLIR_BUILD", str(other))
    assert _abi.find_build("bin/te-compile") == other
    with pytest.raises(te_mlir.TeMlirError, match=r"TE_MLIR_BUILD=.* has no lib/nothing"):
        _abi.find_build("lib/nothing")


# --------------------------------------------------------------------------- dim expressions

DIMS = [[256, 3], [40, 7], [0, 1], [1000, 0], [2 ** 62, 2], [-5, 12]]

CORPUS = [
    # well-formed
    "0", "7", "d0", "d1", " d0 ", "d0+d1", "d0 - d1", "d0-d1-3", "2*d0+1", "d0*d1/4",
    "(d0+1)*(d1-1)", "d0/32", "d0/4*4", "roundup(d0/32, 4)", "roundup(d0, 128)",
    "ceildiv(d0, 128)", "ceildiv(d0 - 300, 7)", "roundup(0 - d0, 16)", "ceildiv(d0, 0)",
    "ceildiv(d0, d1 - d1)", "roundup(d0, 0 - 3)", "d0/0", "d0/(0-2)", "d0/3", "d0/d1",
    "((((d0))))", "d01", "d0 * d0", "d0 + d0", "0 - d0 - d0 - d0", "d0 * 2 - 1",
    "roundup(d0, 3)", "999999999999999999", "999999999999999999 * 10",
    "roundup(ceildiv(d1,128),4) * 32", "d0 / 2 / 2 / 2", "ceildiv(roundup(d0, 7), d1)",
    # malformed
    "", " ", "d0 *", "(d0", "d0)", "d0 d1", "d2", "d", "dx", "d1x", "x", "ceildiv(d0)",
    "ceildiv d0", "roundup(d0, 4, 2)", "-d0", "d0\t+1", "d0 + +1", "Ceildiv(d0, 2)",
    "9999999999999999999", "d9999999999999999999", "d0_1", "d0 ** 2", "d0 % 2", "()",
    "ceildiv(,)", "d0/", "/d0", "roundup(d0 4)", "d0,", "ceildiv(d0, 2))", "d0/3 )",
    "(" * 63 + "d0" + ")" * 63, "(" * 64 + "d0" + ")" * 64, "(" * 65 + "d0" + ")" * 65,
    "roundup(" * 40 + "d0" + ", 2)" * 40,
]


def _runtime_eval(text, dims):
    """(value or None, inexact divisor) from te_module_eval_dim."""
    v, inexact = ctypes.c_int64(), ctypes.c_int64()
    rc = te_mlir.runtime().lib.te_module_eval_dim(text.encode(), _abi.i64s(dims), len(dims),
                                                  ctypes.byref(v), ctypes.byref(inexact))
    return (v.value if rc == 0 else None), inexact.value


class _Inexact(Exception):
    pass


def _python_eval(text, dims):
    """(value or None, inexact divisor, parsed) from DimExpr."""
    try:
        e = DimExpr(text)
    except te_mlir.TeMlirError:
        return None, 0, False
    seen = []

    def exact(v, d, _):
        if v % d != 0:
            seen.append(d)
            raise _Inexact

    try:
        return e.evaluate(dims, exact), 0, True
    except _Inexact:
        return None, seen[0], True
    except te_mlir.TeMlirError:
        return None, 0, True


@pytest.mark.parametrize("text", CORPUS)
def test_dim_expr_matches_runtime(text):
    for dims in DIMS:
        want, want_div = _runtime_eval(text, dims)
        got, got_div, parsed = _python_eval(text, dims)
        assert got == want, f"{text!r} at {dims}: python {got}, runtime {want}"
        if parsed:  # both stop at the same failure (the runtime parses and computes at once)
            assert got_div == want_div, f"{text!r} at {dims}: inexact divisor"


def test_dim_expr_corpus_covers_both_outcomes():
    outcomes = {(_runtime_eval(t, d)[0] is None, _runtime_eval(t, d)[1] != 0)
                for t in CORPUS for d in DIMS}
    assert outcomes == {(False, False), (True, False), (True, True)}


# --------------------------------------------------------------------------- contexts


def test_context_calls_on_cpu():
    """The Context methods bench/ and the ops use, on the cpu backend: stream 0, arena and
    workspace set and unset, a copy, and a graph capture, which cpu refuses clearly."""
    import numpy as np

    ctx = te_mlir.runtime().context("cpu")
    ctx.set_stream(0)
    src = np.arange(64, dtype=np.uint8)
    dst = np.zeros(64, dtype=np.uint8)
    ctx.copy(dst.ctypes.data, src.ctypes.data, 64)
    ctx.synchronize()
    assert (dst == src).all()
    arena = np.zeros(4096 + 256, dtype=np.uint8)
    ctx.set_arena((arena.ctypes.data + 255) // 256 * 256, 4096)
    ctx.set_arena(None, 0)
    ctx.set_workspace(None, 0)
    assert ctx.workspace_needed() == 0
    with pytest.raises(te_mlir.TeMlirError, match="te_rt_capture_begin"):
        ctx.capture_begin()
