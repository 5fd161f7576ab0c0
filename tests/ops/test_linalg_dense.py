"""torch.linalg's solvers, factorisations and matrix functions: values against NumPy,
gradients by gradcheck in float64, errors as PyTorch words them, PyTorch when importable.
The LU family also runs on CUDA (the simulator's process), the rest on the CPU."""
import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import gradcheck, gradgradcheck
from harness import assert_close

L = nbtorch.linalg
F64 = nbtorch.float64
RNG = np.random.default_rng(0)


def _t(a, device="cpu", grad=False):
    t = nbtorch.tensor(np.asarray(a), dtype=F64, device=device)
    return t.requires_grad_() if grad else t


def _well(shape):
    """Well-conditioned random square matrices (identity plus a small perturbation)."""
    n = shape[-1]
    return np.eye(n) * 2 + RNG.standard_normal(shape) * 0.5


def test_lu_family_values(device):
    A = _well((2, 3, 3))
    B = RNG.standard_normal((2, 3, 2))
    tA, tB = _t(A, device), _t(B, device)
    assert_close(L.solve(tA, tB), np.linalg.solve(A, B), F64)
    assert_close(L.solve(tA, _t(B[0, :, 0], device)), np.linalg.solve(A, B[0, :, 0][None, :,
                                                                                      None])[..., 0], F64)
    assert_close(L.solve(tA, tB.mT, left=False), np.linalg.solve(A.transpose(0, 2, 1),
                                                                 B).transpose(0, 2, 1), F64)
    assert_close(L.inv(tA), np.linalg.inv(A), F64)
    assert_close(L.det(tA), np.linalg.det(A), F64)
    sign, logabs = L.slogdet(tA)
    s, la = np.linalg.slogdet(A)
    assert_close(sign, s, F64)
    assert_close(logabs, la, F64)
    LU, piv = L.lu_factor(tA)
    assert_close(L.lu_solve(LU, piv, tB), np.linalg.solve(A, B), F64)
    assert_close(L.lu_solve(LU, piv, tB, adjoint=True),
                 np.linalg.solve(A.transpose(0, 2, 1), B), F64)
    P, Lo, U = L.lu(tA)
    assert_close(P @ Lo @ U, A, F64)
    assert tA.inverse().device.type == device


def test_lu_family_singular_errors(device):
    S = nbtorch.stack([nbtorch.eye(2, dtype=F64), nbtorch.zeros(2, 2, dtype=F64)]).to(device)
    with pytest.raises(L.LinAlgError, match=r"\(Batch element 1\): The solver failed"):
        L.solve(S, nbtorch.ones(2, 2, 1, dtype=F64, device=device))
    with pytest.raises(L.LinAlgError, match="The diagonal element 2 is zero"):
        L.inv(_t([[1.0, 2.0], [2.0, 4.0]], device))
    inv, info = L.inv_ex(S)
    assert info.tolist() == [0, 1]
    assert L.det(S).tolist() == [1.0, 0.0]
    with pytest.raises(RuntimeError, match="U\\[1,1\\] is zero"):
        L.lu_factor(_t(np.zeros((2, 2)), device))


def test_argument_errors():
    with pytest.raises(RuntimeError, match="must be batches of square matrices, but they are "
                                           "2 by 3"):
        L.inv(nbtorch.ones(2, 3))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        L.det(nbtorch.ones(3))
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
        L.solve(nbtorch.eye(2), nbtorch.ones(3))
    with pytest.raises(RuntimeError, match="Expected a floating point"):
        L.inv(nbtorch.eye(2, dtype=nbtorch.int64))
    with pytest.raises(RuntimeError, match="same dtype"):
        L.solve(nbtorch.eye(2), nbtorch.ones(2, 1, dtype=F64))
    with pytest.raises(RuntimeError, match="Order 3 not supported"):
        L.matrix_norm(nbtorch.eye(2), 3)
    with pytest.raises(RuntimeError, match="expected at least 2 tensors"):
        L.multi_dot([nbtorch.eye(2)])
    with pytest.raises(RuntimeError, match="deprecated since version 1.9"):
        nbtorch.symeig(nbtorch.eye(2))
    with pytest.raises(RuntimeError, match="linalg.eig: A must be batches of square"):
        L.eig(nbtorch.ones(2, 3))


def test_decompositions():
    A = RNG.standard_normal((2, 4, 3))
    tA = _t(A)
    Q, R = L.qr(tA)
    assert_close(Q @ R, A, F64)
    assert_close(Q.mT @ Q, np.broadcast_to(np.eye(3), (2, 3, 3)), F64)
    assert tuple(L.qr(tA, mode="complete").Q.shape) == (2, 4, 4)
    U, S, Vh = L.svd(tA, full_matrices=False)
    assert_close(U * S.unsqueeze(-2) @ Vh, A, F64)
    assert_close(L.svdvals(tA), np.linalg.svd(A, compute_uv=False), F64)
    sym = A[0].T @ A[0]
    w, V = L.eigh(_t(sym))
    assert_close(w, np.linalg.eigvalsh(sym), F64)
    assert_close(V @ w.diag_embed() @ V.mT, sym, F64)
    assert_close(L.pinv(tA), np.linalg.pinv(A), F64)
    b = RNG.standard_normal((2, 4, 2))
    res = L.lstsq(tA, _t(b), driver="gelsd")
    assert_close(res.solution, np.linalg.pinv(A) @ b, F64)
    assert res.rank.tolist() == [3, 3] and tuple(res.singular_values.shape) == (2, 3)
    h, tau = nbtorch.geqrf(tA)
    assert_close(L.householder_product(h, tau), Q, F64)
    f32 = L.svd(tA.float()).S
    assert f32.dtype is nbtorch.float32


