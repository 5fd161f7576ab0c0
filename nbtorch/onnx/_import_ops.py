"""ONNX ops run with nbtorch: ``OPS[op_type](module, inputs, attrs) -> output(s)``.

Inputs are nbtorch tensors (None for an omitted optional input); integer
inputs that ONNX uses as sizes (shapes, axes, pads) are read with ``tolist``.
"""
import math

import numpy as np

import nbtorch
from nbtorch.nn import functional as F

__all__ = ["OPS", "run_constant", "to_dtype"]

OPS = {}


def op(*names):
    def deco(fn):
        for n in names:
            OPS[n] = fn
        return fn
    return deco


def to_dtype(onnx_type):
    from onnx import helper
    npd = np.dtype(helper.tensor_dtype_to_np_dtype(onnx_type))
    return {np.dtype(np.float32): nbtorch.float32, np.dtype(np.float64): nbtorch.float64,
            np.dtype(np.float16): nbtorch.float16, np.dtype(np.int64): nbtorch.int64,
            np.dtype(np.int32): nbtorch.int32, np.dtype(np.int16): nbtorch.int16,
            np.dtype(np.int8): nbtorch.int8, np.dtype(np.uint8): nbtorch.uint8,
            np.dtype(np.bool_): nbtorch.bool}[npd]


def _ints(t):
    return [int(v) for v in t.tolist()] if t is not None else None


@op("Constant")
def _constant(m, x, a):
    return run_constant(a, getattr(m, "_device", None))


def run_constant(attrs, device=None):
    """A Constant node's value; floating constants go to `device` (integer ones, which
    ONNX uses for shapes and axes, stay on the CPU as PyTorch keeps sizes)."""
    from onnx import numpy_helper
    if "value" in attrs:
        arr = np.array(numpy_helper.to_array(attrs["value"]))
    else:
        for k, dt in (("value_float", np.float32), ("value_int", np.int64),
                      ("value_floats", np.float32), ("value_ints", np.int64)):
            if k in attrs:
                arr = np.asarray(attrs[k], dtype=dt)
                break
        else:
            raise NotImplementedError(f"Constant with {sorted(attrs)}")
    on = device if arr.dtype.kind in "fc" else None
    return nbtorch.tensor(arr, device=on)


# ---- elementwise -----------------------------------------------------------------------

def _binary(fn):
    return lambda m, x, a: fn(x[0], x[1])


for _name, _fn in {"Add": nbtorch.add, "Sub": nbtorch.sub, "Mul": nbtorch.mul,
                   "Pow": nbtorch.pow, "Equal": nbtorch.eq, "Less": nbtorch.lt,
                   "LessOrEqual": nbtorch.le, "Greater": nbtorch.gt,
                   "GreaterOrEqual": nbtorch.ge, "And": nbtorch.logical_and,
                   "Or": nbtorch.logical_or, "Xor": nbtorch.logical_xor,
                   "MatMul": nbtorch.matmul}.items():
    OPS[_name] = _binary(_fn)


@op("Div")
def _div(m, x, a):
    if x[0].dtype.is_floating_point:
        return nbtorch.div(x[0], x[1])
    return nbtorch.div(x[0], x[1], rounding_mode="trunc")


@op("Mod")
def _mod(m, x, a):
    return nbtorch.fmod(x[0], x[1]) if a.get("fmod", 0) else nbtorch.remainder(x[0], x[1])


@op("Max", "Min")
def _max_min(m, x, a):
    fn = nbtorch.maximum if m._op == "Max" else nbtorch.minimum
    r = x[0]
    for t in x[1:]:
        r = fn(r, t)
    return r


@op("Sum", "Mean")
def _sum_mean(m, x, a):
    r = x[0]
    for t in x[1:]:
        r = r + t
    return r / len(x) if m._op == "Mean" else r


_UNARY = {"Neg": nbtorch.neg, "Abs": nbtorch.abs, "Exp": nbtorch.exp, "Log": nbtorch.log,
          "Sqrt": nbtorch.sqrt, "Sin": nbtorch.sin, "Cos": nbtorch.cos, "Tan": nbtorch.tan,
          "Asin": nbtorch.asin, "Acos": nbtorch.acos, "Atan": nbtorch.atan,
          "Sinh": nbtorch.sinh, "Cosh": nbtorch.cosh, "Tanh": nbtorch.tanh,
          "Asinh": nbtorch.asinh, "Acosh": nbtorch.acosh, "Atanh": nbtorch.atanh,
          "Sigmoid": nbtorch.sigmoid, "Relu": nbtorch.relu, "Floor": nbtorch.floor,
          "Ceil": nbtorch.ceil, "Round": nbtorch.round, "Sign": nbtorch.sign,
          "Reciprocal": nbtorch.reciprocal, "Erf": nbtorch.erf, "Not": nbtorch.logical_not,
          "IsNaN": nbtorch.isnan, "Softsign": F.softsign, "Identity": lambda t: t}
