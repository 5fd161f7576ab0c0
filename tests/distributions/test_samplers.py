"""The Gamma, Poisson and Binomial sampler ops (Numba kernels): exact distributions in
both algorithm regimes (pmf / CDF goodness of fit), edge values, dtypes, errors, seeding."""
import math

import numpy as np
import pytest

import nbtorch

N = 40000


def _pmf_close(samples, pmf, support):
    """Frequencies of `support` within 5 standard errors of `pmf` (plus the tail mass)."""
    counts = np.array([(samples == k).mean() for k in support])
    se = np.sqrt(pmf * (1 - pmf) / len(samples))
    assert np.all(np.abs(counts - pmf) < 5 * se + 1e-4), (counts, pmf)


@pytest.mark.parametrize("lam", [0.3, 4.0, 9.5, 10.0, 40.0])
def test_poisson_pmf(lam):
    nbtorch.manual_seed(int(lam * 10))
    x = nbtorch.poisson(nbtorch.full((N,), lam, dtype=nbtorch.float64)).numpy()
    ks = np.arange(max(0, int(lam - 3 * math.sqrt(lam))), int(lam + 3 * math.sqrt(lam)) + 1)
    pmf = np.exp(ks * math.log(lam) - lam - np.array([math.lgamma(k + 1) for k in ks]))
    _pmf_close(x, pmf, ks)


@pytest.mark.parametrize("n,p", [(10, 0.3), (40, 0.1), (50, 0.4), (1000, 0.9), (7, 0.95)])
def test_binomial_pmf(n, p):
    nbtorch.manual_seed(n)
    x = nbtorch.binomial(nbtorch.full((N,), float(n), dtype=nbtorch.float64),
                         nbtorch.full((N,), p, dtype=nbtorch.float64)).numpy()
    sd = math.sqrt(n * p * (1 - p))
    ks = np.arange(max(0, int(n * p - 3 * sd)), min(n, int(n * p + 3 * sd)) + 1)
    pmf = np.exp([math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                  + k * math.log(p) + (n - k) * math.log1p(-p) for k in ks])
    _pmf_close(x, pmf, ks)


@pytest.mark.parametrize("alpha", [0.05, 0.6, 1.0, 4.5, 300.0])
def test_gamma_cdf(alpha):
    """Kolmogorov-Smirnov distance to the exact CDF (igamma) below the 0.1% critical
    value."""
    nbtorch.manual_seed(3)
    x = np.sort(nbtorch._standard_gamma(nbtorch.full((N,), alpha,
                                                     dtype=nbtorch.float64)).numpy())
    cdf = nbtorch.igamma(nbtorch.full((N,), alpha, dtype=nbtorch.float64),
                         nbtorch.tensor(x)).numpy()
    ecdf = np.arange(1, N + 1) / N
    assert np.max(np.maximum(ecdf - cdf, cdf - (ecdf - 1 / N))) < 1.95 / math.sqrt(N)


def test_edge_values_dtypes_and_broadcast():
    rate = nbtorch.tensor([0.0, 1e-300, 5.0], dtype=nbtorch.float32)
    x = nbtorch.poisson(rate)
    assert x.dtype is nbtorch.float32 and x[0].item() == 0.0
    b = nbtorch.binomial(nbtorch.tensor([[0.0], [5.0], [7.0]]), nbtorch.tensor([0.0, 1.0, 0.5]))
    assert tuple(b.shape) == (3, 3)
    assert b[:, 0].tolist() == [0.0, 0.0, 0.0] and b[:, 1].tolist() == [0.0, 5.0, 7.0]
    assert bool(((b[:, 2] >= 0) & (b[:, 2] <= nbtorch.tensor([0.0, 5.0, 7.0]))).all())
    g = nbtorch._standard_gamma(nbtorch.tensor([1e-4, 1.0, 1e6], dtype=nbtorch.float64))
    assert bool((g > 0).all()) and abs(g[2].item() / 1e6 - 1) < 0.01
    tiny = nbtorch._standard_gamma(nbtorch.full((100,), 1e-3))
    assert tiny.min().item() >= nbtorch.finfo(nbtorch.float32).tiny     # clamped, as PyTorch
    d = nbtorch._sample_dirichlet(nbtorch.tensor([[0.5, 1.0, 3.0]]))
    assert abs(d.sum().item() - 1) < 1e-6
    assert nbtorch.poisson(nbtorch.zeros(0, 3)).shape == (0, 3)


def test_errors():
    with pytest.raises(RuntimeError, match="invalid Poisson rate, expected rate to be "
                                           "non-negative"):
        nbtorch.poisson(nbtorch.tensor([-1.0]))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        nbtorch.poisson(nbtorch.tensor([1]))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        nbtorch._standard_gamma(nbtorch.tensor([1]))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        nbtorch.binomial(nbtorch.tensor([3.0]), nbtorch.tensor([0.5], dtype=nbtorch.float64))


def test_counter_based_streams():
    """Element i's sample depends on the key and i only: a longer batch extends a shorter
    one, and a Generator gives its own reproducible stream."""
    alpha = nbtorch.full((10,), 2.0, dtype=nbtorch.float64)
    g = nbtorch.Generator().manual_seed(5)
    a = nbtorch._standard_gamma(alpha, generator=g)
    g.manual_seed(5)
    b = nbtorch._standard_gamma(nbtorch.full((20,), 2.0, dtype=nbtorch.float64), generator=g)
    np.testing.assert_array_equal(a.numpy(), b[:10].numpy())
    g.manual_seed(6)
    assert not np.array_equal(a.numpy(), nbtorch._standard_gamma(alpha, generator=g).numpy())


def test_poisson_binomial_match_pytorch_in_distribution():
    """Means over many draws agree with PyTorch's samplers' (same parameters)."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    nbtorch.manual_seed(0)
    rates = np.array([0.5, 12.0, 80.0])
    ours = nbtorch.poisson(nbtorch.tensor(np.tile(rates, (N, 1)))).numpy().mean(0)
    ref = torch.poisson(torch.tensor(np.tile(rates, (N, 1)))).numpy().mean(0)
    assert np.all(np.abs(ours - ref) < 5 * np.sqrt(2 * rates / N))
