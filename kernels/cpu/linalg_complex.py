"""Determinants of complex matrices on the CPU: LAPACK's getrf through NumPy's gufuncs
(the real ones are in `linalg.py`; the Numba LU there is written for real dtypes).

Contracts (raw C-contiguous complex64/complex128 arrays, a leading batch dim)::

    det(a (B,n,n), out (B,))                           out[b] = det(a[b])
    slogdet(a, sign (B,) complex, logabs (B,) real)    det = sign * exp(logabs)
"""
import numpy as np

try:
    from numpy.linalg import _umath_linalg as _gufuncs
except ImportError:  # pragma: no cover - a NumPy that moved its private module
    _gufuncs = None

__all__ = ["det", "slogdet"]


def _char(a):
    return "F" if a.dtype == np.complex64 else "D"


def det(a, out):
    if a.shape[0] == 0:
        return
    c = _char(a)
    with np.errstate(all="ignore"):
        out[...] = (_gufuncs.det(a, signature=c + "->" + c) if _gufuncs is not None
                    else np.linalg.det(a))


def slogdet(a, sign, logabs):
    if a.shape[0] == 0:
        return
    c = _char(a)
    with np.errstate(all="ignore"):
        res = (_gufuncs.slogdet(a, signature=c + "->" + c + c.lower()) if _gufuncs is not None
               else np.linalg.slogdet(a))
    sign[...], logabs[...] = res
