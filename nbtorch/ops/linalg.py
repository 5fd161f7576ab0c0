"""Linear algebra: matmul (PyTorch's 1-D to batched N-D rules), mm, bmm, mv, dot, outer,
the add*mm family (einsum lives in einsum.py).

Every product funnels into one autograd Function, `Matmul`: operands of at
least 2 dims, (..., M, K) @ (..., K, N), batch dims broadcast. The vector
cases are views around it (unsqueeze, then squeeze), as PyTorch does them,
and its backward formulas are matmuls too, so double backward works.

Its kernel is the registry's "matmul" op (contract: `kernels/cpu/matmul.py`).
On CPU the default is BLAS through NumPy; switch every matmul-family op to
the hand-written Numba GEMM, and back, with::

    nbtorch.ops.linalg.use_cpu_matmul("numba")   # or "blas"

(or register any ``fn(a, b, out)`` with
``nbtorch.register_kernel("matmul", "cpu", fn, override=True)``).
"""
import math

import numpy as np

from .. import _dtype
from .._registry import _KERNELS, register_kernel, get_kernel
from .._tensor import Tensor, empty
from ..autograd import grad_mode
from ..autograd.function import APPLY_WRAPPERS, Function, renamed, unrecorded
from ._common import broadcast_shapes, check_same_device, sum_to, tensor_method
from .._dtype import type_name
from .creation import zeros
from .._lazy import kernel_module
from .._limited import no_kernel

_np_matmul = np.matmul

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "ger", "addmm",
           "addmv", "addr", "addbmm", "baddbmm"]


def use_cpu_matmul(name):
    """Make `name` ('blas' or 'numba') the CPU kernel of every matmul-family op.

    Example:
        >>> nbtorch.ops.linalg.use_cpu_matmul("numba")   # the packed Numba GEMM
        >>> nbtorch.ops.linalg.use_cpu_matmul("blas")    # back to the default
    """
    LAUNCHERS = kernel_module("cpu.matmul").LAUNCHERS
    if name not in LAUNCHERS:
        raise ValueError(f"unknown CPU matmul kernel '{name}' (have: {', '.join(LAUNCHERS)})")
    register_kernel("matmul", "cpu", LAUNCHERS[name], override=True)


def _lifted(t, ndim):
    """t's raw array with leading size-1 dims up to `ndim` (a view)."""
    pad = ndim - t.dim()
    return t._array if pad == 0 else t._view((1,) * pad + t._shape,
                                             (0,) * pad + t._strides)._array


def _mT(t):
    """t.mT; a bare view (no view node) when no node would be recorded for it - no grad
    mode, or t needs no grad - and no graph capture or profiler watches the ops
    (APPLY_WRAPPERS): backward formulas then skip the view op's overhead."""
    if not unrecorded(t):
        return t.mT
    shape, strides = t._shape, t._strides
    return t._view(shape[:-2] + (shape[-1], shape[-2]),
                   strides[:-2] + (strides[-1], strides[-2]))


def _product(a, b):
    """a @ b as `_Mm`'s unrecorded forward does it: the registered kernel straight, for
    helpers called where nothing records (grad mode off: a node's forward or first-order
    backward) and no capture or profiler watches (saves a Function.apply, ~1 us)."""
    if grad_mode.STATE.enabled or APPLY_WRAPPERS[0]:
        return _Mm.apply(a, b)
    out = empty((a._shape[0], b._shape[1]), a.dtype, a.device)
    get_kernel("matmul", a.device.type)(a._array, b._array, out._array)
    return out


def _raw_product(a, b, rows, cols, like):
    """The registered CPU kernel on raw arrays `a` @ `b` into a new (rows, cols) tensor of
    `like`'s dtype: the transposed operand passed as NumPy's `.T` view, the array a
    transposed tensor view would hand the kernel anyway, without making that tensor."""
    out = empty((rows, cols), like.dtype, like.device)
    get_kernel("matmul", "cpu")(a, b, out._arr)
    return out


