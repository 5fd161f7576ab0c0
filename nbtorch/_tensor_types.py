"""PyTorch's legacy tensor types: ``torch.FloatTensor``, ``torch.cuda.LongTensor``, ...

Each is a constructor of its own dtype and device type (``FloatTensor(2, 3)`` is an
uninitialised float32 tensor, ``LongTensor([1, 2])`` an int64 copy) and, as in PyTorch,
not a subclass of `Tensor` but a type that `isinstance` answers for: ``isinstance(x,
torch.FloatTensor)`` is True exactly when `x` is a float32 tensor on the CPU. Calling
one returns a plain `Tensor`. ``torch.Tensor(...)`` itself builds default-dtype tensors
the same way (`legacy_new`).
"""
import numpy as np

from . import _dtype
from ._device import to_device
from ._tensor import Size, Tensor

__all__ = ["legacy_new", "CPU_TYPES", "CUDA_TYPES"]

_NAMES = (("FloatTensor", "float32"), ("DoubleTensor", "float64"), ("HalfTensor", "float16"),
          ("BFloat16Tensor", "bfloat16"), ("ByteTensor", "uint8"), ("CharTensor", "int8"),
          ("ShortTensor", "int16"), ("IntTensor", "int32"), ("LongTensor", "int64"),
          ("BoolTensor", "bool"))


def _is_size(args):
    """True when the positional arguments are sizes: ints, or one torch.Size."""
    if len(args) == 1 and isinstance(args[0], Size):
        return True
    return all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args)


def legacy_new(dtype, device_type, args, kwargs, type_name):
    """`type_name(*args, device=...)`: no argument -> empty; sizes -> uninitialised;
    a tensor of this dtype -> that tensor's data (shared); data -> a copy in `dtype`.

    The default device does not apply (as in PyTorch: these constructors predate it).
    """
    from .ops.creation import empty, tensor
    device = kwargs.pop("device", None)
    if kwargs:
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"unexpected keyword arguments {sorted(kwargs)}")
    dev = to_device(device if device is not None else device_type)
    if dev.type != device_type:
        raise RuntimeError(f"legacy constructor expects device type: {device_type} but "
                           f"device type: {dev.type} was passed")
    if not args:
        return empty(0, dtype=dtype, device=dev)
    if _is_size(args):
        return empty(*args, dtype=dtype, device=dev)
    if len(args) > 1:
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"{len(args)} positional arguments that are not all sizes")
    data = args[0]
    if isinstance(data, Tensor):
        if data.dtype is not dtype or data.device.type != device_type:
            raise TypeError(f"expected {type_name} (got {data.type()})")
        return data.detach()
    return tensor(data, dtype=dtype, device=dev)


class _LegacyTensorType(type):
    """The metaclass: calling makes a tensor, `isinstance` checks dtype and device type."""

    def __instancecheck__(cls, obj):
        return (isinstance(obj, Tensor) and obj.dtype is cls.dtype
                and obj.device.type == cls._device_type)

    def __subclasscheck__(cls, sub):
        return sub is cls

    def __call__(cls, *args, **kwargs):
        return legacy_new(cls.dtype, cls._device_type, args, kwargs, cls._qualname)

    def __repr__(cls):
        return f"<class '{cls._qualname}'>"


def _make(name, dtype_name, device_type):
    prefix = "torch.cuda." if device_type == "cuda" else "torch."
    return _LegacyTensorType(name, (), {
        "dtype": getattr(_dtype, dtype_name), "_device_type": device_type,
        "is_cuda": device_type == "cuda", "is_sparse": False, "_qualname": prefix + name,
        "__module__": "nbtorch.cuda" if device_type == "cuda" else "nbtorch",
        "__doc__": f"Legacy constructor of {dtype_name} tensors on the {device_type}."})


CPU_TYPES = {name: _make(name, d, "cpu") for name, d in _NAMES}
CUDA_TYPES = {name: _make(name, d, "cuda") for name, d in _NAMES}
globals().update(CPU_TYPES)         # nbtorch.FloatTensor, ... (nbtorch.cuda takes CUDA_TYPES)


def from_type(t):
    """(dtype, device) for a legacy type or its name ('torch.cuda.FloatTensor'), else None."""
    if isinstance(t, str):
        for table in (CPU_TYPES, CUDA_TYPES):
            for cls in table.values():
                if cls._qualname == t:
                    return cls.dtype, cls._device_type
        return None
    if isinstance(t, _LegacyTensorType):
        return t.dtype, t._device_type
    return None


def tensor_new(self, args, kwargs):
    """`torch.Tensor(...)`: the legacy constructor of default-dtype CPU tensors."""
    t = legacy_new(_dtype.get_default_dtype(), "cpu", args, dict(kwargs), "torch.Tensor")
    self._init(t._storage, t._offset, t._shape, t._strides, t.dtype, t._arr)


def _new(self, *args, **kwargs):
    """``x.new(...)``: the legacy constructor of x's dtype and device."""
    kwargs.setdefault("device", self.device)
    return legacy_new(self.dtype, self.device.type, args, kwargs, self.type())


Tensor.new = _new
