"""DLPack: zero-copy exchange of tensors with NumPy, PyTorch, CuPy, JAX...

A DLPack capsule is a PyCapsule named ``dltensor`` (or ``dltensor_versioned``, DLPack
1.x) around a C struct holding a data pointer, device, dtype, shape and strides, and a
deleter the consumer calls when it no longer needs the memory. The consumer renames the
capsule ``used_dltensor`` so no one can consume it again; a capsule that dies
unconsumed runs its deleter from the capsule's destructor. Both sides are written here
with ctypes (NumPy cannot carry bfloat16, nor CUDA memory):

- export (`to_capsule`): the struct and its shape/stride arrays are kept alive, together
  with the tensor's storage, in `_LIVE` until the deleter runs;
- import (`from_capsule`): the memory becomes a tensor's storage (a NumPy array over the
  pointer on the CPU, a Numba device array on CUDA) whose owner calls the producer's
  deleter when the storage is freed.
"""
import ctypes
import enum

import numpy as np

from . import _dtype
from ._tensor import Size, Storage, Tensor, wrap

__all__ = ["DLDeviceType", "to_capsule", "from_capsule", "device_of", "from_dlpack",
           "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DELETER_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER_T)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [("version", _Version), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER_T), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_READ_ONLY = 1
# (DLPack type code, bits) of each dtype: kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4,
# kDLBool 6, and DLPack 1.1's float8 codes 10-14 (kDLFloat8_e4m3fn ... kDLFloat8_e8m0fnu)
_CODES = {"int8": (0, 8), "int16": (0, 16), "int32": (0, 32), "int64": (0, 64),
          "uint8": (1, 8), "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64),
          "float16": (2, 16), "float32": (2, 32), "float64": (2, 64),
          "bfloat16": (4, 16), "bool": (6, 8), "float8_e4m3fn": (10, 8),
          "float8_e4m3fnuz": (11, 8), "float8_e5m2": (12, 8), "float8_e5m2fnuz": (13, 8),
          "float8_e8m0fnu": (14, 8)}
_DTYPES = {v: k for k, v in _CODES.items()}
_DTYPES[(1, 1)] = "bool"            # some producers describe bool as a 1-bit unsigned int

_NAME = b"dltensor"
_NAME_V = b"dltensor_versioned"
_USED = b"used_dltensor"
_USED_V = b"used_dltensor_versioned"
INVALID = ("from_dlpack received an invalid capsule. Note that DLTensor capsules can be "
           "consumed only once, so you might have already constructed a tensor from it once.")

_api = ctypes.pythonapi
_new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_void_p)(("PyCapsule_New", _api))
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", _api))
# The destructor sees the capsule while it is being freed: raw pointers only, no py_object.
_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))

_LIVE = {}          # address of an exported struct -> what must outlive the consumer's use


@_DELETER_T
def _deleter(address):
    _LIVE.pop(address, None)


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule):
    """Free an export nobody consumed (a consumed capsule was renamed: nothing to do)."""
    for name in (_NAME, _NAME_V):
        if _is_valid_raw(capsule, name):
            _LIVE.pop(_get_pointer_raw(capsule, name), None)


def device_of(t):
    """(DLDeviceType, index) of tensor `t`."""
    if t.device.type == "cuda":
        return DLDeviceType.kDLCUDA, t.device.index or 0
    return DLDeviceType.kDLCPU, 0


