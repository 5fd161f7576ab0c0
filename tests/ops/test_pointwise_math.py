"""Math and activation ops: values vs NumPy over dtypes/layouts, gradients in float64."""
import math

import numpy as np
import pytest

import nbtorch as torch
import nbtorch.ops.pointwise_activation as A
from harness import ALL_FLOATS, FLOATS, check_grad, check_op

S = (3, 4)
_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _sigmoid(x):
    return 1 / (1 + np.exp(-x.astype(np.float64)))


# name, NumPy reference, (low, high) domain, gradgrad?
UNARY = [
    ("exp", np.exp, (-2, 2), True), ("exp2", np.exp2, (-2, 2), False),
    ("expm1", np.expm1, (-2, 2), False), ("log", np.log, (0.2, 3), True),
    ("log2", np.log2, (0.2, 3), False), ("log10", np.log10, (0.2, 3), False),
    ("log1p", np.log1p, (-0.5, 3), False), ("sqrt", np.sqrt, (0.2, 3), True),
    ("rsqrt", lambda x: 1 / np.sqrt(x), (0.2, 3), False),
    ("sin", np.sin, (-3, 3), True), ("cos", np.cos, (-3, 3), False),
    ("tan", np.tan, (-1.2, 1.2), False), ("asin", np.arcsin, (-0.9, 0.9), False),
    ("acos", np.arccos, (-0.9, 0.9), False), ("atan", np.arctan, (-3, 3), False),
    ("sinh", np.sinh, (-2, 2), False), ("cosh", np.cosh, (-2, 2), False),
    ("tanh", np.tanh, (-3, 3), True), ("sigmoid", _sigmoid, (-5, 5), True),
    ("erf", _erf, (-2, 2), False), ("erfc", _erfc, (-2, 2), False),
]


@pytest.mark.parametrize("name, ref, dom, gg", UNARY, ids=[u[0] for u in UNARY])
def test_unary_math(name, ref, dom, gg, device):
    check_op(getattr(torch, name), ref, S, dtypes=ALL_FLOATS, low=dom[0], high=dom[1],
             gradgrad=gg, out_dtype=lambda d: d, device=device)


def test_unary_math_on_ints_gives_default_float():
    x = torch.tensor([1, 2, 3])
    for fn in (torch.exp, torch.sqrt, torch.sigmoid, torch.log, torch.sin):
        assert fn(x).dtype is torch.float32
    np.testing.assert_allclose(torch.exp(x).numpy(), np.exp([1.0, 2.0, 3.0]), rtol=1e-6)


def test_special_values():
    assert torch.log(torch.tensor([0.0])).item() == -np.inf
    assert np.isnan(torch.log(torch.tensor([-1.0])).item())
    assert np.isnan(torch.sqrt(torch.tensor([-1.0])).item())
    s = torch.sigmoid(torch.tensor([-1000.0, 1000.0])).tolist()
    assert s == [0.0, 1.0]


def test_sqrt_grad_at_zero_is_inf():
    x = torch.tensor([0.0, 4.0], requires_grad=True)
    x.sqrt().sum().backward()
    assert x.grad.tolist() == [np.inf, 0.25]


def test_atan2_xlogy_logit(device):
    check_op(torch.atan2, np.arctan2, S, S, low=-2, high=2, device=device)
    check_op(torch.xlogy, lambda x, y: x * np.log(y), S, S, low=0.2, high=3, device=device)
    x = torch.tensor([0.0, 0.0, 1.0])
    y = torch.tensor([0.0, np.nan, np.e])
    r = torch.xlogy(x, y).tolist()
    assert r[0] == 0.0 and np.isnan(r[1]) and abs(r[2] - 1) < 1e-6
    check_op(torch.logit, lambda p: np.log(p / (1 - p)), S, low=0.1, high=0.9, gradgrad=True,
             device=device)
    check_op(lambda p: torch.logit(p, eps=0.2), lambda p: np.log(
        np.clip(p, 0.2, 0.8) / (1 - np.clip(p, 0.2, 0.8))), S, low=0.05, high=0.95,
        grad=False, device=device)


# ---- activations -------------------------------------------------------------------

def _gelu(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + _erf(x / np.sqrt(2)))


