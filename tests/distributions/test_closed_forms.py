"""log_prob, entropy, moments and cdf/icdf against closed forms in NumPy (no PyTorch)."""
import math

import numpy as np
import pytest

import nbtorch
import nbtorch.distributions as D

LG = np.vectorize(math.lgamma)
EULER = 0.5772156649015329


def T(v):
    return nbtorch.tensor(np.asarray(v, dtype=np.float64))


def close(a, b, rtol=1e-10):
    np.testing.assert_allclose(a.detach().numpy() if hasattr(a, "detach") else a, b,
                               rtol=rtol, atol=1e-12)


def _psi(x):          # digamma by differentiating lgamma (central differences, ok to 1e-8)
    h = 1e-5
    return (LG(x + h) - LG(x - h)) / (2 * h)


def test_normal_lognormal_studentt():
    m, s, x = np.array([0.5, -1.0]), np.array([2.0, 0.3]), np.array([1.0, -0.8])
    d = D.Normal(T(m), T(s))
    close(d.log_prob(T(x)), -0.5 * ((x - m) / s) ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi))
    close(d.entropy(), 0.5 * np.log(2 * np.pi * np.e * s ** 2))
    close(d.cdf(T(x)), 0.5 * (1 + np.vectorize(math.erf)((x - m) / (s * np.sqrt(2)))))
    close(d.icdf(d.cdf(T(x))), x, rtol=1e-9)
    ln = D.LogNormal(T(m), T(s))
    y = np.exp(x)
    close(ln.log_prob(T(y)), d.log_prob(T(x)).numpy() - x)
    close(ln.mean, np.exp(m + s ** 2 / 2))
    close(ln.variance, (np.exp(s ** 2) - 1) * np.exp(2 * m + s ** 2))
    df = np.array([3.0, 7.5])
    st = D.StudentT(T(df), T(m), T(s))
    z = (x - m) / s
    want = (LG((df + 1) / 2) - LG(df / 2) - 0.5 * np.log(df * np.pi) - np.log(s)
            - (df + 1) / 2 * np.log1p(z ** 2 / df))
    close(st.log_prob(T(x)), want)
    close(st.variance, s ** 2 * df / (df - 2))
    assert math.isnan(D.StudentT(T(0.8)).mean.item())
    assert D.StudentT(T(1.5)).variance.item() == math.inf


def test_gamma_family():
    a, b, x = np.array([0.7, 3.0]), np.array([2.0, 0.5]), np.array([0.4, 5.0])
    g = D.Gamma(T(a), T(b))
    close(g.log_prob(T(x)), a * np.log(b) + (a - 1) * np.log(x) - b * x - LG(a))
    close(g.entropy(), a - np.log(b) + LG(a) + (1 - a) * _psi(a), rtol=1e-7)
    close(g.mean, a / b)
    close(g.variance, a / b ** 2)
    close(g.mode, np.maximum((a - 1) / b, 0))
    close(D.Gamma(T(1.0), T(2.0)).cdf(T(0.7)), 1 - math.exp(-1.4))
    chi = D.Chi2(T(np.array([2.0, 5.0])))
    close(chi.log_prob(T(x)), D.Gamma(T(np.array([1.0, 2.5])), T(0.5)).log_prob(T(x)).numpy())
    e = D.Exponential(T(b))
    close(e.log_prob(T(x)), np.log(b) - b * x)
    close(e.cdf(T(x)), 1 - np.exp(-b * x))
    close(e.icdf(e.cdf(T(x))), x, rtol=1e-9)
    close(e.entropy(), 1 - np.log(b))


