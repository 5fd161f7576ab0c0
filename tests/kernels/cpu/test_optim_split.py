"""kernels/cpu/optim_split.py: Adam/AdamW updates split over the spinning helpers give the
serial kernel's bits, and the cases it does not take (amsgrad, small, OpenMP-sized) go
to optim_adam's chooser."""
import numpy as np
import pytest

import nbtorch
from nbtorch.kernels.cpu import optim_adam, optim_split, spin_threads, workers

N = optim_split.MIN_SIZE * 3 + 37       # not a multiple of a chunk's alignment


def _state(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    p, g, m, v = (rng.standard_normal(n).astype(dtype) for _ in range(4))
    g[:5] = (0.0, -0.0, 1e-30, 3e4, np.nan)         # zeros, tiny, large, NaN
    return [p, g, m, np.abs(v)]


@pytest.fixture
def helpers(monkeypatch):
    """Every call split (as on a machine with an idle second core); the split count."""
    if not spin_threads.SUPPORTED:
        pytest.skip("no spinning helpers on this platform")
    ran = []
    run = spin_threads.run_arrays
    monkeypatch.setattr(spin_threads, "run_arrays", lambda *a, **k: ran.append(1) or run(*a, **k))
    monkeypatch.setattr(workers, "use_helpers", lambda key: True)
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    return ran


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("maximize,decoupled,weight_decay",
                         [(False, False, 0.0), (True, False, 0.01), (False, True, 0.1)])
def test_split_updates_give_the_serial_kernels_bits(dtype, maximize, decoupled, weight_decay,
                                                    helpers):
    want, got = _state(N, dtype), _state(N, dtype)
    for step in (1, 2, 7):
        args = (None, 1e-3, 0.9, 0.999, 1e-8, weight_decay, step, False, maximize, decoupled)
        decay, step_size, bc2_sqrt = optim_adam.adam_scalars(1e-3, 0.9, 0.999, weight_decay,
                                                             float(step), decoupled)
        optim_adam.adam_step_serial(*want, optim_adam._or_unused(None, want[0]), decay,
                                    weight_decay, 0.9, 0.999, 1e-8, step_size, bc2_sqrt,
                                    False, maximize, decoupled)
        optim_split.adam_step(*got, *args)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    assert len(helpers) == 3


def test_backed_off_calls_run_the_serial_kernel_and_give_its_pace(monkeypatch):
    monkeypatch.setattr(workers, "use_helpers", lambda key: False)
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    paced = []
    monkeypatch.setattr(workers, "record_serial", lambda key, s, n: paced.append(n))
    want, got = _state(N, np.float32), _state(N, np.float32)
    optim_adam.adam_step(*want, None, 1e-3, 0.9, 0.999, 1e-8, 0.0, 1, False, False, False)
    optim_split.adam_step(*got, None, 1e-3, 0.9, 0.999, 1e-8, 0.0, 1, False, False, False)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)
    assert paced == [N]


@pytest.mark.parametrize("n,amsgrad", [(N, True), (optim_split.MIN_SIZE - 1, False)])
def test_amsgrad_and_small_updates_go_to_the_chooser(n, amsgrad, helpers):
    want, got = _state(n, np.float32), _state(n, np.float32)
    vmax = [np.zeros(n, np.float32), np.zeros(n, np.float32)]
    for step in (1, 2):
        optim_adam.adam_step(*want, vmax[0] if amsgrad else None, 1e-3, 0.9, 0.999, 1e-8, 0.0,
                             step, amsgrad, False, False)
        optim_split.adam_step(*got, vmax[1] if amsgrad else None, 1e-3, 0.9, 0.999, 1e-8,
                              0.0, step, amsgrad, False, False)
    for a, b in zip(want + vmax[:1], got + vmax[1:]):
        np.testing.assert_array_equal(a, b)
    assert helpers == []


def test_the_optimizers_adam_and_adamw_take_the_split_path(helpers):
    def run(cls, split):
        nbtorch.manual_seed(0)
        w = nbtorch.nn.Parameter(nbtorch.randn(300, 200))
        opt = cls([w], lr=1e-2, weight_decay=0.05)
        for _ in range(3):
            w.grad = nbtorch.ones_like(w) * 0.3 - w.detach() * 0.1
            if split:
                opt.step()
            else:
                optim_split.MIN_SIZE, saved = 1 << 40, optim_split.MIN_SIZE
                try:
                    opt.step()
                finally:
                    optim_split.MIN_SIZE = saved
        return w.detach().numpy()
    for cls in (nbtorch.optim.Adam, nbtorch.optim.AdamW):
        before = len(helpers)
        np.testing.assert_array_equal(run(cls, True), run(cls, False))
        assert len(helpers) == before + 3
