"""`make_tensor`: a random tensor of a given shape, dtype and device, as ``torch.testing``'s.

Values are uniform in ``[low, high)`` (integers: `randint`), with PyTorch's default
range per dtype (bool [0, 2), uint8 [0, 10), signed integers [-9, 10), floating [-9, 9))
and its clamping of `low`/`high` to what the dtype can represent.
"""
import collections.abc
import math
import warnings

from .. import _dtype

__all__ = ["make_tensor"]

_INTEGRAL = (_dtype.uint8, _dtype.int8, _dtype.int16, _dtype.int32, _dtype.int64)
_FLOATING = (_dtype.float16, _dtype.bfloat16, _dtype.float32, _dtype.float64)


def _low_high(low, high, dtype, lowest, highest, default_low, default_high):
    """Validate and clamp the user's range (PyTorch's `modify_low_high`)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype in _FLOATING:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. "
                      "Use `torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, "
                         f"{high}), but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype not in _FLOATING:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of `shape` with values drawn uniformly from ``[low, high)``.

    Args:
        shape: ints, or one sequence of ints.
        dtype, device: of the result (keyword-only, required).
        low, high: the range; None takes the dtype's default (see the module docstring),
            values outside the dtype's finite range are clamped to it.
        requires_grad: floating dtypes only (ValueError otherwise).
        noncontiguous: every other element of a twice-as-wide last dimension (ignored
            below two elements); exclusive with `memory_format`.
        exclude_zero: replace zeros by 1 (integers, bool) or ``finfo(dtype).tiny``.

    Example:
        >>> make_tensor(2, 3, dtype=nbtorch.float32, device="cpu", low=-1, high=1).shape
        torch.Size([2, 3])
    """
    import nbtorch
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    if requires_grad and (dtype is _dtype.bool or dtype in _INTEGRAL):
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is _dtype.bool:
        low, high = _low_high(low, high, dtype, 0, 2, 0, 2)
        result = nbtorch.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _INTEGRAL:
        info = nbtorch.iinfo(dtype)
        low, high = _low_high(low, high, dtype, info.min,
                              info.max + (1 if dtype is not _dtype.int64 else 0), -9, 10)
        result = nbtorch.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING:
        info = nbtorch.finfo(dtype)
        low, high = _low_high(low, high, dtype, info.min, info.max, -9, 9)
        result = nbtorch.empty(shape, device=device, dtype=dtype)
        if high - low >= info.max:          # the width would overflow: draw half, double
            result.uniform_(low / 2, high / 2).mul_(2)
        else:
            result.uniform_(low, high)
    elif dtype in (_dtype.complex64, _dtype.complex128):
        part = dtype.to_real()          # real and imaginary parts each in [low, high)
        info = nbtorch.finfo(part)
        low, high = _low_high(low, high, part, info.min, info.max, -9, 9)
        result = nbtorch.complex(nbtorch.empty(shape, device=device, dtype=part)
                                 .uniform_(low, high),
                                 nbtorch.empty(shape, device=device, dtype=part)
                                 .uniform_(low, high))
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "torch.testing.make_tensor(). To request support, file an issue at: "
                        "https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if dtype not in _FLOATING else nbtorch.finfo(dtype).tiny
    if dtype in _FLOATING or dtype.is_complex:
        result.requires_grad = requires_grad
    return result