def mm_nt(a, b):
    """a @ b.T for matrices that multiply so (a helper of fused nodes: no checks)."""
    if a.device.type == "cpu" and unrecorded(a, b):
        return _raw_product(a._array, b._array.T, a._shape[0], b._shape[0], a)
    return _product(a, _mT(b))


def mm_tn(a, b):
    """a.T @ b for matrices that multiply so (a helper of fused nodes: no checks)."""
    if a.device.type == "cpu" and unrecorded(a, b):
        return _raw_product(a._array.T, b._array, a._shape[1], b._shape[1], a)
    return _product(_mT(a), b)


def add_rows_(out, bias):
    """out += bias (a row broadcast over out's rows) in place, without autograd: for a
    fresh product inside a node's forward. On CPU NumPy adds it straight into out's array
    (unless a graph capture or profiler watches the ops)."""
    if out.device.type == "cpu" and not APPLY_WRAPPERS[0]:
        a = out._array
        a += bias._array
    else:
        out.add_(bias)
    return out


def _same_batch(sa, sb):
    """The product's shape when shapes `sa` and `sb` have the same rank and batch dims (no
    broadcast), else None; read by iterating (indexing a Size is a Python call)."""
    nd = len(sa)
    if nd != len(sb):
        return None
    dims = []
    for i, (x, y) in enumerate(zip(sa, sb)):
        if i == nd - 2:
            dims.append(x)
        elif i == nd - 1:
            dims.append(y)
        elif x != y:
            return None
        else:
            dims.append(x)
    return tuple(dims)


class Matmul(Function):
    """a (..., M, K) @ b (..., K, N), both at least 2-D, batch dims broadcast."""

    @staticmethod
    def forward(ctx, a, b):
        need_a, need_b = ctx.needs_input_grad
        if need_a or need_b:            # a's gradient needs b, b's needs a
            ctx.save_for_backward(a if need_b else None, b if need_a else None)
            ctx.shapes = a._shape, b._shape
        sa, sb = a._shape, b._shape
        if len(sa) == 2 and len(sb) == 2:
            (m, _), (_, n) = sa, sb
            out = empty((m, n), a.dtype, a.device)
            get_kernel("matmul", a.device.type)(a._array, b._array, out._array)
            return out
        dims = _same_batch(sa, sb)
        if dims is not None:            # bmm, attention: no broadcast to plan
            out = empty(dims, a.dtype, a.device)
            get_kernel("matmul", a.device.type)(a._array, b._array, out._array)
            return out
        batch = broadcast_shapes(sa[:-2], sb[:-2])
        out = empty(batch + (sa[-2], sb[-1]), a.dtype, a.device)
        nd = len(batch) + 2
        get_kernel("matmul", a.device.type)(_lifted(a, nd), _lifted(b, nd), out._array)
        return out

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        shape_a, shape_b = ctx.shapes
        ga = gb = None
        if g.dtype.is_complex:          # g @ b^H, a^H @ g (PyTorch's convention)
            a = None if a is None else a.conj()
            b = None if b is None else b.conj()
        if ctx.needs_input_grad[0]:
            ga = sum_to(Matmul.apply(g, _mT(b)), shape_a)
        if ctx.needs_input_grad[1]:
            gb = sum_to(Matmul.apply(_mT(a), g), shape_b)
        return ga, gb


# ---- argument checks (PyTorch's messages) ---------------------------------------------

def _with_out(op, result, out):
    """`result`, or copied into `out` (same shape and dtype) when out= is given."""
    if out is None:
        return result
    if result.requires_grad:
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if out.dtype is not result.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {_CPP_NAMES[result.dtype.name]}"
                           f", but got {_CPP_NAMES[out.dtype.name]} instead")
    if out._shape != result._shape:
        raise RuntimeError(f"out= tensor has shape {list(out._shape)} but the result has "
                           f"shape {list(result._shape)}")
    return out.copy_(result)


_CPP_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
              "float64": "double", "int8": "signed char", "int16": "short int", "int32": "int",
              "int64": "long int", "uint8": "unsigned char", "bool": "bool"}


