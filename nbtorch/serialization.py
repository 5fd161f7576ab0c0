"""`nbtorch.save` / `nbtorch.load`: checkpoints that never execute code on load.

Format: a zip archive holding `nbtorch.json` (the object's structure: dicts,
lists, tuples, numbers, strings, None, and references to tensors) and one
`.npy` file per tensor (read with ``allow_pickle=False``). Saving writes a
temporary file beside the target and renames it into place, so a crash
mid-save never destroys the previous checkpoint. PyTorch's own zip `.pt` files
are read by a restricted unpickler that only rebuilds tensors and ordered
dicts; any other global in the pickle is refused.
"""
import collections
import io
import json
import os
import tempfile
import zipfile

import numpy as np

from . import _dtype
from ._tensor import Tensor, wrap

__all__ = ["save", "load"]

_MAGIC = "nbtorch-checkpoint-v1"


# ---- save ---------------------------------------------------------------------------

def _encode(obj, tensors):
    if isinstance(obj, Tensor):
        tensors.append(obj)
        entry = {"__tensor__": len(tensors) - 1, "requires_grad": obj.requires_grad,
                 "device": str(obj.device), "parameter": type(obj).__name__ == "Parameter"}
        if obj.dtype is _dtype.bfloat16:
            entry["dtype"] = obj.dtype.name     # stored as its uint16 bits (see _npy_array)
        return entry
    if obj is None or isinstance(obj, (bool, int, float, str)):
        if isinstance(obj, float) and not np.isfinite(obj):
            return {"__float__": repr(obj)}
        return obj
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return _encode(obj.item(), tensors)
    if isinstance(obj, _dtype.dtype):
        return {"__dtype__": obj.name}
    if isinstance(obj, (dict, collections.OrderedDict)):
        items = [[_encode(k, tensors), _encode(v, tensors)] for k, v in obj.items()]
        return {"__dict__": items, "ordered": isinstance(obj, collections.OrderedDict)}
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(x, tensors) for x in obj]}
    if isinstance(obj, list):
        return [_encode(x, tensors) for x in obj]
    if isinstance(obj, np.ndarray):
        return _encode(wrap(np.array(obj)), tensors)
    raise TypeError(f"nbtorch.save cannot store objects of type {type(obj).__name__}: only "
                    "tensors, dicts, lists, tuples, numbers, strings and None (use "
                    "state_dict() for models and optimizers)")


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Save tensors and nested containers of them to a path or binary file object.

    Example:
        >>> nbtorch.save({"model": model.state_dict(), "epoch": 3}, "ckpt.pt")
    """
    tensors = []
    structure = {"format": _MAGIC, "root": _encode(obj, tensors)}
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".nbtorch-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                _write(out, structure, tensors)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
    else:
        _write(f, structure, tensors)


def _write(fileobj, structure, tensors):
    with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("nbtorch.json", json.dumps(structure))
        for i, t in enumerate(tensors):
            buf = io.BytesIO()
            np.save(buf, _npy_array(t), allow_pickle=False)
            z.writestr(f"tensors/{i}.npy", buf.getvalue())


def _npy_array(t):
    """t's values for a `.npy` file: a bfloat16 tensor as its uint16 bits (the format can
    only name NumPy's own dtypes; the JSON entry records 'bfloat16')."""
    a = np.asarray(t.detach()._host(), order="C")
    return a.view(np.uint16) if t.dtype is _dtype.bfloat16 else a


# ---- load ---------------------------------------------------------------------------

def _map(t, map_location, saved_device):
    if map_location is None:
        dev = saved_device
    elif callable(map_location):
        r = map_location(t, saved_device)
        return r if isinstance(r, Tensor) else t
    elif isinstance(map_location, dict):
        dev = map_location.get(saved_device, saved_device)
    else:
        dev = str(map_location)
    return t if dev == "cpu" or dev is None else t.to(dev)


def _decode(obj, z, map_location, cache):
    if isinstance(obj, list):
        return [_decode(x, z, map_location, cache) for x in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tensor__" in obj:
        i = obj["__tensor__"]
        if not isinstance(i, int):
            raise RuntimeError("corrupted checkpoint: bad tensor reference")
        if i not in cache:
            with z.open(f"tensors/{i}.npy") as fh:
                arr = np.load(io.BytesIO(fh.read()), allow_pickle=False)
            if obj.get("dtype") == "bfloat16":
                if arr.dtype != np.uint16:
                    raise RuntimeError("corrupted checkpoint: bfloat16 tensor not stored as "
                                       "uint16 bits")
                arr = arr.view(_dtype.bfloat16.np)
            t = _map(wrap(np.asarray(arr, order="C")), map_location, obj.get("device", "cpu"))
            if obj.get("parameter"):
                from .nn.parameter import Parameter
                t = Parameter(t, requires_grad=obj.get("requires_grad", True))
            elif obj.get("requires_grad"):
                t.requires_grad_(True)
            cache[i] = t
        return cache[i]
    if "__float__" in obj:
        return float(obj["__float__"])
    if "__dtype__" in obj:
        return _dtype.to_dtype(obj["__dtype__"])
    if "__tuple__" in obj:
        return tuple(_decode(x, z, map_location, cache) for x in obj["__tuple__"])
    if "__dict__" in obj:
        cls = collections.OrderedDict if obj.get("ordered") else dict
        return cls((_hashable(_decode(k, z, map_location, cache)),
                    _decode(v, z, map_location, cache)) for k, v in obj["__dict__"])
    raise RuntimeError("corrupted checkpoint: unknown entry " + repr(sorted(obj)))


def _hashable(k):
    return tuple(k) if isinstance(k, list) else k


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None,
         **pickle_load_args):
    """Load what `save` wrote (or a PyTorch zip `.pt` state dict), executing no code.

    map_location: None (as saved), a device string/object, a dict {saved: new} or a
    callable(tensor, saved_location) -> tensor.
    """
    name = os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "<file>")
    try:
        z = zipfile.ZipFile(f if not isinstance(f, (str, os.PathLike)) else os.fspath(f))
    except zipfile.BadZipFile as e:
        raise RuntimeError(f"{name} is not a valid nbtorch/PyTorch checkpoint (truncated or "
                           f"corrupted: {e})") from None
    except FileNotFoundError:
        raise
    with z:
        try:
            names = z.namelist()
            if "nbtorch.json" in names:
                structure = json.loads(z.read("nbtorch.json"))
                if structure.get("format") != _MAGIC:
                    raise RuntimeError(f"{name}: unknown checkpoint format")
                return _decode(structure["root"], z, map_location, {})
            pkl = [n for n in names if n.endswith("data.pkl")]
            if pkl:
                from ._torch_pickle import load_torch_zip
                return load_torch_zip(z, pkl[0], lambda t, loc: _map(t, map_location, loc))
            raise RuntimeError(f"{name} is not an nbtorch or PyTorch checkpoint")
        except (zipfile.BadZipFile, KeyError, EOFError, ValueError, json.JSONDecodeError,
                zlib_error()) as e:
            raise RuntimeError(f"{name} is truncated or corrupted: {e}") from None


def zlib_error():
    import zlib
    return zlib.error

