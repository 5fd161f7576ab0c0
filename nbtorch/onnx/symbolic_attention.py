"""Symbolics of attention (scaled_dot_product_attention, multi-head attention) and of the
Transformer layers built on them.

`multi_head_attention_forward` becomes projections, a (N, H, L, hd) reshape,
softmax(q k^T / sqrt(hd) + masks) v and the output projection. Transformer
encoder/decoder layers are emitted from their submodules (their stored
activation function is called directly, which a trace through them would miss).
"""
import math
import operator

import numpy as np

from ._graph import UnsupportedOperatorError, Value
from ._helpers import operand, out_dtype, reduce, squeeze, unsqueeze
from ._registry import register, register_module


@register("scaled_dot_product_attention")
def _sdpa(e, out, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
          enable_gqa=False):
    import nbtorch
    dt = out_dtype(out)
    s = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    mask = None
    if attn_mask is not None:
        if attn_mask.dtype == nbtorch.bool:      # SDPA: True takes part in attention
            mask = (e.g.op("Not", e.name(attn_mask)), True)
        else:
            mask = (operand(e, attn_mask, dt), False)
    return attention_core(e, operand(e, q, dt), operand(e, k, dt), operand(e, v, dt),
                          dt, s, q.ndim, mask, is_causal)[0]


def attention_core(e, q, k, v, dt, scale, rank, attn_mask=None, is_causal=False,
                   pad_mask=None):
    """softmax(q k^T * scale + masks) v over the last two dims; returns (out, weights).

    Masks are (name, is_bool) pairs; a boolean mask is True where attention is not allowed.
    """
    perm = list(range(rank))
    perm[-2:] = perm[-1], perm[-2]
    kt = e.g.op("Transpose", k, perm=perm)
    scores = e.g.op("Mul", e.g.op("MatMul", q, kt), e.name(scale, dtype=dt))
    neg = e.name(float("-inf"), dtype=dt)
    if is_causal and attn_mask is None:
        shape = e.g.op("Shape", scores, start=-2)
        ones = e.g.op("ConstantOfShape", shape, value=_int_tensor(1))
        keep = e.g.op("Cast", e.g.op("Trilu", ones, upper=0), to=9)
        scores = e.g.op("Where", keep, scores, neg)
    for mask in (attn_mask, pad_mask):
        if mask is None:
            continue
        name, is_bool = mask
        if is_bool:
            scores = e.g.op("Where", name, neg, scores)
        else:
            scores = e.g.op("Add", scores, name)
    weights = e.g.op("Softmax", scores, axis=-1)
    return e.g.op("MatMul", weights, v), weights


def _int_tensor(v):
    from onnx import numpy_helper
    return numpy_helper.from_array(np.asarray([v], dtype=np.int64))


def _rows(e, w, start, end):
    """Rows start:end of a weight (a folded constant when the weight is static)."""
    if isinstance(w, Value) and w.static and e.fold_params:
        return e.g.const(w.value.detach().cpu().numpy()[start:end])
    return e.g.op("Slice", e.name(w), e.g.ints([start]), e.g.ints([end]), e.g.ints([0]))


def _project(e, x, w, b, dt):
    y = e.g.op("MatMul", x, e.g.op("Transpose", w if isinstance(w, str) else
                                   operand(e, w, dt), perm=[1, 0]))
    if b is None:
        return y
    return e.g.op("Add", y, b if isinstance(b, str) else operand(e, b, dt))


def _mask(e, m, dt, reshape_heads=None):
    import nbtorch
    if m is None:
        return None
    name = e.name(m)
    if reshape_heads is not None:
        name = reshape_heads(name)
    if m.dtype == nbtorch.bool:
        return name, True
    return e.g.cast(name, dt), False


