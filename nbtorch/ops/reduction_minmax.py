"""max / min (values, or (values, indices) over a dim), amax / amin, argmax / argmin, aminmax.

NaN propagates (it is the max and the min, as in PyTorch). Gradients: a
reduction over all elements or `amax`/`amin` splits the gradient equally
among tied extremes; `max(dim)`/`min(dim)` send it to the returned index only.
"""
import numpy as np

from .. import _dtype
from .._capture import recorded_whole
from .._tensor import _LAYOUTS, _layout, Tensor, empty
from .._registry import _KERNELS, get_kernel
from ..autograd import grad_mode
from ..autograd.function import APPLY_WRAPPERS, TRACE_HOOK, Function, renamed
from .._limited import no_kernel
from ._common import normalize_dim, normalize_dims, tensor_method
from . import _return_types as rt
from .pointwise_select import maximum, minimum
from .reduction import (_contiguous_run, keepdim_shape, reduced_shape,
                        reduction_layout)

__all__ = ["max", "min", "amax", "amin", "argmax", "argmin", "aminmax"]


def _work(x):
    return x.to(x.dtype.compute)


_NO_KERNEL = {"amax": "max_values_cpu", "amin": "min_values_cpu"}


def _check_nonempty(op, x, dims, all_dims):
    if x.dtype.limited:                 # uint16-64, float8: no kernel in PyTorch either
        no_kernel(_NO_KERNEL.get(op) or (op + ("_all" if all_dims else "_cpu")), x.dtype)
    if x.numel():
        return
    if all_dims:
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")
    for d in dims:
        if x._shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def extreme_values(op, x, dims):
    """max (op 'amax') or min ('amin') over `dims`, kept dims in order (no keepdim)."""
    if (dims and x.device.type == "cpu" and x.dtype is x.dtype.compute
            and dims[-1] - dims[0] + 1 == len(dims)):
        out = _contiguous_run(op, x, dims, ())    # a contiguous x: no layout plan (and
        if out is not None:                       # no copy); amax(1) of 4x8 5.5 -> 3 us
            return out
    kept = reduced_shape(x._shape, dims, False)
    if x.numel() == 0:
        return empty(kept, x.dtype, x.device)
    w = _work(x)
    lay = reduction_layout(w, dims)
    out, raw = lay.new_output(w.dtype, x.device)
    get_kernel(op, x.device.type)(lay.a3, raw)
    out = lay.finish(out)
    return out if out.dtype is x.dtype else out.to(x.dtype)


def extreme_with_index(op, x, dim):
    """(values, int64 indices) of the max ('argmax') or min ('argmin') over one dim."""
    if x.device.type == "cpu" and x.dtype is x.dtype.compute and x.numel():
        a3 = _contiguous_rows(x, dim)
        if a3 is not None:
            kept = x._shape[:dim] + x._shape[dim + 1:]
            values, indices = empty(kept, x.dtype, x.device), empty(kept, _dtype.int64, x.device)
            outer, inner = a3.shape[0], a3.shape[2]
            get_kernel(op, "cpu")(a3, values._arr.reshape(outer, inner),
                                  indices._arr.reshape(outer, inner))
            return values, indices
    kept = reduced_shape(x._shape, (dim,), False)
    if x.numel() == 0:
        return empty(kept, x.dtype, x.device), empty(kept, _dtype.int64, x.device)
    w = _work(x)
    lay = reduction_layout(w, (dim,) if x.dim() else ())
    values, vraw = lay.new_output(w.dtype, x.device)
    indices, iraw = lay.new_output(_dtype.int64, x.device)
    get_kernel(op, x.device.type)(lay.a3, vraw, iraw)
    values, indices = lay.finish(values), lay.finish(indices)
    return (values if values.dtype is x.dtype else values.to(x.dtype)), indices


