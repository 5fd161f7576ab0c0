"""Shape ops of jagged nested tensors: each moves, adds or drops dims of the values (never
the batch dim; the ragged dim only moves), and the ragged index follows."""
from .._tensor import Tensor
from ..ops._common import normalize_dim
from ._dispatch import register, same_structure
from ._tensor import NestedTensor, from_values, values_of


def _not_batch_or_ragged(nt, d, name):
    if d == 0:
        raise RuntimeError(f"{name}(): not supported for NestedTensor on dim=0")
    if d == nt._ragged_idx:
        raise RuntimeError(f"{name}(): not supported for NestedTensor on ragged dim")


def _dim_arg(args, kwargs, pos, key="dim", default=None):
    if key in kwargs:
        return kwargs[key]
    return args[pos] if len(args) > pos else default


@register("transpose", "swapaxes", "swapdims")
def transpose(func, name, args, kwargs):
    nt = args[0]
    nd = nt.dim()
    d0 = normalize_dim(_dim_arg(args, kwargs, 1, "dim0"), nd)
    d1 = normalize_dim(_dim_arg(args, kwargs, 2, "dim1"), nd)
    if d0 == d1:
        return nt
    if 0 in (d0, d1):
        raise ValueError("Transpose is not supported on the batch dimension for jagged NT")
    r = nt._ragged_idx
    r = d1 if r == d0 else d0 if r == d1 else r
    return from_values(values_of(nt).transpose(d0 - 1, d1 - 1), nt, ragged_idx=r)


@register("permute")
def permute(func, name, args, kwargs):
    nt = args[0]
    dims = kwargs.get("dims", args[1:])
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    dims = [normalize_dim(d, nt.dim()) for d in dims]
    if dims[0] != 0:
        raise ValueError("Permute is not supported on the batch dimension for jagged NT")
    return from_values(values_of(nt).permute([d - 1 for d in dims[1:]]), nt,
                       ragged_idx=dims.index(nt._ragged_idx))


@register("unsqueeze")
def unsqueeze(func, name, args, kwargs):
    nt = args[0]
    d = normalize_dim(_dim_arg(args, kwargs, 1), nt.dim() + 1)
    if d == 0:
        raise RuntimeError("unsqueeze(): not supported for NestedTensor on dim=0")
    r = nt._ragged_idx
    return from_values(values_of(nt).unsqueeze(d - 1), nt, ragged_idx=r + 1 if d <= r else r)


@register("squeeze")
def squeeze(func, name, args, kwargs):
    nt = args[0]
    dim = _dim_arg(args, kwargs, 1)
    if dim is None:
        raise RuntimeError("squeeze(): squeezing every size-1 dim is not supported for "
                           "NestedTensor: name the dim")
    d = normalize_dim(dim, nt.dim())
    _not_batch_or_ragged(nt, d, name)
    if nt._shape[d] != 1:
        return nt
    r = nt._ragged_idx
    return from_values(values_of(nt).squeeze(d - 1), nt, ragged_idx=r - 1 if d < r else r)


@register("flatten")
def flatten(func, name, args, kwargs):
    nt = args[0]
    nd, r = nt.dim(), nt._ragged_idx
    s = normalize_dim(_dim_arg(args, kwargs, 1, "start_dim", 0), nd)
    e = normalize_dim(_dim_arg(args, kwargs, 2, "end_dim", -1), nd)
    if s == e:
        return nt
    if s <= 0 or s <= r <= e:
        raise RuntimeError("flatten(): flattening the batch or the ragged dim of a "
                           "NestedTensor is not supported")
    return from_values(values_of(nt).flatten(s - 1, e - 1), nt,
                       ragged_idx=r - (e - s) if e < r else r)


@register("unflatten")
def unflatten(func, name, args, kwargs):
    nt = args[0]
    d = normalize_dim(_dim_arg(args, kwargs, 1), nt.dim())
    sizes = _dim_arg(args, kwargs, 2, "sizes")
    _not_batch_or_ragged(nt, d, name)
    r = nt._ragged_idx
    return from_values(values_of(nt).unflatten(d - 1, sizes), nt,
                       ragged_idx=r + len(sizes) - 1 if d < r else r)


@register("reshape", "view")
def reshape(func, name, args, kwargs):
    nt = args[0]
    shape = kwargs.get("shape", args[1:])
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    shape = tuple(shape)
    r = nt._ragged_idx
    ok = (len(shape) >= 2 and r == 1 and shape[0] in (nt._shape[0], -1)
          and (shape[1] == -1 or shape[1] is nt._j or shape[1] == nt._j)
          and not (shape[1] == -1 and -1 in shape[2:]))
    if not ok:
        raise RuntimeError(f"{name}(): cannot view shape {_fmt(nt)} as {list(shape)}: a "
                           "NestedTensor keeps its batch and ragged dims")
    v = values_of(nt)
    new = v.reshape((v._shape[0],) + shape[2:]) if name == "reshape" else \
        v.view((v._shape[0],) + shape[2:])
    return from_values(new, nt)


