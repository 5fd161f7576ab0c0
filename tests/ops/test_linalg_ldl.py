"""torch.linalg.ldl_factor(_ex)/ldl_solve: solutions against NumPy, the factors and
pivots against PyTorch's (LAPACK sytrf) when installed, errors as PyTorch's."""
import numpy as np
import pytest

import nbtorch
from nbtorch import linalg as L

RNG = np.random.default_rng(5)


def _sym(*shape):
    M = RNG.standard_normal(shape)
    return M + np.swapaxes(M, -1, -2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_solve_against_numpy(dtype):
    M = _sym(3, 6, 6).astype(dtype)
    M[1, :2, :2] = 0                              # forces 2x2 pivots
    LD, piv = L.ldl_factor(nbtorch.tensor(M))
    assert piv.dtype is nbtorch.int32 and (piv._array < 0).any()
    assert np.allclose(np.triu(LD.numpy(), 1), 0)
    B = RNG.standard_normal((6, 2)).astype(dtype)
    X = L.ldl_solve(LD, piv, nbtorch.tensor(B))     # B broadcast over the batch
    tol = 1e-3 if dtype is np.float32 else 1e-10
    assert X.shape == (3, 6, 2) and np.allclose(M @ X.numpy(), B, atol=tol)


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    for n in (1, 2, 5, 9):
        M = _sym(2, n, n)
        M[0, 0, 0] = 0
        t, r = torch.linalg.ldl_factor_ex(torch.tensor(M)), L.ldl_factor_ex(nbtorch.tensor(M))
        assert np.array_equal(t.pivots.numpy(), r.pivots.numpy())
        assert np.array_equal(t.info.numpy(), r.info.numpy())
        assert np.allclose(t.LD.numpy(), r.LD.numpy(), atol=1e-12)


def test_errors_and_singular():
    z = L.ldl_factor_ex(nbtorch.zeros(3, 3))
    assert z.info.item() == 1 and z.pivots.tolist() == [1, 2, 3]
    with pytest.raises(RuntimeError):
        L.ldl_factor(nbtorch.zeros(3, 3))
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        L.ldl_factor(nbtorch.zeros(2, 3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor"):
        L.ldl_factor(nbtorch.zeros(3, 3, dtype=nbtorch.int64))
    LD, piv = L.ldl_factor(nbtorch.eye(2, dtype=nbtorch.float64))
    with pytest.raises(RuntimeError, match="Expected b and A to have the same dtype"):
        L.ldl_solve(LD, piv, nbtorch.ones(2, 1))
    A = nbtorch.tensor(_sym(3, 3), requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not"):
        L.ldl_factor(A).LD.sum().backward()
