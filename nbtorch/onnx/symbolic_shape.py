"""Symbolics of shape, view and joining ops, factories, and of traced Python sizes
(indexing lives in symbolic_index.py)."""
import numpy as np

from ._graph import UnsupportedOperatorError, Value
from ._helpers import dim_of, dims_of, operand, out_dtype, shape_slice, squeeze, unsqueeze
from ._registry import register


def _sizes(args):
    """view(2, 3) / view((2, 3)) / view(size_value): the list of size items."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return list(args[0])
    return list(args)


def _shape_input(e, items):
    if len(items) == 1 and isinstance(items[0], Value) and items[0].kind == "shape":
        return e.name(items[0])
    return e.int_vector(items)


# ---- Python sizes read from tensors -----------------------------------------------------

@register("getattr")
def _getattr(e, out, x, attr):
    if attr == "shape":
        return e.g.op("Shape", e.name(x))
    if attr in ("T", "mT"):
        perm = list(range(x.ndim))
        if attr == "T":
            perm.reverse()
        else:
            perm[-2:] = perm[-1], perm[-2]
        return e.g.op("Transpose", e.name(x), perm=perm)
    raise UnsupportedOperatorError(f"ONNX export: Tensor.{attr} read from a traced value")


@register("size")
def _size(e, out, x, dim=None):
    if dim is None:
        return e.g.op("Shape", e.name(x))
    d = dim_of(dim, x.ndim)
    return e.g.op("Gather", e.g.op("Shape", e.name(x)), e.g.const(np.int64(d)))


@register("numel", "nelement")
def _numel(e, out, x):
    return e.g.op("ReduceProd", e.g.op("Shape", e.name(x)), keepdims=0)


# ---- views and reshapes --------------------------------------------------------------------

@register("view", "reshape")
def _reshape(e, out, x, *shape):
    import nbtorch
    if len(shape) == 1 and isinstance(shape[0], nbtorch.dtype):
        raise UnsupportedOperatorError("ONNX export: view(dtype) reinterprets bytes")
    return e.g.op("Reshape", e.name(x), _shape_input(e, _sizes(shape)))


@register("view_as", "reshape_as")
def _view_as(e, out, x, other):
    return e.g.op("Reshape", e.name(x), e.g.op("Shape", e.name(other)))


@register("flatten")
def _flatten(e, out, x, start_dim=0, end_dim=-1):
    n = x.ndim
    if n == 0:
        return e.g.op("Reshape", e.name(x), e.g.ints([1]))
    s, t = dim_of(start_dim, n), dim_of(end_dim, n)
    if s == t:
        return e.g.op("Identity", e.name(x))
    if t == n - 1 and s == 1:
        return e.g.op("Flatten", e.name(x), axis=1)
    parts = []
    if s > 0:
        parts.append(shape_slice(e, e.name(x), 0, s))
    parts.append(e.g.ints([-1]))
    if t < n - 1:
        parts.append(shape_slice(e, e.name(x), t + 1))
    shape = parts[0] if len(parts) == 1 else e.g.op("Concat", *parts, axis=0)
    return e.g.op("Reshape", e.name(x), shape)


@register("unflatten")
def _unflatten(e, out, x, dim, sizes):
    n = x.ndim
    d = dim_of(dim, n)
    parts = []
    if d > 0:
        parts.append(shape_slice(e, e.name(x), 0, d))
    parts.append(e.int_vector(list(sizes)))
    if d < n - 1:
        parts.append(shape_slice(e, e.name(x), d + 1))
    return e.g.op("Reshape", e.name(x), e.g.op("Concat", *parts, axis=0))


@register("permute")
def _permute(e, out, x, *dims):
    return e.g.op("Transpose", e.name(x), perm=dims_of(_sizes(dims), x.ndim))


@register("transpose", "swapaxes", "swapdims", "transpose_")
def _transpose(e, out, x, dim0, dim1):
    perm = list(range(x.ndim))
    a, b = dim_of(dim0, x.ndim), dim_of(dim1, x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return e.g.op("Transpose", e.name(x), perm=perm)


@register("t")
def _t(e, out, x):
    if x.ndim < 2:
        return e.g.op("Identity", e.name(x))
    return e.g.op("Transpose", e.name(x), perm=[1, 0])


@register("movedim", "moveaxis")
def _movedim(e, out, x, source, destination):
    n = x.ndim
    src, dst = dims_of(source, n), dims_of(destination, n)
    rest = [d for d in range(n) if d not in src]
    perm = [None] * n
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(rest)
    perm = [p if p is not None else next(it) for p in perm]
    return e.g.op("Transpose", e.name(x), perm=perm)


@register("unsqueeze", "unsqueeze_")
def _unsqueeze(e, out, x, dim):
    return unsqueeze(e, e.name(x), [dim_of(dim, x.ndim + 1)])


@register("squeeze", "squeeze_")
def _squeeze(e, out, x, dim=None):
    dims = [d for d in dims_of(dim, x.ndim) if x.shape[d] == 1]
    if not dims:
        return e.g.op("Identity", e.name(x))
    return squeeze(e, e.name(x), dims)


@register("contiguous", "clone", "detach", "cpu", "cuda", "detach_", "requires_grad_",
          "alias", "positive", "resolve_conj", "resolve_neg")
def _identity(e, out, x, *args, **kwargs):
    return e.g.op("Identity", e.name(x))


@register("to", "type", "type_as", "float", "double", "half", "int", "long", "short",
          "bool", "byte", "char", "bfloat16")
def _to(e, out, x, *args, **kwargs):
    from .._tensor import Tensor
    if not isinstance(out, Tensor):
        raise UnsupportedOperatorError(f"ONNX export: '{e.current}' to a Python value")
    if isinstance(x, Value) and x.kind == "tensor" and x.dtype == out.dtype:
        return e.g.op("Identity", e.name(x))
    return e.g.cast(e.name(x), out.dtype)


@register("expand")
def _expand(e, out, x, *sizes):
    items = _sizes(sizes)
    items = [1 if (not isinstance(i, Value) and int(i) == -1) else i for i in items]
    return e.g.op("Expand", e.name(x), _shape_input(e, items))


@register("expand_as", "broadcast_to")
def _expand_as(e, out, x, other):
    if isinstance(other, Value) and other.kind == "tensor":
        return e.g.op("Expand", e.name(x), e.g.op("Shape", e.name(other)))
    return _expand(e, out, x, other)


@register("repeat")
def _repeat(e, out, x, *sizes):
    items = _sizes(sizes)
    name = e.name(x)
    if len(items) > x.ndim:
        name = unsqueeze(e, name, list(range(len(items) - x.ndim)))
    return e.g.op("Tile", name, e.int_vector(items))


# ---- joining and splitting ---------------------------------------------------------------

@register("cat", "concat", "concatenate")
def _cat(e, out, tensors, dim=0):
    dt = out_dtype(out)
    items = [t for t in tensors if not (isinstance(t, Value) and t.shape == (0,))]
    return e.g.op("Concat", *[operand(e, t, dt) for t in items], axis=dim_of(dim, out.ndim))


@register("stack")
def _stack(e, out, tensors, dim=0):
    dt = out_dtype(out)
    d = dim_of(dim, out.ndim)
    return e.g.op("Concat", *[unsqueeze(e, operand(e, t, dt), [d]) for t in tensors], axis=d)


def _split_sizes(e, x, outs, d, sizes=None):
    sizes = sizes or [int(o.shape[d]) for o in outs]
    names = e.g.op("Split", e.name(x), e.g.ints(sizes), axis=d, outputs=len(sizes))
    return [names] if len(sizes) == 1 else names


@register("split", "chunk", "tensor_split", "split_with_sizes")
def _split(e, out, x, arg, dim=0):
    return _split_sizes(e, x, out, dim_of(dim, x.ndim))


@register("unbind")
def _unbind(e, out, x, dim=0):
    d = dim_of(dim, x.ndim)
    return [squeeze(e, n, [d]) for n in _split_sizes(e, x, out, d, [1] * len(out))]


@register("tril", "triu")
def _tri(e, out, x, diagonal=0):
    return e.g.op("Trilu", e.name(x), e.g.const(np.int64(int(diagonal))),
                  upper=int(e.current == "triu"))


@register("zeros_like", "ones_like", "full_like")
def _like(e, out, x, *args, **kwargs):
    value = {"zeros_like": 0, "ones_like": 1}.get(e.current)
    if value is None:
        value = args[0] if args else kwargs["fill_value"]
    from ._graph import np_dtype
    from onnx import numpy_helper
    t = numpy_helper.from_array(np.asarray([value], dtype=np_dtype(out.dtype)))
    return e.g.op("ConstantOfShape", e.g.op("Shape", e.name(x)), value=t)


@register("einsum")
def _einsum(e, out, equation, *operands):
    ops = _sizes(operands)
    dt = out_dtype(out)
    return e.g.op("Einsum", *[operand(e, o, dt) for o in ops], equation=equation)


@register("cumsum")
def _cumsum(e, out, x, dim, dtype=None):
    dt = out_dtype(out)
    return e.g.op("CumSum", operand(e, x, dt), e.g.const(np.int64(dim_of(dim, x.ndim))))


@register("arange")
def _arange(e, out, *args, **kwargs):
    dt = out_dtype(out)
    vals = [a for a in args if a is not None]
    if len(vals) == 1:
        start, end, step = 0, vals[0], 1
    else:
        start, end, step = (list(vals) + [1])[:3]
    return e.g.op("Range", operand(e, start, dt), operand(e, end, dt), operand(e, step, dt))


@register("zeros", "ones", "full", "empty", "new_zeros", "new_ones", "new_full", "new_empty")
def _factory(e, out, *args, **kwargs):
    """A factory whose size depends on the inputs (``torch.zeros(x.size(0), 4)``)."""
    from onnx import numpy_helper
    from ._graph import np_dtype
    name = e.current
    if name.startswith("new_"):
        args = args[1:]                                  # the tensor the method is called on
    if name.endswith("full"):
        sizes, value = args[0], (args[1] if len(args) > 1 else kwargs["fill_value"])
    else:
        sizes, value = _sizes(args if args else [kwargs.get("size")]), \
            {"zeros": 0, "ones": 1}.get(name.replace("new_", ""), 0)
    if isinstance(value, Value):
        raise UnsupportedOperatorError(f"ONNX export: {name} with a computed fill value")
    items = _sizes([sizes]) if isinstance(sizes, (tuple, list)) else _sizes([sizes])
    t = numpy_helper.from_array(np.asarray([value], dtype=np_dtype(out.dtype)))
    return e.g.op("ConstantOfShape", _shape_input(e, items), value=t)
