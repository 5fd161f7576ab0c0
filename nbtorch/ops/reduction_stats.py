"""Statistics reductions: var / std (with `correction`), var_mean, std_mean, logsumexp, norm.

Kernels in kernels/cpu/reduce_stats.py accumulate in float64; backward
formulas are nbtorch ops, so second derivatives work.
"""
import math
import warnings

import numpy as np

from .. import _dtype
from .._tensor import Tensor, empty
from .._registry import _KERNELS, get_kernel
from ..autograd.function import Function, renamed
from .._limited import no_kernel
from ._common import normalize_dims, tensor_method
from .pointwise_select import where
from .reduction import (dtype_label, keepdim_shape, reduce_numel, reduced_shape,
                        reduction_layout)
from .reduction_minmax import _fast_array, _reduced, evenly_distributed_grad

__all__ = ["var", "std", "var_mean", "std_mean", "logsumexp", "norm", "vector_norm"]


def float_reduction(op, x, dims, n_out, *args, empty_value=float("nan"), out_dtype=None):
    """Run float kernel `op` over `dims` of x -> `n_out` tensors of the kept shape.

    float16 and bfloat16 compute in float32; the results are cast to `out_dtype`
    (default: x's dtype). An empty reduction gives `empty_value`.
    """
    kept = reduced_shape(x._shape, dims, False)
    work = x.dtype.compute
    outs = []
    if x.numel() == 0:
        from .creation import full
        outs = [full(kept, empty_value, dtype=work, device=x.device) for _ in range(n_out)]
    else:
        lay = reduction_layout(x, dims) if x.dtype is work else \
            reduction_layout(x.to(work), dims)
        pairs = [lay.new_output(work, x.device) for _ in range(n_out)]
        get_kernel(op, x.device.type)(lay.a3, *(raw for _, raw in pairs), *args)
        outs = [lay.finish(t) for t, _ in pairs]
    out_dtype = out_dtype or x.dtype
    return [o if o.dtype is out_dtype else o.to(out_dtype) for o in outs]


def _check_float(op, x):
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}(): input dtype should be either floating point or complex. "
                           f"Got {x.dtype.name.capitalize()} instead.")


# ---- var / std -------------------------------------------------------------------------

class VarMean(Function):
    """(var or std, mean) over dims; both outputs differentiable."""

    @staticmethod
    def forward(ctx, x, dims, correction, keepdim, take_sqrt):
        if reduce_numel(x._shape, dims) - correction <= 0:
            warnings.warn("var(): degrees of freedom is <= 0. Correction should be strictly "
                          "less than the reduction factor (input numel divided by output "
                          "numel).", UserWarning, stacklevel=4)
        var, mean = float_reduction("var", x, dims, 2, correction, out_dtype=x.dtype.compute)
        out = (var.sqrt() if take_sqrt else var).to(x.dtype)    # halves: rounded once
        mean = mean.to(x.dtype)
        if keepdim:
            shape = keepdim_shape(x._shape, dims)
            out, mean = out.view(shape), mean.view(shape)
        ctx.dims, ctx.correction, ctx.keepdim, ctx.take_sqrt = dims, correction, keepdim, \
            take_sqrt
        ctx.n = reduce_numel(x._shape, dims)
        ctx.save_for_backward(x, out)
        return out, mean

    @staticmethod
    def backward(ctx, g_out, g_mean):
        x, out = ctx.saved_tensors
        shape = keepdim_shape(x._shape, ctx.dims)
        if not ctx.keepdim:
            g_out, out = g_out.view(shape), out.view(shape)
            g_mean = g_mean.view(shape) if g_mean is not None else None
        centered = x - x.mean(dim=ctx.dims, keepdim=True)
        dof = ctx.n - ctx.correction
        scale = g_out * (2.0 / dof if dof > 0 else float("nan"))
        if ctx.take_sqrt:           # d std = d var / (2 std); 0 where std == 0, as PyTorch
            scale = where(out == 0, 0.0, scale / (2.0 * out))
        grad = scale * centered
        if g_mean is not None:
            grad = grad + g_mean / ctx.n
        return grad, None, None, None, None


def _small_stat(op, x, dim, keepdim, arg):
    """`op`'s kernel ('var' with correction `arg`, or 'norm' with p `arg`) over every dim
    (`dim` None) or one int dim of a plain small C-contiguous float32/float64 CPU tensor
    with nothing to record: the registered kernel on the (outer, n, inner) view
    `float_reduction` gives it, so the same bits, without its layers. (result tensor,
    n) with var's mean a bare array it drops; None for anything else (a 0-d tensor, a
    single element reduced, a correction leaving no degree of freedom: the general
    path's special cases and warning)."""
    a = _fast_array(x, True)
    kernel = _KERNELS.get((op, "cpu"))
    if a is None or kernel is None or keepdim.__class__ is not bool or not x._shape:
        return None
    found = _reduced(x._shape, a.size, dim, keepdim)
    if found is None:
        return None
    outer, n, inner, kept = found
    if n <= 1 or n - arg <= 0 or a.size >= _SMALL_STAT:
        return None
    out = empty(kept, x.dtype, x.device)
    a3, raw = a.reshape(outer, n, inner), out._arr.reshape(outer, inner)
    if op == "var":
        kernel(a3, raw, np.empty((outer, inner), a.dtype), arg)
    else:
        kernel(a3, raw, arg)
    return out


