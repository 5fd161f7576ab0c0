"""Samplers, splits, loaders and datasets against PyTorch 2.13: the same seed gives
the same order, and bad input the same exception type and message."""
import collections
import math
import os
import warnings

import numpy as np
import pytest

import nbtorch

torch = pytest.importorskip("torch")


def _both(program):
    want, got = program(torch), program(nbtorch)
    assert got == want


def _error(program):
    """(type name, message) of what `program(T)` raises."""
    out = []
    for T in (torch, nbtorch):
        with pytest.raises(Exception) as info:
            program(T)
        out.append((type(info.value).__name__, str(info.value)))
    return out


def test_random_samplers_draw_pytorchs_streams():
    def program(T):
        d, out = T.utils.data, []
        for kw in [dict(), dict(replacement=True, num_samples=70), dict(num_samples=25)]:
            s = d.RandomSampler(range(10), generator=T.Generator().manual_seed(3), **kw)
            out += [list(s), list(s)]
        T.manual_seed(5)
        out.append(list(d.RandomSampler(range(10))))
        out.append(list(d.SubsetRandomSampler([5, 9, 2, 11], T.Generator().manual_seed(7))))
        out.append(list(d.WeightedRandomSampler([0.1, 0.9, 0.4, 3.0], 12,
                                                generator=T.Generator().manual_seed(2))))
        out.append(T.rand(2).tolist())            # the global stream moved as PyTorch's
        return out
    _both(program)


def test_random_sampler_argument_errors():
    # (!) replacement=1 raised ValueError (PyTorch: TypeError); num_samples=True was refused
    a, b = _error(lambda T: T.utils.data.RandomSampler(range(3), replacement=1))
    assert b == a and a[0] == "TypeError"
    for T in (torch, nbtorch):
        assert len(T.utils.data.RandomSampler(range(3), num_samples=True)) == 1


def test_weighted_sampler_with_few_non_zero_weights_draws_as_pytorch():
    # (!) replacement=False with fewer non-zero weights than num_samples was refused at
    # construction; PyTorch draws the non-zero ones, then zero-weight indices
    drawn = {}
    for T in (torch, nbtorch):
        s = T.utils.data.WeightedRandomSampler([0., 1., 0., 2.], 3, replacement=False,
                                               generator=T.Generator().manual_seed(2))
        drawn[T] = list(s)
    assert drawn[nbtorch][:2] == drawn[torch][:2] and sorted(drawn[nbtorch]) != [1, 3]
    assert len(set(drawn[nbtorch])) == 3


@pytest.mark.parametrize("weights", [[1.0, -1.0], [1.0, math.nan], [1.0, math.inf], [0., 0.]])
def test_weighted_sampler_checks_weights_when_drawing(weights):
    for T in (torch, nbtorch):
        T.utils.data.WeightedRandomSampler(weights, 2)        # built without complaint
    a, b = _error(lambda T: list(T.utils.data.WeightedRandomSampler(weights, 2)))
    assert b == a


def test_random_split_and_distributed_sampler_as_pytorch():
    def program(T):
        d, out = T.utils.data, []
        for lengths in ([3, 7], [0.3, 0.7], [0.1, 0.2, 0.7], [1 / 3] * 3):
            parts = d.random_split(range(10), lengths, generator=T.Generator().manual_seed(42))
            out.append([list(p.indices) for p in parts])
        for kw in [dict(), dict(drop_last=True), dict(shuffle=False), dict(seed=5)]:
            for rank in range(3):
                s = d.distributed.DistributedSampler(range(11), num_replicas=3, rank=rank, **kw)
                first = list(s)
                s.set_epoch(1)
                out.append([first, list(s), len(s)])
        return out
    _both(program)


def test_shuffled_loader_order_and_worker_seeds_as_pytorch():
    def program(T):
        d = T.utils.data

        class Info(d.Dataset):
            def __len__(self):
                return 6

            def __getitem__(self, i):
                info = d.get_worker_info()
                return i, info.id, info.seed, T.initial_seed(), float(T.rand(1))

        ds = d.TensorDataset(T.arange(13))
        loader = d.DataLoader(ds, batch_size=4, shuffle=True,
                              generator=T.Generator().manual_seed(11))
        out = [[b[0].tolist() for b in loader], [b[0].tolist() for b in loader]]
        loader = d.DataLoader(Info(), batch_size=2, num_workers=2, shuffle=True,
                              generator=T.Generator().manual_seed(123))
        out.append([[[float(x) for x in col] for col in b] for b in loader])
        return out
    _both(program)


def test_iterable_dataset_sharded_by_worker_info():
    def program(T):
        d = T.utils.data

        class Shard(d.IterableDataset):
            def __iter__(self):
                info = d.get_worker_info()
                if info is None:
                    return iter(range(7))
                per = math.ceil(7 / info.num_workers)
                return iter(range(info.id * per, min(info.id * per + per, 7)))
        return ([b.tolist() for b in d.DataLoader(Shard(), batch_size=2, num_workers=2)],
                d.get_worker_info())
    _both(program)


