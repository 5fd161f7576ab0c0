"""DataLoader: batching, shuffling, option errors, and real worker processes.

Worker tests use tiny datasets and 2 workers; every loader that could hang is given a
``timeout`` so a bug fails the test instead of stalling the suite.
"""
import os
import signal
import time

import numpy as np
import pytest

import nbtorch
from nbtorch.utils.data import (
    BatchSampler, DataLoader, Dataset, IterableDataset, SequentialSampler, TensorDataset,
    get_worker_info,
)

SAFETY = 60  # seconds: a loader that waits longer than this has hung


class Numbers(Dataset):
    """Sample ``i`` is ``i``; optionally fails (or dies) at one index inside a worker."""

    def __init__(self, n, fail_at=None, die_at=None, sleep_at=None):
        self.n, self.fail_at, self.die_at, self.sleep_at = n, fail_at, die_at, sleep_at

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise ValueError(f"sample {i} is broken")
        if i == self.die_at and get_worker_info() is not None:
            os._exit(7)
        if i == self.sleep_at:
            time.sleep(1.0)
        return i


class WhoAmI(Dataset):
    """Sample ``i`` describes the process that loaded it."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        info = get_worker_info()
        if info is None:
            return {"index": i, "id": -1, "num_workers": 0, "seed": 0, "pid": os.getpid()}
        return {"index": i, "id": info.id, "num_workers": info.num_workers,
                "seed": info.seed % 2 ** 62, "pid": os.getpid()}


class ShardedStream(IterableDataset):
    """Yields 0..n-1, split across workers by their id."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


class UnshardedStream(IterableDataset):
    def __iter__(self):
        return iter(range(3))


def values(loader):
    return [batch.tolist() for batch in loader]


# ---- single process -----------------------------------------------------------------

