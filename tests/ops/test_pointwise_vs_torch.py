"""Elementwise ops against PyTorch itself: values (special values included), result
dtypes over a promotion matrix, and gradients. Skipped where PyTorch is not installed."""
import numpy as np
import pytest

import nbtorch
import nbtorch.ops.pointwise_activation as A

torch = pytest.importorskip("torch")
F = torch.nn.functional

SPECIAL = np.array([-np.inf, -3.5, -2.0, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 1.5, 2.5,
                    7.0, np.inf, np.nan], np.float32)
OTHER = np.array([2.0, -1.5, 0.5, 3.0, -2.0, 1.0, -1.0, 2.0, -0.5, 0.0, 1.5, -3.0, 2.0,
                  1.0, 0.5], np.float32)

# name, nbtorch fn, torch fn (unary)
UNARY = [
    ("exp", nbtorch.exp, torch.exp), ("exp2", nbtorch.exp2, torch.exp2),
    ("expm1", nbtorch.expm1, torch.expm1), ("log", nbtorch.log, torch.log),
    ("log2", nbtorch.log2, torch.log2), ("log10", nbtorch.log10, torch.log10),
    ("log1p", nbtorch.log1p, torch.log1p), ("sqrt", nbtorch.sqrt, torch.sqrt),
    ("rsqrt", nbtorch.rsqrt, torch.rsqrt), ("sin", nbtorch.sin, torch.sin),
    ("cos", nbtorch.cos, torch.cos), ("tan", nbtorch.tan, torch.tan),
    ("asin", nbtorch.asin, torch.asin), ("acos", nbtorch.acos, torch.acos),
    ("atan", nbtorch.atan, torch.atan), ("sinh", nbtorch.sinh, torch.sinh),
    ("cosh", nbtorch.cosh, torch.cosh), ("tanh", nbtorch.tanh, torch.tanh),
    ("sigmoid", nbtorch.sigmoid, torch.sigmoid), ("erf", nbtorch.erf, torch.erf),
    ("erfc", nbtorch.erfc, torch.erfc), ("erfinv", nbtorch.erfinv, torch.erfinv),
    ("abs", nbtorch.abs, torch.abs),
    ("neg", nbtorch.neg, torch.neg), ("sign", nbtorch.sign, torch.sign),
    ("floor", nbtorch.floor, torch.floor), ("ceil", nbtorch.ceil, torch.ceil),
    ("round", nbtorch.round, torch.round), ("trunc", nbtorch.trunc, torch.trunc),
    ("frac", nbtorch.frac, torch.frac), ("reciprocal", nbtorch.reciprocal, torch.reciprocal),
    ("square", nbtorch.square, torch.square), ("logit", nbtorch.logit, torch.logit),
    ("relu", A.relu, F.relu), ("relu6", A.relu6, F.relu6), ("gelu", A.gelu, F.gelu),
    ("gelu_tanh", lambda x: A.gelu(x, approximate="tanh"),
     lambda x: F.gelu(x, approximate="tanh")),
    ("silu", A.silu, F.silu), ("mish", A.mish, F.mish), ("softplus", A.softplus, F.softplus),
    ("elu", A.elu, F.elu), ("selu", A.selu, F.selu), ("celu", A.celu, F.celu),
    ("leaky_relu", A.leaky_relu, F.leaky_relu), ("hardtanh", A.hardtanh, F.hardtanh),
    ("hardsigmoid", A.hardsigmoid, F.hardsigmoid), ("hardswish", A.hardswish, F.hardswish),
    ("nan_to_num", nbtorch.nan_to_num, torch.nan_to_num),
    ("isnan", nbtorch.isnan, torch.isnan), ("isinf", nbtorch.isinf, torch.isinf),
    ("isfinite", nbtorch.isfinite, torch.isfinite),
    ("clamp", lambda x: nbtorch.clamp(x, -1, 2), lambda x: torch.clamp(x, -1, 2)),
    ("round2", lambda x: nbtorch.round(x, decimals=1), lambda x: torch.round(x, decimals=1)),
]

