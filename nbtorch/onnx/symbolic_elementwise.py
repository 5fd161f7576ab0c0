"""Symbolics of elementwise ops: arithmetic, comparisons, unary math, activations."""
import math

from ._graph import Value
from ._helpers import operand, out_dtype
from ._registry import register

_BINARY = {"add": "Add", "iadd": "Add", "radd": "Add", "sub": "Sub", "isub": "Sub",
           "subtract": "Sub", "mul": "Mul", "imul": "Mul", "multiply": "Mul",
           "truediv": "Div", "itruediv": "Div", "div": "Div", "divide": "Div",
           "true_divide": "Div", "pow": "Pow", "ipow": "Pow", "float_power": "Pow",
           "maximum": "Max", "minimum": "Min", "fmax": "Max", "fmin": "Min",
           "and_": "And", "or_": "Or", "xor": "Xor", "logical_and": "And",
           "logical_or": "Or", "logical_xor": "Xor", "bitwise_and": "And",
           "bitwise_or": "Or", "bitwise_xor": "Xor", "__and__": "And", "__or__": "Or",
           "__xor__": "Xor"}
_COMPARE = {"eq": "Equal", "ne": "Equal", "lt": "Less", "le": "LessOrEqual",
            "gt": "Greater", "ge": "GreaterOrEqual", "greater": "Greater", "less": "Less",
            "greater_equal": "GreaterOrEqual", "less_equal": "LessOrEqual", "equal": "Equal",
            "not_equal": "Equal", "__eq__": "Equal", "__ne__": "Equal", "__lt__": "Less",
            "__le__": "LessOrEqual", "__gt__": "Greater", "__ge__": "GreaterOrEqual"}
_UNARY = {"neg": "Neg", "negative": "Neg", "abs": "Abs", "absolute": "Abs", "exp": "Exp",
          "log": "Log", "sqrt": "Sqrt", "sin": "Sin", "cos": "Cos", "tan": "Tan",
          "asin": "Asin", "acos": "Acos", "atan": "Atan", "arcsin": "Asin",
          "arccos": "Acos", "arctan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "tanh": "Tanh",
          "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "sigmoid": "Sigmoid",
          "relu": "Relu", "floor": "Floor", "ceil": "Ceil", "round": "Round",
          "sign": "Sign", "reciprocal": "Reciprocal", "erf": "Erf", "isnan": "IsNaN",
          "logical_not": "Not", "softsign": "Softsign", "bitwise_not": "Not",
          "invert": "Not"}


def _both(e, out, a, b, compute):
    return operand(e, a, compute), operand(e, b, compute)


def _promoted(a, b):
    """The dtype PyTorch computes a comparison in."""
    import nbtorch
    va = a.value if isinstance(a, Value) else a
    vb = b.value if isinstance(b, Value) else b
    if not isinstance(va, nbtorch.Tensor):
        va = nbtorch.tensor(va)
    return nbtorch.result_type(va, vb)


def _binary(onnx_op):
    def sym(e, out, a, b, *, alpha=None, rounding_mode=None):
        dt = out_dtype(out)
        x, y = _both(e, out, a, b, dt)
        if alpha is not None and alpha != 1:
            y = e.g.op("Mul", y, e.name(alpha, dtype=dt))
        if onnx_op == "Div" and rounding_mode is not None:
            return _rounded_div(e, out, a, b, rounding_mode)
        if onnx_op == "Div" and not dt.is_floating_point:
            return _rounded_div(e, out, a, b, "trunc")
        return e.g.op(onnx_op, x, y)
    return sym


def _rounded_div(e, out, a, b, mode):
    import nbtorch
    dt = out_dtype(out)
    if not dt.is_floating_point:
        x, y = operand(e, a, nbtorch.float64), operand(e, b, nbtorch.float64)
    else:
        x, y = operand(e, a, dt), operand(e, b, dt)
    q = e.g.op("Div", x, y)
    if mode == "floor":
        q = e.g.op("Floor", q)
    else:
        q = e.g.op("Mul", e.g.op("Sign", q), e.g.op("Floor", e.g.op("Abs", q)))
    return e.g.cast(q, dt) if not dt.is_floating_point else q