# What PyTorch reports for mixed or bool dtypes depends on the routine an op lands in:
# route -> (name in the bool error, mixed-dtype message from (a.dtype, b.dtype)).
_ROUTES = {
    "mm": ("addmm_impl_cpu_", lambda a, b: "expected m1 and m2 to have the same dtype, but "
           f"got: {_CPP_NAMES[a.name]} != {_CPP_NAMES[b.name]}"),
    "bmm": ("bmm", lambda a, b: f"expected scalar type {type_name(a)} but found "
            f"{type_name(b)}"),
    "mv": ("addmv_impl_cpu", lambda a, b: "addmv input tensors must have the same dtype, but "
           f"got {type_name(b)}, {type_name(a)}, and {type_name(b)}"),
    "dot": ("dot", lambda a, b: "dot : expected both vectors to have same dtype, but found "
            f"{type_name(a)} and {type_name(b)}"),
    "inner": ("addmm_impl_cpu_", lambda a, b: "both inputs should have same dtype"),
}


def _check_pair(op, a, b, route, names=("input", "other")):
    """Both tensors, one device, one non-bool dtype (errors as PyTorch's `route` gives them)."""
    for i, (x, name) in enumerate(zip((a, b), names)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {i + 1}) must be Tensor, "
                            f"not {type(x).__name__}")
    check_same_device(op, a, b)
    bool_name, mixed = _ROUTES[route]
    if a.dtype is not b.dtype:
        raise RuntimeError(mixed(a.dtype, b.dtype))
    if a.dtype is _dtype.bool:
        raise NotImplementedError(f"\"{bool_name}\" not implemented for 'Bool'")


def _matmul_route(da, db):
    """The routine torch.matmul folds (da-D @ db-D) into."""
    if db == 1:
        return "dot" if da == 1 else "mv"
    return "mm" if db == 2 else "bmm"


def _mat_mismatch(rows, k, k2, n):
    return RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{k} and {k2}x{n})")


def _batch_mismatch(batch, k, batch2, k2):
    return RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                        f"[{batch}, {k}] but got: [{batch2}, {k2}].")


def _mv_mismatch(rows, k, n):
    return RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{k}), vec ({n})")


# ---- products ------------------------------------------------------------------

_Mm = renamed(Matmul, "MmBackward0")        # PyTorch's node for a 2-D @ 2-D product


def _plain_mm(a, b):
    """True for two matrices that multiply as they are (one device, one non-bool dtype,
    inner sizes equal): the common case, which skips the general checks and routing."""
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return False
    sa, sb = a._shape, b._shape
    if len(sa) != 2 or len(sb) != 2:
        return False
    (_, k), (k2, _) = sa, sb
    return (k == k2 and a.dtype is b.dtype and a.dtype is not _dtype.bool
            and a.device is b.device)


def _plain_product(a, b):
    """a @ b for two matrices `_plain_mm` passed: the `_Mm` node, or where nothing records
    (and no capture or profiler watches) its forward without Function.apply (4x4 8.1 ->
    4.1 us)."""
    if not unrecorded(a, b):
        return _Mm.apply(a, b)
    out = empty((a._shape[0], b._shape[1]), a.dtype, a.device)
    if not small_blas_product(a, b, out._arr):
        get_kernel("matmul", a.device.type)(a._array, b._array, out._array)
    return out


_MATMUL_CPU = ("matmul", "cpu")
_BLAS = []                  # [matmul_blas, its small-product limit], read on first use
_FLOATS = (_dtype.float32, _dtype.float64)


