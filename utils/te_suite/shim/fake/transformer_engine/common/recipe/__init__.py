"""cpu mode: TransformerEngine's own recipe module (pure Python: the recipe dataclasses),
loaded from the TE source the runner extracted ($TE_SUITE_RECIPE_SRC), so the tests build
TE's recipe objects and te_mlir.torch reads them field by field as on the GPU."""
import os
import sys

_src = os.environ.get("TE_SUITE_RECIPE_SRC")
if not _src or not os.path.exists(_src):
    raise ImportError("te_suite: TE_SUITE_RECIPE_SRC must name TransformerEngine's "
                      "transformer_engine/common/recipe/__init__.py (utils/te_suite/run.py sets it)")
with open(_src) as _f:
    _code = compile(_f.read(), _src, "exec")
exec(_code, sys.modules[__name__].__dict__)