for _n, _op in _BINARY.items():
    register(_n, _n + "_")(_binary(_op))


@register("floordiv", "ifloordiv", "floor_divide")
def _floordiv(e, out, a, b):
    return _rounded_div(e, out, a, b, "floor")


@register("sub", "isub", "subtract", "rsub")
def _sub(e, out, a, b, alpha=1):
    dt = out_dtype(out)
    x, y = operand(e, a, dt), operand(e, b, dt)
    if alpha != 1:
        y = e.g.op("Mul", y, e.name(alpha, dtype=dt))
    return e.g.op("Sub", x, y)


@register("mod", "remainder", "fmod")
def _mod(e, out, a, b):
    dt = out_dtype(out)
    x, y = operand(e, a, dt), operand(e, b, dt)
    if not dt.is_floating_point:
        return e.g.op("Mod", x, y, fmod=0)
    fmod = e.g.op("Mod", x, y, fmod=1)
    if e.current == "fmod":
        return fmod
    # Python's (and torch.remainder's) sign follows the divisor
    zero = e.name(0.0, dtype=dt)
    fix = e.g.op("And", e.g.op("Not", e.g.op("Equal", fmod, zero)),
                 e.g.op("Not", e.g.op("Equal", e.g.op("Less", fmod, zero),
                                      e.g.op("Less", y, zero))))
    return e.g.op("Where", fix, e.g.op("Add", fmod, y), fmod)


def _compare(onnx_op, negate):
    def sym(e, out, a, b):
        dt = _promoted(a, b)
        x, y = operand(e, a, dt), operand(e, b, dt)
        r = e.g.op(onnx_op, x, y)
        return e.g.op("Not", r) if negate else r
    return sym


for _n, _op in _COMPARE.items():
    register(_n)(_compare(_op, _n in ("ne", "not_equal", "__ne__")))


def _unary(onnx_op):
    def sym(e, out, x, *args, **kwargs):
        dt = out_dtype(out)
        if onnx_op in ("IsNaN",):
            return e.g.op(onnx_op, e.name(x))
        if onnx_op == "Not":
            return e.g.op("Not", operand(e, x, dt))
        if onnx_op == "Round" and (args or kwargs.get("decimals")):
            d = 10.0 ** int(args[0] if args else kwargs["decimals"])
            s = e.name(d, dtype=dt)
            return e.g.op("Div", e.g.op("Round", e.g.op("Mul", operand(e, x, dt), s)), s)
        return e.g.op(onnx_op, operand(e, x, dt))
    return sym


for _n, _op in _UNARY.items():
    register(_n, _n + "_")(_unary(_op))


def _compose(build):
    """A symbolic from `build(e, x, dt, *args, **kw)` on the input cast to the out dtype."""
    def sym(e, out, x, *args, **kwargs):
        dt = out_dtype(out)
        return build(e, operand(e, x, dt), dt, *args, **kwargs)
    return sym


def _c(e, v, dt):
    return e.name(v, dtype=dt)


@register("rsqrt")
@_compose
def _rsqrt(e, x, dt):
    return e.g.op("Reciprocal", e.g.op("Sqrt", x))


@register("square")
@_compose
def _square(e, x, dt):
    return e.g.op("Mul", x, x)


@register("log1p")
@_compose
def _log1p(e, x, dt):
    return e.g.op("Log", e.g.op("Add", x, _c(e, 1.0, dt)))


@register("expm1")
@_compose
def _expm1(e, x, dt):
    return e.g.op("Sub", e.g.op("Exp", x), _c(e, 1.0, dt))


