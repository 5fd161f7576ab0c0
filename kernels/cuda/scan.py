"""Scans (cumsum, cumprod, cummax, cummin, logcumsumexp) along the middle axis of
(outer, n, inner) arrays.

Same contract as kernels/cpu/scan.py. One thread per column (o, k) walks i in
order (reversed if `reverse`); neighbouring threads read neighbouring columns::

    acc = identity; for i: acc (op)= a[o, i, k]; out[o, i, k] = acc

Sums, products and log-sum-exps accumulate in float64 (int64 for integers).

Few long scans (``plan`` in reduce.py: few outputs, long axis, e.g. the cumsum
of one long vector) take a block each instead: the axis is walked in chunks of
blockDim elements, each chunk scanned in shared memory (Hillis-Steele, log2
steps, in out's dtype) and offset by the running carry of the chunks before::

    for chunk: sh = a[chunk]; inclusive-scan(sh); out[chunk] = carry (op) sh; carry (op)= sh[-1]
"""
from numba import cuda
import numpy as np

from ..shared import log_add_exp
from ._launch import grid
from .reduce import BLOCK, plan

__all__ = ["cumsum", "cumprod", "cumextreme", "logcumsumexp", "typecheck_signatures"]


@cuda.jit(cache=True)
def sumprod_scan_kernel(a, out, acc0, product, reverse):
    """out[o, i, k] = sum (prod if product) of a[o, i', k] for i' <= i (>= i if reverse)."""
    outer, n, inner = a.shape
    for t in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = t // inner
        k = t - o * inner
        acc = acc0
        for s in range(n):
            i = n - 1 - s if reverse else s
            if product:
                acc *= a[o, i, k]
            else:
                acc += a[o, i, k]
            out[o, i, k] = acc


@cuda.jit(cache=True)
def sumprod_scan_blocks_kernel(a, out, acc0, product, reverse):
    """A block per column (o, k): chunked shared-memory scans chained by a carry."""
    sh = cuda.shared.array(BLOCK, out.dtype)
    outer, n, inner = a.shape
    tid, nt = cuda.threadIdx.x, cuda.blockDim.x
    for col in range(cuda.blockIdx.x, outer * inner, cuda.gridDim.x):
        o = col // inner
        k = col - o * inner
        carry = acc0
        for base in range(0, n, nt):
            s = base + tid
            i = n - 1 - s if reverse else s
            sh[tid] = a[o, i, k] if s < n else acc0
            cuda.syncthreads()
            off = 1
            while off < nt:
                w = sh[tid - off] if tid >= off else acc0
                cuda.syncthreads()
                if tid >= off:
                    sh[tid] = sh[tid] * w if product else sh[tid] + w
                cuda.syncthreads()
                off *= 2
            if s < n:
                out[o, i, k] = carry * sh[tid] if product else carry + sh[tid]
            carry = carry * sh[nt - 1] if product else carry + sh[nt - 1]
            cuda.syncthreads()


@cuda.jit(cache=True)
def extreme_scan_kernel(a, values, indices, want_max):
    """Running max (min) and its index; ties and NaN take the later index (as PyTorch)."""
    outer, n, inner = a.shape
    for t in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = t // inner
        k = t - o * inner
        m = a[o, 0, k]
        j = 0
        for i in range(n):
            v = a[o, i, k]
            if v != v or (m == m and (v >= m if want_max else v <= m)):
                m = v
                j = i
            values[o, i, k] = m
            indices[o, i, k] = j


@cuda.jit(cache=True)
def logcumsumexp_scan_kernel(a, out):
    """out[o, i, k] = log(sum_{i' <= i} exp(a[o, i', k])) in float64 (`shared.log_add_exp`)."""
    outer, n, inner = a.shape
    for t in range(cuda.grid(1), outer * inner, cuda.gridsize(1)):
        o = t // inner
        k = t - o * inner
        acc = -np.inf
        for i in range(n):
            acc = log_add_exp(acc, np.float64(a[o, i, k]))
            out[o, i, k] = acc


def _acc(dtype, value):
    return np.float64(value) if dtype.kind == "f" else np.int64(value)


def _grid(a3):
    return grid(a3.shape[0] * a3.shape[2])


def _sumprod(a3, out3, identity, product, reverse, stream):
    if out3.size == 0:
        return
    geometry, blocks = plan(a3)
    kernel = sumprod_scan_blocks_kernel if blocks else sumprod_scan_kernel
    kernel[geometry + (stream,)](a3, out3, _acc(a3.dtype, identity), product, bool(reverse))


def cumsum(a3, out3, reverse, stream=0):
    _sumprod(a3, out3, 0, False, reverse, stream)


def cumprod(a3, out3, reverse, stream=0):
    _sumprod(a3, out3, 1, True, reverse, stream)


def cumextreme(want_max):
    """The cummax (want_max) or cummin launcher ``(a3, values3, indices3)``."""
    def launcher(a3, values3, indices3, stream=0):
        if values3.size:
            from .reduce import _as_kernel_array
            extreme_scan_kernel[_grid(a3) + (stream,)](
                _as_kernel_array(a3), _as_kernel_array(values3), indices3, bool(want_max))
    launcher.__name__ = "cummax" if want_max else "cummin"
    return launcher


def logcumsumexp(a3, out3, stream=0):
    if out3.size:
        logcumsumexp_scan_kernel[_grid(a3) + (stream,)](a3, out3)


def typecheck_signatures():
    from numba import types as nt
    arr = lambda t: nt.Array(t, 3, "C")      # noqa: E731
    for t in (nt.float32, nt.float64, nt.int64):
        acc = nt.int64 if t == nt.int64 else nt.float64
        for kern in (sumprod_scan_kernel, sumprod_scan_blocks_kernel):
            yield (f"{kern.__name__}[{t}]", kern.py_func,
                   (arr(t), arr(t), acc, nt.boolean, nt.boolean))
    for t in (nt.float32, nt.float64, nt.int64, nt.int32, nt.int16, nt.int8, nt.uint8):
        yield (f"extreme_scan[{t}]", extreme_scan_kernel.py_func,
               (arr(t), arr(t), arr(nt.int64), nt.boolean))
    for t in (nt.float32, nt.float64):
        yield (f"logcumsumexp_scan[{t}]", logcumsumexp_scan_kernel.py_func, (arr(t), arr(t)))