def test_batches_in_order_with_a_short_last_batch():
    assert values(DataLoader(Numbers(7), batch_size=3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert values(DataLoader(Numbers(7), batch_size=3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(DataLoader(Numbers(7), batch_size=3)) == 3
    assert len(DataLoader(Numbers(7), batch_size=3, drop_last=True)) == 2


def test_tensor_dataset_batches():
    x = nbtorch.arange(10).float().reshape(5, 2)
    y = nbtorch.arange(5)
    batches = list(DataLoader(TensorDataset(x, y), batch_size=2))
    assert [tuple(bx.shape) for bx, _ in batches] == [(2, 2), (2, 2), (1, 2)]
    assert batches[1][1].tolist() == [2, 3]


def test_batch_size_none_converts_single_samples():
    loader = DataLoader([np.arange(2), np.arange(2) + 2], batch_size=None)
    batches = list(loader)
    assert len(loader) == 2
    assert isinstance(batches[0], nbtorch.Tensor) and batches[1].tolist() == [2, 3]


def test_shuffle_is_reproducible_with_a_generator_and_changes_each_epoch():
    def order(seed):
        loader = DataLoader(Numbers(20), batch_size=5, shuffle=True,
                            generator=nbtorch.Generator().manual_seed(seed))
        return values(loader), values(loader)

    epoch1, epoch2 = order(0)
    again1, again2 = order(0)
    assert (epoch1, epoch2) == (again1, again2)
    assert epoch1 != epoch2
    assert sorted(sum(epoch1, [])) == list(range(20))
    assert order(1)[0] != epoch1


def test_shuffle_follows_the_global_seed():
    nbtorch.manual_seed(5)
    first = values(DataLoader(Numbers(20), batch_size=4, shuffle=True))
    nbtorch.manual_seed(5)
    assert values(DataLoader(Numbers(20), batch_size=4, shuffle=True)) == first


def test_custom_sampler_batch_sampler_and_collate_fn():
    loader = DataLoader(Numbers(5), sampler=[4, 3, 2, 1, 0], batch_size=2)
    assert values(loader) == [[4, 3], [2, 1], [0]]
    loader = DataLoader(Numbers(6), batch_sampler=[[5, 0], [1, 2, 3]])
    assert values(loader) == [[5, 0], [1, 2, 3]] and len(loader) == 2
    loader = DataLoader(Numbers(4), batch_size=2, collate_fn=lambda batch: sum(batch))
    assert list(loader) == [1, 5]


def test_dataset_errors_propagate_in_the_main_process():
    with pytest.raises(ValueError, match="sample 2 is broken"):
        list(DataLoader(Numbers(4, fail_at=2), batch_size=2))


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_workers=-1), "num_workers option should be non-negative"),
    (dict(timeout=-1), "timeout option should be non-negative"),
    (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing"),
    (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
    (dict(shuffle=True, sampler=[0, 1]), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
    (dict(batch_sampler=[[0]], drop_last=True), "batch_sampler option is mutually exclusive"),
    (dict(batch_sampler=[[0]], sampler=[0]), "batch_sampler option is mutually exclusive"),
    (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
    (dict(batch_size=0), "batch_size should be a positive integer value"),
    (dict(multiprocessing_context="fork"), "multiprocessing_context can only be used with"),
    (dict(num_workers=1, multiprocessing_context="teleport"), "should specify a valid start method"),
])
def test_option_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(Numbers(4), **kwargs)


def test_iterable_dataset_option_errors():
    for name, value in (("shuffle", True), ("sampler", [0]), ("batch_sampler", [[0]])):
        with pytest.raises(ValueError, match=f"expected unspecified {name} option"):
            DataLoader(UnshardedStream(), **{name: value})


def test_attributes_are_frozen_after_init():
    loader = DataLoader(Numbers(4))
    with pytest.raises(ValueError, match="batch_size attribute should not be set after"):
        loader.batch_size = 3


def test_iterable_dataset_batches_and_length():
    loader = DataLoader(ShardedStream(7), batch_size=3)
    assert values(loader) == [[0, 1, 2], [3, 4, 5], [6]] and len(loader) == 3
    assert values(DataLoader(ShardedStream(7), batch_size=3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(TypeError):
        len(DataLoader(UnshardedStream()))


# ---- worker processes -----------------------------------------------------------------

@pytest.mark.parametrize("shuffle", [False, True])
def test_two_workers_give_exactly_the_batches_of_zero_workers(shuffle):
    def run(num_workers):
        loader = DataLoader(Numbers(23), batch_size=4, shuffle=shuffle, num_workers=num_workers,
                            generator=nbtorch.Generator().manual_seed(9), timeout=SAFETY)
        return values(loader)

    assert run(2) == run(0)


def test_persistent_workers_shuffle_like_zero_workers_over_epochs():
    def run(num_workers, persistent):
        loader = DataLoader(Numbers(11), batch_size=3, shuffle=True, num_workers=num_workers,
                            persistent_workers=persistent, timeout=SAFETY,
                            generator=nbtorch.Generator().manual_seed(4))
        return [values(loader) for _ in range(3)]

    expected = run(0, False)
    assert run(2, False) == expected and expected[0] != expected[1]
    # persistent workers draw their base seed once (PyTorch's order): the first epoch
    # matches, later ones see the generator one draw earlier than a fresh iterator would
    persistent = run(2, True)
    assert persistent[0] == expected[0] and persistent[1] != expected[1]


def test_workers_never_lose_or_duplicate_samples():
    loader = DataLoader(Numbers(101), batch_size=3, shuffle=True, num_workers=3,
                        prefetch_factor=1, timeout=SAFETY)
    seen = sum(values(loader), [])
    assert sorted(seen) == list(range(101))


def test_worker_info_and_seeds():
    loader = DataLoader(WhoAmI(), batch_size=None, num_workers=2, timeout=SAFETY)
    samples = list(loader)
    assert [s["index"] for s in samples] == list(range(6))  # batch_size=None: no collation
    ids = {s["id"] for s in samples}
    assert ids == {0, 1} and {s["num_workers"] for s in samples} == {2}
    seeds = {s["id"]: s["seed"] for s in samples}
    assert seeds[1] == seeds[0] + 1  # seed = base_seed + worker id
    assert {s["pid"] for s in samples}.isdisjoint({os.getpid()})
    assert get_worker_info() is None


def test_worker_init_fn_runs_in_each_worker():
    def init(worker_id):
        np.random.seed(100 + worker_id)

    class Draw(Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return (get_worker_info().id, np.random.randint(1000))

    loader = DataLoader(Draw(), batch_size=None, num_workers=2, worker_init_fn=init,
                        timeout=SAFETY)
    draws = [tuple(sample) for sample in loader]
    expected0 = np.random.RandomState(100).randint(1000)
    assert (0, expected0) in draws


def test_worker_init_fn_failure_is_reported():
    def init(worker_id):
        raise OSError(f"no device for worker {worker_id}")

    loader = DataLoader(Numbers(4), batch_size=2, num_workers=1, worker_init_fn=init,
                        timeout=SAFETY)
    with pytest.raises(OSError, match="(?s)Caught OSError in DataLoader worker process 0.*no device for worker 0"):
        list(loader)


def test_worker_info_is_read_only():
    class Probe(Dataset):
        def __len__(self):
            return 1

        def __getitem__(self, i):
            try:
                get_worker_info().id = 5
            except RuntimeError as error:
                return str(error)
            return "assigned"

    loader = DataLoader(Probe(), batch_size=None, num_workers=1, timeout=SAFETY)
    assert list(loader) == ["Cannot assign attributes to WorkerInfo objects"]


def test_worker_exception_carries_the_worker_traceback():
    loader = DataLoader(Numbers(8, fail_at=5), batch_size=2, num_workers=2, timeout=SAFETY)
    iterator = iter(loader)
    assert next(iterator).tolist() == [0, 1]
    assert next(iterator).tolist() == [2, 3]
    with pytest.raises(ValueError) as error:
        next(iterator)
    message = str(error.value)
    assert "Caught ValueError in DataLoader worker process" in message
    assert "Traceback" in message and "__getitem__" in message and "sample 5 is broken" in message
    assert next(iterator).tolist() == [6, 7]  # the iterator carries on, as PyTorch's does


def test_worker_exception_of_a_local_class_arrives_as_runtime_error():
    class LocalError(Exception):
        pass

    class Broken(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            raise LocalError("only defined in this test")

    loader = DataLoader(Broken(), batch_size=1, num_workers=1, timeout=SAFETY)
    with pytest.raises(RuntimeError, match="(?s)Caught LocalError.*only defined in this test"):
        list(loader)


def test_a_dying_worker_raises_instead_of_hanging():
    loader = DataLoader(Numbers(12, die_at=5), batch_size=2, num_workers=2, timeout=SAFETY)
    started = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid \d+\) exited unexpectedly"):
        list(loader)
    assert time.monotonic() - started < SAFETY / 2


def test_a_killed_worker_raises_instead_of_hanging():
    loader = DataLoader(Numbers(40), batch_size=1, num_workers=2, timeout=SAFETY)
    iterator = iter(loader)
    next(iterator)
    victim = iterator._workers[0]
    os.kill(victim.pid, signal.SIGKILL)
    with pytest.raises(RuntimeError, match=f"pid {victim.pid}.*SIGKILL"):
        list(iterator)


def test_timeout_raises():
    loader = DataLoader(Numbers(4, sleep_at=0), batch_size=1, num_workers=1, timeout=0.2)
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.2 seconds"):
        next(iter(loader))


def test_unpicklable_batch_is_an_error_not_a_lost_sample():
    loader = DataLoader(Numbers(2), batch_size=1, num_workers=1, timeout=SAFETY,
                        collate_fn=lambda batch: (lambda: batch))
    with pytest.raises(Exception, match="while pickling a batch"):
        list(loader)


def test_workers_stop_after_break_and_at_the_end():
    loader = DataLoader(Numbers(20), batch_size=2, num_workers=2, timeout=SAFETY)
    iterator = iter(loader)
    next(iterator)
    workers = list(iterator._workers)
    del iterator
    assert not any(worker.is_alive() for worker in workers)
    iterator = iter(loader)
    list(iterator)
    assert not any(worker.is_alive() for worker in iterator._workers)


def test_persistent_workers_survive_epochs_and_an_early_break():
    loader = DataLoader(Numbers(10), batch_size=3, num_workers=2, persistent_workers=True,
                        timeout=SAFETY)
    first = values(loader)
    pids = [worker.pid for worker in loader._iterator._workers]
    for _ in loader:
        break
    assert values(loader) == first == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert [worker.pid for worker in loader._iterator._workers] == pids
    workers = loader._iterator._workers
    del loader
    assert not any(worker.is_alive() for worker in workers)


def test_iterable_dataset_sharded_across_workers():
    loader = DataLoader(ShardedStream(10), batch_size=2, num_workers=2, timeout=SAFETY)
    seen = sum(values(loader), [])
    assert sorted(seen) == list(range(10))


def test_iterable_dataset_without_sharding_repeats_per_worker():
    loader = DataLoader(UnshardedStream(), batch_size=None, num_workers=2, timeout=SAFETY)
    assert sorted(loader) == [0, 0, 1, 1, 2, 2]


def test_persistent_workers_restart_an_iterable_dataset():
    loader = DataLoader(ShardedStream(6), batch_size=2, num_workers=2, persistent_workers=True,
                        timeout=SAFETY)
    assert sorted(sum(values(loader), [])) == sorted(sum(values(loader), [])) == list(range(6))


def test_tensors_cross_the_process_boundary():
    x = nbtorch.arange(12).float().reshape(6, 2)
    loader = DataLoader(TensorDataset(x, nbtorch.arange(6)), batch_size=4, num_workers=2,
                        timeout=SAFETY)
    (bx, by), (cx, cy) = list(loader)
    assert bx.dtype == nbtorch.float32 and bx.tolist() == x[:4].tolist()
    assert cy.tolist() == [4, 5]


def test_spawn_start_method_works():
    loader = DataLoader(Numbers(5), batch_size=2, num_workers=1, timeout=SAFETY,
                        multiprocessing_context="spawn")
    assert values(loader) == [[0, 1], [2, 3], [4]]


def test_tensor_dataset_batches_gathered_at_once_equal_the_per_sample_path(monkeypatch):
    from nbtorch.utils.data import default_collate
    from nbtorch.utils.data.dataset import TensorDataset as TD
    x = nbtorch.randn(50, 3, 2)
    y = nbtorch.arange(50)
    h = nbtorch.randn(50, 4).to(nbtorch.float16)
    ds = TD(x, y, h)
    calls = []
    original = TD._collated_batch
    monkeypatch.setattr(TD, "_collated_batch",
                        lambda self, idx: calls.append(1) or original(self, idx))
    fast = list(DataLoader(ds, batch_size=8, shuffle=True,
                           generator=nbtorch.Generator().manual_seed(3)))
    assert len(calls) == len(fast) == 7
    slow = list(DataLoader(ds, batch_size=8, shuffle=True, collate_fn=lambda b: default_collate(b),
                           generator=nbtorch.Generator().manual_seed(3)))
    assert len(calls) == 7                          # a custom collate_fn gets the samples
    for a, b in zip(fast, slow):
        assert isinstance(a, list) and len(a) == 3
        for u, v in zip(a, b):
            assert u.dtype == v.dtype and u.shape == v.shape and u.is_contiguous()
            assert nbtorch.equal(u, v)


def test_tensor_dataset_gather_keeps_out_subclasses_grads_and_bad_indices():
    from nbtorch.utils.data.dataset import TensorDataset as TD

    class Doubled(TD):
        def __getitem__(self, i):
            return tuple(t[i] * 2 for t in self.tensors)

    x = nbtorch.arange(10.)
    assert Doubled(x)._collated_batch([1, 2]) is None
    assert next(iter(DataLoader(Doubled(x), batch_size=2)))[0].tolist() == [0., 2.]
    w = nbtorch.ones(10, requires_grad=True)
    assert TD(w)._collated_batch([0, 1]) is None
    assert TD(x)._collated_batch([3, 10]) is None                 # out of range: per sample
    with pytest.raises(IndexError, match="out of bounds"):
        next(iter(DataLoader(TD(x), batch_sampler=[[3, 10]])))
