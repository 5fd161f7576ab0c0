"""Read nbtorch's first checkpoint format ("nbtorch-checkpoint-v1"), which earlier versions
wrote (the demo's files, for one): a zip holding ``nbtorch.json`` (the structure: dicts,
lists, tuples, numbers, strings, None, references to tensors) and one ``.npy`` file per
tensor, read with ``allow_pickle=False``. `nbtorch.save` now writes PyTorch's format."""
import collections
import io
import json

import numpy as np

from . import _dtype
from ._tensor import wrap

__all__ = ["MAGIC", "load_v1"]

MAGIC = "nbtorch-checkpoint-v1"


def load_v1(z, name, place):
    """The object stored in the open zip `z`; ``place(tensor, saved_device)`` moves each."""
    structure = json.loads(z.read("nbtorch.json"))
    if structure.get("format") != MAGIC:
        raise RuntimeError(f"{name}: unknown checkpoint format")
    return _decode(structure["root"], z, place, {})


def _decode(obj, z, place, cache):
    if isinstance(obj, list):
        return [_decode(x, z, place, cache) for x in obj]
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
            t = place(wrap(np.asarray(arr, order="C")), obj.get("device", "cpu"))
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
        return tuple(_decode(x, z, place, cache) for x in obj["__tuple__"])
    if "__dict__" in obj:
        cls = collections.OrderedDict if obj.get("ordered") else dict
        return cls((_hashable(_decode(k, z, place, cache)), _decode(v, z, place, cache))
                   for k, v in obj["__dict__"])
    raise RuntimeError("corrupted checkpoint: unknown entry " + repr(sorted(obj)))


def _hashable(k):
    return tuple(k) if isinstance(k, list) else k
