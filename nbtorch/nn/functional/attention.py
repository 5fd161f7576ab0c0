"""Attention: scaled_dot_product_attention and multi_head_attention_forward.

Both are composed from nbtorch ops (batched matmul through BLAS, the softmax
kernel, dropout), so their gradients come from those ops' backward formulas.

Mask conventions follow PyTorch, and differ between the two functions:
for ``scaled_dot_product_attention`` a boolean ``attn_mask`` is True where
attention is *allowed*; for ``multi_head_attention_forward`` a boolean
``attn_mask``/``key_padding_mask`` is True where it is *not* allowed. Float
masks are added to the attention scores in both.
"""
import math

import numpy as np

from ... import _dtype

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_NEG_INF = float("-inf")


def _functional():
    """nbtorch.nn.functional, imported on first use (it imports this module)."""
    from .. import functional
    return functional


def _tensor(array, like):
    from ...ops.creation import tensor
    return tensor(array, dtype=like.dtype, device=like.device)


def _causal_bias(L, S, like):
    """(L, S) float mask: 0 on and below the diagonal, -inf above (as ``tril``)."""
    return _tensor(np.where(np.tri(L, S, dtype=bool), 0.0, _NEG_INF), like)


def _float_mask(mask, like, true_means_masked):
    """A boolean mask as an additive float mask (-inf where masked); float masks as they are."""
    if mask.dtype is _dtype.bool:
        blocked = mask if true_means_masked else mask.logical_not()
        zeros = mask.new_zeros(mask.shape, dtype=like.dtype)
        return zeros.masked_fill(blocked, _NEG_INF)
    if not mask.dtype.is_floating_point:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: {mask.dtype} and "
                           f"query.dtype: {like.dtype} instead.")
    return mask if mask.dtype is like.dtype else mask.to(like.dtype)


def _attention_ops():
    from ...ops import attention
    return attention


def _broadcasts_into(mask, shape):
    """True when `mask` broadcasts to `shape` without adding dims or growing it."""
    if mask.dim() > len(shape):
        return False
    return all(m in (1, s) for m, s in zip(mask.shape[::-1], shape[::-1]))


