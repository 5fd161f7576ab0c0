"""Tensor creation: filled, ranges, and the `*_like` forms (from data: creation_data.py)."""
import builtins
import math

import numpy as np

from .. import _dtype
from .._device import factory_device
from .._tensor import canonical_device as to_device
from .._tensor import CPU, Tensor, Size, empty as _empty, _LAYOUTS, _layout
from .._registry import _KERNELS
from .._limited import no_kernel
from .._memory_format import is_plain as _plain
from .._settings import _STATE as _SETTINGS, fill_uninitialized
from ._common import get_kernel

__all__ = ["tensor", "as_tensor", "from_numpy", "asarray", "zeros", "ones", "full",
           "empty", "empty_like", "zeros_like", "ones_like", "full_like", "arange",
           "linspace", "logspace", "eye", "scalar_tensor", "empty_strided"]


def _shape_arg(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s.item())
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"empty(): argument 'size' must be tuple of ints, but found "
                            f"element of type {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        out.append(int(s))
    return tuple(out)


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad = True
    return t


def empty(*size, dtype=None, device=None, requires_grad=False, out=None, pin_memory=False,
          memory_format=None, layout=None, **kwargs):
    """An uninitialised tensor of `size` (on the default device unless `device` is given)."""
    if kwargs or memory_format is not None:
        shape = None
        size = _size_kwarg("empty", size, kwargs)
    else:
        shape = _plain_shape(size)
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if shape is not None:                   # Python ints: _shape_arg's checks are moot
        t = _empty(shape, d, factory_device(device))
    elif memory_format is not None:
        from .copy import empty_in_format
        t = empty_in_format(_shape_arg(size), d, factory_device(device),
                            _check_format("empty", memory_format))
    else:
        t = _empty(_shape_arg(size), d, factory_device(device))
    if _SETTINGS["deterministic"] and _SETTINGS["fill_uninitialized_memory"]:
        fill_uninitialized(t)
    return _finish(t, requires_grad)


def _size_kwarg(op, size, kwargs):
    """`size` given by keyword (``zeros(size=(2, 3))``), as PyTorch allows."""
    if kwargs:
        if "size" not in kwargs or len(kwargs) > 1 or size:
            bad = sorted(set(kwargs) - {"size"}) or ["size"]
            raise TypeError(f"{op}() got an unexpected keyword argument '{bad[0]}'")
        size = (kwargs["size"],)
    return size


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False):
    t = empty(size, dtype=dtype, device=device, requires_grad=False)
    span = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    base = empty(max(span, 0), dtype=t.dtype, device=t.device)
    v = base._view(tuple(size), tuple(stride), 0)
    v._base = None
    return _finish(v, requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None,
         layout=None, pin_memory=False):
    """A tensor of `size` filled with `fill_value` (dtype inferred from the value)."""
    shape = _plain_shape((size,))
    if shape is not None and fill_value.__class__ in _NUMBER_TYPES:
        d = _number_dtype(fill_value) if dtype is None else _dtype.to_dtype(dtype)
        t = _small_fill(shape, d, factory_device(device), fill_value)
        if t is not None:
            return _finish(t, requires_grad)
    if dtype is None:
        dtype = _dtype.result_type(fill_value)
    t = empty(*_shape_arg((size,) if isinstance(size, int) else tuple(size)), dtype=dtype,
              device=device)
    return _finish(_fresh(t.fill_(fill_value)), requires_grad)


def _fresh(t):
    """`t`, a new tensor just filled in place, at version 0 again, as PyTorch's factories
    return theirs (the fill is no write anyone saw)."""
    t._storage.version = 0
    return t


def _plain_shape(size):
    """`size` as a tuple when it is Python ints >= 0 (one tuple/list/Size of them, or
    several): what `_shape_arg` would return, without its per-element checks; else None."""
    if len(size) == 1 and size[0].__class__ in (tuple, list, Size):
        size = size[0]
    for s in size:
        if s.__class__ is not int or s < 0:
            return None
    return tuple(size)