def to_capsule(t, versioned=False, read_only=False):
    """A DLPack capsule viewing tensor `t`'s memory (no copy)."""
    code, bits = _CODES[t.dtype.name]
    ndim = t.dim()
    shape = (ctypes.c_int64 * max(ndim, 1))(*t.shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*t.stride())
    struct = _ManagedVersioned() if versioned else _Managed()
    dl = struct.dl_tensor
    dl.data = t.data_ptr() or None
    dev_type, dev_id = device_of(t)
    dl.device = _Device(int(dev_type), dev_id)
    dl.ndim = ndim
    dl.dtype = _DataType(code, bits, 1)
    dl.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    dl.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    dl.byte_offset = 0
    struct.deleter = _deleter
    if versioned:
        struct.version = _Version(1, 0)
        struct.flags = _READ_ONLY if read_only else 0
    address = ctypes.addressof(struct)
    _LIVE[address] = (struct, shape, strides, t._storage)
    return _new_capsule(address, _NAME_V if versioned else _NAME,
                        ctypes.cast(_capsule_destructor, ctypes.c_void_p))


class _Owner:
    """Holds an imported capsule's memory: calls the producer's deleter when freed."""

    def __init__(self, address, deleter):
        self.address, self.deleter = address, deleter

    def __del__(self):
        if self.deleter:
            self.deleter(self.address)


def from_capsule(capsule):
    """A tensor over the memory a DLPack capsule describes (consuming the capsule)."""
    try:
        versioned = bool(_is_valid(capsule, _NAME_V))
        legacy = not versioned and bool(_is_valid(capsule, _NAME))
    except ctypes.ArgumentError:
        versioned = legacy = False
    if not (versioned or legacy):
        raise RuntimeError(INVALID)
    address = _get_pointer(capsule, _NAME_V if versioned else _NAME)
    managed = (_ManagedVersioned if versioned else _Managed).from_address(address)
    if versioned and managed.version.major != 1:
        raise BufferError(f"DLPack version {managed.version.major}.{managed.version.minor} is "
                          "not supported (nbtorch reads 1.x)")
    dl = managed.dl_tensor
    dtype = _dtype_of(dl.dtype)
    dev_type, dev_id = dl.device.device_type, dl.device.device_id
    if dev_type not in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost, DLDeviceType.kDLCUDA,
                        DLDeviceType.kDLCUDAManaged):
        raise BufferError(f"Unsupported device in DLTensor: {DLDeviceType(dev_type).name}"
                          if dev_type in DLDeviceType._value2member_map_ else
                          f"Unsupported device type {dev_type} in DLTensor")
    ndim = dl.ndim
    shape = tuple(dl.shape[i] for i in range(ndim))
    if dl.strides:
        strides = tuple(dl.strides[i] for i in range(ndim))
    else:
        from ._tensor import contiguous_strides
        strides = contiguous_strides(shape)
    if any(s < 0 for s in strides):
        raise BufferError("DLTensor has negative strides, which nbtorch tensors do not support")
    _set_name(capsule, _USED_V if versioned else _USED)
    owner = _Owner(address, managed.deleter)
    span = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    data = (dl.data or 0) + dl.byte_offset
    if dev_type in (DLDeviceType.kDLCUDA, DLDeviceType.kDLCUDAManaged):
        storage = _cuda_storage(data, span, dtype, dev_id, owner)
    else:
        storage = _cpu_storage(data, span, dtype, owner)
    return Tensor.__new__(Tensor)._init(storage, 0, Size(shape), strides, dtype)


def _dtype_of(dt):
    name = _DTYPES.get((dt.code, dt.bits))
    if name is None or dt.lanes != 1:
        raise BufferError(f"Unsupported dtype in DLTensor: code {dt.code}, {dt.bits} bits, "
                          f"{dt.lanes} lanes")
    return _dtype.to_dtype(name)


def _cpu_storage(address, n, dtype, owner):
    np_dtype = np.dtype(dtype.np)
    if n == 0 or not address:
        return wrap(np.empty(0, np_dtype))._storage
    buf = (ctypes.c_char * (n * np_dtype.itemsize)).from_address(address)
    buf._owner = owner          # the array's base is `buf`: the deleter runs after the last view
    return Storage(np.frombuffer(buf, dtype=np_dtype, count=n))