for _name, _fn in _UNARY.items():
    OPS[_name] = (lambda fn: lambda m, x, a: fn(x[0]))(_fn)


@op("IsInf")
def _isinf(m, x, a):
    return nbtorch.isinf(x[0])


@op("Where")
def _where(m, x, a):
    return nbtorch.where(x[0], x[1], x[2])


@op("Clip")
def _clip(m, x, a):
    lo = x[1].item() if len(x) > 1 and x[1] is not None else a.get("min")
    hi = x[2].item() if len(x) > 2 and x[2] is not None else a.get("max")
    return nbtorch.clamp(x[0], lo, hi)


@op("Cast")
def _cast(m, x, a):
    return x[0].to(to_dtype(a["to"]))


@op("CastLike")
def _cast_like(m, x, a):
    return x[0].to(x[1].dtype)


@op("LeakyRelu")
def _leaky(m, x, a):
    return F.leaky_relu(x[0], a.get("alpha", 0.01))


@op("Elu")
def _elu(m, x, a):
    return F.elu(x[0], a.get("alpha", 1.0))


@op("Celu")
def _celu(m, x, a):
    return F.celu(x[0], a.get("alpha", 1.0))


@op("Selu")
def _selu(m, x, a):
    alpha, gamma = a.get("alpha", 1.67326319217681884765625), a.get("gamma",
                                                                        1.05070102214813232421875)
    return gamma * nbtorch.where(x[0] > 0, x[0], alpha * (nbtorch.exp(x[0]) - 1))


@op("HardSigmoid")
def _hardsigmoid(m, x, a):
    return nbtorch.clamp(a.get("alpha", 0.2) * x[0] + a.get("beta", 0.5), 0.0, 1.0)


@op("HardSwish")
def _hardswish(m, x, a):
    return F.hardswish(x[0])


@op("Softplus")
def _softplus(m, x, a):
    return nbtorch.log1p(nbtorch.exp(-x[0].abs())) + nbtorch.clamp(x[0], min=0)


@op("PRelu")
def _prelu(m, x, a):
    return nbtorch.where(x[0] >= 0, x[0], x[0] * x[1])


@op("Shrink")
def _shrink(m, x, a):
    lambd, bias = a.get("lambd", 0.5), a.get("bias", 0.0)
    t = x[0]
    return nbtorch.where(t < -lambd, t + bias, nbtorch.where(t > lambd, t - bias,
                                                             nbtorch.zeros_like(t)))


@op("Gelu")
def _gelu(m, x, a):
    return F.gelu(x[0], approximate=a.get("approximate", "none"))


@op("Dropout")
def _dropout(m, x, a):
    return x[0], nbtorch.ones_like(x[0]).bool()


# ---- shapes ------------------------------------------------------------------------------

@op("Shape")
def _shape(m, x, a):
    shape = list(x[0].shape)
    start, end = a.get("start", 0), a.get("end", len(shape))
    return nbtorch.tensor(shape[start:end] if shape else [], dtype=nbtorch.int64)


@op("Size")
def _size(m, x, a):
    return nbtorch.tensor(x[0].numel(), dtype=nbtorch.int64)