def small_blas_product(a, b, out_array, b_transposed=False):
    """out_array = a @ b (a @ b.T with `b_transposed`: F.linear's weight, no view made)
    by NumPy's matmul directly where that is the call the default CPU
    kernel (`matmul_blas`, still registered) would make at the end of its routing: 2-D
    float32/float64 CPU matrices, each with a unit stride in one dim (else the kernel
    copies it first), k > 1 and at most `blas.OWN_ONE_THREAD_WORK` multiply-adds in fewer
    than 512 columns (`_blas_core`'s first case). The same call, so the same bits; 8x16 @
    16x16 4.5 -> ~3.3 us. False (nothing done) otherwise."""
    if not _BLAS:
        mod = kernel_module("cpu.matmul")
        _BLAS.extend((mod.matmul_blas, kernel_module("cpu.blas").OWN_ONE_THREAD_WORK))
    if _KERNELS.get(_MATMUL_CPU) is not _BLAS[0] or a.dtype not in _FLOATS \
            or a.device.type != "cpu" or b.dtype is not a.dtype:
        return False
    m, k = a._shape
    n = b._shape[0 if b_transposed else 1]
    if k < 2 or n >= 512 or m * k * n > _BLAS[1]:
        return False
    sa, sb = a._strides, b._strides
    if (sa[1] != 1 and sa[0] != 1) or (sb[1] != 1 and sb[0] != 1):
        return False
    _np_matmul(a._array, b._array.T if b_transposed else b._array, out=out_array)
    return True


def _sparse_operand(a, b):
    """True when a or b is a sparse tensor: nbtorch/sparse computes the product."""
    return getattr(a, "_sparse_layout", False) or getattr(b, "_sparse_layout", False)


@tensor_method()
def matmul(input, other, *, out=None):
    """Matrix product with PyTorch's rules for 1-D to N-D operands.

    1-D @ 1-D is a dot product; a 1-D operand is promoted to a matrix (a row on
    the left, a column on the right) and that dim is removed afterwards; N-D
    operands are stacks of matrices whose batch dims broadcast.

    Example:
        >>> nbtorch.matmul(nbtorch.ones(5, 2, 3), nbtorch.ones(3, 4)).shape
        torch.Size([5, 2, 4])
    """
    if input.__class__ is Tensor and input.dtype.limited:
        no_kernel("addmm_impl_cpu_", input.dtype, _dtype.UINTS + (_dtype.float8_e8m0fnu,))
    if (input.__class__ is not Tensor or other.__class__ is not Tensor) and \
            _sparse_operand(input, other):
        from ..sparse._ops import route_matmul
        return route_matmul(input, other, out)
    if out is None and _plain_mm(input, other):
        return _plain_product(input, other)
    da, db = (x.dim() if isinstance(x, Tensor) else 1 for x in (input, other))
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    _check_pair("matmul", input, other, _matmul_route(da, db))
    if da == 1 and db == 1:
        return _with_out("matmul", dot(input, other), out)
    k, k2 = input._shape[-1], other._shape[-2 if db > 1 else 0]
    if k != k2:
        rows = math.prod(input._shape[:-1])
        if db == 1:
            raise _mv_mismatch(rows, k, k2)
        if db == 2:
            raise _mat_mismatch(rows, k, k2, other._shape[-1])
        batch = math.prod(broadcast_shapes(input._shape[:-2], other._shape[:-2]))
        raise _batch_mismatch(batch, k, batch, k2)
    if db == 1:
        result = Matmul.apply(input, other.unsqueeze(-1)).squeeze(-1)
    elif da == 1:
        result = Matmul.apply(input.unsqueeze(0), other).squeeze(-2)
    else:
        result = (_Mm if da == db == 2 else Matmul).apply(input, other)
    return _with_out("matmul", result, out)


@tensor_method()
def mm(input, mat2, *, out=None):
    """Product of two matrices, (n, m) @ (m, p) -> (n, p); no broadcasting."""
    if input.__class__ is Tensor and input.dtype.limited:
        no_kernel("addmm_impl_cpu_", input.dtype, _dtype.UINTS + (_dtype.float8_e8m0fnu,))
    if (input.__class__ is not Tensor or mat2.__class__ is not Tensor) and \
            _sparse_operand(input, mat2):
        from ..sparse._ops import route_mm
        return route_mm(input, mat2, out)
    if out is None and _plain_mm(input, mat2):
        return _plain_product(input, mat2)
    _check_pair("mm", input, mat2, "mm", ("input", "mat2"))
    if input.dim() != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    (n, m), (m2, p) = input._shape, mat2._shape
    if m != m2:
        raise _mat_mismatch(n, m, m2, p)
    return _with_out("mm", _Mm.apply(input, mat2), out)