@register("log2", "log10")
def _logb(e, out, x):
    dt = out_dtype(out)
    base = 2.0 if e.current == "log2" else 10.0
    return e.g.op("Div", e.g.op("Log", operand(e, x, dt)), _c(e, math.log(base), dt))


@register("trunc", "fix")
@_compose
def _trunc(e, x, dt):
    return e.g.op("Mul", e.g.op("Sign", x), e.g.op("Floor", e.g.op("Abs", x)))


@register("isinf")
def _isinf(e, out, x):
    return e.g.op("IsInf", e.name(x))


@register("relu6")
@_compose
def _relu6(e, x, dt, inplace=False):
    return e.g.op("Clip", x, _c(e, 0.0, dt), _c(e, 6.0, dt))


@register("leaky_relu", "leaky_relu_")
@_compose
def _leaky_relu(e, x, dt, negative_slope=0.01, inplace=False):
    return e.g.op("LeakyRelu", x, alpha=float(negative_slope))


@register("elu", "elu_")
@_compose
def _elu(e, x, dt, alpha=1.0, inplace=False):
    return e.g.op("Elu", x, alpha=float(alpha))


@register("selu", "selu_")
@_compose
def _selu(e, x, dt, inplace=False):
    return e.g.op("Selu", x)


@register("celu", "celu_")
@_compose
def _celu(e, x, dt, alpha=1.0, inplace=False):
    return e.g.op("Celu", x, alpha=float(alpha))


@register("gelu")
@_compose
def _gelu(e, x, dt, approximate="none"):
    half = _c(e, 0.5, dt)
    if approximate == "tanh":
        inner = e.g.op("Mul", _c(e, math.sqrt(2 / math.pi), dt), e.g.op(
            "Add", x, e.g.op("Mul", _c(e, 0.044715, dt), e.g.op("Pow", x, _c(e, 3.0, dt)))))
        t = e.g.op("Tanh", inner)
    else:
        t = e.g.op("Erf", e.g.op("Div", x, _c(e, math.sqrt(2.0), dt)))
    return e.g.op("Mul", e.g.op("Mul", x, half), e.g.op("Add", t, _c(e, 1.0, dt)))


@register("silu", "silu_")
@_compose
def _silu(e, x, dt, inplace=False):
    return e.g.op("Mul", x, e.g.op("Sigmoid", x))


def _softplus_of(e, x, dt, beta=1.0, threshold=20.0):
    bx = x if beta == 1 else e.g.op("Mul", x, _c(e, float(beta), dt))
    sp = e.g.op("Softplus", bx)
    if beta != 1:
        sp = e.g.op("Div", sp, _c(e, float(beta), dt))
    return e.g.op("Where", e.g.op("Greater", bx, _c(e, float(threshold), dt)), x, sp)


@register("softplus")
@_compose
def _softplus(e, x, dt, beta=1.0, threshold=20.0):
    return _softplus_of(e, x, dt, beta, threshold)


@register("mish", "mish_")
@_compose
def _mish(e, x, dt, inplace=False):
    return e.g.op("Mul", x, e.g.op("Tanh", _softplus_of(e, x, dt)))


@register("hardtanh", "hardtanh_")
@_compose
def _hardtanh(e, x, dt, min_val=-1.0, max_val=1.0, inplace=False):
    return e.g.op("Clip", x, _c(e, float(min_val), dt), _c(e, float(max_val), dt))


@register("hardsigmoid", "hardsigmoid_")
@_compose
def _hardsigmoid(e, x, dt, inplace=False):
    return e.g.op("HardSigmoid", x, alpha=1.0 / 6, beta=0.5)


@register("hardswish", "hardswish_")
@_compose
def _hardswish(e, x, dt, inplace=False):
    return e.g.op("HardSwish", x)


@register("logsigmoid")
@_compose
def _logsigmoid(e, x, dt):
    return e.g.op("Neg", e.g.op("Softplus", e.g.op("Neg", x)))


