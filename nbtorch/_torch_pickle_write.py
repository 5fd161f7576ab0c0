"""Write PyTorch's zip checkpoint format, so ``torch.load(f, weights_only=True)`` reads it.

The archive holds, under one folder (the file's stem, or ``archive``), the records
PyTorch writes: ``data.pkl`` (a protocol-2 pickle), ``.format_version``,
``.storage_alignment``, ``byteorder``, one ``data/<key>`` record per storage (its raw
little-endian bytes, 64-byte aligned in the file, as PyTorch aligns them), ``version``
and ``.data/serialization_id``. The pickle names only what PyTorch's weights-only
loader accepts: ``torch._utils._rebuild_tensor_v2`` / ``_rebuild_parameter`` over
persistent storage references (``('storage', torch.FloatStorage, key, location,
numel)``), ``collections.OrderedDict``, ``torch.<dtype>``, ``torch.device``,
``torch.Size``, ``torch._utils._rebuild_qtensor`` (quantized tensors), ``torch.<qscheme>``
and Python's containers (dict, list, tuple, set, OrderedDict, Counter)
and primitives (None, bool, int, float, complex, str, bytes, bytearray). NumPy arrays and scalars are
pickled as NumPy pickles them (``torch.load`` needs ``weights_only=False`` or NumPy on
its safe list for those, as for PyTorch's own checkpoints holding arrays). Anything else
is refused when saving. Storages shared by several tensors are written once.
"""
import collections
import io
import os
import pickle
import struct
import sys
import uuid
import zipfile

import numpy as np

from . import _dtype
from ._device import device as _device_cls
from ._qtensor import qscheme
from ._tensor import Size, Tensor, wrap
from ._torch_function import participates
from ._torch_extras import layout as _layout

__all__ = ["write_torch_zip"]

_STORAGE_NAMES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
    "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage",
    "quint8": "QUInt8Storage", "qint8": "QInt8Storage", "qint32": "QInt32Storage",
}
_ALIGN = 64
_PRIMITIVES = (type(None), bool, int, float, complex, str, bytes, bytearray)


def _user_allowed(cls):
    """`cls` was allowed by `serialization.add_safe_globals` (its instances then load)."""
    from .serialization import _SAFE_GLOBALS
    if not _SAFE_GLOBALS or not hasattr(cls, "__module__"):
        return False
    name = f"{cls.__module__}.{getattr(cls, '__qualname__', getattr(cls, '__name__', ''))}"
    return _SAFE_GLOBALS.get(name) is cls


class _Global:
    """A reference to ``module.name`` written as a GLOBAL opcode (torch need not exist)."""

    __slots__ = ("module", "name")
    _cache = {}

    def __new__(cls, module, name):
        key = (module, name)
        g = cls._cache.get(key)
        if g is None:
            g = cls._cache[key] = object.__new__(cls)
            g.module, g.name = module, name
        return g

    def __call__(self, *args):          # save_reduce wants a callable; never called
        raise TypeError(f"{self.module}.{self.name} is a name in a checkpoint, not code")


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
# uint16-64 and float8 storages have no typed class: PyTorch writes an UntypedStorage of
# bytes and names the dtype in _rebuild_tensor_v3's arguments
_REBUILD_TENSOR_V3 = _Global("torch._utils", "_rebuild_tensor_v3")
_UNTYPED = _Global("torch.storage", "UntypedStorage")
_REBUILD_PARAMETER = _Global("torch._utils", "_rebuild_parameter")
_REBUILD_QTENSOR = _Global("torch._utils", "_rebuild_qtensor")
_REBUILD_META = _Global("torch._utils", "_rebuild_meta_tensor_no_storage")
_REBUILD_SPARSE = _Global("torch._utils", "_rebuild_sparse_tensor")
_REBUILD_FROM_TYPE = _Global("torch._tensor", "_rebuild_from_type_v2")
_GET_LAYOUT = _Global("torch.serialization", "_get_layout")
_DEVICE = _Global("torch", "device")
_SIZE = _Global("torch", "Size")


class _StorageRef:
    """Stands for a storage in the pickle: its persistent id is PyTorch's tuple."""

    __slots__ = ("pid",)

    def __init__(self, pid):
        self.pid = pid