def _cuda_storage(address, n, dtype, device_id, owner):
    from ._device import device
    from .cuda import _runtime
    _runtime.lazy_init()
    cuda = _runtime.cuda_module()
    desc = {"shape": (n,), "strides": None, "typestr": np.dtype(dtype.np).str,
            "data": (address, False), "version": 3, "stream": None}
    arr = cuda.from_cuda_array_interface(desc, owner=owner, sync=False)
    return Storage(arr, device("cuda", device_id))


# ---- the public faces: Tensor.__dlpack__ and friends, from_dlpack, to_dlpack -----------------

def _sync_current_stream():
    from . import cuda
    cuda.current_stream().synchronize()


def _dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule of this tensor (the array API's ``__dlpack__``): zero copy unless
    `copy` is True or `dl_device` names another device."""
    if self.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    t = self
    if dl_device is not None and tuple(dl_device) != tuple(device_of(self)):
        if copy is False:
            raise BufferError("the requested dl_device differs from the tensor's and copy=False")
        kind, idx = dl_device
        if kind == DLDeviceType.kDLCPU:
            t = t.cpu()
        elif kind == DLDeviceType.kDLCUDA:
            t = t.to(f"cuda:{idx}")
        else:
            raise BufferError(f"Unsupported dl_device {dl_device}")
    elif copy:
        t = t.clone()
    if t.device.type == "cuda" and stream != -1:
        _sync_current_stream()          # the consumer's stream then sees finished data
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    return to_capsule(t, versioned=versioned)


def _dlpack_device(self):
    return device_of(self)


def _cuda_array_interface(self):
    if self.device.type != "cuda":
        raise AttributeError(f"Can't get __cuda_array_interface__ on non-CUDA tensor type: "
                             f"{self.type()} If CUDA data is required use tensor.cuda() to "
                             "copy tensor to device memory.")
    if self.requires_grad:
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad. "
                           "If gradients aren't required, use var.detach() to get Variable "
                           "that doesn't require grad.")
    _sync_current_stream()              # version 2 carries no stream: hand over finished data
    isz = self.dtype.itemsize
    return {"typestr": np.dtype(self.dtype.np).str, "shape": tuple(self.shape),
            "strides": None if self.is_contiguous() else
            tuple(s * isz for s in self.stride()),
            "data": (self.data_ptr() if self.numel() else 0, False), "version": 2}


Tensor.__dlpack__ = _dlpack
Tensor.__dlpack_device__ = _dlpack_device
Tensor.__cuda_array_interface__ = property(_cuda_array_interface)


def _consumer_stream():
    """The stream number a CUDA producer should make its data ready on (ours)."""
    from .cuda import _runtime
    s = _runtime.raw_stream()
    handle = getattr(getattr(s, "handle", None), "value", None) if s else None
    return handle or 1                  # 1: CUDA's legacy default stream


def from_dlpack(ext_tensor):
    """A tensor sharing memory with `ext_tensor`: any object with ``__dlpack__`` (a NumPy
    array, a PyTorch/CuPy/JAX tensor) or a DLPack capsule (consumed: once only).

    Example:
        >>> a = np.zeros(3); t = nbtorch.from_dlpack(a); t[0] = 1; a[0]
        1.0
    """
    if hasattr(ext_tensor, "__dlpack__"):
        kind, _ = ext_tensor.__dlpack_device__()
        kwargs = {}
        if kind in (DLDeviceType.kDLCUDA, DLDeviceType.kDLCUDAManaged):
            kwargs["stream"] = _consumer_stream()
        try:
            capsule = ext_tensor.__dlpack__(max_version=(1, 0), **kwargs)
        except TypeError:               # a producer from before DLPack 1.0's keywords
            capsule = ext_tensor.__dlpack__(**kwargs)
        return from_capsule(capsule)
    return from_capsule(ext_tensor)


def to_dlpack(tensor):
    """A (pre-1.0, ``dltensor``) capsule of `tensor`, as ``torch.utils.dlpack.to_dlpack``."""
    return to_capsule(tensor.detach())
