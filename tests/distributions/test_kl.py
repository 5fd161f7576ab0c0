"""kl_divergence: the registry's dispatch and errors, closed forms checked by Monte Carlo
(standalone), and every registered pair against PyTorch when importable."""
import math

import numpy as np
import pytest

import nbtorch
import nbtorch.distributions as D
from nbtorch.distributions import kl_divergence, register_kl

F64 = nbtorch.float64


def t(*v):
    return nbtorch.tensor(np.array(v, dtype=np.float64))


SPD = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, -0.2], [0.1, -0.2, 1.0]])
W = np.array([[0.5, -0.2], [0.1, 0.4], [-0.3, 0.2]])

# name -> builder(module, tensor) of one distribution; pairs below combine them
DISTS = {
    "Normal": lambda m, T: m.Normal(T([0.3, -1.0]), T([0.8, 1.7])),
    "Normal2": lambda m, T: m.Normal(T([0.0, 0.5]), T([1.2, 0.6])),
    "Laplace": lambda m, T: m.Laplace(T([0.1, -0.5]), T([0.7, 1.3])),
    "Laplace2": lambda m, T: m.Laplace(T([0.4, 0.5]), T([1.1, 0.9])),
    "Cauchy": lambda m, T: m.Cauchy(T([0.1, -0.5]), T([0.7, 1.3])),
    "Cauchy2": lambda m, T: m.Cauchy(T([0.4, 0.5]), T([1.1, 0.9])),
    "Exponential": lambda m, T: m.Exponential(T([0.7, 2.0])),
    "Exponential2": lambda m, T: m.Exponential(T([1.5, 0.4])),
    "Gamma": lambda m, T: m.Gamma(T([0.7, 3.0]), T([1.2, 0.5])),
    "Gamma2": lambda m, T: m.Gamma(T([2.0, 1.5]), T([0.9, 2.0])),
    "Beta": lambda m, T: m.Beta(T([0.7, 3.0]), T([1.2, 0.5])),
    "Beta2": lambda m, T: m.Beta(T([2.0, 1.5]), T([0.9, 2.0])),
    "Uniform": lambda m, T: m.Uniform(T([0.1, 0.2]), T([0.6, 0.9])),
    "Uniform2": lambda m, T: m.Uniform(T([0.0, -1.0]), T([1.0, 2.0])),
    "Dirichlet": lambda m, T: m.Dirichlet(T([[0.7, 3.0, 1.0], [2.0, 2.0, 0.5]])),
    "Dirichlet2": lambda m, T: m.Dirichlet(T([[1.7, 0.4, 1.0], [1.0, 3.0, 2.5]])),
    "Bernoulli": lambda m, T: m.Bernoulli(T([0.2, 0.0])),
    "Bernoulli2": lambda m, T: m.Bernoulli(T([0.7, 0.4])),
    "Binomial": lambda m, T: m.Binomial(T([5.0, 8.0]), T([0.2, 0.6])),
    "Binomial2": lambda m, T: m.Binomial(T([5.0, 6.0]), T([0.5, 0.3])),
    "Categorical": lambda m, T: m.Categorical(T([[0.2, 0.3, 0.5], [0.0, 0.5, 0.5]])),
    "Categorical2": lambda m, T: m.Categorical(T([[0.6, 0.1, 0.3], [0.3, 0.3, 0.4]])),
    "OneHotCategorical": lambda m, T: m.OneHotCategorical(T([[0.2, 0.3, 0.5]])),
    "OneHotCategorical2": lambda m, T: m.OneHotCategorical(T([[0.6, 0.1, 0.3]])),
    "Geometric": lambda m, T: m.Geometric(T([0.2, 0.7])),
    "Geometric2": lambda m, T: m.Geometric(T([0.5, 0.3])),
    "Poisson": lambda m, T: m.Poisson(T([0.7, 3.0])),
    "Poisson2": lambda m, T: m.Poisson(T([1.5, 2.0])),
    "MVN": lambda m, T: m.MultivariateNormal(T([0.1, 0.2, -0.3]), T(SPD)),
    "MVN2": lambda m, T: m.MultivariateNormal(T([[0.0, 0.5, 0.3]]), T(np.eye(3) * 1.3)),
    "LowRank": lambda m, T: m.LowRankMultivariateNormal(T([0.1, 0.2, -0.3]), T(W),
                                                        T([0.5, 1.0, 2.0])),
    "LowRank2": lambda m, T: m.LowRankMultivariateNormal(T([[0.0, 0.5, 0.3]]), T(W[:, :1]),
                                                         T([1.5, 0.7, 1.0])),
    "Independent": lambda m, T: m.Independent(m.Normal(T([0.3, -1.0]), T([0.8, 1.7])), 1),
    "Independent2": lambda m, T: m.Independent(m.Normal(T([0.0, 0.5]), T([1.2, 0.6])), 1),
    "LogNormal": lambda m, T: m.LogNormal(T([0.3, -1.0]), T([0.8, 1.7])),
    "LogNormal2": lambda m, T: m.LogNormal(T([0.0, 0.5]), T([1.2, 0.6])),
    "HalfNormal": lambda m, T: m.HalfNormal(T([0.8, 1.7])),
    "HalfNormal2": lambda m, T: m.HalfNormal(T([1.2, 0.6])),
    "Gumbel": lambda m, T: m.Gumbel(T([0.3, -1.0]), T([0.8, 1.7])),
    "Gumbel2": lambda m, T: m.Gumbel(T([0.0, 0.5]), T([1.2, 0.6])),
    "Pareto": lambda m, T: m.Pareto(T([1.0, 2.0]), T([3.0, 2.5])),
    "Pareto2": lambda m, T: m.Pareto(T([0.5, 2.5]), T([1.5, 4.0])),
    "ContinuousBernoulli": lambda m, T: m.ContinuousBernoulli(T([0.2, 0.5, 0.7])),
    "ContinuousBernoulli2": lambda m, T: m.ContinuousBernoulli(T([0.6, 0.3, 0.5])),
    "CB": lambda m, T: m.ContinuousBernoulli(T([0.2, 0.7])),
}