BINARY = [
    ("add", nbtorch.add, torch.add), ("sub", nbtorch.sub, torch.sub),
    ("mul", nbtorch.mul, torch.mul), ("div", nbtorch.div, torch.div),
    ("div_trunc", lambda a, b: nbtorch.div(a, b, rounding_mode="trunc"),
     lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    ("div_floor", lambda a, b: nbtorch.div(a, b, rounding_mode="floor"),
     lambda a, b: torch.div(a, b, rounding_mode="floor")),
    ("remainder", nbtorch.remainder, torch.remainder), ("fmod", nbtorch.fmod, torch.fmod),
    ("pow", nbtorch.pow, torch.pow), ("atan2", nbtorch.atan2, torch.atan2),
    ("maximum", nbtorch.maximum, torch.maximum), ("minimum", nbtorch.minimum, torch.minimum),
    ("fmax", nbtorch.fmax, torch.fmax), ("fmin", nbtorch.fmin, torch.fmin),
    ("xlogy", nbtorch.xlogy, torch.xlogy), ("eq", nbtorch.eq, torch.eq),
    ("logaddexp", nbtorch.logaddexp, torch.logaddexp), ("hypot", nbtorch.hypot, torch.hypot),
    ("lt", nbtorch.lt, torch.lt), ("ge", nbtorch.ge, torch.ge),
    ("logical_xor", nbtorch.logical_xor, torch.logical_xor),
    ("isclose", nbtorch.isclose, torch.isclose),
]


def _close(ours, theirs, rtol=2e-6, atol=1e-6):
    a = ours.detach().numpy()
    b = theirs.detach().numpy()
    assert a.dtype == b.dtype, f"dtype {a.dtype} != {b.dtype}"
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol,
                               atol=atol, equal_nan=True)


def _reference(theirs, *arrays):
    """PyTorch's result computed in float64 and cast to its float32 result dtype: PyTorch's
    own float32 kernels are not always the more accurate side (gelu's 1 + erf cancels)."""
    want32 = theirs(*(torch.tensor(a) for a in arrays))
    want64 = theirs(*(torch.tensor(a.astype(np.float64)) for a in arrays))
    return want64.to(want32.dtype)


@pytest.mark.parametrize("name, ours, theirs", UNARY, ids=[u[0] for u in UNARY])
def test_unary_special_values(name, ours, theirs):
    want = theirs(torch.tensor(SPECIAL)) if name == "nan_to_num" else _reference(theirs,
                                                                                 SPECIAL)
    _close(ours(nbtorch.tensor(SPECIAL)), want)


@pytest.mark.parametrize("name, ours, theirs", BINARY, ids=[b[0] for b in BINARY])
def test_binary_special_values(name, ours, theirs):
    _close(ours(nbtorch.tensor(SPECIAL), nbtorch.tensor(OTHER)),
           _reference(theirs, SPECIAL, OTHER))


def test_integer_ops_match():
    a = np.array([-7, -3, 0, 2, 5, 9], np.int64)
    b = np.array([2, -2, 3, 3, -4, 2], np.int64)
    for name in ("add", "mul", "remainder", "fmod", "floor_divide", "maximum", "bitwise_and",
                 "bitwise_xor", "div"):
        _close(getattr(nbtorch, name)(nbtorch.tensor(a), nbtorch.tensor(b)),
               getattr(torch, name)(torch.tensor(a), torch.tensor(b)))
    _close(nbtorch.div(nbtorch.tensor(a), nbtorch.tensor(b), rounding_mode="trunc"),
           torch.div(torch.tensor(a), torch.tensor(b), rounding_mode="trunc"))
    _close(nbtorch.tensor(a) ** 2, torch.tensor(a) ** 2)
    _close(nbtorch.pow(nbtorch.tensor(b), nbtorch.tensor([0, 1, 2, 3, -1, 4])),
           torch.pow(torch.tensor(b), torch.tensor([0, 1, 2, 3, -1, 4])))
    _close(nbtorch.abs(nbtorch.tensor(a)), torch.abs(torch.tensor(a)))
    _close(nbtorch.sign(nbtorch.tensor(a)), torch.sign(torch.tensor(a)))


DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
          "float64"]


