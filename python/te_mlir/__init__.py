"""te-mlir's Python package: open te-compile'd libraries (te_mlir.Library), compile MLIR
with a cache (te_mlir.compile), and, in te_mlir.torch, PyTorch custom ops and
TransformerEngine-named modules over them. See docs/python.md."""
from ._abi import VERSION as __version__
from ._abi import TeMlirError, TeMlirWarning, find_build, runtime
from .compile import compile
from .library import DimExpr, Entry, Library, TensorSpec

__all__ = ["Library", "Entry", "TensorSpec", "DimExpr", "compile", "TeMlirError", "TeMlirWarning",
           "find_build", "runtime"]
