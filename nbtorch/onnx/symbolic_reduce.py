"""Symbolics of reductions, the softmax family, matrix products and normalisation helpers."""
from ..ops._common import broadcast_shapes
from ._graph import UnsupportedOperatorError, Value
from ._helpers import dim_of, dims_of, operand, out_dtype, reduce, unsqueeze
from ._registry import register


def _reducer(onnx_op):
    def sym(e, out, x, dim=None, keepdim=False, *, dtype=None):
        if isinstance(out, tuple):           # max(x, dim) -> (values, indices)
            return _max_with_indices(e, out, x, dim, keepdim, onnx_op)
        dt = out_dtype(out)
        if isinstance(dim, Value) and dim.kind == "tensor":   # max(a, b): elementwise
            return e.g.op("Max" if onnx_op == "ReduceMax" else "Min", operand(e, x, dt),
                          operand(e, dim, dt))
        if x.ndim == 0:
            return e.g.op("Identity", operand(e, x, dt))
        axes = dims_of(dim, x.ndim)
        return reduce(e, onnx_op, operand(e, x, dt), axes, keepdim)
    return sym


def _max_with_indices(e, out, x, dim, keepdim, onnx_op):
    d = dim_of(dim, x.ndim)
    vals = reduce(e, onnx_op, e.name(x), [d], keepdim)
    arg = "ArgMax" if onnx_op == "ReduceMax" else "ArgMin"
    idx = e.g.op(arg, e.name(x), axis=d, keepdims=int(keepdim), select_last_index=0)
    return vals, idx


for _n, _op in {"sum": "ReduceSum", "mean": "ReduceMean", "prod": "ReduceProd",
                "amax": "ReduceMax", "amin": "ReduceMin", "max": "ReduceMax",
                "min": "ReduceMin", "logsumexp": "ReduceLogSumExp", "nansum": None}.items():
    if _op:
        register(_n)(_reducer(_op))


@register("argmax", "argmin")
def _argmax(e, out, x, dim=None, keepdim=False):
    op = "ArgMax" if e.current == "argmax" else "ArgMin"
    if dim is None:
        flat = e.g.op("Reshape", e.name(x), e.g.ints([-1]))
        r = e.g.op(op, flat, axis=0, keepdims=0)
        return e.g.op("Reshape", r, e.g.ints([1] * x.ndim)) if keepdim else r
    return e.g.op(op, e.name(x), axis=dim_of(dim, x.ndim), keepdims=int(keepdim))


@register("all", "any")
def _all_any(e, out, x, dim=None, keepdim=False):
    import nbtorch
    as_int = e.g.cast(e.name(x), nbtorch.bool) if x.dtype != nbtorch.bool else e.name(x)
    as_int = e.g.op("Cast", as_int, to=6)                              # int32
    op = "ReduceMin" if e.current == "all" else "ReduceMax"
    r = reduce(e, op, as_int, dims_of(dim, x.ndim), keepdim)
    return e.g.cast(r, nbtorch.bool)


def _var(e, out, x, dim, correction, keepdim, dt):
    axes = dims_of(dim, x.ndim)
    xs = operand(e, x, dt)
    mean = reduce(e, "ReduceMean", xs, axes, True)
    d = e.g.op("Sub", xs, mean)
    sq = reduce(e, "ReduceMean", e.g.op("Mul", d, d), axes, keepdim)
    if not correction:
        return sq
    n = e.g.cast(e.g.op("ReduceProd", e.g.op("Gather", e.g.op("Shape", xs),
                                             e.g.ints(axes)), keepdims=0), dt)
    return e.g.op("Div", e.g.op("Mul", sq, n),
                  e.g.op("Sub", n, e.name(float(correction), dtype=dt)))


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    return 1 if unbiased in (None, True) else 0


@register("var", "std")
def _var_std(e, out, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):                  # var(x, unbiased)
        dim, unbiased = None, dim
    dt = out_dtype(out)
    v = _var(e, out, x, dim, _correction(unbiased, correction), keepdim, dt)
    return e.g.op("Sqrt", v) if e.current == "std" else v


