"""Complex tensors (issue 11 part 6): views, conj, angle, sgn, abs, complex/polar, prod,
matmul, linalg.eig/eigvals; values against NumPy, gradients against PyTorch's
conjugate-Wirtinger convention (when PyTorch is installed), errors as PyTorch's."""
import numpy as np
import pytest

import nbtorch

RNG = np.random.default_rng(7)


def _cplx(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _np(t):
    return t.detach().cpu().numpy()


@pytest.mark.parametrize("dtype", [nbtorch.complex64, nbtorch.complex128])
def test_values_against_numpy(device, dtype):
    a, b = _cplx(2, 3), _cplx(2, 3)
    a[0, 0] = 0
    x = nbtorch.tensor(a, dtype=dtype, device=device)
    y = nbtorch.tensor(b, dtype=dtype, device=device)
    tol = 1e-5 if dtype is nbtorch.complex64 else 1e-12
    real = nbtorch.float32 if dtype is nbtorch.complex64 else nbtorch.float64
    for got, want in [(x.real, a.real), (x.imag, a.imag), (x.conj(), a.conj()),
                      (nbtorch.conj_physical(x), a.conj()), (x.abs(), np.abs(a)),
                      (x.angle(), np.angle(a)),
                      (x.sgn(), np.where(a == 0, 0, a / np.where(a == 0, 1, np.abs(a)))),
                      (nbtorch.view_as_real(x), np.stack([a.real, a.imag], -1)),
                      (x * y, a * b), (x / y, a / b), (x.exp(), np.exp(a)),
                      (x.prod(1), a.prod(1)), (x.prod(), a.prod()), (x.mean(0), a.mean(0)),
                      (x @ y.mT, a @ b.T), (x.mH, a.conj().T)]:
        assert np.allclose(_np(got), want, rtol=tol, atol=tol)
    assert x.abs().dtype is real and x.angle().dtype is real and x.real.dtype is real


def test_views_share_memory():
    x = nbtorch.tensor([1 + 2j, 3 - 1j])
    x.real.mul_(10)
    x.imag[1] = 5.0
    assert x.tolist() == [10 + 2j, 30 + 5j]
    r = nbtorch.view_as_real(x)
    r[0, 1] = -1.0
    assert x[0].item() == 10 - 1j
    back = nbtorch.view_as_complex(r)
    assert back.data_ptr() == x.data_ptr() and back.tolist() == x.tolist()
    x.real = nbtorch.tensor([0.0, 1.0])
    assert x.tolist() == [-1j, 1 + 5j]


def test_complex_polar_and_predicates():
    re, im = nbtorch.tensor([1.0, 2.0]), nbtorch.tensor([[3.0], [4.0]])
    z = nbtorch.complex(re, im)
    assert z.dtype is nbtorch.complex64 and z.shape == (2, 2)
    assert np.allclose(_np(z), np.array([1.0, 2.0]) + 1j * np.array([[3.0], [4.0]]))
    p = nbtorch.polar(nbtorch.tensor([2.0], dtype=nbtorch.float64),
                      nbtorch.tensor([0.5], dtype=nbtorch.float64))
    assert np.allclose(_np(p), 2 * np.exp(0.5j)) and p.dtype is nbtorch.complex128
    x = nbtorch.tensor([1.0, -2.0])
    assert x.conj() is x and x.resolve_conj() is x and x.real is x
    assert z.is_complex() and not x.is_complex() and nbtorch.is_complex(z)
    assert not z.conj().is_conj() and not nbtorch.is_neg(z)
    assert x.cfloat().dtype is nbtorch.complex64 and x.cdouble().dtype is nbtorch.complex128
    assert nbtorch.resolve_neg(z) is z and z.resolve_neg() is z
    c = z.clone()
    assert nbtorch.conj_physical_(c) is c and np.allclose(_np(c), _np(z).conj())
    r = nbtorch.view_as_real_copy(z)
    assert r.data_ptr() != z.data_ptr() and np.allclose(_np(nbtorch.view_as_complex_copy(r)),
                                                        _np(z))
    assert np.allclose(_np(z.H), _np(z).conj().T) and np.allclose(_np(z.mH), _np(z).conj().T)
    assert np.allclose(_np(nbtorch.adjoint(z)), _np(z).conj().T)
    ang = _np(nbtorch.angle(nbtorch.tensor([-1.0, 0.0, 2.0, float("nan")])))
    assert np.allclose(ang[:3], [np.pi, 0.0, 0.0]) and np.isnan(ang[3])
    assert nbtorch.angle(nbtorch.tensor([-1, 2])).dtype is nbtorch.float32


def test_errors_as_pytorch():
    cases = [
        (lambda: nbtorch.ones(2).imag, "imag is not implemented for tensors with non-complex"),
        (lambda: nbtorch.view_as_real(nbtorch.ones(3)), "only supported for complex"),
        (lambda: nbtorch.view_as_complex(nbtorch.ones(3)), "last dimension of size 2"),
        (lambda: nbtorch.view_as_complex(nbtorch.ones(2, 3).t()), "last dimension with stride"),
        (lambda: nbtorch.view_as_complex(nbtorch.ones(3, 2, dtype=nbtorch.int64)),
         "half, float and double tensors"),
        (lambda: nbtorch.complex(nbtorch.ones(1), nbtorch.ones(1, dtype=nbtorch.float64)),
         "Expected object of scalar type Float but got scalar type Double"),
        (lambda: nbtorch.complex(nbtorch.ones(1, dtype=nbtorch.int64),
                                 nbtorch.ones(1, dtype=nbtorch.int64)),
         "Expected both inputs to be Half, Float or Double"),
        (lambda: nbtorch.adjoint(nbtorch.ones(2)), "only supported on matrices"),
        (lambda: nbtorch.linalg.eig(nbtorch.ones(2, 3)), "square matrices"),
        (lambda: nbtorch.linalg.eigvals(nbtorch.ones(2, 2, dtype=nbtorch.int64)),
         "Expected a floating point or complex tensor"),
    ]
    for fn, msg in cases:
        with pytest.raises(RuntimeError, match=msg):
            fn()
    with pytest.raises(NotImplementedError, match="use torch.sgn instead"):
        nbtorch.sign(nbtorch.tensor([1j]))


def test_eig_values():
    A = RNG.standard_normal((2, 4, 4))
    for M in (A, A + 1j * RNG.standard_normal((2, 4, 4))):
        L, V = nbtorch.linalg.eig(nbtorch.tensor(M))
        L, V = _np(L), _np(V)
        assert np.allclose(M @ V, V * L[..., None, :], atol=1e-10)
        assert np.allclose(np.linalg.norm(V, axis=-2), 1)
        assert np.allclose(np.sort_complex(_np(nbtorch.linalg.eigvals(nbtorch.tensor(M)))
                                           .ravel()), np.sort_complex(L.ravel()))
    assert nbtorch.linalg.eigvals(nbtorch.eye(3)).dtype is nbtorch.complex64


# ---- gradients: PyTorch's convention, compared with PyTorch's .grad ---------------------

_LOSSES = {
    "mul_abs": lambda m, a, b: (a * b).abs().sum(),
    "div_real": lambda m, a, b: (a / b).real.sum(),
    "exp_imag": lambda m, a, b: (a.exp() * b).imag.sum(),
    "sin_log": lambda m, a, b: (a.sin() + (b * b).log()).abs().sum(),
    "matmul": lambda m, a, b: (a @ b).abs().sum(),
    "conj": lambda m, a, b: (a * a.conj()).real.sum() + (b.conj() * a).imag.sum(),
    "angle_sgn": lambda m, a, b: (a.angle() * 2 + b.sgn().real).sum() + (a.sgn() * b).imag.sum(),
    "prod_mean": lambda m, a, b: a.prod(0).abs().sum() + (a.mean(1) * b.mean()).real.sum(),
    "view_as_real": lambda m, a, b: m.view_as_real(a * b).pow(2).sum(),
    "view_as_complex": lambda m, a, b: (m.view_as_complex(m.view_as_real(a) * 2) * b).abs().sum(),
    "complex_polar": lambda m, a, b: (m.complex(a.real, b.imag)
                                      * m.polar(a.abs(), b.real)).abs().sum(),
    "pow_sqrt": lambda m, a, b: (a.sqrt() + b.reciprocal() + a.pow(3) + a.tanh()).abs().sum(),
    "det_slogdet_logdet": lambda m, a, b: (m.linalg.det(a).abs() + m.linalg.det(b).real
                                           + m.linalg.slogdet(a)[1]
                                           + (m.linalg.slogdet(b)[0] * (1 + 2j)).real
                                           + m.logdet(a).imag),
    "eig": lambda m, a, b: (m.linalg.eig(a)[1].abs().sum()
                            + (m.linalg.eigvals(a) * m.linalg.eig(b)[0]).real.sum()),
}


@pytest.mark.parametrize("name", sorted(_LOSSES))
def test_gradients_match_pytorch(name):
    torch = pytest.importorskip("torch")
    A, B = _cplx(3, 3), _cplx(3, 3)
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (A, B))
    na, nb_ = (nbtorch.tensor(v, requires_grad=True) for v in (A, B))
    lt, ln = _LOSSES[name](torch, ta, tb), _LOSSES[name](nbtorch, na, nb_)
    lt.backward()
    ln.backward()
    assert np.isclose(lt.item(), ln.item())
    assert np.allclose(ta.grad.resolve_conj().numpy(), _np(na.grad), atol=1e-10)
    assert np.allclose(tb.grad.resolve_conj().numpy(), _np(nb_.grad), atol=1e-10)


