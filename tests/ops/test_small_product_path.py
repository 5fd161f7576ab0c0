"""The small-product path (x @ w, torch.mm, F.linear with nothing to record): NumPy's matmul
called directly where the default CPU kernel would make that very call, so the same bits;
every other case through the kernel."""
import numpy as np
import pytest

import nbtorch as torch
from nbtorch.ops import linalg
from nbtorch._registry import get_kernel

F = torch.nn.functional


def _kernel_product(a, b):
    out = np.empty((a.shape[0], b.shape[1]), a.numpy().dtype)
    get_kernel("matmul", "cpu")(a._array, b._array, out)
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("m,k,n", [(8, 16, 16), (1, 7, 3), (33, 5, 1), (64, 64, 64),
                                   (4, 100, 500), (2, 1, 9), (0, 4, 5), (3, 0, 2)])
def test_same_bits_as_the_kernel(dtype, m, k, n):
    a = torch.randn(m, k, dtype=dtype)
    b = torch.randn(k, n, dtype=dtype)
    for left, right in ((a, b), (a, b.t().contiguous().t()), (a.t().contiguous().t(), b)):
        with torch.no_grad():
            got = left @ right
        np.testing.assert_array_equal(got.numpy(), _kernel_product(left, right))
        assert got.is_contiguous() and got.dtype is dtype


def test_taken_only_where_it_applies():
    a, b = torch.randn(8, 16), torch.randn(16, 16)
    out = np.empty((8, 16), np.float32)
    assert linalg.small_blas_product(a, b, out)
    assert not linalg.small_blas_product(a, torch.randn(16, 600), np.empty((8, 600), np.float32))
    assert not linalg.small_blas_product(a.half(), b.half(), out)       # half: the kernel
    assert not linalg.small_blas_product(torch.randn(8, 1), torch.randn(1, 16), out)  # k = 1
    big = torch.randn(128, 128)
    assert not linalg.small_blas_product(big, big, np.empty((128, 128), np.float32))
    strided = torch.randn(8, 32)[:, ::2]                    # no unit stride: the kernel copies
    assert not linalg.small_blas_product(strided, b, out)
    np.testing.assert_array_equal((strided @ b).numpy(), _kernel_product(strided, b))


def test_a_user_kernel_still_runs():
    calls = []
    own = get_kernel("matmul", "cpu")

    def mine(a, b, out):
        calls.append(a.shape)
        own(a, b, out)
    torch.register_kernel("matmul", "cpu", mine, override=True)
    try:
        torch.randn(4, 5) @ torch.randn(5, 6)
        F.linear(torch.randn(4, 5), torch.randn(6, 5), torch.randn(6))
    finally:
        torch.register_kernel("matmul", "cpu", own, override=True)
    assert calls == [(4, 5), (4, 5)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_linear_same_bits_as_recorded_path(dtype):
    x, w, b = (torch.randn(*s, dtype=dtype) for s in ((8, 16), (12, 16), (12,)))
    with torch.no_grad():
        fast = F.linear(x, w, b)
    slow = F.linear(x, w.clone().requires_grad_(True), b).detach()
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    np.testing.assert_allclose(fast.numpy(), x.numpy() @ w.numpy().T + b.numpy(), rtol=1e-5)


def test_recorded_products_still_have_gradients():
    a = torch.randn(3, 4, requires_grad=True)
    b = torch.randn(4, 2, dtype=torch.float32)
    (a @ b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.ones((3, 2)) @ b.numpy().T, rtol=1e-6)