@register("norm", "vector_norm")
def _norm(e, out, x, p="fro", dim=None, keepdim=False, dtype=None):
    dt = out_dtype(out)
    axes = dims_of(dim, x.ndim)
    xs = operand(e, x, dt)
    if p in ("fro", 2, 2.0, None):
        return reduce(e, "ReduceL2", xs, axes, keepdim)
    if p in (1, 1.0):
        return reduce(e, "ReduceL1", xs, axes, keepdim)
    if p == float("inf"):
        return reduce(e, "ReduceMax", e.g.op("Abs", xs), axes, keepdim)
    if p == float("-inf"):
        return reduce(e, "ReduceMin", e.g.op("Abs", xs), axes, keepdim)
    if p == 0:
        raise UnsupportedOperatorError("ONNX export: a norm with p=0 (a count of non-zeros)")
    pw = e.name(float(p), dtype=dt)
    s = reduce(e, "ReduceSum", e.g.op("Pow", e.g.op("Abs", xs), pw), axes, keepdim)
    return e.g.op("Pow", s, e.name(1.0 / float(p), dtype=dt))


@register("normalize")
def _normalize(e, out, x, p=2.0, dim=1, eps=1e-12):
    dt = out_dtype(out)
    xs = operand(e, x, dt)
    axes = [dim_of(dim, x.ndim)]
    n = reduce(e, "ReduceL2" if p == 2 else "ReduceL1", xs, axes, True) if p in (1, 2) \
        else None
    if n is None:
        raise UnsupportedOperatorError(f"ONNX export: normalize with p={p}")
    return e.g.op("Div", xs, e.g.op("Max", n, e.name(float(eps), dtype=dt)))


@register("cosine_similarity")
def _cosine_similarity(e, out, x1, x2, dim=1, eps=1e-8):
    """PyTorch 2.x's formula: each (broadcast) vector divided by its norm clamped at eps,
    then the products summed along dim."""
    dt = out_dtype(out)
    a, b = operand(e, x1, dt), operand(e, x2, dt)
    shape = list(broadcast_shapes(tuple(x1.shape), tuple(x2.shape)))
    if list(x1.shape) != shape or list(x2.shape) != shape:
        # the broadcast shape from the graph (a dynamic batch stays dynamic)
        full = e.g.op("Shape", e.g.op("Add", a, b))
        a, b = e.g.op("Expand", a, full), e.g.op("Expand", b, full)
    axes = [dim_of(dim, len(shape))]
    floor = e.name(float(eps), dtype=dt)
    unit_a = e.g.op("Div", a, e.g.op("Max", reduce(e, "ReduceL2", a, axes, True), floor))
    unit_b = e.g.op("Div", b, e.g.op("Max", reduce(e, "ReduceL2", b, axes, True), floor))
    return reduce(e, "ReduceSum", e.g.op("Mul", unit_a, unit_b), axes, False)