def test_matrix_functions():
    A = _well((3, 3))
    tA = _t(A)
    for o in ("fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2):
        assert_close(L.matrix_norm(tA, o), np.linalg.norm(A, o), F64)
    assert_close(L.norm(tA, 2), np.linalg.norm(A, 2), F64)
    assert_close(L.norm(_t([3.0, 4.0]), 1), 7.0, F64)
    assert_close(L.cond(tA), np.linalg.cond(A), F64)
    assert_close(L.cond(tA, 1), np.linalg.cond(A, 1), F64)
    assert L.matrix_rank(_t(np.outer([1.0, 2], [3.0, 4]))).item() == 1
    assert_close(L.matrix_power(tA, 3), A @ A @ A, F64)
    assert_close(L.matrix_power(tA, -2), np.linalg.inv(A @ A), F64)
    assert_close(L.matrix_power(tA, 0), np.eye(3), F64)
    w, V = np.linalg.eigh(A + A.T)
    assert_close(L.matrix_exp(_t(A + A.T)), V @ np.diag(np.exp(w)) @ V.T, F64)
    assert_close(L.matrix_exp(_t(np.zeros((2, 2)))), np.eye(2), F64)
    x = [1.0, 2.0, 3.0]
    assert_close(L.vander(_t(x)), np.vander(x, increasing=True), F64)
    assert_close(L.multi_dot([_t(A), _t(A.T), _t(x)]), A @ A.T @ x, F64)
    assert_close(L.tensorinv(_t(A.reshape(3, 3)), ind=1), np.linalg.inv(A), F64)
    assert_close(L.vecdot(_t(x), _t(x)), 14.0, F64)


def test_gradients():
    A = _t(_well((2, 3, 3)), grad=True)
    B = _t(RNG.standard_normal((2, 3, 2)), grad=True)
    assert gradcheck(lambda a, b: L.solve(a, b), (A, B))
    assert gradcheck(lambda a: L.inv(a), (A,))
    assert gradcheck(lambda a: L.det(a), (A,))
    assert gradcheck(lambda a: L.slogdet(a).logabsdet, (A,))
    assert gradgradcheck(lambda a, b: L.solve(a, b), (A, B))
    sing = _t([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, 1.0, 2.0]], grad=True)
    assert gradcheck(lambda a: L.det(a), (sing,))          # a singular A: through the SVD
    P = _t(RNG.standard_normal((3, 4)), grad=True)
    assert gradcheck(lambda a: L.lu(a)[1:], (P,))
    T = _t(RNG.standard_normal((4, 3)), grad=True)
    assert gradcheck(lambda a: L.qr(a), (T,))
    assert gradcheck(lambda a: L.qr(a), (_t(RNG.standard_normal((3, 4)), grad=True),))
    assert gradcheck(lambda a: L.svd(a, full_matrices=False)[1], (T,))
    assert gradcheck(lambda a: (lambda u, s, vh: (u @ u.mT, s, vh.mT @ vh))(
        *L.svd(a, full_matrices=False)), (T,))
    assert gradcheck(lambda a: (lambda w, v: (w, v * v))(*L.eigh(a + a.mT)),
                     (A,))
    assert gradcheck(lambda a: L.pinv(a), (T,))
    b = _t(RNG.standard_normal((4, 2)), grad=True)
    assert gradcheck(lambda a, y: L.lstsq(a, y).solution, (T, b))
    assert gradcheck(lambda a: L.matrix_exp(a), (_t(RNG.standard_normal((3, 3)), grad=True),))
    h, tau = nbtorch.geqrf(T.detach())
    assert gradcheck(lambda a, t: L.householder_product(a, t),
                     (h.requires_grad_(), tau.requires_grad_()))
    for o in ("nuc", 2, 1, np.inf):
        assert gradcheck(lambda a: L.matrix_norm(a, o), (T,))


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    A = _well((2, 4, 4)).astype(np.float32)
    for name, args in (("solve", (A, A[..., :2])), ("inv", (A,)), ("det", (A,)),
                       ("svdvals", (A,)), ("matrix_exp", (A,)), ("pinv", (A,)),
                       ("cholesky", (A @ A.transpose(0, 2, 1),))):
        got = getattr(L, name)(*[nbtorch.tensor(a) for a in args])
        want = getattr(torch.linalg, name)(*[torch.tensor(a) for a in args])
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=2e-5,
                                   err_msg=name)
        assert got.dtype is nbtorch.float32
    LU, piv = L.lu_factor(nbtorch.tensor(A))
    tLU, tpiv = torch.linalg.lu_factor(torch.tensor(A))
    assert piv.tolist() == tpiv.tolist()
    np.testing.assert_allclose(LU.numpy(), tLU.numpy(), rtol=1e-5, atol=1e-6)
    x = torch.tensor(A.astype(np.float64), requires_grad=True)
    torch.linalg.det(x).sum().backward()
    y = nbtorch.tensor(A.astype(np.float64), requires_grad=True)
    L.det(y).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), x.grad.numpy(), rtol=1e-10)
