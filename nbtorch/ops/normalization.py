"""Normalisation functions: batch_norm, layer_norm, group_norm, normalize.

Forward and backward run as single Numba kernels (``nbtorch.kernels.cpu.norm``,
looked up per device in the registry). When a backward is itself recorded
(``create_graph=True``) the gradients are built from nbtorch ops instead, so
double backward works too; a graph capture records the backward kernels as one
node each (`_fused_grad.py`).
"""
import functools
import math

import numpy as np

from .. import _dtype
from .._registry import _KERNELS, get_kernel
from .._tensor import _LAYOUTS, Size, Tensor, _layout, empty
from ..autograd.function import APPLY_WRAPPERS, TRACE_HOOK
from ._fused_grad import fused_grad
from ..autograd import Function, grad_mode
from ._common import check_same_device

__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm", "normalize"]



# ---------------------------------------------------------------- helpers

def _kernel_dtype(dtype):
    """Kernels compute in float32/float64; float16 and bfloat16 are upcast around them."""
    return dtype.compute


def _kernel_array(t, dtype):
    """Contiguous raw array of ``t`` in ``dtype`` (a view when nothing needs changing; one
    NumPy fill for one value expanded on the CPU, as ``.sum()``'s output gradient is)."""
    if t.dtype is not dtype:
        t = t.to(dtype)
    if t.is_contiguous():
        return t._array
    if t.device.type == "cpu":
        from .normalization_rows import dense_array
        return dense_array(t)
    return t.contiguous()._array


def _param_array(p, n, fill, dtype, device):
    """The raw (n,) array of an affine parameter, or ones/zeros when it is None."""
    if p is None:
        t = empty((n,), dtype, device)
        t.fill_(fill)
        return t._array
    if p.dtype is dtype and p.is_contiguous():          # the raw array; no detached tensor
        return p._array.reshape(n)
    return _kernel_array(p.detach(), dtype).reshape(n)


def _stat(n, device):
    return empty((n,), _dtype.float64, device)


def _grad_as(g64, like):
    """A float64 (n,) kernel gradient as a tensor shaped and typed like parameter ``like``:
    float32/float64 on the CPU by one NumPy cast into the new tensor (two ops' overhead
    less; the same rounding as ``.to``)."""
    if g64.device.type == "cpu" and like.dtype in (_dtype.float32, _dtype.float64):
        out = empty(tuple(like.shape), like.dtype, g64.device)
        out._array.reshape(g64.shape)[...] = g64._array
        return out
    return g64.to(like.dtype).reshape(like.shape)


_KERNEL_NAMES = {"layer_norm": "LayerNormKernelImpl", "group_norm": "GroupNormKernelImpl",
                 "instance_norm": "batch_norm"}


def _check_floating(op, t):
    """PyTorch's error for integer inputs: its kernel is not implemented for them."""
    if not t.dtype.is_floating_point:
        from .reduction import dtype_label
        raise NotImplementedError(f"\"{_KERNEL_NAMES.get(op, op)}\" not implemented for "
                                  f"'{dtype_label(t.dtype)}'")


def _normalized_grads(g, x, dims, eps):
    """(grad_input, xhat) of y = (x - mean) * rstd given ``g = dy * w``, built from ops.

    Used when the backward itself is differentiated (create_graph=True).
    """
    xc = x - x.mean(dims, keepdim=True)
    rstd = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    xhat = xc * rstd
    gx = rstd * (g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True))
    return gx, xhat


# ---------------------------------------------------------------- batch norm

