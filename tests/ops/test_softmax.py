"""softmax / log_softmax: values over dims/layouts/dtypes, stability, gradients (2nd order)."""
import numpy as np
import pytest

import nbtorch as torch
from nbtorch.kernels.cpu import reduce as reduce_kernels
from nbtorch.ops import softmax as SM
from harness import ALL_FLOATS, check_grad, check_op

S = (3, 4)
LAYOUTS = ("contiguous", "noncontig", "broadcast", "empty")


def _np_softmax(a, dim, log=False):
    a = a.astype(np.float64)
    m = a.max(axis=dim, keepdims=True) if a.size else 0
    e = np.exp(a - m)
    s = e.sum(axis=dim, keepdims=True)
    return a - m - np.log(s) if log else e / s


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax(dim, device):
    check_op(lambda t: SM.softmax(t, dim), lambda a: _np_softmax(a, dim), S, dtypes=ALL_FLOATS,
             layouts=LAYOUTS, gradgrad=True, out_dtype=lambda d: d, device=device)
    check_op(lambda t: t.log_softmax(dim), lambda a: _np_softmax(a, dim, True), S,
             dtypes=ALL_FLOATS, layouts=LAYOUTS, gradgrad=True, out_dtype=lambda d: d,
             device=device)


def test_0d_and_dtype_argument():
    assert torch.tensor(3.0).softmax(0).item() == 1.0
    assert torch.tensor(3.0).log_softmax(-1).item() == 0.0
    r = SM.softmax(torch.tensor([1, 2, 3]), 0, dtype=torch.float64)
    assert r.dtype is torch.float64
    np.testing.assert_allclose(r.numpy(), _np_softmax(np.array([1.0, 2.0, 3.0]), 0))
    r = SM.log_softmax(torch.tensor([1.0, 2.0], dtype=torch.float32), 0, dtype=torch.float64)
    assert r.dtype is torch.float64


def test_large_logits_are_stable():
    x = torch.tensor([[1e4, 1e4 + 1.0, -1e4], [-1e4, -1e4, -1e4]], dtype=torch.float32)
    for d in (0, 1):
        y = x.softmax(d).numpy()
        assert np.isfinite(y).all()
        np.testing.assert_allclose(y, _np_softmax(x.numpy(), d), rtol=1e-6, atol=1e-7)
        ly = x.log_softmax(d).numpy()
        assert np.isfinite(ly).all()
        np.testing.assert_allclose(ly, _np_softmax(x.numpy(), d, True), rtol=1e-6)
    assert x.softmax(1)[1].tolist() == pytest.approx([1 / 3] * 3)
    inf_row = torch.tensor([-float("inf"), 0.0, -float("inf")])
    assert inf_row.softmax(0).tolist() == [0.0, 1.0, 0.0]


def test_long_rows_and_parallel(monkeypatch):
    a = np.random.default_rng(0).standard_normal((30, 2000)).astype(np.float32) * 5
    x = torch.tensor(a)
    for d in (0, 1):
        np.testing.assert_allclose(x.softmax(d).numpy(), _np_softmax(a, d), rtol=1e-5,
                                   atol=1e-8)
    monkeypatch.setattr(reduce_kernels, "PARALLEL_MIN_NUMEL", 1)
    for d in (0, 1):
        np.testing.assert_allclose(x.softmax(d).numpy(), _np_softmax(a, d), rtol=1e-5,
                                   atol=1e-8)
        np.testing.assert_allclose(x.log_softmax(d).numpy(), _np_softmax(a, d, True),
                                   rtol=1e-5, atol=1e-5)


def test_grad_through_non_contiguous(device):
    check_grad(lambda t: t.transpose(0, -1).softmax(0), S, gradgrad=True, device=device)


def test_errors():
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ones(2, 3).softmax(2)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        torch.tensor([1, 2]).softmax(0)
    with pytest.raises(TypeError, match="dim"):
        SM.softmax(torch.ones(3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(6, 4), (3, 4), (4, 12), (2, 33)])
def test_row_softmax_bits_do_not_depend_on_where_the_output_lies(dtype, shape):
    """An output just after the input in memory took LLVM's scalar loop, which summed the
    exponentials in another order under reassoc: rows 1 ulp off, and log_softmax's
    gradcheck failed its reentrancy check when the allocator placed them so."""
    from nbtorch.kernels.cpu import softmax as kernels
    n = int(np.prod(shape))
    buf = np.zeros(n + 300 + n, dtype)
    x = buf[:n].reshape(shape)
    x[:] = np.random.default_rng(0).standard_normal(shape)
    for log in (True, False):
        far = np.empty(shape, dtype)
        kernels.softmax_rows(x, far, log)
        for gap in range(0, 300, 3):
            near = buf[n + gap:2 * n + gap].reshape(shape)
            kernels.softmax_rows(x, near, log)
            assert near.tobytes() == far.tobytes(), (log, gap)
