"""Transforms (values, inverses, log-det-Jacobians against autograd / NumPy, caching,
shapes), constraints (check and repr) and biject_to / transform_to."""
import math

import numpy as np
import pytest

import nbtorch
import nbtorch.distributions as D
from nbtorch.distributions import constraints, transforms as T
from nbtorch.distributions import biject_to, transform_to

F64 = nbtorch.float64


def x64(*shape, seed=0):
    return nbtorch.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=F64)


ELEMENTWISE = [T.ExpTransform(), T.SigmoidTransform(), T.TanhTransform(),
               T.SoftplusTransform(), T.AffineTransform(0.5, -2.0),
               T.AffineTransform(x64(3), x64(3, seed=1).exp()), T.PowerTransform(nbtorch.tensor(2.5, dtype=F64)),
               T.ExpTransform().inv.inv, T.ComposeTransform([T.ExpTransform(),
                                                             T.AffineTransform(1.0, 3.0)])]


def _jacobian_logdet(t, x):
    """log|det dy/dx| of an elementwise transform by autograd (diagonal Jacobian)."""
    x = x.detach().requires_grad_()
    y = t(x)
    (g,) = nbtorch.autograd.grad(y.sum(), [x])
    return g.abs().log()


@pytest.mark.parametrize("t", ELEMENTWISE, ids=repr)
def test_elementwise_inverse_and_logdet(t):
    x = x64(3)
    if isinstance(t, T.PowerTransform):
        x = x.exp()
    y = t(x)
    np.testing.assert_allclose(t.inv(y).numpy(), x.numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(t.log_abs_det_jacobian(x, y).numpy(),
                               _jacobian_logdet(t, x).numpy(), rtol=1e-9, atol=1e-9)
    assert bool(t.codomain.check(y).all())
    assert t.bijective


def test_values_and_signs():
    x = nbtorch.tensor([-1.0, 0.0, 2.0], dtype=F64)
    np.testing.assert_allclose(T.SigmoidTransform()(x).numpy(), 1 / (1 + np.exp(-x.numpy())))
    np.testing.assert_allclose(T.TanhTransform()(x).numpy(), np.tanh(x.numpy()))
    np.testing.assert_allclose(T.SoftplusTransform()(x).numpy(), np.log1p(np.exp(x.numpy())))
    assert T.AbsTransform()(x).tolist() == [1.0, 0.0, 2.0]
    assert T.AffineTransform(0.0, -2.0).sign == -1 and T.ExpTransform().sign == 1
    assert T.ComposeTransform([T.AffineTransform(0.0, -1.0), T.ExpTransform()]).sign == -1
    assert T.PowerTransform(nbtorch.tensor([-2.0, 3.0])).sign.tolist() == [-1.0, 1.0]


def test_simplex_transforms():
    x = x64(2, 3)
    for t in (T.StickBreakingTransform(), T.SoftmaxTransform()):
        y = t(x)
        np.testing.assert_allclose(y.sum(-1).numpy(), 1.0, rtol=1e-12)
        assert bool(constraints.simplex.check(y).all())
    sb = T.StickBreakingTransform()
    y = sb(x)
    assert tuple(y.shape) == (2, 4) and sb.forward_shape((2, 3)) == (2, 4)
    np.testing.assert_allclose(sb.inv(y).numpy(), x.numpy(), rtol=1e-9, atol=1e-9)
    assert sb(nbtorch.zeros(3, dtype=F64)).tolist() == pytest.approx([0.25] * 4)
    # log-det of x -> y[:-1] (the free coordinates) by autograd
    xs = x[0].detach().requires_grad_()
    ys = sb(xs)[:-1]
    rows = [nbtorch.autograd.grad(ys[i], [xs], retain_graph=True)[0].numpy() for i in range(3)]
    want = math.log(abs(np.linalg.det(np.stack(rows))))
    assert sb.log_abs_det_jacobian(x[0], sb(x[0])).item() == pytest.approx(want, rel=1e-9)
    np.testing.assert_allclose(T.SoftmaxTransform().inv(T.SoftmaxTransform()(x)).numpy(),
                               (x - x.logsumexp(-1, keepdim=True)).numpy(), rtol=1e-9)


def test_matrix_transforms():
    x = x64(2, 3, 3)
    L = T.LowerCholeskyTransform()(x)
    assert bool(constraints.lower_cholesky.check(L).all())
    np.testing.assert_allclose(T.LowerCholeskyTransform().inv(L).numpy(),
                               np.tril(x.numpy()), rtol=1e-12)
    P = T.PositiveDefiniteTransform()(x)
    assert bool(constraints.positive_definite.check(P).all())
    np.testing.assert_allclose(T.PositiveDefiniteTransform().inv(P).numpy(),
                               np.tril(x.numpy()), rtol=1e-9, atol=1e-9)
    cc = T.CorrCholeskyTransform()
    v = x64(2, 6)
    C = cc(v)
    assert tuple(C.shape) == (2, 4, 4) and cc.forward_shape((2, 6)) == (2, 4, 4)
    assert bool(constraints.corr_cholesky.check(C).all())
    np.testing.assert_allclose((C @ C.mT).diagonal(dim1=-2, dim2=-1).numpy(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(cc.inv(C).numpy(), v.numpy(), rtol=1e-8, atol=1e-8)


def test_structural_transforms():
    x = x64(2, 6)
    r = T.ReshapeTransform((6,), (2, 3))
    assert tuple(r(x).shape) == (2, 2, 3) and r.inv(r(x)).tolist() == x.tolist()
    assert r.log_abs_det_jacobian(x, r(x)).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="different numbers of elements"):
        T.ReshapeTransform((6,), (4,))
    it = T.IndependentTransform(T.ExpTransform(), 1)
    np.testing.assert_allclose(it.log_abs_det_jacobian(x, it(x)).numpy(), x.sum(-1).numpy())
    assert repr(it.domain) == "IndependentConstraint(Real(), 1)"
    cat = T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)], dim=1,
                         lengths=[2, 4])
    y = cat(x)
    np.testing.assert_allclose(y[:, :2].numpy(), np.exp(x[:, :2].numpy()))
    np.testing.assert_allclose(cat.inv(y).numpy(), x.numpy(), rtol=1e-12)
    st = T.StackTransform([T.ExpTransform(), T.AbsTransform()], dim=0)
    np.testing.assert_allclose(st(x).numpy(), np.stack([np.exp(x[0].numpy()),
                                                        np.abs(x[1].numpy())]))