def _contiguous_rows(x, dim):
    """The (outer, n, inner) view of a contiguous x around `dim`, or None (max(1) of 4x8:
    no layout plan, 7.3 -> 4.8 us)."""
    shape = x._shape
    if not shape or x._strides != _layout(shape)[1]:
        return None
    outer = inner = 1
    for s in shape[:dim]:
        outer *= s
    for s in shape[dim + 1:]:
        inner *= s
    return x._array.reshape(outer, shape[dim], inner)


# ---- the small unrecorded path -------------------------------------------------------
# max()/min(), amax/amin(dim), max/min(dim) and argmax/argmin of a plain C-contiguous
# float32/float64 CPU tensor with nothing to record: the registered kernel called on the
# very (outer, n, inner) view the general path gives it, so the same bits (a user's
# kernel runs too), without normalising, Function.apply and the layout helpers. None
# wherever anything differs; the general path then answers (and raises).

_FAST_DTYPES = (_dtype.float32, _dtype.float64)
_ROWS = {}      # nbtorch's own kernel (amax, argmax, ...) -> (its serial rows loop,
                # want_max, the size below which it takes that loop for rows)


def _rows_loop(kernel):
    """(rows loop, want_max, size limit) when `kernel` is `kernels/cpu/reduce.py`'s own
    launcher of that name (whose inner == 1 float calls below the limit run the loop),
    else None."""
    found = _ROWS.get(kernel)
    if found is None:
        name = getattr(kernel, "__name__", None)
        if getattr(kernel, "__module__", None) != "nbtorch.kernels.cpu.reduce" or \
                name not in ("amax", "amin", "argmax", "argmin"):
            return None
        import sys
        reduce = sys.modules[kernel.__module__]
        if name in ("amax", "amin"):
            found = (reduce.extreme_rows, name == "amax", reduce.EXTREME_SPLIT_MIN)
        else:
            found = (reduce.arg_rows, name == "argmax", reduce.PARALLEL_MIN_NUMEL)
        found = _ROWS[kernel] = found
    return found


def _fast_array(x, watched):
    """x's raw array when x is a plain non-empty C-contiguous float32/float64 CPU tensor
    and, if `watched` (the op goes through Function.apply), nothing records or traces it;
    else None."""
    if x.__class__ is not Tensor or x.dtype not in _FAST_DTYPES or x.device.type != "cpu":
        return None
    if watched and (APPLY_WRAPPERS[0] or TRACE_HOOK[0] is not None
                    or (grad_mode.STATE.enabled and x._requires_grad)):
        return None
    shape = x._shape
    size, strides, numel = _LAYOUTS.get(shape) or _layout(shape)
    if not numel or x._strides != strides:
        return None
    return x._array


def _around(shape, dim):
    """(outer, n, inner) of `shape` around `dim` (an int in range), or None."""
    nd = len(shape)
    if dim.__class__ is not int or not -nd <= dim < nd:
        return None
    d = dim + nd if dim < 0 else dim
    outer = inner = 1
    for i in range(d):
        outer *= shape[i]
    for i in range(d + 1, nd):
        inner *= shape[i]
    return outer, shape[d], inner


def _reduced(shape, size, dim, keepdim):
    """(outer, n, inner, result shape) of a reduction of a tensor of `shape` (`size`
    elements) over every dim (`dim` None) or one int `dim`, keepdim or not; None for a
    `dim` out of range or not an int."""
    if dim is None:
        return 1, size, 1, (1,) * len(shape) if keepdim else ()
    oni = _around(shape, dim)
    if oni is None:
        return None
    d = dim % len(shape)
    return oni + (shape[:d] + ((1,) if keepdim else ()) + shape[d + 1:],)


def _small_extreme(op, x, dim, keepdim):
    """max()/min() (`dim` None) or amax/amin over one int `dim`: the values, or None."""
    a = _fast_array(x, True)
    kernel = _KERNELS.get((op, "cpu"))
    if a is None or kernel is None or keepdim.__class__ is not bool:
        return None
    shape = x._shape
    found = _reduced(shape, a.size, dim, keepdim) if shape else None
    if found is None:
        return None
    outer, n, inner, kept = found
    out = empty(kept, x.dtype, x.device)
    rows = _rows_loop(kernel) if inner == 1 else None
    if rows is not None and a.size < rows[2]:
        rows[0](a.reshape(outer, n), out._arr.reshape(outer, 1), rows[1])
    else:
        kernel(a.reshape(outer, n, inner), out._arr.reshape(outer, inner))
    return out


