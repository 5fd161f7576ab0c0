"""Strided copy with dtype conversion and fill: the kernels behind `copy_`, `to(dtype)`, `fill_`.

Both reuse the elementwise machinery of `gridstride.py` (flat and strided
grid-stride templates, broadcasting by stride 0, dims merged, float16 through
float32)::

    copy:  for every index i of dst:   dst[i] = src[i]      (src broadcast; cast on store)
    fill:  for every index i of dst:   dst[i] = value
"""
from . import gridstride
from ._launch import strided_view

__all__ = ["copy", "fill", "copy_", "fill_"]


def identity(a):
    """The copy body: the value itself (the store into `dst` converts the dtype)."""
    return a


gridstride.register_body("copy", identity)


def copy(dst, src, stream=0):
    """dst[...] = src (device arrays; `src` broadcast to dst's shape, cast to its dtype)."""
    gridstride.launch("copy", dst, (src,), stream)


def fill(dst, value, stream=0):
    """dst[...] = value, where `value` is a NumPy scalar of dst's dtype."""
    gridstride.launch("copy", dst, (value,), stream)


def _view(storage, offset, strides, shape):
    """The strided device view of `shape` over a flat device storage (no copy)."""
    item = storage.dtype.itemsize
    return strided_view(storage, tuple(shape), tuple(s * item for s in strides), offset * item)


def copy_(dst, dst_offset, dst_strides, src, src_offset, src_strides, shape, stream=0):
    """The "cuda" kernel of copy_: the CPU's contract (flat storages, element offsets and
    strides, `src_strides` broadcast to `shape`), on device storages."""
    copy(_view(dst, dst_offset, dst_strides, shape),
         _view(src, src_offset, src_strides, shape), stream)


def fill_(dst, dst_offset, dst_strides, shape, value, stream=0):
    """The "cuda" kernel of fill_ (the CPU's contract, on a device storage)."""
    fill(_view(dst, dst_offset, dst_strides, shape), dst.dtype.type(value), stream)


def typecheck_signatures():
    """copy for every (source, destination) dtype pair, fill for every dtype (flat layout)."""
    from numba import types as nt
    from numba.np.numpy_support import from_dtype
    import numpy as np
    dtypes = [np.dtype(d) for d in ("float16", "float32", "float64", "int8", "int16",
                                    "int32", "int64", "uint8", "bool")]
    for src in dtypes:
        kind = "H" if src == np.float16 else "A"
        k = gridstride._build("copy", kind, "flat").py_func
        for dst in dtypes:
            yield (f"copy[{src}->{dst}]", k, (nt.Array(from_dtype(dst), 1, "C"),
                                              nt.Array(from_dtype(src), 1, "C")))
        fk = gridstride._build("copy", "h" if src == np.float16 else "S", "flat").py_func
        yield (f"fill[{src}]", fk, (nt.Array(from_dtype(src), 1, "C"),
                                    from_dtype(np.float32 if src == np.float16 else src)))
    yield ("copy[strided]", gridstride._build("copy", "A", "strided").py_func,
           (nt.Array(nt.float32, 4, "A"), nt.Array(nt.int64, 4, "A")))
