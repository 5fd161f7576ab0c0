"""spawn / start_processes: Hogwild training through real `spawn`, and failures re-raised
with the child's traceback, exit code or signal (cheap `fork` children)."""
import warnings

import pytest

import nbtorch
import nbtorch.multiprocessing as mp
import nbtorch.nn.functional as F

from _mp_workers import (exit_with, hogwild_train, join_with_deadline as _join, kill_self,
                         raise_in, wait_then_return)


def _fork(fn, args=(), nprocs=1):
    """start_processes with cheap forked children, joined with a deadline."""
    _join(mp.start_processes(fn, args=args, nprocs=nprocs, join=False, start_method="fork"))


def test_hogwild_spawn():
    nbtorch.manual_seed(0)
    x = nbtorch.randn(256, 4)
    w_true = nbtorch.tensor([[1.0, -2.0, 0.5, 3.0]])
    y = x @ w_true.t() + 0.25
    model = nbtorch.nn.Linear(4, 1)
    model.share_memory()
    x.share_memory_(), y.share_memory_()
    counts_base = nbtorch.zeros(5, dtype=nbtorch.int64).share_memory_()
    counts = counts_base[1::2]                   # a strided view at offset 1
    warm = nbtorch.nn.Linear(4, 1)               # compile (or load) the kernels once, here
    F.mse_loss(warm(x[:16]), y[:16]).backward()
    nbtorch.optim.SGD(warm.parameters(), lr=0.1).step()
    before = model.weight.detach().clone()

    context = mp.spawn(hogwild_train, args=(model, x, y, counts, 150), nprocs=2, join=False)
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 2
    _join(context)

    assert counts_base.tolist() == [0, 150, 0, 150, 0]
    assert not nbtorch.equal(before, model.weight.detach())
    nbtorch.testing.assert_close(model.weight.detach(), w_true, rtol=0, atol=2e-2)
    nbtorch.testing.assert_close(model.bias.detach(), nbtorch.tensor([0.25]), rtol=0, atol=2e-2)


def test_child_exception_is_reraised_with_traceback():
    with pytest.raises(mp.ProcessRaisedException) as info:
        _fork(raise_in, (1,), nprocs=2)
    error = info.value
    assert error.error_index == 1 and isinstance(error.error_pid, int)
    assert "-- Process 1 terminated with the following error:" in str(error)
    assert "Traceback (most recent call last)" in str(error)
    assert 'raise ValueError(f"boom in {rank}")' in str(error)
    assert "ValueError: boom in 1" in str(error)


def test_exit_code_and_signal():
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3") \
            as info:
        _fork(exit_with, (3,))
    assert info.value.exit_code == 3 and info.value.signal_name is None
    with pytest.raises(mp.ProcessExitedException,
                       match="process 0 terminated with signal SIGKILL") as info:
        _fork(kill_self)
    assert info.value.exit_code == -9 and info.value.signal_name == "SIGKILL"


def test_join_timeout_and_spawn_method_warning():
    event = mp.get_context("fork").Event()
    context = mp.start_processes(wait_then_return, args=(event,), nprocs=2, join=False,
                                 start_method="fork")
    assert context.join(timeout=0.05) is False   # still running
    event.set()
    _join(context)
    assert context.join() is True                # joining again is harmless
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        assert mp.spawn(exit_with, args=(0,), nprocs=0, start_method="fork") is None
