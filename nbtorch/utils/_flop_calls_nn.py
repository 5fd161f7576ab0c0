"""The ATen calls of convolution, attention and einsum, as FlopCounterMode counts them
(the conventions are those of `_flop_calls`: ``(forward, backward)`` lists of
``(op name, argument shapes, output shape)``)."""
from math import prod

from ._flop_calls import Meta, bmm, baddbmm, linear, matmul

__all__ = ["conv", "sdpa", "einsum", "mha"]


def conv(x, w, bias, stride, padding, dilation, transposed, output_padding, groups, out):
    """aten.convolution; in backward one convolution_backward for the gradients needed."""
    b = None if bias is None else bias.shape
    args = (x.shape, w.shape, b, stride, padding, dilation, transposed, output_padding, groups)
    fwd = [("convolution", args, out)]
    mask = [x.rg, w.rg, bias is not None and bias.rg]
    if not any(mask):
        return fwd, []
    grads = (x.shape if mask[0] else None, w.shape if mask[1] else None, b if mask[2] else None)
    return fwd, [("convolution_backward", (out,) + args[:-1] + (groups, mask), grads)]


def sdpa(q, k, v, enable_gqa=False):
    """4-D inputs: the fused kernel's formula (PyTorch's count on a GPU: its CPU kernel is
    not in its table); other ranks: the math path's two matmuls."""
    if q.dim() == k.dim() == v.dim() == 4:
        out = q.shape[:-1] + v.shape[-1:]
        fwd = [("_scaled_dot_product_flash_attention", (q.shape, k.shape, v.shape), out)]
        if not (q.rg or k.rg or v.rg):
            return fwd, []
        return fwd, [("_scaled_dot_product_flash_attention_backward",
                      (out, q.shape, k.shape, v.shape), (q.shape, k.shape, v.shape))]
    if enable_gqa and q.dim() >= 3 and k.shape[-3] != q.shape[-3]:
        heads = q.shape[-3]
        k = Meta(k.shape[:-3] + (heads,) + k.shape[-2:], None, k.rg)
        v = Meta(v.shape[:-3] + (heads,) + v.shape[-2:], None, v.rg)
    kt = Meta(k.shape, None, k.rg).mT()
    f1, b1 = matmul(Meta(q.shape, None, q.rg), kt)
    scores = q.shape[:-1] + k.shape[-2:-1]
    f2, b2 = matmul(Meta(_bcast(scores, k.shape), None, q.rg or k.rg), v)
    return f1 + f2, b1 + b2


def _bcast(scores, k_shape):
    lead = [max(a, b) for a, b in zip(scores[:-2], k_shape[:-2])] if len(k_shape) > 2 else \
        list(scores[:-2])
    return tuple(lead) + scores[-2:]


# -- einsum ---------------------------------------------------------------------------------

def _parse(equation, operands):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    used = set(c for c in eq if c.isalpha())
    spare = iter(c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"
                 if c not in used)
    ell = []
    labels = []
    for term, op in zip(terms, operands):
        if "..." in term:
            n = op.dim() - (len(term) - 3)
            while len(ell) < n:
                ell.insert(0, next(spare))
            term = term.replace("...", "".join(ell[len(ell) - n:]))
        labels.append(term)
    if arrow:
        out = rhs.replace("...", "".join(ell))
    else:
        counts = {}
        for t in labels:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = "".join(ell) + "".join(sorted(c for c, n in counts.items()
                                            if n == 1 and c not in ell))
    return labels, out


