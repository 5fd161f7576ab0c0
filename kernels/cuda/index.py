"""Gather/scatter through int64 storage offsets on CUDA: the kernels behind advanced indexing.

Contract of the "take"/"put" ops (nbtorch/ops/indexing.py): the op layer turns
an index expression into host int64 storage offsets, validated against the
bounds; the launcher copies them to the device explicitly (on the current
stream, never an implicit copy) and runs::

    take: for i (grid-stride): out[i] = src[offsets[i]]
    put:  for i (grid-stride): dst[offsets[i]] = values[i]     (repeats: one write wins)
    put, accumulate: cuda.atomic.add(dst, offsets[i], values[i])   (repeats accumulate)
    scatter_reduce: for s (grid-stride): dst[targets[s]] = reduce(values of run s)

scatter_reduce takes its sources grouped by target (the op sorts the offsets on the
host), so one thread owns each written element: no atomics, and a deterministic order.

Atomic adds exist for 32/64-bit ints and floats; other dtypes accumulate in
one serial thread (float16 through a float32 copy, bool as a plain put: a sum
of trues is true). Everything moves bits only otherwise (float16 as uint16).
"""
import numpy as np
from numba import cuda

from ..shared import reduce_segment
from ._launch import SIMULATOR, grid

__all__ = ["take", "put", "scatter_reduce", "to_device", "bits", "typecheck_signatures"]

_ATOMIC = {np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64)}


@cuda.jit(cache=True)
def take_kernel(src, offsets, out):
    """for i: out[i] = src[offsets[i]]."""
    for i in range(cuda.grid(1), offsets.size, cuda.gridsize(1)):
        out[i] = src[offsets[i]]


@cuda.jit(cache=True)
def put_kernel(dst, offsets, values):
    """for i: dst[offsets[i]] = values[i]."""
    for i in range(cuda.grid(1), offsets.size, cuda.gridsize(1)):
        dst[offsets[i]] = values[i]


@cuda.jit(cache=True)
def put_add_atomic_kernel(dst, offsets, values):
    """for i: dst[offsets[i]] += values[i], atomically (repeats accumulate)."""
    for i in range(cuda.grid(1), offsets.size, cuda.gridsize(1)):
        cuda.atomic.add(dst, offsets[i], values[i])


@cuda.jit(cache=True)
def put_add_serial_kernel(dst, offsets, values):
    """One thread: for i: dst[offsets[i]] += values[i] (dtypes without atomics)."""
    if cuda.grid(1) == 0:
        for i in range(offsets.size):
            dst[offsets[i]] += values[i]


@cuda.jit(cache=True)
def segment_reduce_kernel(dst, targets, starts, values, mode, include_self):
    """for s: dst[targets[s]] = reduce(dst[targets[s]], values[starts[s]:starts[s + 1]])."""
    for s in range(cuda.grid(1), targets.size, cuda.gridsize(1)):
        reduce_segment(dst, targets[s], values, starts[s], starts[s + 1], mode, include_self)


def to_device(a, stream=0):
    """`a` as a contiguous device array: device arrays pass, host arrays are copied on `stream`."""
    if not isinstance(a, np.ndarray):      # a device array (real or simulated)
        return a
    return cuda.to_device(np.ascontiguousarray(a), stream=stream)


def bits(a):
    """float16 and bool device arrays as same-size unsigned ints (kernels only move bits)."""
    if SIMULATOR or a.dtype not in (np.float16, np.bool_):
        return a
    return a.view(np.uint16 if a.dtype == np.float16 else np.uint8)


def _flat(a, stream):
    """A contiguous 1-D device view of `a` (a copy when `a` is not contiguous)."""
    if a.is_c_contiguous():
        return a.reshape(a.size)
    from . import copy
    tmp = cuda.device_array(a.shape, a.dtype, stream=stream)
    copy.copy(tmp, a, stream)
    return tmp.reshape(a.size)


def take(src, offsets, out, stream=0):
    """out[i] = src[offsets[i]]: `src` a whole flat device storage, `out` a contiguous 1-D
    device array, `offsets` int64 (host or device): the CPU kernel's contract."""
    if offsets.size == 0:
        return
    offs = to_device(offsets, stream)
    take_kernel[grid(offs.size) + (stream,)](bits(src), offs, bits(out))


def put(dst, offsets, values, accumulate, stream=0):
    """dst[offsets[i]] = (or +=) values[i]: `dst` a whole flat device storage, `values` a
    1-D device array."""
    if offsets.size == 0:
        return
    offs = to_device(offsets, stream)
    values = _flat(values, stream)
    launch = grid(offs.size) + (stream,)
    if not accumulate or dst.dtype == np.bool_:
        put_kernel[launch](bits(dst), offs, bits(values))
    elif dst.dtype in _ATOMIC:
        put_add_atomic_kernel[launch](dst, offs, values)
    elif dst.dtype == np.float16:
        from . import copy
        tmp = cuda.device_array(dst.shape, np.float32, stream=stream)
        v32 = cuda.device_array(values.shape, np.float32, stream=stream)
        copy.copy(tmp, dst, stream)
        copy.copy(v32, values, stream)
        put_add_atomic_kernel[launch](tmp, offs, v32)
        copy.copy(dst, tmp, stream)
    else:
        put_add_serial_kernel[1, 1, stream](dst, offs, values)


def scatter_reduce(dst, targets, starts, values, mode, include_self, stream=0):
    """The CPU kernel's contract (kernels/cpu/index.py) on device arrays; `targets` and
    `starts` are host int64 arrays, copied on `stream`. float16 reduces in float32."""
    if targets.size == 0:
        return
    tg, st = to_device(targets, stream), to_device(starts, stream)
    values = _flat(values, stream)
    launch = grid(tg.size) + (stream,)
    if dst.dtype == np.float16:
        from . import copy
        tmp = cuda.device_array(dst.shape, np.float32, stream=stream)
        v32 = cuda.device_array(values.shape, np.float32, stream=stream)
        copy.copy(tmp, dst, stream)
        copy.copy(v32, values, stream)
        segment_reduce_kernel[launch](tmp, tg, st, v32, mode, include_self)
        copy.copy(dst, tmp, stream)
    else:
        segment_reduce_kernel[launch](bits(dst) if dst.dtype == np.bool_ else dst, tg, st,
                                      bits(values) if dst.dtype == np.bool_ else values,
                                      mode, include_self)


def typecheck_signatures():
    from numba import types as nt
    arr = lambda t: nt.Array(t, 1, "C")      # noqa: E731
    i64 = arr(nt.int64)
    for t in (nt.float32, nt.float64, nt.int64, nt.int32, nt.int16, nt.int8, nt.uint8,
              nt.uint16):
        yield (f"take[{t}]", take_kernel.py_func, (arr(t), i64, arr(t)))
        yield (f"put[{t}]", put_kernel.py_func, (arr(t), i64, arr(t)))
        yield (f"put_add_serial[{t}]", put_add_serial_kernel.py_func, (arr(t), i64, arr(t)))
        if t != nt.uint16:                  # float16 reduces in float32
            yield (f"segment_reduce[{t}]", segment_reduce_kernel.py_func,
                   (arr(t), i64, i64, arr(t), nt.int64, nt.boolean))
    for t in (nt.float32, nt.float64, nt.int64, nt.int32):
        yield (f"put_add_atomic[{t}]", put_add_atomic_kernel.py_func, (arr(t), i64, arr(t)))
