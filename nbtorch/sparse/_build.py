"""Making sparse tensors: `sparse_coo_tensor`, `sparse_csr_tensor` (with PyTorch's checks
and errors), coalescing, and the conversions between strided, COO and CSR.

Index work (validation, sorting, row pointers) runs on host NumPy arrays of the index
tensors; index bounds are always checked here, since the kernels do none.
"""
import numpy as np

from .. import _dtype
from .._tensor import Tensor, wrap
from .._torch_extras import sparse_coo, sparse_csr
from ._tensor import make_coo, make_csr

__all__ = ["sparse_coo_tensor", "sparse_csr_tensor", "coalesced", "keys", "csr_of",
           "dense_of", "to_sparse", "to_sparse_csr", "to_sparse_coo", "rebuild",
           "check_cpu"]


def check_cpu(device, op="sparse tensors"):
    """Sparse tensors live on the CPU only (no CUDA kernels yet): a clear refusal."""
    if device is not None and str(device).split(":")[0] != "cpu":
        raise NotImplementedError(
            f"{op}: nbtorch's sparse tensors are CPU-only so far (no CUDA sparse kernels); "
            f"got device {device}. Keep the sparse tensor on the CPU, or use .to_dense() "
            "before moving it")


def _as_tensor(x, dtype=None):
    from ..ops.creation import tensor
    if isinstance(x, Tensor):
        return x if dtype is None or x.dtype is dtype else x.to(dtype)
    return tensor(x, dtype=dtype)


def _int64(x):
    """Index tensor `x` as int64 on the CPU (a list, or any real tensor)."""
    t = _as_tensor(x)
    check_cpu(t.device)
    return t if t.dtype is _dtype.int64 else t.detach().to(_dtype.int64)


def keys(idx, sizes):
    """Linear (row-major) positions of the columns of host `idx` in a grid of `sizes`."""
    k = np.zeros(idx.shape[1], np.int64)
    for d, s in enumerate(sizes):
        k *= s
        k += idx[d]
    return k


def _check_size(size):
    size = tuple(int(s) for s in size)
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(size)}: {list(size)}")
    return size


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad=False, check_invariants=None,
                      is_coalesced=None):
    """A sparse COO tensor: ``values[k]`` at ``indices[:, k]`` (duplicates add up).

    `indices` is (sparse_dim, nnz); `values` is (nnz, *dense_dims) (hybrid tensors keep
    dense trailing dims). `size` defaults to the smallest that holds the indices.

    Example:
        >>> i = nbtorch.tensor([[0, 1, 1], [2, 0, 2]])
        >>> s = nbtorch.sparse_coo_tensor(i, nbtorch.tensor([3., 4., 5.]), (2, 3))
        >>> s.to_dense()
        tensor([[0., 0., 3.],
                [4., 0., 5.]])
    """
    check_cpu(device)
    idx = _int64(indices)
    vals = _as_tensor(values, dtype)
    check_cpu(vals.device)
    if vals.dim() == 0:
        vals = vals.reshape(1)
    if idx.dim() != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    sd, nnz = idx._shape
    if vals._shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from "
                           f"indices: {nnz}, nnz from values: {vals._shape[0]}")
    dense = tuple(vals._shape[1:])
    host = idx._host()
    if nnz:
        low = host.min(axis=1)
        for d in range(sd):
            if low[d] < 0:
                raise RuntimeError(f"found negative index {int(low[d])} for dim {d}")
    if size is None:
        size = tuple(int(m) + 1 for m in host.max(axis=1)) if nnz else (0,) * sd
        size += dense
    else:
        size = _check_size(size)
        if len(size) != sd + len(dense):
            raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: "
                               f"len(size) = {len(size)}, sparse_dim = {sd}, dense_dim = "
                               f"{len(dense)}")
        if dense != size[sd:]:
            raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sd:]]}, "
                               f"got {list(vals._shape)}")
        if nnz:
            high = host.max(axis=1)
            for d in range(sd):
                if high[d] >= size[d]:
                    raise RuntimeError(f"size is inconsistent with indices: for dim {d}, "
                                       f"size is {size[d]} but found index {int(high[d])}")
    if requires_grad and not (vals.dtype.is_floating_point or vals.dtype.is_complex):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           "gradients")
    flag = bool(is_coalesced) if is_coalesced is not None else False
    if vals.requires_grad and not requires_grad:
        from ._autograd import FromValues
        return FromValues.apply(vals, idx, size, flag)
    out = make_coo(idx, vals.detach(), size, flag)
    if requires_grad:
        out.requires_grad = True
    return out


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None,
                      device=None, pin_memory=False, requires_grad=False,
                      check_invariants=None):
    """A 2-D sparse CSR tensor: row i holds ``values[crow[i]:crow[i+1]]`` at columns
    ``col[crow[i]:crow[i+1]]`` (sorted and distinct within a row).

    The invariants are always checked (PyTorch checks them only when asked): the kernels
    trust them.
    """
    check_cpu(device)
    crow, col = _int64(crow_indices), _int64(col_indices)
    vals = _as_tensor(values, dtype).detach()
    check_cpu(vals.device)
    if crow.dim() != 1 or col.dim() != 1:
        raise NotImplementedError("sparse_csr_tensor: batched CSR tensors (crow_indices of "
                                  f"{crow.dim()} dims) are not supported by nbtorch")
    c, cols = crow._host(), col._host()
    if size is None:
        size = (c.shape[0] - 1, int(cols.max()) + 1 if cols.size else 0) + \
            tuple(vals._shape[1:])
    size = _check_size(size)
    if len(size) != 2 + vals.dim() - 1:
        raise RuntimeError(f"sparse_csr_tensor: size {list(size)} does not match 2 sparse "
                           f"dims and values of shape {list(vals.shape)}")
    _check_csr(c, cols, vals._shape[0], size[0], size[1])
    out = make_csr(crow, col, vals, size)
    if requires_grad:
        out.requires_grad = True
    return out


