"""Sampling dispatches through the registry; CPU draws stay NumPy's PCG64 stream.

The values below are what nbtorch drew before sampling went through the registry
(NumPy's generator calls in C order, cast to the dtype), so a seed still
reproduces old runs on the CPU.
"""
import numpy as np
import pytest

import nbtorch


def _pcg(seed):
    return np.random.Generator(np.random.PCG64(seed))


def test_samplers_are_registry_ops_on_every_device():
    for op in ("uniform_", "normal_", "bernoulli_", "random_"):
        assert op in nbtorch.registered_ops("cpu")


@pytest.mark.parametrize("dtype", [nbtorch.float32, nbtorch.float64, nbtorch.float16])
def test_cpu_values_follow_numpys_stream(dtype):
    nbtorch.manual_seed(11)
    r = _pcg(11)
    npd = dtype.np
    assert np.array_equal(nbtorch.rand(3, 4, dtype=dtype).numpy(),
                          r.random((3, 4)).astype(npd))
    assert np.array_equal(nbtorch.randn(5, dtype=dtype).numpy(),
                          r.standard_normal((5,)).astype(npd))
    assert np.array_equal(nbtorch.normal(2.0, 3.0, (4,), dtype=dtype).numpy(),
                          r.normal(2.0, 3.0, (4,)).astype(npd))
    assert np.array_equal(nbtorch.randint(-3, 9, (6,)).numpy(), r.integers(-3, 9, (6,)))
    x = nbtorch.zeros(4, 6, dtype=dtype)
    x[:, ::2].uniform_(5.0, 6.0)                          # strided target
    want = np.zeros((4, 6), npd)
    want[:, ::2] = r.uniform(5.0, 6.0, (4, 3))
    assert np.array_equal(x.numpy(), want)
    assert np.array_equal(nbtorch.empty(7, dtype=dtype).normal_(1.0, 0.5).numpy(),
                          r.normal(1.0, 0.5, (7,)).astype(npd))
    p = nbtorch.tensor([0.1, 0.5, 0.9, 0.0, 1.0], dtype=dtype)
    assert np.array_equal(nbtorch.bernoulli(p).numpy(),
                          (r.random((5,)) < p.numpy()).astype(npd))
    assert np.array_equal(nbtorch.zeros(6, dtype=dtype).bernoulli_(0.3).numpy(),
                          (r.random((6,)) < 0.3).astype(npd))
    assert np.array_equal(nbtorch.zeros(3, dtype=dtype).random_(2, 9).numpy(),
                          r.integers(2, 9, (3,)).astype(npd))
    assert np.array_equal(nbtorch.zeros(3, dtype=nbtorch.int64).random_(7).numpy(),
                          r.integers(0, 7, (3,)))


def test_in_place_samplers_bump_the_version_once_and_check_leaves():
    x = nbtorch.zeros(4, 6)
    v = x._version
    x.uniform_()
    assert x._version == v + 1
    x[:, ::2].normal_()
    assert x._version == v + 2
    assert nbtorch.rand(3)._version == 0
    w = nbtorch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.uniform_()


def test_errors_and_empty_tensors():
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        nbtorch.zeros(3).normal_(0.0, -1.0)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        nbtorch.zeros(3).random_(5, 5)
    with pytest.raises(RuntimeError, match="p_in >= 0"):
        nbtorch.bernoulli(nbtorch.tensor([0.5, 1.5]))
    state = nbtorch.get_rng_state()
    assert nbtorch.rand(0, 3).shape == (0, 3)
    assert nbtorch.bernoulli(nbtorch.zeros(0)).shape == (0,)
    assert nbtorch.get_rng_state().tolist() == state.tolist()     # nothing drawn


def test_dropout_masks_come_from_the_sampler():
    nbtorch.manual_seed(5)
    y = nbtorch.nn.functional.dropout(nbtorch.ones(1000), 0.25, training=True)
    nbtorch.manual_seed(5)
    keep = nbtorch.rand(1000) >= 0.25
    assert np.array_equal(y.numpy() != 0, keep.numpy())
