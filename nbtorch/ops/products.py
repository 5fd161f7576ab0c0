"""Products that build bigger tensors: kron, tensordot, cross, cartesian_prod,
combinations, block_diag.

All are compositions: tensordot is a permute + reshape around one matmul (so BLAS does
the work); kron a broadcast multiply of reshaped views; cross six multiplies of
narrowed components. Autograd and every device follow from those ops.
"""
import itertools

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ._common import normalize_dim, tensor_method, broadcast_shapes

__all__ = ["kron", "tensordot", "cross", "cartesian_prod", "combinations", "block_diag"]


@tensor_method()
def kron(self, other):
    """The Kronecker product: block (i, j) of the result is self[i, j] * other.

    Example:
        >>> nbtorch.kron(nbtorch.eye(2), nbtorch.ones(2, 2)).shape
        nbtorch.Size([4, 4])
    """
    nd = max(self.dim(), other.dim())
    a = self.reshape((1,) * (nd - self.dim()) + tuple(self._shape))
    b = other.reshape((1,) * (nd - other.dim()) + tuple(other._shape))
    a_shape = [v for n in a._shape for v in (n, 1)]      # (a0, 1, a1, 1, ...)
    b_shape = [v for n in b._shape for v in (1, n)]      # (1, b0, 1, b1, ...)
    out = a.reshape(a_shape) * b.reshape(b_shape)
    return out.reshape(tuple(m * n for m, n in zip(a._shape, b._shape)))


def tensordot(a, b, dims=2, out=None):
    """Sum of products over dims `dims` of a (its last ones for an int) and of b (its first).

    Example:
        >>> nbtorch.tensordot(nbtorch.ones(2, 3), nbtorch.ones(3, 4), dims=1).shape
        nbtorch.Size([2, 4])
    """
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.dim() or dims > b.dim():
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims="
                               f"{dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a pair of dim lists or an int")
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
        da = [normalize_dim(d, a.dim()) for d in da]
        db = [normalize_dim(d, b.dim()) for d in db]
    for i, j in zip(da, db):
        if a._shape[i] != b._shape[j]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a._shape[i]} in dim {i} and second has size "
                               f"{b._shape[j]} in dim {j}")
    free_a = [d for d in range(a.dim()) if d not in da]
    free_b = [d for d in range(b.dim()) if d not in db]
    k = int(np.prod([a._shape[d] for d in da], dtype=np.int64))
    m = int(np.prod([a._shape[d] for d in free_a], dtype=np.int64))
    n = int(np.prod([b._shape[d] for d in free_b], dtype=np.int64))
    a2 = a.permute(free_a + da).reshape(m, k)
    b2 = b.permute(db + free_b).reshape(k, n)
    res = a2.matmul(b2).reshape(tuple(a._shape[d] for d in free_a) +
                                tuple(b._shape[d] for d in free_b))
    if out is not None:
        out.copy_(res)
        return out
    return res


def _cross(op, a, b, dim):
    if a.dim() != b.dim():
        raise RuntimeError(f"{op}: inputs must have the same number of dimensions.")
    shape = broadcast_shapes(a._shape, b._shape)
    if dim is None:                       # torch.cross's deprecated default: first size-3 dim
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError(f"{op}: no dimension of size 3 in input")
    d = normalize_dim(dim, len(shape))
    if a._shape[d] != 3 or b._shape[d] != 3:
        raise RuntimeError(f"{op}: inputs dimension {d} must have length 3. Got "
                           f"{a._shape[d]} and {b._shape[d]}")
    a, b = a.expand(shape), b.expand(shape)
    a0, a1, a2 = (a.narrow(d, i, 1) for i in range(3))
    b0, b1, b2 = (b.narrow(d, i, 1) for i in range(3))
    from .joining import cat
    return cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


@tensor_method()
def cross(self, other, dim=None, *, out=None):
    """The 3-vector cross product along `dim` (by default the first dim of size 3)."""
    res = _cross("linalg.cross", self, other, dim)
    if out is not None:
        out.copy_(res)
        return out
    return res


def linalg_cross(input, other, *, dim=-1, out=None):
    """`torch.linalg.cross`: the cross product along `dim` (default the last)."""
    res = _cross("linalg.cross", input, other, dim)
    if out is not None:
        out.copy_(res)
        return out
    return res


def _vectors(op, tensors):
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    return tensors


def cartesian_prod(*tensors):
    """All tuples (a_i, b_j, ...) of 1-D tensors as rows of an (N, k) tensor (1-D for k=1)."""
    _vectors("cartesian_prod", tensors)
    if len(tensors) == 1:
        return tensors[0]
    from .joining import meshgrid, stack
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-`r` combinations of a 1-D tensor's elements, as rows (itertools order)."""
    _vectors("combinations", (input,))
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        from .creation import empty
        return empty(0, dtype=input.dtype, device=input.device)
    n = input._shape[0]
    gen = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = np.array(list(gen(range(n), r)), dtype=np.int64).reshape(-1, r)
    from .creation import tensor
    rows = input[tensor(idx.reshape(-1), device=input.device)]
    return rows.reshape(idx.shape[0], r) if r > 1 else rows


def block_diag(*tensors):
    """A block-diagonal matrix from 0-, 1- or 2-D tensors (zeros elsewhere)."""
    mats = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.dim()} dimensions")
        mats.append(t.reshape(1, -1) if t.dim() < 2 else t)
    from .creation import zeros
    from .joining import cat
    if not mats:
        return zeros(1, 0)
    dtype = mats[0].dtype
    for m in mats[1:]:
        dtype = _dtype.promote_types(dtype, m.dtype)
    total = sum(m._shape[1] for m in mats)
    rows, start = [], 0
    for m in mats:
        c = m._shape[1]
        parts = [zeros(m._shape[0], start, dtype=dtype, device=m.device), m.to(dtype),
                 zeros(m._shape[0], total - start - c, dtype=dtype, device=m.device)]
        rows.append(cat(parts, 1))
        start += c
    return cat(rows, 0)
