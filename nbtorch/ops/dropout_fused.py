"""Dropout fused with its neighbour as one autograd node on the CPU (the Transformer
layers in training): ``dropout(relu(h), p)`` (the feed-forward block) and
``layer_norm(x + dropout(s, p))`` (each post-norm residual). One pass replaces relu or
the add, the mask's scaling and the product, and their backward nodes. The mask is
F.dropout's (the same Bernoulli draws after the same seed) and the values are the
composite's (kernels/cpu/dropout_fused.py, the layer-norm kernels); with
``create_graph=True`` (and in a graph capture) the backward kernels run as one op whose
own backward differentiates the op formula (`_fused_grad.py`).
"""
import functools

from .. import _dtype
from .._registry import get_kernel
from .._tensor import CPU, empty, wrap
from ..autograd import Function, grad_mode
from ._fused_grad import fused_grad
from .dropout import keep_scale, noise_array

__all__ = ["relu_dropout", "relu_dropout_ok", "dropout_add_layer_norm",
           "dropout_add_layer_norm_ok"]


def relu_dropout_ok(h, p):
    """True where the fused node applies: a non-empty CPU float32/float64 tensor and
    0 < p < 1."""
    return (0.0 < p < 1.0 and h.device.type == "cpu" and h.numel() > 0
            and (h.dtype is _dtype.float32 or h.dtype is _dtype.float64))


def dropout_add_layer_norm_ok(x, s, p, weight, bias):
    """True where `dropout_add_layer_norm` applies: x and s of one shape, dtype and
    device as `relu_dropout_ok` asks, and affine parameters (or None) of that dtype."""
    if not relu_dropout_ok(x, p) or s.dtype is not x.dtype or s.device.type != "cpu":
        return False
    if s._shape != x._shape:
        return False
    return all(t is None or (t.dtype is x.dtype and t.device.type == "cpu")
               for t in (weight, bias))


class ReluDropout(Function):
    @staticmethod
    def forward(ctx, h, p):
        h = h.contiguous()
        noise = noise_array(tuple(h.shape), p, h.dtype)
        keep = keep_scale(p, noise.dtype)
        out = empty(tuple(h.shape), h.dtype, CPU)
        get_kernel("relu_dropout", "cpu")(h._array.reshape(-1), noise.reshape(-1), keep,
                                          out._array.reshape(-1))
        ctx.keep = keep
        ctx.drawn = wrap(noise)     # the draws as a tensor: a graph capture's backward reads it
        ctx.save_for_backward(h)
        return out

    @staticmethod
    def backward(ctx, g):
        h, = ctx.saved_tensors
        if grad_mode.is_grad_enabled():      # create_graph=True (or a graph capture)
            dh, = fused_grad(functools.partial(_relu_dropout_grad, keep=ctx.keep),
                             functools.partial(_relu_dropout_grad_ops, keep=ctx.keep),
                             (h, g, ctx.drawn))
            return dh, None
        return _relu_dropout_grad(h, g, ctx.drawn, ctx.keep)[0], None


def _relu_dropout_grad(h, g, drawn, keep):
    """(dh,) of ReluDropout by its kernel."""
    g = g.contiguous()
    out = empty(tuple(h.shape), h.dtype, CPU)
    get_kernel("relu_dropout_backward", "cpu")(
        g._array.reshape(-1), h._array.reshape(-1), drawn._array.reshape(-1), keep,
        out._array.reshape(-1))
    return (out,)


def _relu_dropout_grad_ops(h, g, drawn, keep):
    """`_relu_dropout_grad` with ordinary ops (differentiable again)."""
    return ((g * (drawn * float(keep))).masked_fill(h <= 0, 0.0),)


def relu_dropout(h, p):
    """F.dropout(F.relu(h), p, training=True) for `relu_dropout_ok` inputs."""
    return ReluDropout.apply(h, p)


