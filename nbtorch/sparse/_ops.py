"""Operations on sparse tensors: products with dense matrices, arithmetic, reductions and
softmax (transposes, selection, casts, copies and in-place updates: ``_shape.py``).

Errors follow PyTorch's types and messages (``add(sparse, dense) is not supported``,
``expected scalar type Float but found Double``...). Everything here runs on the CPU.
"""
import numpy as np

from .. import _dtype
from .._tensor import Tensor, wrap
from .._torch_extras import strided
from ..autograd import grad_mode
from ..autograd.function import renamed
from ._autograd import (Add, Coalesce, Scale, SparseMM, ToDense, from_values,
                        gather_at, values_of)
from ._build import check_cpu, coalesced, dense_of, keys, to_sparse_coo
from ._tensor import dense_only_error

__all__ = ["mm", "addmm", "sum", "softmax", "log_softmax", "route_mm", "route_matmul",
           "coalesce", "to_dense"]

_MM_DTYPES = (_dtype.float32, _dtype.float64)


def _recording(*ts):
    return grad_mode.STATE.enabled and any(isinstance(t, Tensor) and t.requires_grad
                                           for t in ts)


def coalesce(s):
    """``s.coalesce()``: duplicates summed, indices sorted (differentiable)."""
    if s.layout is not _coo():
        raise RuntimeError(f"coalesce expected sparse coordinate tensor layout but got "
                           f"{_word(s)}")
    if s._is_coalesced:
        return s
    return Coalesce.apply(s) if _recording(s) else coalesced(s)


def to_dense(s, dtype=None, *, masked_grad=None):
    """``s.to_dense()``: the strided tensor (a strided tensor returns itself)."""
    if s.layout is strided:
        return s if dtype is None else s.to(dtype)
    out = ToDense.apply(s) if _recording(s) else dense_of(s)
    return out if dtype is None else out.to(dtype)


def _coo():
    from .._torch_extras import sparse_coo
    return sparse_coo


def _word(t):
    return {"strided": "Strided", "sparse_coo": "Sparse", "sparse_csr": "SparseCsr"}.get(
        t.layout.name, str(t.layout))


# ---- products -------------------------------------------------------------------------

def _check_mm(s, d):
    check_cpu(d.device, "mm")
    if s.dim() != 2:
        raise RuntimeError(f"mm: expected a 2-D sparse matrix, got {s.dim()} dims")
    if s.dense_dim():
        raise NotImplementedError("mm: hybrid sparse tensors (dense dims in the values) "
                                  "are not supported by nbtorch")
    if d.dim() != 2:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(d.dim(), 1)}, {max(d.dim(), 1) - 1}], but got 1)")
    if d.layout is not strided:
        raise NotImplementedError("mm: sparse @ sparse is not supported by nbtorch (convert "
                                  "one operand with .to_dense())")
    if s.dtype is not d.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.type_name(s.dtype)} but found "
                           f"{_dtype.type_name(d.dtype)}")
    if s.dtype not in _MM_DTYPES:
        raise RuntimeError(f"\"addmm_sparse_dense\" not implemented for "
                           f"'{_dtype.type_name(s.dtype)}'")
    if s._shape[1] != d._shape[0]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s._shape[1]}, "
                           f"got {d._shape[0]}")


def _sparse_dense(s, d, sparse_grad):
    _check_mm(s, d)
    return (SparseMM if sparse_grad else _DenseGradMM).apply(s, d, sparse_grad)


_DenseGradMM = renamed(SparseMM, "MmBackward0")    # torch.mm's node: a dense gradient