def test_beta_dirichlet():
    a, b, x = np.array([0.7, 3.0]), np.array([2.0, 0.5]), np.array([0.4, 0.9])
    be = D.Beta(T(a), T(b))
    lbeta = LG(a) + LG(b) - LG(a + b)
    close(be.log_prob(T(x)), (a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - lbeta)
    close(be.mean, a / (a + b))
    close(be.variance, a * b / ((a + b) ** 2 * (a + b + 1)))
    close(be.entropy(), lbeta - (a - 1) * _psi(a) - (b - 1) * _psi(b)
          + (a + b - 2) * _psi(a + b), rtol=1e-7)
    c = np.array([0.5, 2.0, 3.0])
    p = np.array([0.2, 0.3, 0.5])
    di = D.Dirichlet(T(c))
    close(di.log_prob(T(p)), ((c - 1) * np.log(p)).sum() + LG(c.sum()) - LG(c).sum())
    close(di.mean, c / c.sum())
    close(D.Dirichlet(T([3.0, 2.0, 2.0])).mode, [0.5, 0.25, 0.25])
    # all concentrations < 1: PyTorch's one-hot of argmax over NaNs, i.e. the first corner
    close(D.Dirichlet(T([0.3, 0.9, 0.2])).mode, [1.0, 0.0, 0.0])


def test_laplace_cauchy_uniform():
    m, s, x = np.array([0.5, -1.0]), np.array([2.0, 0.3]), np.array([1.0, -0.8])
    la = D.Laplace(T(m), T(s))
    close(la.log_prob(T(x)), -np.log(2 * s) - np.abs(x - m) / s)
    close(la.cdf(T(x)), np.where(x < m, 0.5 * np.exp((x - m) / s),
                                 1 - 0.5 * np.exp(-(x - m) / s)))
    close(la.icdf(la.cdf(T(x))), x, rtol=1e-9)
    close(la.entropy(), 1 + np.log(2 * s))
    ca = D.Cauchy(T(m), T(s))
    close(ca.log_prob(T(x)), -np.log(np.pi * s * (1 + ((x - m) / s) ** 2)))
    close(ca.cdf(T(x)), np.arctan((x - m) / s) / np.pi + 0.5)
    close(ca.entropy(), np.log(4 * np.pi * s))
    u = D.Uniform(T([0.0, -1.0]), T([2.0, 3.0]))
    close(u.log_prob(T([1.0, 0.0])), [-np.log(2), -np.log(4)])
    outside = D.Uniform(T([0.0, -1.0]), T([2.0, 3.0]), validate_args=False)
    assert outside.log_prob(T([2.5, 0.0]))[0].item() == -math.inf
    close(outside.cdf(T([1.0, 5.0])), [0.5, 1.0])
    close(u.variance, [4 / 12, 16 / 12])


def test_discrete():
    p = np.array([0.2, 0.7])
    be = D.Bernoulli(T(p))
    close(be.log_prob(T([1.0, 0.0])), [np.log(0.2), np.log(0.3)])
    close(be.entropy(), -(p * np.log(p) + (1 - p) * np.log1p(-p)))
    ge = D.Geometric(T(p))
    close(ge.log_prob(T([3.0, 0.0])), [3 * np.log(0.8) + np.log(0.2), np.log(0.7)])
    close(ge.mean, 1 / p - 1)
    close(ge.entropy(), -(p * np.log(p) + (1 - p) * np.log1p(-p)) / p)
    po = D.Poisson(T([0.5, 4.0]))
    k = np.array([2.0, 4.0])
    close(po.log_prob(T(k)), k * np.log([0.5, 4.0]) - [0.5, 4.0] - LG(k + 1))
    bi = D.Binomial(T([10.0, 5.0]), T(p))
    n = np.array([10.0, 5.0])
    close(bi.log_prob(T(k)), LG(n + 1) - LG(k + 1) - LG(n - k + 1) + k * np.log(p)
          + (n - k) * np.log1p(-p))
    close(D.Binomial(T(4.0), T(0.3)).entropy(),
          -sum(q * np.log(q) for q in [math.comb(4, i) * 0.3 ** i * 0.7 ** (4 - i)
                                        for i in range(5)]))
    probs = np.array([0.2, 0.3, 0.5])
    cat = D.Categorical(T(probs * 4))              # unnormalised
    close(cat.probs, probs)
    close(cat.log_prob(T(2.0)), np.log(0.5))
    close(cat.entropy(), -(probs * np.log(probs)).sum())
    mn = D.Multinomial(6, T(probs))
    counts = np.array([1.0, 2.0, 3.0])
    close(mn.log_prob(T(counts)), LG(7) - LG(counts + 1).sum() + (counts * np.log(probs)).sum())
    close(mn.mean, 6 * probs)
    oh = D.OneHotCategorical(T(probs))
    close(oh.log_prob(T([0.0, 1.0, 0.0])), np.log(0.3))


def test_multivariate_normals():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((3, 3))
    cov = A @ A.T + np.eye(3)
    m, x = np.array([0.5, -1.0, 0.0]), np.array([0.1, 0.2, 0.3])
    diff = x - m
    want = -0.5 * (3 * np.log(2 * np.pi) + np.linalg.slogdet(cov)[1]
                   + diff @ np.linalg.solve(cov, diff))
    for kw in ({"covariance_matrix": T(cov)}, {"precision_matrix": T(np.linalg.inv(cov))},
               {"scale_tril": T(np.linalg.cholesky(cov))}):
        mvn = D.MultivariateNormal(T(m), **kw)
        close(mvn.log_prob(T(x)), want, rtol=1e-9)
        close(mvn.covariance_matrix, cov, rtol=1e-9)
        close(mvn.precision_matrix, np.linalg.inv(cov), rtol=1e-9)
        close(mvn.entropy(), 0.5 * (3 * (1 + np.log(2 * np.pi)) + np.linalg.slogdet(cov)[1]))
        close(mvn.variance, np.diag(cov), rtol=1e-9)
    W, dg = rng.standard_normal((3, 2)), np.array([0.5, 1.0, 2.0])
    lr = D.LowRankMultivariateNormal(T(m), T(W), T(dg))
    full = D.MultivariateNormal(T(m), T(W @ W.T + np.diag(dg)))
    close(lr.log_prob(T(x)), full.log_prob(T(x)).numpy(), rtol=1e-9)
    close(lr.entropy(), full.entropy().numpy(), rtol=1e-9)
    close(lr.covariance_matrix, W @ W.T + np.diag(dg))
    close(lr.precision_matrix, np.linalg.inv(W @ W.T + np.diag(dg)), rtol=1e-9)
    close(lr.scale_tril, np.linalg.cholesky(W @ W.T + np.diag(dg)), rtol=1e-9)
    # batched values against a batched distribution: sample dims become solve columns
    xs = rng.standard_normal((4, 2, 3))
    mvn = D.MultivariateNormal(T(np.zeros((2, 3))), T(np.stack([cov, np.eye(3)])))
    got = mvn.log_prob(T(xs)).numpy()
    ref = np.array([[D.MultivariateNormal(T(np.zeros(3)), T([cov, np.eye(3)][j]))
                     .log_prob(T(xs[i, j])).item() for j in range(2)] for i in range(4)])
    close(got, ref, rtol=1e-9)


def test_independent_and_relaxed():
    m, s = np.zeros((2, 3)), np.ones((2, 3))
    ind = D.Independent(D.Normal(T(m), T(s)), 1)
    assert tuple(ind.batch_shape) == (2,) and tuple(ind.event_shape) == (3,)
    x = np.arange(6.0).reshape(2, 3) / 6
    close(ind.log_prob(T(x)), D.Normal(T(m), T(s)).log_prob(T(x)).numpy().sum(-1))
    close(ind.entropy(), 3 * 0.5 * np.log(2 * np.pi * np.e) * np.ones(2))
    assert repr(ind).startswith("Independent(Normal(")
    # binary Concrete density (Maddison et al. 2017, eq. 21)
    temp, p, y = 0.7, 0.3, 0.6
    a = p / (1 - p)
    dens = (temp * a * y ** (-temp - 1) * (1 - y) ** (-temp - 1)
            / (a * y ** -temp + (1 - y) ** -temp) ** 2)
    rb = D.RelaxedBernoulli(T(temp), T(p))
    close(rb.log_prob(T(y)), np.log(dens), rtol=1e-9)
    # Concrete density over the simplex: (n-1)! T^(n-1) prod(a_i y_i^(-T-1)) / (sum a_i y_i^-T)^n
    probs, y3 = np.array([0.2, 0.3, 0.5]), np.array([0.1, 0.6, 0.3])
    dens = (math.factorial(2) * temp ** 2 * np.prod(probs * y3 ** (-temp - 1))
            / (probs * y3 ** -temp).sum() ** 3)
    ro = D.RelaxedOneHotCategorical(T(temp), T(probs))
    close(ro.log_prob(T(y3)), np.log(dens), rtol=1e-9)


def test_extra_families():
    x = np.array([0.4, 2.5])
    s = np.array([1.0, 2.0])
    close(D.HalfNormal(T(s)).log_prob(T(x)),
          np.log(2) - 0.5 * (x / s) ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi))
    close(D.HalfCauchy(T(s)).log_prob(T(x)), np.log(2 / (np.pi * s * (1 + (x / s) ** 2))))
    loc = np.array([0.3, -1.0])
    z = (x - loc) / s
    close(D.Gumbel(T(loc), T(s)).log_prob(T(x)), -np.log(s) - z - np.exp(-z))
    close(D.Gumbel(T(loc), T(s)).mean, loc + s * EULER)
    a = np.array([3.0, 1.5])
    close(D.Pareto(T([0.2, 1.0]), T(a)).log_prob(T(x)),
          np.log(a) + a * np.log([0.2, 1.0]) - (a + 1) * np.log(x))
    k = np.array([1.5, 0.7])
    close(D.Weibull(T(s), T(k)).log_prob(T(x)),
          np.log(k / s) + (k - 1) * np.log(x / s) - (x / s) ** k, rtol=1e-9)
    close(D.Weibull(T(s), T(k)).mean, s * np.exp(LG(1 + 1 / k)))
    c1, c0, u = np.array([0.7, 2.0]), np.array([1.5, 3.0]), np.array([0.3, 0.6])
    close(D.Kumaraswamy(T(c1), T(c0)).log_prob(T(u)),
          np.log(c1 * c0) + (c1 - 1) * np.log(u) + (c0 - 1) * np.log1p(-u ** c1), rtol=1e-9)
    close(D.Kumaraswamy(T(2.0), T(3.0)).mode, (1 / 5) ** 0.5)
    c, r = np.array([1.5, 5.5]), np.array([1.0, 2.0])
    close(D.InverseGamma(T(c), T(r)).log_prob(T(x)),
          c * np.log(r) - LG(c) - (c + 1) * np.log(x) - r / x, rtol=1e-9)
    d1, d2 = np.array([1.0, 5.0]), np.array([3.0, 6.0])
    beta_fn = np.exp(LG(d1 / 2) + LG(d2 / 2) - LG((d1 + d2) / 2))
    close(D.FisherSnedecor(T(d1), T(d2)).log_prob(T(x)),
          np.log(np.sqrt((d1 * x) ** d1 * d2 ** d2 / (d1 * x + d2) ** (d1 + d2))
                 / (x * beta_fn)))
    n, p, kk = np.array([3.0, 0.5]), np.array([0.3, 0.6]), np.array([2.0, 4.0])
    close(D.NegativeBinomial(T(n), T(p)).log_prob(T(kk)),
          LG(kk + n) - LG(kk + 1) - LG(n) + n * np.log1p(-p) + kk * np.log(p))
    gp = D.GeneralizedPareto(T([0.0, 0.0]), T([1.0, 2.0]), T([0.3, 0.0]))
    close(gp.log_prob(T(x)), [-(1 / 0.3 + 1) * np.log1p(0.3 * 0.4), -np.log(2) - 2.5 / 2])
    close(gp.cdf(T(x)), [1 - (1 + 0.3 * 0.4) ** (-1 / 0.3), 1 - np.exp(-2.5 / 2)])


