"""The fused CPU paths of cdist (p = 2 by the matmul identity: ops/distance_mm.py) and
cosine_similarity (ops/distance_cosine.py): values against the composites they replace
and NumPy (and PyTorch where installed), gradients by gradcheck, double backward."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn.functional as F
from nbtorch.ops.distance import _euclid_mm
from nbtorch.ops.distance_cosine import cosine_composite
from nbtorch.ops.distance_mm import EuclidMM

DTYPES = [nbtorch.float32, nbtorch.float64]
TOL = {nbtorch.float32: dict(rtol=2e-5, atol=2e-5), nbtorch.float64: dict(rtol=1e-12, atol=1e-12)}


def _np_cdist(a, b):
    return np.sqrt(((a[..., :, None, :] - b[..., None, :, :]) ** 2).sum(-1))


def _grads(out, inputs, g):
    return nbtorch.autograd.grad(out, inputs, g)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cdist_mm_matches_numpy_and_composite(dtype):
    a = nbtorch.randn(2, 30, 9, dtype=dtype, requires_grad=True)
    b = nbtorch.randn(2, 27, 9, dtype=dtype, requires_grad=True)
    out = nbtorch.cdist(a, b)                      # P > 25: the mm path
    assert out.grad_fn is not None
    np.testing.assert_allclose(out.detach().numpy(),
                               _np_cdist(a.detach().numpy(), b.detach().numpy()), **TOL[dtype])
    ref = _euclid_mm(a, b)
    g = nbtorch.randn(*out.shape, dtype=dtype)
    for x, y in zip(_grads(out, (a, b), g), _grads(ref, (a, b), g)):
        np.testing.assert_allclose(x.numpy(), y.numpy(), **TOL[dtype])


def test_cdist_mm_zero_distance_and_noncontiguous_broadcast():
    base = nbtorch.randn(40, 6, dtype=nbtorch.float64)
    a = base.t().contiguous().t().requires_grad_()          # transposed storage
    b = nbtorch.cat([base[:3], nbtorch.randn(27, 6, dtype=nbtorch.float64)])[None]
    b = b.expand(2, 30, 6).detach().requires_grad_()
    out = nbtorch.cdist(a, b)                       # (40, 6) with (2, 30, 6): batch broadcast
    assert out.shape == (2, 40, 30)
    assert (out[:, :3, :3].diagonal(dim1=-2, dim2=-1) == 0).all()
    ga, gb = _grads(out, (a, b), nbtorch.ones_like(out))
    ref = _euclid_mm(a.expand(2, 40, 6), b)
    ra, rb = _grads(ref, (a, b), nbtorch.ones_like(ref))
    np.testing.assert_allclose(ga.numpy(), ra.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(gb.numpy(), rb.numpy(), rtol=1e-10, atol=1e-10)
    assert np.isfinite(ga.numpy()).all()


def test_cdist_mm_gradcheck_and_double_backward():
    a = nbtorch.randn(2, 27, 4, dtype=nbtorch.float64, requires_grad=True)
    b = nbtorch.randn(2, 5, 4, dtype=nbtorch.float64, requires_grad=True)
    assert nbtorch.autograd.gradcheck(nbtorch.cdist, (a, b))
    assert nbtorch.autograd.gradgradcheck(EuclidMM.apply, (a, b))


def test_cdist_modes_and_empty():
    a, b = nbtorch.randn(30, 3), nbtorch.randn(4, 3)
    exact = nbtorch.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist")
    for mode in (None, "use_mm_for_euclid_dist", "use_mm_for_euclid_dist_if_necessary"):
        np.testing.assert_allclose(nbtorch.cdist(a, b, compute_mode=mode).numpy(),
                                   exact.numpy(), rtol=1e-4, atol=1e-4)
    small = nbtorch.cdist(a[:4], b, compute_mode="use_mm_for_euclid_dist")   # forced mm
    np.testing.assert_allclose(small.numpy(), exact[:4].numpy(), rtol=1e-4, atol=1e-4)
    empty = nbtorch.cdist(nbtorch.randn(0, 3), b, compute_mode="use_mm_for_euclid_dist")
    assert empty.shape == (0, 4)
    assert (nbtorch.cdist(nbtorch.randn(30, 0), nbtorch.randn(28, 0)) == 0).all()
    np.testing.assert_allclose(nbtorch.cdist(a, b, p=1).numpy(),
                               np.abs(a.numpy()[:, None] - b.numpy()[None]).sum(-1), rtol=1e-5)
    with pytest.raises(RuntimeError, match="same number of columns"):
        nbtorch.cdist(a, nbtorch.randn(30, 4))
    with pytest.raises(RuntimeError, match="same dtype"):
        nbtorch.cdist(a, b.double())


def test_cdist_mm_vs_pytorch():
    torch = pytest.importorskip("torch")
    a, b = np.random.default_rng(0).standard_normal((2, 64, 33, 16)).astype(np.float32)
    ours = nbtorch.cdist(nbtorch.tensor(a), nbtorch.tensor(b)).numpy()
    theirs = torch.cdist(torch.tensor(a), torch.tensor(b)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)


# ---- cosine_similarity -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((6, 9), 1), ((3, 4, 5, 2), 1), ((7,), 0),
                                       ((4, 3), -2)])
def test_cosine_matches_composite(dtype, shape, dim):
    x = nbtorch.randn(*shape, dtype=dtype, requires_grad=True)
    y = nbtorch.randn(*shape, dtype=dtype, requires_grad=True)
    out = F.cosine_similarity(x, y, dim)
    ref = cosine_composite(x, y, dim % len(shape), 1e-8)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), **TOL[dtype])
    g = nbtorch.randn(*out.shape, dtype=dtype)
    for p, q in zip(_grads(out, (x, y), g), _grads(ref, (x, y), g)):
        np.testing.assert_allclose(p.numpy(), q.numpy(), **TOL[dtype])


def test_cosine_zero_vector_broadcast_gradcheck():
    x = nbtorch.randn(3, 4, 5, dtype=nbtorch.float64)
    x[0, :, 1] = 0                              # a zero vector: finite gradients, as PyTorch
    x.requires_grad_()
    y = nbtorch.randn(1, 4, 1, dtype=nbtorch.float64, requires_grad=True)   # broadcast
    f = lambda a, b: F.cosine_similarity(a, b, dim=1, eps=1e-3)   # noqa: E731
    assert nbtorch.autograd.gradcheck(f, (x, y))
    x2 = nbtorch.randn(3, 4, 5, dtype=nbtorch.float64, requires_grad=True)
    assert nbtorch.autograd.gradgradcheck(f, (x2, y))


def test_cosine_noncontiguous_mixed_dtype_and_errors():
    x = nbtorch.randn(8, 5).t()                 # non-contiguous (5, 8)
    y = nbtorch.randn(5, 8, dtype=nbtorch.float64)
    out = F.cosine_similarity(x, y, dim=0)
    assert out.dtype is nbtorch.float64 and out.shape == (8,)
    a, b = x.numpy().astype(np.float64), y.numpy()
    ref = (a * b).sum(0) / (np.linalg.norm(a, axis=0) * np.linalg.norm(b, axis=0))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6)
    assert F.cosine_similarity(nbtorch.randn(0, 3), nbtorch.randn(0, 3)).shape == (0,)
    with pytest.raises(RuntimeError, match="floating point"):
        F.cosine_similarity(nbtorch.ones(2, 3, dtype=nbtorch.int64),
                            nbtorch.ones(2, 3, dtype=nbtorch.int64))
    with pytest.raises(IndexError):
        F.cosine_similarity(nbtorch.randn(2, 3), nbtorch.randn(2, 3), dim=2)


def test_cosine_vs_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((2, 16, 32, 3)).astype(np.float32)
    xa, xb = nbtorch.tensor(a, requires_grad=True), nbtorch.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    ours, theirs = F.cosine_similarity(xa, xb, 1), torch.nn.functional.cosine_similarity(ta, tb, 1)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-5, atol=1e-6)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(xa.grad.numpy(), ta.grad.numpy(), rtol=1e-4, atol=1e-5)
