"""The fused CPU normalisation paths: F.normalize (p = 2, ops/normalization_rows.py), and
layer/group norm's backward on expanded output gradients: values against the composites
and NumPy (PyTorch where installed), gradcheck, double backward."""
import numpy as np
import pytest

import nbtorch
import nbtorch.nn.functional as F
from nbtorch.ops.normalization_rows import NormalizeL2, _normalize_composite

DTYPES = [nbtorch.float32, nbtorch.float64]
TOL = {nbtorch.float32: dict(rtol=2e-5, atol=2e-6), nbtorch.float64: dict(rtol=1e-12, atol=1e-13)}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((5, 9), 1), ((3, 4, 5, 2), 1), ((6,), 0),
                                       ((4, 3), -2)])
def test_normalize_matches_composite(dtype, shape, dim):
    x = nbtorch.randn(*shape, dtype=dtype, requires_grad=True)
    out = F.normalize(x, dim=dim)
    assert out.grad_fn is not None
    ref = _normalize_composite(x, dim % len(shape), 1e-12)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), **TOL[dtype])
    g = nbtorch.randn(*shape, dtype=dtype)
    got, = nbtorch.autograd.grad(out, x, g)
    want, = nbtorch.autograd.grad(ref, x, g)
    np.testing.assert_allclose(got.numpy(), want.numpy(), **TOL[dtype])


def test_normalize_numpy_eps_noncontiguous_and_empty():
    a = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    a[2] = 1e-9                                  # below eps: divided by eps
    x = nbtorch.tensor(a).t()                    # (4, 6), non-contiguous
    out = F.normalize(x, dim=0, eps=1e-6)
    ref = a.T / np.maximum(np.linalg.norm(a.T, axis=0, keepdims=True), 1e-6)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-6, atol=1e-7)
    assert F.normalize(nbtorch.randn(0, 3), dim=1).shape == (0, 3)
    np.testing.assert_allclose(F.normalize(x, p=1, dim=0).numpy(),
                               a.T / np.abs(a.T).sum(0, keepdims=True), rtol=1e-6)
    buf = nbtorch.empty(4, 6)
    assert F.normalize(x, dim=0, out=buf) is buf
    with pytest.raises(IndexError):
        F.normalize(x, dim=2)


def test_normalize_gradcheck_and_double_backward():
    x = nbtorch.randn(3, 4, 5, dtype=nbtorch.float64, requires_grad=True)
    f = lambda t: F.normalize(t, dim=1, eps=1e-3)   # noqa: E731
    assert nbtorch.autograd.gradcheck(f, (x,))
    assert nbtorch.autograd.gradgradcheck(f, (x,))
    small = (nbtorch.randn(4, 3, dtype=nbtorch.float64) * 1e-4).requires_grad_()
    assert nbtorch.autograd.gradcheck(lambda t: NormalizeL2.apply(t, 1, 1e-3), (small,))


def test_normalize_vs_pytorch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(2).standard_normal((8, 16, 3)).astype(np.float32)
    x, t = nbtorch.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ours, theirs = F.normalize(x, dim=1), torch.nn.functional.normalize(t, dim=1)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6,
                               atol=1e-7)
    (ours * ours.detach() * 3).sum().backward()
    (theirs * theirs.detach() * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-6)
