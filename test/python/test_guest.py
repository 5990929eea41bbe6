"""te_mlir as a guest in someone else's process: a module step maps no MPI, the runtime
exports nothing but its API and lands in no global symbol scope, and protobuf-using
extensions (TransformerEngine, onnx) import after a step."""
import importlib.util
import textwrap

import pytest

from conftest import run_python

STEP = textwrap.dedent("""
    import torch
    import te_mlir.torch as tet
    m = tet.LayerNormMLP(32, 64, params_dtype=torch.bfloat16, device=DEV,
                         target="cpu" if DEV == "cpu" else "auto")
    x = torch.randn(16, 32, dtype=torch.bfloat16, device=DEV, requires_grad=True)
    m(x).float().square().sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad.float()).all()
    print("STEP OK", m.function().ops.kernel)
""")


def test_guest_libraries_compile():
    """The steps' libraries for both targets, compiled here too: a compile cache filled
    on this machine then serves the GPU machine, which cannot run te-compile."""
    import torch
    import te_mlir.torch as tet
    for target in ("cpu", "auto"):
        m = tet.LayerNormMLP(32, 64, params_dtype=torch.bfloat16, device="cpu", target=target)
        assert m.function().ops.library.target == target


def test_cpu_step_maps_no_mpi():
    """A process that runs a module step on the cpu backend has no MPI library mapped
    (the runtime dlopens libmpi only for an MPI communicator) and no runtime symbol in
    its global scope (the runtime is loaded RTLD_LOCAL)."""
    code = "DEV = 'cpu'\n" + STEP + textwrap.dedent("""
        import ctypes, re
        maps = open("/proc/self/maps").read()
        bad = sorted({m for m in re.findall(r"\\S*lib(?:mpi|open-rte|open-pal)\\S*", maps)})
        print("MPI", bad)
        g = ctypes.CDLL(None)
        print("GLOBAL", hasattr(g, "te_rt_version"), hasattr(g, "te_module_open"))
    """)
    r = run_python(code)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "STEP OK c++" in r.stdout, r.stdout
    assert "MPI []" in r.stdout, r.stdout
    assert "GLOBAL False False" in r.stdout, r.stdout


def _protobuf_users():
    """Importable extensions that bundle protobuf's upb (what crashed next to a runtime
    loaded RTLD_GLOBAL): TransformerEngine first, then onnx, then protobuf itself."""
    out = []
    for mod, name in (("transformer_engine", "transformer_engine.pytorch"), ("onnx", "onnx"),
                      ("google.protobuf", "google.protobuf.descriptor_pb2")):
        try:
            if importlib.util.find_spec(mod.split(".")[0]) is not None:
                out.append(name)
        except (ImportError, ValueError):
            pass
    return out


@pytest.mark.skipif(not _protobuf_users(), reason="no protobuf-using extension installed here "
                    "(TransformerEngine, onnx or protobuf: the H200 has onnx, and TE from "
                    "../shared/tools/te-peer)")
def test_protobuf_extension_imports_after_a_step():
    """import te_mlir.torch, a training step, then import a protobuf-using extension, in
    one process (segfaulted in google._upb when the runtime was loaded RTLD_GLOBAL)."""
    import torch
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    for name in _protobuf_users():
        code = f"DEV = {dev!r}\n" + STEP + textwrap.dedent(f"""
            import importlib
            importlib.import_module({name!r})
            if {name!r} == "onnx":
                import onnx, onnx.helper
                onnx.checker.check_model(onnx.helper.make_model(onnx.helper.make_graph(
                    [], "g", [], [])))
            print("IMPORTED", {name!r})
        """)
        r = run_python(code)
        assert r.returncode == 0, f"{name}: rc {r.returncode}\n{r.stderr[-3000:]}"
        assert f"IMPORTED {name}" in r.stdout, r.stdout
