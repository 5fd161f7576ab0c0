"""softmax / log_softmax backward over contiguous rows in one pass per row
(kernels/cpu/softmax_grad.py): bit for bit the composite formula it replaces, which
still runs under create_graph (second derivatives) and for other layouts."""
import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import gradcheck, gradgradcheck
from nbtorch.ops import softmax as S

CASES = [((256, 512), 1), ((3, 7), 1), ((4, 5, 6), 2), ((4, 5, 1), 1), ((700, 400), 1),
         ((4, 1, 8), 2)]


def _composite(g, y, dim, log):
    if log:
        return g - y.exp() * g.sum(dim=dim, keepdim=True)
    gy = g * y
    return gy - y * gy.sum(dim=dim, keepdim=True)


def _bits(t):
    return t.numpy().view(np.uint8)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", [nbtorch.float32, nbtorch.float64])
def test_rows_gradient_is_the_composite_bit_for_bit(log, dtype):
    gen = nbtorch.Generator().manual_seed(0)
    for shape, dim in CASES:
        x = nbtorch.randn(*shape, dtype=dtype, generator=gen) * 3
        y = (x.log_softmax if log else x.softmax)(dim)
        gs = [nbtorch.randn(*shape, dtype=dtype, generator=gen),
              nbtorch.tensor(1.5, dtype=dtype).expand(shape)]        # a sum's gradient
        if len(shape) == 2:
            gs.append(nbtorch.randn(shape[0], 1, dtype=dtype, generator=gen).expand(shape))
        for g in gs:
            with nbtorch.no_grad():
                fused = S._rows_grad(g, y, dim, log)
            assert fused is not None
            np.testing.assert_array_equal(_bits(fused), _bits(_composite(g, y, dim, log)))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_backward_through_the_op_matches_numpy(fn):
    x = nbtorch.randn(64, 300, dtype=nbtorch.float64, requires_grad=True)
    g = nbtorch.randn(64, 300, dtype=nbtorch.float64)
    getattr(x, fn)(-1).backward(g)
    xn, gn = x.detach().numpy(), g.numpy()
    e = np.exp(xn - xn.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    want = (p * (gn - (gn * p).sum(1, keepdims=True)) if fn == "softmax"
            else gn - p * gn.sum(1, keepdims=True))
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_gradcheck_and_second_derivatives(fn):
    x = nbtorch.randn(3, 6, dtype=nbtorch.float64, requires_grad=True)
    assert gradcheck(lambda t: getattr(t, fn)(-1), (x,))
    assert gradgradcheck(lambda t: getattr(t, fn)(-1), (x,))
    assert gradcheck(lambda t: getattr(t, fn)(0), (x,))           # columns: composite


def test_other_layouts_and_dtypes_take_the_composite():
    y = nbtorch.randn(5, 6).softmax(0)
    g = nbtorch.randn(5, 6)
    with nbtorch.no_grad():
        assert S._rows_grad(g, y, 0, False) is None               # not the last dim
        assert S._rows_grad(g, y.t().contiguous().t(), 1, False) is None
        assert S._rows_grad(g.double(), y, 1, False) is None       # mixed dtypes
    assert S._rows_grad(g, y, 1, False) is None                    # grad mode on
