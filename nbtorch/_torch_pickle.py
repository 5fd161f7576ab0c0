"""Read PyTorch's zip checkpoints (nbtorch's own since it writes the same format) without
executing code from them.

The pickle may name only the globals on `_ALLOWED` and a few handled here: tensor and
parameter rebuilds, quantized tensors (``_rebuild_qtensor``, ``torch.QUInt8Storage``,
``torch.per_tensor_affine`` ...), storage types, ``collections.OrderedDict``/``Counter``, ``torch.<dtype>``,
``torch.device``, ``torch.Size``, Python's set/frozenset/complex/slice/bytearray,
``_codecs.encode`` (how protocol 2 writes bytes) and NumPy's array, dtype and scalar
reconstruction (arrays of Python objects are refused). Anything else (``os.system``,
``builtins.eval``, a class of the user's) raises `pickle.UnpicklingError` before it can
run. Storage bytes come from the archive's ``data/<key>`` records, one array per
storage, so tensors that shared a storage when saved share it again; every view is
checked against its storage's size before it is made.
"""
import codecs
import collections
import io
import pickle
import sys

import numpy as np

from . import _dtype, _qtensor
from ._device import device as _device_cls
from ._tensor import Size, Tensor, wrap

__all__ = ["load_torch_zip"]

_STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
    "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
    "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
}
_QSTORAGE_DTYPES = {"QUInt8Storage": "quint8", "QInt8Storage": "qint8",
                    "QInt32Storage": "qint32"}
_BUILTINS = {"set": set, "frozenset": frozenset, "complex": complex, "slice": slice,
             "bytearray": bytearray}


class _StorageType:
    """A storage class named in the pickle (``torch.FloatStorage``): its element dtype."""

    def __init__(self, dtype_name):
        qdtype = _qtensor._QDTYPES.get(dtype_name)
        self.qdtype = qdtype                      # quantized: the bytes are its integers
        self.dtype = qdtype.underlying if qdtype is not None else _dtype.to_dtype(dtype_name)


def _np_multiarray():
    try:
        from numpy._core import multiarray
    except ImportError:                          # NumPy 1.x
        from numpy.core import multiarray
    return multiarray


def _reconstruct(cls, shape, typecode):
    if cls is not np.ndarray:
        raise pickle.UnpicklingError("refusing to rebuild an ndarray subclass")
    return _np_multiarray()._reconstruct(np.ndarray, shape, typecode)


def _scalar(dtype, data=None):
    if not isinstance(dtype, np.dtype) or dtype.hasobject:
        raise pickle.UnpicklingError("refusing a NumPy scalar of Python objects")
    return _np_multiarray().scalar(dtype, data)


class _Restricted(pickle.Unpickler):
    def __init__(self, fileobj, archive, prefix, place):
        super().__init__(fileobj)
        self.archive, self.prefix, self.place = archive, prefix, place
        self.storages = {}
        self.qdtypes = {}           # id(storage tensor) -> its quantized dtype

    def find_class(self, module, name):
        if module == "collections" and name in ("OrderedDict", "Counter"):
            return getattr(collections, name)
        if module == "torch._utils":
            fn = {"_rebuild_tensor_v2": self._rebuild_tensor_v2,
                  "_rebuild_tensor_v3": self._rebuild_tensor_v3,
                  "_rebuild_parameter": _rebuild_parameter,
                  "_rebuild_parameter_with_state": _rebuild_parameter,
                  "_rebuild_qtensor": self._rebuild_qtensor,
                  "_rebuild_sparse_tensor": _rebuild_sparse,
                  "_rebuild_meta_tensor_no_storage": _rebuild_meta}.get(name)
            if fn is not None:
                return fn
        if module == "torch":
            if name in _STORAGE_DTYPES:
                return _StorageType(_STORAGE_DTYPES[name])
            if name in _QSTORAGE_DTYPES:
                return _StorageType(_QSTORAGE_DTYPES[name])
            if name in _qtensor._QDTYPES:
                return _qtensor._QDTYPES[name]
            if name in _qtensor._QSCHEMES:
                return _qtensor._QSCHEMES[name]
            if name == "device":
                return _device_cls
            if name == "Size":
                return Size
            d = getattr(_dtype, name, None)
            if isinstance(d, _dtype.dtype):
                return d
        if module == "torch._tensor" and name == "_rebuild_from_type_v2":
            return _rebuild_from_type_v2
        if module == "torch.serialization" and name == "_get_layout":
            return _get_layout
        if module == "torch.storage" and name == "UntypedStorage":
            return _StorageType("uint8")
        if module in ("builtins", "__builtin__") and name in _BUILTINS:
            return _BUILTINS[name]
        if module == "_codecs" and name == "encode":
            return codecs.encode
        if module in ("numpy.core.multiarray", "numpy._core.multiarray"):
            if name == "_reconstruct":
                return _reconstruct
            if name == "scalar":
                return _scalar
        if module == "numpy" and name in ("ndarray", "dtype"):
            return getattr(np, name)
        from .serialization import _SAFE_GLOBALS
        allowed = _SAFE_GLOBALS.get(f"{module}.{name}")
        if allowed is not None:                 # serialization.add_safe_globals
            return allowed
        raise pickle.UnpicklingError(
            f"refusing to load global '{module}.{name}': only tensors, NumPy arrays, "
            "containers and primitives can be loaded (no code is executed from checkpoint "
            "files); if you trust it, allow it with "
            f"nbtorch.serialization.add_safe_globals([{name}])")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
        _, storage_type, key, location, numel = pid
        qdtype = None
        if isinstance(storage_type, _StorageType):
            dtype, qdtype = storage_type.dtype, storage_type.qdtype
        elif isinstance(storage_type, _qtensor._QDtype):
            dtype, qdtype = storage_type.underlying, storage_type
        elif isinstance(storage_type, _dtype.dtype):
            dtype = storage_type
        else:
            raise pickle.UnpicklingError(f"unsupported storage type {storage_type!r}")
        cached = self.storages.get(key)
        if cached is not None:
            return cached
        raw = bytearray(self.archive.read(f"{self.prefix}data/{key}"))
        np_dtype = np.dtype(dtype.np)
        if not isinstance(numel, int) or len(raw) != numel * np_dtype.itemsize:
            raise RuntimeError(f"storage {key} holds {len(raw)} bytes, not {numel} "
                               f"{dtype} elements (truncated or corrupted)")
        arr = np.frombuffer(raw, dtype=np_dtype)
        if sys.byteorder != "little":
            arr = arr.byteswap()
        base = self.place(wrap(arr), str(location))
        self.storages[key] = base
        if qdtype is not None:
            self.qdtypes[id(base)] = qdtype
        return base

    def _rebuild_tensor_v2(self, storage, offset, size, stride, requires_grad=False,
                           hooks=None, metadata=None):
        return _view(storage, offset, size, stride, requires_grad)

    def _rebuild_tensor_v3(self, storage, offset, size, stride, requires_grad, hooks, dtype,
                           metadata=None):
        if storage.dtype is not dtype:
            storage = storage.view(dtype)
        return _view(storage, offset, size, stride, requires_grad)


    def _rebuild_qtensor(self, storage, offset, size, stride, quantizer_params,
                         requires_grad=False, hooks=None):
        """A quantized tensor over `storage` (PyTorch's ``_rebuild_qtensor``)."""
        qdtype = self.qdtypes.get(id(storage))
        if qdtype is None:
            raise pickle.UnpicklingError("quantized tensor rebuilt from a storage that is "
                                         "not quantized")
        view = _view(storage, offset, size, stride, False)      # checks that it fits
        return _qtensor.rebuild_quantized(view, qdtype, quantizer_params)