def mm(mat1, mat2, reduce="sum"):
    """``torch.sparse.mm``: sparse (COO or CSR) @ dense -> dense. The sparse operand's
    gradient is sparse, with its coalesced pattern; the dense one's is dense.

    Example:
        >>> a = nbtorch.tensor([[0., 2.], [3., 0.]]).to_sparse()
        >>> nbtorch.sparse.mm(a, nbtorch.ones(2, 1))
        tensor([[2.],
                [3.]])
    """
    if reduce != "sum":
        raise NotImplementedError(f"torch.sparse.mm: reduce='{reduce}' is not supported by "
                                  "nbtorch (only 'sum')")
    if mat1.layout is strided:
        return route_mm(mat1, mat2) if mat2.layout is not strided else mat1.mm(mat2)
    return _sparse_dense(mat1, mat2, True)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``torch.sparse.addmm``: beta * mat + alpha * (mat1 @ mat2), mat1 sparse."""
    product = mm(mat1, mat2)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return product + (mat if beta == 1 else mat * beta)


def route_mm(a, b, out=None, op="mm"):
    """``torch.mm`` / ``torch.matmul`` with a sparse operand (from nbtorch/ops/linalg.py):
    sparse @ dense, and dense @ sparse as (sparse.T @ dense.T).T; a dense result whose
    sparse operand gets a dense gradient, as in PyTorch."""
    if out is not None:
        raise NotImplementedError(f"{op}: out= with a sparse operand is not supported by "
                                  "nbtorch")
    if a.layout is strided:
        if b.dim() != 2 or a.dim() != 2:
            raise NotImplementedError(f"{op}: dense @ sparse needs two matrices in nbtorch")
        from ._shape import transpose
        return _sparse_dense(transpose(b, 0, 1), a.t(), False).t()
    if op == "matmul" and b.dim() == 1:
        return _sparse_dense(a, b.unsqueeze(1), False).squeeze(1)
    return _sparse_dense(a, b, False)


def route_matmul(a, b, out=None):
    return route_mm(a, b, out, "matmul")


# ---- elementwise ------------------------------------------------------------------------

def _same_size(op, a, b):
    if a._shape != b._shape:
        raise RuntimeError(f"{op}: expected 'self' and 'other' to have same size, but self "
                           f"has size {list(a._shape)} while other has size "
                           f"{list(b._shape)} (FYI: {op} for sparse tensors does not "
                           f"support broadcasting)")


def _coalesce_for(s):
    """Coalesced `s` for an op that reads its values (differentiable)."""
    if s.is_sparse_csr:
        s = to_sparse_coo(s)
    return coalesce(s)


def add(self, other, *, alpha=1):
    """sparse + sparse (entries side by side; summed when both are coalesced)."""
    if not isinstance(other, Tensor) or other.layout is strided:
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    if self.is_sparse_csr or other.is_sparse_csr:
        out = add(to_sparse_coo(self), to_sparse_coo(other), alpha=alpha)
        return out.to_sparse_csr() if not out.requires_grad else out
    _same_size("add", self, other)
    return Add.apply(self, other, alpha)


def radd(self, other, *, alpha=1):
    """dense + sparse -> dense."""
    if isinstance(other, Tensor):
        d = to_dense(self)
        return other + (d if alpha == 1 else d * alpha)
    return NotImplemented


def sub(self, other, *, alpha=1):
    return add(self, other, alpha=-alpha)


def rsub(self, other):
    return other - to_dense(self) if isinstance(other, Tensor) else NotImplemented


def mul(self, other):
    """sparse * number, sparse * sparse (the common entries), sparse * dense (broadcast to
    the sparse shape): sparse results."""
    if not isinstance(other, Tensor):
        if isinstance(other, (bool, int, float, complex, np.number)):
            return Scale.apply(self, other, False)
        return NotImplemented
    if other.dim() == 0 and other.layout is strided and not other.requires_grad:
        return mul(self, other.item())
    s = _coalesce_for(self)
    if other.layout is strided:
        from ..ops._common import broadcast_shapes
        if broadcast_shapes(tuple(other._shape), tuple(s._shape)) != tuple(s._shape):
            raise RuntimeError(f"mul: the dense operand of shape {list(other.shape)} does not "
                               f"broadcast to the sparse shape {list(s.shape)}")
        picked = gather_at(other.expand(*s._shape), s._idx, s._shape)
        return from_values(s._idx, values_of(s) * picked, s._shape, True)
    _same_size("mul", self, other)
    o = _coalesce_for(other)
    sd = s._idx._shape[0]
    ka, kb = keys(s._idx._host(), s._shape[:sd]), keys(o._idx._host(), s._shape[:sd])
    _, ia, ib = np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    vals = values_of(s).index_select(0, wrap(ia)) * values_of(o).index_select(0, wrap(ib))
    return from_values(wrap(np.ascontiguousarray(s._idx._host()[:, ia])), vals, s._shape, True)


def div(self, other):
    if isinstance(other, (bool, int, float, np.number)) or \
            (isinstance(other, Tensor) and other.dim() == 0 and other.layout is strided):
        return Scale.apply(self, other if not isinstance(other, Tensor) else other.item(), True)
    raise dense_only_error(self, "div")


def _values_op(name):
    """A zero-preserving elementwise op applied to the values (sin(0) == 0 ...)."""
    def op(self, *args, **kwargs):
        s = _coalesce_for(self)
        return from_values(s._idx, getattr(values_of(s), name)(*args, **kwargs), s._shape,
                           True)
    op.__name__ = name
    op.__doc__ = f"``{name}`` of the values (zero stays zero), a sparse result."
    return op


UNARY = ("abs", "neg", "sin", "tan", "tanh", "sqrt", "relu", "square", "sign", "asin",
         "atan", "sinh", "asinh", "expm1", "log1p", "trunc", "floor", "ceil", "round", "pow")


# ---- reductions and softmax ---------------------------------------------------------------

def _dims(dim, ndim):
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out = []
    for d in dims:
        if not -ndim <= d < ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-ndim}, {ndim - 1}], but got {d})")
        out.append(d % ndim)
    return sorted(set(out))


def sum(input, dim=None, dtype=None):
    """``torch.sparse.sum``: the sum of all entries (a 0-d dense tensor), or over `dim`:
    a sparse tensor, or a dense one once every sparse dim is summed.

    Example:
        >>> s = nbtorch.tensor([[0., 2.], [3., 4.]]).to_sparse()
        >>> nbtorch.sparse.sum(s, 1).to_dense()
        tensor([2., 7.])
    """
    if input.layout is strided:
        return input.sum() if dim is None else input.sum(dim)
    s = input if dtype is None else input.to(dtype)
    c = _coalesce_for(s)
    v = values_of(c)
    if dim is None:
        return v.sum()
    sd = c._idx._shape[0]
    dims = _dims(dim, c.dim())
    sparse_dims = [d for d in dims if d < sd]
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_dims:
        v = v.sum(dense_dims)
    if len(sparse_dims) == sd:
        return v.sum(0)
    shape = [n for d, n in enumerate(c._shape) if d not in dims]
    if not sparse_dims:
        return from_values(c._idx, v, shape, True)
    keep = [d for d in range(sd) if d not in sparse_dims]
    idx = wrap(np.ascontiguousarray(c._idx._host()[keep]))
    return coalesce(from_values(idx, v, shape, False))


def _softmax(input, dim, dtype, log):
    s = input if dtype is None else input.to(dtype)
    c = _coalesce_for(s)
    v = values_of(c)
    sd = c._idx._shape[0]
    dim = _dims(dim, c.dim())[0]
    if dim >= sd:                       # along a dense dim: the values' own softmax
        out = v.log_softmax(dim - sd + 1) if log else v.softmax(dim - sd + 1)
        return from_values(c._idx, out, c._shape, True)
    other = [d for d in range(sd) if d != dim]
    idx = c._idx._host()
    group_keys = keys(idx[other], [c._shape[d] for d in other])
    uniq, gid = np.unique(group_keys, return_inverse=True)
    host = v.detach()._host()
    vmax = np.full((uniq.shape[0],) + host.shape[1:], -np.inf, host.dtype)
    np.maximum.at(vmax, gid, host)
    g = wrap(gid.astype(np.int64))
    shifted = v - wrap(vmax).index_select(0, g)
    e = shifted.exp()
    from ..ops.creation import zeros
    total = zeros(vmax.shape, dtype=v.dtype).index_add(0, g, e)
    out = shifted - total.log().index_select(0, g) if log else e / total.index_select(0, g)
    return from_values(c._idx, out, c._shape, True)


def softmax(input, dim, dtype=None):
    """``torch.sparse.softmax``: softmax over `dim` among the specified entries (those
    absent count as -inf), a sparse result with input's coalesced pattern."""
    return _softmax(input, dim, dtype, False)


def log_softmax(input, dim, dtype=None):
    """``torch.sparse.log_softmax`` (see `softmax`)."""
    return _softmax(input, dim, dtype, True)
