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


# ---- layer norm and group norm: loops in the input's dtype, expanded output gradients ------

def _ln_ref(x, w, b, eps, axes):
    x = x.astype(np.float64)
    m, v = x.mean(axes, keepdims=True), x.var(axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("offset,scale", [(0.0, 1.0), (1000.0, 1e-2)])   # |mean| >> std too
def test_layer_and_group_norm_values_vs_float64(dtype, offset, scale):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((6, 5, 40)) * scale + offset).astype(dtype.np)
    w = rng.random(40).astype(dtype.np)
    b = rng.random(40).astype(dtype.np)
    out = F.layer_norm(nbtorch.tensor(a), (40,), nbtorch.tensor(w), nbtorch.tensor(b))
    ref = _ln_ref(a, w, b, 1e-5, (2,))
    tol = 4e-7 if dtype is nbtorch.float32 else 1e-9     # (one-pass shifted variance)
    np.testing.assert_allclose(out.numpy(), ref, rtol=tol, atol=tol * 2)
    wc, bc = rng.random(5).astype(dtype.np), rng.random(5).astype(dtype.np)
    gout = F.group_norm(nbtorch.tensor(a), 5, nbtorch.tensor(wc), nbtorch.tensor(bc))
    gref = _ln_ref(a.reshape(6, 5, 40), 1.0, 0.0, 1e-5, (2,)) * wc[:, None] + bc[:, None]
    np.testing.assert_allclose(gout.numpy(), gref, rtol=tol, atol=tol * 2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_norm_backward_expanded_grad_equals_dense(dtype):
    """`.sum().backward()` hands the backward one value expanded (filled, not copied)."""
    x = nbtorch.randn(4, 6, 3, 5, dtype=dtype, requires_grad=True)
    w = nbtorch.rand(6, dtype=dtype, requires_grad=True)
    for f in (lambda: F.group_norm(x, 3, w), lambda: F.layer_norm(x, (5,))):
        (f() * 2.5).sum().backward()
        got = x.grad.clone()
        x.grad = None
        w.grad = None
        f().backward(nbtorch.full((4, 6, 3, 5), 2.5, dtype=dtype))
        np.testing.assert_array_equal(got.numpy(), x.grad.numpy())
        x.grad = None
        w.grad = None


def test_layer_group_norm_gradcheck_and_double_backward():
    x = (nbtorch.randn(2, 4, 3, dtype=nbtorch.float64) + 50).requires_grad_()
    w = nbtorch.rand(4, dtype=nbtorch.float64, requires_grad=True)
    b = nbtorch.rand(4, dtype=nbtorch.float64, requires_grad=True)
    g = lambda x, w, b: F.group_norm(x, 2, w, b)                   # noqa: E731
    lw = nbtorch.rand(3, dtype=nbtorch.float64, requires_grad=True)
    ln = lambda x, w: F.layer_norm(x, (3,), w)                     # noqa: E731
    assert nbtorch.autograd.gradcheck(g, (x, w, b))
    assert nbtorch.autograd.gradgradcheck(g, (x, w, b))
    assert nbtorch.autograd.gradcheck(ln, (x, lw))
    assert nbtorch.autograd.gradgradcheck(ln, (x, lw))
    xt = x.detach().transpose(0, 2).requires_grad_()                # non-contiguous input
    assert nbtorch.autograd.gradcheck(lambda t: F.layer_norm(t, (2,)), (xt,))


def test_layer_group_norm_vs_pytorch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(4).standard_normal((4, 8, 6, 5)).astype(np.float32)
    for ours_f, theirs_f in ((lambda m, x: m.group_norm(x, 4), lambda m, x: m.group_norm(x, 4)),
                             (lambda m, x: m.layer_norm(x, (6, 5)),
                              lambda m, x: m.layer_norm(x, (6, 5)))):
        x, t = nbtorch.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        y, z = ours_f(F, x), theirs_f(torch.nn.functional, t)
        np.testing.assert_allclose(y.detach().numpy(), z.detach().numpy(), rtol=1e-4, atol=1e-5)
        (y * y.detach()).sum().backward()
        (z * z.detach()).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)