def _small_with_index(op, x, dim, keepdim, watched):
    """(values, indices) of the max ('argmax') or min ('argmin') over int `dim` (None:
    of the flattened x, argmax's), or None. Unwatched (argmax itself), the values are
    a bare array."""
    a = _fast_array(x, watched)
    kernel = _KERNELS.get((op, "cpu"))
    if a is None or kernel is None or keepdim.__class__ is not bool:
        return None
    found = _reduced(x._shape, a.size, dim, keepdim)
    if found is None:
        return None
    outer, n, inner, kept = found
    indices = empty(kept, _dtype.int64, x.device)
    if watched:
        values = empty(kept, x.dtype, x.device)
        raw = values._arr.reshape(outer, inner)
    else:
        values = raw = np.empty((outer, inner), a.dtype)
    rows = _rows_loop(kernel) if inner == 1 else None
    if rows is not None and a.size < rows[2]:
        rows[0](a.reshape(outer, n), raw, indices._arr.reshape(outer, 1), rows[1])
    else:
        kernel(a.reshape(outer, n, inner), raw, indices._arr.reshape(outer, inner))
    return values, indices


# ---- gradients ------------------------------------------------------------------------

def evenly_distributed_grad(x, out_kept, g_kept, dims):
    """g split equally among the elements of x equal to the extreme `out_kept`."""
    mask = (x == out_kept).to(g_kept.dtype)
    return g_kept * mask / mask.sum(dim=dims, keepdim=True)


def index_mask(indices_kept, dim, shape):
    """Bool mask of `shape`: True where the position along `dim` equals `indices_kept`."""
    from .creation import arange
    n = shape[dim] if shape else 1
    pos = arange(n, device=indices_kept.device)
    if shape:
        pos = pos.view(tuple(n if i == dim else 1 for i in range(len(shape))))
    else:
        pos = pos.view(())
    return pos == indices_kept