@pytest.mark.parametrize("make,lo,hi", [
    (lambda: D.ContinuousBernoulli(T([0.2, 0.5, 0.9])), 0.0, 1.0),
    (lambda: D.Kumaraswamy(T([0.7, 2.0]), T([1.5, 3.0])), 0.0, 1.0),
    (lambda: D.Weibull(T([1.0, 2.0]), T([1.5, 2.7])), 0.0, 40.0),
    (lambda: D.Gumbel(T([0.3, -1.0]), T([0.8, 1.7])), -15.0, 60.0),
    (lambda: D.HalfNormal(T([0.8, 1.7])), 0.0, 20.0),
])
def test_densities_integrate_to_one_with_their_mean(make, lo, hi):
    """Midpoint-rule integrals of exp(log_prob) and x exp(log_prob) over the support."""
    d = make()
    n = 200000
    grid = lo + (hi - lo) * (np.arange(n) + 0.5) / n
    shape = (n,) + (1,) * len(d.batch_shape)
    dens = np.exp(d.log_prob(T(grid.reshape(shape))).numpy())
    width = (hi - lo) / n
    np.testing.assert_allclose(dens.sum(0) * width, 1.0, rtol=2e-4)
    np.testing.assert_allclose((dens * grid.reshape(shape)).sum(0) * width, d.mean.numpy(),
                               rtol=2e-4, atol=1e-6)
    cdf_mid = d.cdf(d.mean).numpy() if hasattr(d, "cdf") else None
    if cdf_mid is not None:
        below = (dens * (grid.reshape(shape) <= d.mean.numpy())).sum(0) * width
        np.testing.assert_allclose(cdf_mid, below, atol=2e-4)