def test_real_eig_gradient_and_training():
    """A real loss of complex parameters trains (gradient descent lowers it), and the
    eigenvalues of a real matrix give it a real gradient."""
    torch = pytest.importorskip("torch")
    M = RNG.standard_normal((3, 3))
    t, n = torch.tensor(M, requires_grad=True), nbtorch.tensor(M, requires_grad=True)
    torch.linalg.eigvals(t).abs().sum().backward()
    nbtorch.linalg.eigvals(n).abs().sum().backward()
    assert n.grad.dtype is nbtorch.float64 and np.allclose(t.grad.numpy(), _np(n.grad))
    target = nbtorch.tensor(_cplx(4))
    w = nbtorch.zeros(4, dtype=nbtorch.complex128, requires_grad=True)
    for _ in range(60):
        w.grad = None
        loss = (w - target).abs().pow(2).sum()
        loss.backward()
        with nbtorch.no_grad():
            w -= 0.2 * w.grad
    assert np.allclose(_np(w), _np(target), atol=1e-4)


def test_more_ops_match_pytorch():
    """Reductions, scans, norms, vdot, logs and linear solves over complex tensors."""
    torch = pytest.importorskip("torch")
    A, v = _cplx(2, 3, 3), _cplx(3)
    calls = [lambda m, a, x: a.cumsum(1), lambda m, a, x: a.cumprod(2),
             lambda m, a, x: a.var(), lambda m, a, x: a.std(0),
             lambda m, a, x: m.var_mean(a, 1), lambda m, a, x: m.linalg.vector_norm(a),
             lambda m, a, x: a.norm(), lambda m, a, x: m.vdot(x, x * 2j),
             lambda m, a, x: m.trace(a[0]), lambda m, a, x: (x.log10(), x.log2(), x.log1p()),
             lambda m, a, x: m.linalg.solve(a, a[..., :2]), lambda m, a, x: m.linalg.solve(a, x),
             lambda m, a, x: m.linalg.inv(a), lambda m, a, x: m.bmm(a, a),
             lambda m, a, x: m.mm(a[0], a[1]), lambda m, a, x: m.linalg.matrix_exp(a)]
    for call in calls:
        t = call(torch, torch.tensor(A), torch.tensor(v))
        n = call(nbtorch, nbtorch.tensor(A), nbtorch.tensor(v))
        for a, b in zip(t if isinstance(t, tuple) else (t,), n if isinstance(n, tuple) else (n,)):
            assert str(a.dtype) == str(b.dtype)
            assert np.allclose(a.resolve_conj().numpy(), _np(b), atol=1e-10)