class BatchNorm(Function):
    """y = (x - mean) * invstd * w + b per channel (dim 1), batch or running stats."""

    _backward_name = "NativeBatchNormBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, batch_stats, momentum, eps):
        dt, dev = _kernel_dtype(x.dtype), x.device
        N, C = x.shape[0], x.shape[1]
        S = math.prod(x.shape[2:])
        x3 = _kernel_array(x, dt).reshape(N, C, S)
        out = empty(x.shape, dt, dev)
        w = _param_array(weight, C, 1.0, dt, dev)
        b = _param_array(bias, C, 0.0, dt, dev)
        mean, invstd = _stat(C, dev), _stat(C, dev)
        if x.numel() == 0:
            mean.fill_(0.0)
            invstd.fill_(0.0)
        elif batch_stats:
            var = _stat(C, dev)
            get_kernel("batch_norm_forward_train", dev.type)(
                x3, w, b, eps, out._array.reshape(N, C, S), mean._array, var._array,
                invstd._array)
            if running_mean is not None or running_var is not None:
                _update_running(running_mean, running_var, mean, var, momentum, N * S)
        else:
            get_kernel("batch_norm_forward_eval", dev.type)(
                x3, w, b, running_mean.contiguous()._array, running_var.contiguous()._array, eps,
                out._array.reshape(N, C, S), mean._array, invstd._array)
        ctx.save_for_backward(x, weight)
        ctx.stats = (mean, invstd)
        ctx.batch_stats, ctx.eps = batch_stats, eps
        return out if out.dtype is x.dtype else out.to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        params = dict(batch_stats=ctx.batch_stats, eps=ctx.eps)
        inputs = (x, weight, grad_out) + tuple(ctx.stats)
        if x.numel() == 0:
            gx, gw, gb = _batch_norm_grad_ops(*inputs, **params)
        else:
            gx, gw, gb = _norm_grads(_batch_norm_grads, _batch_norm_grad_ops, inputs, (),
                                     need_x, params)
        return (gx if need_x else None, gw if need_w else None, gb if need_b else None,
                None, None, None, None, None)


def _update_running(running_mean, running_var, mean, var, momentum, count):
    """Running statistics updated in place by one kernel call (version counters bumped)."""
    bufs = [b for b in (running_mean, running_var) if b is not None]
    for b in bufs:
        if not b.is_contiguous():
            raise RuntimeError("batch_norm: running statistics must be contiguous")
    get_kernel("batch_norm_update_running", mean.device.type)(
        None if running_mean is None else running_mean._array,
        None if running_var is None else running_var._array,
        mean._array, var._array, momentum, count)
    for b in bufs:
        b._bump()


def _norm_grads(kernel, formula, inputs, extras, need_x, params):
    """(dx, dweight, dbias) of a normalisation's backward: `kernel(*inputs, *extras,
    need_x=, **params)` in a first-order backward; under create_graph=True (or a graph
    capture) `fused_grad` of the kernel and the op `formula(*inputs, **params)`."""
    if grad_mode.is_grad_enabled():
        return fused_grad(functools.partial(kernel, **params),
                          functools.partial(formula, **params), inputs, extras)
    return kernel(*inputs, *extras, need_x=need_x, **params)


def _channel_norm_grads(x, weight, dy, need_x, run):
    """(dx, dweight, dbias) of a per-channel normalisation (batch norm, group norm) by its
    backward kernel, which ``run(dy3, x3, w, dx3, dw, db)`` calls on (N, C, S) arrays
    (dweight/dbias shaped and typed like the weight, or (C,) float64 without one; dx None
    unless `need_x`)."""
    dt, dev = _kernel_dtype(x.dtype), x.device
    N, C = x.shape[0], x.shape[1]
    S = math.prod(x.shape[2:])
    x3 = _kernel_array(x, dt).reshape(N, C, S)
    dy3 = _kernel_array(dy, dt).reshape(N, C, S)
    gx = empty(x.shape, dt, dev) if need_x else None
    gw, gb = _stat(C, dev), _stat(C, dev)
    run(dy3, x3, _param_array(weight, C, 1.0, dt, dev),
        gx._array.reshape(N, C, S) if need_x else dy3, gw._array, gb._array)
    if gx is not None and gx.dtype is not x.dtype:
        gx = gx.to(x.dtype)
    if weight is not None:
        gw, gb = _grad_as(gw, weight), _grad_as(gb, weight)
    return gx, gw, gb


def _batch_norm_grads(x, weight, dy, mean, invstd, batch_stats, eps, need_x=True):
    """(dx, dweight, dbias) of batch norm by its kernel (see `_channel_norm_grads`)."""
    kernel = get_kernel("batch_norm_backward", x.device.type)
    return _channel_norm_grads(x, weight, dy, need_x, lambda dy3, x3, w, gx, gw, gb: kernel(
        dy3, x3, mean._array, invstd._array, w, gx, gw, gb, batch_stats, need_x))


def _batch_norm_grad_ops(x, weight, dy, mean, invstd, batch_stats, eps):
    """`_batch_norm_grads` with ordinary ops (differentiable again; batch statistics are
    recomputed from x, running ones are the given mean and invstd)."""
    N, C = x.shape[0], x.shape[1]
    S = math.prod(x.shape[2:])
    x3, dy3 = x.reshape(N, C, S), dy.reshape(N, C, S)
    w3 = weight.reshape(1, C, 1) if weight is not None else 1.0
    if batch_stats:
        gx, xhat = _normalized_grads(dy3 * w3, x3, (0, 2), eps)
    else:
        mean, invstd = (s.to(x.dtype).reshape(1, C, 1) for s in (mean, invstd))
        xhat = (x3 - mean) * invstd
        gx = dy3 * (w3 * invstd)
    return gx.reshape(x.shape), (dy3 * xhat).sum((0, 2)), dy3.sum((0, 2))


