"""Strided copy with dtype conversion and fill: the kernels behind `copy_`, `to(dtype)`, `fill_`.

Both reuse the elementwise machinery of `pointwise.py` (flat and strided
grid-stride templates, broadcasting by stride 0, dims merged, float16 through
float32)::

    copy:  for every index i of dst:   dst[i] = src[i]      (src broadcast; cast on store)
    fill:  for every index i of dst:   dst[i] = value
"""
from . import pointwise

__all__ = ["copy", "fill"]


def identity(a):
    """The copy body: the value itself (the store into `dst` converts the dtype)."""
    return a


pointwise.register_body("copy", identity)


def copy(dst, src, stream=0):
    """dst[...] = src (device arrays; `src` broadcast to dst's shape, cast to its dtype)."""
    pointwise.launch("copy", dst, (src,), stream)


def fill(dst, value, stream=0):
    """dst[...] = value, where `value` is a NumPy scalar of dst's dtype."""
    pointwise.launch("copy", dst, (value,), stream)