SAME = ["Normal", "Laplace", "Cauchy", "Exponential", "Gamma", "Beta", "Uniform", "Dirichlet",
        "Bernoulli", "Binomial", "Categorical", "OneHotCategorical", "Geometric", "Poisson",
        "MVN", "LowRank", "Independent", "LogNormal", "HalfNormal", "Gumbel", "Pareto",
        "ContinuousBernoulli"]
CROSS = [("Bernoulli", "Poisson"), ("Beta", "Exponential"), ("Beta", "Gamma"),
         ("Beta", "Normal"), ("Beta", "Uniform2"), ("Exponential", "Gamma"),
         ("Exponential", "Normal"), ("Gamma", "Exponential"), ("Gamma", "Normal"),
         ("Laplace", "Normal"), ("Normal", "Laplace"), ("Uniform", "Beta"),
         ("Uniform", "Exponential"), ("Uniform", "Gamma"), ("Uniform", "Normal"),
         ("MVN", "LowRank"), ("LowRank", "MVN"), ("Normal", "Uniform"), ("Gamma", "Beta"),
         ("Exponential", "Uniform"), ("Laplace", "Gamma"), ("Poisson", "Binomial"),
         ("Beta", "CB"), ("Uniform", "CB"), ("CB", "Exponential"), ("CB", "Normal"),
         ("CB", "Uniform2"), ("Exponential", "Gumbel"), ("Gamma", "Gumbel"),
         ("Gumbel", "Normal"), ("Normal", "Gumbel"), ("Pareto", "Exponential"),
         ("Pareto", "Gamma"), ("Pareto", "Normal"), ("Uniform", "Gumbel"),
         ("Uniform", "Pareto"), ("Gumbel", "Gamma"), ("Pareto", "Uniform"), ("CB", "Pareto"),
         ("Normal", "Pareto"), ("Beta", "Pareto")]
PAIRS = [(n, n + "2") for n in SAME] + CROSS


