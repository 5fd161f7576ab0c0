"""Dropout fused with its neighbour as one autograd node on the CPU (the Transformer
layers in training): ``dropout(relu(h), p)`` (the feed-forward block) and
``layer_norm(x + dropout(s, p))`` (each post-norm residual). One pass replaces relu or
the add, the mask's scaling and the product, and their backward nodes. The mask is
F.dropout's (the same Bernoulli draws after the same seed) and the values are the
composite's (kernels/cpu/dropout_fused.py, the layer-norm kernels); with
``create_graph=True`` the backward is built from ops.
"""
from .. import _dtype
from .._registry import get_kernel
from .._tensor import CPU, empty, wrap
from ..autograd import Function, grad_mode
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
        ctx.noise, ctx.keep = noise, keep
        ctx.save_for_backward(h)
        return out

    @staticmethod
    def backward(ctx, g):
        h, = ctx.saved_tensors
        if grad_mode.is_grad_enabled():            # create_graph=True: differentiable ops
            gm = g * (wrap(ctx.noise) * float(ctx.keep))
            return gm.masked_fill(h <= 0, 0.0), None
        g = g.contiguous()
        out = empty(tuple(h.shape), h.dtype, CPU)
        get_kernel("relu_dropout_backward", "cpu")(
            g._array.reshape(-1), h._array.reshape(-1), ctx.noise.reshape(-1), ctx.keep,
            out._array.reshape(-1))
        return out, None


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
        ctx.noise, ctx.keep = noise, keep
        K = 1
        for d in shape:
            K *= d
        return LayerNorm.forward(ctx, y, weight, bias, K, eps)   # saves y, weight, stats

    @staticmethod
    def backward(ctx, g):
        from .normalization import LayerNorm
        if grad_mode.is_grad_enabled():            # create_graph=True: differentiable ops
            return _dropout_add_layer_norm_ops(ctx, g) + (None, None, None)
        need = ctx.needs_input_grad
        need_x, need_s = need[:2]
        ctx.needs_input_grad = (need_x or need_s,) + tuple(need[2:4])   # LayerNorm's
        try:
            gy, gw, gb = LayerNorm.backward(ctx, g)[:3]
        finally:
            ctx.needs_input_grad = need
        gs = None
        if need_s:
            gy = gy.contiguous()
            gs = empty(tuple(gy.shape), gy.dtype, CPU)
            get_kernel("dropout_grad", "cpu")(gy._array.reshape(-1), ctx.noise.reshape(-1),
                                              ctx.keep, gs._array.reshape(-1))
        return (gy if need_x else None), gs, gw, gb, None, None, None


def _dropout_add_layer_norm_ops(ctx, g):
    """(dx, ds, dweight, dbias) recomputed with ordinary ops, differentiable again."""
    from ..autograd.engine import grad
    from .normalization import layer_norm
    x, s = ctx.inputs
    weight, bias = ctx.saved_tensors[1], ctx.bias
    out = layer_norm(x + s * (wrap(ctx.noise) * float(ctx.keep)), ctx.shape, weight, bias,
                     ctx.eps)
    inputs = (x, s, weight, bias)
    want = [t for t, need in zip(inputs, ctx.needs_input_grad) if need]
    got = iter(grad([out], want, [g], retain_graph=True, create_graph=True,
                    allow_unused=True))
    return tuple(next(got) if need else None for need in ctx.needs_input_grad[:4])


def dropout_add_layer_norm(x, s, p, normalized_shape, weight, bias, eps):
    """layer_norm(x + dropout(s, p, training=True), normalized_shape, weight, bias, eps)
    for `dropout_add_layer_norm_ok` inputs."""
    return DropoutAddLayerNorm.apply(x, s, weight, bias, p, tuple(normalized_shape),
                                     float(eps))
