"""linalg.cholesky / cholesky_ex / solve_triangular: NumPy references, gradients, errors."""
import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)
M = RNG.standard_normal((3, 4, 4))
SPD = M @ M.transpose(0, 2, 1) + 4 * np.eye(4)


@pytest.mark.parametrize("dtype", [nbtorch.float32, nbtorch.float64])
def test_cholesky_values(dtype):
    L = nbtorch.linalg.cholesky(nbtorch.tensor(SPD, dtype=dtype))
    assert L.dtype is dtype and L.shape == (3, 4, 4)
    tol = 1e-5 if dtype is nbtorch.float32 else 1e-12
    np.testing.assert_allclose(L.numpy(), np.linalg.cholesky(SPD), rtol=tol, atol=tol)
    U = nbtorch.linalg.cholesky(nbtorch.tensor(SPD[0], dtype=dtype), upper=True)
    np.testing.assert_allclose(U.numpy(), np.linalg.cholesky(SPD[0]).T, rtol=tol, atol=tol)


def _tri(a, upper, unit):
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        t = t - np.diag(np.diag(t)) + np.eye(len(t))
    return t


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular_values_and_broadcast(upper, left, unit):
    A = SPD                                  # (3, 4, 4): only one triangle is read
    B = RNG.standard_normal((2, 1, 4, 3))
    if not left:
        B = B.swapaxes(-1, -2)
    X = nbtorch.linalg.solve_triangular(nbtorch.tensor(A), nbtorch.tensor(B), upper=upper,
                                        left=left, unitriangular=unit).numpy()
    assert X.shape == (2, 3) + B.shape[-2:]
    for i in range(2):
        for j in range(3):
            T = _tri(A[j], upper, unit)
            want = np.linalg.solve(T, B[i, 0]) if left else np.linalg.solve(T.T, B[i, 0].T).T
            np.testing.assert_allclose(X[i, j], want, rtol=1e-10, atol=1e-10)


def test_gradients():
    a = nbtorch.tensor(SPD[0], requires_grad=True)
    b = nbtorch.tensor(RNG.standard_normal((4, 2)), requires_grad=True)
    chol = lambda x: nbtorch.linalg.cholesky((x + x.mT) * 0.5)   # PyTorch's symmetric input
    assert gradcheck(chol, (a,))
    assert gradgradcheck(chol, (a,))
    for upper in (False, True):
        assert gradcheck(lambda x, y: nbtorch.linalg.solve_triangular(x, y, upper=upper), (a, b))
        assert gradcheck(lambda x, y: nbtorch.linalg.solve_triangular(
            x, y.mT, upper=upper, left=False, unitriangular=True), (a, b))


def test_errors_and_cholesky_ex():
    bad = nbtorch.tensor([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(nbtorch.linalg.LinAlgError, match="leading minor of order 2"):
        nbtorch.linalg.cholesky(bad)
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\)"):
        nbtorch.linalg.cholesky(nbtorch.stack([nbtorch.eye(2), bad]))
    with pytest.raises(RuntimeError, match="batches of square matrices"):
        nbtorch.linalg.cholesky(nbtorch.ones(2, 3))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        nbtorch.linalg.cholesky(nbtorch.ones(3))
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        nbtorch.linalg.cholesky(nbtorch.ones(2, 2, dtype=nbtorch.int64))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes .* \(2x2 and 3x1\)"):
        nbtorch.linalg.solve_triangular(nbtorch.eye(2), nbtorch.ones(3, 1), upper=False)
    L, info = nbtorch.linalg.cholesky_ex(nbtorch.stack([nbtorch.eye(2), bad]))
    assert info.tolist() == [0, 2] and info.dtype is nbtorch.int32
    assert nbtorch.linalg.cholesky(nbtorch.zeros(0, 2, 2)).shape == (0, 2, 2)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    got = nbtorch.linalg.cholesky(nbtorch.tensor(SPD)).numpy()
    np.testing.assert_allclose(got, torch.linalg.cholesky(torch.tensor(SPD)).numpy(),
                               rtol=1e-12, atol=1e-12)
    a = nbtorch.tensor(SPD[0], requires_grad=True)
    ta = torch.tensor(SPD[0], requires_grad=True)
    w = RNG.standard_normal((4, 4))
    (nbtorch.linalg.cholesky(a) * nbtorch.tensor(w)).sum().backward()
    (torch.linalg.cholesky(ta) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cholesky_nan_pivot_fails_as_lapack():
    """OpenBLAS's potrf passes a NaN pivot; PyTorch (LAPACK) reports it as not positive-
    definite: cholesky raises and cholesky_ex gives the failing minor's order."""
    for a, order in (([[1.0, np.nan], [np.nan, 1.0]], 2), ([[np.nan, 0.0], [0.0, 1.0]], 1),
                     ([[4.0, 2.0], [2.0, np.nan]], 2)):
        for dtype in (nbtorch.float32, nbtorch.float64):
            t = nbtorch.tensor(a, dtype=dtype)
            assert nbtorch.linalg.cholesky_ex(t).info.item() == order
            with pytest.raises(RuntimeError, match="could not be completed"):
                nbtorch.linalg.cholesky(t)