@pytest.mark.parametrize("p,q", PAIRS)
def test_against_pytorch(p, q):
    torch = pytest.importorskip("torch")
    T_ours = lambda v: nbtorch.tensor(v, dtype=F64)
    T_ref = lambda v: torch.tensor(v, dtype=torch.float64)
    got = kl_divergence(DISTS[p](D, T_ours), DISTS[q](D, T_ours))
    want = torch.distributions.kl_divergence(DISTS[p](torch.distributions, T_ref),
                                             DISTS[q](torch.distributions, T_ref))
    np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("p,q", [("Normal", "Normal2"), ("Gamma", "Gamma2"),
                                 ("Laplace", "Normal"), ("MVN", "MVN2")])
def test_monte_carlo(p, q):
    """KL = E_p[log p - log q], estimated from 20000 samples (3 standard errors)."""
    T = lambda v: nbtorch.tensor(v, dtype=F64)
    dp, dq = DISTS[p](D, T), DISTS[q](D, T)
    nbtorch.manual_seed(0)
    x = dp.sample((20000,))
    ratio = (dp.log_prob(x) - dq.log_prob(x)).numpy()
    est, se = ratio.mean(0), ratio.std(0) / math.sqrt(len(ratio))
    assert np.all(np.abs(kl_divergence(dp, dq).numpy() - est) < 3 * se + 1e-3)


def test_closed_form_values():
    kl = kl_divergence(D.Normal(t(0.0), t(1.0)), D.Normal(t(1.0), t(2.0)))
    assert kl.item() == pytest.approx(math.log(2) + (1 + 1) / 8 - 0.5, rel=1e-12)
    kl = kl_divergence(D.Exponential(t(2.0)), D.Exponential(t(0.5)))
    assert kl.item() == pytest.approx(math.log(2 / 0.5) + 0.5 / 2 - 1, rel=1e-12)
    kl = kl_divergence(D.Bernoulli(t(0.5)), D.Bernoulli(t(0.25)))
    assert kl.item() == pytest.approx(0.5 * math.log(2) + 0.5 * math.log(0.5 / 0.75))
    assert kl_divergence(D.Uniform(t(0.0), t(2.0)), D.Uniform(t(0.5), t(3.0))).item() == \
        math.inf
    assert kl_divergence(D.Normal(t(0.0), t(1.0)), D.Uniform(t(0.0), t(1.0))).item() == \
        math.inf
    p = D.Categorical(t(0.5, 0.5, 0.0))
    assert kl_divergence(p, D.Categorical(t(0.25, 0.25, 0.5))).item() == \
        pytest.approx(math.log(2))


def test_gradient_flows():
    loc = nbtorch.tensor([0.3], dtype=F64, requires_grad=True)
    kl = kl_divergence(D.Normal(loc, t(1.0)), D.Normal(t(0.0), t(1.0)))
    kl.sum().backward()
    assert loc.grad.item() == pytest.approx(0.3)


def test_registry_dispatch_and_errors():
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented for "
                                                  "p type Cauchy and q type Normal"):
        kl_divergence(D.Cauchy(t(0.0), t(1.0)), D.Normal(t(0.0), t(1.0)))
    with pytest.raises(TypeError, match="Distribution subclass"):
        register_kl(int, D.Normal)

    class MyNormal(D.Normal):
        pass

    assert kl_divergence(MyNormal(t(0.0), t(1.0)), D.Normal(t(1.0), t(1.0))).item() == \
        pytest.approx(0.5)

    @register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return nbtorch.zeros(())

    try:
        assert kl_divergence(MyNormal(t(0.0), t(1.0)), D.Normal(t(1.0), t(1.0))).item() == 0
    finally:
        from nbtorch.distributions import kl as kl_module
        del kl_module._KL_REGISTRY[MyNormal, D.Normal]
        kl_module._KL_MEMOIZE.clear()


def test_exponential_family_bregman():
    """Same-family pairs through the generic Bregman formula equal the closed forms."""
    from nbtorch.distributions.kl import _kl_expfamily_expfamily
    for p, q in (("Normal", "Normal2"), ("Gamma", "Gamma2"), ("Poisson", "Poisson2"),
                 ("Beta", "Beta2"), ("Exponential", "Exponential2")):
        T = lambda v: nbtorch.tensor(v, dtype=F64)
        dp, dq = DISTS[p](D, T), DISTS[q](D, T)
        np.testing.assert_allclose(_kl_expfamily_expfamily(dp, dq).detach().numpy(),
                                   kl_divergence(dp, dq).numpy(), rtol=1e-9)
