"""Fused scaled-dot-product attention on the CPU: one autograd node for
``dropout(safe_softmax(scale * Q K^T + mask)) V``, forward and backward.

The kernel (kernels/cpu/attention.py) runs the products as BLAS calls on strided
views and the scale, mask, softmax and dropout as one row kernel, so Q, K, V and the
output are never copied into a head-major layout, and backward writes dQ, dK, dV
(or, for a self-attention's packed in-projection, dQKV) straight from the kernel.
PyTorch's semantics: a row masked entirely gets zero probabilities (its
``_safe_softmax``), and dropout draws the same Bernoulli stream as ``F.dropout`` on
the probabilities. With ``create_graph=True`` the backward is built from nbtorch ops,
so it can be differentiated again.
"""
from .. import _dtype
from .._registry import get_kernel
from .._tensor import empty, wrap
from ..autograd import Function, grad_mode
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
    """Run the kernel on (N, H, ., .) arrays; keep what backward needs on ctx. `mask`: a
    tensor (its raw array goes to the kernel; the tensor is kept for the backward by ops),
    or None."""
    ctx.mask_tensor = mask
    mask = None if mask is None else mask._array
    N, H, L = q.shape[0], q.shape[1], q.shape[2]
    S = k.shape[2]
    p = empty((N, H, L, S), _dtype.from_numpy_dtype(q.dtype))._array
    noise = noise_array((N, H, L, S), dropout_p, _dtype.from_numpy_dtype(q.dtype))
    pd = p if noise is None else empty(p.shape, _dtype.from_numpy_dtype(q.dtype))._array
    keep = keep_scale(dropout_p, q.dtype)
    get_kernel("sdpa", "cpu")(q, k, v, mask, scale, noise, keep, out, p, pd)
    ctx.p, ctx.pd, ctx.noise, ctx.keep, ctx.scale, ctx.mask = p, pd, noise, keep, scale, mask


def _backward(ctx, q, k, v, g, dq, dk, dv):
    get_kernel("sdpa_backward", "cpu")(q, k, v, ctx.p, ctx.pd, ctx.noise, ctx.keep,
                                       ctx.scale, g, dq, dk, dv)


def safe_softmax(s):
    """softmax over the last dim, zeros where a whole row is -inf (PyTorch's
    _safe_softmax), built from ops: the dead rows are zeroed before the softmax as well,
    so no NaN reaches the gradients (or their gradients)."""
    dead = (s == float("-inf")).all(-1, keepdim=True)
    return s.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)


def _grads_by_ops(ctx, q, k, v, g):
    """dq, dk, dv of (N, H, ., .) tensors from nbtorch ops (create_graph=True)."""
    s = q.matmul(k.transpose(-2, -1)) * ctx.scale
    if ctx.mask_tensor is not None:
        s = s + ctx.mask_tensor
    p = safe_softmax(s)
    drop = None if ctx.noise is None else wrap(ctx.noise) * float(ctx.keep)
    pd = p if drop is None else p * drop
    dpd = g.matmul(v.transpose(-2, -1))
    dv = pd.transpose(-2, -1).matmul(g)
    dp = dpd if drop is None else dpd * drop
    ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * ctx.scale
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
        need = ctx.needs_input_grad
        if grad_mode.is_grad_enabled():
            dq, dk, dv = _grads_by_ops(ctx, q, k, v, g)
            return (dq if need[0] else None, dk if need[1] else None,
                    dv if need[2] else None, None, None, None)
        grads = [empty(t.shape, t.dtype) if want else None for t, want in zip((q, k, v), need)]
        _backward(ctx, _heads_of(q._array), _heads_of(k._array), _heads_of(v._array),
                  _heads_of(g.contiguous()._array),
                  *(None if t is None else _heads_of(t._array) for t in grads))
        return tuple(grads) + (None, None, None)


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
        heads, bf = ctx.heads, ctx.batch_first
        if grad_mode.is_grad_enabled():
            return (_packed_grads_by_ops(ctx, qkv, g),) + (None,) * 5
        dqkv = empty(qkv.shape, qkv.dtype)
        _backward(ctx, *_split_heads(qkv._array, heads, bf),
                  _merge_view(g.contiguous()._array, heads, bf),
                  *_split_heads(dqkv._array, heads, bf))
        return (dqkv,) + (None,) * 5


def _packed_grads_by_ops(ctx, qkv, g):
    """dqkv from nbtorch ops (create_graph=True)."""
    from .joining import cat
    heads, bf = ctx.heads, ctx.batch_first
    a0, a1, three_e = qkv.shape
    e = three_e // 3
    order = (0, 2, 1, 3) if bf else (1, 2, 0, 3)

    def split(t, j):
        return t[..., j * e:(j + 1) * e].reshape(a0, a1, heads, e // heads).permute(order)
    q, k, v = (split(qkv, j) for j in range(3))
    gh = g.reshape(a0, a1, heads, e // heads).permute(order)
    back = (0, 2, 1, 3) if bf else (2, 0, 1, 3)
    return cat([d.permute(back).reshape(a0, a1, e) for d in _grads_by_ops(ctx, q, k, v, gh)],
               -1)


def packed_self_attention(qkv, heads, batch_first, mask, dropout_p, scale):
    """The fused node for a self-attention's contiguous packed projection."""
    return PackedSelfAttention.apply(qkv, heads, batch_first, mask, dropout_p, scale)