_SMALL_STAT = 1 << 15    # elements: beyond, the skipped layers are a small part of a call


def _parse_var_args(op, input, dim, unbiased, keepdim, correction):
    if isinstance(dim, bool):             # legacy var(input, unbiased)
        dim, unbiased = None, dim
    if correction is not None and unbiased is not None:
        raise RuntimeError(f"{op}: can't specify both correction and unbiased arguments")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return normalize_dims(dim, input.dim()), correction


def _var_std(op, take_sqrt, both):
    node = ("Std" if take_sqrt else "Var") + ("Mean" if both else "") + "Backward0"
    def fn(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        if input.dtype in _dtype.FLOAT8:
            raise RuntimeError(f"std_var_all: Unsupported dtype {_dtype.type_name(input.dtype)}")
        if input.dtype.is_complex:      # var(z) = var(Re z) + var(Im z): a real result
            v = _var_std("var", False, False)
            out = v(input.real, dim, unbiased, keepdim, correction=correction) + \
                v(input.imag, dim, unbiased, keepdim, correction=correction)
            out = out.sqrt() if take_sqrt else out
            if both:
                from .reduction import mean
                m = mean(input, _parse_var_args(op, input, dim, unbiased, keepdim,
                                                correction)[0], keepdim)
                return out, m
            return out
        if not input.dtype.is_floating_point:
            raise RuntimeError("std and var only support floating point and complex dtypes")
        if not both and unbiased is None and correction is None and \
                (dim is None or dim.__class__ is int):
            out = _small_stat("var", input, dim, keepdim, 1)
            if out is not None:
                if take_sqrt:           # IEEE sqrt, correctly rounded: sqrt()'s bits
                    np.sqrt(out._arr, out=out._arr)
                return out
        dims, c = _parse_var_args(op, input, dim, unbiased, keepdim, correction)
        out, mean = renamed(VarMean, node).apply(input, dims, c, keepdim, take_sqrt)
        return (out, mean) if both else out
    fn.__name__ = op
    what = "standard deviation" if take_sqrt else "variance"
    fn.__doc__ = (f"The {what} over all elements or `dim`, dividing by N - correction "
                  f"(correction=1 by default; `unbiased=False` means 0)"
                  + (", and the mean." if both else ".") +
                  f"\n\n    Example:\n        >>> nbtorch.tensor([1., 2., 3., 4.]).{op}()\n")
    return fn


var = _var_std("var", False, False)
std = _var_std("std", True, False)
var_mean = _var_std("var_mean", False, True)
std_mean = _var_std("std_mean", True, True)
Tensor.var, Tensor.std = var, std


# ---- logsumexp ------------------------------------------------------------------------

def _half_logsumexp(x, dims):
    """logsumexp of a half tensor as PyTorch's CPU computes it: amax, then (x - max).exp(),
    sum, log and + max as ops of x's dtype (each rounded; sums accumulate in float32)."""
    if x.numel() == 0:
        return float_reduction("logsumexp", x, dims, 1, empty_value=-math.inf)[0]
    m = x.amax(dim=dims, keepdim=True)
    m = where(m.abs() == math.inf, 0.0, m)
    s = (x - m).exp().sum(dim=dims)
    return s.log() + m.view(reduced_shape(x._shape, dims, False))


class LogSumExp(Function):
    _backward_name = "LogsumexpBackward0"

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        if x.dtype.is_half:
            out = _half_logsumexp(x, dims)
        else:
            out, = float_reduction("logsumexp", x, dims, 1, empty_value=-math.inf)
        out = out.view(keepdim_shape(x._shape, dims)) if keepdim else out
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        out = out.view(keepdim_shape(x._shape, ctx.dims))
        if not ctx.keepdim:
            g = g.view(out._shape)
        return g * (x - out).exp(), None, None


@tensor_method()
def logsumexp(input, dim=None, keepdim=False):
    """log(sum(exp(input))) over `dim`, computed stably (max-shifted; -inf rows give -inf).

    Example:
        >>> nbtorch.tensor([[0., 1000.], [-inf, -inf]]).logsumexp(1)
        tensor([1000.,   -inf])
    """
    if input.dtype.limited:
        no_kernel('max_values_cpu', input.dtype, _dtype.FLOAT8)
    if input.dtype.is_complex:          # shifted by the largest real part, as PyTorch
        dims = normalize_dims(dim, input.dim())
        shift = input.real.detach().amax(dims, keepdim=True)
        shift = shift.masked_fill(~shift.isfinite(), 0.0)
        out = (input - shift).exp().sum(dims, keepdim=True).log() + shift
        return out if keepdim else out.squeeze(dims) if dims else out
    if not input.dtype.is_floating_point:
        input = input.to(_dtype.get_default_dtype())
    return LogSumExp.apply(input, normalize_dims(dim, input.dim()), keepdim)


# ---- norms ----------------------------------------------------------------------------

class VectorNorm(Function):
    _backward_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, p, dims, keepdim):
        out, = float_reduction("norm", x, dims, 1, p,
                               empty_value=-math.inf if p == -math.inf else 0.0)
        out = out.view(keepdim_shape(x._shape, dims)) if keepdim else out
        ctx.p, ctx.dims, ctx.keepdim = p, dims, keepdim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        out = out.view(keepdim_shape(x._shape, ctx.dims))
        if not ctx.keepdim:
            g = g.view(out._shape)
        return _norm_grad(x, out, g, ctx.p, ctx.dims), None, None, None