_NUMBER_TYPES = frozenset((bool, int, float))
_SMALL_FILL = 1 << 15      # elements: larger fills take the kernel (its threads)
_F32_MAX = 3.4028234663852886e38
_OWN_FILL = [None]          # nbtorch's CPU fill_ kernel, once the registry has given it
_FILL_CPU = ("fill_", "cpu")


def _own_fill():
    """True while the registered CPU "fill_" kernel is nbtorch's own (a user's kernel
    runs itself): one dict look-up once it has been seen."""
    kernel = _KERNELS.get(_FILL_CPU)
    if kernel is None or kernel is not _OWN_FILL[0]:
        kernel = get_kernel("fill_", "cpu")
        if (getattr(kernel, "__module__", None) != "nbtorch.kernels.cpu.copy"
                or getattr(kernel, "__name__", None) != "fill_"):
            return False
        _OWN_FILL[0] = kernel
    return True


def _number_dtype(value):
    """`_dtype.result_type` of a Python bool, int or float."""
    c = value.__class__
    return _dtype.get_default_dtype() if c is float else _dtype.int64 if c is int \
        else _dtype.bool


def _fills_exactly(value, d):
    """True when NumPy's ``fill`` writes Python number `value` into dtype `d` as
    `Tensor.fill_` does, with no error or warning to raise (float32/float64 from any
    number that fits, int64 from an int, bool from a bool); False sends the call to
    `fill_` and its checked conversion."""
    c = value.__class__
    if d is _dtype.float32 or d is _dtype.float64:
        if c is float:
            return d is _dtype.float64 or -_F32_MAX <= value <= _F32_MAX
        return c is bool or -(1 << 53) <= value <= 1 << 53
    if d is _dtype.int64:
        return c is bool or (c is int and -(1 << 63) <= value < 1 << 63)
    return d is _dtype.bool and c is bool


def _small_fill(shape, d, dev, value):
    """A new CPU tensor of `shape` and dtype `d` under the caching allocator's threshold,
    filled with Python number `value` by NumPy when that is the fill kernel's conversion
    (`_fills_exactly`) and that kernel is nbtorch's own (full 8x16 7.5 -> ~2 us); None
    otherwise."""
    if dev.type != "cpu" or not _fills_exactly(value, d) or not _own_fill():
        return None
    n = 1
    for s in shape:
        n *= s
    if n >= _SMALL_FILL:
        return None
    t = _empty(shape, d, dev)
    t._arr.fill(value)
    return t


def _filled(op, size, value, dtype, device, kwargs):
    """zeros/ones: a small CPU tensor (under the caching allocator's threshold) filled by
    NumPy (zeros 8x16 4.6 -> 1.7 us) while the fill kernel is nbtorch's own; the fill
    kernel, and every check, for the rest."""
    shape = None if kwargs else _plain_shape(size)
    if shape is not None:
        d = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
        dev = CPU if device is CPU else factory_device(device)
        t = _empty(shape, d, dev)
        if (dev.type == "cpu" and t._arr.size < _SMALL_FILL and not (d.is_half or d.limited)
                and (_KERNELS.get(_FILL_CPU) is _OWN_FILL[0] or _own_fill())):  # inlined
            t._arr.fill(value)
            return t
        return _fresh(t.fill_(value))
    return _fresh(empty(*_size_kwarg(op, size, kwargs), dtype=dtype,
                        device=device).fill_(value))


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None,
          pin_memory=False, **kwargs):
    return _finish(_filled("zeros", size, 0, dtype, device, kwargs), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None,
         pin_memory=False, **kwargs):
    return _finish(_filled("ones", size, 1, dtype, device, kwargs), requires_grad)


def _check_format(op, memory_format):
    from .._memory_format import check_format
    return check_format(op, memory_format)


def like_format(t, input, memory_format, requires_grad=False):
    """A fresh `t` laid out as `memory_format` says for a tensor like `input` (the
    default, preserve_format: input's strides when it is dense, its dim order otherwise),
    then requires_grad."""
    if memory_format is None and not _plain(input):
        memory_format = _preserve()
    if memory_format is not None:
        from .copy import with_format
        t = with_format(t, _check_format("empty_like", memory_format), input)
    return _finish(t, requires_grad)


