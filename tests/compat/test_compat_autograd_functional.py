"""torch.autograd.functional, torch.autograd.forward_ad and torch.autograd.Variable:
closed forms (polynomials) in float64, and PyTorch's values when it is importable."""
import warnings

import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import Variable
from nbtorch.autograd import forward_ad as fwAD
from nbtorch.autograd import functional as AF


def t(*v):
    return nbtorch.tensor(list(v), dtype=nbtorch.float64)


def close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-12)


def cubic(x):
    return (x ** 3).sum()


def test_jacobian_closed_forms():
    x = t(1.0, 2.0)
    close(AF.jacobian(lambda a: a ** 2, x), np.diag([2.0, 4.0]))
    (ja, jb), (ka, kb) = AF.jacobian(lambda a, b: (a * b, a + b), (x, t(3.0, 4.0)))
    close(ja, np.diag([3.0, 4.0]))
    close(jb, np.diag([1.0, 2.0]))
    close(ka, np.eye(2))
    close(kb, np.eye(2))
    close(AF.jacobian(lambda a: nbtorch.zeros(2, dtype=nbtorch.float64), x), np.zeros((2, 2)))
    j = AF.jacobian(lambda a: a.sum(), nbtorch.ones(2, 3, dtype=nbtorch.float64))
    assert j.shape == (2, 3)


def test_products_and_hessian():
    x, v = t(1.0, 2.0), t(1.0, -1.0)
    out, g = AF.vjp(lambda a: a ** 2, x, v)
    close(out, [1.0, 4.0])
    close(g, [2.0, -4.0])
    close(AF.vjp(lambda a: a.sum(), x)[1], [1.0, 1.0])
    close(AF.jvp(lambda a: a ** 2, x, v)[1], [2.0, -4.0])
    close(AF.hessian(cubic, x), np.diag([6.0, 12.0]))
    out, hv = AF.hvp(cubic, x, v)
    close(out, 9.0)
    close(hv, [6.0, -12.0])
    close(AF.vhp(cubic, x, v)[1], [6.0, -12.0])
    (haa, hab), (hba, hbb) = AF.hessian(lambda a, b: (a ** 2 * b).sum(), (x, t(3.0, 4.0)))
    close(haa, np.diag([6.0, 8.0]))
    close(hab, np.diag([2.0, 4.0]))
    close(hbb, np.zeros((2, 2)))


def test_create_graph_gives_differentiable_results():
    x = t(1.0, 2.0).requires_grad_()
    _, g = AF.vjp(cubic, x, create_graph=True)         # 3 x^2
    assert g.requires_grad
    g.sum().backward()
    close(x.grad, [6.0, 12.0])
    _, g = AF.vjp(cubic, x)
    assert not g.requires_grad


def test_errors():
    x = t(1.0, 2.0)
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.vjp(lambda a: a ** 2, x)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        AF.jacobian(lambda a: nbtorch.zeros(2), x, strict=True)
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        AF.jacobian(lambda a: 3, x)
    with pytest.raises(TypeError, match="inputs given to vjp"):
        AF.vjp(lambda a: a, [x, 3])
    with pytest.raises(RuntimeError, match="v has invalid size"):
        AF.vjp(lambda a: a, x, t(1.0))
    with pytest.raises(RuntimeError, match="should contain a single element"):
        AF.hessian(lambda a: a ** 2, x)
    with pytest.raises(NotImplementedError, match="requires `vectorize=True`"):
        AF.jacobian(lambda a: a, x, strategy="forward-mode")


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(3), rng.standard_normal(3)

    def f(lib):
        return lambda x, y: ((x.sin() * y).exp(), (x * y).sum() + x.tanh().sum())

    def scalar(lib):
        return lambda x, y: (x.sin() * y.cos() * x).sum()

    ours = AF.jacobian(f(nbtorch), (nbtorch.tensor(a), nbtorch.tensor(b)))
    theirs = torch.autograd.functional.jacobian(f(torch), (torch.tensor(a), torch.tensor(b)))
    for o, th in zip(ours, theirs):
        for oo, tt in zip(o, th):
            close(oo, tt.numpy())
    ours = AF.hessian(scalar(nbtorch), (nbtorch.tensor(a), nbtorch.tensor(b)))
    theirs = torch.autograd.functional.hessian(scalar(torch), (torch.tensor(a),
                                                               torch.tensor(b)))
    for o, th in zip(ours, theirs):
        for oo, tt in zip(o, th):
            close(oo, tt.numpy())
    v = rng.standard_normal(3)
    close(AF.jvp(lambda x: x.sin() * x, nbtorch.tensor(a), nbtorch.tensor(v))[1],
          torch.autograd.functional.jvp(lambda x: x.sin() * x, torch.tensor(a),
                                        torch.tensor(v))[1].numpy())