def test_von_mises_lkj_wishart():
    loc, k, x = np.array([1.0, -2.0]), np.array([0.5, 5.0]), np.array([0.3, -2.5])
    vm = D.VonMises(T(loc), T(k))
    close(vm.log_prob(T(x)), k * np.cos(x - loc) - np.log(2 * np.pi * np.i0(k)), rtol=1e-6)
    nbtorch.manual_seed(0)
    s = vm.sample((20000,)).numpy()
    assert np.all((s >= -np.pi) & (s < np.pi))
    resultant = np.exp(1j * s).mean(0)
    np.testing.assert_allclose(np.angle(resultant), loc, atol=0.05)
    np.testing.assert_allclose(1 - np.abs(resultant), vm.variance.numpy(), atol=0.02)
    # LKJ in 2-D: the correlation r has density (1 - r**2)**(eta - 1) / (2**(2 eta - 1) B)
    for eta, r in ((0.5, 0.3), (2.0, -0.7)):
        L = T([[1.0, 0.0], [r, math.sqrt(1 - r * r)]])
        beta = math.exp(2 * math.lgamma(eta) - math.lgamma(2 * eta))
        want = (eta - 1) * math.log(1 - r * r) - (2 * eta - 1) * math.log(2) - math.log(beta)
        assert D.LKJCholesky(2, T(eta)).log_prob(L).item() == pytest.approx(want, rel=1e-10)
    # a 1 x 1 Wishart(nu, s) is s * Chi2(nu) = Gamma(nu / 2, 1 / (2 s))
    w = D.Wishart(T([3.0, 5.5]), covariance_matrix=T([[[2.0]], [[0.5]]]))
    g = D.Gamma(T([1.5, 2.75]), T([0.25, 1.0]))
    close(w.log_prob(T([[[1.3]], [[0.8]]])), g.log_prob(T([1.3, 0.8])).numpy(), rtol=1e-10)
    close(w.entropy(), g.entropy().numpy(), rtol=1e-10)
    close(w.mean[:, 0, 0], g.mean.numpy())
    close(w.variance[:, 0, 0], g.variance.numpy())
