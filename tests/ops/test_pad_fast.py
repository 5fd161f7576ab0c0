"""Constant F.pad on CPU is one copy kernel (resampling.ConstantPadFn): exact against
NumPy's np.pad over dtypes, crops and dims; its backward is a slice of the gradient."""
import numpy as np
import pytest
from harness import dtype_sweep

import nbtorch as nt

F = nt.nn.functional
DTYPES = ["float32", "float64", "int64", "int8", "uint8", "bool", "float16", "complex64",
          "complex128"]


SWEEP = dtype_sweep(DTYPES, 3)
CASES = [((2, 3, 4, 5), (1, 1, 1, 1), None), ((2, 3, 4, 5), (2, -1, 0, 3), 2.0),
         ((3, 4), (1, 2), 1.0), ((2, 3, 4, 5), (1, 2, 0, 1, 2, 0), 0.0),
         ((2, 0, 3), (1, 1), 1.0), ((4,), (-2, -1), None), ((2, 3, 4, 5), (0, 0), None),
         ((2, 3, 4, 5), (1, 0, 0, 1, 1, 1, 1, 1), 3.0)]


def _ref(a, pad, value):
    widths = [(0, 0)] * a.ndim
    for i in range(len(pad) // 2):
        widths[a.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    sl = tuple(slice(max(-lo, 0), a.shape[d] - max(-hi, 0)) for d, (lo, hi) in
               enumerate(widths))
    return np.pad(a[sl], [(max(lo, 0), max(hi, 0)) for lo, hi in widths],
                  constant_values=np.array(value or 0).astype(a.dtype))


@pytest.mark.parametrize("dt", SWEEP)
@pytest.mark.parametrize("shape,pad,value", CASES)
def test_constant_pad_matches_numpy(dt, shape, pad, value):
    a = np.abs(np.random.default_rng(0).standard_normal(shape) * 3)
    a = a.astype(bool) if dt == "bool" else a.astype(getattr(nt, dt).np)
    x = nt.tensor(a)
    got = F.pad(x, pad, value=value)
    assert got.dtype is x.dtype
    assert np.array_equal(got.numpy(), _ref(a, pad, value))
    if len(shape) > 1:          # a non-contiguous input
        xt = x.transpose(0, 1)
        assert np.array_equal(F.pad(xt, pad, value=value).numpy(),
                              _ref(a.swapaxes(0, 1), pad, value))


def test_pad_image_and_other_modes():
    a = np.random.default_rng(1).standard_normal((8, 4, 28, 28)).astype(np.float32)
    x = nt.tensor(a)
    assert np.array_equal(F.pad(x, (1, 1, 1, 1)).numpy(), np.pad(a, [(0, 0)] * 2 + [(1, 1)] * 2))
    for mode, np_mode in [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")]:
        assert np.array_equal(F.pad(x, (2, 1, 1, 3), mode=mode).numpy(),
                              np.pad(a, [(0, 0), (0, 0), (1, 3), (2, 1)], mode=np_mode))


def test_pad_errors():
    x = nt.randn(2, 3)
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(RuntimeError, match="negative output size"):
        F.pad(x, (-2, -2))


def test_pad_grads():
    x = nt.randn(2, 3, 4, 5, dtype=nt.float64, requires_grad=True)
    assert nt.autograd.gradcheck(lambda x: F.pad(x, (1, 2, -1, 1), value=0.5), (x,))
    assert nt.autograd.gradgradcheck(lambda x: F.pad(x, (1, 2, 0, 1, 1, 0)), (x,))
    y = F.pad(x, (1, 1, 1, 1))
    g = nt.randn(*y.shape, dtype=nt.float64)
    gx, = nt.autograd.grad(y, x, g)
    assert np.array_equal(gx.numpy(), g.numpy()[:, :, 1:-1, 1:-1])


def test_pad_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(2).standard_normal((2, 3, 5, 6)).astype(np.float32)
    for pad, v in [((1, 1, 1, 1), 0.0), ((2, -1, 3, 0, 1, 1), 1.5)]:
        assert np.array_equal(F.pad(nt.tensor(a), pad, value=v).numpy(),
                              torch.nn.functional.pad(torch.tensor(a), pad, value=v).numpy())
