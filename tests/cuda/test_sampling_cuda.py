"""Gamma/Poisson/Binomial samplers on CUDA: the same per-element Philox streams as the CPU,
so a seed gives identical samples on both devices (tiny shapes for the simulator)."""
import numpy as np
import pytest

import nbtorch

pytestmark = pytest.mark.cuda


def _both(fn, *params):
    """fn's samples from the same seed, on the CPU and on CUDA."""
    out = []
    for dev in ("cpu", "cuda"):
        nbtorch.manual_seed(11)
        out.append(fn(*[p.to(dev) for p in params]).cpu().numpy())
    return out


def test_samplers_match_the_cpu():
    alpha = nbtorch.tensor([0.3, 1.0, 2.5, 40.0], dtype=nbtorch.float64)
    cpu, gpu = _both(nbtorch._standard_gamma, alpha)
    np.testing.assert_allclose(gpu, cpu, rtol=1e-12)
    rate = nbtorch.tensor([0.0, 0.5, 4.0, 25.0])
    cpu, gpu = _both(nbtorch.poisson, rate)
    np.testing.assert_array_equal(gpu, cpu)
    count = nbtorch.tensor([5.0, 30.0, 0.0, 200.0])
    prob = nbtorch.tensor([0.3, 0.5, 0.5, 0.8])
    cpu, gpu = _both(nbtorch.binomial, count, prob)
    np.testing.assert_array_equal(gpu, cpu)


def test_gamma_gradient_and_distributions_on_cuda():
    alpha = nbtorch.tensor([0.5, 3.0], dtype=nbtorch.float64)
    x = nbtorch.tensor([0.2, 2.5], dtype=nbtorch.float64)
    want = nbtorch._standard_gamma_grad(alpha, x).numpy()
    got = nbtorch._standard_gamma_grad(alpha.to("cuda"), x.to("cuda")).cpu().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)
    conc = nbtorch.tensor([1.5, 2.0], device="cuda", requires_grad=True)
    g = nbtorch.distributions.Gamma(conc, nbtorch.tensor([1.0, 2.0], device="cuda"))
    s = g.rsample((3,))
    assert s.device.type == "cuda" and tuple(s.shape) == (3, 2)
    s.sum().backward()
    assert conc.grad.device.type == "cuda" and bool((conc.grad.cpu() > 0).all())
