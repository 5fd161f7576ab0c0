"""Complex tensors seen as real ones and back, over the same memory (no autograd).

A complex64 tensor's storage read as float32 holds (real, imag) pairs: the real view
has a trailing dim of 2 and doubled offset and strides (PyTorch's view_as_real). The
views get a Storage of their own over the reinterpreted buffer (as `Tensor.view(dtype)`
does), starting from the base's version count. Below the op layer: copies, reductions
and the complex ops (`ops/complex.py`) build on them.
"""
from ._tensor import Size, Storage, Tensor

__all__ = ["as_real", "as_complex", "real_part", "imag_part"]


def _retyped(t, dtype, offset, shape, strides):
    storage = Storage(t._storage.data.view(dtype.np), t.device)
    storage.version = t._storage.version
    out = Tensor.__new__(Tensor)._init(storage, offset, Size(shape), tuple(strides), dtype)
    out._base = t if t._base is None else t._base
    return out


def as_real(t):
    """Complex `t` (*shape) as a real tensor (*shape, 2): [..., 0] real, [..., 1] imag."""
    return _retyped(t, t.dtype.to_real(), t._offset * 2, tuple(t._shape) + (2,),
                    tuple(s * 2 for s in t._strides) + (1,))


def as_complex(t):
    """Real `t` (*shape, 2) with a last stride of 1 and even other strides and offset, as
    a complex tensor (*shape)."""
    return _retyped(t, t.dtype.to_complex(), t._offset // 2, tuple(t._shape[:-1]),
                    tuple(s // 2 for s in t._strides[:-1]))


def real_part(t):
    """The real parts of complex `t`, a real view of its shape."""
    return _retyped(t, t.dtype.to_real(), t._offset * 2, t._shape,
                    tuple(s * 2 for s in t._strides))


def imag_part(t):
    """The imaginary parts of complex `t`, a real view of its shape."""
    return _retyped(t, t.dtype.to_real(), t._offset * 2 + 1, t._shape,
                    tuple(s * 2 for s in t._strides))
