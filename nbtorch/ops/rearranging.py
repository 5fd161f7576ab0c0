"""Rearranging without arithmetic: atleast_nd, the h/v/d/column/row stacks and splits,
rot90 and take_along_dim. Each is a composition of views, cat and gather, so autograd
and every device come from those ops.
"""
from .._tensor import Tensor
from ._common import normalize_dim, tensor_method
from .joining import cat

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "dstack",
           "column_stack", "row_stack", "hsplit", "vsplit", "dsplit", "rot90",
           "take_along_dim"]


def _atleast(nd, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(_atleast(nd, (t,)) for t in tensors[0])
    out = []
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"atleast_{nd}d(): argument must be a Tensor, not "
                            f"{type(t).__name__}")
        if t.dim() >= nd:
            out.append(t)
        elif nd == 1 or t.dim() == 0:
            out.append(t.reshape((1,) * nd))
        elif nd == 2:                    # 1-D (n,) -> (1, n)
            out.append(t.unsqueeze(0))
        else:                            # (n,) -> (1, n, 1); (m, n) -> (m, n, 1)
            out.append(t.reshape((1, t._shape[0], 1)) if t.dim() == 1 else t.unsqueeze(-1))
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*tensors):
    """Views with at least one dim (0-d -> (1,)); several tensors give a tuple."""
    return _atleast(1, tensors)


def atleast_2d(*tensors):
    """Views with at least two dims ((n,) -> (1, n))."""
    return _atleast(2, tensors)


def atleast_3d(*tensors):
    """Views with at least three dims ((n,) -> (1, n, 1), (m, n) -> (m, n, 1))."""
    return _atleast(3, tensors)


def _seq(op, tensors):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return list(tensors)


def hstack(tensors, *, out=None):
    """Concatenate column-wise: along dim 0 for 1-D inputs, dim 1 otherwise."""
    ts = [atleast_1d(t) for t in _seq("hstack", tensors)]
    return cat(ts, 0 if ts[0].dim() == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    """Concatenate row-wise (1-D inputs become rows)."""
    return cat([atleast_2d(t) for t in _seq("vstack", tensors)], 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """Concatenate depth-wise (along dim 2, after atleast_3d)."""
    return cat([atleast_3d(t) for t in _seq("dstack", tensors)], 2, out=out)


def column_stack(tensors, *, out=None):
    """Concatenate along dim 1, 0-d and 1-D inputs becoming columns."""
    ts = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t
          for t in _seq("column_stack", tensors)]
    return cat(ts, 1, out=out)


def _dsplit_like(op, x, sections, dim, min_dim):
    if x.dim() < min_dim:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_dim} dimension, "
                           f"but got a tensor with {x.dim()} dimensions!")
    if isinstance(sections, int):
        n = x._shape[dim]
        if sections == 0 or n % sections:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but "
                               f"the size of the dimension {n} is not divisible by the "
                               f"split_size {sections}!")
    return x.tensor_split(sections, dim)


@tensor_method()
def hsplit(self, indices_or_sections):
    """tensor_split along dim 1 (dim 0 for 1-D tensors); sections must divide evenly."""
    return _dsplit_like("hsplit", self, indices_or_sections, 1 if self.dim() > 1 else 0, 1)


@tensor_method()
def vsplit(self, indices_or_sections):
    """tensor_split along dim 0 of a tensor with at least 2 dims."""
    return _dsplit_like("vsplit", self, indices_or_sections, 0, 2)


@tensor_method()
def dsplit(self, indices_or_sections):
    """tensor_split along dim 2 of a tensor with at least 3 dims."""
    return _dsplit_like("dsplit", self, indices_or_sections, 2, 3)


@tensor_method()
def rot90(self, k=1, dims=(0, 1)):
    """Rotate by 90 degrees k times in the plane of `dims` (from the first toward the second).

    Example:
        >>> nbtorch.tensor([[1, 2], [3, 4]]).rot90()
        tensor([[2, 4],
                [1, 3]])
    """
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if self.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.dim()}")
    d0, d1 = normalize_dim(dims[0], self.dim()), normalize_dim(dims[1], self.dim())
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} "
                           f"and dim1 = {d1}")
    k %= 4
    if k == 1:
        return self.flip(d1).transpose(d0, d1)
    if k == 2:
        return self.flip((d0, d1))
    if k == 3:
        return self.flip(d0).transpose(d0, d1)
    return self.clone()


@tensor_method()
def take_along_dim(self, indices, dim=None):
    """Values at `indices` along `dim` (indices broadcast against self elsewhere); with
    dim=None, of the flattened tensor."""
    if not isinstance(indices, Tensor) or indices.dtype.is_floating_point or \
            indices.dtype.name == "bool":
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but "
                           f"got {getattr(indices, 'dtype', type(indices).__name__)}")
    if dim is None:
        return self.reshape(-1).gather(0, indices.reshape(-1))
    if self.dim() != indices.dim():
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {self.dim()} dimensions for input, "
                           f"and {indices.dim()} dimensions for indices")
    d = normalize_dim(dim, self.dim())
    from ._common import broadcast_shapes
    s_self, s_idx = list(self._shape), list(indices._shape)
    s_self[d] = s_idx[d] = 1
    shape = list(broadcast_shapes(tuple(s_self), tuple(s_idx)))
    shape_self, shape_idx = list(shape), list(shape)
    shape_self[d], shape_idx[d] = self._shape[d], indices._shape[d]
    return self.expand(shape_self).gather(d, indices.expand(shape_idx))
