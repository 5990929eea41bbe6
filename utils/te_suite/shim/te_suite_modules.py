"""The classes and functions that replace TransformerEngine's in both modes: te_mlir.torch's
Linear, LayerNormLinear, LayerNormMLP (and LayerNorm / RMSNorm where te_mlir.torch has
them), autocast, fp8_autocast, quantized_model_init, fp8_model_init, and QuantizedTensor
(what the FP8 primary weights of te_mlir's modules are: te_mlir.torch.primary.QuantizedWeight)."""
import os

import te_mlir.torch as tet

MODULES = ("Linear", "LayerNormLinear", "LayerNormMLP", "LayerNorm", "RMSNorm")
FUNCTIONS = ("autocast", "fp8_autocast", "quantized_model_init", "fp8_model_init")


def _missing(name):
    """A te_mlir gap, refused by name (the plugin counts it as unsupported)."""

    class Missing:
        def __init__(self, *args, **kwargs):
            raise NotImplementedError(f"te_mlir.torch has no {name} (te_suite stands "
                                      f"TransformerEngine's {name} in only where it has)")

    Missing.__name__ = Missing.__qualname__ = name
    Missing.__module__ = "transformer_engine.pytorch"
    return Missing


def _on_cpu(cls, name, target):
    """`cls` with device "cuda" read as the CPU and the library compiled for `target`
    ("cpu", or "auto" to fill the cache a GPU run reads)."""
    from cuda_on_cpu import map_device

    def __init__(self, *args, device=None, **kwargs):
        kwargs.setdefault("target", target)
        cls.__init__(self, *args, device=map_device(device), **kwargs)

    return type(name, (cls,), {"__init__": __init__, "__module__": "transformer_engine.pytorch",
                               "__qualname__": name})


def replacements(mode):
    """name -> te_mlir's object, for transformer_engine.pytorch."""
    target = os.environ.get("TE_SUITE_TARGET", "cpu" if mode == "cpu" else "auto")
    out = {}
    for name in MODULES:
        cls = getattr(tet, name, None)
        if cls is None:
            out[name] = _missing(name)
        elif mode == "cpu":
            out[name] = _on_cpu(cls, name, target)
        else:
            out[name] = cls
    for name in FUNCTIONS:
        out[name] = getattr(tet, name)
    from te_mlir.torch.primary import QuantizedWeight
    out["QuantizedTensor"] = QuantizedWeight
    return out
