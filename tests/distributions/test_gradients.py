"""Gradients: log_prob and entropy by gradcheck (float64) for every distribution;
rsample by gradcheck where it is a smooth function of the parameters and the noise
(seed reset inside); the implicit reparameterisation of Gamma, Beta and Dirichlet by
E[dx/dtheta] = dE[x]/dtheta and reference values."""
import math

import numpy as np
import pytest

import nbtorch
import nbtorch.distributions as D
from nbtorch.autograd import gradcheck

from cases import CASES, CLASS

F64 = nbtorch.float64
NOT_DIFFERENTIABLE = {("Binomial", 0), ("BinomialLogits", 0), ("Multinomial", 0),
                      ("BinomialLogits", "total_count")}
SYMMETRIC = {"covariance_matrix", "precision_matrix"}


# concentration exactly 0 takes GeneralizedPareto's exponential branch, whose gradient in
# the concentration is 0 (as PyTorch's): differentiate away from it
GRAD_ARGS = {"GeneralizedPareto": lambda a: (a[0], a[1], np.array([0.1, 0.05, -0.2]))}


def _leaves(name):
    """(builder(*leaves) -> distribution, leaves) with every float array a leaf."""
    args, kwargs, _ = CASES[name]
    args = GRAD_ARGS.get(name, lambda a: a)(args)
    slots = [(i, a) for i, a in enumerate(args)] + list(kwargs.items())
    leaves, keys = [], []
    for key, v in slots:
        if isinstance(v, np.ndarray) and (name, key) not in NOT_DIFFERENTIABLE:
            leaves.append(nbtorch.tensor(v, dtype=F64, requires_grad=True))
            keys.append(key)
    cls = getattr(D, CLASS.get(name, name))

    def make(*ts):
        vals = dict(zip(keys, ts))
        conv = lambda k, v: (((vals[k] + vals[k].mT) * 0.5 if k in SYMMETRIC else
                              vals[k].tril() if k == "scale_tril" else vals[k])
                             if k in vals else (nbtorch.tensor(v, dtype=F64)
                                                if isinstance(v, np.ndarray) else v))
        a = [conv(i, v) for i, v in enumerate(args)]
        kw = {k: conv(k, v) for k, v in kwargs.items()}
        return cls(*a, **kw)
    return make, leaves


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_and_entropy_gradcheck(name):
    make, leaves = _leaves(name)
    value = nbtorch.tensor(CASES[name][2], dtype=F64)
    assert gradcheck(lambda *ts: make(*ts).log_prob(value), leaves, atol=1e-6, rtol=1e-4)
    try:
        make(*leaves).entropy()
    except NotImplementedError:
        return
    assert gradcheck(lambda *ts: make(*ts).entropy(), leaves, atol=1e-6, rtol=1e-4)


def _seeded(fn):
    def run(*ts):
        nbtorch.manual_seed(7)
        return fn(*ts)
    return run


def t(*v, grad=True):
    return nbtorch.tensor(np.array(v, dtype=np.float64), requires_grad=grad)


RSAMPLE = {
    "Normal": (lambda a, b: D.Normal(a, b), (t(0.3, -1.0), t(0.8, 1.7))),
    "Uniform": (lambda a, b: D.Uniform(a, b), (t(0.3, -1.0), t(0.8, 1.7))),
    "Exponential": (lambda a: D.Exponential(a), (t(0.3, 2.0),)),
    "Laplace": (lambda a, b: D.Laplace(a, b), (t(0.3, -1.0), t(0.8, 1.7))),
    "Cauchy": (lambda a, b: D.Cauchy(a, b), (t(0.3, -1.0), t(0.8, 1.7))),
    "LogNormal": (lambda a, b: D.LogNormal(a, b), (t(0.3, -1.0), t(0.8, 1.7))),
    "StudentT": (lambda a, b: D.StudentT(t(3.0, grad=False), a, b), (t(0.3, -1.0),
                                                                      t(0.8, 1.7))),
    "MVN": (lambda a, L: D.MultivariateNormal(a, scale_tril=L.tril()),
            (t(0.3, -1.0), t([1.0, 0.0], [0.4, 0.7]))),
    "MVNCov": (lambda a, C: D.MultivariateNormal(a, (C + C.mT) * 0.5),
               (t(0.3, -1.0), t([1.0, 0.2], [0.2, 0.7]))),
    "LowRank": (lambda a, W, d: D.LowRankMultivariateNormal(a, W, d),
                (t(0.3, -1.0), t([1.0], [0.4]), t(0.5, 0.8))),
    "RelaxedBernoulli": (lambda T, lg: D.RelaxedBernoulli(T, logits=lg),
                         (t(0.7), t(0.3, -1.0))),
    "RelaxedOneHot": (lambda T, lg: D.RelaxedOneHotCategorical(T, logits=lg),
                      (t(0.7), t(0.3, -1.0, 0.5))),
    "Transformed": (lambda a, b: D.TransformedDistribution(
        D.Normal(a, b), [D.transforms.TanhTransform(), D.transforms.AffineTransform(1.0, 2.0)]),
                    (t(0.3, -1.0), t(0.8, 1.7))),
}


