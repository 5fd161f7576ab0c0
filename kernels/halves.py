"""float16 and bfloat16 around the kernels: Numba has neither (DESIGN.md), so kernels move
their bits as uint16 or compute in float32. Plain NumPy, shared by the CPU launchers."""
import numpy as np

__all__ = ["is_half", "bits", "round_to"]

_HALF_NAMES = ("float16", "bfloat16")


def is_half(np_dtype):
    """float16 or (ml_dtypes') bfloat16, tested by name so that asking does not import
    ml_dtypes; the size first, as NumPy's `dtype.name` is a Python property (~1 us)."""
    return np_dtype.itemsize == 2 and np_dtype.name in _HALF_NAMES


def bits(a):
    """Arrays the move-only kernels take: halves as uint16 bits, bools as uint8."""
    return a.view(np.uint16) if is_half(a.dtype) else (
        a.view(np.uint8) if a.dtype == np.bool_ else a)


def round_to(values, np_dtype):
    """NumPy `values` converted to `np_dtype` with PyTorch's rounding.

    PyTorch makes a float16 or bfloat16 from a float32 only, so a float64 or an
    integer is rounded to float32 first (twice, as PyTorch does); NumPy and
    `ml_dtypes` alone would round once. Every other conversion is NumPy's `astype`.
    """
    with np.errstate(over="ignore", invalid="ignore"):     # PyTorch does not warn
        if is_half(np_dtype) and values.dtype != np.float32 and values.dtype != np_dtype:
            values = values.astype(np.float32)
        return values.astype(np_dtype, copy=False)
