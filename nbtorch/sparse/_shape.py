"""Sparse tensors' transposes, selection, casts, copies and in-place updates (the Tensor
methods `t`, `transpose`, `index_select`, `to`, `clone`, `detach`, `add_`, `mul_`,
`zero_` of ``nbtorch/sparse``)."""
import numpy as np

from .. import _dtype
from .._tensor import Tensor, wrap
from .._torch_extras import strided
from ..autograd import grad_mode
from ._autograd import Clone, ToDtype, Transpose, from_values, values_of
from ._build import check_cpu
from ._ops import _coalesce_for, _dims, add, mul
from ._tensor import dense_only_error, make_coo

__all__ = ["t", "transpose", "index_select", "to", "clone", "detach", "add_", "mul_",
           "zero_"]


# ---- layout changes, casts and copies ---------------------------------------------------

def t(self):
    sd, dd = self.sparse_dim(), self.dense_dim()
    if self.is_sparse_csr:
        raise NotImplementedError("t() of a sparse_csr tensor gives a sparse_csc one, a "
                                  "layout nbtorch does not support (convert with "
                                  ".to_sparse_coo() first)")
    if sd > 2 or dd:
        raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                           f"but got {sd} sparse and {dd} dense dimensions")
    return self if self.dim() < 2 else transpose(self, 0, 1)


def transpose(self, dim0, dim1):
    if self.is_sparse_csr:
        return t(self)
    d0, d1 = _dims(dim0, self.dim())[0], _dims(dim1, self.dim())[0]
    if d0 == d1:
        return self
    sd = self.sparse_dim()
    if d0 >= sd or d1 >= sd:
        raise NotImplementedError("transpose: swapping dense dims of a hybrid sparse tensor "
                                  "is not supported by nbtorch")
    return Transpose.apply(self, d0, d1)


def to(self, *args, **kwargs):
    dtype, device = None, None
    for a in args:
        if isinstance(a, _dtype.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif a is not None and not isinstance(a, bool):
            device = a
    dtype = kwargs.get("dtype", dtype)
    device = kwargs.get("device", device)
    check_cpu(device, "to")
    out = self
    if dtype is not None and dtype is not self.dtype:
        out = ToDtype.apply(self, dtype)
    if kwargs.get("copy") and out is self:
        out = Clone.apply(self)
    return out


def clone(self, *, memory_format=None):
    return Clone.apply(self)


def detach(self):
    from ._tensor import make_csr
    if self.is_sparse:
        return make_coo(self._idx, self._vals, self._shape, self._is_coalesced,
                        storage=self._storage)
    return make_csr(self._crow, self._col, self._vals, self._shape, storage=self._storage)


def _replace(self, other):
    """In place: self takes `other`'s entries (add_, mul_, zero_); its version moves."""
    self.__dict__.update({k: v for k, v in other.__dict__.items()
                          if k in ("_idx", "_crow", "_col", "_vals", "_is_coalesced")})
    self.__dict__.pop("_coalesced_cache", None)
    self._bump()
    return self


def add_(self, other, *, alpha=1):
    if not isinstance(other, Tensor) or other.layout is strided:
        raise RuntimeError("add_(sparse, dense) is not supported: a sparse tensor can only "
                           "take a sparse one in place")
    with grad_mode.no_grad():
        return _replace(self, add(self.detach(), other.detach(), alpha=alpha))


def mul_(self, other):
    with grad_mode.no_grad():
        return _replace(self, mul(self.detach(), other))


def zero_(self):
    sd = self.sparse_dim()
    empty_idx = wrap(np.zeros((sd, 0), np.int64))
    vals = self._vals[:0].clone()
    return _replace(self, make_coo(empty_idx, vals, self._shape, True))


# ---- selection ------------------------------------------------------------------------

def index_select(self, dim, index):
    """``s.index_select(dim, index)`` of a COO tensor: the slices at `index` along `dim`
    (repeats allowed), a sparse result."""
    from ._autograd import IndexSelect
    if self.is_sparse_csr:
        raise dense_only_error(self, "index_select")
    dim = _dims(dim, self.dim())[0]
    idx = np.asarray(index.detach()._host() if isinstance(index, Tensor) else index,
                     np.int64).reshape(-1)
    size = self._shape[dim]
    if idx.size and (idx.min() < -size or idx.max() >= size):
        raise IndexError("index out of range in self")
    idx = np.where(idx < 0, idx + size, idx)
    sd = self._idx._shape[0]
    if dim >= sd:                       # a dense dim: the values' own index_select
        s = _coalesce_for(self)
        shape = list(s._shape)
        shape[dim] = idx.size
        return from_values(s._idx, values_of(s).index_select(dim - sd + 1, wrap(idx)), shape,
                           True)
    return IndexSelect.apply(_coalesce_for(self), dim, idx)   # unique entries: each
    # position's gradient is then gathered once