@pytest.mark.parametrize("name", sorted(RSAMPLE))
def test_rsample_gradcheck(name):
    make, params = RSAMPLE[name]
    assert make(*params).has_rsample
    assert gradcheck(_seeded(lambda *ts: make(*ts).rsample((3,))), params, atol=1e-6,
                     rtol=1e-4)


def test_sample_has_no_graph():
    loc = t(0.0, 1.0)
    assert not D.Normal(loc, t(1.0, 1.0, grad=False)).sample().requires_grad
    assert D.Normal(loc, t(1.0, 1.0, grad=False)).rsample().requires_grad


# d x / d alpha of Gamma(alpha, 1) samples at a fixed CDF value, from mpmath (50 digits):
# -(d/dalpha P(alpha, x)) / pdf(x)
GAMMA_GRAD = [(1.0, 2.9927, 1.9359965814871665), (0.01, 1.2843, 65.40805704501798),
              (10.0, 2.9524, 0.5192062930498575), (0.5, 5.4704, 3.5307274048614907),
              (3000.0, 3168.0, 1.0275485730938805), (0.1, 3.6511, 9.879888052258591)]


def test_standard_gamma_grad_reference_values():
    a = nbtorch.tensor([g[0] for g in GAMMA_GRAD], dtype=F64)
    x = nbtorch.tensor([g[1] for g in GAMMA_GRAD], dtype=F64)
    np.testing.assert_allclose(nbtorch._standard_gamma_grad(a, x).numpy(),
                               [g[2] for g in GAMMA_GRAD], rtol=1e-12)


def test_implicit_reparameterisation_is_unbiased():
    """E[dx/dtheta] equals the derivative of the mean, for Gamma, Chi2, Beta, Dirichlet."""
    n = 20000
    nbtorch.manual_seed(1)
    conc, rate = t(0.4, 2.5), t(1.5, 0.5)
    D.Gamma(conc, rate).rsample((n,)).sum(0).sum().backward()
    np.testing.assert_allclose(conc.grad.numpy() / n, 1 / rate.detach().numpy(), rtol=0.03)
    np.testing.assert_allclose(rate.grad.numpy() / n,
                               -conc.detach().numpy() / rate.detach().numpy() ** 2, rtol=0.03)
    df = t(3.0)
    D.Chi2(df).rsample((n,)).sum().backward()
    assert df.grad.item() / n == pytest.approx(1.0, rel=0.03)
    a, b = t(0.7), t(2.0)
    D.Beta(a, b).rsample((n,)).sum().backward()
    s = 2.7
    assert a.grad.item() / n == pytest.approx(2.0 / s ** 2, rel=0.05)
    assert b.grad.item() / n == pytest.approx(-0.7 / s ** 2, rel=0.05)
    c = t(0.5, 1.0, 2.5)
    x = D.Dirichlet(c).rsample((n,))
    x[:, 0].sum().backward()                 # d E[x0] / d c = (delta_0j c0 - c0) / c0**2
    c0 = 4.0
    np.testing.assert_allclose(c.grad.numpy() / n,
                               [(c0 - 0.5) / c0 ** 2, -0.5 / c0 ** 2, -0.5 / c0 ** 2],
                               rtol=0.06)


def test_gamma_rsample_grad_against_pytorch_formula():
    """The gradient of each Gamma sample is _standard_gamma_grad at that sample."""
    conc = t(0.8, 3.0, 12.0)
    nbtorch.manual_seed(2)
    x = D.Gamma(conc, t(2.0, 2.0, 2.0, grad=False)).rsample()
    x.sum().backward()
    want = nbtorch._standard_gamma_grad(conc.detach(), x.detach() * 2.0).numpy() / 2.0
    np.testing.assert_allclose(conc.grad.numpy(), want, rtol=1e-12)
    torch = pytest.importorskip("torch")
    ref = torch._standard_gamma_grad(torch.tensor(conc.detach().numpy()),
                                     torch.tensor(x.detach().numpy() * 2.0)).numpy() / 2.0
    np.testing.assert_allclose(conc.grad.numpy(), ref, rtol=5e-3)   # PyTorch approximates


def test_straight_through_and_exp_family_entropy():
    probs = t(0.2, 0.3, 0.5)
    d = D.OneHotCategoricalStraightThrough(probs)
    nbtorch.manual_seed(0)
    s = d.rsample()
    assert sorted(s.detach().tolist()) == [0.0, 0.0, 1.0]
    (s * nbtorch.tensor([1.0, 2.0, 3.0], dtype=F64)).sum().backward()
    # through probs / probs.sum(): w - <w, p> (Categorical normalises its probs)
    np.testing.assert_allclose(probs.grad.numpy(), [1.0 - 2.3, 2.0 - 2.3, 3.0 - 2.3])
    n = D.Normal(t(0.3), t(1.7))          # generic Bregman entropy = the closed form
    from nbtorch.distributions.exp_family import ExponentialFamily
    assert ExponentialFamily.entropy(n).item() == pytest.approx(n.entropy().item(), rel=1e-12)
    assert n.entropy().item() == pytest.approx(0.5 * math.log(2 * math.pi * math.e * 1.7 ** 2))
