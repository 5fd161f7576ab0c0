"""Argument validation: parameters outside their constraints and values outside the
support raise PyTorch's ValueErrors (messages compared with PyTorch when importable)."""
import pytest

import nbtorch
import nbtorch.distributions as D

T = nbtorch.tensor

BAD_PARAMS = [
    ("Normal", lambda m, t: m.Normal(t([0.0]), t([-1.0])), "scale"),
    ("Normal", lambda m, t: m.Normal(t([float("nan")]), t([1.0])), "loc"),
    ("Bernoulli", lambda m, t: m.Bernoulli(t([1.5])), "probs"),
    ("Categorical", lambda m, t: m.Categorical(t([0.5, -0.5, 1.0])), "probs"),
    ("Beta", lambda m, t: m.Beta(t([0.0]), t([1.0])), "concentration"),   # its Dirichlet
    ("Gamma", lambda m, t: m.Gamma(t([1.0]), t([-2.0])), "rate"),
    ("Dirichlet", lambda m, t: m.Dirichlet(t([1.0, 0.0])), "concentration"),
    ("Exponential", lambda m, t: m.Exponential(t([0.0])), "rate"),
    ("Poisson", lambda m, t: m.Poisson(t([-1.0])), "rate"),
    ("Binomial", lambda m, t: m.Binomial(t([2.5]), t([0.5])), "total_count"),
    ("Geometric", lambda m, t: m.Geometric(t([0.0])), "probs"),
    ("StudentT", lambda m, t: m.StudentT(t([-1.0])), "df"),
    ("Chi2", lambda m, t: m.Chi2(t([0.0])), "df"),
    ("MultivariateNormal", lambda m, t: m.MultivariateNormal(
        t([0.0, 0.0]), t([[1.0, 2.0], [2.0, 1.0]])), "covariance_matrix"),
    ("MultivariateNormal", lambda m, t: m.MultivariateNormal(
        t([0.0, 0.0]), scale_tril=t([[1.0, 0.0], [2.0, -1.0]])), "scale_tril"),
    ("LowRankMultivariateNormal", lambda m, t: m.LowRankMultivariateNormal(
        t([0.0, 0.0]), t([[1.0], [0.0]]), t([1.0, -1.0])), "cov_diag"),
]


@pytest.mark.parametrize("name,make,param", BAD_PARAMS)
def test_bad_parameters(name, make, param):
    with pytest.raises(ValueError, match=f"Expected parameter {param} "):
        make(D, T)
    if name == "MultivariateNormal":
        return                       # without validation the Cholesky factorisation fails
    D.Distribution.set_default_validate_args(False)     # the same arguments pass
    try:
        make(D, T)
    finally:
        D.Distribution.set_default_validate_args(True)


@pytest.mark.parametrize("name,make,param", BAD_PARAMS)
def test_messages_match_pytorch(name, make, param):
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError) as ours:
        make(D, T)
    with pytest.raises(ValueError) as ref:
        make(torch.distributions, torch.tensor)
    ours, ref = str(ours.value), str(ref.value)
    assert ours.split(" of distribution")[0] == ref.split(" of distribution")[0]
    if " the constraint " in ref:
        assert ours.split(" the constraint ")[1].split(", but")[0] == \
            ref.split(" the constraint ")[1].split(", but")[0]
    assert ours.split("invalid values:")[0].split(", but")[-1] == \
        ref.split("invalid values:")[0].split(", but")[-1]


SUPPORT = [
    (lambda: D.Normal(T(0.0), T(1.0)), T(float("nan")), "Real()"),
    (lambda: D.Exponential(T(1.0)), T(-1.0), "GreaterThanEq(lower_bound=0.0)"),
    (lambda: D.Bernoulli(T(0.3)), T(0.5), "Boolean()"),
    (lambda: D.Beta(T(1.0), T(2.0)), T(1.5), "Interval(lower_bound=0.0, upper_bound=1.0)"),
    (lambda: D.Poisson(T(2.0)), T(1.5), "IntegerGreaterThan(lower_bound=0)"),
    (lambda: D.Categorical(T([0.5, 0.5])), T(1.5), "IntegerInterval(lower_bound=0, "
                                                    "upper_bound=1)"),
    (lambda: D.Dirichlet(T([1.0, 1.0])), T([0.5, 0.6]), "Simplex()"),
    (lambda: D.Uniform(T(0.0), T(1.0)), T(1.5), "Interval(lower_bound=0.0, "
                                               "upper_bound=1.0)"),
]


@pytest.mark.parametrize("make,value,support", SUPPORT)
def test_value_outside_support(make, value, support):
    d = make()
    with pytest.raises(ValueError, match="Expected value argument .* to be within the "
                                         "support"):
        d.log_prob(value)
    assert support in repr(d.support) or support == repr(d.support)
    D.Distribution.set_default_validate_args(False)
    try:
        make().log_prob(value)                   # no error without validation
    finally:
        D.Distribution.set_default_validate_args(True)


def test_value_type_and_shape_errors():
    d = D.Normal(nbtorch.zeros(3), nbtorch.ones(3))
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        d.log_prob(0.5)
    with pytest.raises(ValueError, match="Value is not broadcastable with "
                                         "batch_shape\\+event_shape"):
        d.log_prob(nbtorch.zeros(2))
    mvn = D.MultivariateNormal(nbtorch.zeros(3), nbtorch.eye(3))
    with pytest.raises(ValueError, match="The right-most size of value must match "
                                         "event_shape"):
        mvn.log_prob(nbtorch.zeros(2))


def test_constructor_errors():
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, "
                                         "but not both."):
        D.Bernoulli(T(0.5), T(0.0))
    with pytest.raises(ValueError, match="`probs` parameter must be at least "
                                         "one-dimensional."):
        D.Categorical(T(0.5))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or "
                                         "precision_matrix or scale_tril"):
        D.MultivariateNormal(nbtorch.zeros(2))
    with pytest.raises(ValueError, match=r"Expected parameter low .* to satisfy the "
                                         r"constraint LessThan\(upper_bound=0.0\)"):
        D.Uniform(T(1.0), T(0.0))
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        D.Independent(D.Normal(nbtorch.zeros(3), nbtorch.ones(3)), 2)
    with pytest.raises(ValueError, match="Categorical"):
        D.MixtureSameFamily(D.Normal(T(0.0), T(1.0)), D.Normal(T([0.0]), T([1.0])))
    with pytest.raises(ValueError, match="does not equal"):
        D.MixtureSameFamily(D.Categorical(T([0.5, 0.5])),
                            D.Normal(T([0.0, 1.0, 2.0]), T([1.0, 1.0, 1.0])))
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count"):
        D.Multinomial(T(3.0), T([0.5, 0.5]))
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")
    with pytest.raises(NotImplementedError, match="must also define a custom .expand"):
        class MyNormal(D.Normal):
            def __init__(self, loc):
                super().__init__(loc, T(1.0))
        MyNormal(T(0.0)).expand((2,))


def test_validate_args_flag():
    d = D.Normal(T(0.0), T(-1.0), validate_args=False)
    assert not d._validate_args
    assert D.Normal(T(0.0), T(1.0))._validate_args
    assert D.Normal(T(0.0), T(1.0), validate_args=False).expand((2,))._validate_args is False
