"""``dropout(relu(h), p)`` in training as one autograd node on the CPU (the feed-forward
block of the Transformer layers): one pass forward and one backward instead of relu,
the mask's scaling, the product and their backward nodes. The mask is F.dropout's (the
same Bernoulli draws after the same seed) and every value is bit for bit the composite's
(kernels/cpu/relu_dropout.py); with ``create_graph=True`` the backward is built from ops.
"""
from .. import _dtype
from .._registry import get_kernel
from .._tensor import CPU, empty, wrap
from ..autograd import Function, grad_mode
from .attention import _keep, _noise

__all__ = ["relu_dropout", "relu_dropout_ok"]


def relu_dropout_ok(h, p):
    """True where the fused node applies: a non-empty CPU float32/float64 tensor and
    0 < p < 1."""
    return (0.0 < p < 1.0 and h.device.type == "cpu" and h.numel() > 0
            and (h.dtype is _dtype.float32 or h.dtype is _dtype.float64))


class ReluDropout(Function):
    @staticmethod
    def forward(ctx, h, p):
        h = h.contiguous()
        noise = _noise(tuple(h.shape), p, h.dtype)
        keep = _keep(p, noise.dtype)
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
