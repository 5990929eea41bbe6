"""cpu mode's stand-in for TransformerEngine (utils/te_suite: TE cannot be installed on a
machine without a GPU). `transformer_engine.pytorch` maps TE's module classes and
autocast to te_mlir.torch's; `transformer_engine.common.recipe` is TE's own recipe module;
everything else the tests import is an inert stub (_stubs.py)."""
from . import _stubs

_stubs.install()
__version__ = "2.20.0+te_suite_cpu"
