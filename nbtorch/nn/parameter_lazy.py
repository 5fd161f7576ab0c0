"""Parameters and buffers whose shape is not known yet: `UninitializedParameter` and
`UninitializedBuffer`, the placeholders of the Lazy* modules (`nn/modules/lazy.py`).

Each holds an empty tensor of the requested device and dtype until `materialize(shape)`
gives it storage of that shape, in place (the same object, so references taken before,
e.g. by a module's parameter dict, stay valid), and turns it into a `Parameter` (a
buffer into a `Buffer`, the Tensor subclass that can take its place; Lazy modules swap
a plain Tensor in). Its contents are then uninitialised: the module's
`reset_parameters` fills them.
"""
from .._tensor import Tensor
from .parameter import Buffer, Parameter, _alias

__all__ = ["UninitializedParameter", "UninitializedBuffer", "UninitializedTensorMixin",
           "is_lazy"]


def _empty(shape, device, dtype):
    from .. import _dtype, empty
    return empty(*shape, device=device,
                 dtype=dtype if dtype is not None else _dtype.get_default_dtype())


class UninitializedTensorMixin:
    """`materialize` and the printing shared by the two placeholders."""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Give this placeholder storage of `shape` (default: its own device and dtype) and
        make it the class it stands for."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.data = _empty(shape, device if device is not None else self.device,
                           dtype if dtype is not None else self.dtype)
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter without a shape yet (a Lazy module materialises it on its first call).

    Example:
        >>> p = nn.UninitializedParameter()
        >>> p.materialize((2, 3)); type(p).__name__, tuple(p.shape)
        ('Parameter', (2, 3))
    """

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        t = _alias(cls, _empty((0,), device, dtype))
        t.requires_grad = requires_grad
        return t

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer without a shape yet (see `UninitializedParameter`)."""

    cls_to_become = Buffer

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        t = _alias(cls, _empty((0,), device, dtype))
        t.requires_grad = requires_grad
        t.persistent = persistent
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass


def is_lazy(param):
    """True for a placeholder not materialised yet."""
    return isinstance(param, UninitializedTensorMixin)
