"""CUDA random numbers: Philox kernels, reproducible from the shared generator."""
import numpy as np
import pytest

import nbtorch
from nbtorch.cuda import random as cuda_random

pytestmark = pytest.mark.cuda


def test_uniform_and_normal_are_reproducible_with_manual_seed():
    t = nbtorch.empty(257, device="cuda")
    nbtorch.manual_seed(7)
    a = cuda_random.uniform_(t).tolist()
    b = cuda_random.normal_(t, 1.0, 2.0).tolist()
    nbtorch.manual_seed(7)
    assert cuda_random.uniform_(t).tolist() == a
    assert cuda_random.normal_(t, 1.0, 2.0).tolist() == b
    assert cuda_random.uniform_(t).tolist() != a          # the next draw differs


def test_distributions_look_right():
    nbtorch.manual_seed(0)
    u = cuda_random.uniform_(nbtorch.empty(4000, dtype=nbtorch.float64, device="cuda"),
                             -1.0, 3.0).cpu().numpy()
    assert u.min() >= -1.0 and u.max() < 3.0
    assert abs(u.mean() - 1.0) < 0.1
    z = cuda_random.normal_(nbtorch.empty(4000, device="cuda"), 2.0, 0.5).cpu().numpy()
    assert abs(z.mean() - 2.0) < 0.05 and abs(z.std() - 0.5) < 0.05
    assert np.isfinite(z).all()


def test_strided_targets_and_errors():
    x = nbtorch.zeros(4, 6, device="cuda")
    cuda_random.uniform_(x[:, ::2], 5.0, 6.0)
    h = x.cpu().numpy()
    assert (h[:, 1::2] == 0).all() and (h[:, ::2] >= 5).all()
    with pytest.raises(RuntimeError, match="expects a CUDA tensor"):
        cuda_random.uniform_(nbtorch.zeros(3))
    with pytest.raises(RuntimeError, match="not implemented for integer"):
        cuda_random.normal_(nbtorch.zeros(3, dtype=nbtorch.int64, device="cuda"))


def test_sampling_ops_draw_with_philox_on_the_device():
    """rand/randn/normal_/uniform_ on CUDA run the Philox kernels (not a host draw copied
    over): the same seed gives the values of the Philox launchers themselves."""
    nbtorch.manual_seed(3)
    r = nbtorch.rand(5, 7, device="cuda")
    z = nbtorch.randn(33, dtype=nbtorch.float64, device="cuda")
    nbtorch.manual_seed(3)
    u = cuda_random.uniform_(nbtorch.empty(5, 7, device="cuda"))
    n = cuda_random.normal_(nbtorch.empty(33, dtype=nbtorch.float64, device="cuda"))
    assert r.tolist() == u.tolist() and z.tolist() == n.tolist()
    nbtorch.manual_seed(3)
    assert nbtorch.rand(5, 7).tolist() != r.tolist()          # the CPU draws PCG64 values


def test_randint_bernoulli_random_on_the_device():
    nbtorch.manual_seed(1)
    k = nbtorch.randint(-3, 4, (2000,), device="cuda")
    assert k.device.type == "cuda" and k.dtype == nbtorch.int64
    h = k.cpu().numpy()
    assert h.min() == -3 and h.max() == 3 and abs(h.mean()) < 0.3
    p = nbtorch.tensor([0.0, 1.0, 0.5], device="cuda").repeat(400)
    b = nbtorch.bernoulli(p).cpu().numpy().reshape(400, 3)
    assert (b[:, 0] == 0).all() and (b[:, 1] == 1).all() and 0.4 < b[:, 2].mean() < 0.6
    x = nbtorch.zeros(6, 8, device="cuda")
    x[:, ::2].bernoulli_(1.0)
    x[:, 1::2].random_(5, 6)
    assert (x.cpu().numpy() == np.tile([1.0, 5.0], (6, 4))).all()
    f = nbtorch.zeros(1000, dtype=nbtorch.float16, device="cuda").bernoulli_(0.25)
    assert 0.18 < float(f.float().mean()) < 0.32
    nbtorch.manual_seed(1)
    assert nbtorch.randint(-3, 4, (2000,), device="cuda").tolist() == k.tolist()


def test_dropout_mask_is_drawn_on_the_device():
    x = nbtorch.ones(4000, device="cuda")
    y = nbtorch.nn.functional.dropout(x, 0.5, training=True)
    kept = (y.cpu().numpy() != 0).mean()
    assert y.device.type == "cuda" and 0.45 < kept < 0.55
