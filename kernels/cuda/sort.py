"""Sorting and counting on CUDA: row sorts by rank, mode, unique runs, bincount, histc.

Contracts of kernels/cpu/sort.py. `sort` is a stable rank sort, one thread
per element (O(n) work each, so O(n^2) per row: fine for the rows nbtorch
sorts today; a bitonic or radix sort is the next step for long rows)::

    rank(i) = #{j : a[j] before a[i]} + #{j < i : a[j] ties a[i]}
    values[r, rank(i)] = a[r, i]; indices[r, rank(i)] = i

NaN sorts as the largest value (last ascending, first descending) and equal
values keep their order in both directions, as the CPU's stable merge sort.
`mode` and `unique_runs` walk sorted rows (a thread per row / one thread);
`bincount` and `histc` count with atomic adds.
"""
import numpy as np
from numba import cuda

from ._launch import grid
from .reduce import _as_kernel_array

__all__ = ["sort", "mode", "unique_runs", "bincount", "histc", "typecheck_signatures"]


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
    if cuda.grid(1) != 0:
        return
    u = -1
    for i in range(values.size):
        v = values[i]
        if i == 0 or v != values[i - 1]:
            u += 1
            uniques[u] = v
            counts[u] = 0
        counts[u] += 1
        inverse[order[i]] = u
    n_runs[0] = u + 1


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


def sort(a2, values2, indices2, descending, stream=0):
    """values2/indices2[r] = stable sort of a2[r] (descending if asked)."""
    if a2.size:
        rank_sort_kernel[grid(a2.size) + (stream,)](
            _as_kernel_array(a2), _as_kernel_array(values2), indices2, bool(descending))


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
        yield (f"mode[{t}]", mode_kernel.py_func, (a2, i2, a1, i1))
        yield (f"unique_runs[{t}]", unique_runs_kernel.py_func,
               (nt.Array(t, 1, "A"), i1, a1, i1, i1, i1))
    for t in (nt.float32, nt.float64):
        a1 = nt.Array(t, 1, "C")
        yield (f"histc[{t}]", histc_kernel.py_func, (a1, a1, nt.float64, nt.float64))
    for t in (nt.int64, nt.float32, nt.float64):
        yield (f"bincount[{t}]", bincount_kernel.py_func,
               (i1, nt.Array(t, 1, "C"), nt.Array(t, 1, "C"), nt.boolean))
