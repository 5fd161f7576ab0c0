"""The small unrecorded sum/mean path (`ops/reduction._small_sum`): the general path's
bits for every dim, keepdim and float dtype; everything else left to the general path."""
import numpy as np
import pytest

import nbtorch
from harness import awkward_floats
from nbtorch.ops import reduction

SHAPES = [(7,), (8, 16), (3, 5, 7), (2, 1, 9, 4), (1,), (300, 100)]


def _bits(t):
    return t.numpy().tobytes(), tuple(t.shape), t.dtype


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_small_sums_give_the_general_paths_bits(shape, dtype, name):
    n = int(np.prod(shape))
    x = nbtorch.tensor(awkward_floats(n, dtype, 3, specials=2).reshape(shape))
    fn = getattr(x, name)
    dims = [None] + list(range(-len(shape), len(shape)))
    for dim in dims:
        for keepdim in (False, True):
            every = tuple(range(len(shape))) if dim is None else (dim,)
            fast, general = fn(dim, keepdim=keepdim), fn(every, keepdim=keepdim)
            if dim is None and not keepdim:
                general = fn()
            assert _bits(fast) == _bits(general), (dim, keepdim)


def test_the_small_path_runs_and_steps_aside(monkeypatch):
    x = nbtorch.rand(8, 16)
    x.sum()                                          # loads the sum kernel
    calls = []
    real = reduction._small_sum
    monkeypatch.setattr(reduction, "_small_sum",
                        lambda *a: calls.append(a[1]) or real(*a))
    out = x.sum(-1)
    assert calls == [-1] and out.grad_fn is None
    w = nbtorch.rand(8, 16, requires_grad=True)      # recorded: the Function's node
    assert w.sum(1).grad_fn is not None and w.mean().grad_fn is not None
    assert reduction._small_sum(w, 1, False, False) is None
    with nbtorch.no_grad():
        assert reduction._small_sum(w, 1, False, False) is not None
    t = x.t()                                        # not C-contiguous
    assert reduction._small_sum(t, 0, False, False) is None
    np.testing.assert_allclose(t.sum(0).numpy(), x.numpy().sum(1), rtol=1e-6)
    i = nbtorch.arange(10)                           # integers sum to int64 elsewhere
    assert reduction._small_sum(i, 0, False, False) is None and i.sum().item() == 45
    big = nbtorch.rand(1 << 15)                      # past the threshold
    assert reduction._small_sum(big, 0, False, False) is None
    with pytest.raises(IndexError):
        x.sum(2)
    with pytest.raises(IndexError):
        x.mean(-3)


def test_the_threshold_stays_under_the_kernels_split_and_parallel_ones():
    from nbtorch.kernels.cpu import reduce, split_rows
    assert reduction._SMALL_SUM <= min(split_rows.SPIN_MIN_NUMEL, reduce.PARALLEL_MIN_NUMEL)


def test_a_replaced_sum_kernel_is_called_as_usual():
    from nbtorch import _registry
    x = nbtorch.rand(4, 4)
    x.sum()
    seen = []
    original = _registry.get_kernel("sum", "cpu")

    def mine(a3, out2, *args):
        seen.append(a3.shape)
        return original(a3, out2, *args)
    key = ("sum", "cpu")
    saved = _registry._KERNELS[key]
    _registry._KERNELS[key] = mine
    try:
        x.sum(1)
    finally:
        _registry._KERNELS[key] = saved
    assert seen == [(4, 4, 1)]
