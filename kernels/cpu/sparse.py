"""Sparse kernels for the CPU: CSR row pointers, CSR x dense (SpMM), sampled dot products
(SpMM's gradient with respect to the sparse values) and scatter-add (to_dense).

Raw NumPy arrays in, caller-allocated outputs (zeroed by the caller where a kernel
accumulates; csr_mm overwrites its own). Indices are int64 and already validated by
`nbtorch.sparse` to lie inside the tensor's size: the kernels do no bounds checks. Dense operands are C-contiguous, so
every inner loop runs over one contiguous row (`out[i, :] += v * dense[j, :]`), which
LLVM vectorises. Each product has a serial and a parallel variant (parallel over output
rows, so no two threads write one row); the launcher picks by the work (nnz x columns).
"""
import numba

from . import openmp

__all__ = ["row_pointers", "csr_mm", "sampled_dot", "scatter_add_rows",
           "PARALLEL_MIN_WORK"]

# Multiply-adds (nnz x dense columns) from which the parallel kernels run. Measured on the
# 2-core machine at load ~5: serial 14 vs parallel 18 us at 6e4, 57 vs 61 us at 2.5e5,
# 104 vs 105 us at 1e6, 478 vs 371 us at 4e6, 1.13 vs 0.64 ms at 6.4e6 (SpMM 1e4 x 1e4,
# 1e5 nonzeros, 64 columns); at load ~7.5 the parallel variant's median was 5x the serial's.
PARALLEL_MIN_WORK = 1 << 20


@numba.njit(cache=True)
def row_pointers(rows, nrows, crow):
    """CSR row pointers of row indices `rows` (sorted or not), into `crow` (nrows + 1):

    crow[0] = 0; crow[r + 1] = crow[r] + count(rows == r).
    """
    crow[:] = 0
    for k in range(rows.shape[0]):
        crow[rows[k] + 1] += 1
    for r in range(nrows):
        crow[r + 1] += crow[r]


@numba.njit(cache=True)
def _csr_row(crow, col, values, dense, out, i):
    """out[i, :] = sum over k in crow[i]:crow[i+1] of values[k] * dense[col[k], :]."""
    o = out[i]
    o[:] = 0
    for k in range(crow[i], crow[i + 1]):
        v = values[k]
        d = dense[col[k]]
        for j in range(o.shape[0]):
            o[j] += v * d[j]


@numba.njit(cache=True)
def csr_mm_serial(crow, col, values, dense, out):
    """for i in rows: out[i, :] = sum_k values[k] * dense[col[k], :]."""
    for i in range(out.shape[0]):
        _csr_row(crow, col, values, dense, out, i)


@numba.njit(cache=True, parallel=True)
def csr_mm_parallel(crow, col, values, dense, out):
    """`csr_mm_serial` with the rows of `out` shared among threads."""
    for i in numba.prange(out.shape[0]):
        _csr_row(crow, col, values, dense, out, i)


def csr_mm(crow, col, values, dense, out):
    """``out = A @ dense`` for the CSR matrix A = (crow, col, values), shape (n, m).

    Args:
        crow: (n + 1,) int64 row pointers; col: (nnz,) int64 column indices in [0, m).
        values: (nnz,) values; dense: (m, p) C-contiguous, values' dtype.
        out: (n, p) C-contiguous, overwritten (each row zeroed by the thread that computes
            it: no separate pass over fresh pages).

    Example:
        >>> out = np.zeros((2, 1))
        >>> csr_mm(np.array([0, 1, 1]), np.array([1]), np.array([2.]), np.ones((2, 1)), out)
    """
    if values.shape[0] * out.shape[1] >= PARALLEL_MIN_WORK and openmp.USABLE:
        csr_mm_parallel(crow, col, values, dense, out)
    else:
        csr_mm_serial(crow, col, values, dense, out)


@numba.njit(cache=True)
def _dot_rows(rows, cols, a, b, out, k):
    """out[k] = dot(a[rows[k], :], b[cols[k], :])."""
    x = a[rows[k]]
    y = b[cols[k]]
    s = out.dtype.type(0)
    for j in range(x.shape[0]):
        s += x[j] * y[j]
    out[k] = s


@numba.njit(cache=True)
def sampled_dot_serial(rows, cols, a, b, out):
    """for k: out[k] = dot(a[rows[k], :], b[cols[k], :])."""
    for k in range(out.shape[0]):
        _dot_rows(rows, cols, a, b, out, k)


@numba.njit(cache=True, parallel=True)
def sampled_dot_parallel(rows, cols, a, b, out):
    """`sampled_dot_serial` with the entries shared among threads."""
    for k in numba.prange(out.shape[0]):
        _dot_rows(rows, cols, a, b, out, k)


def sampled_dot(rows, cols, a, b, out):
    """``out[k] = a[rows[k]] . b[cols[k]]``: the entries of ``a @ b.T`` at (rows, cols)
    only (SDDMM). With a = dL/d(S @ D) and b = D it is dL/dS at S's nonzeros.

    Args:
        rows, cols: (nnz,) int64; a: (n, p), b: (m, p) C-contiguous; out: (nnz,).
    """
    if out.shape[0] * a.shape[1] >= PARALLEL_MIN_WORK and openmp.USABLE:
        sampled_dot_parallel(rows, cols, a, b, out)
    else:
        sampled_dot_serial(rows, cols, a, b, out)


@numba.njit(cache=True)
def scatter_add_rows(keys, values2, out2):
    """for k: out2[keys[k], :] += values2[k, :] (duplicate keys add up; out2 zeroed).

    `keys` are the linear positions of the sparse indices in the sparse dims; the rows
    of `values2` are the (flattened) dense parts of the values.
    """
    for k in range(keys.shape[0]):
        o = out2[keys[k]]
        v = values2[k]
        for j in range(o.shape[0]):
            o[j] += v[j]
