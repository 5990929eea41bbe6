"""pytest setup for te_mlir's Python package: imports it from python/ of this checkout,
needs torch and a te-mlir build (TE_MLIR_BUILD, else <repo>/build, <repo>/build-new,
else te-compile on PATH); compiled libraries go to one cache per session
($TE_MLIR_CACHE when set, else a pytest tmp dir), so each compiles once.

    TE_MLIR_BUILD=/path/to/build python -m pytest test/python -q
"""
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

torch = pytest.importorskip("torch")

import te_mlir  # noqa: E402

try:
    te_mlir.find_build("bin/te-compile")
    te_mlir.find_build("lib/libte_runtime.so")
    _NO_BUILD = None
except te_mlir.TeMlirError as ex:
    _NO_BUILD = str(ex)


def run_python(code, **env):
    """Runs `code` in a new Python that imports this checkout's te_mlir (PYTHONPATH
    gets the repository's python/ first; `env` added to the environment): the
    CompletedProcess, text output captured."""
    import subprocess
    path = os.environ.get("PYTHONPATH")
    e = {**os.environ, "PYTHONPATH": str(REPO / "python") + (os.pathsep + path if path else ""),
         **env}
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                          timeout=600)


def copy_module(m, how):
    """A copy of module `m` by `how`: "deepcopy", "pickle" or "torch.save" (through
    torch.load of the saved bytes)."""
    import copy
    import io
    import pickle
    if how == "deepcopy":
        return copy.deepcopy(m)
    if how == "pickle":
        return pickle.loads(pickle.dumps(m))
    import torch
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=False)


def pytest_collection_modifyitems(config, items):
    if _NO_BUILD:
        skip = pytest.mark.skip(reason="no te-mlir build: " + _NO_BUILD)
        for it in items:
            it.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def te_cache(tmp_path_factory):
    """The compile cache of the session (TE_MLIR_CACHE)."""
    old = os.environ.get("TE_MLIR_CACHE")
    d = old or str(tmp_path_factory.mktemp("te-mlir-cache"))
    os.environ["TE_MLIR_CACHE"] = d
    torch.set_num_threads(min(2, torch.get_num_threads()))
    yield Path(d)
    if old is None:
        os.environ.pop("TE_MLIR_CACHE", None)


@pytest.fixture(autouse=True)
def _reset_dynamo():
    yield
    torch._dynamo.reset()


INPUTS = REPO / "test" / "Integration" / "Inputs"

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(),
                               reason="no GPU: torch.cuda.is_available() is False (CUDA tests run "
                                      "on the H200 machine with a CUDA build of the runtime)")
