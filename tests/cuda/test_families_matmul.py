"""matmul / bmm on CUDA against the CPU result: shapes, broadcast batch dims, views, dtypes."""
import numpy as np
import pytest

import nbtorch

pytestmark = pytest.mark.cuda


def _t(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) if np.dtype(dtype).kind == "f" else \
        rng.integers(-3, 4, shape)
    return nbtorch.tensor(a.astype(dtype))


def _check(a, b, tol=1e-5):
    want = nbtorch.matmul(a, b)
    got = nbtorch.matmul(a.to("cuda"), b.to("cuda"))
    assert got.device.type == "cuda" and got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got.cpu().numpy().astype(np.float64),
                               want.numpy().astype(np.float64), rtol=tol, atol=tol)


@pytest.mark.parametrize("shapes", [((3, 5), (5, 7)), ((1, 1), (1, 1)), ((5,), (5, 2)),
                                    ((3, 4), (4,)), ((2, 3, 4), (2, 4, 5)),
                                    ((2, 1, 3, 4), (3, 4, 2)), ((3, 0), (0, 2))])
def test_shapes_and_broadcast_batch(shapes):
    _check(_t(shapes[0]), _t(shapes[1], seed=1))


def test_strided_views_and_expanded_batch():
    a = _t((4, 6))[::2, 1:5]                  # non-contiguous rows
    b = _t((5, 4), seed=1).t()                # transposed
    _check(a, b)
    bb = _t((1, 4, 3), seed=2).expand(3, 4, 3)   # stride-0 batch dim
    _check(_t((3, 2, 4)), bb)
    _check(_t((2, 3, 4)).transpose(0, 1), _t((3, 4, 2), seed=3))


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float16])
def test_dtypes(dtype):
    _check(_t((3, 4), dtype), _t((4, 5), dtype, seed=1), 1e-2 if dtype == np.float16 else 1e-9)


def test_matmul_gradient_on_cuda():
    a, b = _t((2, 3), np.float64), _t((3, 2), np.float64, seed=1)
    ag, bg = a.to("cuda").requires_grad_(True), b.to("cuda").requires_grad_(True)
    (ag @ bg).sum().backward()
    a.requires_grad_(True); b.requires_grad_(True)
    (a @ b).sum().backward()
    np.testing.assert_allclose(ag.grad.cpu().numpy(), a.grad.numpy())
    np.testing.assert_allclose(bg.grad.cpu().numpy(), b.grad.numpy())
