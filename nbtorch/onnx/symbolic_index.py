"""Symbolics of indexing, selection and sorting: ``x[...]``, select/narrow, gathers,
flip, topk/sort."""
import numpy as np

from ._graph import UnsupportedOperatorError, Value
from ._helpers import INT_MAX, dim_of, dims_of, squeeze, static, unsqueeze
from ._registry import register


def _sizes(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return list(args[0])
    return list(args)


def _shape_getitem(e, out, s, idx):
    if isinstance(idx, slice):
        start = 0 if idx.start is None else int(idx.start)
        stop = INT_MAX if idx.stop is None else int(idx.stop)
        return e.g.op("Slice", e.name(s), e.g.ints([start]), e.g.ints([stop]))
    return e.g.op("Gather", e.name(s), e.g.const(np.int64(int(idx))))


@register("narrow")
def _narrow(e, out, x, dim, start, length):
    d = dim_of(dim, x.ndim)
    starts = e.int_vector([start])
    if static(start) and static(length):
        ends = e.g.ints([int(_v(start)) + int(_v(length))])
    else:
        ends = e.g.op("Add", starts, e.int_vector([length]))
    return e.g.op("Slice", e.name(x), starts, ends, e.g.ints([d]))


def _v(x):
    return x.value if isinstance(x, Value) else x


@register("select")
def _select(e, out, x, dim, index):
    d = dim_of(dim, x.ndim)
    return e.g.op("Gather", e.name(x), _scalar_index(e, index), axis=d)


def _scalar_index(e, i):
    if isinstance(i, Value) and not i.static:
        return e.g.cast(e.name(i), _int64())
    return e.g.const(np.int64(int(_v(i))))


def _int64():
    import nbtorch
    return nbtorch.int64


@register("getitem")
def _getitem(e, out, x, idx):
    if isinstance(x, Value) and x.kind == "shape":
        return _shape_getitem(e, out, x, idx)
    if not isinstance(idx, tuple):
        idx = (idx,)
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis and not (
        isinstance(i, Value) and i.kind == "tensor" and i.dtype.name == "bool"))
    n_real += sum(i.ndim for i in idx if isinstance(i, Value) and i.kind == "tensor" and
                  i.dtype.name == "bool")
    if Ellipsis in idx:
        k = idx.index(Ellipsis)
        idx = idx[:k] + (slice(None),) * (x.ndim - n_real) + idx[k + 1:]
    name, dim = e.name(x), 0
    starts, ends, axes, steps, squeezes, news, gathers = [], [], [], [], [], [], []
    out_pos = 0
    for i in idx:
        if i is None:
            news.append(out_pos)
            out_pos += 1
            continue
        if isinstance(i, slice):
            if not (i.start is None and i.stop is None and i.step is None):
                step = 1 if i.step is None else int(_v(i.step))
                st = (0 if step > 0 else INT_MAX) if i.start is None else i.start
                en = (INT_MAX if step > 0 else -INT_MAX) if i.stop is None else i.stop
                starts.append(st)
                ends.append(en)
                axes.append(dim)
                steps.append(step)
            dim += 1
            out_pos += 1
        elif isinstance(i, Value) and i.kind == "tensor":
            if i.dtype.name == "bool" or len(gathers):
                raise UnsupportedOperatorError(
                    "ONNX export: boolean-mask or multi-tensor indexing (data-dependent "
                    "shapes) is not supported")
            gathers.append((dim, i, out_pos))
            dim += 1
            out_pos += i.ndim
        else:
            starts.append(i)
            if static(i):
                iv = int(_v(i))
                ends.append(INT_MAX if iv == -1 else iv + 1)
            else:
                ends.append(("plus1", i))
            axes.append(dim)
            steps.append(1)
            squeezes.append(dim)
            dim += 1
    if axes:
        end_items = []
        for en in ends:
            if isinstance(en, tuple):
                end_items.append(e.g.op("Add", e.int_vector([en[1]]), e.g.ints([1])))
            else:
                end_items.append(e.int_vector([en]))
        ends_name = end_items[0] if len(end_items) == 1 else e.g.op("Concat", *end_items,
                                                                     axis=0)
        name = e.g.op("Slice", name, e.int_vector(starts), ends_name, e.g.ints(axes),
                      e.g.ints(steps))
    for d, index, _ in gathers:
        idx_name = e.g.cast(e.name(index), _int64())
        name = e.g.op("Gather", name, idx_name, axis=d)
    if squeezes:
        # gathers replaced one axis by index.ndim axes: shift later squeezed axes
        extra = {d: idx.ndim - 1 for d, idx, _ in gathers}
        sq = [s + sum(v for d, v in extra.items() if d < s) for s in squeezes]
        name = squeeze(e, name, sq)
    if news:
        name = unsqueeze(e, name, news)
    return name if name != e.name(x) else e.g.op("Identity", name)


