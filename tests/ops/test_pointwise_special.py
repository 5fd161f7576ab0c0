"""lgamma, digamma, polygamma: closed forms, math.lgamma, gradients, PyTorch when importable."""
import math

import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import gradcheck, gradgradcheck

EULER = 0.5772156649015329
ZETA3 = 1.2020569031595942
X = [-2.5, -0.3, 1e-6, 0.3, 0.5, 1.0, 2.0, 4.0, 7.5, 12.0, 150.0, 1e6]


@pytest.mark.parametrize("dtype", [nbtorch.float32, nbtorch.float64])
def test_lgamma_matches_math(dtype):
    got = nbtorch.lgamma(nbtorch.tensor(X, dtype=dtype)).numpy()
    want = np.array([math.lgamma(v) for v in X])
    tol = 1e-6 if dtype is nbtorch.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert got.dtype == dtype.np


def test_digamma_closed_forms():
    x = nbtorch.tensor([1.0, 0.5, 5.0, 0.25, -0.5], dtype=nbtorch.float64)
    psi_half = -EULER - 2 * math.log(2)
    want = [-EULER, psi_half, 1 + 1 / 2 + 1 / 3 + 1 / 4 - EULER,
            -EULER - math.pi / 2 - 3 * math.log(2),
            psi_half + 2]                            # psi(x) = psi(x + 1) - 1 / x
    np.testing.assert_allclose(x.digamma().numpy(), want, rtol=1e-13)


def test_polygamma_closed_forms():
    x = nbtorch.tensor([1.0, 0.5, 3.0], dtype=nbtorch.float64)
    np.testing.assert_allclose(nbtorch.polygamma(1, x).numpy(),
                               [math.pi ** 2 / 6, math.pi ** 2 / 2,
                                math.pi ** 2 / 6 - 1 - 1 / 4], rtol=1e-13)
    np.testing.assert_allclose(nbtorch.polygamma(2, x[:1]).numpy(), [-2 * ZETA3], rtol=1e-13)
    np.testing.assert_allclose(nbtorch.polygamma(0, x).numpy(), x.digamma().numpy())


def test_poles_and_special_values():
    z = nbtorch.tensor([0.0, -0.0, -2.0], dtype=nbtorch.float64)
    assert np.all(np.isposinf(z.lgamma().numpy()))
    d = z.digamma().numpy()
    assert d[0] == -np.inf and d[1] == np.inf and np.isnan(d[2])
    assert nbtorch.polygamma(1, z[:1]).item() == np.inf
    assert nbtorch.polygamma(2, z[:1]).item() == -np.inf


def test_integer_input_and_errors():
    assert nbtorch.lgamma(nbtorch.tensor([1, 2, 3])).dtype is nbtorch.float32
    with pytest.raises(RuntimeError, match="negative n"):
        nbtorch.polygamma(-1, nbtorch.tensor([1.0]))
    with pytest.raises(TypeError):
        nbtorch.polygamma(1.5, nbtorch.tensor([1.0]))


def test_gradients_to_second_order():
    x = nbtorch.tensor([0.7, 1.5, 3.2, 11.0], dtype=nbtorch.float64, requires_grad=True)
    for fn in (nbtorch.lgamma, nbtorch.digamma, lambda t: nbtorch.polygamma(1, t)):
        assert gradcheck(fn, (x,), eps=1e-6, atol=1e-6)
        assert gradgradcheck(fn, (x,), eps=1e-6, atol=1e-5)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    x = np.array(X)
    for dtype in ("float32", "float64"):
        a, b = nbtorch.tensor(x, dtype=getattr(nbtorch, dtype)), torch.tensor(x).to(
            getattr(torch, dtype))
        tol = 2e-6 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(a.lgamma().numpy(), b.lgamma().numpy(), rtol=tol)
        np.testing.assert_allclose(a.digamma().numpy(), b.digamma().numpy(), rtol=tol,
                                   atol=tol)
        for n in (1, 2, 3):          # PyTorch's float64 trigamma errs ~5e-10 (pi**2/6 at 1)
            np.testing.assert_allclose(a.polygamma(n).numpy(), b.polygamma(n).numpy(),
                                       rtol=max(tol, 1e-8))
