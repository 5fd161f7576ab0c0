"""Python numbers meeting tensors of a narrower type, as PyTorch treats them.

Two rules (PyTorch's), one function each:

- `wrap`: an operand of arithmetic, comparison or `where` (a "wrapped number")
  is cast like a C integer: ``uint8_tensor + 300`` adds 44, ``-2 // uint8_tensor``
  divides 254.
- `checked`: a value stored into a tensor (`fill_`, `full`, `masked_fill`, clamp
  bounds, pad values) must fit: a float must lie within the type's range, an int
  within [min, max] (for unsigned types [-max, max], so -1 fills 255); otherwise
  RuntimeError "value cannot be converted to type uint8_t without overflow".
"""
import math

__all__ = ["wrap", "checked"]

_C_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
            "int64": "int64_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "float32": "float", "float64": "double", "bool": "bool", "uint16": "uint16_t",
            "uint32": "uint32_t", "uint64": "uint64_t"}


_INT_LO, _UINT_HI = -(1 << 63), (1 << 64) - 1     # what a wrapped Python int may be


def _int_range(dtype):
    bits = dtype.itemsize * 8
    if dtype.name == "uint8":
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def wrap(x, dtype):
    """`x` as `dtype`'s NumPy scalar, integers wrapping modulo 2**bits as in C, floats
    beyond the type's range becoming inf without NumPy's overflow warning (PyTorch's).
    A Python int must fit int64 or uint64, as PyTorch unpacks it (OverflowError beyond)."""
    if dtype.limited:                   # uint16-64, float8: c10's conversions
        from ._limited import cast
        import numpy as np
        return cast(np.asarray(x), dtype)[()]
    if x.__class__ is int and not _INT_LO <= x <= _UINT_HI:
        raise OverflowError("int too big to convert" if x > 0 else
                            "can't convert negative int to unsigned")
    if x.__class__ is float and dtype.is_floating_point and abs(x) > _finfo_max(dtype) \
            and math.isfinite(x):
        import numpy as np
        with np.errstate(over="ignore"):
            return dtype.np.type(x)
    try:
        return dtype.np.type(x)
    except OverflowError:
        if dtype.is_floating_point or dtype.name == "bool":
            raise
        lo, hi = _int_range(dtype)
        span = hi - lo + 1
        return dtype.np.type((int(x) - lo) % span + lo)


def _overflow(dtype):
    return RuntimeError(f"value cannot be converted to type {_C_NAMES.get(dtype.name, dtype.name)}"
                        f" without overflow")


def checked(x, dtype):
    """`x` (a Python number) as a value of `dtype` (wrapped where PyTorch allows it),
    or RuntimeError where PyTorch's checked conversion refuses it."""
    if isinstance(x, bool) or dtype.name == "bool" or getattr(dtype, "is_complex", False):
        return x
    if dtype.is_floating_point:       # halves too (PyTorch 2.13: fill_(1e10) on float16)
        if isinstance(x, float) and math.isfinite(x) and abs(x) > float(_finfo_max(dtype)):
            raise _overflow(dtype)
        return x
    lo, hi = _int_range(dtype)
    if isinstance(x, float):
        if not math.isfinite(x) or x < lo or x > hi:
            raise _overflow(dtype)
        return int(x)
    x = int(x)
    if not -(1 << 64) < x < (1 << 64):
        raise OverflowError("int too big to convert")
    if lo == 0:                          # unsigned: -max..max allowed (two's complement)
        if x > hi or x < -hi:
            raise _overflow(dtype)
    elif x < lo or x > hi:
        raise _overflow(dtype)
    return (x - lo) % (hi - lo + 1) + lo


def _finfo_max(dtype):
    m = _FINFO_MAX.get(dtype)
    if m is None:
        from ._dtype import finfo
        m = _FINFO_MAX[dtype] = float(finfo(dtype).max)
    return m


_FINFO_MAX = {}        # floating dtype -> its largest finite value (a float)