def _sdpa_fusable(query, key, value, attn_mask, dropout_p):
    """The fused CPU node covers 3-D and 4-D inputs with equal batch dims, dropout below 1
    and a mask that needs no gradient and broadcasts into the scores."""
    if query.device.type != "cpu" or not 3 <= query.dim() <= 4 or dropout_p >= 1.0:
        return False
    if not key.dim() == value.dim() == query.dim() or query.numel() == 0 or \
            key.numel() == 0 or value.numel() == 0:
        return False
    if not query.shape[:-2] == key.shape[:-2] == value.shape[:-2]:
        return False
    if attn_mask is not None and not _broadcasts_into(
            attn_mask, tuple(query.shape[:-1]) + (key.shape[-2],)):
        return False
    return _attention_ops().fused_attention_ok(query, key, value, mask=attn_mask)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(Q K^T * scale + mask) V over the last two dims of (..., L, E) inputs.

    Args:
        query: (..., L, E); key: (..., S, E); value: (..., S, Ev).
        attn_mask: broadcastable to (..., L, S); bool (True = may attend) or float (added).
        dropout_p: dropout probability on the attention weights.
        is_causal: mask out keys after each query (cannot be combined with attn_mask).
        scale: defaults to 1/sqrt(E).
        enable_gqa: let key/value have fewer heads (dim -3) than query.

    Example:
        >>> q = k = v = nbtorch.randn(2, 4, 5, 8)
        >>> scaled_dot_product_attention(q, k, v, is_causal=True).shape
        torch.Size([2, 4, 5, 8])
    """
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("scaled_dot_product_attention: query, key and value must have at "
                           f"least 2 dims, got {query.dim()}, {key.dim()} and {value.dim()}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise RuntimeError("scaled_dot_product_attention: expected query (..., L, E), key "
                           f"(..., S, E) and value (..., S, Ev), got {list(query.shape)}, "
                           f"{list(key.shape)} and {list(value.shape)}")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                           "set when is_causal=True")
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        groups = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(groups, -3)
        value = value.repeat_interleave(groups, -3)
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if _sdpa_fusable(query, key, value, attn_mask, dropout_p):
        mask = None
        if is_causal:
            mask = _causal_bias(L, S, query)
        elif attn_mask is not None:
            mask = _float_mask(attn_mask, query, true_means_masked=False)
        return _attention_ops().sdpa_fused(query, key, value, mask, dropout_p, scale)
    scores = (query * scale).matmul(key.transpose(-2, -1))
    if is_causal:
        scores = scores + _causal_bias(L, S, scores)
    elif attn_mask is not None:
        scores = scores + _float_mask(attn_mask, scores, true_means_masked=False)
    # a row the mask hides entirely gives zeros, as PyTorch's _safe_softmax does
    weights = _attention_ops().safe_softmax(scores) if attn_mask is not None else \
        scores.softmax(-1)
    if dropout_p > 0.0:
        weights = _functional().dropout(weights, dropout_p, training=True)
    return weights.matmul(value)


# ---------------------------------------------------------------- multi-head attention

def _linear(x, weight, bias):
    return _functional().linear(x, weight, bias)


def _in_projection(query, key, value, num_heads, in_proj_weight, in_proj_bias,
                   use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight):
    """q, k, v projections; one matmul when query, key and value are the same tensor."""
    E = query.shape[-1]
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias[:E], in_proj_bias[E:2 * E], in_proj_bias[2 * E:]
    else:
        b_q = b_k = b_v = None
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise RuntimeError("use_separate_proj_weight is False but in_proj_weight is None")
        if query is key and key is value:
            qkv = _linear(query, in_proj_weight, in_proj_bias)
            return qkv[..., :E], qkv[..., E:2 * E], qkv[..., 2 * E:]
        w_q, w_k, w_v = in_proj_weight[:E], in_proj_weight[E:2 * E], in_proj_weight[2 * E:]
    else:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise RuntimeError("use_separate_proj_weight is True but q_proj_weight, "
                               "k_proj_weight or v_proj_weight is None")
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    return _linear(query, w_q, b_q), _linear(key, w_k, b_k), _linear(value, w_v, b_v)


def _pad_last(mask, like):
    """Append one zero column to a mask's last dim (for bias_k/bias_v, add_zero_attn)."""
    if mask is None:
        return None
    from ...ops.creation import zeros
    return _cat([mask, zeros(tuple(mask.shape[:-1]) + (1,), dtype=mask.dtype,
                             device=mask.device)], -1)


def _cat(tensors, dim):
    import nbtorch
    return nbtorch.cat(tensors, dim)


