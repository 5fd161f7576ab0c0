"""Fused scaled-dot-product attention on the CPU: one autograd node for
``dropout(safe_softmax(scale * Q K^T + mask)) V``, forward and backward.

The kernel (kernels/cpu/attention.py) runs the products as BLAS calls on strided
views and the scale, mask, softmax and dropout as one row kernel, so Q, K, V and the
output are never copied into a head-major layout, and backward writes dQ, dK, dV
(or, for a self-attention's packed in-projection, dQKV) straight from the kernel.
PyTorch's semantics: a row masked entirely gets zero probabilities (its
``_safe_softmax``), and dropout draws the same Bernoulli stream as ``F.dropout`` on
the probabilities. With ``create_graph=True`` (and in a graph capture) the backward
kernel runs as one op whose own backward differentiates the op formula
(`_fused_grad.py`), so it can be differentiated again.
"""
import functools

from .. import _dtype
from .._registry import get_kernel
from .._tensor import empty, wrap
from ..autograd import Function, grad_mode
from ._fused_grad import fused_grad
from .dropout import keep_scale, noise_array

__all__ = ["fused_attention_ok", "sdpa_fused", "packed_self_attention"]


def fused_attention_ok(*tensors, mask=None):
    """True where the fused path applies: CPU float32/float64 tensors of one dtype, and a
    mask (bool, or float of that dtype) that needs no gradient."""
    dt = tensors[0].dtype
    if dt not in (_dtype.float32, _dtype.float64):
        return False
    for t in tensors:
        if t.dtype is not dt or t.device.type != "cpu":
            return False
    if mask is not None:
        if mask.device.type != "cpu" or mask.requires_grad or mask.dim() > 4:
            return False
        if mask.dtype is not _dtype.bool and mask.dtype is not dt:
            return False
    return True


def _heads_of(a):
    """A 3-D (B, L, E) array as (1, B, L, E); 4-D as it is."""
    return a[None] if a.ndim == 3 else a


def _forward(ctx, q, k, v, out, mask, dropout_p, scale):
    """Run the kernel on (N, H, ., .) arrays; keep what backward needs on ctx, as tensors
    (a graph capture's backward reads them): the probabilities (and the dropped ones), the
    dropout draws, the mask (its raw array goes to the kernel), or None."""
    dt = _dtype.from_numpy_dtype(q.dtype)
    N, H, L = q.shape[0], q.shape[1], q.shape[2]
    S = k.shape[2]
    probs = empty((N, H, L, S), dt)
    noise = noise_array((N, H, L, S), dropout_p, dt)
    dropped = probs if noise is None else empty((N, H, L, S), dt)
    keep = keep_scale(dropout_p, q.dtype)
    get_kernel("sdpa", "cpu")(q, k, v, None if mask is None else mask._array, scale, noise,
                              keep, out, probs._array, dropped._array)
    ctx.probs, ctx.dropped, ctx.keep, ctx.scale, ctx.mask = probs, dropped, keep, scale, mask
    ctx.drawn = None if noise is None else wrap(noise)


def safe_softmax(s):
    """softmax over the last dim, zeros where a whole row is -inf (PyTorch's
    _safe_softmax), built from ops: the dead rows are zeroed before the softmax as well,
    so no NaN reaches the gradients (or their gradients)."""
    dead = (s == float("-inf")).all(-1, keepdim=True)
    return s.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)


def _grads_by_ops(q, k, v, g, mask, drawn, keep, scale):
    """dq, dk, dv of (N, H, ., .) tensors from nbtorch ops (differentiable again)."""
    s = q.matmul(k.transpose(-2, -1)) * scale
    if mask is not None:
        s = s + mask
    p = safe_softmax(s)
    drop = None if drawn is None else drawn * float(keep)
    pd = p if drop is None else p * drop
    dpd = g.matmul(v.transpose(-2, -1))
    dv = pd.transpose(-2, -1).matmul(g)
    dp = dpd if drop is None else dpd * drop
    ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * scale
    return ds.matmul(k), ds.transpose(-2, -1).matmul(q), dv


class ScaledDotProductAttention(Function):
    """Attention over (N, H, L, E) or (B, L, E) query, key and value of one shape but L/S
    and E/Ev; `mask` an additive float tensor broadcastable to (N, H, L, S), or None. The
    mask is a tensor argument, not a raw array, so that a graph capture (nbtorch.compile)
    records it as a value: as a constant it replayed the first call's mask."""

    @staticmethod
    def forward(ctx, q, k, v, mask, dropout_p, scale):
        out = empty(tuple(q.shape[:-1]) + (v.shape[-1],), q.dtype)
        _forward(ctx, _heads_of(q._array), _heads_of(k._array), _heads_of(v._array),
                 _heads_of(out._array), mask, dropout_p, scale)
        ctx.save_for_backward(q, k, v)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v = ctx.saved_tensors
        need = ctx.needs_input_grad[:3]
        params = dict(keep=ctx.keep, scale=ctx.scale)
        if grad_mode.is_grad_enabled():      # create_graph=True (or a graph capture)
            grads = fused_grad(functools.partial(_sdpa_grads, **params),
                               functools.partial(_sdpa_grads_by_ops, **params),
                               (q, k, v, g, ctx.mask, ctx.drawn), (ctx.probs, ctx.dropped))
        else:
            grads = _sdpa_grads(q, k, v, g, ctx.mask, ctx.drawn, ctx.probs, ctx.dropped,
                                need=need, **params)
        return tuple(t if want else None for t, want in zip(grads, need)) + (None,) * 3


