"""Split inputs over devices along a dim and collect outputs onto one (DataParallel's
data movement). Tensors are chunked like ``Tensor.chunk`` and moved with ``.to``, which
is differentiable, so gradients flow back to the source device."""
import warnings

from ..._tensor import Tensor

__all__ = ["scatter", "gather", "scatter_kwargs"]


def scatter(inputs, target_gpus, dim=0):
    """A list with, per device, `inputs` with every tensor replaced by its chunk there
    (containers are walked; other objects are shared). Fewer devices are used when the
    batch has fewer elements than there are devices."""
    devices = list(target_gpus)

    def n_chunks(obj):
        if isinstance(obj, Tensor):
            return min(len(devices), max(obj.shape[dim], 1)) if obj.dim() else len(devices)
        if isinstance(obj, (list, tuple)):
            return min([n_chunks(o) for o in obj] or [len(devices)])
        if isinstance(obj, dict):
            return min([n_chunks(o) for o in obj.values()] or [len(devices)])
        return len(devices)

    n = n_chunks(inputs)

    def split(obj):
        if isinstance(obj, Tensor):
            chunks = obj.chunk(n, dim) if obj.dim() else [obj] * n
            return [c.to(_device(d)) for c, d in zip(chunks, devices)]
        if isinstance(obj, tuple) and hasattr(type(obj), "_fields"):
            return [type(obj)(*parts) for parts in zip(*[split(o) for o in obj])]
        if isinstance(obj, (list, tuple)):
            if not obj:
                return [type(obj)() for _ in range(n)]
            return [type(obj)(parts) for parts in zip(*[split(o) for o in obj])]
        if isinstance(obj, dict):
            if not obj:
                return [type(obj)() for _ in range(n)]
            keys = list(obj)
            return [type(obj)(zip(keys, parts)) for parts in zip(*[split(obj[k])
                                                                  for k in keys])]
        return [obj] * n

    return split(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """(per-device args tuples, per-device kwargs dicts), padded to the same length."""
    ins = scatter(tuple(inputs), target_gpus, dim) if inputs else []
    kws = scatter(dict(kwargs), target_gpus, dim) if kwargs else []
    n = max(len(ins), len(kws))
    ins = list(ins) + [() for _ in range(n - len(ins))]
    kws = list(kws) + [{} for _ in range(n - len(kws))]
    return tuple(ins), tuple(kws)


def _device(d):
    from ..._device import device
    if isinstance(d, int):
        return device("cuda", d)
    return device(d) if not isinstance(d, device) else d


def gather(outputs, target_device, dim=0):
    """The per-device outputs joined along `dim` on `target_device` (containers walked)."""
    from ...ops.joining import cat
    first = outputs[0]
    if isinstance(first, Tensor):
        target = _device(target_device)
        if all(o.dim() == 0 for o in outputs):
            warnings.warn("Was asked to gather along dimension 0, but all input tensors were "
                          "scalars; will instead unsqueeze and return a vector.", UserWarning)
            outputs = [o.unsqueeze(0) for o in outputs]
        return cat([o.to(target) for o in outputs], dim)
    if first is None:
        return None
    if isinstance(first, dict):
        if not all(len(o) == len(first) for o in outputs):
            raise ValueError("All dicts must have the same number of keys")
        return type(first)((k, gather([o[k] for o in outputs], target_device, dim))
                           for k in first)
    if isinstance(first, tuple) and hasattr(type(first), "_fields"):
        return type(first)(*(gather(list(parts), target_device, dim)
                             for parts in zip(*outputs)))
    if isinstance(first, (list, tuple)):
        return type(first)(gather(list(parts), target_device, dim) for parts in zip(*outputs))
    return first
