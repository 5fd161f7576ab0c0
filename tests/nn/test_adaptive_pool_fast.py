"""Adaptive pooling's CPU paths: global average pooling (blocked float32 sums added in
float64: a different summation order, tested to float32 tolerance against float64), tiling
windows through the pooling kernels, and the general kernels (same order as before)."""
import numpy as np
import pytest

import nbtorch as nt

F = nt.nn.functional


def _ref_avg(a, oh, ow):
    h, w = a.shape[-2:]
    out = np.empty(a.shape[:-2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, r1 = i * h // oh, -(-(i + 1) * h // oh)
            c0, c1 = j * w // ow, -(-(j + 1) * w // ow)
            out[..., i, j] = a[..., r0:r1, c0:c1].astype(np.float64).mean((-1, -2))
    return out


@pytest.mark.parametrize("size", [(1, 1), (7, 7), (5, 3), (4, 14), (28, 28)])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_adaptive_avg_values(size, dt):
    a = np.random.default_rng(0).standard_normal((3, 5, 28, 28)).astype(dt)
    got = F.adaptive_avg_pool2d(nt.tensor(a), size).numpy()
    tol = 1e-6 if dt == np.float32 else 1e-12
    np.testing.assert_allclose(got, _ref_avg(a, *size), rtol=tol, atol=tol)


def test_global_avg_large_plane():
    a = (np.random.default_rng(1).standard_normal((2, 3, 300, 301)) + 100).astype(np.float32)
    got = F.adaptive_avg_pool2d(nt.tensor(a), 1).numpy()
    np.testing.assert_allclose(got, _ref_avg(a, 1, 1), rtol=1e-6)


@pytest.mark.parametrize("size", [1, 7, (5, 3)])
def test_adaptive_max_values(size):
    a = np.random.default_rng(2).standard_normal((2, 3, 14, 14)).astype(np.float32)
    a[0, 0, 3, 4] = np.nan
    a[0, 1] = -np.inf
    out, idx = F.adaptive_max_pool2d(nt.tensor(a), size, return_indices=True)
    torch = pytest.importorskip("torch")
    r, ri = torch.nn.functional.adaptive_max_pool2d(torch.tensor(a), size, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), r.numpy())
    np.testing.assert_array_equal(idx.numpy(), ri.numpy())


@pytest.mark.parametrize("size", [1, 7, (5, 3)])
def test_adaptive_avg_torch(size):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).standard_normal((2, 4, 28, 28)).astype(np.float32)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(nt.tensor(a), size).numpy(),
                               torch.nn.functional.adaptive_avg_pool2d(torch.tensor(a),
                                                                      size).numpy(),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("size", [1, 2, (3, 2)])
def test_adaptive_grads(size):
    x = nt.randn(2, 3, 6, 4, dtype=nt.float64, requires_grad=True)
    assert nt.autograd.gradcheck(lambda x: F.adaptive_avg_pool2d(x, size), (x,))
    assert nt.autograd.gradgradcheck(lambda x: F.adaptive_avg_pool2d(x, size), (x,))
    assert nt.autograd.gradcheck(lambda x: F.adaptive_max_pool2d(x, size), (x,))


def test_empty_batch():
    x = nt.randn(0, 3, 5, 5)
    assert tuple(F.adaptive_avg_pool2d(x, 1).shape) == (0, 3, 1, 1)
    assert tuple(F.adaptive_max_pool2d(x, 2).shape) == (0, 3, 2, 2)