def _verify_batch_size(size):
    count = size[0]
    for s in size[2:]:
        count *= s
    if count == 1:
        raise ValueError("Expected more than 1 value per channel when training, "
                         f"got input size {Size(size)}")


def _check_channel_vector(name, t, C):
    if t is not None and t.numel() != C:
        raise RuntimeError(f"{name} should contain {C} elements not {t.numel()}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch normalisation over dim 1 (channels) of an (N, C, *) input.

    In training (or when no running statistics are given) the batch's mean
    and biased variance normalise; ``running_mean``/``running_var`` are then
    updated in place with ``momentum`` (the variance unbiased), as PyTorch
    does. Otherwise the running statistics normalise.

    Example:
        >>> x = nbtorch.randn(8, 3)
        >>> rm, rv = nbtorch.zeros(3), nbtorch.ones(3)
        >>> y = batch_norm(x, rm, rv, training=True)   # rm, rv updated
    """
    if not training:
        out = _batch_norm_eval_unrecorded(input, running_mean, running_var, weight, bias, eps)
        if out is not None:
            return out
    _check_floating("batch_norm", input)
    if input.dim() < 2:
        raise ValueError(f"batch_norm: expected 2D or more input (got {input.dim()}D input)")
    C = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_channel_vector(name, t, C)
    check_same_device("batch_norm", input, running_mean, running_var, weight, bias)
    if training:
        _verify_batch_size(input.shape)
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    momentum = 0.0 if momentum is None else float(momentum)
    return BatchNorm.apply(input, weight, bias, running_mean, running_var, bool(training),
                           momentum, float(eps))


def _plain_unwatched(x):
    """(element count, grad mode) for a plain C-contiguous float32/float64 CPU tensor x that
    nothing records (x needs no gradient where grad mode is on) or watches (no capture,
    profiler or tracer): the small normalisation paths' first test. None otherwise."""
    if (x.__class__ is not Tensor or x.dtype not in _LN_DTYPES or x.device.type != "cpu"
            or APPLY_WRAPPERS[0] or TRACE_HOOK[0] is not None):
        return None
    grad = grad_mode.STATE.enabled
    if grad and x._requires_grad:
        return None
    size, strides, numel = _LAYOUTS.get(x._shape) or _layout(x._shape)
    return None if x._strides != strides else (numel, grad)


def _batch_norm_eval_unrecorded(x, running_mean, running_var, weight, bias, eps):
    """`BatchNorm.forward`'s eval-mode kernel call (inference) for a C-contiguous float32/
    float64 CPU x of at least 2 dims whose running statistics, weight and bias are plain
    contiguous CPU tensors (or nn.Parameters) of its dtype with one value per channel (the
    weight and bias may be None), with nothing to record: the registered kernel on the same
    arrays, so the same bits, without the checks' and Function.apply's layers (BatchNorm1d
    on 8x16 20.3 -> 13.5 us, PyTorch 10.5). None for anything else (the general path then
    checks and raises)."""
    found = _plain_unwatched(x)
    if found is None or running_mean is None or running_var is None:
        return None
    numel, grad = found
    shape = x._shape
    if len(shape) < 2 or not numel or x._arr is None:
        return None
    C = shape[1]
    dt = x.dtype
    for t in (running_mean, running_var, weight, bias):
        if t is None:
            continue
        if (not isinstance(t, Tensor) or t.dtype is not dt or t.device.type != "cpu"
                or len(t._shape) != 1 or t._shape[0] != C or t._strides != (1,)
                or t._arr is None or (grad and t._requires_grad)):
            return None
    N = shape[0]
    S = numel // (N * C)
    out = empty(shape, dt, x.device)
    w = weight._arr if weight is not None else _param_array(None, C, 1.0, dt, x.device)
    b = bias._arr if bias is not None else _param_array(None, C, 0.0, dt, x.device)
    mean, invstd = _stat(C, x.device), _stat(C, x.device)
    get_kernel("batch_norm_forward_eval", "cpu")(
        x._arr.reshape(N, C, S), w, b, running_mean._arr, running_var._arr, float(eps),
        out._arr.reshape(N, C, S), mean._arr, invstd._arr)
    return out


# ---------------------------------------------------------------- layer norm

class LayerNorm(Function):
    """y = (x - mean) * rstd * w + b over the last ``len(w.shape)`` dims."""

    _backward_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias, K, eps):
        dt, dev = _kernel_dtype(x.dtype), x.device
        M = x.numel() // K if K else 0
        x2 = _kernel_array(x, dt).reshape(M, K)
        out = empty(x.shape, dt, dev)
        mean, rstd = _stat(M, dev), _stat(M, dev)
        if x.numel():
            get_kernel("layer_norm_forward", dev.type)(
                x2, _param_array(weight, K, 1.0, dt, dev), _param_array(bias, K, 0.0, dt, dev),
                eps, out._array.reshape(M, K), mean._array, rstd._array)
        ctx.save_for_backward(x, weight)
        ctx.stats, ctx.K, ctx.eps = (mean, rstd), K, eps
        return out if out.dtype is x.dtype else out.to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        gx, gw, gb = _norm_grads(_layer_norm_grads, _layer_norm_grad_ops,
                                 (x, weight, grad_out), ctx.stats, need_x,
                                 dict(K=ctx.K, eps=ctx.eps))
        return (gx if need_x else None, gw if need_w else None, gb if need_b else None,
                None, None)


