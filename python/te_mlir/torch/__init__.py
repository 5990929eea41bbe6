"""PyTorch layer of te-mlir: custom ops generated from a library's module info
(``load``), and TransformerEngine-named modules (``LayerNormLinear``, ``LayerNormMLP``,
``Linear``, ``LayerNorm``, ``RMSNorm``) that compile their own te IR. See docs/python.md."""
from .ops import OpLibrary, TeFunction, load, namespace_of
from .nn import (LayerNormLinear, LayerNormMLP, Linear, autocast, fp8_autocast,
                 fp8_model_init, quantized_model_init)
from .norm import LayerNorm, RMSNorm

__all__ = ["OpLibrary", "TeFunction", "load", "namespace_of", "LayerNormLinear",
           "LayerNormMLP", "Linear", "LayerNorm", "RMSNorm", "fp8_autocast", "autocast",
           "quantized_model_init", "fp8_model_init"]

import importlib.util as _ilu

# torch.compile(backend="te_mlir"): registered on import when te_mlir/torch/backend.py exists
if _ilu.find_spec(__name__ + ".backend") is not None:
    from . import backend  # noqa: F401
