"""PyTorch's storage classes: `TypedStorage`, `UntypedStorage` and the legacy per-dtype
ones (`FloatStorage`, `LongStorage`, ...), over nbtorch's flat storages.

A tensor's memory is one flat buffer (`nbtorch._tensor.Storage`); a `TypedStorage`
sees it as elements of one dtype (``tensor.storage()``), an `UntypedStorage` as bytes.
Both share memory with the tensors built on them (``torch.tensor(storage)`` copies, as
in PyTorch; ``Tensor.set_(storage)`` shares). PyTorch deprecates `TypedStorage` in favour
of `untyped_storage()`; these exist so legacy code runs.
"""
import numpy as np

from . import _dtype
from ._device import device as _device_cls
from ._tensor import Storage as _Flat

__all__ = ["TypedStorage", "UntypedStorage", "Storage", "StorageBase", "FloatStorage",
           "DoubleStorage", "HalfStorage", "BFloat16Storage", "LongStorage", "IntStorage",
           "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage",
           "ComplexFloatStorage", "ComplexDoubleStorage"]


def _flat_from(data, dtype, device):
    """A flat storage of `dtype` holding `data` (a size or a sequence)."""
    from .ops.creation import empty, tensor
    if isinstance(data, (int, np.integer)):
        return empty((int(data),), dtype=dtype, device=device)._storage
    return tensor(list(data), dtype=dtype, device=device)._storage


class TypedStorage:
    """A flat buffer seen as elements of one dtype (shares memory with its tensors)."""

    is_sparse = False

    def __init__(self, *args, wrap_storage=None, dtype=None, device=None):
        dtype = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
        if wrap_storage is not None:
            flat = wrap_storage._flat if isinstance(wrap_storage, UntypedStorage) else \
                wrap_storage
            self._flat = _Flat(flat.data.view(dtype.np), flat.device)
        else:
            dev = _device_cls(device) if device is not None else _device_cls("cpu")
            self._flat = _flat_from(args[0] if args else 0, dtype, dev)
        self.dtype = dtype

    @classmethod
    def _of(cls, flat, dtype):
        s = cls.__new__(cls)
        s._flat, s.dtype = flat, dtype
        return s

    @property
    def device(self):
        return self._flat.device

    def size(self):
        return int(self._flat.data.size)

    __len__ = size

    def element_size(self):
        return self.dtype.itemsize

    def nbytes(self):
        return self.size() * self.element_size()

    def data_ptr(self):
        return self._tensor().data_ptr()

    def _tensor(self):
        """The whole storage as a 1-D tensor (shares memory)."""
        from ._tensor import Size, Tensor
        return Tensor.__new__(Tensor)._init(self._flat, 0, Size((self.size(),)), (1,),
                                            self.dtype)

    def __getitem__(self, i):
        t = self._tensor()[i]
        return t.item() if t.dim() == 0 else type(self)._of(t.clone()._storage, self.dtype)

    def __setitem__(self, i, value):
        self._tensor()[i] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        return self._tensor().tolist()

    def fill_(self, value):
        self._tensor().fill_(value)
        return self

    def copy_(self, source, non_blocking=None):
        self._tensor().copy_(source._tensor() if isinstance(source, TypedStorage) else source)
        return self

    def clone(self):
        return type(self)._of(self._tensor().clone()._storage, self.dtype)

    def cpu(self):
        return self if self.device.type == "cpu" else \
            type(self)._of(self._tensor().cpu()._storage, self.dtype)

    def untyped(self):
        return UntypedStorage._of(self._flat)

    _untyped_storage = property(untyped)

    def is_shared(self):
        return False

    def pickle_storage_type(self):
        return _LEGACY[self.dtype].__name__

    def __repr__(self):
        body = "\n".join(f" {v}" for v in self.tolist())
        head = f"[torch.storage.TypedStorage(dtype={self.dtype}, device={self.device}) of " \
               f"size {self.size()}]"
        return f"{body}\n{head}" if body else head


class UntypedStorage:
    """A flat buffer seen as bytes (``tensor.untyped_storage()`` in PyTorch's sense)."""

    is_sparse = False

    def __init__(self, nbytes=0, *, device=None):
        dev = _device_cls(device) if device is not None else _device_cls("cpu")
        self._flat = _flat_from(nbytes, _dtype.uint8, dev)

    @classmethod
    def _of(cls, flat):
        s = cls.__new__(cls)
        s._flat = flat
        return s

    @property
    def device(self):
        return self._flat.device

    def nbytes(self):
        return int(self._flat.nbytes())

    size = __len__ = nbytes

    def element_size(self):
        return 1

    def _bytes(self):
        return TypedStorage(wrap_storage=self, dtype=_dtype.uint8)

    def __getitem__(self, i):
        return self._bytes()[i]

    def __setitem__(self, i, value):
        self._bytes()[i] = value

    def tolist(self):
        return self._bytes().tolist()

    def data_ptr(self):
        return self._bytes().data_ptr()

    def untyped(self):
        return self


StorageBase = UntypedStorage


def _legacy(name, dt):
    def __init__(self, *args, wrap_storage=None, device=None):
        TypedStorage.__init__(self, *args, wrap_storage=wrap_storage, dtype=dt,
                              device=device)
    cls = type(name, (TypedStorage,), {"__init__": __init__, "__module__": "nbtorch",
                                       "__doc__": f"Legacy storage of {dt} elements."})
    return cls


_LEGACY = {}
for _name, _dt in (("FloatStorage", _dtype.float32), ("DoubleStorage", _dtype.float64),
                   ("HalfStorage", _dtype.float16), ("BFloat16Storage", _dtype.bfloat16),
                   ("LongStorage", _dtype.int64), ("IntStorage", _dtype.int32),
                   ("ShortStorage", _dtype.int16), ("CharStorage", _dtype.int8),
                   ("ByteStorage", _dtype.uint8), ("BoolStorage", _dtype.bool),
                   ("ComplexFloatStorage", _dtype.complex64),
                   ("ComplexDoubleStorage", _dtype.complex128)):
    _LEGACY[_dt] = globals()[_name] = _legacy(_name, _dt)
Storage = FloatStorage          # noqa: F821  (PyTorch's torch.Storage is FloatStorage)
del _name, _dt


def tensor_storage(self):
    """``Tensor.storage()``: the tensor's whole flat buffer as a TypedStorage."""
    return TypedStorage._of(self._storage, self.dtype)


def storage_type(self):
    """``Tensor.storage_type()``: the legacy storage class of the tensor's dtype."""
    return _LEGACY[self.dtype]