def _layer_norm_grads(x, weight, grad_out, mean, rstd, K, eps, need_x=True):
    """(dx, dweight, dbias) of layer norm by its kernel (dweight/dbias shaped and typed like
    the weight, or (K,) float64 without one; dx None unless `need_x`)."""
    dt, dev = _kernel_dtype(x.dtype), x.device
    M = x.numel() // K if K else 0
    dy2 = _kernel_array(grad_out, dt).reshape(M, K)
    gx = empty(x.shape, dt, dev) if need_x else None
    gw, gb = _stat(K, dev), _stat(K, dev)
    get_kernel("layer_norm_backward", dev.type)(
        dy2, _kernel_array(x, dt).reshape(M, K), mean._array, rstd._array,
        _param_array(weight, K, 1.0, dt, dev), gx._array.reshape(M, K) if need_x else dy2,
        gw._array, gb._array, need_x)
    if gx is not None and gx.dtype is not x.dtype:
        gx = gx.to(x.dtype)
    if weight is not None:
        gw, gb = _grad_as(gw, weight), _grad_as(gb, weight)
    return gx, gw, gb


def _layer_norm_grad_ops(x, weight, grad_out, K, eps):
    """`_layer_norm_grads` with ordinary ops (differentiable again; dweight/dbias shaped
    like the weight)."""
    M = x.numel() // K if K else 0
    x2, dy2 = x.reshape(M, K), grad_out.reshape(M, K)
    g = dy2 * weight.reshape(1, K) if weight is not None else dy2
    gx, xhat = _normalized_grads(g, x2, (1,), eps)
    gw, gb = (dy2 * xhat).sum(0), dy2.sum(0)
    if weight is not None:
        gw, gb = gw.reshape(weight.shape), gb.reshape(weight.shape)
    return gx.reshape(x.shape), gw, gb


_LN_DTYPES = (_dtype.float32, _dtype.float64)
_LN_KEY = ("layer_norm_forward", "cpu")
_SMALL_LN = 1 << 15     # elements: beyond, the skipped layers are a small part of a call


def _small_layer_norm(x, normalized_shape, weight, bias, eps):
    """`LayerNorm.forward`'s kernel call for a plain small C-contiguous float32/float64 CPU
    x whose weight and bias are None or plain contiguous tensors (or nn.Parameters) of its
    dtype, device and the normalized shape, with nothing to record: the registered kernel
    on the same arrays (ones/zeros for a missing weight/bias, the stats bare float64
    arrays it drops), so the same bits, without the checks' and Function.apply's layers
    (8x16 ``layer_norm(x, (16,))`` ~14.7 -> ~5.0 us on a loaded machine). None for
    anything else (the general path then checks and raises)."""
    found = _plain_unwatched(x)
    if found is None or not 0 < found[0] < _SMALL_LN:
        return None
    numel, grad = found
    shape = x._shape
    c = normalized_shape.__class__
    if c is int:
        nshape = (normalized_shape,)
    elif c is tuple or c is Size:
        nshape = tuple(normalized_shape)
    else:
        return None
    k = len(nshape)
    if not k or len(shape) < k or shape[len(shape) - k:] != nshape:
        return None
    K = 1
    for s in nshape:
        K *= s
    params = []
    for t, fill in ((weight, 1), (bias, 0)):
        if t is None:
            params.append((np.ones if fill else np.zeros)(K, x.dtype.np))
            continue
        if ((t.__class__ is not Tensor and t.__class__ is not _parameter_class())
                or t.dtype is not x.dtype or t.device is not x.device
                or (grad and t._requires_grad) or t._shape != nshape
                or t._strides != (_LAYOUTS.get(nshape) or _layout(nshape))[1]):
            return None
        params.append(t._array.reshape(K))
    kernel = _KERNELS.get(_LN_KEY)
    if kernel is None or eps.__class__ is not float:
        return None
    M = numel // K
    out = empty(shape, x.dtype, x.device)
    kernel(x._array.reshape(M, K), params[0], params[1], eps, out._array.reshape(M, K),
           np.empty(M, np.float64), np.empty(M, np.float64))
    return out