def test_too_many_workers_warning():
    # (!) nbtorch gave no warning for more workers than usable CPUs
    n = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
         else os.cpu_count()) + 1
    messages = []
    for T in (torch, nbtorch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            T.utils.data.DataLoader(range(3), num_workers=n)
        messages.append([str(w.message) for w in caught if "worker processes" in
                         str(w.message)])
    assert messages[1] == messages[0] and len(messages[0]) == 1


Point = collections.namedtuple("Point", "x y")


def test_collate_results_and_errors_as_pytorch():
    def program(T):
        c = T.utils.data.default_collate
        out = [c([Point(1, 2.0), Point(3, 4.0)]),
               c([{"a": np.array([1, 2]), "b": "s"}, {"a": np.array([3, 4]), "b": "t"}]),
               c([[{"k": (1, [2.0])}], [{"k": (3, [4.0])}]]),
               c([np.int16(3), np.int16(4)]), c([b"ab", b"cd"])]
        return repr(out).replace("nbtorch", "torch")
    _both(program)
    # (!) the messages carried extra text ("default_collate: " prefix, entry sizes)
    for batch in ([[1, 2], [3]], [np.ones(2), np.ones(3)], []):
        a, b = _error(lambda T: T.utils.data.default_collate(batch))
        assert b == a


def _stream(T):
    """An empty IterableDataset of library `T`."""
    return type("Stream", (T.utils.data.IterableDataset,), {"__iter__": lambda self: iter([])})()


def test_datasets_as_pytorch():
    def program(T):
        d = T.utils.data
        a, b = d.TensorDataset(T.arange(5)), d.TensorDataset(T.arange(10, 13))
        cat = d.ConcatDataset([a, b])
        sub = d.Subset(d.Subset(a, [4, 2, 0, 1]), [0, 2])
        stack = d.StackDataset(x=sub, y=T.arange(20, 22))
        return ([int(cat[i][0]) for i in (-1, -8, 0, 4, 5, 7)],
                [int(x[0]) for x in sub.__getitems__([1, 0])],    # (!) Subset had none
                [(int(s["x"][0]), int(s["y"])) for s in stack.__getitems__([1, 0])],
                [[t.tolist() for t in b] for b in d.DataLoader(sub, batch_size=2)])
    _both(program)
    for make in (lambda T: T.utils.data.TensorDataset(T.ones(2), T.ones(3)),
                 lambda T: T.utils.data.ConcatDataset([]),
                 lambda T: list(T.utils.data.ChainDataset([range(2)])),
                 lambda T: T.utils.data.ConcatDataset([_stream(T)])):
        a, b = _error(make)
        assert b == a                 # (!) ValueError/TypeError where PyTorch asserts


def test_collate_fn_map_under_pytorchs_import_path():
    # (!) torch.utils.data._utils.collate (collate, default_collate_fn_map) was missing
    out = []
    for T in (torch, nbtorch):
        from importlib import import_module
        module = import_module(f"{T.__name__}.utils.data._utils.collate")
        table = {**module.default_collate_fn_map,
                 str: lambda batch, *, collate_fn_map=None: "|".join(batch)}
        joined, numbers = module.collate([("a", 1), ("b", 2)], collate_fn_map=table)
        out.append((joined, numbers.tolist()))
    assert out[1] == out[0] == ("a|b", [1, 2])


def test_pin_memory_without_accelerator_warns_as_pytorch():
    messages = []
    for T in (torch, nbtorch):
        loader = T.utils.data.DataLoader(range(4), batch_size=2, pin_memory=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            batches = [b.tolist() for b in loader]
        messages.append((batches, [str(w.message) for w in caught]))
    if not nbtorch.accelerator.is_available():
        assert messages[1] == messages[0]


def test_concat_dataset_cummulative_sizes_alias_warns():
    for T in (torch, nbtorch):
        with pytest.warns(FutureWarning, match="renamed to `cumulative_sizes`"):
            assert T.utils.data.ConcatDataset([[1], [2, 3]]).cummulative_sizes == [1, 3]


def test_persistent_workers_epochs_follow_pytorchs_random_stream():
    # (!) each new epoch on persistent workers drew an extra base seed from the global
    # generator: from the second epoch on, shuffled orders (and everything drawn after)
    # differed from PyTorch's
    def program(T):
        d = T.utils.data

        class Info(d.Dataset):
            def __len__(self):
                return 6

            def __getitem__(self, i):
                return i, float(T.rand(1))

        T.manual_seed(7)
        loader = d.DataLoader(Info(), batch_size=2, num_workers=2, shuffle=True,
                              persistent_workers=True)
        out = [[[[float(x) for x in col] for col in b] for b in loader] for _ in range(2)]
        return out, T.rand(2).tolist()
    _both(program)


def test_iterable_dataset_longer_than_its_len_warns_as_pytorch():
    # (!) no warning when an IterableDataset yielded more than len(dataloader) promised
    import re

    def program(T):
        class Stream(T.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(7))

            def __len__(self):
                return 3
        loader = T.utils.data.DataLoader(Stream(), batch_size=2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            n = len(loader)
            batches = [b.tolist() for b in loader]
        return n, batches, [re.sub(r" at 0x\w+", "", str(w.message)) for w in caught]
    _both(program)
