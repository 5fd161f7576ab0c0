"""torch.linalg over complex64/complex128: cholesky (+_ex, cholesky_solve/inverse), qr,
eigh/eigvalsh, svd/svdvals, lstsq, pinv, lu/lu_factor/lu_solve, matrix_rank, matrix_norm,
cond, householder_product. Values against NumPy (and PyTorch when importable), gradients
of real-valued losses against PyTorch's .grad, errors (not positive-definite, singular,
loss depending on the eigen/singular vectors' phases) as PyTorch raises them."""
import numpy as np
import pytest

import nbtorch

L = nbtorch.linalg


def _c(*shape, dtype=np.complex128, seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _hpd(n, batch=(), dtype=np.complex128):
    a = _c(*batch, n, n, dtype=np.complex128)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def _np(t):
    return t.detach().numpy()


def _close(a, b, dtype=np.complex128):
    tol = 1e-4 if dtype in (np.complex64, np.float32) else 1e-10
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# ---- values against NumPy ------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_factorisations_reconstruct(dtype):
    H, A, W = _hpd(3, (2,), dtype), _c(2, 4, 3, dtype=dtype), _c(3, 5, dtype=dtype)
    C = L.cholesky(nbtorch.tensor(H))
    assert C.dtype == nbtorch.tensor(H).dtype
    _close(_np(C), np.linalg.cholesky(H), dtype)
    _close(_np(L.cholesky(nbtorch.tensor(H), upper=True)), np.conj(np.swapaxes(_np(C), -1, -2)),
           dtype)
    for M in (A, W):
        Q, R = L.qr(nbtorch.tensor(M))
        _close(_np(Q) @ _np(R), M, dtype)
        _close(np.abs(_np(R)), np.abs(np.linalg.qr(M)[1]), dtype)
        U, S, Vh = L.svd(nbtorch.tensor(M), full_matrices=False)
        assert S.dtype == nbtorch.tensor(M).real.dtype
        _close(_np(S), np.linalg.svd(M, compute_uv=False), dtype)
        _close((_np(U) * _np(S)[..., None, :]) @ _np(Vh), M, dtype)
        P, Lf, Uf = L.lu(nbtorch.tensor(M))
        _close(_np(P) @ _np(Lf) @ _np(Uf), M, dtype)
        _close(_np(L.pinv(nbtorch.tensor(M))), np.linalg.pinv(M), dtype)
    w, V = L.eigh(nbtorch.tensor(H))
    _close(_np(w), np.linalg.eigvalsh(H), dtype)
    _close(_np(V) @ (_np(w)[..., None] * np.conj(np.swapaxes(_np(V), -1, -2))), H, dtype)
    _close(_np(L.eigvalsh(nbtorch.tensor(H), UPLO="U")), np.linalg.eigvalsh(H, UPLO="U"), dtype)
    _close(_np(L.svdvals(nbtorch.tensor(A))), np.linalg.svd(A, compute_uv=False), dtype)


def test_solvers_and_norms():
    A, H, B = _c(4, 4), _hpd(4), _c(4, 2)
    tA, tH, tB = nbtorch.tensor(A), nbtorch.tensor(H), nbtorch.tensor(B)
    LU, piv = L.lu_factor(tA)
    _close(_np(L.lu_solve(LU, piv, tB)), np.linalg.solve(A, B))
    _close(_np(L.lu_solve(LU, piv, tB, adjoint=True)), np.linalg.solve(A.conj().T, B))
    _close(_np(L.lu_solve(LU, piv, tB.mT, left=False)), B.T @ np.linalg.inv(A))
    Ch = L.cholesky(tH)
    _close(_np(nbtorch.cholesky_solve(tB, Ch)), np.linalg.solve(H, B))
    _close(_np(nbtorch.cholesky_inverse(Ch)), np.linalg.inv(H))
    _close(_np(L.solve_triangular(Ch, tB, upper=False)), np.linalg.solve(np.tril(_np(Ch)), B))
    with pytest.warns(UserWarning, match="deprecated"):           # torch.cholesky: U = L^H
        _close(_np(nbtorch.cholesky(tH, upper=True)), np.conj(_np(Ch).T))
    T, b = _c(5, 3), _c(5, 2)
    _close(_np(L.lstsq(nbtorch.tensor(T), nbtorch.tensor(b)).solution),
           np.linalg.lstsq(T, b, rcond=None)[0])
    res = L.lstsq(nbtorch.tensor(T), nbtorch.tensor(b), driver="gelsd").residuals
    assert res.dtype == nbtorch.float64
    _close(_np(res), np.linalg.lstsq(T, b, rcond=None)[1])
    for ord in ("nuc", 2, -2, 1, "fro"):
        _close(float(L.matrix_norm(tA, ord)), np.linalg.norm(A, ord))
    _close(float(L.cond(tA)), np.linalg.cond(A))
    low = _c(4, 2) @ _c(2, 4)
    assert int(L.matrix_rank(nbtorch.tensor(low))) == 2
    assert int(L.matrix_rank(tH, hermitian=True)) == 4


# ---- against PyTorch: values, pivots, gradients ----------------------------------------

def _abs2(outs):
    return sum((o.abs() ** 2).sum() for o in outs if o.dtype.is_floating_point or
               o.dtype.is_complex)


def _grads_match(torch, f, arrays, loss=_abs2, tol=1e-9):
    """f(module, *tensors) -> tuple of outputs; values and the .grad of `loss` agree."""
    ours = [nbtorch.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    o_n, o_t = f(nbtorch, *ours), f(torch, *theirs)
    for a, b in zip(o_n, o_t):
        np.testing.assert_allclose(_np(a), b.detach().resolve_conj().numpy(), atol=tol)
    loss(o_n).backward()
    loss(o_t).backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.resolve_conj().numpy(), atol=tol,
                                   rtol=tol)


def _phase_free(wV):
    """(eigenvalues, |V|^2): eigenvectors are defined up to a phase (LAPACK builds differ)."""
    w, V = wV
    return w, (V * V.conj()).real


_CALLS = {
    "cholesky": (lambda m, a: (m.linalg.cholesky(a),), "hpd"),
    "cholesky_upper": (lambda m, a: (m.linalg.cholesky_ex(a, upper=True).L,), "hpd"),
    "cholesky_inverse": (lambda m, a: (m.cholesky_inverse(m.linalg.cholesky(a)),), "hpd"),
    "eigh": (lambda m, a: _phase_free(m.linalg.eigh(a)), "hpd"),
    "eigh_U": (lambda m, a: _phase_free(m.linalg.eigh(a, UPLO="U")), "hpd"),
    "eigvalsh": (lambda m, a: (m.linalg.eigvalsh(a),), "hpd"),
    "qr_square": (lambda m, a: tuple(m.linalg.qr(a)), (3, 3)),
    "qr_tall": (lambda m, a: tuple(m.linalg.qr(a)), (4, 2)),
    "qr_wide": (lambda m, a: tuple(m.linalg.qr(a)), (2, 4)),
    "qr_complete_wide": (lambda m, a: tuple(m.linalg.qr(a, "complete")), (2, 3)),
    "svd_tall": (lambda m, a: tuple(m.linalg.svd(a, full_matrices=False)), (4, 2)),
    "svd_wide": (lambda m, a: tuple(m.linalg.svd(a, full_matrices=False)), (2, 2, 4)),
    "svdvals": (lambda m, a: (m.linalg.svdvals(a),), (3, 4)),
    "nuclear_norm": (lambda m, a: (m.linalg.matrix_norm(a, "nuc"),), (3, 3)),
    "cond": (lambda m, a: (m.linalg.cond(a),), (3, 3)),
    "pinv_tall": (lambda m, a: (m.linalg.pinv(a),), (4, 3)),
    "pinv_wide": (lambda m, a: (m.linalg.pinv(a),), (2, 3)),
    "lu_square": (lambda m, a: tuple(m.linalg.lu(a)), (3, 3)),
    "lu_wide": (lambda m, a: tuple(m.linalg.lu(a)), (2, 4)),
    "lu_tall": (lambda m, a: tuple(m.linalg.lu_factor(a)), (4, 2)),
}


@pytest.mark.parametrize("name", list(_CALLS))
def test_values_and_grads_match_torch(name):
    torch = pytest.importorskip("torch")
    f, shape = _CALLS[name]
    a = _hpd(3, (2,)) if shape == "hpd" else _c(*shape)
    _grads_match(torch, f, [a])


@pytest.mark.parametrize("adjoint,left", [(False, True), (True, True), (False, False),
                                          (True, False)])
def test_lu_solve_grads_match_torch(adjoint, left):
    torch = pytest.importorskip("torch")
    A, B = _c(3, 3), _c(3, 2) if left else _c(2, 3)
    _grads_match(torch, lambda m, a, b: (m.linalg.lu_solve(*m.linalg.lu_factor(a), b,
                                                           adjoint=adjoint, left=left),),
                 [A, B])


def test_cholesky_solve_and_lstsq_grads_match_torch():
    torch = pytest.importorskip("torch")
    _grads_match(torch, lambda m, a, b: (m.cholesky_solve(b, m.linalg.cholesky(a)),),
                 [_hpd(3), _c(3, 2)])
    _grads_match(torch, lambda m, a, b: tuple(m.linalg.lstsq(a, b, driver="gelsd")[:2]),
                 [_c(4, 2), _c(4, 3)])


def test_complex64_and_torch_pivots():
    torch = pytest.importorskip("torch")
    A = _c(3, 3, dtype=np.complex64)
    _grads_match(torch, lambda m, a: tuple(m.linalg.svd(a, full_matrices=False)), [A],
                 tol=2e-4)
    # |Re| + |Im| picks the pivot (LAPACK's), not the modulus: 1.5+0.1j (1.6) over 1.2+0.j
    # ... and 1+1j (2) over 1.5 (|1+1j| = 1.41 < 1.5)
    for rows in ([[1.2, 0], [1 + 1j, 1]], [[1.5, 0], [1 + 1j, 1]], [[1, 2j], [0.5 - 2j, 1]]):
        a = np.array(rows, np.complex128)
        assert L.lu_factor(nbtorch.tensor(a)).pivots.tolist() == \
            torch.linalg.lu_factor(torch.tensor(a)).pivots.tolist()
    H = np.array([[4 + 1j, 2j], [5, 3]], np.complex128)       # only the lower triangle read
    for uplo in ("L", "U"):
        ours, theirs = L.eigh(nbtorch.tensor(H), uplo), torch.linalg.eigh(torch.tensor(H), uplo)
        np.testing.assert_allclose(_np(ours[0]), theirs[0].numpy(), atol=1e-12)
        np.testing.assert_allclose(np.abs(_np(ours[1])), np.abs(theirs[1].numpy()), atol=1e-12)
    tau_in = np.array([[2, 1j], [-1j, 0.5], [1, 1]], np.complex128)
    h, tau = nbtorch.geqrf(nbtorch.tensor(tau_in))
    th, ttau = torch.geqrf(torch.tensor(tau_in))
    np.testing.assert_allclose(_np(L.householder_product(h, tau)),
                               torch.linalg.householder_product(th, ttau).numpy(), atol=1e-12)


# ---- errors ------------------------------------------------------------------------------

def test_errors_as_pytorch():
    not_pd = nbtorch.tensor([[[1, 0], [0, 1]], [[1, 2j], [-2j, 1]]], dtype=nbtorch.cdouble)
    with pytest.raises(RuntimeError, match=r"linalg.cholesky: \(Batch element 1\): The "
                       "factorization could not be completed because the input is not "
                       r"positive-definite \(the leading minor of order 2"):
        L.cholesky(not_pd)
    assert L.cholesky_ex(not_pd).info.tolist() == [0, 2]
    singular = nbtorch.tensor([[1, 1j], [1, 1j]], dtype=nbtorch.cdouble)
    with pytest.raises(RuntimeError, match=r"U\[2,2\] is zero"):
        L.lu_factor(singular)
    assert int(L.lu_factor_ex(singular).info) == 2
    assert int(L.inv_ex(singular).info) == 2
    assert int(L.solve_ex(singular, nbtorch.ones(2, dtype=nbtorch.cdouble)).info) == 2
    H = nbtorch.tensor(_hpd(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="linalg_eigh_backward: The eigenvectors in the "
                       "complex case are specified up to multiplication by e\\^{i phi}"):
        nbtorch.view_as_real(L.eigh(H).eigenvectors).sum().backward()
    A = nbtorch.tensor(_c(3, 3), requires_grad=True)
    with pytest.raises(RuntimeError, match="svd_backward: The singular vectors in the "
                       "complex case are specified up to multiplication by e\\^{i phi}"):
        nbtorch.view_as_real(L.svd(A).U).sum().backward()
    with pytest.raises(RuntimeError, match="Expected LU and B to have the same dtype, but "
                       "found LU of type ComplexDouble and B of type Float instead"):
        L.lu_solve(*L.lu_factor(A.detach()), nbtorch.zeros(3, 1))
    with pytest.raises(RuntimeError, match="input's dtype ComplexDouble and other's dtype "
                       "ComplexFloat"):
        L.lstsq(A.detach(), nbtorch.zeros(3, 1, dtype=nbtorch.cfloat))


def test_lu_on_device(device):
    """lu_factor/lu_solve run Numba's LU on both devices, complex included."""
    A, B = _c(3, 3), _c(3, 2)
    tA = nbtorch.tensor(A, device=device)
    LU, piv = L.lu_factor(tA)
    X = L.lu_solve(LU, piv, nbtorch.tensor(B, device=device))
    Xh = L.lu_solve(LU, piv, nbtorch.tensor(B, device=device), adjoint=True)
    assert X.device.type == device
    _close(X.cpu().numpy(), np.linalg.solve(A, B))
    _close(Xh.cpu().numpy(), np.linalg.solve(A.conj().T, B))