def _parameter_class():
    """nn.Parameter (once nbtorch.nn is imported; else None): a weight or bias the small
    path reads as the general one does, by its array (it takes no part in
    ``__torch_function__``: `_disabled_torch_function_impl`)."""
    cls = _PARAMETER[0]
    if cls is None:
        import sys
        module = sys.modules.get("nbtorch.nn.parameter")
        cls = _PARAMETER[0] = getattr(module, "Parameter", None)
    return cls


_PARAMETER = [None]


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Layer normalisation over the trailing ``normalized_shape`` dims.

    Example:
        >>> x = nbtorch.randn(2, 5, 4)
        >>> y = layer_norm(x, (4,))      # each x[i, j, :] has mean 0, var 1
    """
    out = _small_layer_norm(input, normalized_shape, weight, bias, eps)
    if out is not None:
        return out
    _check_floating("layer_norm", input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input.dim() < k or tuple(input._shape)[input.dim() - k:] != shape:
        dims = ", ".join(str(s) for s in shape)
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {dims}], but got input of size{list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t._shape != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(shape)}")
    check_same_device("layer_norm", input, weight, bias)
    return LayerNorm.apply(input, weight, bias, math.prod(shape), float(eps))


# ---------------------------------------------------------------- group norm

class GroupNorm(Function):
    """Normalise each of G channel groups per sample, then a per-channel affine."""

    @staticmethod
    def forward(ctx, x, weight, bias, G, eps):
        dt, dev = _kernel_dtype(x.dtype), x.device
        N, C = x.shape[0], x.shape[1]
        S = math.prod(x.shape[2:])
        x3 = _kernel_array(x, dt).reshape(N, C, S)
        out = empty(x.shape, dt, dev)
        mean, rstd = _stat(N * G, dev), _stat(N * G, dev)
        if x.numel():
            get_kernel("group_norm_forward", dev.type)(
                x3, G, _param_array(weight, C, 1.0, dt, dev), _param_array(bias, C, 0.0, dt, dev),
                eps, out._array.reshape(N, C, S), mean._array, rstd._array)
        ctx.save_for_backward(x, weight)
        ctx.stats, ctx.G, ctx.eps = (mean, rstd), G, eps
        return out if out.dtype is x.dtype else out.to(x.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        params = dict(G=ctx.G, eps=ctx.eps)
        inputs = (x, weight, grad_out) + tuple(ctx.stats)
        gx, gw, gb = _norm_grads(_group_norm_grads, _group_norm_grad_ops, inputs, (),
                                 need_x, params)
        return (gx if need_x else None, gw if need_w else None, gb if need_b else None,
                None, None)


def _group_norm_grads(x, weight, dy, mean, rstd, G, eps, need_x=True):
    """(dx, dweight, dbias) of group norm by its kernel (see `_channel_norm_grads`)."""
    kernel = get_kernel("group_norm_backward", x.device.type)
    return _channel_norm_grads(x, weight, dy, need_x, lambda dy3, x3, w, gx, gw, gb: kernel(
        dy3, x3, mean._array, rstd._array, w, G, gx, gw, gb, need_x))


def _group_norm_grad_ops(x, weight, dy, mean, rstd, G, eps):
    """`_group_norm_grads` with ordinary ops (differentiable again; statistics recomputed
    from x)."""
    N, C = x.shape[0], x.shape[1]
    S = math.prod(x.shape[2:])
    dy3 = dy.reshape(N, C, S)
    g = dy3 * weight.reshape(1, C, 1) if weight is not None else dy3
    gx, xhat = _normalized_grads(g.reshape(N, G, -1), x.reshape(N, G, -1), (2,), eps)
    xhat = xhat.reshape(N, C, S)
    return gx.reshape(x.shape), (dy3 * xhat).sum((0, 2)), dy3.sum((0, 2))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalisation: channels split in ``num_groups`` groups normalised per sample.

    Example:
        >>> x = nbtorch.randn(2, 6, 4, 4)
        >>> y = group_norm(x, 3)
    """
    _check_floating("group_norm", input)
    if input.dim() < 2:
        raise RuntimeError("Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    N, C = input.shape[0], input.shape[1]
    G = int(num_groups)
    if G <= 0 or C % G:
        raise RuntimeError("Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != C):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number "
                               f"of channels in input, but got {name} of shape "
                               f"{list(t.shape)} and input of shape {list(input.shape)}")
    check_same_device("group_norm", input, weight, bias)
    _verify_batch_size([N * C // G, G] + list(input.shape[2:]))
    return GroupNorm.apply(input, weight, bias, G, float(eps))


# ---------------------------------------------------------------- instance norm

def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each channel of each sample over its spatial dims (N, C, *spatial).

    Without running statistics this is ``group_norm`` with one group per
    channel; with them it is batch norm over a (1, N*C, ...) view, the
    running statistics averaged over the batch, as PyTorch does.

    Example:
        >>> y = instance_norm(nbtorch.randn(2, 3, 8, 8))
    """
    _check_floating("instance_norm", input)
    if input.dim() < 3:
        raise ValueError(f"instance_norm: expected 3D or more input (got {input.dim()}D input)")
    N, C = input.shape[0], input.shape[1]
    if use_input_stats and math.prod(input.shape[2:]) == 1:
        raise ValueError("Expected more than 1 spatial element when training, got input size "
                         f"{input.shape}")
    if use_input_stats and running_mean is None and running_var is None:
        return group_norm(input, C, weight, bias, eps)
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_channel_vector(name, t, C)
    x = input.reshape((1, N * C) + tuple(input.shape[2:]))
    w, b = (None if t is None else t.repeat(N) for t in (weight, bias))
    if use_input_stats and momentum is not None:
        # the batch statistics normalise; the running ones are updated by ops (a graph
        # capture records them; batch norm's in-place update of a repeated copy it cannot)
        out = batch_norm(x, None, None, w, b, True, momentum, eps)
        from ..autograd import no_grad
        with no_grad():
            per = input.detach().reshape(N, C, -1)
            for buf, stat in ((running_mean, per.mean), (running_var, per.var)):
                if buf is not None:
                    buf.mul_(1 - momentum).add_(stat(2).mean(0), alpha=momentum)
        return out.reshape(input.shape)
    rep = [None if t is None else t.detach().repeat(N) for t in (running_mean, running_var)]
    out = batch_norm(x, rep[0], rep[1], w, b, use_input_stats, momentum, eps)
    if use_input_stats:
        from ..autograd import no_grad
        with no_grad():
            for buf, r in zip((running_mean, running_var), rep):
                if buf is not None:
                    buf.copy_(r.reshape(N, C).mean(0))
    return out.reshape(input.shape)


# ---------------------------------------------------------------- RMS norm

def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape`` dims.

    ``eps`` defaults to the machine epsilon of the input's dtype (PyTorch's
    default). Composed from nbtorch ops.

    Example:
        >>> y = rms_norm(nbtorch.randn(2, 5), (5,))
    """
    _check_floating("rms_norm", input)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input.dim() < k or tuple(input._shape)[input.dim() - k:] != shape:
        dims = ", ".join(str(s) for s in shape)
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {dims}], but got input of size{list(input.shape)}")
    if eps is None:
        eps = float(_dtype.finfo(input.dtype).eps)
    dims = tuple(range(input.dim() - k, input.dim()))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


# ---------------------------------------------------------------- normalize

def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim`` (F.normalize).

    Example:
        >>> v = normalize(nbtorch.tensor([[3.0, 4.0]]))   # [[0.6, 0.8]]
    """
    if p == 2.0 and isinstance(dim, int) and input.dim() and -input.dim() <= dim < input.dim():
        from .normalization_rows import normalize_l2          # fused on the CPU
        result = normalize_l2(input, dim % input.dim(), eps)
    else:
        denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
        result = input / denom
    if out is not None:
        out.copy_(result)
        return out
    return result

