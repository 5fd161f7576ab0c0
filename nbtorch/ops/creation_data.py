"""Tensors from data: `tensor`, `as_tensor`, `asarray`, `from_numpy`, `scalar_tensor`,
with PyTorch's dtype inference for nested Python data (creation.py re-exports them)."""
import numpy as np

from .. import _dtype
from .._device import factory_device
from .._tensor import canonical_device as to_device
from .._tensor import CPU, Tensor, empty as _empty, wrap
from .creation import _NUMBER_TYPES, _fills_exactly, _finish, _number_dtype


def _infer_dtype(data):
    """PyTorch's dtype inference for nested Python data."""
    if isinstance(data, (np.ndarray, np.generic)):
        return _dtype.from_numpy_dtype(data.dtype)
    flat = []
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, Tensor):
            flat.append(x.dtype)
        else:
            flat.append(x)
    if not flat:
        return _dtype.get_default_dtype()
    # PyTorch's rule: the promotion of every element's type, a tensor's and a NumPy
    # scalar's own dtype, Python's bool/int/float/complex as bool/int64/the defaults
    # ([tensor(1.5), 2] is float32: it was int64, the 1.5 truncated)
    result = None
    for x in flat:
        if isinstance(x, _dtype.dtype):
            d = x
        elif isinstance(x, np.ndarray) and x.dtype.kind in "biufc":     # [arr, arr]
            d = _dtype.from_numpy_dtype(x.dtype)
        elif isinstance(x, np.generic) and not isinstance(x, (np.str_, np.bytes_)):
            d = _dtype.from_numpy_dtype(x.dtype)
        elif isinstance(x, bool):
            d = _dtype.bool
        elif isinstance(x, int):
            d = _dtype.int64
        elif isinstance(x, float):
            d = _dtype.get_default_dtype()
        elif isinstance(x, complex):
            d = _dtype.default_complex()
        elif isinstance(x, str):
            raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
        else:                              # None, objects: PyTorch's RuntimeError
            raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")
        result = d if result is None else _dtype.promote_types(result, d)
    return result


_SEQUENCE_TYPES = frozenset((list, tuple))


def _plain_numbers_dtype(data):
    """The inferred dtype of a list/tuple, nested evenly, of plain Python bools, ints and
    floats (``torch.tensor([1, 2, 3])``, a collated batch of labels), found from the set
    of element types level by level instead of element by element (64 ints: `tensor`
    40 -> 6.5 us); None for anything else (tensors, NumPy values, complex, mixed nesting),
    which `_infer_dtype` then walks."""
    level = (data,)
    while True:
        kinds = set()
        for seq in level:
            kinds.update(map(type, seq))
        if kinds <= _NUMBER_TYPES:
            if float in kinds or not kinds:
                return _dtype.get_default_dtype()
            return _dtype.int64 if int in kinds else _dtype.bool
        if not kinds <= _SEQUENCE_TYPES:
            return None
        level = [x for seq in level for x in seq]


