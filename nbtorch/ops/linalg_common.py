"""What the linear-algebra op modules share: argument checks with PyTorch's messages,
batched raw operands for the kernels, output allocation, and the error raised from a
kernel's `info`.

The kernels (`kernels/cpu/linalg.py`: LAPACK through NumPy and Numba's LU;
`kernels/cuda/linalg.py`: a thread per matrix) take C-contiguous ``(batch, rows,
cols)`` arrays; `matrices` makes them from any tensor (broadcast, strided, another
dtype) on the tensor's own device, and `new` allocates outputs there.
"""
from .. import _dtype
from .._dtype import type_name
from .._registry import get_kernel
from .._tensor import Tensor
from .linalg_triangular import LinAlgError

__all__ = ["LinAlgError", "check_matrix", "check_square", "check_float", "matrices", "flat",
           "kernel", "raise_info", "batch_of", "prod", "default_float"]


def check_float(op, A, name="A"):
    """A is float32/64 or complex64/128 (PyTorch's messages for the other dtypes)."""
    if A.dtype.is_complex:
        return
    if not A.dtype.is_floating_point or A.dtype.is_half:
        if A.dtype.is_half:
            raise RuntimeError(f"{op}: Low precision dtypes not supported. Got "
                               f"{type_name(A.dtype)}")
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. "
                           f"Got {type_name(A.dtype)}")


def check_matrix(op, A, name="A"):
    """A is a tensor of at least 2 dims of a float dtype (PyTorch's messages)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(A).__name__}")
    if A.dim() < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    check_float(op, A, name)


def check_square(op, A, name="A"):
    check_matrix(op, A, name)
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def batch_of(*shapes):
    """The broadcast of the batch parts (all but the last two dims) of `shapes`."""
    from ._common import broadcast_shapes
    return broadcast_shapes(*(tuple(s[:-2]) for s in shapes))


def matrices(t, batch, dtype=None):
    """t broadcast to `batch` + its matrix shape, C-contiguous, as a raw (B, rows, cols)
    array on t's device (a copy only where the layout or dtype needs one)."""
    rows, cols = t.shape[-2], t.shape[-1]
    x = t.detach()
    if dtype is not None and x.dtype is not dtype:
        x = x.to(dtype)
    shape = tuple(batch) + (rows, cols)
    if tuple(x.shape) != shape:
        x = x.expand(shape)
    if not x.is_contiguous():
        x = x.contiguous()
    return x._array.reshape(prod(batch), rows, cols)


def flat(t, tail):
    """The raw array of contiguous tensor `t` as (B,) + its last `tail` dims."""
    shape = tuple(t.shape)
    lead = shape[:len(shape) - tail]
    return t._array.reshape((prod(lead),) + shape[len(shape) - tail:])


def kernel(op, device):
    return get_kernel(op, device.type)


def raise_info(op, info, batched, message):
    """LinAlgError like PyTorch's for the first batch element with info != 0;
    `message(code)` words it."""
    codes = info._host().reshape(-1)
    bad = codes.nonzero()[0]
    if bad.size:
        where = f"(Batch element {bad[0]}): " if batched else ""
        raise LinAlgError(f"{op}: {where}{message(int(codes[bad[0]]))}")


def default_float(t):
    return t.dtype if t.dtype.is_floating_point else _dtype.get_default_dtype()
