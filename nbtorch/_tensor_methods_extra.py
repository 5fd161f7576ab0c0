"""Tensor methods PyTorch has around storages and autograd metadata: `set_`,
`is_set_to`, `storage()`/`storage_type()`, `as_subclass`, `dim_order`, `resize`,
`module_load`, `grad_dtype`, `slice_inverse`, and the constant answers of a library
with one layout (`is_meta`, `is_nested`, `layout`...). Installed on import (by
`_torch_extras`).
"""
from . import _dtype
from ._tensor import Size, Tensor
from .autograd.function import Function


def _slice_inverse(self, src, dim=0, start=None, end=None, step=1):
    from ._torch_extras import slice_inverse
    return slice_inverse(self, src, dim, start, end, step)


def _strided():
    from ._torch_extras import strided
    return strided


def _is_set_to(self, tensor):
    """True when both tensors view the same storage with the same offset, size and
    strides."""
    return (self._storage is tensor._storage and self._offset == tensor._offset
            and self._shape == tensor._shape and self._strides == tensor._strides)


def _set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Make self a view of `source` (a tensor, or a storage with offset, size, stride);
    with no source, an empty tensor."""
    from ._tensor import contiguous_strides
    from .storage import TypedStorage, UntypedStorage
    if source is None:
        from .ops.creation import empty
        source = empty(0, dtype=self.dtype, device=self.device)
    if isinstance(source, Tensor):
        if source.dtype is not self.dtype:
            raise RuntimeError(f"Could not set tensor of type {source.dtype} to a tensor of "
                               f"type {self.dtype}")
        flat, off = source._storage, source._offset
        shape, strides = source._shape, source._strides
        if size is not None:
            off, shape = storage_offset, tuple(size)
            strides = tuple(stride) if stride is not None else contiguous_strides(shape)
    else:
        flat = source._flat if isinstance(source, (TypedStorage, UntypedStorage)) else source
        if isinstance(source, UntypedStorage) or flat.data.dtype != self.dtype.np:
            from ._tensor import Storage
            flat = Storage(flat.data.view(self.dtype.np), flat.device)
        off = storage_offset
        shape = tuple(size) if size is not None else (int(flat.data.size) - off,)
        strides = tuple(stride) if stride is not None else contiguous_strides(shape)
    self._storage, self._offset = flat, off
    self._shape, self._strides, self._arr = Size(shape), tuple(strides), None
    self.device = flat.device
    self._bump()
    return self


def _as_subclass(self, cls):
    """A tensor of class `cls` sharing self's data and staying in its autograd graph (an
    AliasBackward0 node, as PyTorch's)."""
    from ._tensor import Tensor
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass: cls must be a subclass of Tensor, got {cls!r}")
    return _Alias.apply(self, cls)


class _Alias(Function):
    _backward_name = "AliasBackward0"

    @staticmethod
    def forward(ctx, x, cls):
        return Tensor.__new__(cls)._init(x._storage, x._offset, x._shape, x._strides,
                                         x.dtype)

    @staticmethod
    def backward(ctx, g):
        return g, None


def _dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (ties keep dim order)."""
    return tuple(sorted(range(self.dim()), key=lambda d: (-self._strides[d], d)))


def _resize(self, *sizes):
    """Legacy out-of-place resize: a tensor of `sizes` over a copy of self's data."""
    out = self.detach().clone()
    out.resize_(*sizes)
    return out


def _module_load(self, other, assign=False):
    """What `nn.Module.load_state_dict` stores for `other` (a detached tensor as is)."""
    return other.detach() if other.requires_grad else other


_GRAD_DTYPE_UNSET = object()
_CPP_NAMES = {"float64": "double", "float32": "float", "int64": "long int", "int32": "int"}


def _grad_dtype_get(self):
    """The dtype `.grad` is accumulated in: the tensor's own unless set; None allows any."""
    gd = self.__dict__.get("_grad_dtype", _GRAD_DTYPE_UNSET)
    return self.dtype if gd is _GRAD_DTYPE_UNSET else gd


def _grad_dtype_set(self, dtype):
    if self.grad_fn is not None:
        raise RuntimeError("grad_dtype can only be set on leaf tensors.")
    g = self._grad
    if g is not None and dtype is not None and g.dtype is not dtype:
        raise RuntimeError(f"Cannot set grad_dtype to '{_dtype.type_name(dtype)}' because "
                           f"there is already a gradient with dtype "
                           f"'{_CPP_NAMES.get(g.dtype.name, g.dtype.name)}'. Please "
                           "clear the gradient (.grad = None) before changing grad_dtype, or "
                           "ensure the new grad_dtype matches the existing gradient's dtype.")
    self.__dict__["_grad_dtype"] = dtype


def _to_padded_tensor(self, padding, output_size=None):
    """A strided tensor has no components to pad (nested tensors override this)."""
    raise NotImplementedError("Could not run 'aten::to_padded_tensor' with arguments from the "
                              f"'{self.device.type.upper()}' backend: to_padded_tensor needs "
                              "a nested tensor (nbtorch.nested)")


def _solve(self, A):
    from ._torch_extras import solve
    return solve(self, A)


def _reversed(self):
    """``reversed(t)``: the tensor flipped along dim 0 (a 0-d tensor itself), as PyTorch's
    ``Tensor.__reversed__`` - not Python's reverse iterator."""
    return self if self.dim() == 0 else self.flip(0)


def install():
    from .storage import storage_type, tensor_storage
    Tensor.storage, Tensor.storage_type = tensor_storage, storage_type
    Tensor.is_set_to, Tensor.set_ = _is_set_to, _set_
    Tensor.as_subclass, Tensor.dim_order, Tensor.resize = _as_subclass, _dim_order, _resize
    Tensor.resize_as = lambda self, tensor: _resize(self, tensor.shape)
    Tensor.module_load, Tensor.solve = _module_load, _solve
    Tensor.slice_inverse = _slice_inverse
    Tensor.grad_dtype = property(_grad_dtype_get, _grad_dtype_set)
    Tensor.is_inference = lambda self: bool(self.__dict__.get("_inference", False))
    Tensor.__reversed__ = _reversed
    Tensor.is_nested = property(lambda self: False)
    Tensor.to_padded_tensor = _to_padded_tensor
    Tensor.is_distributed = lambda self: False
    Tensor.output_nr = property(lambda self: self._output_nr)
    Tensor.const_data_ptr = Tensor.data_ptr
    Tensor.record_stream = lambda self, stream: None     # the caching allocator is per device
    Tensor.layout = property(lambda self: _strided())
    Tensor.name = property(lambda self: None)


install()