class _Pickler(pickle._Pickler):
    """The pure-Python pickler, writing torch globals by name and refusing anything
    outside the weights-only vocabulary."""

    def __init__(self, file, storages):
        super().__init__(file, protocol=2)
        self.storages = storages            # id(Storage) -> (key, Storage, dtype name)

    def persistent_id(self, obj):
        return obj.pid if type(obj) is _StorageRef else None

    def save(self, obj, save_persistent_id=True):
        t = type(obj)
        if t is _Global:
            return self._save_global_ref(obj)
        if t is _TensorReduce:
            return self.save_reduce(obj.fn or _rebuild_of(obj.args), obj.args)
        if t is _StorageRef or t in _PRIMITIVES or t in (list, tuple, dict):
            return super().save(obj, save_persistent_id)
        if isinstance(obj, Tensor):
            return self._save_tensor(obj)
        if isinstance(obj, type) and issubclass(obj, Tensor) and participates(obj):
            return self._save_global_ref(_Global(obj.__module__, obj.__qualname__))
        if isinstance(obj, _dtype.dtype):
            return self._save_global_ref(_Global("torch", obj.name))
        if isinstance(obj, qscheme):
            return self._save_global_ref(_Global("torch", obj.name))
        if isinstance(obj, _layout):        # PyTorch's _get_layout("torch.sparse_coo")
            memo = self.memo.get(id(obj))
            if memo is not None:
                return self.write(self.get(memo[0]))
            return self.save_reduce(_GET_LAYOUT, (repr(obj),), obj=obj)
        if isinstance(obj, _device_cls):
            return self.save_reduce(_DEVICE, (str(obj),), obj=obj)
        if isinstance(obj, Size):
            return self.save_reduce(_SIZE, (tuple(obj),), obj=obj)
        if _named_ok(obj):         # classes and functions the loaders allow, by name
            return super().save(obj, save_persistent_id)
        if isinstance(obj, (collections.OrderedDict, collections.Counter, set, np.dtype)):
            return super().save(obj, save_persistent_id)
        if isinstance(obj, (np.ndarray, np.generic)):
            if obj.dtype.hasobject:
                raise TypeError("nbtorch.save cannot store NumPy arrays of Python objects")
            return super().save(obj, save_persistent_id)
        if _user_allowed(t) or _user_allowed(obj):    # serialization.add_safe_globals:
            return super().save(obj, save_persistent_id)   # instances or the class itself
        if isinstance(obj, (dict, list, tuple)):        # subclasses: as their base type
            base = dict if isinstance(obj, dict) else (list if isinstance(obj, list) else tuple)
            return super().save(base(obj), save_persistent_id)
        raise TypeError(f"nbtorch.save cannot store objects of type {t.__name__}: only "
                        "tensors, NumPy arrays, dicts, lists, tuples, sets, numbers, strings, "
                        "bytes and None, what torch.load(weights_only=True) accepts (use "
                        "state_dict() for models and optimizers, or allow the class with "
                        "nbtorch.serialization.add_safe_globals)")

    def _save_global_ref(self, g):
        memo = self.memo.get(id(g))
        if memo is not None:
            self.write(self.get(memo[0]))
            return
        self.write(pickle.GLOBAL + f"{g.module}\n{g.name}\n".encode("utf-8"))
        self.memoize(g)

    def _save_tensor(self, t):
        memo = self.memo.get(id(t))
        if memo is not None:
            self.write(self.get(memo[0]))
            return
        if t.is_sparse or t.is_sparse_csr:  # PyTorch's _rebuild_sparse_tensor(layout, parts)
            return self.save_reduce(_REBUILD_SPARSE, (t.layout, t._torch_parts()), obj=t)
        if t.device.type == "meta":     # no data, no storage record: PyTorch's meta rebuild
            return self._save_meta(t)
        storage = t._storage
        entry = self.storages.get(id(storage))
        if entry is None:
            entry = self.storages[id(storage)] = (str(len(self.storages)), storage, t.dtype)
        key = entry[0]
        location = "cpu" if t.device.type == "cpu" else str(t.device)
        if t.dtype.limited:
            pid = ("storage", _UNTYPED, key, location, int(storage.data.size) * t.dtype.itemsize)
        else:
            pid = ("storage", _Global("torch", _STORAGE_NAMES[t.dtype.name]), key, location,
                   int(storage.data.size))
        if t.is_quantized:          # PyTorch's _rebuild_qtensor(storage, ..., qparams, ...)
            args = (_StorageRef(pid), t._offset, tuple(t._shape), tuple(t._strides),
                    _quantizer_params(t), t.requires_grad, collections.OrderedDict())
            return self.save_reduce(_REBUILD_QTENSOR, args, obj=t)
        is_param = type(t).__name__ == "Parameter"
        args = (_StorageRef(pid), t._offset, tuple(t._shape), tuple(t._strides),
                False if is_param else t.requires_grad, collections.OrderedDict())
        if t.dtype.limited:
            args += (t.dtype,)
        if is_param:
            self.save_reduce(_REBUILD_PARAMETER, (_TensorReduce(args), t.requires_grad,
                                                  collections.OrderedDict()), obj=t)
        elif participates(type(t)):     # a user's Tensor subclass, with its attributes
            self.save_reduce(_REBUILD_FROM_TYPE, (_rebuild_of(args), type(t), args,
                                                  dict(vars(t))), obj=t)
        else:
            self.save_reduce(_rebuild_of(args), args, obj=t)


    def _save_meta(self, t):
        if type(t).__name__ == "Parameter":
            args = (t.dtype, tuple(t._shape), tuple(t._strides), False)
            return self.save_reduce(_REBUILD_PARAMETER, (_TensorReduce(args, _REBUILD_META),
                                                         t.requires_grad,
                                                         collections.OrderedDict()), obj=t)
        args = (t.dtype, tuple(t._shape), tuple(t._strides), t.requires_grad)
        return self.save_reduce(_REBUILD_META, args, obj=t)


