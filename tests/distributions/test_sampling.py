"""Sampling: shapes, seeding (manual_seed reproduces), and moments of every distribution
against its closed-form mean and variance (fixed seeds, bounds of a few standard errors)."""
import numpy as np
import pytest

import nbtorch
import nbtorch.distributions as D

from cases import CASES, build

N = 20000


def _dist(name, dtype=nbtorch.float64):
    return build(D, name, lambda a: nbtorch.tensor(a, dtype=dtype))


@pytest.mark.parametrize("name", sorted(CASES))
def test_shapes_dtype_and_seed(name):
    d = _dist(name, nbtorch.float32)
    nbtorch.manual_seed(3)
    a = d.sample((5, 2))
    assert tuple(a.shape) == (5, 2) + tuple(d.batch_shape) + tuple(d.event_shape)
    if name.startswith("Categorical"):
        assert a.dtype is nbtorch.int64
    else:
        assert a.dtype is nbtorch.float32
    assert not a.requires_grad
    nbtorch.manual_seed(3)
    np.testing.assert_array_equal(a.numpy(), d.sample((5, 2)).numpy())
    assert tuple(d.sample().shape) == tuple(d.batch_shape) + tuple(d.event_shape)
    if d.has_rsample:
        assert tuple(d.rsample((3,)).shape) == (3,) + tuple(a.shape[2:])
    else:
        with pytest.raises(NotImplementedError):
            d.rsample()
    assert bool(d.support.check(a).all())


MOMENTS = [n for n in sorted(CASES) if n not in ("Cauchy", "RelaxedBernoulli",
                                                   "RelaxedOneHotCategorical",
                                                   "LogisticNormal", "HalfCauchy",
                                                   "VonMises", "LKJCholesky")]


@pytest.mark.parametrize("name", MOMENTS)
def test_moments(name):
    d = _dist(name)
    nbtorch.manual_seed(11)
    x = d.sample((N,)).double().numpy()
    if name.startswith("Categorical"):                # compare one-hot frequencies
        x = np.eye(d.probs.shape[-1])[x.astype(np.int64)]
        mean, var = d.probs.numpy(), (d.probs * (1 - d.probs)).numpy()
    else:
        mean, var = d.mean.numpy(), d.variance.numpy()
    finite = np.isfinite(var)
    se = np.sqrt(np.where(finite, var, 1.0) / N)
    assert np.all(~finite | (np.abs(x.mean(0) - mean) < 5 * se + 1e-12)), (x.mean(0), mean)
    # the sample variance: its standard error from the fourth moment
    dev = x - x.mean(0)
    se_var = np.sqrt(np.maximum(((dev ** 2 - dev.var(0)) ** 2).mean(0), 1e-30) / N)
    ok = ~finite | (np.abs(dev.var(0) - var) < 5 * se_var + 1e-12)
    assert np.all(ok | ~np.isfinite(mean)), (dev.var(0), var)


def test_cauchy_quantiles_and_relaxed_limits():
    nbtorch.manual_seed(5)
    x = D.Cauchy(nbtorch.tensor(1.0), nbtorch.tensor(2.0)).sample((N,)).numpy()
    q = np.quantile(x, [0.25, 0.5, 0.75])
    np.testing.assert_allclose(q, [-1.0, 1.0, 3.0], atol=0.1)
    probs = nbtorch.tensor([0.2, 0.8])
    cold = D.RelaxedBernoulli(nbtorch.tensor(0.05), probs).sample((N,)).numpy()
    np.testing.assert_allclose((cold > 0.5).mean(0), [0.2, 0.8], atol=0.02)
    oh = D.RelaxedOneHotCategorical(nbtorch.tensor(0.05), nbtorch.tensor([0.2, 0.3, 0.5]))
    s = oh.sample((N,)).numpy()
    np.testing.assert_allclose(np.bincount(s.argmax(-1), minlength=3) / N, [0.2, 0.3, 0.5],
                               atol=0.02)
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-5)


def test_mixture_same_family():
    mix = D.Categorical(nbtorch.tensor([0.3, 0.7], dtype=nbtorch.float64))
    comp = D.Normal(nbtorch.tensor([-2.0, 3.0], dtype=nbtorch.float64),
                    nbtorch.tensor([0.5, 1.0], dtype=nbtorch.float64))
    gmm = D.MixtureSameFamily(mix, comp)
    nbtorch.manual_seed(0)
    x = gmm.sample((N,))
    assert tuple(x.shape) == (N,)
    assert abs(x.mean().item() - gmm.mean.item()) < 5 * (gmm.variance.item() / N) ** 0.5
    assert abs((x < 0.5).double().mean().item() - 0.3) < 0.02
    v = nbtorch.tensor([-2.0, 0.0, 3.0], dtype=nbtorch.float64)
    want = np.log(0.3 * np.exp(comp.log_prob(v[:, None]).numpy()[:, 0])
                  + 0.7 * np.exp(comp.log_prob(v[:, None]).numpy()[:, 1]))
    np.testing.assert_allclose(gmm.log_prob(v).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(gmm.cdf(v).numpy(),
                               0.3 * comp.cdf(v[:, None]).numpy()[:, 0]
                               + 0.7 * comp.cdf(v[:, None]).numpy()[:, 1], rtol=1e-12)
    # a mixture of 2-D diagonal Gaussians, batch (3,)
    mix = D.Categorical(nbtorch.ones(3, 4))
    comp = D.Independent(D.Normal(nbtorch.randn(3, 4, 2), nbtorch.rand(3, 4, 2) + 0.5), 1)
    gmm = D.MixtureSameFamily(mix, comp)
    assert tuple(gmm.sample((5,)).shape) == (5, 3, 2)
    assert tuple(gmm.log_prob(nbtorch.zeros(5, 3, 2)).shape) == (5, 3)
    assert tuple(gmm.expand((2, 3)).sample().shape) == (2, 3, 2)


def test_generator_stream_is_shared():
    """Samplers draw from nbtorch's default generator: a draw advances it."""
    nbtorch.manual_seed(0)
    a = D.Gamma(nbtorch.tensor([2.0]), nbtorch.tensor([1.0])).sample()
    b = D.Gamma(nbtorch.tensor([2.0]), nbtorch.tensor([1.0])).sample()
    assert a.item() != b.item()
    nbtorch.manual_seed(0)
    assert D.Gamma(nbtorch.tensor([2.0]), nbtorch.tensor([1.0])).sample().item() == a.item()
