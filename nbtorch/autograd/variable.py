"""`torch.autograd.Variable`: the pre-0.4 wrapper, kept because old programs call it.

Since PyTorch 0.4 a Variable *is* a Tensor: ``Variable(t)`` returns a new leaf tensor
sharing `t`'s data (detached), with ``requires_grad`` as given, and ``isinstance(x,
Variable)`` holds for every tensor.
"""
import warnings

from .._tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)`` -> a leaf Tensor.

    Example:
        >>> x = Variable(nbtorch.ones(2), requires_grad=True)   # a Tensor
    """

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "torch.no_grad():` instead.", UserWarning, stacklevel=2)
        if data is None:
            from ..ops.creation import empty
            data = empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        t = data.detach()
        if requires_grad and not (t.dtype.is_floating_point or t.dtype.is_complex):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t.requires_grad = bool(requires_grad)
        return t