def _view(base, offset, size, stride, requires_grad):
    """`base` (a 1-D storage tensor) seen with offset/size/stride, checked to fit."""
    if not isinstance(base, Tensor):
        raise pickle.UnpicklingError("tensor rebuilt from something that is not a storage")
    size, stride = tuple(size), tuple(stride)
    n = base.numel()
    ok = (isinstance(offset, int) and offset >= 0 and len(size) == len(stride)
          and all(isinstance(v, int) and v >= 0 for v in size + stride))
    if ok and 0 not in size:
        ok = offset + sum((s - 1) * st for s, st in zip(size, stride)) < n
    if not ok:
        raise RuntimeError(f"corrupted checkpoint: a tensor of size {list(size)}, stride "
                           f"{list(stride)} and offset {offset} does not fit its storage of "
                           f"{n} elements")
    if offset == 0 and size == (n,) and stride == (1,):
        t = base
    else:
        t = base._view(size, stride, offset)
        t._base = None          # a plain tensor sharing the storage, as PyTorch loads it
    if requires_grad:
        t = t.detach()
        t.requires_grad_(True)
    return t


def _rebuild_sparse(layout, parts):
    """A sparse tensor from PyTorch's pickled parts, with every index checked (nbtorch's
    sparse kernels trust them)."""
    from .sparse._build import rebuild_torch
    return rebuild_torch(layout, parts)


def _get_layout(name):
    """PyTorch's layout lookup by its printed name ('torch.sparse_coo')."""
    from . import _torch_extras
    lay = getattr(_torch_extras, name.rpartition(".")[2], None)
    if not isinstance(lay, _torch_extras.layout):
        raise pickle.UnpicklingError(f"unknown tensor layout {name!r} in the checkpoint")
    return lay


def _rebuild_from_type_v2(func, new_type, args, state):
    """PyTorch's rebuild of a Tensor subclass instance (the class itself must be allowed
    with serialization.add_safe_globals): the tensor, given the class, then its attributes."""
    ret = func(*args)
    if not (isinstance(new_type, type) and issubclass(new_type, Tensor)):
        raise pickle.UnpicklingError(f"refusing to rebuild a tensor as {new_type!r}")
    if type(ret) is not new_type:
        ret = ret.as_subclass(new_type)
    if getattr(new_type, "__setstate__", None) not in (None, getattr(Tensor, "__setstate__",
                                                                      None)):
        ret.__setstate__(state)
    elif isinstance(state, dict):
        for k, v in state.items():
            if isinstance(k, str) and not k.startswith("__"):
                setattr(ret, k, v)
    return ret


def _rebuild_meta(dtype, size, stride, requires_grad=False):
    """A meta tensor (PyTorch's ``_rebuild_meta_tensor_no_storage``: no data saved)."""
    from .ops.creation import empty_strided
    return empty_strided(tuple(size), tuple(stride), dtype=dtype, device="meta",
                         requires_grad=requires_grad)


def _rebuild_parameter(data, requires_grad, hooks, *state):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad=requires_grad)


def _check_arrays(obj, seen=None):
    """Refuse NumPy arrays of Python objects anywhere in the loaded structure."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise pickle.UnpicklingError("refusing a NumPy array of Python objects")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _check_arrays(k, seen)
            _check_arrays(v, seen)
        _check_arrays(getattr(obj, "__dict__", None), seen)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for v in obj:
            _check_arrays(v, seen)


def load_torch_zip(archive, pkl_name, place):
    """Unpickle `pkl_name` from the zip `archive`; ``place(storage_tensor, location)``
    returns the storage on the device it belongs on."""
    prefix = pkl_name[:-len("data.pkl")]
    obj = _Restricted(io.BytesIO(archive.read(pkl_name)), archive, prefix, place).load()
    _check_arrays(obj)
    return obj
