"""kernels/cpu/copy_threads.py: large dense copies and fills split over the spinning
helpers write the same bytes as one thread's."""
import numpy as np
import pytest

import nbtorch
from nbtorch.kernels.cpu import copy_threads, spin_threads, workers

pytestmark = pytest.mark.skipif(not spin_threads.SUPPORTED, reason="no spinning helpers")


@pytest.fixture(params=[False, True], ids=["here", "split"])
def split(request, monkeypatch):
    monkeypatch.setattr(workers, "use_helpers", lambda key: request.param)
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    return request.param


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.uint8, np.bool_])
def test_copy_and_fill_write_every_byte(split, dtype):
    n = copy_threads.SPLIT_MIN_BYTES // np.dtype(dtype).itemsize + 13
    src = (np.random.default_rng(0).standard_normal(n) * 100).astype(dtype)
    dst = np.zeros(n + 2, dtype)
    assert copy_threads.copy_bytes(src, dst[1:-1])
    assert np.array_equal(dst[1:-1], src) and dst[0] == 0 and dst[-1] == 0
    value = dst.dtype.type(7 if dtype is not np.bool_ else True)
    assert copy_threads.fill_bits(dst[1:-1], value)
    assert np.all(dst[1:-1] == value) and dst[0] == 0 and dst[-1] == 0


def test_small_arrays_are_left_to_one_thread(split):
    a = np.ones(1000, np.float32)
    assert not copy_threads.copy_bytes(a, a.copy())
    assert not copy_threads.fill_bits(a, np.float32(0))


def test_tensor_fills_and_clones_on_the_split_path(split):
    z = nbtorch.zeros(1024, 1024)
    assert not z.numpy().any()
    f = nbtorch.full((600, 1000), -2.5, dtype=nbtorch.float64)
    assert np.all(f.numpy() == -2.5)
    x = nbtorch.randn(1024, 512)
    np.testing.assert_array_equal(x.clone().numpy(), x.numpy())
    np.testing.assert_array_equal(x.t().clone().numpy(), x.numpy().T)
