"""nbtorch.multiprocessing against torch.multiprocessing (skipped without PyTorch)."""
import pickle

import pytest

import nbtorch
import nbtorch.multiprocessing as mp

from _mp_workers import exit_with, join_with_deadline, kill_self, raise_in

torch = pytest.importorskip("torch")
tmp = pytest.importorskip("torch.multiprocessing")


def test_same_names_and_strategies():
    assert set(tmp.__all__) <= set(mp.__all__)
    for name in ("spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
                 "ProcessExitedException"):
        assert hasattr(tmp, name) and hasattr(mp, name)
    assert mp.get_all_sharing_strategies() == tmp.get_all_sharing_strategies()
    assert mp.get_sharing_strategy() == tmp.get_sharing_strategy()
    for lib in (tmp, mp):
        with pytest.raises(AssertionError, match="invalid sharing strategy 'nope'"):
            lib.set_sharing_strategy("nope")


@pytest.mark.parametrize("lib", ["torch", "nbtorch"])
def test_same_sharing_semantics(lib):
    m = torch if lib == "torch" else nbtorch
    assert m.zeros(0).share_memory_().is_shared()
    t = m.zeros(4)
    v = t[1:]
    assert not t.is_shared() and t.share_memory_() is t and v.is_shared()
    linear = m.nn.Linear(2, 2)
    assert linear.share_memory() is linear and linear.weight.is_shared()
    assert not pickle.loads(pickle.dumps(t)).is_shared()       # plain pickle copies


def _failure(lib, fn, args, nprocs):
    with pytest.raises((lib.ProcessRaisedException, lib.ProcessExitedException)) as info:
        join_with_deadline(lib.start_processes(fn, args=args, nprocs=nprocs, join=False,
                                               start_method="fork"))
    return type(info.value).__name__, info.value.error_index, str(info.value).splitlines()


@pytest.mark.parametrize("fn,args,nprocs", [(exit_with, (3,), 1), (kill_self, (), 1),
                                            (raise_in, (1,), 2)])
def test_same_failures(fn, args, nprocs):
    ours, theirs = _failure(mp, fn, args, nprocs), _failure(tmp, fn, args, nprocs)
    if fn is not raise_in:
        assert ours[:2] == theirs[:2] and ours[2] == theirs[2]
        return
    name, index, lines = ours
    assert (name, index) == theirs[:2]
    assert lines[:3] == theirs[2][:3] and lines[-1] == theirs[2][-1] == "ValueError: boom in 1"
