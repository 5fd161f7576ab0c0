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
