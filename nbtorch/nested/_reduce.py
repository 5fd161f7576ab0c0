"""Reductions and softmax of jagged nested tensors.

Over non-ragged, non-batch dims the op runs on the values (the result stays nested); over
the ragged dim it runs per component and the results are stacked (a dense (B, ...)
tensor, as PyTorch's ``nt.sum(1)``); over the batch and ragged dims together it runs on
all rows at once; over the batch dim alone it is refused, as in PyTorch.
"""
from .._tensor import Tensor
from ..ops._common import normalize_dim
from ._dispatch import register
from ._tensor import from_values, values_of

_KEEPDIM_AT_2 = frozenset(["sum", "mean", "amax", "amin", "max", "min", "prod", "argmax",
                           "argmin", "logsumexp", "all", "any", "nansum", "nanmean", "median",
                           "nanmedian", "mode"])
_WITH_INDICES = frozenset(["max", "min", "median", "nanmedian", "mode"])


def packed_values(nt):
    """All components' rows, end to end, without holes (differentiable)."""
    if nt._lengths is None:
        return values_of(nt)
    import nbtorch
    return nbtorch.cat(list(nt.unbind()), nt._ragged_idx - 1)


def _split_dim(args, kwargs, name):
    """(dim, keepdim, the arguments with dim and keepdim left out) of a reduction call."""
    args, kwargs = list(args), dict(kwargs)
    dim = kwargs.pop("dim", kwargs.pop("axis", None))
    if dim is None and len(args) > 1 and not isinstance(args[1], Tensor):
        if not (name in ("std", "var") and isinstance(args[1], bool)):
            dim = args.pop(1)
    keepdim = kwargs.pop("keepdim", False)
    if name in _KEEPDIM_AT_2 and len(args) > 1 and isinstance(args[1], bool) and \
            dim is not None:
        keepdim = args.pop(1)
    return dim, keepdim, args, kwargs


@register("sum", "mean", "amax", "amin", "max", "min", "prod", "argmax", "argmin", "std",
          "var", "logsumexp", "all", "any", "nansum", "nanmean", "median", "nanmedian",
          "count_nonzero")
def reduce(func, name, args, kwargs):
    nt = args[0]
    if name in ("max", "min") and len(args) > 1 and isinstance(args[1], Tensor):
        from ._dispatch import elementwise          # max(a, b): elementwise
        return elementwise(func, name, args, kwargs)
    dim, keepdim, rest, kwargs = _split_dim(args, kwargs, name)
    if dim is None:
        return func(packed_values(nt), *rest[1:], **kwargs)
    if keepdim or name != "count_nonzero":
        kwargs["keepdim"] = keepdim
    nd, r = nt.dim(), nt._ragged_idx
    dims = sorted({normalize_dim(d, nd) for d in ((dim,) if isinstance(dim, int) else dim)})
    one = isinstance(dim, int)
    if 0 in dims and r not in dims:
        raise RuntimeError(f"{name}(): reducing along the batch dimension but not the ragged "
                           "dimension is not supported for nested tensors")
    if 0 in dims:
        vd = [d - 1 for d in dims if d != 0]
        out = func(packed_values(nt), vd[0] if one or len(vd) == 1 else vd, *rest[1:], **kwargs)
        return _unsqueeze0(out) if keepdim else out
    vd = [d - 1 for d in dims]
    vdim = vd[0] if one else vd
    if r in dims:                               # per component, then stacked
        import nbtorch
        outs = [func(c, vdim, *rest[1:], **kwargs) for c in nt.unbind()]
        if name in _WITH_INDICES:
            vals = nbtorch.stack([o[0] for o in outs])
            idx = nbtorch.stack([o[1] for o in outs])
            return type(outs[0])((vals, idx)) if not hasattr(outs[0], "_fields") else \
                type(outs[0])(vals, idx)
        return nbtorch.stack(outs)
    out = func(values_of(nt), vdim, *rest[1:], **kwargs)
    new_r = r if keepdim else r - sum(1 for d in dims if d < r)
    if isinstance(out, tuple):
        return type(out)(*(from_values(o, nt, ragged_idx=new_r) for o in out)) \
            if hasattr(out, "_fields") else tuple(from_values(o, nt, ragged_idx=new_r)
                                                  for o in out)
    return from_values(out, nt, ragged_idx=new_r)


def _unsqueeze0(out):
    if isinstance(out, tuple):
        return type(out)(*(o.unsqueeze(0) for o in out)) if hasattr(out, "_fields") else \
            tuple(o.unsqueeze(0) for o in out)
    return out.unsqueeze(0)


@register("softmax", "log_softmax", "softmin")
def softmax(func, name, args, kwargs):
    """Over a non-ragged dim: on the values; over the ragged dim: per component."""
    nt = args[0]
    args, kwargs = list(args), dict(kwargs)
    dim = kwargs.pop("dim", None)
    if dim is None:
        if len(args) < 2 or args[1] is None:
            raise RuntimeError(f"{name}(): a dim is required for nested tensors")
        dim = args.pop(1)
    d = normalize_dim(dim, nt.dim())
    if d == 0:
        raise RuntimeError(f"{name}(): not supported when reducing across the batch dimension "
                           "for NestedTensor")
    r = nt._ragged_idx
    if d != r:
        return from_values(func(values_of(nt), d - 1, *args[1:], **kwargs), nt)
    import nbtorch
    outs = [func(c, d - 1, *args[1:], **kwargs) for c in nt.unbind()]
    values = nbtorch.cat(outs, r - 1)
    if nt._lengths is None and int(nt._offsets[0]) == 0 and \
            values._shape == nt._values._shape:
        return from_values(values, nt)
    from ._build import _offsets_of
    return from_values(values, offsets=_offsets_of(nt._lengths_host(), nt.device),
                       ragged_idx=r)
