"""After the same manual_seed, distributions whose samplers are PyTorch's draws (multinomial,
exponential_, uniform_, cauchy_, normal_, bernoulli ...) give PyTorch's samples value for value.
(Gamma-family, Poisson and Binomial samplers are nbtorch's own: not compared here.)"""
import numpy as np
import pytest

import nbtorch
import nbtorch.distributions as D

CASES = {
    "Categorical": lambda m, t: m.Categorical(t([0.2, 0.5, 0.3])),
    "Categorical2d": lambda m, t: m.Categorical(t([[0.3, 0.7], [0.9, 0.1]])),
    "OneHotCategorical": lambda m, t: m.OneHotCategorical(t([0.2, 0.5, 0.3])),
    "Exponential": lambda m, t: m.Exponential(t([1.0, 2.0, 0.5])),
    "Laplace": lambda m, t: m.Laplace(t([0.0, 1.0, -1.0]), t([1.0, 2.0, 0.5])),
    "Cauchy": lambda m, t: m.Cauchy(t([0.0, 1.0, -1.0]), t([1.0, 2.0, 0.5])),
    "Normal": lambda m, t: m.Normal(t([0.0, 1.0, -1.0]), t([1.0, 2.0, 0.5])),
    "Bernoulli": lambda m, t: m.Bernoulli(t([0.3, 0.6, 0.9])),
    "Uniform": lambda m, t: m.Uniform(t([0.0, 1.0, -1.0]), t([1.0, 2.0, 0.5])),
    "Geometric": lambda m, t: m.Geometric(t([0.3, 0.6, 0.9])),
    "LogNormal": lambda m, t: m.LogNormal(t([0.0, 1.0, -1.0]), t([1.0, 2.0, 0.5])),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_samples_equal_pytorch(name):
    torch = pytest.importorskip("torch")
    import torch.distributions as TD
    got, want = [], []
    for module, lib, out in ((D, nbtorch, got), (TD, torch, want)):
        lib.manual_seed(7)
        dist = CASES[name](module, lambda v: lib.tensor(v))
        out.append(dist.sample().numpy())
        out.append(dist.sample((4,)).numpy())
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
