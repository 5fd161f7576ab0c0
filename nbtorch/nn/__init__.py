"""`nbtorch.nn`: Module, Parameter, layers, losses, `functional`, `init` and `utils`."""
from . import functional, init, utils  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parameter import Buffer, Parameter
from .parameter_lazy import UninitializedBuffer, UninitializedParameter
from . import attention, grad, parallel  # noqa: F401
from ._factory import factory_kwargs
from .parallel import DataParallel

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "functional",
           "init", "utils", "parallel", "DataParallel", "attention", "grad",
           "factory_kwargs"] + list(_modules_all)

_QUANTIZED_ALIASES = ("quantized", "qat", "intrinsic")    # PyTorch's older names of ao.nn.*


def __getattr__(name):
    """nn.quantized / nn.qat / nn.intrinsic load on first use (they import nbtorch.ao)."""
    if name in _QUANTIZED_ALIASES:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
