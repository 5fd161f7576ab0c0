"""`Parameter`: a leaf Tensor that a Module registers as one of its weights.

A Parameter shares storage with the tensor it is built from (like PyTorch's
`Tensor._make_subclass`), requires grad by default, and prints as
``Parameter containing:`` followed by the tensor.
"""
from .._tensor import Tensor
from .._torch_function import _disabled_torch_function_impl

__all__ = ["Parameter", "Buffer"]


def _alias(cls, data):
    """A new `cls` instance viewing `data`'s storage (no copy, no autograd history)."""
    t = Tensor.__new__(cls)
    t._init(data._storage, data._offset, data._shape, data._strides, data.dtype,
            data._arr)
    return t


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning one to a Module attribute
    registers it, so it shows up in `parameters()` and `state_dict()`.

    Args:
        data: the tensor to wrap (shares its memory); an empty tensor if None.
        requires_grad: whether the parameter requires gradient (default True).

    Example:
        >>> w = nn.Parameter(torch.zeros(2, 3))
        >>> w.requires_grad, w.is_leaf
        (True, True)
    """

    __torch_function__ = _disabled_torch_function_impl   # ops on it give plain tensors

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .. import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter data must be a Tensor, got {type(data).__name__}")
        t = _alias(cls, data)
        t.requires_grad = requires_grad
        return t

    def __init__(self, data=None, requires_grad=True):
        pass   # everything happens in __new__ (Tensor.__init__ is the legacy constructor)

    def __repr__(self):
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def __reduce_ex__(self, proto):
        rebuild, args = Tensor.__reduce_ex__(self, proto)
        return (_rebuild_parameter, (rebuild, args, self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        clone = Tensor.clone(self.detach())
        result = type(self)(clone, self.requires_grad)
        result.__dict__.update(self.__dict__)
        if self._grad is not None:
            result._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = result
        return result


def _rebuild_parameter(rebuild, args, requires_grad):
    t = rebuild(*args)
    return Parameter(t.detach(), requires_grad)


class Buffer(Tensor):
    """Marks a tensor as a buffer when assigned to a Module attribute (PyTorch 2.5+).

    ``Buffer(data, persistent=True)`` returns a plain Tensor carrying the flag.
    """

    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from .. import empty
            data = empty(0)
        t = _alias(cls, data)
        t.persistent = persistent
        return t

    def __init__(self, data=None, *, persistent=True):
        pass


from .parameter_lazy import (UninitializedBuffer, UninitializedParameter,  # noqa: E402,F401
                             UninitializedTensorMixin, is_lazy)