def _check_csr(crow, col, nnz, nrows, ncols):
    def need(ok, what):
        if not ok:
            raise RuntimeError(f"`{what}` is not satisfied.")
    if crow.shape[0] != nrows + 1:
        raise RuntimeError(f"crow_indices.shape[-1] must be equal to the number of rows + 1 "
                           f"(={nrows + 1}), but got {crow.shape[0]}")
    if col.shape[0] != nnz:
        raise RuntimeError(f"col_indices and values must have the same number of elements, "
                           f"but got {col.shape[0]} and {nnz}")
    need(crow[0] == 0, "crow_indices[..., 0] == 0")
    need(crow[-1] == nnz, "crow_indices[..., -1] == nnz")
    steps = np.diff(crow)
    need(steps.size == 0 or (steps.min() >= 0 and steps.max() <= ncols),
         "0 <= crow_indices[..., 1:] - crow_indices[..., :-1] <= ncols")
    need(col.size == 0 or (col.min() >= 0 and col.max() < ncols), "0 <= col_indices < ncols")
    inner = np.ones(col.shape[0], bool)            # within a row, col must increase
    inner[crow[1:-1][crow[1:-1] < col.shape[0]]] = False
    if col.shape[0]:
        inner[0] = False
    need(bool(np.all(np.diff(col)[inner[1:]] > 0)),
         "col_indices[..., crow_indices[..., i - 1]:crow_indices[..., i]] for all i = 1, "
         "..., nrows are sorted and distinct along the last dimension values")


# ---- coalescing and CSR of a COO tensor ---------------------------------------------------

def coalesced(s):
    """`s` with duplicates summed and indices sorted (no autograd; cached on `s`)."""
    if s._is_coalesced:
        return s
    c = s.__dict__.get("_coalesced_cache")
    if c is None:
        sd = s._idx._shape[0]
        idx = s._idx._host()
        k = keys(idx, s._shape[:sd])
        order = np.argsort(k, kind="stable")
        ks = k[order]
        first = np.ones(ks.shape[0], bool)
        first[1:] = ks[1:] != ks[:-1]
        starts = np.flatnonzero(first)
        vals = s._vals._host()
        if vals.dtype == np.bool_:
            summed = np.logical_or.reduceat(vals[order], starts, axis=0) if starts.size \
                else vals[:0]
        else:
            summed = np.add.reduceat(vals[order], starts, axis=0) if starts.size else vals[:0]
        c = make_coo(wrap(np.ascontiguousarray(idx[:, order[starts]])),
                     wrap(np.ascontiguousarray(summed, vals.dtype)), s._shape, True)
        s.__dict__["_coalesced_cache"] = c
    return c


def csr_of(s):
    """(crow, col, values) host arrays of 2-D COO `s` (coalesced first; cached)."""
    c = coalesced(s)
    got = c.__dict__.get("_csr")
    if got is None:
        from .._registry import get_kernel
        idx = c._idx._host()
        crow = np.empty(c._shape[0] + 1, np.int64)
        get_kernel("sparse_row_pointers", "cpu")(np.ascontiguousarray(idx[0]), c._shape[0],
                                                 crow)
        got = c.__dict__["_csr"] = (crow, np.ascontiguousarray(idx[1]),
                                    np.ascontiguousarray(c._vals._host()))
    return got


_SCATTER_DTYPES = {np.dtype(t) for t in (np.float32, np.float64, np.int32, np.int64)}


def dense_of(s):
    """The strided tensor of COO or CSR `s` (no autograd)."""
    if s.layout is sparse_csr:
        s = coo_of_csr(s)
    sd = s._idx._shape[0]
    n_sparse = int(np.prod(s._shape[:sd], dtype=np.int64))
    vals = s._vals._host()
    vals2 = np.ascontiguousarray(vals.reshape(vals.shape[0], int(np.prod(vals.shape[1:]))))
    out = np.zeros((n_sparse, vals2.shape[1]), vals.dtype)
    k = keys(s._idx._host(), s._shape[:sd])
    if vals.dtype in _SCATTER_DTYPES:
        from .._registry import get_kernel
        get_kernel("sparse_scatter_add", "cpu")(k, vals2, out)
    else:                               # float16, bfloat16 bits, bool, int8...: NumPy's
        np.add.at(out, k, vals2) if vals.dtype != np.bool_ else np.logical_or.at(out, k, vals2)
    return wrap(out.reshape(s._shape))


