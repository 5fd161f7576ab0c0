"""Helpers every op module uses: broadcasting, dim checks, operands, method attachment."""
import numpy as np

from .._device import CPU, to_device
from .._tensor import Tensor, empty, wrap
from .._registry import get_kernel

__all__ = ["broadcast_shapes", "sum_to", "selection_grad", "unbroadcast", "normalize_dim", "normalize_dims",
           "check_same_device", "tensor_method", "as_array", "result_device", "empty",
           "wrap", "get_kernel", "Tensor", "CPU", "to_device"]


def broadcast_shapes(*shapes):
    """The broadcast of `shapes` (PyTorch/NumPy rules); RuntimeError naming them if none."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s, ndim - len(s)):
            if n != out[i]:
                if out[i] == 1:
                    out[i] = n
                elif n != 1:
                    raise RuntimeError(_broadcast_error(shapes, i, ndim))
    return tuple(out)


def _broadcast_error(shapes, i, ndim):
    a, b = shapes[0], shapes[1] if len(shapes) > 1 else shapes[0]
    da = a[i - (ndim - len(a))] if i >= ndim - len(a) else 1
    db = b[i - (ndim - len(b))] if i >= ndim - len(b) else 1
    return (f"The size of tensor a ({da}) must match the size of tensor b ({db}) at "
            f"non-singleton dimension {i}")


def sum_to(t, shape):
    """Sum `t` down to `shape` (undo broadcasting). RuntimeError if not broadcastable."""
    shape = tuple(shape)
    if t._shape == shape:
        return t
    lead = t.dim() - len(shape)
    if lead < 0:
        raise RuntimeError(f"size {list(t.shape)} is not expandable to size {list(shape)}")
    dims = list(range(lead))
    for i, n in enumerate(shape):
        m = t._shape[lead + i]
        if n == 1 and m != 1:
            dims.append(lead + i)
        elif n != m and not (n == 1 or m == 1):
            raise RuntimeError(f"size {list(t.shape)} is not expandable to size {list(shape)}")
        elif m == 1 and n != 1:
            raise RuntimeError(f"size {list(t.shape)} is not expandable to size {list(shape)}")
    if len(dims) == lead:               # only leading dims to drop: one fresh reduction
        return t.sum(dim=tuple(dims)) if dims else t.reshape(shape)
    t = t.sum(dim=tuple(dims), keepdim=True)
    if lead:
        t = t.reshape(shape)
    return t


unbroadcast = sum_to


def selection_grad(ctx, g):
    """The gradient of values picked from the input at the saved `indices` along
    `ctx.dim` (sort, topk, cummax/cummin): g added into zeros of the input's shape
    (`ctx.in_meta` = shape, dtype, device); a 0-d input's is g itself."""
    from .creation import zeros
    indices, = ctx.saved_tensors
    shape, dtype, device = ctx.in_meta
    if not shape:
        return g
    return zeros(shape, dtype=dtype, device=device).scatter_add(ctx.dim, indices, g)


def normalize_dim(dim, ndim):
    """A dim in [0, ndim) from one in [-ndim, ndim) (0-d tensors accept 0 and -1)."""
    if dim.__class__ is int and -ndim <= dim < ndim:    # the common case, answered first
        return dim + ndim if dim < 0 else dim
    n = max(ndim, 1)
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}]"
                         f", but got {dim})")
    return int(dim) + n if dim < 0 else int(dim)


def normalize_dims(dim, ndim):
    """A sorted tuple of dims (None or () means all); error on repeats."""
    if dim is None:
        return tuple(range(ndim))
    if dim.__class__ is int and -ndim <= dim < ndim:    # one dim: nothing to sort
        return (dim + ndim if dim < 0 else dim,)
    if isinstance(dim, (int, np.integer)):
        dim = (dim,)
    out = tuple(sorted(normalize_dim(d, ndim) for d in dim))
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {out[0]} appears multiple times in the list of dims")
    if ndim == 0:
        return ()
    return out if dim else tuple(range(ndim))


def check_same_device(op, *tensors):
    """RuntimeError naming the op and both devices when tensors live on different devices."""
    dev = None
    for t in tensors:
        if isinstance(t, Tensor):
            if dev is None:
                dev = t.device
            elif t.device != dev:
                raise RuntimeError(
                    f"Expected all tensors to be on the same device, but found at least two "
                    f"devices, {dev} and {t.device}! (when checking argument for {op})")
    return dev if dev is not None else CPU


def result_device(op, *xs):
    """The device of an op over tensors and scalars: the tensors' (all equal), CPU if none.

    0-d CPU tensors may mix with CUDA tensors, as in PyTorch.
    """
    dev = None
    for t in xs:
        if isinstance(t, Tensor):
            if dev is None or (dev.type == "cpu" and t.device.type != "cpu" and
                               _is_cpu_scalar_ok(xs, dev)):
                dev = t.device
            elif t.device != dev and not (t.device.type == "cpu" and t.dim() == 0):
                raise RuntimeError(
                    f"Expected all tensors to be on the same device, but found at least two "
                    f"devices, {dev} and {t.device}! (when checking argument for {op})")
    return dev if dev is not None else CPU


def _is_cpu_scalar_ok(xs, dev):
    return all(not isinstance(t, Tensor) or t.device != dev or t.dim() == 0 for t in xs)


def as_array(x, dtype, device):
    """The raw operand for a kernel: a tensor's array cast to `dtype`, or a typed scalar."""
    if isinstance(x, Tensor):
        if x.dtype is not dtype:
            x = x.to(dtype)
        if x.device != device:       # a 0-d CPU tensor meeting a CUDA tensor
            x = x.to(device)
        return x._array
    from .._scalars import wrap
    return wrap(x, dtype)


def tensor_method(*names):
    """Attach the decorated function to Tensor under its name (or `names`)."""
    def deco(fn):
        for n in names or (fn.__name__,):
            setattr(Tensor, n, fn)
        return fn
    return deco