def _rebuild_of(args):
    """_rebuild_tensor_v3 for arguments that name their dtype (limited dtypes), else v2."""
    return _REBUILD_TENSOR_V3 if len(args) == 7 else _REBUILD_TENSOR


def _quantizer_params(q):
    """PyTorch's pickled qparams: (torch.per_tensor_affine, scale, zero_point) or
    (torch.per_channel_affine, scales (float64), zero_points (int64), axis)."""
    if len(q._qparams) == 2:
        return (_Global("torch", "per_tensor_affine"),) + tuple(q._qparams)
    scales, zps, axis = q._qparams
    if zps.dtype.kind == "f":           # per_channel_affine_float_qparams: float32 both
        return (_Global("torch", "per_channel_affine"), wrap(np.asarray(scales, np.float32)),
                wrap(np.asarray(zps, np.float32)), int(axis))
    return (_Global("torch", "per_channel_affine"), wrap(np.asarray(scales, np.float64)),
            wrap(np.asarray(zps, np.int64)), int(axis))


class _TensorReduce:
    """The ``_rebuild_tensor_v2(...)`` call (or `fn`'s) inside a parameter's reduce."""

    __slots__ = ("args", "fn")

    def __init__(self, args, fn=None):
        self.args = args
        self.fn = fn


def _named_ok(obj):
    """True for the globals a checkpoint may name besides torch's (the same as
    `_torch_pickle`'s allow-list)."""
    global _NAMED
    if _NAMED is None:
        import codecs
        try:
            from numpy._core import multiarray
        except ImportError:
            from numpy.core import multiarray
        _NAMED = {id(x) for x in (collections.OrderedDict, collections.Counter, np.ndarray,
                                  np.dtype, codecs.encode, multiarray._reconstruct,
                                  multiarray.scalar, set, complex, bytearray)}
    return id(obj) in _NAMED


_NAMED = None


def _storage_bytes(storage, dtype):
    """The storage's raw bytes (copied to the host for a device storage)."""
    data = storage.data
    if storage.device.type != "cpu":
        data = data.copy_to_host()
    data = np.ascontiguousarray(data)
    if sys.byteorder != "little":
        data = data.byteswap()
    return data.view(np.uint8).reshape(-1)


def _write_record(z, name, data):
    """One stored record whose data starts on a 64-byte boundary (PyTorch's 'FB' padding)."""
    data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
    size = len(data)
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = size
    zip64 = size * 1.05 > zipfile.ZIP64_LIMIT
    try:
        start = z.fp.tell() if z._seekable else None
    except (AttributeError, OSError):
        start = None
    if start is not None:
        fixed = 30 + len(name.encode("utf-8")) + 4 + (20 if zip64 else 0)
        pad = (-(start + fixed)) % _ALIGN
        info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    with z.open(info, "w", force_zip64=zip64) as out:
        step = 1 << 26
        for i in range(0, size, step):
            out.write(data[i:i + step])


def write_torch_zip(obj, fileobj, prefix):
    """Pickle `obj` and write the whole archive to the binary file object."""
    storages = {}
    buf = io.BytesIO()
    _Pickler(buf, storages).dump(obj)
    with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED) as z:
        _write_record(z, f"{prefix}/data.pkl", buf.getvalue())
        _write_record(z, f"{prefix}/.format_version", b"1")
        _write_record(z, f"{prefix}/.storage_alignment", str(_ALIGN).encode())
        _write_record(z, f"{prefix}/byteorder", b"little")
        for key, storage, dtype in storages.values():
            _write_record(z, f"{prefix}/data/{key}", _storage_bytes(storage, dtype))
        _write_record(z, f"{prefix}/version", b"3\n")
        _write_record(z, f"{prefix}/.data/serialization_id",
                      str(uuid.uuid4().int % 10 ** 40).zfill(40).encode())


def archive_prefix(path):
    """PyTorch's record folder: the file name without its extension ('archive' for
    file objects)."""
    if path is None:
        return "archive"
    stem = os.path.splitext(os.path.basename(path))[0]
    return stem or "archive"