def test_forward_ad_dual_numbers():
    p, tan = t(1.0, 2.0, 3.0), t(1.0, 0.5, -1.0)
    with fwAD.dual_level():
        d = fwAD.make_dual(p, tan)
        out = d.sin() * 2
        primal, tangent = fwAD.unpack_dual(out)
        close(primal, 2 * np.sin([1.0, 2.0, 3.0]))
        close(tangent, 2 * np.cos([1.0, 2.0, 3.0]) * np.array([1.0, 0.5, -1.0]))
        assert fwAD.unpack_dual(d).tangent is tan or np.allclose(fwAD.unpack_dual(d).tangent,
                                                                 tan)
        assert fwAD.unpack_dual(p).tangent is None          # not a dual
        close(fwAD.unpack_dual((d * d).sum()).tangent, 2 * (1.0 + 1.0 - 3.0))
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(p, t(1.0))
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(p, tan)
    assert fwAD.unpack_dual(out).tangent is None            # the level is gone


def test_forward_ad_against_pytorch():
    torch = pytest.importorskip("torch")
    a, v = np.linspace(-1, 1, 4), np.linspace(0.5, 2, 4)
    with torch.autograd.forward_ad.dual_level():
        d = torch.autograd.forward_ad.make_dual(torch.tensor(a), torch.tensor(v))
        want = torch.autograd.forward_ad.unpack_dual(d.tanh() * d.exp()).tangent.numpy()
    with fwAD.dual_level():
        d = fwAD.make_dual(nbtorch.tensor(a), nbtorch.tensor(v))
        close(fwAD.unpack_dual(d.tanh() * d.exp()).tangent, want)


def test_variable():
    a = nbtorch.zeros(2)
    v = Variable(a, requires_grad=True)
    assert type(v) is nbtorch.Tensor and v is not a and v.requires_grad and v.is_leaf
    assert v.data_ptr() == a.data_ptr() and not a.requires_grad
    assert isinstance(a, Variable) and not isinstance(3, Variable)
    y = nbtorch.ones(2, requires_grad=True) * 2
    assert Variable(y).is_leaf and not Variable(y).requires_grad
    assert Variable().shape == (0,)
    with pytest.raises(TypeError, match="Variable data has to be a tensor"):
        Variable([1, 2])
    with pytest.raises(RuntimeError, match="floating point"):
        Variable(nbtorch.tensor([1, 2]), requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        Variable(a, volatile=True)
    assert "volatile was removed" in str(w[0].message)
    assert nbtorch.autograd.Variable is Variable


def test_jvp_where_the_backward_takes_the_log_of_its_gradient():
    """The double-backward trick's dummy cotangent is ones, not zeros: logcumsumexp's
    backward takes the log of the gradient, so a zero cotangent made every jvp NaN (as
    PyTorch's autograd.functional.jvp gives). func.jvp, autograd.functional.jvp and
    forward_ad agree with finite differences."""
    import nbtorch
    from nbtorch.autograd import forward_ad as fwAD
    g = nbtorch.Generator().manual_seed(0)
    x = nbtorch.rand(3, 4, dtype=nbtorch.float64, generator=g) + 0.5
    v = nbtorch.randn(3, 4, dtype=nbtorch.float64, generator=g)
    f = lambda t: t.logcumsumexp(1)                       # noqa: E731
    eps = 1e-6
    want = (f(x + eps * v) - f(x - eps * v)) / (2 * eps)
    with fwAD.dual_level():
        dual = fwAD.unpack_dual(f(fwAD.make_dual(x, v))).tangent
    for got in (nbtorch.func.jvp(f, (x,), (v,))[1], nbtorch.autograd.functional.jvp(f, x, v)[1],
                dual):
        assert nbtorch.allclose(got, want, rtol=1e-5, atol=1e-7)
