"""Read PyTorch's zip `.pt` files without executing code from them.

The pickle inside may only name the globals needed to rebuild tensors and
ordered dicts; anything else (os.system, builtins.eval, ...) raises
`pickle.UnpicklingError` before it can run. Storage bytes come from the
archive's `data/<key>` records.
"""
import collections
import pickle

import numpy as np

from ._tensor import wrap

_STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "BFloat16Storage": "bfloat16",
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
}
_DTYPE_NAMES = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
                "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8,
                "uint8": np.uint8, "bool": np.bool_, "float": np.float32, "double": np.float64,
                "half": np.float16, "long": np.int64, "int": np.int32,
                "bfloat16": "bfloat16"}


class _StorageType:
    def __init__(self, dtype):
        if dtype == "bfloat16":              # ml_dtypes is imported only when needed
            from ._dtype import bfloat16
            dtype = bfloat16.np
        self.dtype = dtype


def _rebuild_tensor_v2(storage, offset, size, stride, requires_grad=False, hooks=None,
                       metadata=None):
    arr, location = storage
    itemsize = arr.dtype.itemsize
    view = np.lib.stride_tricks.as_strided(arr[offset:], shape=tuple(size),
                                           strides=tuple(s * itemsize for s in stride))
    t = wrap(np.array(view, copy=True))
    return t, location


def _rebuild_parameter(data, requires_grad, hooks, *extra):
    return data


class _Restricted(pickle.Unpickler):
    def __init__(self, fileobj, archive, prefix):
        super().__init__(fileobj)
        self.archive, self.prefix = archive, prefix
        self.locations = {}

    def find_class(self, module, name):
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(_STORAGE_DTYPES[name])
        if module == "torch" and name in _DTYPE_NAMES:
            return _StorageType(_DTYPE_NAMES[name])
        raise pickle.UnpicklingError(
            f"refusing to load global '{module}.{name}': only tensors and state dicts can be "
            "loaded (no code is executed from checkpoint files)")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
        _, storage_type, key, location, numel = pid
        dtype = storage_type.dtype if isinstance(storage_type, _StorageType) else np.uint8
        raw = self.archive.read(f"{self.prefix}data/{key}")
        arr = np.frombuffer(raw, dtype=np.uint8).view(dtype)
        return (arr, location)


def load_torch_zip(archive, pkl_name, place):
    """Unpickle `pkl_name` from a PyTorch zip archive; `place(tensor, location)` moves it."""
    prefix = pkl_name[:-len("data.pkl")]
    import io
    up = _Restricted(io.BytesIO(archive.read(pkl_name)), archive, prefix)
    obj = up.load()
    return _place_all(obj, place)


def _place_all(obj, place):
    if isinstance(obj, tuple) and len(obj) == 2 and hasattr(obj[0], "_storage") and \
            isinstance(obj[1], str):
        return place(obj[0], obj[1])
    if isinstance(obj, dict):
        return type(obj)((k, _place_all(v, place)) for k, v in obj.items())
    if isinstance(obj, list):
        return [_place_all(v, place) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_place_all(v, place) for v in obj)
    return obj