def _preserve():
    from .._memory_format import preserve_format
    return preserve_format


def _like(fn, t, dtype, device, requires_grad, memory_format, *args):
    out = fn(t._shape, *args, dtype=dtype or t.dtype, device=device or t.device)
    return like_format(out, t, memory_format, requires_grad)


def _plain_like(input, dtype, device, memory_format):
    """The dtype of a `*_like` result that is a plain contiguous CPU tensor of `input`'s
    shape (`input` a contiguous CPU Tensor, no device or memory format given), which the
    callers then make directly: what `_like` would make, without its layers; else None."""
    if (device is None and memory_format is None and input.__class__ is Tensor
            and input.device is CPU):
        shape = input._shape
        if input._strides == (_LAYOUTS.get(shape) or _layout(shape))[1]:    # is_plain
            return input.dtype if dtype is None else _dtype.to_dtype(dtype)
    return None


def _plain_filled(input, value, dtype, device, memory_format, requires_grad):
    """zeros_like/ones_like of a small contiguous CPU tensor (`_plain_like`; small: its
    storage, at least its elements, is), filled by NumPy as `_filled` fills (ones_like
    8x16 4.5 -> ~2 us); None for anything else."""
    d = _plain_like(input, dtype, device, memory_format)
    if (d is None or d.is_half or d.limited or input._storage.data.size >= _SMALL_FILL
            or not _own_fill()):
        return None
    t = _empty(input._shape, d, CPU)
    t._arr.fill(value)
    return _finish(t, requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
               layout=None, pin_memory=False):
    d = _plain_like(input, dtype, device, memory_format)
    if d is not None:
        t = _empty(input._shape, d, CPU)
        if _SETTINGS["deterministic"] and _SETTINGS["fill_uninitialized_memory"]:
            fill_uninitialized(t)
        return _finish(t, requires_grad)
    if memory_format is None and not _plain(input):
        memory_format = _preserve()
    if memory_format is not None:
        from .copy import empty_in_format
        fmt = _check_format("empty_like", memory_format)
        t = empty_in_format(input._shape, _dtype.to_dtype(dtype or input.dtype),
                            to_device(device or input.device), fmt, input)
        if _SETTINGS["deterministic"] and _SETTINGS["fill_uninitialized_memory"]:
            fill_uninitialized(t)
        return _finish(t, requires_grad)
    return _like(empty, input, dtype, device, requires_grad, None)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
               layout=None, pin_memory=False):
    t = _plain_filled(input, 0, dtype, device, memory_format, requires_grad)
    if t is not None:
        return t
    return _like(zeros, input, dtype, device, requires_grad, memory_format)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None,
              layout=None, pin_memory=False):
    t = _plain_filled(input, 1, dtype, device, memory_format, requires_grad)
    if t is not None:
        return t
    return _like(ones, input, dtype, device, requires_grad, memory_format)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False,
              memory_format=None, layout=None, pin_memory=False):
    d = _plain_like(input, dtype, device, memory_format)
    if d is not None and fill_value.__class__ in _NUMBER_TYPES:
        t = _small_fill(input._shape, d, CPU, fill_value)
        if t is not None:
            return _finish(t, requires_grad)
    out = full(input.shape, fill_value, dtype=dtype or input.dtype,
               device=device or input.device)
    return like_format(out, input, memory_format, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False,
           out=None, layout=None):
    """Values from `start` to `end` (exclusive) spaced by `step`."""
    if dtype is not None and _dtype.to_dtype(dtype).limited:
        no_kernel("arange_cpu", _dtype.to_dtype(dtype))
    if end is None:
        start, end = 0, start
    if (start.__class__ is int and end.__class__ is int and step.__class__ is int
            and (dtype is None or _dtype.to_dtype(dtype) is _dtype.int64)):
        t = _int_range(start, end, step, device)
        if t is not None:
            return _finish(t, requires_grad)
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        dtype = _dtype.result_type(start, end, step)
    d = _dtype.to_dtype(dtype)
    if not d.is_floating_point and any(isinstance(v, float) for v in vals):
        # PyTorch converts the bounds to the integer type first: int64 counts with the
        # truncated values (a step that truncates to 0 is an error), the narrower types
        # count with the float ones and step by the truncated step
        ints = [int(v) for v in vals]
        if d is _dtype.int64:
            if ints[2] == 0:
                raise ValueError("step must be nonzero")
            start, end, step = ints
        else:
            n = max(int(math.ceil((end - start) / step)), 0)
            t = empty(n, dtype=d, device=device)
            get_kernel("arange", t.device.type)(t._array, ints[0], ints[2])
            return _finish(t, requires_grad)
    n = max(int(math.ceil((end - start) / step)), 0)
    t = empty(n, dtype=d, device=device)
    get_kernel("arange", t.device.type)(t._array, start, step)
    return _finish(t, requires_grad)


