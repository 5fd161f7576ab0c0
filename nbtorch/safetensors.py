"""safetensors files (the format model hubs use): ``save_file``/``load_file`` like
``safetensors.torch``'s, through the `safetensors` package (an optional dependency:
``pip install safetensors``).

A safetensors file is a JSON header (names, dtypes, shapes, byte ranges) followed by
raw little-endian tensor bytes: loading never runs code. Tensors are written through
the package's core ``serialize`` (which its NumPy API uses too, and which also knows
bfloat16, unlike NumPy); non-contiguous and CUDA tensors are copied to contiguous host
memory first. Saving is atomic (a temporary file, then a rename), as `nbtorch.save`.

Example:
    >>> nbtorch.safetensors.save_file(model.state_dict(), "model.safetensors")
    >>> model.load_state_dict(nbtorch.safetensors.load_file("model.safetensors"))
"""
import os
import sys
import tempfile

import numpy as np

from . import _dtype
from ._tensor import Tensor, wrap

__all__ = ["save", "save_file", "load", "load_file"]

_CODES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
          "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8",
          "bool": "BOOL"}
_DTYPES = {code: name for name, code in _CODES.items()}


def _package():
    try:
        import safetensors
    except ImportError:
        raise ImportError("nbtorch.safetensors needs the safetensors package (pip install "
                          "safetensors)") from None
    return safetensors


def _entries(tensors, package):
    """What the package's ``serialize`` takes: `TensorSpec`s over host buffers (kept alive
    in the returned list) where it has them (0.8+), else dicts holding the bytes."""
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, Tensor] but received {type(tensors)}")
    out, keep = {}, []
    spec = getattr(package, "TensorSpec", None)
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise ValueError(f"Key `{name}` is invalid, expected str but received "
                             f"{type(name)}")
        if not isinstance(t, Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected nbtorch.Tensor but received "
                             f"{type(t)}")
        a = np.ascontiguousarray(t.detach()._host())
        if sys.byteorder != "little":
            a = a.byteswap()
        raw = a.view(np.uint8).reshape(-1)
        keep.append(raw)
        if spec is not None:
            out[name] = spec(dtype=t.dtype.name, shape=tuple(t.shape),
                             data_ptr=raw.ctypes.data, data_len=raw.nbytes)
        else:
            out[name] = {"dtype": _CODES[t.dtype.name], "shape": list(t.shape),
                         "data": raw.tobytes()}
    return out, keep


def save(tensors, metadata=None):
    """The safetensors bytes of a dict {name: tensor} (`metadata`: a dict of strings)."""
    package = _package()
    entries, keep = _entries(tensors, package)
    data = bytes(package.serialize(entries, metadata=metadata))
    del keep                     # the buffers the specs point at lived until here
    return data


def save_file(tensors, filename, metadata=None):
    """Write a dict {name: tensor} to `filename` as a safetensors file, atomically."""
    data = save(tensors, metadata)
    path = os.fspath(filename)
    fd, tmp = tempfile.mkstemp(prefix=".nbtorch-", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(data, device="cpu"):
    """The dict {name: tensor} stored in safetensors bytes `data`."""
    result = {}
    for name, info in _package().deserialize(bytes(data)):
        code = info["dtype"]
        if code not in _DTYPES:
            raise RuntimeError(f"safetensors: tensor {name!r} has dtype {code}, which nbtorch "
                               "has no dtype for")
        dtype = _dtype.to_dtype(_DTYPES[code])
        arr = np.frombuffer(bytearray(info["data"]), dtype=np.dtype(dtype.np))
        if sys.byteorder != "little":
            arr = arr.byteswap()
        t = wrap(arr.reshape(info["shape"]))
        result[name] = t if str(device) == "cpu" else t.to(device)
    return result


def load_file(filename, device="cpu"):
    """The dict {name: tensor} in safetensors file `filename`, on `device`."""
    with open(os.fspath(filename), "rb") as f:
        return load(f.read(), device=device)
