"""Elementwise CPU kernels: the scalar bodies of `kernels/scalar.py` as Numba ufuncs.

`get(name)` builds ``numba.vectorize(cache=True)(scalar.<name>)`` on first use:
a lazy DUFunc that compiles one loop per input dtype signature (and loads it
from the on-disk cache in later runs). Called as ``ufunc(a, b, out)``, NumPy's
ufunc machinery handles strided and broadcast operands without copies.
"""
import numba

from nbtorch.kernels import scalar

_UFUNCS = {}


def get(name):
    """The ufunc for scalar body `name` (compiled lazily per dtype)."""
    u = _UFUNCS.get(name)
    if u is None:
        u = _UFUNCS[name] = numba.vectorize(cache=True)(getattr(scalar, name))
    return u