@register("multi_head_attention_forward")
def _mha(e, out, query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
         in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
         out_proj_bias, training=True, key_padding_mask=None, need_weights=True,
         attn_mask=None, use_separate_proj_weight=False, q_proj_weight=None,
         k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None,
         average_attn_weights=True, is_causal=False):
    if bias_k is not None or bias_v is not None or add_zero_attn or static_k is not None \
            or static_v is not None:
        raise UnsupportedOperatorError("ONNX export: multi_head_attention_forward with "
                                       "bias_k/bias_v, add_zero_attn or static_k/static_v")
    if training and dropout_p > 0:
        raise UnsupportedOperatorError("ONNX export: attention dropout in training mode")
    dt = query.dtype
    E, H = int(embed_dim_to_check), int(num_heads)
    hd = E // H
    batched = query.ndim == 3
    q, k, v = (operand(e, t, dt) for t in (query, key, value))
    if not batched:
        q, k, v = (unsqueeze(e, t, [1]) for t in (q, k, v))
    if use_separate_proj_weight:
        ws = [q_proj_weight, k_proj_weight, v_proj_weight]
    else:
        ws = [_rows(e, in_proj_weight, i * E, (i + 1) * E) for i in range(3)]
    bs = [None] * 3 if in_proj_bias is None else \
        [_rows(e, in_proj_bias, i * E, (i + 1) * E) for i in range(3)]

    def heads(x):                                    # (L, N, E) -> (N, H, L, hd)
        return e.g.op("Transpose", e.g.op("Reshape", x, e.g.ints([0, 0, H, hd])),
                      perm=[1, 2, 0, 3])
    qh, kh, vh = (heads(_project(e, x, w, b, dt)) for x, w, b in zip((q, k, v), ws, bs))

    def per_head(name):                              # (N*H, L, S) -> (N, H, L, S)
        if attn_mask.ndim != 3:
            return name
        rest = e.g.op("Shape", name, start=1)
        return e.g.op("Reshape", name, e.g.op("Concat", e.g.ints([-1, H]), rest, axis=0))
    amask = _mask(e, attn_mask, dt, per_head)
    pmask = None
    if key_padding_mask is not None:
        kp = key_padding_mask
        pm = _mask(e, kp, dt)
        name = unsqueeze(e, pm[0], [1, 2] if batched else [0, 1, 2])
        pmask = (name, pm[1])
    o, w = attention_core(e, qh, kh, vh, dt, 1.0 / math.sqrt(hd), 4, amask,
                          is_causal and attn_mask is None, pmask)
    o = e.g.op("Reshape", e.g.op("Transpose", o, perm=[2, 0, 1, 3]), e.g.ints([0, 0, E]))
    o = _project(e, o, out_proj_weight, out_proj_bias, dt)
    if not batched:
        o = squeeze(e, o, [1])
    if not need_weights:
        return o, None
    if average_attn_weights:
        w = reduce(e, "ReduceMean", w, [1], False)
    if not batched:
        w = squeeze(e, w, [0])
    return o, w


def _no_train_dropout(mod):
    if mod.training and any(getattr(m, "p", 0) > 0 for m in mod.modules()
                            if type(m).__name__ == "Dropout"):
        raise UnsupportedOperatorError(f"ONNX export: {type(mod).__name__} in training mode "
                                       "(dropout); export in eval mode")


def _parts(e, mod):
    name = e.module_name

    def sub(attr, *args, **kwargs):
        return e.module(getattr(mod, attr), f"{name}.{attr}" if name else attr, *args,
                        **kwargs)

    def add(a, b):
        return e.call(operator.add, a, b)

    def ff(x):
        from ..nn import Module
        h = sub("linear1", x)
        act = mod.activation
        h = e.module(act, f"{name}.activation", h) if isinstance(act, Module) else \
            e.call(act, h)
        return sub("linear2", h)
    return sub, add, ff


def encoder_layer(e, mod, out, src, src_mask=None, src_key_padding_mask=None,
                  is_causal=False):
    _no_train_dropout(mod)
    sub, add, ff = _parts(e, mod)

    def sa(x):
        return sub("self_attn", x, x, x, attn_mask=src_mask,
                   key_padding_mask=src_key_padding_mask, need_weights=False,
                   is_causal=is_causal)[0]
    x = src
    if mod.norm_first:
        x = add(x, sa(sub("norm1", x)))
        return add(x, ff(sub("norm2", x)))
    x = sub("norm1", add(x, sa(x)))
    return sub("norm2", add(x, ff(x)))


def decoder_layer(e, mod, out, tgt, memory, tgt_mask=None, memory_mask=None,
                  tgt_key_padding_mask=None, memory_key_padding_mask=None,
                  tgt_is_causal=False, memory_is_causal=False):
    _no_train_dropout(mod)
    sub, add, ff = _parts(e, mod)

    def sa(x):
        return sub("self_attn", x, x, x, attn_mask=tgt_mask,
                   key_padding_mask=tgt_key_padding_mask, need_weights=False,
                   is_causal=tgt_is_causal)[0]

    def mha(x):
        return sub("multihead_attn", x, memory, memory, attn_mask=memory_mask,
                   key_padding_mask=memory_key_padding_mask, need_weights=False,
                   is_causal=memory_is_causal)[0]
    x = tgt
    if mod.norm_first:
        x = add(x, sa(sub("norm1", x)))
        x = add(x, mha(sub("norm2", x)))
        return add(x, ff(sub("norm3", x)))
    x = sub("norm1", add(x, sa(x)))
    x = sub("norm2", add(x, mha(x)))
    return sub("norm3", add(x, ff(x)))


def _register():
    from ..nn import TransformerDecoderLayer, TransformerEncoderLayer
    register_module(TransformerEncoderLayer)(encoder_layer)
    register_module(TransformerDecoderLayer)(decoder_layer)


_register()