def _sdpa_grads(q, k, v, g, mask, drawn, probs, dropped, keep, scale, need=(True,) * 3):
    """(dq, dk, dv) of ScaledDotProductAttention by the backward kernel (None where not
    `need`ed)."""
    grads = [empty(t.shape, t.dtype) if want else None for t, want in zip((q, k, v), need)]
    get_kernel("sdpa_backward", "cpu")(
        _heads_of(q._array), _heads_of(k._array), _heads_of(v._array), probs._array,
        dropped._array, None if drawn is None else drawn._array, keep, scale,
        _heads_of(g.contiguous()._array), *(None if t is None else _heads_of(t._array)
                                            for t in grads))
    return tuple(grads)


def _sdpa_grads_by_ops(q, k, v, g, mask, drawn, keep, scale):
    """`_sdpa_grads` with ordinary ops (3-D inputs as one head)."""
    if q.dim() == 3:
        q, k, v, g = (t.unsqueeze(0) for t in (q, k, v, g))
        return tuple(d.squeeze(0) for d in _grads_by_ops(q, k, v, g, mask, drawn, keep,
                                                          scale))
    return _grads_by_ops(q, k, v, g, mask, drawn, keep, scale)


def sdpa_fused(query, key, value, mask, dropout_p, scale):
    """The fused node for scaled_dot_product_attention's checked (..., L, E) inputs."""
    return ScaledDotProductAttention.apply(query, key, value, mask, dropout_p, scale)


# ---------------------------------------------------------------- packed self-attention

def _split_heads(a, heads, batch_first):
    """q, k, v (N, H, L, hd) views of a packed (N, L, 3E) or (L, N, 3E) array."""
    lead0, lead1, three_e = a.shape
    hd = three_e // (3 * heads)
    a5 = a.reshape(lead0, lead1, 3, heads, hd)
    order = (0, 2, 1, 3) if batch_first else (1, 2, 0, 3)
    return tuple(a5[:, :, j].transpose(order) for j in range(3))


def _merge_view(a, heads, batch_first):
    """The (N, H, L, hd) view of an (N, L, E) or (L, N, E) array."""
    lead0, lead1, e = a.shape
    a4 = a.reshape(lead0, lead1, heads, e // heads)
    return a4.transpose((0, 2, 1, 3) if batch_first else (1, 2, 0, 3))


class PackedSelfAttention(Function):
    """Self-attention from the packed in-projection qkv (N, L, 3E) (batch_first) or
    (L, N, 3E), contiguous, to the heads' output merged back to (N, L, E) / (L, N, E);
    its backward gives dqkv in qkv's layout in one piece."""

    @staticmethod
    def forward(ctx, qkv, heads, batch_first, mask, dropout_p, scale):
        a = qkv._array
        out = empty(tuple(qkv.shape[:2]) + (qkv.shape[2] // 3,), qkv.dtype)
        q, k, v = _split_heads(a, heads, batch_first)
        _forward(ctx, q, k, v, _merge_view(out._array, heads, batch_first), mask, dropout_p,
                 scale)
        ctx.heads, ctx.batch_first = heads, batch_first
        ctx.save_for_backward(qkv)
        return out

    @staticmethod
    def backward(ctx, g):
        qkv, = ctx.saved_tensors
        params = dict(heads=ctx.heads, bf=ctx.batch_first, keep=ctx.keep, scale=ctx.scale)
        if grad_mode.is_grad_enabled():      # create_graph=True (or a graph capture)
            dqkv, = fused_grad(functools.partial(_packed_grads, **params),
                               functools.partial(_packed_grads_by_ops, **params),
                               (qkv, g, ctx.mask, ctx.drawn), (ctx.probs, ctx.dropped))
        else:
            dqkv, = _packed_grads(qkv, g, ctx.mask, ctx.drawn, ctx.probs, ctx.dropped,
                                  **params)
        return (dqkv,) + (None,) * 5


def _packed_grads(qkv, g, mask, drawn, probs, dropped, heads, bf, keep, scale):
    """(dqkv,) of PackedSelfAttention by the backward kernel, in qkv's layout."""
    dqkv = empty(qkv.shape, qkv.dtype)
    get_kernel("sdpa_backward", "cpu")(
        *_split_heads(qkv._array, heads, bf), probs._array, dropped._array,
        None if drawn is None else drawn._array, keep, scale,
        _merge_view(g.contiguous()._array, heads, bf), *_split_heads(dqkv._array, heads, bf))
    return (dqkv,)


def _packed_grads_by_ops(qkv, g, mask, drawn, heads, bf, keep, scale):
    """(dqkv,) from nbtorch ops (differentiable again)."""
    from .joining import cat
    a0, a1, three_e = qkv.shape
    e = three_e // 3
    order = (0, 2, 1, 3) if bf else (1, 2, 0, 3)

    def split(t, j):
        return t[..., j * e:(j + 1) * e].reshape(a0, a1, heads, e // heads).permute(order)
    q, k, v = (split(qkv, j) for j in range(3))
    gh = g.reshape(a0, a1, heads, e // heads).permute(order)
    back = (0, 2, 1, 3) if bf else (2, 0, 1, 3)
    return (cat([d.permute(back).reshape(a0, a1, e)
                 for d in _grads_by_ops(q, k, v, gh, mask, drawn, keep, scale)], -1),)


def packed_self_attention(qkv, heads, batch_first, mask, dropout_p, scale):
    """The fused node for a self-attention's contiguous packed projection."""
    return PackedSelfAttention.apply(qkv, heads, batch_first, mask, dropout_p, scale)