def _gelu_tanh(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def _softplus(x, beta=1.0, threshold=20.0):
    x = x.astype(np.float64)
    return np.where(x * beta > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def _elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    x = x.astype(np.float64)
    return np.where(x > 0, x * scale, alpha * scale * np.expm1(x * input_scale))


SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946)
ACTIVATIONS = [
    ("relu", A.relu, lambda x: np.maximum(x, 0), True),
    ("relu6", A.relu6, lambda x: np.clip(x, 0, 6), False),
    ("hardtanh", lambda x: A.hardtanh(x, -0.5, 1.5), lambda x: np.clip(x, -0.5, 1.5), False),
    ("leaky_relu", lambda x: A.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x), True),
    ("gelu", A.gelu, _gelu, True),
    ("gelu_tanh", lambda x: A.gelu(x, approximate="tanh"), _gelu_tanh, True),
    ("silu", A.silu, lambda x: x * _sigmoid(x), True),
    ("mish", A.mish, lambda x: x * np.tanh(_softplus(x)), False),
    ("softplus", lambda x: A.softplus(x, beta=2.0, threshold=3.0),
     lambda x: _softplus(x, 2.0, 3.0), True),
    ("elu", lambda x: A.elu(x, alpha=0.7), lambda x: _elu(x, 0.7), True),
    ("selu", A.selu, lambda x: _elu(x, *SELU), False),
    ("celu", lambda x: A.celu(x, alpha=2.0), lambda x: _elu(x, 2.0, 1.0, 0.5), False),
    ("hardsigmoid", A.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6, False),
    ("hardswish", A.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6, False),
]


@pytest.mark.parametrize("name, fn, ref, gg", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation(name, fn, ref, gg, device):
    check_op(fn, ref, S, dtypes=ALL_FLOATS, low=-4, high=4, grad=False, device=device)
    # gradcheck away from kinks: shift values off 0 and the hard* breakpoints
    check_grad(lambda x: fn(x * 0.9 + 0.05), S, low=-2.5, high=2.5, gradgrad=gg, device=device)


def test_relu_keeps_int_dtype_and_kink_gradients():
    assert A.relu(torch.tensor([-1, 2])).tolist() == [0, 2]
    x = torch.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    torch.relu(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        A.gelu(torch.tensor([1, 2]))


@pytest.mark.parametrize("n", [5, 5000, 300000])          # small-call, kernel, split paths
def test_functional_activations_equal_their_functions_on_every_path(n):
    x = torch.tensor(np.random.default_rng(0).standard_normal(n).astype(np.float32) * 3)
    for fn, cls, args in ((A.relu, A.Relu, ()), (A.silu, A.Silu, ()),
                          (A.gelu, A.Gelu, ()), (A.gelu, A.GeluTanh, ("tanh",))):
        want = cls.apply(x).numpy()
        np.testing.assert_array_equal(fn(x, *args).numpy(), want)
        xg = x.detach().requires_grad_()           # recorded: the Function, differentiable
        y = fn(xg, *args)
        assert y.grad_fn is not None
        np.testing.assert_array_equal(y.detach().numpy(), want)


def test_functional_activations_answer_small_unrecorded_calls_without_their_function(
        monkeypatch):
    """F.relu / F.gelu / F.silu on a small tensor without grad take the Tensor methods'
    pre-resolved ufunc call (once a first call has resolved it), as x.relu() does, not
    Function.apply."""
    x = torch.tensor([-1.0, 0.5, 2.0])
    A.relu(x), A.gelu(x), A.gelu(x, "tanh"), A.silu(x)       # first calls resolve the loops
    for cls in (A.Relu, A.Gelu, A.GeluTanh, A.Silu):
        def refuse(*args, cls=cls):
            raise AssertionError(f"{cls.__name__}.apply called")
        monkeypatch.setattr(cls, "apply", refuse)
    A.relu(x), A.gelu(x), A.gelu(x, "tanh"), A.silu(x)
    with pytest.raises(AssertionError, match="Relu.apply"):
        A.relu(x.detach().requires_grad_())              # recorded: the Function


def test_activation_inplace_flag():
    x = torch.tensor([-1.0, 2.0])
    y = A.relu(x, inplace=True)
    assert y is x and x.tolist() == [0.0, 2.0]
    A.leaky_relu(x.fill_(-1.0), 0.5, inplace=True)
    assert x.tolist() == [-0.5, -0.5]


def test_fused_and_composite_gradients_agree():
    """First-order backward uses fused kernels; create_graph uses nbtorch ops: same values."""
    for fn in (torch.relu, torch.sigmoid, torch.tanh, A.gelu, A.silu,
               lambda x: A.gelu(x, approximate="tanh")):
        x = torch.randn(50, dtype=torch.float64, requires_grad=True)
        g1, = torch.autograd.grad(fn(x).sum(), x)
        g2, = torch.autograd.grad(fn(x).sum(), x, create_graph=True)
        np.testing.assert_allclose(g1.detach().numpy(), g2.detach().numpy(), rtol=1e-12,
                                   atol=1e-12)


def test_float32_math_stays_float32_and_accurate():
    x = torch.linspace(-6, 6, 1001)
    for fn, ref in ((A.gelu, _gelu), (torch.tanh, np.tanh), (torch.exp, np.exp)):
        y = fn(x)
        assert y.dtype is torch.float32
        np.testing.assert_allclose(y.numpy(), ref(x.numpy().astype(np.float64)), rtol=3e-6,
                                   atol=3e-6)


def test_gelu_bad_approximate():
    with pytest.raises(RuntimeError, match="approximate"):
        A.gelu(torch.ones(2), approximate="fast")


@pytest.mark.parametrize("dtype", FLOATS)
def test_rounding(dtype):
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1.2345, -7.89], dtype.np)
    t = torch.tensor(x)
    assert torch.round(t).tolist() == np.round(x).tolist()
    assert torch.floor(t).tolist() == np.floor(x).tolist()
    assert torch.ceil(t).tolist() == np.ceil(x).tolist()
    assert torch.trunc(t).tolist() == np.trunc(x).tolist()
    np.testing.assert_allclose(torch.frac(t).numpy(), x - np.trunc(x))
    np.testing.assert_allclose(torch.round(t, decimals=2).numpy(), np.round(x, 2), rtol=1e-6)
    np.testing.assert_allclose(torch.round(torch.tensor([1234.5, 1250.0], dtype=dtype),
                                           decimals=-2).numpy(), [1200.0, 1200.0])