def coo_of_csr(s):
    """The (coalesced) COO tensor of CSR `s`, sharing its values."""
    crow = s._crow._host()
    rows = np.repeat(np.arange(s._shape[0], dtype=np.int64), np.diff(crow))
    idx = np.stack([rows, s._col._host()]) if rows.size else np.zeros((2, 0), np.int64)
    return make_coo(wrap(idx), s._vals, s._shape, True)


# ---- conversions -------------------------------------------------------------------------

def _dense_to_coo(x, sparse_dim):
    """COO of strided `x` with `sparse_dim` sparse dims: an entry per location whose dense
    part has a nonzero."""
    a = x.detach()._host()
    nd = a.ndim
    lead = a.reshape(a.shape[:sparse_dim] + (-1,)) if sparse_dim < nd else a[..., None]
    nz = (lead != 0).any(axis=-1)
    idx = np.stack(np.nonzero(nz)).astype(np.int64) if sparse_dim else \
        np.zeros((0, 1 if nz else 0), np.int64)
    if sparse_dim == 0:
        vals = a[None] if nz else a[None][:0]
    else:
        vals = a[tuple(idx)]
    return make_coo(wrap(np.ascontiguousarray(idx)), wrap(np.array(vals, copy=True)),
                    x._shape, True)


def to_sparse(x, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """``Tensor.to_sparse``: COO by default (`sparse_dim` leading sparse dims), or the
    given `layout`."""
    if layout is sparse_csr:
        return to_sparse_csr(x, dense_dim)
    if layout not in (None, sparse_coo):
        raise NotImplementedError(f"to_sparse: layout {layout} is not supported by nbtorch "
                                  "(sparse_coo and sparse_csr are)")
    if x.layout is sparse_coo:
        if sparse_dim is not None and sparse_dim != x.sparse_dim():
            raise RuntimeError("to_sparse: conversion from Sparse to Sparse with sparse_dim "
                               "argument !=self.sparse_dim() is not supported")
        return x
    if x.layout is sparse_csr:
        return to_sparse_coo(x)
    check_cpu(x.device, "to_sparse")
    nd = x.dim()
    if sparse_dim is None:
        sparse_dim = nd
    if not 0 <= sparse_dim <= nd:
        raise RuntimeError(f"dense_to_sparse: sparse_dim argument must be in [0,{nd}] range, "
                           f"but {sparse_dim} is given")
    if x.requires_grad:
        from ._autograd import ToSparse
        return ToSparse.apply(x, sparse_dim)
    return _dense_to_coo(x, sparse_dim)


def to_sparse_coo(x):
    if x.layout is sparse_csr:
        return coo_of_csr(x)
    return to_sparse(x)


def to_sparse_csr(x, dense_dim=None):
    """``Tensor.to_sparse_csr``: a 2-D strided or COO tensor in CSR format."""
    if x.layout is sparse_csr:
        return x
    if x.dim() != 2 or (x.layout is sparse_coo and x.dense_dim()):
        raise RuntimeError(f"to_sparse_csr: nbtorch supports 2-D tensors without dense dims "
                           f"(got a {x.dim()}-D tensor)")
    if x.requires_grad:
        raise NotImplementedError("to_sparse_csr: autograd through CSR conversion is not "
                                  "supported by nbtorch (use the COO layout)")
    coo = x if x.layout is sparse_coo else _dense_to_coo(x, 2)
    crow, col, vals = csr_of(coo)
    return make_csr(wrap(crow.copy()), wrap(col.copy()), wrap(vals.copy()), x._shape)


def rebuild(kind, *parts):
    """Unpickle a sparse tensor (`SparseTensor.__reduce_ex__`)."""
    if kind == "coo":
        idx, vals, size, flag = parts
        return make_coo(idx, vals, size, flag)
    crow, col, vals, size, _ = parts
    return make_csr(crow, col, vals, size)



def rebuild_torch(layout, parts):
    """``torch._utils._rebuild_sparse_tensor(layout, parts)`` of a checkpoint: COO parts
    (indices, values, size, is_coalesced), CSR parts (crow, col, values, size); checked as
    the constructors check user input."""
    if layout is sparse_coo:
        idx, vals, size, flag = parts
        out = sparse_coo_tensor(idx, vals, size)
        return out._coalesced_(flag) if flag and _sorted_unique(out) else out
    if layout is sparse_csr:
        crow, col, vals, size = parts
        return sparse_csr_tensor(crow, col, vals, size)
    raise RuntimeError(f"rebuilding a sparse tensor of layout {layout} is not supported")


def _sorted_unique(s):
    """True when the COO indices are strictly increasing (what coalesced promises)."""
    k = keys(s._idx._host(), s._shape[:s._idx._shape[0]])
    return bool(np.all(np.diff(k) > 0))