class DropoutAddLayerNorm(Function):
    """layer_norm(x + dropout(s, p)) over the last K elements (PyTorch's post-norm
    residual); backward is the layer-norm kernel's, and s's gradient that times the
    mask."""

    _backward_name = "NativeLayerNormBackward0"

    @staticmethod
    def forward(ctx, x, s, weight, bias, p, shape, eps):
        from .normalization import LayerNorm
        ctx.inputs, ctx.bias, ctx.shape = (x, s), bias, shape
        x, s = x.contiguous(), s.contiguous()
        noise = noise_array(tuple(s.shape), p, s.dtype)
        keep = keep_scale(p, noise.dtype)
        y = empty(tuple(x.shape), x.dtype, CPU)
        get_kernel("dropout_add", "cpu")(x._array.reshape(-1), s._array.reshape(-1),
                                         noise.reshape(-1), keep, y._array.reshape(-1))
        ctx.keep = keep
        ctx.drawn = wrap(noise)     # the draws as a tensor: a graph capture's backward reads it
        ctx.pre_norm = y            # x + dropout(s): read by the backward kernel (as above)
        K = 1
        for d in shape:
            K *= d
        return LayerNorm.forward(ctx, y, weight, bias, K, eps)   # saves y, weight, stats

    @staticmethod
    def backward(ctx, g):
        x, s = ctx.inputs
        weight = ctx.saved_tensors[1]
        need = ctx.needs_input_grad[:4]
        params = dict(keep=ctx.keep, shape=ctx.shape, eps=ctx.eps)
        inputs = (x, s, weight, ctx.bias, g, ctx.drawn)
        extras = (ctx.pre_norm,) + tuple(ctx.stats)
        if grad_mode.is_grad_enabled():      # create_graph=True (or a graph capture)
            grads = fused_grad(functools.partial(_dropout_add_layer_norm_grads, **params),
                               functools.partial(_dropout_add_layer_norm_ops, **params),
                               inputs, extras)
        else:
            grads = _dropout_add_layer_norm_grads(*inputs, *extras, **params)
        dx, ds, dw, db = grads
        return (dx if need[0] else None, ds if need[1] else None,
                dw.reshape(weight.shape) if need[2] else None,
                db.reshape(weight.shape) if need[3] else None, None, None, None)


def _dropout_add_layer_norm_grads(x, s, weight, bias, g, drawn, y, mean, rstd, keep, shape,
                                  eps):
    """(dx, ds, dweight, dbias) of DropoutAddLayerNorm by the kernels: the layer norm's
    backward at y = x + dropout(s), then ds = dy times the mask."""
    from .normalization import _layer_norm_grads
    K = 1
    for d in shape:
        K *= d
    gy, gw, gb = _layer_norm_grads(y, weight, g, mean, rstd, K, eps)
    gy = gy.contiguous()
    gs = empty(tuple(gy.shape), gy.dtype, CPU)
    get_kernel("dropout_grad", "cpu")(gy._array.reshape(-1), drawn._array.reshape(-1), keep,
                                      gs._array.reshape(-1))
    return gy, gs, gw, gb


def _dropout_add_layer_norm_ops(x, s, weight, bias, g, drawn, keep, shape, eps):
    """`_dropout_add_layer_norm_grads` with ordinary ops, as explicit expressions of the
    inputs (differentiable to any order; differentiating a recomputed layer norm with
    respect to both x and s counted the path from x through s twice when s depends on x,
    as a Transformer's sublayer output does)."""
    from .normalization import _layer_norm_grad_ops
    K = 1
    for d in shape:
        K *= d
    mask = drawn * float(keep)
    gy, gw, gb = _layer_norm_grad_ops(x + s * mask, weight, g, K, eps)
    return gy, gy * mask, gw, gb


def dropout_add_layer_norm(x, s, p, normalized_shape, weight, bias, eps):
    """layer_norm(x + dropout(s, p, training=True), normalized_shape, weight, bias, eps)
    for `dropout_add_layer_norm_ok` inputs."""
    return DropoutAddLayerNorm.apply(x, s, weight, bias, p, tuple(normalized_shape),
                                     float(eps))
