"""`torch._C`, the names of PyTorch's C extension that Python code reaches for directly:
those of the __torch_function__ protocol (tensor subclasses write
``__torch_function__ = torch._C._disabled_torch_function_impl`` and
``with torch._C.DisableTorchFunctionSubclass():``) and a few state queries. nbtorch has
no C extension; these are its Python equivalents.
"""
from ._generator import Generator  # noqa: F401
from ._tensor import Tensor as TensorBase  # noqa: F401
from ._torch_function import (STATE as _STATE, DisableTorchFunction,  # noqa: F401
                              DisableTorchFunctionSubclass, _disabled_torch_function_impl)

__all__ = ["DisableTorchFunction", "DisableTorchFunctionSubclass", "Generator", "TensorBase",
           "_disabled_torch_function_impl", "_is_torch_function_enabled",
           "_is_torch_function_mode_enabled", "_len_torch_function_stack",
           "_get_function_stack_at", "_get_tracing_state", "_set_grad_enabled",
           "_get_cudnn_enabled"]


def _is_torch_function_enabled():
    return not (_STATE.all_off or _STATE.subclass_off)


def _is_torch_function_mode_enabled():
    return bool(_STATE.modes) and not _STATE.all_off


def _len_torch_function_stack():
    return len(_STATE.modes)


def _get_function_stack_at(i):
    return _STATE.modes[i]


def _get_tracing_state():
    """None: no TorchScript tracer state (nbtorch.jit.is_tracing() says whether a trace runs)."""
    return None


def _set_grad_enabled(mode):
    from .autograd.grad_mode import set_grad_enabled
    set_grad_enabled(mode)


def _get_cudnn_enabled():
    return False
