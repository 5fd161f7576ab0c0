"""Sorting and counting kernels: row sorts (stable), unique runs, bincount, histc,
searchsorted.

`sort_rows` sorts every row of a C-contiguous (rows, n) array with a stable
merge sort; NaN sorts as the largest value (last ascending, first descending)
and equal values keep their order in both directions, as PyTorch's stable sort.
"""
import numba
import numpy as np

from ..halves import is_half
from ..shared import sorted_runs, search_sorted


@numba.njit(cache=True)
def _before(x, y):
    """x sorts before y: ascending, NaN last (NumPy's and PyTorch's order)."""
    return x < y or (y != y and x == x)


@numba.njit(cache=True)
def _merge_pass(keys, src, dst, width):
    """Merge the sorted runs of `width` in src into dst; on ties the left run first."""
    n = src.size
    for lo in range(0, n, 2 * width):
        mid = min(lo + width, n)
        hi = min(lo + 2 * width, n)
        i, j = lo, mid
        for k in range(lo, hi):
            if j < hi and (i >= mid or _before(keys[src[j]], keys[src[i]])):
                dst[k] = src[j]
                j += 1
            else:
                dst[k] = src[i]
                i += 1


@numba.njit(cache=True)
def stable_argsort(keys, order, tmp):
    """order = the stable ascending argsort of 1-D `keys` (NaN last), by insertion-sorted
    runs of 16 merged bottom-up; `tmp` is scratch of the same size. (Numba's own
    np.argsort(kind="mergesort") compiles for 6-7 s a signature; this, well under 1 s.)"""
    n = keys.size
    for i in range(n):
        order[i] = i
    for lo in range(0, n, 16):                     # insertion sort within runs of 16
        for i in range(lo + 1, min(lo + 16, n)):
            v = order[i]
            j = i
            while j > lo and _before(keys[v], keys[order[j - 1]]):
                order[j] = order[j - 1]
                j -= 1
            order[j] = v
    width, in_order = 16, True
    while width < n:
        if in_order:
            _merge_pass(keys, order, tmp, width)
        else:
            _merge_pass(keys, tmp, order, width)
        in_order = not in_order
        width *= 2
    if not in_order:
        for i in range(n):
            order[i] = tmp[i]


@numba.njit(cache=True)
def sort_rows(a, values, indices, descending):
    """for r: indices[r] = stable argsort of a[r] (descending: by -value, ties in order);
    values[r] = a[r][indices[r]]."""
    rows, n = a.shape
    buf = np.empty(n, a.dtype)
    order = np.empty(n, np.int64)
    tmp = np.empty(n, np.int64)
    for r in range(rows):
        row = a[r]
        if descending:
            # a stable ascending sort of the reversed row, read backwards, is a
            # stable descending sort of the row
            for i in range(n):
                buf[i] = row[n - 1 - i]
            stable_argsort(buf, order, tmp)
            for i in range(n):
                src = n - 1 - order[n - 1 - i]
                indices[r, i] = src
                values[r, i] = row[src]
        else:
            for i in range(n):
                buf[i] = row[i]
            stable_argsort(buf, order, tmp)
            for i in range(n):
                indices[r, i] = order[i]
                values[r, i] = row[order[i]]


@numba.njit(cache=True)
def unique_sorted(values, order, uniques, inverse, counts):
    """Runs of equal values in sorted `values` (`shared.sorted_runs`); their number."""
    return sorted_runs(values, order, uniques, inverse, counts)


@numba.njit(cache=True)
def bincount(x, weights, out):
    """out[x[i]] += weights[i] (weights of size 0: += 1); x validated non-negative."""
    if weights.size == 0:
        for i in range(x.size):
            out[x[i]] += 1
    else:
        for i in range(x.size):
            out[x[i]] += weights[i]


@numba.njit(cache=True)
def histc(x, out, lo, hi):
    """out[b] = #{x in bin b} for `out.size` equal bins over [lo, hi]; others ignored."""
    bins = out.size
    width = (hi - lo) / bins
    for i in range(x.size):
        v = x[i]
        if v >= lo and v <= hi:
            b = int((v - lo) / width) if width > 0 else 0
            if b >= bins:
                b = bins - 1
            out[b] += 1


@numba.njit(cache=True)
def mode_rows(values, indices, out_values, out_indices):
    """For each sorted row (stable sort: `values`, original `indices`): the value of the
    longest run of equal values (the smallest on ties) and the last index it came from."""
    rows, n = values.shape
    for r in range(rows):
        v = values[r]
        best_len = 0
        best_end = 0
        start = 0
        for i in range(1, n + 1):
            if i == n or v[i] != v[i - 1]:
                if i - start > best_len:
                    best_len = i - start
                    best_end = i - 1
                start = i
        out_values[r] = v[best_end]
        out_indices[r] = indices[r, best_end]


@numba.njit(cache=True)
def searchsorted_rows(seq, vals, out, right):
    """out[r, j] = insertion point of vals[r, j] in the sorted row seq[r] (seq[0] for every r
    when seq has one row; `shared.search_sorted`)."""
    shared_row = seq.shape[0] == 1
    for r in range(vals.shape[0]):
        row = seq[0] if shared_row else seq[r]
        for j in range(vals.shape[1]):
            out[r, j] = search_sorted(row, vals[r, j], right)


# ---- launchers: the "cpu" kernels of sort, mode, unique (kernels/cpu/table.py) --------
# (bincount and histc are registered as the kernels above, called as they are)

def sort(a2, values2, indices2, descending):
    if a2.dtype == np.bool_:                       # bools sort as uint8 (same order)
        a2, values2 = a2.view(np.uint8), values2.view(np.uint8)
    sort_rows(a2, values2, indices2, descending)


def mode(values2, indices2, out_values1, out_indices1):
    if values2.dtype == np.bool_:
        values2, out_values1 = values2.view(np.uint8), out_values1.view(np.uint8)
    mode_rows(values2, indices2, out_values1, out_indices1)


def unique_runs(values, order, uniques, inverse, counts):
    """The number of distinct values; fills uniques/inverse/counts from sorted values."""
    return int(unique_sorted(values, order, uniques, inverse, counts))


def searchsorted(seq2, vals2, out2, right):
    """The "cpu" kernel of searchsorted: seq2 (1 or rows, n) sorted rows, vals2 and out2
    (rows, m) (out int64 or int32), both inputs of one dtype (halves compare in float32)."""
    if is_half(seq2.dtype):
        seq2, vals2 = seq2.astype(np.float32), vals2.astype(np.float32)
    elif seq2.dtype == np.bool_:
        seq2, vals2 = seq2.view(np.uint8), vals2.view(np.uint8)
    searchsorted_rows(seq2, vals2, out2, right)
