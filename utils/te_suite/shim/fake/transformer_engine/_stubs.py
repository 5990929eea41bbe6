"""cpu mode: inert stand-ins for the parts of TransformerEngine that the selected tests
import but that are not te_mlir's targets (attention, GroupedLinear, quantized tensors,
the C++ extension, ...). Importing them, building the module-level objects the test
files build (a quantizer in a parametrize list), `isinstance` against them and reading
their attributes work; using one (calling it, reading an instance's attribute) raises
NotATarget, so a test that reaches one is reported, never silently passed. The runner
deselects those tests by name, so none should."""
import importlib.abc
import importlib.machinery
import sys
import types


class NotATarget(RuntimeError):
    """A test used a part of TransformerEngine that te_suite does not stand in for."""


class _StubMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return stub_class(f"{cls.__qualname__}.{name}")

    def __iter__(cls):
        return iter(())


class _Stub(metaclass=_StubMeta):
    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotATarget(f"te_suite (cpu mode): {type(self).__qualname__}.{name} is "
                         "TransformerEngine's, not stood in for")

    def __call__(self, *args, **kwargs):
        raise NotATarget(f"te_suite (cpu mode): {type(self).__qualname__} is "
                         "TransformerEngine's, not stood in for")

    def __repr__(self):
        return f"<te_suite stub {type(self).__qualname__}>"


_CLASSES = {}


def stub_class(qualname):
    c = _CLASSES.get(qualname)
    if c is None:
        c = _CLASSES[qualname] = _StubMeta(qualname.rsplit(".", 1)[-1], (_Stub,),
                                           {"__qualname__": qualname})
    return c


class StubModule(types.ModuleType):
    """A module whose every missing attribute is a stub class of that name."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = stub_class(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Any transformer_engine.* submodule without a file here, and transformer_engine_torch
    (TE's C++ extension), as a StubModule. Last on sys.meta_path: a real file of the
    fake package is found first."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "transformer_engine_torch" and not fullname.startswith(
                "transformer_engine."):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        m = StubModule(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        pass


def install():
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