def _fmt(nt):
    return "(" + ", ".join(repr(s) for s in nt._shape) + ")"


@register("narrow")
def narrow(func, name, args, kwargs):
    nt = args[0]
    d = normalize_dim(_dim_arg(args, kwargs, 1), nt.dim())
    _not_batch_or_ragged(nt, d, name)
    start, length = _dim_arg(args, kwargs, 2, "start"), _dim_arg(args, kwargs, 3, "length")
    return from_values(values_of(nt).narrow(d - 1, start, length), nt)


@register("select")
def select(func, name, args, kwargs):
    nt = args[0]
    d = normalize_dim(_dim_arg(args, kwargs, 1), nt.dim())
    index = _dim_arg(args, kwargs, 2, "index")
    if d == 0:
        return nt.unbind()[index]
    _not_batch_or_ragged(nt, d, name)
    r = nt._ragged_idx
    return from_values(values_of(nt).select(d - 1, index), nt,
                       ragged_idx=r - 1 if d < r else r)


@register("chunk", "split", "split_with_sizes", "tensor_split")
def split(func, name, args, kwargs):
    nt = args[0]
    d = normalize_dim(_dim_arg(args, kwargs, 2, default=0), nt.dim())
    _not_batch_or_ragged(nt, d, name)
    how = _dim_arg(args, kwargs, 1, "chunks" if name == "chunk" else
                   "split_size_or_sections" if name == "split" else "split_sizes")
    parts = func(values_of(nt), how, d - 1)
    return tuple(from_values(p, nt) for p in parts)


@register("cat", "concat", "concatenate")
def cat(func, name, args, kwargs):
    import nbtorch
    ts = list(_dim_arg(args, kwargs, 0, "tensors"))
    first = next(t for t in ts if isinstance(t, NestedTensor))
    d = normalize_dim(_dim_arg(args, kwargs, 1, default=0), first.dim())
    if d == 0:
        raise RuntimeError("cat(): not supported for NestedTensor on dim=0")
    if d == first._ragged_idx:
        raise RuntimeError("cat(): not supported for NestedTensor on ragged dim")
    for t in ts:
        if not isinstance(t, NestedTensor):
            raise RuntimeError("cat(): expected each tensor in given list to be nested")
        same_structure(first, t, "cat")
    return from_values(nbtorch.cat([values_of(t) for t in ts], d - 1), first)


@register("stack")
def stack(func, name, args, kwargs):
    import nbtorch
    ts = list(_dim_arg(args, kwargs, 0, "tensors"))
    first = next(t for t in ts if isinstance(t, NestedTensor))
    d = normalize_dim(_dim_arg(args, kwargs, 1, default=0), first.dim() + 1)
    if d == 0:
        raise RuntimeError("stack(): not supported for NestedTensor on dim=0")
    for t in ts:
        if not isinstance(t, NestedTensor):
            raise RuntimeError("stack(): expected each tensor in given list to be nested")
        same_structure(first, t, "stack")
    r = first._ragged_idx
    return from_values(nbtorch.stack([values_of(t) for t in ts], d - 1), first,
                       ragged_idx=r + 1 if d <= r else r)


def getitem(nt, key):
    """``nt[i]`` (component i) and ``nt[:, ..., k]`` (indexing the non-ragged dims)."""
    if isinstance(key, int):
        return nt.unbind()[key]
    if isinstance(key, Tensor) or not isinstance(key, tuple):
        key = (key,)
    if any(k is None or isinstance(k, (Tensor, list)) for k in key):
        raise NotImplementedError("indexing a NestedTensor with None, lists or tensors is not "
                                  "supported by nbtorch")
    nd, r = nt.dim(), nt._ragged_idx
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (nd - len(key) + 1) + key[i + 1:]
    key = key + (slice(None),) * (nd - len(key))
    if len(key) > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    full = slice(None)
    if key[0] != full:
        if isinstance(key[0], int) and all(k == full for k in key[1:]):
            return nt.unbind()[key[0]]
        raise RuntimeError("slice(): not supported for NestedTensor on dim=0")
    if key[r] != full:
        raise RuntimeError("slice(): not supported for NestedTensor on ragged dim")
    out = values_of(nt)[key[1:]]
    dropped = sum(1 for k in key[1:r] if isinstance(k, int))
    return from_values(out, nt, ragged_idx=r - dropped)