def test_rounding_layouts_and_grads(device):
    for name in ("floor", "ceil", "trunc", "round", "sign"):
        check_op(getattr(torch, name), getattr(np, "rint" if name == "round" else name), S,
                 dtypes=FLOATS + (torch.int64,), grad=False, device=device)
    check_op(torch.frac, lambda x: x - np.trunc(x), S, low=0.1, high=0.9, device=device)
    x = torch.tensor([0.3, 1.7], requires_grad=True)
    torch.floor(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


def test_sign_sgn():
    assert torch.sign(torch.tensor([-2.0, 0.0, 3.0])).tolist() == [-1.0, 0.0, 1.0]
    assert torch.sgn(torch.tensor([-2, 0, 3])).tolist() == [-1, 0, 1]
    assert torch.sign(torch.tensor([True, False])).tolist() == [True, False]


def test_erfinv_logaddexp_hypot(device):
    check_op(torch.erfinv, np.vectorize(_erfinv64, otypes=[np.float64]), S, low=-0.99, high=0.99,
             gradgrad=True, device=device)
    assert torch.erfinv(torch.tensor([1.0, -1.0, 2.0])).tolist()[:2] == [np.inf, -np.inf]
    assert np.isnan(torch.erfinv(torch.tensor([2.0])).item())
    check_op(torch.logaddexp, np.logaddexp, S, S, low=-30, high=30, device=device)
    big = torch.logaddexp(torch.tensor([1000.0, -np.inf]), torch.tensor([1000.0, -np.inf]))
    assert big.tolist()[0] == pytest.approx(1000 + np.log(2)) and big.tolist()[1] == -np.inf
    check_op(torch.hypot, np.hypot, S, S, low=0.5, high=3, device=device)


def _erfinv64(y):
    """Reference: bisection on math.erf (slow, exact enough)."""
    lo, hi = -10.0, 10.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
    return (lo + hi) / 2
