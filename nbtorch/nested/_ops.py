"""Padding, products, norms and attention of jagged nested tensors.

``linear``/``matmul`` with a dense weight and the norms over trailing dims run on the
values (each row is one position of one component); ``scaled_dot_product_attention``
runs per component (B small attention calls: correct, not fast) and puts the outputs
back end to end.
"""
from ._dispatch import register
from ._tensor import NestedTensor, from_values, nested_error, values_of


def to_padded(nt, padding, output_size=None):
    """The components padded with `padding` to the longest (or to `output_size`), stacked."""
    import nbtorch
    import nbtorch.nn.functional as F
    comps = nt.unbind()
    r = nt._ragged_idx
    longest = max(nt._lengths_host(), default=0)
    if output_size is not None:         # PyTorch's jagged layout reads only the ragged size
        if len(output_size) != nt.dim():
            raise RuntimeError(f"to_padded_tensor(): output_size has {len(output_size)} dims, "
                               f"expected {nt.dim()}")
        if output_size[r] < longest:
            raise RuntimeError(f"to_padded_tensor(): output_size[{r}] = {output_size[r]} is "
                               f"shorter than the longest component ({longest})")
        longest = output_size[r]
    target = [longest if i == r else s for i, s in enumerate(nt._shape)][1:]
    batch = nt._shape[0]
    padded = []
    for c in comps:
        pad = []
        for have, want in zip(reversed(c._shape), reversed(target)):
            pad += [0, want - have]
        padded.append(F.pad(c, pad, value=padding) if any(pad) else c)
    if not padded:
        return nbtorch.full([batch] + list(target), padding, dtype=nt.dtype, device=nt.device)
    out = nbtorch.stack(padded)
    if batch > len(padded):
        out = F.pad(out, [0, 0] * len(target) + [0, batch - len(padded)], value=padding)
    return out


def _check_last_dense(nt, name):
    if nt._ragged_idx == nt.dim() - 1:
        raise RuntimeError(f"{name}(): the last dim of the NestedTensor is ragged; it must be "
                           "a regular dim")


@register("linear")
def linear(func, name, args, kwargs):
    x = args[0]
    if not isinstance(x, NestedTensor) or any(isinstance(a, NestedTensor) for a in args[1:]):
        raise nested_error(name)
    _check_last_dense(x, name)
    return from_values(func(values_of(x), *args[1:], **kwargs), x)


@register("matmul", "__matmul__", "mm")
def matmul(func, name, args, kwargs):
    x, w = args[0], args[1]
    if not isinstance(x, NestedTensor) or isinstance(w, NestedTensor) or w.dim() > 2:
        raise nested_error(name.strip("_"))     # only nested @ dense 1-D / 2-D is here
    _check_last_dense(x, name)
    out = func(values_of(x), w)
    r = x._ragged_idx
    return from_values(out, x, ragged_idx=r)


@register("layer_norm", "rms_norm")
def norm(func, name, args, kwargs):
    x = args[0]
    shape = kwargs.get("normalized_shape", args[1] if len(args) > 1 else None)
    k = 1 if isinstance(shape, int) else len(shape)
    if x.dim() - k <= x._ragged_idx:
        raise RuntimeError(f"{name}(): normalizing over the ragged or the batch dim of a "
                           "NestedTensor is not supported")
    return from_values(func(values_of(x), *args[1:], **kwargs), x)


_SDPA_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale",
              "enable_gqa")


@register("scaled_dot_product_attention")
def sdpa(func, name, args, kwargs):
    """Per component: component i of the output attends query i over key/value i."""
    import nbtorch
    a = dict(zip(_SDPA_ARGS, args))
    a.update(kwargs)
    q, k, v = a["query"], a["key"], a["value"]
    for t in (q, k, v):
        if not isinstance(t, NestedTensor) or t.dim() != 4 or t._ragged_idx != 2:
            raise RuntimeError("scaled_dot_product_attention(): nested query, key and value "
                               "must all be NestedTensors of shape (B, H, j, D) (the ragged "
                               "dim third: transpose(1, 2) of (B, j, H, D))")
    if q._shape[0] != k._shape[0] or k._shape[0] != v._shape[0]:
        raise RuntimeError("scaled_dot_product_attention(): query, key and value must have "
                           "the same batch size")
    if k._j is not v._j:
        raise RuntimeError("scaled_dot_product_attention(): key and value must have the same "
                           "ragged structure")
    if a.get("attn_mask") is not None:
        raise RuntimeError("scaled_dot_product_attention(): attn_mask is not supported for "
                           "nested tensors")
    if a.get("is_causal"):
        raise RuntimeError("scaled_dot_product_attention(): Nested tensors for query / key "
                           "are not supported when is_causal=True.")
    extra = {n: a[n] for n in ("dropout_p", "scale", "enable_gqa") if n in a}
    outs = [func(qi, ki, vi, **extra) for qi, ki, vi in zip(q.unbind(), k.unbind(),
                                                            v.unbind())]
    values = nbtorch.cat(outs, 1)
    if q._lengths is None and int(q._offsets[0]) == 0 and values._shape[1] == \
            q._values._shape[1]:
        return from_values(values, q)
    from ._build import _offsets_of
    return from_values(values, offsets=_offsets_of(q._lengths_host(), q.device), ragged_idx=2)


@register("embedding")
def embedding(func, name, args, kwargs):
    """``F.embedding(nested indices, weight)``: each index row looked up (a new last dim)."""
    x = args[0]
    if not isinstance(x, NestedTensor) or any(isinstance(a, NestedTensor) for a in args[1:]):
        raise nested_error(name)
    return from_values(func(values_of(x), *args[1:], **kwargs), x)


@register("normalize")
def normalize(func, name, args, kwargs):
    """``F.normalize`` over a regular dim (default 1, as F's)."""
    from ..ops._common import normalize_dim
    x = args[0]
    args, kwargs = list(args), dict(kwargs)
    holder, key = (kwargs, "dim") if "dim" in kwargs else (args, 2) if len(args) > 2 else \
        (kwargs, "dim")
    d = normalize_dim(holder.get(key, 1) if holder is kwargs else holder[key], x.dim())
    if d in (0, x._ragged_idx):
        raise RuntimeError(f"{name}(): not supported for NestedTensor on the batch or the "
                           "ragged dim")
    holder[key] = d - 1
    args[0] = values_of(x)
    return from_values(func(*args, **kwargs), x)