@register("tanhshrink")
@_compose
def _tanhshrink(e, x, dt):
    return e.g.op("Sub", x, e.g.op("Tanh", x))


@register("hardshrink")
@_compose
def _hardshrink(e, x, dt, lambd=0.5):
    return e.g.op("Shrink", x, lambd=float(lambd), bias=0.0)


@register("softshrink")
@_compose
def _softshrink(e, x, dt, lambd=0.5):
    return e.g.op("Shrink", x, lambd=float(lambd), bias=float(lambd))


@register("threshold", "threshold_")
@_compose
def _threshold(e, x, dt, threshold, value, inplace=False):
    return e.g.op("Where", e.g.op("Greater", x, _c(e, float(threshold), dt)), x,
                  _c(e, float(value), dt))


@register("prelu")
def _prelu(e, out, x, weight):
    dt = out_dtype(out)
    w = operand(e, weight, dt)
    if weight.value.numel() > 1 and x.ndim > 2:
        w = e.g.op("Reshape", w, e.g.ints([-1] + [1] * (x.ndim - 2)))
    return e.g.op("PRelu", operand(e, x, dt), w)


@register("glu")
def _glu(e, out, x, dim=-1):
    a, b = e.g.op("Split", e.name(x), axis=int(dim), outputs=2, num_outputs=2) \
        if e.g.opset >= 18 else e.g.op("Split", e.name(x), axis=int(dim), outputs=2)
    return e.g.op("Mul", a, e.g.op("Sigmoid", b))


@register("clamp", "clip", "clamp_", "clip_")
def _clamp(e, out, x, min=None, max=None):
    dt = out_dtype(out)
    r = operand(e, x, dt)
    if isinstance(min, Value) or isinstance(max, Value):
        if min is not None:
            r = e.g.op("Max", r, operand(e, min, dt))
        if max is not None:
            r = e.g.op("Min", r, operand(e, max, dt))
        return r
    lo = None if min is None else e.name(min, dtype=dt)
    hi = None if max is None else e.name(max, dtype=dt)
    return e.g.op("Clip", r, lo, hi)


@register("clamp_min", "clamp_min_")
def _clamp_min(e, out, x, min):
    return _clamp(e, out, x, min=min)


@register("clamp_max", "clamp_max_")
def _clamp_max(e, out, x, max):
    return _clamp(e, out, x, max=max)


@register("where")
def _where(e, out, cond, a=None, b=None):
    if a is None:
        raise NotImplementedError("where(condition) without values")
    dt = out_dtype(out)
    import nbtorch
    return e.g.op("Where", operand(e, cond, nbtorch.bool), operand(e, a, dt),
                  operand(e, b, dt))


@register("masked_fill", "masked_fill_")
def _masked_fill(e, out, x, mask, value):
    import nbtorch
    dt = out_dtype(out)
    return e.g.op("Where", operand(e, mask, nbtorch.bool), operand(e, value, dt),
                  operand(e, x, dt))


@register("lerp")
def _lerp(e, out, start, end, weight):
    dt = out_dtype(out)
    s = operand(e, start, dt)
    return e.g.op("Add", s, e.g.op("Mul", operand(e, weight, dt),
                                   e.g.op("Sub", operand(e, end, dt), s)))


@register("addcmul")
def _addcmul(e, out, x, t1, t2, value=1):
    dt = out_dtype(out)
    p = e.g.op("Mul", operand(e, t1, dt), operand(e, t2, dt))
    if value != 1:
        p = e.g.op("Mul", p, e.name(value, dtype=dt))
    return e.g.op("Add", operand(e, x, dt), p)


@register("addcdiv")
def _addcdiv(e, out, x, t1, t2, value=1):
    dt = out_dtype(out)
    p = e.g.op("Div", operand(e, t1, dt), operand(e, t2, dt))
    if value != 1:
        p = e.g.op("Mul", p, e.name(value, dtype=dt))
    return e.g.op("Add", operand(e, x, dt), p)
