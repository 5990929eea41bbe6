"""cpu mode's transformer_engine.pytorch: te_mlir.torch's modules and autocast under TE's
names (te_suite_modules.py), TE's availability checks answered for te_mlir's CPU backend
(every recipe is available: FP8 is emulated, MXFP8 / NVFP4 compile for sm_100a and run on
the CPU backend), and the few helpers the selected tests call; the rest is a stub."""
import sys

from transformer_engine import _stubs
import te_suite_modules

globals().update(te_suite_modules.replacements("cpu"))
sys.modules[__name__].__class__ = _stubs.StubModule  # any other name: a stub


def _available(return_reason=False):
    return (True, "") if return_reason else True


is_fp8_available = is_mxfp8_available = is_fp8_block_scaling_available = _available
is_nvfp4_available = _available


def is_bf16_available(return_reason=False):
    return _available(return_reason)


def get_device_compute_capability():
    """Blackwell's: te_mlir compiles the Blackwell recipes (MXFP8, NVFP4) for sm_100a and
    runs them on the CPU backend."""
    return (10, 0)