def _to_numpy_data(data):
    if isinstance(data, Tensor):
        return data.detach()._host()
    if isinstance(data, (list, tuple)) and any(isinstance(x, Tensor) for x in data):
        return np.array([_to_numpy_data(x) for x in data])
    return data


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor that copies `data` (nested lists, numbers, NumPy arrays, tensors).

    Example:
        >>> nbtorch.tensor([[1.0, 2.0], [3.0, 4.0]])
    """
    if data.__class__ in _NUMBER_TYPES and dtype is None:
        t = _number_tensor(data)
        if t is not None:
            dev = factory_device(device)
            return _finish(t if dev.type == "cpu" else t.to(dev), requires_grad)
    if isinstance(data, Tensor):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.clone().detach() or sourceTensor.clone().detach()."
                      "requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        t = data.detach().clone()
        if dtype is not None or device is not None:
            t = t.to(device=device or t.device, dtype=dtype or t.dtype)
        return _finish(t, requires_grad)
    if isinstance(data, range):
        data = list(data)
    elif isinstance(data, (memoryview, bytearray)):
        data = np.frombuffer(data, dtype=np.uint8)          # bytes, as PyTorch's
    plain = _plain_numbers_dtype(data) if data.__class__ in _SEQUENCE_TYPES else None
    if dtype is not None:
        d = _dtype.to_dtype(dtype)
    else:
        d = plain if plain is not None else _infer_dtype(data)
    values = data if plain is not None else _to_numpy_data(data)
    with np.errstate(over="ignore"):        # 1e39 -> inf without a warning, as PyTorch
        try:
            if d.np_via is not None:        # bfloat16: Python floats round to float32 first
                values = np.array(values, dtype=d.np_via)
            if d.limited and d.is_floating_point:     # float8: c10's conversion rules
                from .._limited import cast
                arr = np.array(cast(np.array(values), d), copy=True)
            else:
                arr = np.array(values, dtype=d.np, copy=True)
        except OverflowError:               # a Python int beyond the type
            arr = _narrow_ints(values, d)
    if arr.dtype == object:
        raise TypeError("tensor(): could not build a tensor from ragged nested sequences")
    t = wrap(arr)
    dev = factory_device(device)
    if dev.type != "cpu":
        t = t.to(dev)
    return _finish(t, requires_grad)


def _number_tensor(value):
    """A 0-d CPU tensor of Python bool, int or float `value` in the dtype `tensor` infers
    for it, when NumPy converts it with no error or warning (an int within int64, a
    float within float32's range or float64): the same value `tensor`'s conversion gives,
    without its walk and error state (tensor(3.5) 4.6 -> ~2 us); None otherwise."""
    d = _number_dtype(value)
    if not _fills_exactly(value, d):
        return None
    t = _empty((), d, CPU)
    t._storage.data[0] = value
    return t


def _narrow_ints(values, d):
    """Python ints into a narrower integer dtype as PyTorch converts them: int64 first
    (ValueError beyond), then the checked range (uint8 takes -255..255, wrapping
    negatives; RuntimeError outside)."""
    from .._scalars import _int_range
    try:
        wide = np.array(values, dtype=np.int64)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    if d is _dtype.uint64:              # a negative Python int (PyTorch unpacks it unsigned)
        raise OverflowError("can't convert negative int to unsigned")
    if d.is_floating_point or d.itemsize == 8 or d.name == "bool":
        raise ValueError("Overflow when unpacking long long")
    lo, hi = _int_range(d)
    if wide.size and (wide.min() < (-hi if lo == 0 else lo) or wide.max() > hi):
        raise RuntimeError(f"value cannot be converted to type {d.name} without overflow")
    return wide.astype(d.np)


def as_tensor(data, dtype=None, device=None):
    """Like `tensor`, but shares memory with a Tensor or NumPy array when it can."""
    dev = to_device(device) if device is not None else None
    if isinstance(data, Tensor):
        return data.to(device=dev or data.device, dtype=dtype or data.dtype)
    dev = dev or factory_device(None)
    same = dtype is None or (isinstance(data, np.ndarray) and
                             _dtype.to_dtype(dtype).np == data.dtype)
    if isinstance(data, np.ndarray) and same and dev.type == "cpu":
        try:
            return from_numpy(data)         # the array's own dtype given: shared too
        except (TypeError, ValueError):
            pass
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """`as_tensor` with PyTorch's `copy` (True: always a copy; False: share or raise) and
    `requires_grad`."""
    if copy:
        src = obj.detach() if isinstance(obj, Tensor) else obj
        out = tensor(src._host() if isinstance(src, Tensor) else src,
                     dtype=dtype or (src.dtype if isinstance(src, Tensor) else None),
                     device=device or (src.device if isinstance(src, Tensor) else None))
    else:
        out = as_tensor(obj, dtype=dtype, device=device)
        if copy is False and isinstance(obj, (Tensor, np.ndarray)):
            base = obj._storage.data if isinstance(obj, Tensor) else obj
            if not np.shares_memory(out._storage.data, base) if out.device.type == "cpu" \
                    else out is not obj:
                raise ValueError("asarray: copy=False, but the data cannot be shared "
                                 "(another dtype or device)")
    if requires_grad:
        out = out.detach().requires_grad_(True) if out.requires_grad else \
            out.requires_grad_(True)
    return out


def from_numpy(ndarray):
    """A tensor sharing memory with `ndarray` (writes show in both).

    Unlike PyTorch, an ``ml_dtypes.bfloat16`` array is accepted (a bfloat16 tensor).
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and "
                         "tensors with negative strides are not currently supported. (You "
                         "can probably work around this by making a copy of your array  "
                         "with array.copy().) ")
    if any(s % ndarray.itemsize for s in ndarray.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size")
    if not ndarray.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte "
                         "order. Conversion between byte orders is currently not supported.")
    return wrap(ndarray)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    return tensor(s, dtype=dtype or _dtype.get_default_dtype(), device=device,
                  requires_grad=requires_grad)