_EDGE_CALLS = ["x.abs_()", "x.floor()", "x.ceil()", "x.round()", "x.trunc()", "x.sgn_()",
               "x.reciprocal_()", "x.rsqrt()", "x / 0", "x.isreal()", "x.logsumexp(0)",
               "x.lerp(x * 2, 0.5)", "m.linalg.vecdot(x, x)", "x.clamp(0, 1)", "x < x",
               "x.max()", "x.sort()", "m.nn.functional.relu(x)", "x.addcdiv(x, x * 0)",
               "x.masked_select(x.abs() > 1)", "m.dist(x, x)"]


def test_edges_as_pytorch():
    """Values where PyTorch computes, an error where PyTorch raises one."""
    torch = pytest.importorskip("torch")
    v = np.array([1 + 2j, -3 + 0.5j, 0j])
    for call in _EDGE_CALLS:
        out = []
        for m in (torch, nbtorch):
            x = m.tensor(v)
            try:
                out.append(eval(call))
            except Exception as e:                  # noqa: BLE001 (compared below)
                out.append(e)
        t, n = out
        if isinstance(t, Exception) or isinstance(n, Exception):
            assert isinstance(t, Exception) and isinstance(n, Exception), call
            continue
        assert str(t.dtype) == str(n.dtype), call
        assert np.allclose(t.resolve_conj().numpy(), _np(n), equal_nan=True), call


def test_gradients_on_device(device):
    """Complex autograd on the device gives the CPU's gradient (tiny shapes: simulator)."""
    A = _cplx(2, 2)
    grads = []
    for dev in ("cpu", device):
        a = nbtorch.tensor(A, device=dev, requires_grad=True)
        loss = ((a @ a).abs().sum() + a.cumsum(0).imag.sum() + a.prod().real
                + a.angle().sum() + a.var() + (a.exp() / a.conj()).real.sum())
        loss.backward()
        grads.append(_np(a.grad))
    assert np.allclose(grads[0], grads[1], atol=1e-10)
