"""Kernels split over batch ranges give the same values whether the helper threads run
the ranges or back off (a busy machine): the partition never depends on the load."""
import numpy as np

import nbtorch
import nbtorch.nn.functional as F
from nbtorch.kernels.cpu import batch_threads, conv, pool, workers


def _conv_step():
    g = nbtorch.Generator().manual_seed(0)
    x = nbtorch.randn(16, 6, 12, 12, generator=g, requires_grad=True)
    w = nbtorch.randn(16, 6, 5, 5, generator=g, requires_grad=True)
    y = F.max_pool2d(F.conv2d(x, w, padding=2), 2)
    y.backward(nbtorch.ones_like(y))
    return [t.detach().numpy().copy() for t in (y, x.grad, w.grad)]


def test_conv_values_do_not_depend_on_the_helpers_back_off(monkeypatch):
    monkeypatch.setattr(conv, "BATCH_SPLIT_MIN_MACS", 0)     # split even this small step
    monkeypatch.setattr(pool, "SPLIT_MIN_WORK", 0)
    before = nbtorch.get_num_threads()
    try:
        nbtorch.set_num_threads(2)
        assert batch_threads.ranges(16, 1 << 30, 1) is not None
        monkeypatch.setattr(workers, "helpers_usable", lambda key=None: True)
        split = _conv_step()
        monkeypatch.setattr(workers, "helpers_usable", lambda key=None: False)
        backed_off = _conv_step()
    finally:
        nbtorch.set_num_threads(before)
    for a, b in zip(split, backed_off):
        assert np.array_equal(a, b)


def test_each_kind_of_split_call_backs_off_on_its_own(monkeypatch):
    monkeypatch.setattr(workers, "_BACKOFF", {"small conv": [100, 128, 0]})
    monkeypatch.setattr(workers, "_PACE", {"small conv": 1e-6, "big conv": 1e-6})
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    used = []
    monkeypatch.setattr(workers, "parallel_chunks",
                        lambda chunk, n, key=None, size=0: used.append(key) or
                        [chunk(k) for k in range(n)])
    parts = [(0, 1), (1, 2)]
    assert batch_threads.run(lambda a, b: a, parts, "big conv") == [0, 1]
    assert batch_threads.run(lambda a, b: a, parts, "small conv") == [0, 1]   # backed off
    assert used == ["big conv"]