def _check_mha_shapes(query, key, value, key_padding_mask, attn_mask, num_heads):
    """True when the input is batched (3-D); errors like PyTorch's for bad shapes."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found a {key_padding_mask.dim()}-D tensor "
                                 "instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, "
                                 f"2-D or 3-D but found a {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be "
                                 f"2-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 1-D but found a {key_padding_mask.dim()}-D "
                                 "tensor instead")
        if attn_mask is not None and attn_mask.dim() == 3 and \
                attn_mask.shape[0] != num_heads:
            raise AssertionError(f"Expected `attn_mask` shape to be ({num_heads}, "
                                 f"{query.shape[0]}, {key.shape[0]}) but got "
                                 f"{tuple(attn_mask.shape)}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.dim()}-D query tensor")


def _attn_mask_3d(attn_mask, bsz, num_heads, L, S, like):
    """attn_mask as a float (1 or bsz*num_heads, L, S) tensor, shape-checked."""
    mask = _float_mask(attn_mask, like, true_means_masked=True)
    if mask.dim() == 2:
        if tuple(mask.shape) != (L, S):
            raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(mask.shape)}, but "
                               f"should be {(L, S)}.")
        return mask.unsqueeze(0)
    if tuple(mask.shape) != (bsz * num_heads, L, S):
        raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(mask.shape)}, but should "
                           f"be {(bsz * num_heads, L, S)}.")
    return mask


def _mha_fusable(query, key, value, need_weights, separate, bias_k, bias_v, add_zero_attn,
                 in_w, in_b, out_w, out_b, attn_mask, key_padding_mask, dropout_p):
    """The fused CPU node covers self-attention (query is key is value) through the packed
    in-projection, without weights returned, bias_k/bias_v or add_zero_attn."""
    if need_weights or separate or not (query is key and key is value) or in_w is None:
        return False
    if bias_k is not None or bias_v is not None or add_zero_attn or dropout_p >= 1.0:
        return False
    if query.numel() == 0:
        return False
    params = [t for t in (query, in_w, in_b, out_w, out_b) if t is not None]
    ok = _attention_ops().fused_attention_ok
    return ok(*params) and all(m is None or ok(query, mask=m)
                               for m in (attn_mask, key_padding_mask))


def _mha_mask(attn_mask, key_padding_mask, bsz, num_heads, L, like):
    """The additive (N, H, L, S)-broadcastable float tensor of both masks, or None."""
    mask = None
    if attn_mask is not None:
        m = _attn_mask_3d(attn_mask, bsz, num_heads, L, L, like)
        lead = (1, 1) if m.shape[0] == 1 else (bsz, num_heads)
        mask = m.reshape(lead + (L, L))
    if key_padding_mask is not None:
        kpm = _float_mask(key_padding_mask, like, true_means_masked=True)
        if tuple(kpm.shape) != (bsz, L):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, L)}, but got "
                                 f"{tuple(kpm.shape)}")
        kpm = kpm.reshape(bsz, 1, 1, L)
        mask = kpm if mask is None else mask + kpm
    return mask


def _packed_projection(query, in_w, in_b):
    """(qkv, batch_first): the in-projection of (L, N, E) `query` in the layout the input
    is stored in, contiguous: (N, L, 3E) for a transposed batch-first input (no copy of
    it), else (L, N, 3E)."""
    batch_first = not query.is_contiguous() and query.transpose(0, 1).is_contiguous()
    x = query.transpose(0, 1) if batch_first else query
    return _linear(x, in_w, in_b).contiguous(), batch_first


def _fused_self_attention(qkv, batch_first, num_heads, out_w, out_b, attn_mask,
                          key_padding_mask, dropout_p):
    """The fused node on the packed projection, then the out-projection, in qkv's layout."""
    L, bsz = (qkv.shape[1], qkv.shape[0]) if batch_first else (qkv.shape[0], qkv.shape[1])
    E = qkv.shape[2] // 3
    mask = _mha_mask(attn_mask, key_padding_mask, bsz, num_heads, L, qkv)
    out = _attention_ops().packed_self_attention(qkv, num_heads, batch_first, mask, dropout_p,
                                                 1.0 / math.sqrt(E // num_heads))
    return _linear(out, out_w, out_b)


def batch_first_self_attention(x, num_heads, in_w, in_b, out_w, out_b, dropout_p, training,
                               key_padding_mask=None, attn_mask=None, is_causal=False):
    """nn.MultiheadAttention(batch_first=True)'s self-attention of (N, L, E) `x` without
    weights, through the fused node in x's own layout (no transposed views); None where
    the fused node does not apply (the caller then runs multi_head_attention_forward)."""
    # sizes read from `_shape`: a graph capture would otherwise record (and warn about)
    # what only picks the path
    if x.dim() != 3 or x._shape[-1] != in_w._shape[-1] or (is_causal and attn_mask is None):
        return None
    _check_mha_shapes(x, x, x, key_padding_mask, attn_mask, num_heads)
    dropout_p = dropout_p if training else 0.0
    if not _mha_fusable(x, x, x, False, False, None, None, False, in_w, in_b, out_w, out_b,
                        attn_mask, key_padding_mask, dropout_p):
        return None
    qkv = _linear(x, in_w, in_b).contiguous()
    if not _attention_ops().fused_attention_ok(qkv):
        return None
    return _fused_self_attention(qkv, True, num_heads, out_w, out_b, attn_mask,
                                 key_padding_mask, dropout_p)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention on sequence-first (L, N, E) inputs (or unbatched (L, E)).

    Returns ``(attn_output, attn_weights)``: (L, N, E) and, when
    ``need_weights``, (N, L, S) averaged over heads (or (N, H, L, S)).

    Example:
        >>> x = nbtorch.randn(5, 2, 8)
        >>> w, b = nbtorch.randn(24, 8), nbtorch.zeros(24)
        >>> out, attn = multi_head_attention_forward(x, x, x, 8, 2, w, b, None, None, False,
        ...                                          0.0, nbtorch.randn(8, 8), None)
    """
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k/static_v are not "
                                  "supported")
    batched = _check_mha_shapes(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        same_qk, same_kv = query is key, key is value    # self-attention stays recognised
        query = query.unsqueeze(1)
        key = query if same_qk else key.unsqueeze(1)
        value = key if same_kv else value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, bsz, E = query.shape
    if E != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {E}")
    head_dim = E // num_heads
    if head_dim * num_heads != E:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2] or (not use_separate_proj_weight and
                                            key.shape != value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if not training:
        dropout_p = 0.0
    if _mha_fusable(query, key, value, need_weights, use_separate_proj_weight, bias_k, bias_v,
                    add_zero_attn, in_proj_weight, in_proj_bias, out_proj_weight,
                    out_proj_bias, attn_mask, key_padding_mask, dropout_p):
        qkv, batch_first = _packed_projection(query, in_proj_weight, in_proj_bias)
        if _attention_ops().fused_attention_ok(qkv):
            out = _fused_self_attention(qkv, batch_first, num_heads, out_proj_weight,
                                        out_proj_bias, attn_mask, key_padding_mask,
                                        dropout_p)
            out = out.transpose(0, 1) if batch_first else out
            return (out if batched else out.squeeze(1)), None
        qkv = qkv.transpose(0, 1) if batch_first else qkv   # e.g. autocast made it bfloat16
        q, k, v = qkv[..., :E], qkv[..., E:2 * E], qkv[..., 2 * E:]
    else:
        q, k, v = _in_projection(query, key, value, num_heads, in_proj_weight, in_proj_bias,
                                 use_separate_proj_weight, q_proj_weight, k_proj_weight,
                                 v_proj_weight)
    S = k.shape[0]
    mask = None if attn_mask is None else _attn_mask_3d(attn_mask, bsz, num_heads, L, S, q)
    kpm = None if key_padding_mask is None else \
        _float_mask(key_padding_mask, q, true_means_masked=True)
    if kpm is not None and tuple(kpm.shape) != (bsz, S):
        raise AssertionError(f"expecting key_padding_mask shape of {(bsz, S)}, but got "
                             f"{tuple(kpm.shape)}")
    if bias_k is not None and bias_v is not None:
        k = _cat([k, bias_k.reshape(1, 1, E).expand(1, bsz, E)], 0)
        v = _cat([v, bias_v.reshape(1, 1, E).expand(1, bsz, E)], 0)
        mask, kpm = _pad_last(mask, q), _pad_last(kpm, q)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError("bias_k and bias_v must both be given or both be None")
    # (len, bsz, E) -> (bsz * heads, len, head_dim)
    q = q.reshape(L, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v.shape[0], bsz * num_heads, v.shape[-1] // num_heads).transpose(0, 1)
    if add_zero_attn:
        from ...ops.creation import zeros
        z = zeros((bsz * num_heads, 1, head_dim), dtype=q.dtype, device=q.device)
        k, v = _cat([k, z], 1), _cat([v, z], 1)
        mask, kpm = _pad_last(mask, q), _pad_last(kpm, q)
    S = k.shape[1]
    if kpm is not None:
        kpm = kpm.reshape(bsz, 1, 1, S).expand(bsz, num_heads, 1, S).reshape(
            bsz * num_heads, 1, S)
        mask = kpm if mask is None else mask + kpm
    scores = (q * (1.0 / math.sqrt(head_dim))).matmul(k.transpose(1, 2))
    if mask is not None:
        scores = scores + mask
    weights = scores.softmax(-1)
    if dropout_p > 0.0:
        weights = _functional().dropout(weights, dropout_p, training=True)
    out = weights.matmul(v)                                  # (bsz*heads, L, head_dim)
    out = out.transpose(0, 1).reshape(L * bsz, E)
    out = _linear(out, out_proj_weight, out_proj_bias).reshape(L, bsz, E)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.reshape(bsz, num_heads, L, S)
    if average_attn_weights:
        weights = weights.mean(1)
    if not batched:
        weights = weights.squeeze(0)
    return out, weights
