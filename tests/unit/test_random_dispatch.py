"""Sampling dispatches through the registry; the PCG64 engine, selected with
``nbtorch.random.use_generator("pcg64")``, keeps nbtorch's first CPU stream.

The values below are what nbtorch drew before sampling went through the registry
(NumPy's generator calls in C order, cast to the dtype), so under "pcg64" a seed
still reproduces old runs on the CPU. The default MT19937 stream (PyTorch's) is
tested in tests/random/.
"""
import numpy as np
import pytest

import nbtorch


@pytest.fixture
def pcg64():
    previous = nbtorch.random.use_generator("pcg64")
    yield
    nbtorch.random.use_generator(previous)


def _pcg(seed):
    return np.random.Generator(np.random.PCG64(seed))


def test_samplers_are_registry_ops_on_every_device():
    for op in ("uniform_", "normal_", "bernoulli_", "random_"):
        assert op in nbtorch.registered_ops("cpu")


@pytest.mark.parametrize("dtype", [nbtorch.float32, nbtorch.float64, nbtorch.float16])
def test_cpu_values_follow_numpys_stream(dtype, pcg64):
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
    # PyTorch's mask: Bernoulli(1 - p) draws divided by 1 - p
    nbtorch.manual_seed(5)
    y = nbtorch.nn.functional.dropout(nbtorch.ones(1000), 0.25, training=True)
    nbtorch.manual_seed(5)
    keep = nbtorch.empty(1000).bernoulli_(0.75)
    assert np.array_equal(y.numpy(), keep.div_(0.75).numpy())
