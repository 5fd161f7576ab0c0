"""Collation: turn a list of samples into one batch (and convert single samples).

``default_collate`` follows ``torch.utils.data.default_collate``: tensors are stacked
along a new first dimension, NumPy arrays and Python numbers become tensors (floats as
float64, ints and bools as ``torch.tensor`` infers from the whole batch), strings pass
through as they come (a tuple from a tuple sample), and mappings,
namedtuples and sequences are collated field by field (a tuple sample gives a list of
fields, as in PyTorch). ``collate`` takes a ``collate_fn_map`` from type to function to
extend that recursion with types of your own.
"""
import collections.abc
import copy

import numpy as np

import nbtorch
from nbtorch._tensor import Tensor

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map"]

_UNSUPPORTED = ("default_collate: batch must contain tensors, numpy arrays, numbers, "
                "dicts or lists; found {}")
_NUMPY_STRING_KINDS = "SaUO"  # bytes, str and object arrays cannot become tensors


def _is_namedtuple(value):
    """True for instances of ``collections.namedtuple`` (and typing.NamedTuple) classes."""
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _check_equal_shapes(batch):
    """Raise torch.stack's RuntimeError naming the first entry whose shape differs from
    entry 0's (arrays too: PyTorch stacks them as tensors)."""
    first_shape = tuple(batch[0].shape)
    for position, item in enumerate(batch):
        if tuple(item.shape) != first_shape:
            raise RuntimeError(
                "stack expects each tensor to be equal size, but got "
                f"{list(first_shape)} at entry 0 and {list(item.shape)} at entry {position}")


def _collate_tensors(batch, *, collate_fn_map=None):
    """Stack equal-shaped tensors along a new first dimension: `nbtorch.stack`, whose
    unrecorded CPU path is one copy of the pieces' bytes (64 tensors of 1x28x28: 66 ->
    ~16 us against np.stack and its shape checks here) and whose errors name the entry
    whose shape differs, as PyTorch's collate does."""
    return nbtorch.stack(batch, 0)


def _collate_numpy_arrays(batch, *, collate_fn_map=None):
    """Stack equal-shaped NumPy arrays into one tensor of their dtype."""
    if batch[0].dtype.char in _NUMPY_STRING_KINDS:
        raise TypeError(_UNSUPPORTED.format(batch[0].dtype))
    _check_equal_shapes(batch)
    return nbtorch.from_numpy(np.stack(batch))


def _collate_numpy_scalars(batch, *, collate_fn_map=None):
    """Turn NumPy scalars (``np.float32(1)``...) into one 1-D tensor of their dtype."""
    return nbtorch.as_tensor(np.array(batch))


def _collate_floats(batch, *, collate_fn_map=None):
    return nbtorch.tensor(batch, dtype=nbtorch.float64)


def _collate_ints(batch, *, collate_fn_map=None):
    """A batch led by an int (or a bool): the dtype inferred from all of it, as PyTorch's
    ``torch.tensor(batch)`` (``[2, 1.5]`` is float32, ``[True, 2]`` int64, all-bool bool)."""
    return nbtorch.tensor(list(batch))


def _collate_strings(batch, *, collate_fn_map=None):
    return batch


def _default_collate_fn_map():
    """The type -> function table behind ``default_collate``."""
    return default_collate_fn_map


# PyTorch's ``torch.utils.data._utils.collate.default_collate_fn_map``: copy it, add
# entries and pass it to ``collate(batch, collate_fn_map=...)`` to collate custom types
# (changing it in place changes ``default_collate``, as in PyTorch). Lookup order
# matters: np.str_ is a str, np.float64 a float.
default_collate_fn_map = {
    Tensor: _collate_tensors,
    np.ndarray: _collate_numpy_arrays,
    str: _collate_strings,
    bytes: _collate_strings,
    np.generic: _collate_numpy_scalars,
    float: _collate_floats,
    int: _collate_ints,
}


def _lookup(elem, collate_fn_map):
    """Return the function for ``elem``'s type: exact type first, then the first base class."""
    function = collate_fn_map.get(type(elem))
    if function is not None:
        return function
    for collate_type, function in collate_fn_map.items():
        if isinstance(elem, collate_type):
            return function
    return None


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a list of samples) recursively, using ``collate_fn_map`` for leaves.

    Args:
        batch: a non-empty list of samples of the same structure.
        collate_fn_map: ``{type: fn(batch, *, collate_fn_map)}`` for leaf types (default: the
            table behind ``default_collate``); exact types win, then ``isinstance`` order.

    Example:
        >>> collate([{"x": 1.0}, {"x": 2.0}])["x"].tolist()
        [1.0, 2.0]
    """
    if collate_fn_map is None:
        collate_fn_map = _default_collate_fn_map()
    if len(batch) == 0:
        raise IndexError("list index out of range")     # PyTorch's (it reads batch[0])
    elem = batch[0]
    function = _lookup(elem, collate_fn_map)
    if function is not None:
        return function(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        fields = {key: collate([sample[key] for sample in batch], collate_fn_map=collate_fn_map)
                  for key in elem}
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(fields)
            return clone
        try:
            return type(elem)(fields)
        except TypeError:  # the mapping type cannot be built from a dict
            return fields
    if _is_namedtuple(elem):
        return type(elem)(*(collate(samples, collate_fn_map=collate_fn_map)
                            for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        for position, sample in enumerate(batch):
            if len(sample) != size:
                raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [collate(samples, collate_fn_map=collate_fn_map)   # a tuple each, as
                      for samples in zip(*batch)]                         # PyTorch's zip
        if isinstance(elem, tuple):
            return transposed  # PyTorch returns a list for tuple samples
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            clone[:] = transposed
            return clone
        try:
            return type(elem)(transposed)
        except TypeError:
            return transposed
    raise TypeError(_UNSUPPORTED.format(type(elem)))


def default_collate(batch):
    """Collate a list of samples into a batch, as ``torch.utils.data.default_collate`` does.

    Example:
        >>> import nbtorch
        >>> xs, ys = default_collate([(nbtorch.zeros(2), 0), (nbtorch.ones(2), 1)])
        >>> tuple(xs.shape), ys.tolist()
        ((2, 2), [0, 1])
    """
    return collate(batch)


def default_convert(data):
    """Convert one sample without batching: NumPy arrays and scalars become tensors.

    Mappings, namedtuples and sequences are converted element by element (a tuple becomes
    a list, as in PyTorch); strings, tensors and anything else pass through unchanged.

    Example:
        >>> import numpy as np
        >>> tuple(default_convert({"x": np.zeros(3)})["x"].shape)
        (3,)
    """
    if isinstance(data, nbtorch.Tensor):
        return data
    if isinstance(data, np.ndarray):
        if data.dtype.char in _NUMPY_STRING_KINDS:
            return data
        return nbtorch.as_tensor(data)
    if isinstance(data, np.generic) and not isinstance(data, (np.str_, np.bytes_, np.object_)):
        return nbtorch.as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        fields = {key: default_convert(value) for key, value in data.items()}
        if isinstance(data, collections.abc.MutableMapping):
            clone = copy.copy(data)
            clone.update(fields)
            return clone
        try:
            return type(data)(fields)
        except TypeError:
            return fields
    if _is_namedtuple(data):
        return type(data)(*(default_convert(value) for value in data))
    if isinstance(data, tuple):
        return [default_convert(value) for value in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        converted = [default_convert(value) for value in data]
        if isinstance(data, collections.abc.MutableSequence):
            clone = copy.copy(data)
            clone[:] = converted
            return clone
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    return data