@register("cdist")
def _cdist(e, out, x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Distances between the rows of x1 (.., P, M) and x2 (.., R, M) as the p-norm of
    their differences, broadcast (.., P, 1, M) - (.., 1, R, M), over the last axis."""
    dt = out_dtype(out)
    a, b = operand(e, x1, dt), operand(e, x2, dt)
    diff = e.g.op("Sub", unsqueeze(e, a, [-2]), unsqueeze(e, b, [-3]))
    p = float(p)
    if p == 2:
        return reduce(e, "ReduceL2", diff, [-1], False)
    if p == 1:
        return reduce(e, "ReduceL1", diff, [-1], False)
    if p == float("inf"):
        return reduce(e, "ReduceMax", e.g.op("Abs", diff), [-1], False)
    if p == 0:
        zero, one = e.name(0.0, dtype=dt), e.name(1.0, dtype=dt)
        nonzero = e.g.op("Where", e.g.op("Equal", diff, zero), zero, one)
        return reduce(e, "ReduceSum", nonzero, [-1], False)
    s = reduce(e, "ReduceSum", e.g.op("Pow", e.g.op("Abs", diff), e.name(p, dtype=dt)),
               [-1], False)
    return e.g.op("Pow", s, e.name(1.0 / p, dtype=dt))


@register("softmax", "log_softmax", "softmin", "_softmax")
def _softmax(e, out, x, dim=None, _stacklevel=3, dtype=None, **kwargs):
    dt = out_dtype(out)
    xs = operand(e, x, dt)
    if dim is None:
        dim = 0 if x.ndim in (0, 1, 3) else 1         # PyTorch's legacy implicit dim
    axis = dim_of(dim, max(x.ndim, 1))
    if e.current == "softmin":
        xs = e.g.op("Neg", xs)
    op = "LogSoftmax" if e.current == "log_softmax" else "Softmax"
    return e.g.op(op, xs, axis=axis)


@register("matmul", "mm", "bmm", "__matmul__", "inner_matmul")
def _matmul(e, out, a, b):
    dt = out_dtype(out)
    return e.g.op("MatMul", operand(e, a, dt), operand(e, b, dt))


@register("addmm", "baddbmm", "addbmm")
def _addmm(e, out, bias, a, b, *, beta=1, alpha=1):
    dt = out_dtype(out)
    prod = e.g.op("MatMul", operand(e, a, dt), operand(e, b, dt))
    if alpha != 1:
        prod = e.g.op("Mul", prod, e.name(alpha, dtype=dt))
    if e.current == "addbmm":
        prod = reduce(e, "ReduceSum", prod, [0], False)
    if beta == 0:
        return prod
    c = operand(e, bias, dt)
    if beta != 1:
        c = e.g.op("Mul", c, e.name(beta, dtype=dt))
    return e.g.op("Add", prod, c)


@register("linear")
def _linear(e, out, x, weight, bias=None):
    dt = out_dtype(out)
    xs, w = operand(e, x, dt), operand(e, weight, dt)
    if x.ndim == 2 and weight.ndim == 2:
        return e.g.op("Gemm", xs, w, None if bias is None else operand(e, bias, dt), transB=1)
    y = e.g.op("MatMul", xs, e.g.op("Transpose", w, perm=[1, 0]) if weight.ndim == 2 else w)
    return y if bias is None else e.g.op("Add", y, operand(e, bias, dt))


@register("dot", "vdot")
def _dot(e, out, a, b):
    dt = out_dtype(out)
    return e.g.op("MatMul", operand(e, a, dt), operand(e, b, dt))


@register("outer", "ger")
def _outer(e, out, a, b):
    dt = out_dtype(out)
    col = e.g.op("Unsqueeze", operand(e, a, dt), e.g.ints([1]))
    return e.g.op("Mul", col, operand(e, b, dt))



@register("std_mean", "var_mean")
def _var_std_mean(e, out, x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    dt = out_dtype(out[0])
    v = _var(e, out, x, dim, _correction(unbiased, correction), keepdim, dt)
    mean = reduce(e, "ReduceMean", operand(e, x, dt), dims_of(dim, x.ndim), keepdim)
    return (e.g.op("Sqrt", v) if e.current == "std_mean" else v), mean


@register("embedding_bag")
def _embedding_bag(e, out, input, weight, offsets=None, max_norm=None, norm_type=2,
                   scale_grad_by_freq=False, mode="mean", sparse=False,
                   per_sample_weights=None, include_last_offset=False, padding_idx=None):
    if offsets is not None or input.ndim != 2 or max_norm is not None or \
            per_sample_weights is not None or padding_idx is not None:
        raise UnsupportedOperatorError("ONNX export: embedding_bag is exported for a 2-D "
                                       "input of equal bags only (no offsets, max_norm, "
                                       "per_sample_weights or padding_idx)")
    import nbtorch
    rows = e.g.op("Gather", e.name(weight), e.g.cast(e.name(input), nbtorch.int64), axis=0)
    op = {"mean": "ReduceMean", "sum": "ReduceSum", "max": "ReduceMax"}[mode]
    return reduce(e, op, rows, [1], False)