@tensor_method()
def bmm(input, mat2, *, out=None):
    """Batched product, (b, n, m) @ (b, m, p) -> (b, n, p); no broadcasting."""
    _check_pair("bmm", input, mat2, "bmm", ("input", "mat2"))
    if input.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.dim() != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    (b, _, m), (b2, m2, _) = input._shape, mat2._shape
    if (b, m) != (b2, m2):
        raise _batch_mismatch(b, m, b2, m2)
    return _with_out("bmm", renamed(Matmul, "BmmBackward0").apply(input, mat2), out)


@tensor_method()
def mv(input, vec, *, out=None):
    """Matrix-vector product, (n, m) @ (m,) -> (n,)."""
    _check_pair("mv", input, vec, "mv", ("input", "vec"))
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.dim()}, "
                           f"{vec.dim()}")
    if input._shape[1] != vec._shape[0]:
        raise _mv_mismatch(input._shape[0], input._shape[1], vec._shape[0])
    return _with_out("mv", Matmul.apply(input, vec.unsqueeze(-1)).squeeze(-1), out)


@tensor_method()
def dot(input, other, *, out=None):
    """Dot product of two 1-D tensors of the same size and dtype (a 0-d tensor)."""
    if input.dtype.limited:
        no_kernel('dot', input.dtype)
    if isinstance(input, Tensor) and isinstance(other, Tensor) and \
            (input.dim() != 1 or other.dim() != 1):
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and "
                           f"{other.dim()}D tensors")
    _check_pair("dot", input, other, "dot", ("input", "tensor"))
    n, n2 = input._shape[0], other._shape[0]
    if n != n2:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{n2}] "
                           f"to have the same number of elements, but got {n} and {n2} "
                           "elements respectively")
    result = Matmul.apply(input.unsqueeze(0), other.unsqueeze(1)).reshape(())
    return _with_out("dot", result, out)


def vdot(input, other, *, out=None):
    """sum(conj(input) * other) of two 1-D tensors (dot for real ones)."""
    if input.dtype.is_complex:
        input = input.conj()
    return dot(input, other, out=out)


Tensor.vdot = vdot


@tensor_method()
def inner(input, other, *, out=None):
    """Sum over the last dims: result shape input.shape[:-1] + other.shape[:-1]."""
    if input.dim() == 0 or other.dim() == 0:
        return _with_out("inner", input * other, out)
    _check_pair("inner", input, other, "inner")
    k, k2 = input._shape[-1], other._shape[-1]
    if k != k2:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input._shape)} and {list(other._shape)}")
    flat = Matmul.apply(input.reshape(-1, k), other.reshape(-1, k).mT)
    return _with_out("inner", flat.reshape(input._shape[:-1] + other._shape[:-1]), out)


@tensor_method()
def outer(input, vec2, *, out=None):
    """Outer product of two 1-D tensors, (n,) x (m,) -> (n, m) (dtypes promote, as mul)."""
    for x, name in ((input, "self"), (vec2, "vec2")):
        if not isinstance(x, Tensor):
            raise TypeError(f"outer(): argument '{name}' must be Tensor, not "
                            f"{type(x).__name__}")
        if x.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {x.dim()}-D")
    return _with_out("outer", input.unsqueeze(1) * vec2, out)


ger = outer
Tensor.ger = outer


def __matmul__(self, other):
    if (other.__class__ is Tensor and self.__class__ is Tensor and not self.dtype.limited
            and _plain_mm(self, other)):
        return _plain_product(self, other)      # matmul's common case, without its layers
    return matmul(self, other) if isinstance(other, Tensor) else NotImplemented


def __rmatmul__(self, other):
    return matmul(other, self) if isinstance(other, Tensor) else NotImplemented


Tensor.__matmul__ = __matmul__
Tensor.__rmatmul__ = __rmatmul__


# ---- beta * input + alpha * product ------------------------------------------------

