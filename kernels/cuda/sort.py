"""Sorting and counting on CUDA: row sorts by rank, mode, unique runs, bincount, histc.

Contracts of kernels/cpu/sort.py. Rows up to BITONIC_MAX elements sort in
shared memory, a block per row: a bitonic network over (value, index) pairs
padded to a power of two, ordered by value then index -- a total order, so
the result is the stable sort::

    for size = 2, 4, ..P: for stride = size/2 .. 1: compare-exchange (t, t ^ stride)

Longer rows use a rank sort, one thread per element (O(n) work each)::

    rank(i) = #{j : a[j] before a[i]} + #{j < i : a[j] ties a[i]}
    values[r, rank(i)] = a[r, i]; indices[r, rank(i)] = i

NaN sorts as the largest value (last ascending, first descending) and equal
values keep their order in both directions, as the CPU's stable merge sort.
`mode` and `unique_runs` walk sorted rows (a thread per row / one thread);
`bincount` and `histc` count with atomic adds; `searchsorted` runs a binary search
per value (one thread each).
"""
import numpy as np
from numba import cuda

from ..shared import sorted_runs, search_sorted
from ._launch import SIMULATOR, THREADS, grid
from .reduce import _as_kernel_array

BITONIC_MAX = 16 if SIMULATOR else 2048     # shared-memory pairs per row (32 KiB at 8+8 B)

__all__ = ["sort", "mode", "unique_runs", "bincount", "histc", "searchsorted",
           "typecheck_signatures"]


@cuda.jit(device=True)
def _before(x, y, descending):
    """x strictly precedes y (NaN is the largest value)."""
    if descending:
        if x != x:
            return y == y
        return y == y and x > y
    if y != y:
        return x == x
    return x == x and x < y


@cuda.jit(cache=True)
def rank_sort_kernel(a, values, indices, descending):
    rows, n = a.shape
    for t in range(cuda.grid(1), rows * n, cuda.gridsize(1)):
        r = t // n
        i = t - r * n
        v = a[r, i]
        rank = 0
        for j in range(n):
            u = a[r, j]
            if _before(u, v, descending):
                rank += 1
            elif j < i and not _before(v, u, descending):
                rank += 1
        values[r, rank] = v
        indices[r, rank] = i


@cuda.jit(device=True)
def _precedes(v, i, u, j, n, descending):
    """(v, i) sorts before (u, j): padding (index >= n) last, then by value, then index."""
    if i >= n:
        return False
    if j >= n:
        return True
    if _before(v, u, descending):
        return True
    if _before(u, v, descending):
        return False
    return i < j


@cuda.jit(cache=True)
def bitonic_sort_kernel(a, values, indices, descending, P):
    """A block per row: bitonic sort of (a[r, i], i) pairs padded to P (a power of 2)."""
    shv = cuda.shared.array(BITONIC_MAX, a.dtype)
    shi = cuda.shared.array(BITONIC_MAX, indices.dtype)
    rows, n = a.shape
    tid, nt = cuda.threadIdx.x, cuda.blockDim.x
    for r in range(cuda.blockIdx.x, rows, cuda.gridDim.x):
        for t in range(tid, P, nt):
            shv[t] = a[r, t] if t < n else a[r, 0]
            shi[t] = t
        cuda.syncthreads()
        size = 2
        while size <= P:
            stride = size // 2
            while stride > 0:
                for t in range(tid, P, nt):
                    partner = t ^ stride
                    if partner > t:
                        up = (t & size) == 0
                        if _precedes(shv[partner], shi[partner], shv[t], shi[t], n,
                                     descending) == up:
                            v = shv[t]
                            shv[t] = shv[partner]
                            shv[partner] = v
                            k = shi[t]
                            shi[t] = shi[partner]
                            shi[partner] = k
                cuda.syncthreads()
                stride //= 2
            size *= 2
        for t in range(tid, n, nt):
            values[r, t] = shv[t]
            indices[r, t] = shi[t]
        cuda.syncthreads()


@cuda.jit(cache=True)
def mode_kernel(values, indices, out_values, out_indices):
    """Per sorted row: the longest run (smallest value on ties) and its last index."""
    rows, n = values.shape
    for r in range(cuda.grid(1), rows, cuda.gridsize(1)):
        best_len = 0
        best_end = 0
        start = 0
        for i in range(1, n + 1):
            if i == n or values[r, i] != values[r, i - 1]:
                if i - start > best_len:
                    best_len = i - start
                    best_end = i - 1
                start = i
        out_values[r] = values[r, best_end]
        out_indices[r] = indices[r, best_end]


@cuda.jit(cache=True)
def unique_runs_kernel(values, order, uniques, inverse, counts, n_runs):
    """One thread: runs of equal sorted values (each NaN its own run); n_runs[0] = count."""
    if cuda.grid(1) == 0:
        n_runs[0] = sorted_runs(values, order, uniques, inverse, counts)