def _norm_grad(x, out, g, p, dims):
    if p == 0:
        return x * 0.0
    if p == 1:
        return g * x.sign()
    if math.isinf(p):
        return evenly_distributed_grad(x.abs(), out, g, dims) * x.sign()
    if p == 2:
        scaled = x * (g / out)
        if out.device.type == "cpu" and not (out == 0).any().item():
            return scaled       # the select below keeps every element: one pass fewer
    elif p < 2:         # sgn(x)|x|^(p-1), 0 where x is (PyTorch's: no 0 * inf at x = 0)
        scaled = where(x == 0, 0.0, x.sign() * x.abs().pow(p - 1)) * (g / out.pow(p - 1))
    else:
        scaled = x * x.abs().pow(p - 2) * (g / out.pow(p - 1))
    return where(out == 0, 0.0, scaled)


def _norm_p(p):
    if p is None or p == "fro":
        return 2.0
    if isinstance(p, str):
        raise RuntimeError(f"norm(): unsupported p={p!r} here (only vector norms: numbers, "
                           "inf, -inf, 'fro')")
    return float(p)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """The vector p-norm of x over `dim` (all elements if None), as torch.linalg.vector_norm.

    Example:
        >>> nbtorch.linalg.vector_norm(nbtorch.tensor([3., 4.]))
        tensor(5.)
    """
    result = _vector_norm(x, ord, dim, keepdim, dtype)
    if out is None:
        return result
    from .._conventions import write_out
    return write_out("linalg.vector_norm", result, out)


def _vector_norm(x, ord, dim, keepdim, dtype):
    if dtype is not None:
        x = x.to(_dtype.to_dtype(dtype))
    if x.dtype.is_complex:              # the norm of the magnitudes (a real result)
        x = x.abs()
    if not x.dtype.is_floating_point:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor "
                           f"as input. Got {dtype_label(x.dtype)}")
    p = _norm_p(ord)
    if p == 2.0 and (dim is None or dim.__class__ is int):
        out = _small_stat("norm", x, dim, keepdim, 2.0)
        if out is not None:
            return out
    dims = normalize_dims(dim, x.dim())
    if x.numel() == 0 and (p < 0 or p == float("inf")) and reduce_numel(x._shape, dims) == 0:
        raise RuntimeError("linalg.vector_norm cannot compute the {} norm on an empty tensor "
                           "because the operation does not have an identity".format(ord))
    if p != 0 and x.numel() and reduce_numel(x._shape, dims) == 1:
        # the norm of one element is its magnitude, exactly: tensor(3e38).norm() is 3e38
        # (as PyTorch), not the overflowed square's root
        shape = keepdim_shape(x._shape, dims) if keepdim else \
            reduced_shape(x._shape, dims, False)
        return x.abs().reshape(shape)
    return VectorNorm.apply(x, p, dims, keepdim)


@tensor_method()
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector p-norm over `dim` (all elements by default); 'fro' is the 2-norm; 'nuc' the
    nuclear norm of the matrices over two dims (the last two by default), as PyTorch's.

    Example:
        >>> nbtorch.tensor([[3., 4.], [0., 0.]]).norm(dim=1)
        tensor([5., 0.])
    """
    if input.dtype.limited:
        no_kernel('norm_cpu', input.dtype, _dtype.FLOAT8)
    if p == "nuc":
        from .. import linalg
        if dtype is not None:
            input = input.to(_dtype.to_dtype(dtype))
        return linalg.matrix_norm(input, "nuc", dim=(-2, -1) if dim is None else dim,
                                  keepdim=keepdim)
    return vector_norm(input, _norm_p(p), dim, keepdim, dtype=dtype)