def test_cache_and_equality():
    t = T.ExpTransform(cache_size=1)
    x = x64(3)
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.SigmoidTransform()
    assert T.ExpTransform().inv == T.ExpTransform().inv
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
    assert T.identity_transform(x) is x
    assert repr(T.ExpTransform().inv) == "_InverseTransform(ExpTransform())"
    assert T.ExpTransform().with_cache(1)._cache_size == 1


def test_transformed_distribution_log_prob_and_cdf():
    base = D.Normal(nbtorch.tensor([0.3, -0.2], dtype=F64), nbtorch.tensor([1.0, 0.5], dtype=F64))
    td = D.TransformedDistribution(base, [T.AffineTransform(1.0, -2.0), T.ExpTransform()])
    y = nbtorch.tensor([0.5, 2.0], dtype=F64)
    x = (np.log(y.numpy()) - 1.0) / -2.0
    want = base.log_prob(nbtorch.tensor(x)).numpy() - np.log(2.0) - np.log(y.numpy())
    np.testing.assert_allclose(td.log_prob(y).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(td.cdf(y).numpy(), 1 - base.cdf(nbtorch.tensor(x)).numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(td.icdf(td.cdf(y)).numpy(), y.numpy(), rtol=1e-9)
    assert repr(td.support) == "GreaterThan(lower_bound=0.0)"
    sb = D.TransformedDistribution(D.Normal(nbtorch.zeros(3), nbtorch.ones(3)),
                                   T.StickBreakingTransform())
    assert tuple(sb.event_shape) == (4,) and tuple(sb.batch_shape) == ()
    assert tuple(sb.sample((2,)).shape) == (2, 4)
    assert tuple(sb.expand((5,)).sample().shape) == (5, 4)


CONSTRAINTS = [
    (constraints.real, [0.0, float("nan")], [True, False], "Real()"),
    (constraints.positive, [1.0, 0.0], [True, False], "GreaterThan(lower_bound=0.0)"),
    (constraints.nonnegative, [0.0, -1.0], [True, False], "GreaterThanEq(lower_bound=0.0)"),
    (constraints.unit_interval, [1.0, 1.5], [True, False],
     "Interval(lower_bound=0.0, upper_bound=1.0)"),
    (constraints.half_open_interval(0, 1), [0.0, 1.0], [True, False],
     "HalfOpenInterval(lower_bound=0, upper_bound=1)"),
    (constraints.less_than(2.0), [1.0, 2.0], [True, False], "LessThan(upper_bound=2.0)"),
    (constraints.boolean, [1.0, 0.5], [True, False], "Boolean()"),
    (constraints.nonnegative_integer, [3.0, 1.5], [True, False],
     "IntegerGreaterThan(lower_bound=0)"),
    (constraints.integer_interval(0, 3), [3.0, 4.0], [True, False],
     "IntegerInterval(lower_bound=0, upper_bound=3)"),
]


@pytest.mark.parametrize("c,values,want,text", CONSTRAINTS, ids=lambda v: repr(v)[:20])
def test_constraints(c, values, want, text):
    assert c.check(nbtorch.tensor(values)).tolist() == want
    assert repr(c) == text
    assert c.is_discrete == ("Integer" in text or text == "Boolean()")


def test_structured_constraints():
    assert constraints.simplex.check(nbtorch.tensor([[0.5, 0.5], [0.5, 0.6]])).tolist() == \
        [True, False]
    assert constraints.one_hot.check(nbtorch.tensor([[0.0, 1.0], [1.0, 1.0]])).tolist() == \
        [True, False]
    spd = nbtorch.tensor([[2.0, 0.5], [0.5, 1.0]])
    assert constraints.positive_definite.check(spd).item()
    assert not constraints.positive_definite.check(nbtorch.tensor([[1.0, 2.0], [2.0, 1.0]])).item()
    assert constraints.positive_semidefinite.check(nbtorch.tensor([[1.0, 1.0], [1.0, 1.0]])).item()
    assert not constraints.symmetric.check(nbtorch.tensor([[1.0, 2.0], [0.0, 1.0]])).item()
    assert constraints.lower_triangular.check(nbtorch.tensor([[1.0, 0.0], [3.0, -1.0]])).item()
    assert not constraints.lower_cholesky.check(nbtorch.tensor([[1.0, 0.0], [3.0, -1.0]])).item()
    assert constraints.multinomial(5).check(nbtorch.tensor([2.0, 3.0])).item()
    ind = constraints.independent(constraints.positive, 1)
    assert ind.check(nbtorch.tensor([[1.0, 2.0], [1.0, -1.0]])).tolist() == [True, False]
    assert ind.event_dim == 1
    assert constraints.is_dependent(constraints.dependent)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        constraints.dependent.check(nbtorch.zeros(1))
    with pytest.raises(NotImplementedError):
        constraints.dependent.is_discrete
    assert constraints.dependent_property(is_discrete=True, event_dim=0)(lambda s: 0).is_discrete
    cat = constraints.cat([constraints.real, constraints.positive], dim=0, lengths=[1, 2])
    assert cat.check(nbtorch.tensor([-1.0, 1.0, -2.0])).tolist() == [True, True, False]
    stack = constraints.stack([constraints.real, constraints.positive], dim=0)
    assert stack.check(nbtorch.tensor([[-1.0], [-2.0]])).tolist() == [[True], [False]]


@pytest.mark.parametrize("c", [constraints.real, constraints.positive, constraints.nonnegative,
                               constraints.greater_than(2.0), constraints.greater_than_eq(-1.0),
                               constraints.less_than(3.0), constraints.unit_interval,
                               constraints.interval(-2.0, 5.0),
                               constraints.half_open_interval(0.0, 2.0), constraints.simplex,
                               constraints.independent(constraints.positive, 1),
                               constraints.corr_cholesky,
                               constraints.cat([constraints.real, constraints.positive], 1,
                                               [2, 2])], ids=repr)
def test_biject_to_and_transform_to(c):
    for registry in (biject_to, transform_to):
        t = registry(c)
        n = 6 if c is constraints.corr_cholesky else 4
        x = x64(2, n) if c.event_dim or isinstance(c, type(constraints.cat([]))) else x64(4)
        y = t(x)
        assert bool(c.check(y).all()), (c, y)
        if registry is biject_to:
            assert t.bijective
            np.testing.assert_allclose(t.inv(y).numpy(), x.numpy(), rtol=1e-7, atol=1e-7)


def test_registry_errors_and_matrices():
    with pytest.raises(NotImplementedError, match="Cannot transform _LowerCholesky constraints"):
        biject_to(constraints.lower_cholesky)
    assert isinstance(transform_to(constraints.lower_cholesky), T.LowerCholeskyTransform)
    assert isinstance(transform_to(constraints.positive_definite), T.PositiveDefiniteTransform)
    with pytest.raises(TypeError, match="Expected constraint to be either"):
        biject_to.register(int, lambda c: None)


def test_transforms_vs_pytorch():
    torch = pytest.importorskip("torch")
    TT = torch.distributions.transforms
    x = np.random.default_rng(3).standard_normal((2, 3))
    for name in ("ExpTransform", "SigmoidTransform", "TanhTransform", "SoftplusTransform",
                 "StickBreakingTransform", "SoftmaxTransform"):
        ours, ref = getattr(T, name)(), getattr(TT, name)()
        xo, xr = nbtorch.tensor(x), torch.tensor(x)
        yo, yr = ours(xo), ref(xr)
        np.testing.assert_allclose(yo.numpy(), yr.numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours.inv(yo).numpy(), ref.inv(yr).numpy(), rtol=1e-9)
        if name != "SoftmaxTransform":
            np.testing.assert_allclose(ours.log_abs_det_jacobian(xo, yo).numpy(),
                                       ref.log_abs_det_jacobian(xr, yr).numpy(), rtol=1e-9)
        assert repr(ours.domain) == repr(ref.domain)
        assert repr(ours.codomain) == repr(ref.codomain)
    v = np.random.default_rng(4).standard_normal((2, 6))
    np.testing.assert_allclose(T.CorrCholeskyTransform()(nbtorch.tensor(v)).numpy(),
                               TT.CorrCholeskyTransform()(torch.tensor(v)).numpy(), rtol=1e-12)
    yo = T.CorrCholeskyTransform()(nbtorch.tensor(v))
    yr = TT.CorrCholeskyTransform()(torch.tensor(v))
    np.testing.assert_allclose(
        T.CorrCholeskyTransform().log_abs_det_jacobian(nbtorch.tensor(v), yo).numpy(),
        TT.CorrCholeskyTransform().log_abs_det_jacobian(torch.tensor(v), yr).numpy(),
        rtol=1e-10)