@cuda.jit(cache=True)
def bincount_kernel(x, weights, out, weighted):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        cuda.atomic.add(out, x[i], weights[i] if weighted else 1)


@cuda.jit(cache=True)
def histc_kernel(x, out, lo, hi):
    bins = out.size
    width = (hi - lo) / bins
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        v = x[i]
        if v >= lo and v <= hi:
            b = int((v - lo) / width) if width > 0 else 0
            if b >= bins:
                b = bins - 1
            cuda.atomic.add(out, b, 1)


@cuda.jit(cache=True)
def searchsorted_kernel(seq, vals, out, right):
    """out[r, j] = insertion point of vals[r, j] in seq[r] (seq[0] if seq has one row)."""
    rows, m = vals.shape
    for t in range(cuda.grid(1), rows * m, cuda.gridsize(1)):
        r = t // m
        j = t - r * m
        out[r, j] = search_sorted(seq[0] if seq.shape[0] == 1 else seq[r], vals[r, j], right)


def searchsorted(seq2, vals2, out2, right, stream=0):
    """The CPU kernel's contract (kernels/cpu/sort.py); float16 compares in float32."""
    if out2.size == 0:
        return
    if seq2.dtype == np.float16:
        from . import copy
        s32 = cuda.device_array(seq2.shape, np.float32, stream=stream)
        v32 = cuda.device_array(vals2.shape, np.float32, stream=stream)
        copy.copy(s32, seq2, stream)
        copy.copy(v32, vals2, stream)
        seq2, vals2 = s32, v32
    searchsorted_kernel[grid(out2.size) + (stream,)](
        _as_kernel_array(seq2), _as_kernel_array(vals2), out2, bool(right))


def sort(a2, values2, indices2, descending, stream=0):
    """values2/indices2[r] = stable sort of a2[r] (descending if asked)."""
    if a2.size == 0:
        return
    a2, values2 = _as_kernel_array(a2), _as_kernel_array(values2)
    rows, n = a2.shape
    if n <= BITONIC_MAX:
        P = 1 << max(0, (n - 1).bit_length())
        bitonic_sort_kernel[grid(rows * THREADS) + (stream,)](a2, values2, indices2,
                                                             bool(descending), P)
    else:
        rank_sort_kernel[grid(a2.size) + (stream,)](a2, values2, indices2, bool(descending))


def mode(values2, indices2, out_values1, out_indices1, stream=0):
    if out_values1.size:
        mode_kernel[grid(values2.shape[0]) + (stream,)](
            _as_kernel_array(values2), indices2, _as_kernel_array(out_values1), out_indices1)


def unique_runs(values, order, uniques, inverse, counts, stream=0):
    """Fill the runs of sorted `values`; returns their number (a host int: one sync)."""
    n_runs = cuda.device_array(1, np.int64, stream=stream)
    unique_runs_kernel[1, 1, stream](values, order, uniques, inverse, counts, n_runs)
    return int(n_runs.copy_to_host(stream=stream)[0])


def bincount(x, weights, out, stream=0):
    """out[x[i]] += weights[i] (no weights, size 0: += 1)."""
    if x.size:
        weighted = weights.size > 0
        bincount_kernel[grid(x.size) + (stream,)](x, weights if weighted else out, out,
                                                  weighted)


def histc(x, out, lo, hi, stream=0):
    if x.size:
        histc_kernel[grid(x.size) + (stream,)](x, out, float(lo), float(hi))


def typecheck_signatures():
    from numba import types as nt
    i2, i1 = nt.Array(nt.int64, 2, "C"), nt.Array(nt.int64, 1, "C")
    for t in (nt.float32, nt.float64, nt.int64, nt.int32, nt.int16, nt.int8, nt.uint8):
        a2, a1 = nt.Array(t, 2, "C"), nt.Array(t, 1, "C")
        yield (f"rank_sort[{t}]", rank_sort_kernel.py_func, (a2, a2, i2, nt.boolean))
        yield (f"bitonic_sort[{t}]", bitonic_sort_kernel.py_func,
               (a2, a2, i2, nt.boolean, nt.int64))
        yield (f"mode[{t}]", mode_kernel.py_func, (a2, i2, a1, i1))
        for o in (nt.int64, nt.int32):
            yield (f"searchsorted[{t},{o}]", searchsorted_kernel.py_func,
                   (a2, a2, nt.Array(o, 2, "C"), nt.boolean))
        yield (f"unique_runs[{t}]", unique_runs_kernel.py_func,
               (nt.Array(t, 1, "A"), i1, a1, i1, i1, i1))
    for t in (nt.float32, nt.float64):
        a1 = nt.Array(t, 1, "C")
        yield (f"histc[{t}]", histc_kernel.py_func, (a1, a1, nt.float64, nt.float64))
    for t in (nt.int64, nt.float32, nt.float64):
        yield (f"bincount[{t}]", bincount_kernel.py_func,
               (i1, nt.Array(t, 1, "C"), nt.Array(t, 1, "C"), nt.boolean))