@pytest.mark.parametrize("da", DTYPES)
def test_promotion_matrix(da):
    """Result dtypes of tensor-tensor, tensor-0d and tensor-scalar ops equal PyTorch's."""
    x = np.array([1, 0, 1], dtype=da)
    for db in DTYPES:
        y = np.array([1, 1, 0], dtype=db)
        for ours_y, theirs_y in ((nbtorch.tensor(y), torch.tensor(y)),
                                 (nbtorch.tensor(y)[0], torch.tensor(y)[0])):
            got = (nbtorch.tensor(x) * ours_y).dtype
            want = (torch.tensor(x) * theirs_y).dtype
            assert str(got) == str(want), f"{da} * {db}: {got} != {want}"
    for s in (True, 2, 2.5):
        got = (nbtorch.tensor(x) * s).dtype
        want = (torch.tensor(x) * s).dtype
        assert str(got) == str(want), f"{da} * {s!r}: {got} != {want}"
        got = nbtorch.where(nbtorch.tensor(x) > 0, nbtorch.tensor(x), s).dtype
        want = torch.where(torch.tensor(x) > 0, torch.tensor(x), s).dtype
        assert str(got) == str(want), f"where({da}, {s!r}): {got} != {want}"


GRAD_CASES = [
    ("mul", lambda a, b: a * b), ("div", lambda a, b: a / b),
    ("pow", lambda a, b: a.abs() ** b), ("atan2", lambda a, b: (a, b)[0].atan2(b)),
    ("maximum", lambda a, b, m=None: (m or a).maximum(b)),
    ("clamp", lambda a, b: a.clamp(b * 0 - 0.5, b)),
    ("where", lambda a, b: a.where(a > b, b * 2)),
    ("lerp", lambda a, b: a.lerp(b, 0.3)), ("xlogy", lambda a, b: a.xlogy(b.abs() + 0.1)),
    ("remainder", lambda a, b: a.remainder(b)), ("gelu", lambda a, b: (a * b).sigmoid() * a),
]


@pytest.mark.parametrize("name, fn", GRAD_CASES, ids=[g[0] for g in GRAD_CASES])
def test_gradients_match(name, fn):
    a = np.array([[0.3, -1.2, 2.0], [0.0, 1.5, -0.7]])
    b = np.array([1.1, 1.5, -0.4])       # broadcast over rows; ties with a at index [1, 1]
    ours = [nbtorch.tensor(v, requires_grad=True) for v in (a, b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (a, b)]
    fn(*ours).sum().backward()
    fn(*theirs).sum().backward()
    for o, t in zip(ours, theirs):
        _close(o.grad, t.grad, rtol=1e-10, atol=1e-12)


def test_activation_gradients_match():
    x = np.linspace(-4, 4, 33)
    for ours, theirs in ((A.gelu, F.gelu), (A.silu, F.silu), (A.mish, F.mish),
                         (A.elu, F.elu), (A.selu, F.selu), (A.softplus, F.softplus),
                         (A.hardswish, F.hardswish), (A.hardsigmoid, F.hardsigmoid),
                         (A.relu6, F.relu6), (A.leaky_relu, F.leaky_relu)):
        a = nbtorch.tensor(x, requires_grad=True)
        t = torch.tensor(x, requires_grad=True)
        ours(a).sum().backward()
        theirs(t).sum().backward()
        _close(a.grad, t.grad, rtol=1e-7, atol=1e-12)   # PyTorch: hardsigmoid 1/6 in fp32


def test_division_by_a_tensor_matches_pytorch_bit_for_bit():
    """`number / t` is t.reciprocal() * number, and the divisor's gradient is
    -g * ((a / b) / b), as PyTorch computes them (values and gradients bit for bit)."""
    xs = np.linspace(0.1, 3, 50, dtype=np.float32)
    ys = np.linspace(-2, 5, 50, dtype=np.float32)
    results = []
    for lib in (nbtorch, torch):
        x = lib.tensor(xs, requires_grad=True)
        y = lib.tensor(ys, requires_grad=True)
        z = 3.7 / x
        (z.sum() + (y / x).sum()).backward()
        results.append([z.detach().numpy(), x.grad.numpy(), y.grad.numpy()])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