def _int_range(start, end, step, device):
    """arange of Python ints into int64 on the CPU, its bounds well inside int64 (so no
    wrap-around): the checks that then hold skipped, the same length and kernel call
    (arange(64) 9.5 -> ~3 us); None for anything else (a zero or wrong-signed step, a
    device), which the general path handles or refuses."""
    if (step == 0 or (end - start) * step < 0 or not -(1 << 62) < start < 1 << 62
            or not -(1 << 62) < end < 1 << 62 or not -(1 << 62) < step < 1 << 62):
        return None
    dev = factory_device(device)
    if dev.type != "cpu":
        return None
    t = _empty((max(int(math.ceil((end - start) / step)), 0),), _dtype.int64, dev)
    (_KERNELS.get(("arange", "cpu")) or get_kernel("arange", "cpu"))(t._array, start, step)
    return t


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None,
             layout=None):
    """`steps` evenly spaced values from `start` to `end` inclusive."""
    if dtype is not None and _dtype.to_dtype(dtype).limited:
        no_kernel("linspace_cpu", _dtype.to_dtype(dtype))
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    t = empty(steps, dtype=d, device=device)
    if steps == 1:                          # PyTorch: the start (not the end)
        t.fill_(start)
    elif steps:
        step = (end - start) / (steps - 1)
        get_kernel("linspace", t.device.type)(t._array, float(start), float(end), step)
    return _finish(t, requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    t = linspace(start, end, steps, dtype=_dtype.float64, device=device)
    d = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    return _finish((base ** t).to(d), requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    """An n x m identity matrix."""
    if dtype is not None and _dtype.to_dtype(dtype).limited:
        no_kernel("eye", _dtype.to_dtype(dtype), _dtype.UINTS)
    m = n if m is None else m
    if n.__class__ is int and m.__class__ is int and n >= 0 and m >= 0:
        d = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
        dev = factory_device(device)
        if (dev.type == "cpu" and n * m < _SMALL_FILL and not (d.is_half or d.limited)
                and _own_fill()):
            # zeros, then a 1 every m + 1 elements of the flat storage (the diagonal)
            t = _empty((n, m), d, dev)
            t._arr.fill(0)
            t._storage.data[:(n if n < m else m) * (m + 1):m + 1] = 1
            return _finish(t, requires_grad)
    t = zeros(n, m, dtype=dtype, device=device)
    k = builtins.min(n, m)
    if k:
        t.diagonal().fill_(1)
    return _finish(_fresh(t), requires_grad)


def _legacy_construct(self, *args, **kwargs):
    """`torch.Tensor(...)`: sizes -> uninitialised float tensor; data -> float copy (see
    `nbtorch._tensor_types`)."""
    from .._tensor_types import tensor_new
    tensor_new(self, args, kwargs)


from .creation_data import (_infer_dtype, _narrow_ints, _number_tensor,  # noqa: E402,F401
                            _plain_numbers_dtype, _to_numpy_data, as_tensor, asarray,
                            from_numpy, scalar_tensor, tensor)