@register("index_select")
def _index_select(e, out, x, dim, index):
    return e.g.op("Gather", e.name(x), e.g.cast(e.name(index), _int64()),
                  axis=dim_of(dim, x.ndim))


@register("gather")
def _gather(e, out, x, dim, index, sparse_grad=False):
    return e.g.op("GatherElements", e.name(x), e.g.cast(e.name(index), _int64()),
                  axis=dim_of(dim, x.ndim))


@register("take_along_dim")
def _take_along_dim(e, out, x, indices, dim=None):
    if dim is None:
        raise UnsupportedOperatorError("ONNX export: take_along_dim without dim")
    return _gather(e, out, x, dim, indices)


@register("flip")
def _flip(e, out, x, *dims):
    ds = dims_of(_sizes(dims), x.ndim)
    k = len(ds)
    return e.g.op("Slice", e.name(x), e.g.ints([-1] * k), e.g.ints([-INT_MAX] * k),
                  e.g.ints(ds), e.g.ints([-1] * k))


@register("topk")
def _topk(e, out, x, k, dim=-1, largest=True, sorted=True):
    vals, idx = e.g.op("TopK", e.name(x), e.int_vector([k]), axis=dim_of(dim, x.ndim),
                       largest=int(largest), sorted=1, outputs=2)
    return vals, idx


@register("sort")
def _sort(e, out, x, dim=-1, descending=False, stable=False):
    d = dim_of(dim, x.ndim)
    k = e.g.op("Gather", e.g.op("Shape", e.name(x)), e.g.ints([d]))
    return tuple(e.g.op("TopK", e.name(x), k, axis=d, largest=int(descending), sorted=1,
                        outputs=2))


@register("argsort")
def _argsort(e, out, x, dim=-1, descending=False, stable=False):
    return _sort(e, out, x, dim, descending)[1]


@register("one_hot")
def _one_hot(e, out, x, num_classes=-1):
    depth = out.shape[-1]                        # the concrete class count
    values = e.g.const(np.asarray([0, 1], dtype=np.int64))
    import nbtorch
    return e.g.op("OneHot", e.g.cast(e.name(x), nbtorch.int64),
                  e.g.const(np.asarray(depth, dtype=np.int64)), values, axis=-1)


@register("roll")
def _roll(e, out, x, shifts, dims=None):
    name = e.name(x)
    if dims is None:
        flat = e.g.op("Reshape", name, e.g.ints([-1]))
        rolled = _roll_axis(e, flat, int(_v(shifts if not isinstance(shifts, (tuple, list))
                                          else shifts[0])), 0, x.value.numel())
        return e.g.op("Reshape", rolled, e.g.op("Shape", name))
    shifts = list(shifts) if isinstance(shifts, (tuple, list)) else [shifts]
    dims = list(dims) if isinstance(dims, (tuple, list)) else [dims]
    for s, d in zip(shifts, dims):
        d = dim_of(d, x.ndim)
        name = _roll_axis(e, name, int(_v(s)), d, x.shape[d])
    return name


def _roll_axis(e, name, shift, axis, size):
    shift = shift % size if size else 0
    if not shift:
        return name
    tail = e.g.op("Slice", name, e.g.ints([size - shift]), e.g.ints([INT_MAX]),
                  e.g.ints([axis]))
    head = e.g.op("Slice", name, e.g.ints([0]), e.g.ints([size - shift]), e.g.ints([axis]))
    return e.g.op("Concat", tail, head, axis=axis)