def _add_scaled(op, input, product_fn, operands, beta, alpha, out=None, fused=True):
    """beta * input + alpha * product_fn(*operands); input broadcasts to the product's
    shape; beta=0 ignores input's values (nan and inf included), as PyTorch does.

    With `fused`, half tensors (float16, bfloat16) compute all of it in float32 and
    round once, as PyTorch's fused CPU kernels (addmm, addmv, baddbmm) do.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    half = input.dtype
    if fused and half.is_half and all(t.dtype is half for t in operands):
        result = _add_scaled(op, input.to(half.compute), product_fn,
                             [t.to(half.compute) for t in operands], beta, alpha)
        return _with_out(op, result.to(half), out)
    product = product_fn(*operands)
    if input.dtype is not product.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{type_name(input.dtype)} and {type_name(product.dtype)}")
    _check_expandable(input, product._shape)
    if not product.dtype.is_floating_point:      # PyTorch truncates them for integer tensors
        beta, alpha = int(beta), int(alpha)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        result = _IgnoreValues.apply(input, product) if input.requires_grad else product
    else:
        result = product + (input if beta == 1 else input * beta)
    return _with_out(op, result, out)


class _IgnoreValues(Function):
    """`product`, with a zero gradient for `input` (beta=0: PyTorch still gives input a grad)."""

    @staticmethod
    def forward(ctx, input, product):
        ctx.like = (input._shape, input.dtype, input.device)
        return product.clone()

    @staticmethod
    def backward(ctx, g):
        shape, dtype, device = ctx.like
        return zeros(shape, dtype=dtype, device=device), g


def _check_expandable(t, target):
    """PyTorch's error when tensor `t` does not expand to shape `target`."""
    shape = t._shape
    if len(shape) > len(target):
        raise RuntimeError(f"expand(torch.{type_name(t.dtype)}Tensor{{{list(shape)}}}, "
                           f"size={list(target)}): the number of sizes provided "
                           f"({len(target)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(shape)})")
    for i in range(1, len(shape) + 1):
        if shape[-i] not in (1, target[-i]):
            raise RuntimeError(
                f"The expanded size of the tensor ({target[-i]}) must match the existing size "
                f"({shape[-i]}) at non-singleton dimension {len(target) - i}.  Target sizes: "
                f"{list(target)}.  Tensor sizes: {list(shape)}")


def _addmethod(fn):
    """Attach fn and an in-place `fn_` (self becomes the result) to Tensor."""
    def inplace(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))
    inplace.__name__ = fn.__name__ + "_"
    setattr(Tensor, fn.__name__, fn)
    setattr(Tensor, inplace.__name__, inplace)
    return fn


@_addmethod
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat1 @ mat2); input broadcasts to (n, p).

    Example:
        >>> bias, x, w = nbtorch.zeros(3), nbtorch.ones(2, 4), nbtorch.ones(4, 3)
        >>> nbtorch.addmm(bias, x, w).shape
        torch.Size([2, 3])
    """
    return _add_scaled("addmm", input, mm, (mat1, mat2), beta, alpha, out)


@_addmethod
def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * (mat @ vec)."""
    return _add_scaled("addmv", input, mv, (mat, vec), beta, alpha, out)


@_addmethod
def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * outer(vec1, vec2)."""
    return _add_scaled("addr", input, outer, (vec1, vec2), beta, alpha, out, fused=False)


@_addmethod
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * bmm(batch1, batch2); input broadcasts to (b, n, p)."""
    return _add_scaled("baddbmm", input, bmm, (batch1, batch2), beta, alpha, out)


def _bmm_sum(batch1, batch2):
    return bmm(batch1, batch2).sum(0)


@_addmethod
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """beta * input + alpha * sum over the batch of bmm(batch1, batch2)."""
    if (isinstance(input, Tensor) and input.dtype.is_half and batch1.dim() == 3
            and batch1.shape[0] and input.dtype is batch1.dtype is batch2.dtype):
        # PyTorch's CPU adds one batch's product at a time (a rounded addmm each)
        result = addmm(input, batch1[0], batch2[0], beta=beta, alpha=alpha)
        for i in range(1, batch1.shape[0]):
            result = addmm(result, batch1[i], batch2[i], alpha=alpha)
        return _with_out("addbmm", result, out)
    return _add_scaled("addbmm", input, _bmm_sum, (batch1, batch2), beta, alpha, out)
