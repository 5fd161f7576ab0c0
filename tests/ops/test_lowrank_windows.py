"""torch.svd_lowrank / pca_lowrank (randomized SVD: after the same seed, PyTorch's values
up to column signs), torch.lobpcg (eigenpairs against eigh, eigenvalue gradients against
PyTorch) and torch.signal.windows (PyTorch's values)."""
import numpy as np
import pytest

import nbtorch
import nbtorch.signal.windows as W

RNG = np.random.default_rng(2)
A = RNG.standard_normal((30, 6)) @ RNG.standard_normal((6, 20))     # rank 6


def _signs(ref, got, k):
    s = np.sign((ref[:, :k] * got[:, :k]).sum(0))
    return got[:, :k] * s


@pytest.mark.parametrize("shape", [(30, 20), (20, 30)])
def test_svd_lowrank(shape):
    M = A if shape == (30, 20) else A.T
    U, S, V = nbtorch.svd_lowrank(nbtorch.tensor(M), q=8)
    assert U.shape == (shape[0], 8) and S.shape == (8,) and V.shape == (shape[1], 8)
    assert np.allclose((U[:, :6] * S[:6]) @ V[:, :6].mT, M, atol=1e-8)
    assert np.allclose(S.numpy(), np.linalg.svd(M, compute_uv=False)[:8], atol=1e-8)
    torch = pytest.importorskip("torch")
    for m in (torch, nbtorch):
        m.manual_seed(7)
    t = torch.svd_lowrank(torch.tensor(M), q=8)
    n = nbtorch.svd_lowrank(nbtorch.tensor(M), q=8)
    assert np.allclose(t[1].numpy(), n[1].numpy(), atol=1e-10)
    assert np.allclose(t[0].numpy()[:, :6], _signs(t[0].numpy(), n[0].numpy(), 6), atol=1e-8)


def test_pca_lowrank_and_gradient():
    X = nbtorch.tensor(A.T.copy())
    U, S, V = nbtorch.pca_lowrank(X)
    C = A.T - A.T.mean(0)
    assert np.allclose(S.numpy(), np.linalg.svd(C, compute_uv=False)[:6], atol=1e-8)
    with pytest.raises(ValueError, match="must be non-negative integer and not greater"):
        nbtorch.pca_lowrank(X, q=40)
    Xg = nbtorch.tensor(A, requires_grad=True)
    nbtorch.svd_lowrank(Xg, q=6)[1].sum().backward()
    assert Xg.grad is not None and Xg.grad.shape == Xg.shape


def test_windows_match_pytorch():
    torch = pytest.importorskip("torch")
    import torch.signal.windows as TW
    for name in W.__all__:
        kw = {"a": [0.5, 0.3, 0.2]} if name == "general_cosine" else {}
        for M in (0, 1, 2, 7):
            for sym in (True, False):
                for dt in ("float32", "float64"):
                    t = getattr(TW, name)(M, sym=sym, dtype=getattr(torch, dt), **kw)
                    n = getattr(W, name)(M, sym=sym, dtype=getattr(nbtorch, dt), **kw)
                    assert str(n.dtype) == str(t.dtype) and tuple(n.shape) == tuple(t.shape)
                    assert np.allclose(t.numpy(), n.numpy(), atol=1e-6), (name, M, sym)
    for fn, kw, msg in [(W.hann, {"dtype": nbtorch.int64}, "expects float32 or float64"),
                        (W.gaussian, {"std": 0}, "Standard deviation must be positive"),
                        (W.exponential, {"center": 1.0}, "Center must be None")]:
        with pytest.raises(ValueError, match=msg):
            fn(4, **kw)
    with pytest.raises(ValueError, match="non-negative window length"):
        W.kaiser(-1)


def test_lobpcg():
    M = RNG.standard_normal((20, 20))
    A = M @ M.T + np.eye(20)
    w = np.linalg.eigvalsh(A)
    E, X = nbtorch.lobpcg(nbtorch.tensor(A), k=3)
    assert np.allclose(E.numpy(), w[::-1][:3], rtol=1e-7) and X.shape == (20, 3)
    E, X = nbtorch.lobpcg(nbtorch.tensor(A), k=2, largest=False)
    assert np.allclose(E.numpy(), w[:2], rtol=1e-7)
    assert np.allclose(A @ X.numpy(), X.numpy() * E.numpy(), atol=1e-6)
    E, _ = nbtorch.lobpcg(nbtorch.tensor(np.stack([A, 2 * A])), k=2,
                          B=nbtorch.tensor(2 * np.eye(20)))
    assert np.allclose(E.numpy(), [w[::-1][:2] / 2, w[::-1][:2]], rtol=1e-7)
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested"):
        nbtorch.lobpcg(nbtorch.tensor(A[:5, :5]), k=2)
    torch = pytest.importorskip("torch")
    t, n = torch.tensor(A, requires_grad=True), nbtorch.tensor(A, requires_grad=True)
    torch.lobpcg(t, k=2)[0].sum().backward()
    E, X = nbtorch.lobpcg(n, k=2)
    E.sum().backward()
    assert np.allclose(t.grad.numpy(), n.grad.numpy(), atol=1e-6)
    with pytest.raises(NotImplementedError, match="through the eigenvectors"):
        X.sum().backward()