@op("Reshape")
def _reshape(m, x, a):
    shape = _ints(x[1])
    if not a.get("allowzero", 0):
        shape = [x[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return x[0].reshape(shape)


@op("Flatten")
def _flatten(m, x, a):
    axis = a.get("axis", 1)
    axis = axis + x[0].ndim if axis < 0 else axis
    lead = int(np.prod(x[0].shape[:axis])) if axis else 1
    return x[0].reshape(lead, -1)


@op("Transpose")
def _transpose(m, x, a):
    perm = a.get("perm") or list(range(x[0].ndim))[::-1]
    return x[0].permute(*perm)


def _axes(x, a, idx=1):
    if len(x) > idx and x[idx] is not None:
        return _ints(x[idx])
    return a.get("axes")


@op("Unsqueeze")
def _unsqueeze(m, x, a):
    t = x[0]
    axes = _axes(x, a)
    n = t.ndim + len(axes)
    for d in sorted(d + n if d < 0 else d for d in axes):
        t = t.unsqueeze(d)
    return t


@op("Squeeze")
def _squeeze(m, x, a):
    axes = _axes(x, a)
    if axes is None:
        return x[0].squeeze()
    t = x[0]
    for d in sorted((d + t.ndim if d < 0 else d for d in axes), reverse=True):
        t = t.squeeze(d)
    return t


@op("Concat")
def _concat(m, x, a):
    return nbtorch.cat([t for t in x if t is not None], a["axis"])


@op("Split")
def _split(m, x, a):
    axis = a.get("axis", 0)
    sizes = _ints(x[1]) if len(x) > 1 and x[1] is not None else a.get("split")
    if sizes is None:
        n = a.get("num_outputs") or m._n_out
        size = x[0].shape[axis]
        sizes = [math.ceil(size / n)] * (n - 1)
        sizes.append(size - sum(sizes))
    return tuple(nbtorch.split(x[0], list(sizes), axis))


@op("Slice")
def _slice(m, x, a):
    t = x[0]
    starts, ends = _ints(x[1]), _ints(x[2])
    axes = _ints(x[3]) if len(x) > 3 and x[3] is not None else list(range(len(starts)))
    steps = _ints(x[4]) if len(x) > 4 and x[4] is not None else [1] * len(starts)
    index = [slice(None)] * t.ndim
    for s, e, ax, st in zip(starts, ends, axes, steps):
        n = t.shape[ax]
        if st > 0:
            index[ax] = slice(*slice(s, e, st).indices(n))
        else:
            s, e = max(min(s if s >= 0 else s + n, n - 1), -1), e if e >= 0 else e + n
            e = max(e, -1)
            idx = list(range(s, e, st))
            index[ax] = None
            t = t.index_select(ax, nbtorch.tensor(idx, dtype=nbtorch.int64))
            index[ax] = slice(None)
    return t[tuple(index)]


@op("Gather")
def _gather(m, x, a):
    axis = a.get("axis", 0)
    t, idx = x[0], x[1].long()
    axis = axis + t.ndim if axis < 0 else axis
    idx = nbtorch.where(idx < 0, idx + t.shape[axis], idx)
    out = t.index_select(axis, idx.reshape(-1))
    return out.reshape(list(t.shape[:axis]) + list(idx.shape) + list(t.shape[axis + 1:]))


@op("GatherElements")
def _gather_elements(m, x, a):
    return nbtorch.gather(x[0], a.get("axis", 0), x[1].long())


@op("Expand")
def _expand(m, x, a):
    shape = _ints(x[1])
    t = x[0]
    n = max(len(shape), t.ndim)
    t = t.reshape([1] * (n - t.ndim) + list(t.shape))
    shape = [1] * (n - len(shape)) + shape
    target = [max(s, d) if d != 1 or s != 1 else 1 for s, d in zip(shape, t.shape)]
    return t.expand(*target)


@op("Tile")
def _tile(m, x, a):
    return x[0].repeat(*_ints(x[1]))


@op("ConstantOfShape")
def _constant_of_shape(m, x, a):
    from onnx import numpy_helper
    v = np.zeros(1, np.float32) if "value" not in a else numpy_helper.to_array(a["value"])
    return nbtorch.full(_ints(x[0]), v.reshape(-1)[0].item(),
                        dtype=to_dtype(a["value"].data_type) if "value" in a
                        else nbtorch.float32)


@op("Range")
def _range(m, x, a):
    return nbtorch.arange(x[0].item(), x[1].item(), x[2].item(), dtype=x[0].dtype)


@op("Trilu")
def _trilu(m, x, a):
    k = int(x[1].item()) if len(x) > 1 and x[1] is not None else 0
    return nbtorch.triu(x[0], k) if a.get("upper", 1) else nbtorch.tril(x[0], k)


@op("CumSum")
def _cumsum(m, x, a):
    if a.get("exclusive") or a.get("reverse"):
        raise NotImplementedError("CumSum with exclusive/reverse")
    return nbtorch.cumsum(x[0], int(x[1].item()))


@op("TopK")
def _topk(m, x, a):
    k = int(x[1].reshape(-1)[0].item())
    v, i = nbtorch.topk(x[0], k, a.get("axis", -1), bool(a.get("largest", 1)), True)
    return v, i


@op("Einsum")
def _einsum(m, x, a):
    eq = a["equation"]
    return nbtorch.einsum(eq.decode() if isinstance(eq, bytes) else eq, *x)


@op("DepthToSpace")
def _depth_to_space(m, x, a):
    if a.get("mode", "DCR") == "CRD":
        return F.pixel_shuffle(x[0], a["blocksize"])
    b = a["blocksize"]
    n, c, h, w = x[0].shape
    t = x[0].reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    return t.reshape(n, c // (b * b), h * b, w * b)