def einsum(equation, operands):
    """Left-to-right pairwise contractions (PyTorch without opt_einsum): labels no later
    operand nor the output needs are summed first; a pair sharing a summed label is one
    bmm, a pair without one a mul (not counted)."""
    labels, out = _parse(equation, operands)
    sizes = {}
    for term, op in zip(labels, operands):
        for c, n in zip(term, op.shape):
            sizes[c] = max(sizes.get(c, 1), n)
    fwd, bw = [], []
    left, left_rg = labels[0], operands[0].rg
    for i in range(1, len(operands)):
        right, right_rg = labels[i], operands[i].rg
        later = set(out).union(*labels[i + 1:])
        left_keep = [c for c in dict.fromkeys(left) if c in right or c in later]
        right_keep = [c for c in dict.fromkeys(right) if c in left_keep or c in later]
        summed = [c for c in left_keep if c in right_keep and c not in later]
        batch = [c for c in left_keep if c in right_keep and c in later]
        lo = [c for c in left_keep if c not in right_keep]
        ro = [c for c in right_keep if c not in left_keep]
        if summed:
            B, M = prod(sizes[c] for c in batch), prod(sizes[c] for c in lo)
            K, N = prod(sizes[c] for c in summed), prod(sizes[c] for c in ro)
            f, g = bmm(Meta((B, M, K), None, left_rg), Meta((B, K, N), None, right_rg))
            fwd += f
            bw += g
        left = "".join(batch + lo + ro)
        left_rg = left_rg or right_rg
    return fwd, bw


# -- multi-head attention ---------------------------------------------------------------

def mha(query, key, value, num_heads, in_w, in_b, bias_k, add_zero_attn, out_w, out_b,
        need_weights, has_mask, separate=False, q_w=None, k_w=None, v_w=None,
        same_qk=False, same_kv=False):
    """F.multi_head_attention_forward as PyTorch runs it on (L, N, E) inputs: the input
    projections (one linear for self-attention), scaled_dot_product_attention (or, when
    the weights are returned, bmm/baddbmm and bmm), the output projection."""
    if query.dim() == 2:                # unbatched: unsqueeze(1), strides kept
        query, key, value = (Meta((t.shape[0], 1, t.shape[1]),
                                  (t.strides[0], t.shape[1] * t.strides[1], t.strides[1]), t.rg)
                             for t in (query, key, value))
    L, N, E = query.shape
    fwd, bw = [], []

    def add(calls):
        fwd.extend(calls[0])
        bw.extend(calls[1])

    def chunk(w, i, n):
        return None if w is None else Meta((w.shape[0] // n,) + w.shape[1:], None, w.rg)

    if not separate:
        if same_kv and same_qk:
            add(linear(query, in_w, in_b))
        elif same_kv:
            add(linear(query, chunk(in_w, 0, 3), chunk(in_b, 0, 3)))
            kv_w = Meta((in_w.shape[0] * 2 // 3, in_w.shape[1]), None, in_w.rg)
            kv_b = None if in_b is None else Meta((in_b.shape[0] * 2 // 3,), None, in_b.rg)
            add(linear(key, kv_w, kv_b))
        else:
            for t in (query, key, value):
                add(linear(t, chunk(in_w, 0, 3), chunk(in_b, 0, 3)))
    else:
        for t, w in ((query, q_w), (key, k_w), (value, v_w)):
            add(linear(t, w, chunk(in_b, 0, 3)))
    rg = query.rg or key.rg or value.rg or in_w is not None and in_w.rg or \
        any(w is not None and w.rg for w in (q_w, k_w, v_w))
    S = key.shape[0] + (bias_k is not None) + bool(add_zero_attn)
    hd = E // num_heads
    if need_weights:
        q = Meta((N * num_heads, L, hd), None, rg)
        kt = Meta((N * num_heads, hd, S), None, rg)
        add(baddbmm((N * num_heads, L, S), q, kt) if has_mask else bmm(q, kt))
        add(bmm(Meta((N * num_heads, L, S), None, rg), Meta((N * num_heads, S, hd), None, rg)))
    else:
        add(sdpa(Meta((N, num_heads, L, hd), None, rg), Meta((N, num_heads, S, hd), None, rg),
                 Meta((N, num_heads, S, hd), None, rg)))
    add(linear(Meta((L * N, E), None, rg), out_w, out_b))
    return fwd, bw