class Extreme(Function):
    """amax/amin (and max()/min() over everything): ties share the gradient."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, op):
        out = extreme_values(op, x, dims)
        out = out.view(keepdim_shape(x._shape, dims)) if keepdim else out
        if True not in ctx.needs_input_grad:
            return out                  # nothing will be recorded: skip the bookkeeping
        ctx.dims, ctx.keepdim = dims, keepdim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        out = out.view(keepdim_shape(x._shape, ctx.dims))
        if not ctx.keepdim:
            g = g.view(out._shape)
        return evenly_distributed_grad(x, out, g, ctx.dims), None, None, None


class ExtremeWithIndex(Function):
    """max(dim)/min(dim): (values, indices); the gradient goes to the returned index."""

    @staticmethod
    def forward(ctx, x, dim, keepdim, op):
        values, indices = extreme_with_index(op, x, dim)
        if keepdim:
            shape = keepdim_shape(x._shape, (dim,))
            values, indices = values.view(shape), indices.view(shape)
        if True not in ctx.needs_input_grad:
            return values, indices
        ctx.dim, ctx.keepdim, ctx.in_shape = dim, keepdim, x._shape
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, _g_indices):
        indices, = ctx.saved_tensors
        shape = keepdim_shape(ctx.in_shape, (ctx.dim,))
        if not ctx.keepdim:
            g, indices = g.view(shape), indices.view(shape)
        return g * index_mask(indices, ctx.dim, ctx.in_shape), None, None, None


# ---- public ops ----------------------------------------------------------------------

def _minmax(name, kernel_values, kernel_index, result_cls):
    node_dim = name.capitalize() + "Backward0"      # PyTorch's max.dim node
    node_all = name.capitalize() + "Backward1"      # and max()'s
    def fn(input, dim=None, keepdim=False, *, out=None):
        if out is None:
            if dim is None:
                if keepdim is False:
                    res = _small_extreme(kernel_values, input, None, False)
                    if res is not None:
                        return res
            elif dim.__class__ is int:
                res = _small_with_index(kernel_index, input, dim, keepdim, True)
                if res is not None:
                    return result_cls(*res)
        if isinstance(dim, Tensor):
            return (maximum if name == "max" else minimum)(input, dim)
        if dim is None:
            if keepdim:
                raise TypeError(f"{name}() received an invalid combination of arguments - "
                                "got (keepdim=bool), but expected (Tensor input, int dim, "
                                "bool keepdim)")
            dims = tuple(range(input.dim()))
            _check_nonempty(name, input, dims, True)
            return renamed(Extreme, node_all).apply(input, dims, False, kernel_values)
        d = normalize_dim(dim, input.dim())
        _check_nonempty(name, input, (d,), False)
        return result_cls(*renamed(ExtremeWithIndex, node_dim).apply(input, d, keepdim,
                                                                     kernel_index))
    fn.__name__ = name
    fn.__doc__ = (f"The {name}imum of all elements, or `(values, indices)` over `dim`.\n\n"
                  f"    Example:\n        >>> nbtorch.tensor([[1., 5.], [7., 2.]]).{name}(dim=1)"
                  f"\n        torch.return_types.{name}(values=..., indices=...)\n")
    return fn


max = _minmax("max", "amax", "argmax", rt.max)
min = _minmax("min", "amin", "argmin", rt.min)
Tensor.max = max
Tensor.min = min


def _amaxmin(name):
    node = name.capitalize() + "Backward0"
    def fn(input, dim=(), keepdim=False):
        c = dim.__class__
        if c is int or (c is tuple and not dim):
            out = _small_extreme(name, input, None if c is tuple else dim, keepdim)
            if out is not None:
                return out
        dims = normalize_dims(dim, input.dim())
        _check_nonempty(name, input, dims, False)
        return renamed(Extreme, node).apply(input, dims, keepdim, name)
    fn.__name__ = name
    fn.__doc__ = (f"The {name[1:]}imum over `dim` (all dims if empty); ties share the "
                  "gradient equally.")
    return fn


amax = _amaxmin("amax")
amin = _amaxmin("amin")
Tensor.amax = amax
Tensor.amin = amin


def _arg(name, kernel):
    def fn(input, dim=None, keepdim=False):
        if dim is None or dim.__class__ is int:
            res = _small_with_index(kernel, input, dim, keepdim, False)
            if res is not None:
                return res[1]
        x = input.detach()
        if x.dtype.limited:
            no_kernel(name + "_cpu", x.dtype)
        if dim is None:
            if x.numel() == 0:
                raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                                 "input.numel() == 0.")
            idx = extreme_with_index(kernel, x.reshape(-1), 0)[1]
            return idx.view((1,) * x.dim()) if keepdim else idx
        d = normalize_dim(dim, x.dim())
        _check_nonempty(name, x, (d,), False)
        idx = extreme_with_index(kernel, x, d)[1]
        return idx.view(keepdim_shape(x._shape, (d,))) if keepdim else idx
    fn.__name__ = name
    fn.__doc__ = (f"Index of the first {name[3:]}imum (of the flattened tensor if dim is "
                  "None); NaN counts as the maximum and the minimum.")
    return recorded_whole(fn)


argmax = _arg("argmax", "argmax")
argmin = _arg("argmin", "argmin")
Tensor.argmax = argmax
Tensor.argmin = argmin


@tensor_method()
def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over all elements or over `dim`, as `torch.return_types.aminmax`."""
    if input.dtype.limited:
        no_kernel("aminmax_cpu", input.dtype)
    if dim is None:
        if keepdim:
            dims = tuple(range(input.dim()))
            return rt.aminmax(amin(input, dims, True), amax(input, dims, True))
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        return rt.aminmax(amin(input), amax(input))
    return rt.aminmax(amin(input, dim, keepdim), amax(input, dim, keepdim))
