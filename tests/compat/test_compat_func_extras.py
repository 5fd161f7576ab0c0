"""torch.func.linearize / functionalize / replace_all_batch_norm_modules_ as the functorch
tutorials call them."""
import numpy as np
import pytest

import nbtorch
from nbtorch import nn
from nbtorch.func import functionalize, linearize, replace_all_batch_norm_modules_, vmap


def test_linearize_gives_jvp_of_each_tangent():
    x = nbtorch.tensor([0.1, 0.5, 2.0], dtype=nbtorch.float64)
    out, jvp_fn = linearize(lambda a: a.sin() * a, x)
    np.testing.assert_allclose(out, np.sin(x.numpy()) * x.numpy())
    t = nbtorch.tensor([1.0, -2.0, 0.5], dtype=nbtorch.float64)
    want = (np.cos(x.numpy()) * x.numpy() + np.sin(x.numpy())) * t.numpy()
    np.testing.assert_allclose(jvp_fn(t), want, rtol=1e-12)
    out, jvp_fn = linearize(lambda a, b: (a * b, a + b), x, x * 2)
    p, s = jvp_fn(t, t)
    np.testing.assert_allclose(p, (3 * x * t).numpy(), rtol=1e-12)
    np.testing.assert_allclose(s, (2 * t).numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="doesn't match the shape"):
        jvp_fn(t[:2], t)


def test_functionalize_keeps_values_and_batch_norm_replacement_runs_under_vmap():
    def f(a):
        b = a.clone()
        b.add_(1)
        return b * 2
    x = nbtorch.arange(3.0)
    np.testing.assert_allclose(functionalize(f)(x), [2.0, 4.0, 6.0])
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    assert replace_all_batch_norm_modules_(net) is net
    bn = net[1]
    assert bn.running_mean is None and not bn.track_running_stats
    out = vmap(net)(nbtorch.randn(2, 5, 3))
    assert out.shape == (2, 5, 4)
    np.testing.assert_allclose(out.mean(1).detach(), np.zeros((2, 4)), atol=1e-5)
