"""Shared tensors: share_memory_ in place, pickling by handle vs by value, queues across a
fork (both sharing strategies), refusals (CUDA, non-leaf)."""
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import nbtorch
import nbtorch.multiprocessing as mp
from nbtorch._device import device as Device
from nbtorch._tensor import Storage, Tensor, Size

from _mp_workers import TIMEOUT, queue_child


def _roundtrip(obj):
    return pickle.loads(ForkingPickler.dumps(obj))


def test_module_is_a_drop_in():
    import multiprocessing
    for name in ("Process", "Queue", "SimpleQueue", "Pool", "Manager", "get_context",
                 "set_start_method", "get_start_method", "cpu_count", "Event", "Lock"):
        assert getattr(mp, name) is getattr(multiprocessing, name)
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert mp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(AssertionError, match="invalid sharing strategy"):
        mp.set_sharing_strategy("carrier_pigeon")
    assert nbtorch.multiprocessing is mp


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "bool"])
def test_share_memory_moves_storage_in_place(dtype):
    dtype = getattr(nbtorch, dtype)
    t = nbtorch.arange(12).reshape(3, 4).to(dtype)
    expected = t.float().tolist()
    view = t[1:, ::2]
    view._array                                  # a cached view of the old buffer
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared() and view.is_shared()
    assert t.float().tolist() == expected
    t[2, 2] = 1                                  # the view follows the moved storage
    assert view[1, 1].item() == 1
    assert t.share_memory_() is t                # idempotent
    assert _roundtrip(view)._storage is t._storage


def test_share_memory_edge_cases():
    empty = nbtorch.zeros(0).share_memory_()
    assert empty.is_shared() and _roundtrip(empty).shape == (0,)
    a = np.ones(3, np.float32)
    t = nbtorch.from_numpy(a).share_memory_()     # as in PyTorch: no longer NumPy's memory
    t.fill_(2.0)
    assert a.tolist() == [1.0, 1.0, 1.0] and t.tolist() == [2.0, 2.0, 2.0]
    m = nbtorch.nn.Sequential(nbtorch.nn.Linear(3, 2), nbtorch.nn.BatchNorm1d(2))
    m[0].weight.grad = nbtorch.zeros(2, 3)
    opt_view = m[0].weight.data                   # aliases taken before sharing follow too
    assert m.share_memory() is m
    assert all(p.is_shared() for p in m.parameters()) and m[1].running_mean.is_shared()
    assert m[0].weight.grad.is_shared() and opt_view.is_shared()


def test_pickling_shared_by_handle_plain_by_value():
    shared = nbtorch.arange(6.0).share_memory_()
    plain = nbtorch.arange(6.0)
    back_shared, back_plain = _roundtrip((shared[2:], plain))
    assert back_shared._storage is shared._storage and back_shared.storage_offset() == 2
    assert not back_plain.is_shared() and back_plain._storage is not plain._storage
    by_value = pickle.loads(pickle.dumps(shared))    # plain pickle (torch.save-like): a copy
    assert not by_value.is_shared() and by_value.tolist() == shared.tolist()
    w = nbtorch.nn.Parameter(nbtorch.ones(2)).share_memory_()
    w2 = _roundtrip(w)
    assert type(w2) is nbtorch.nn.Parameter and w2.requires_grad and w2._storage is w._storage


def test_refusals():
    cuda = Tensor.__new__(Tensor)._init(Storage(np.zeros(2, np.float32), Device("cuda:0")), 0,
                                        Size((2,)), (1,), nbtorch.float32)
    with pytest.raises(RuntimeError, match="cannot share a cuda:0 tensor"):
        cuda.share_memory_()
    with pytest.raises(RuntimeError, match="no CUDA IPC"):
        ForkingPickler.dumps(cuda)
    assert not cuda.is_shared()
    x = nbtorch.ones(2, requires_grad=True)
    y = (x * 2)
    y.detach().share_memory_()            # y shares the storage, and is a non-leaf
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf"):
        ForkingPickler.dumps(y)
    assert _roundtrip(y.detach()).is_shared()


@pytest.mark.parametrize("strategy", ["file_descriptor", "file_system"])
def test_queue_between_processes(strategy):
    ctx = mp.get_context("fork")
    old = mp.get_sharing_strategy()
    mp.set_sharing_strategy(strategy)
    try:
        t = nbtorch.zeros(4, 5).share_memory_()
        v = t[1:3, 1::2]                         # offset 6, strides (5, 2)
        plain = nbtorch.zeros(3)
        inbox, outbox = ctx.Queue(), ctx.Queue()
        child = ctx.Process(target=queue_child, args=(inbox, outbox, strategy), daemon=True)
        child.start()
        try:
            inbox.put((t, v, plain))
            report, mine, mine_view = outbox.get(timeout=TIMEOUT)
            assert report == {"same_storage": True, "view": (6, (5, 2), (2, 2)),
                              "shared": (True, True, False)}
            assert t[1:3, 1::2].tolist() == [[7.0] * 2] * 2 and t.sum().item() == 28.0
            assert plain.tolist() == [0.0, 0.0, 0.0]
            assert mine.is_shared() and mine_view._storage is mine._storage
            mine_view.add_(5)                    # the child must see this
            inbox.put("check")
            assert outbox.get(timeout=TIMEOUT) == ("seen", [0, 5, 5], "check")
        finally:
            child.join(TIMEOUT)
            if child.is_alive():
                child.kill()
        assert child.exitcode == 0
    finally:
        mp.set_sharing_strategy(old)


def test_empty_shared_is_born_shared():
    from nbtorch.multiprocessing._sharing import empty_shared
    t = empty_shared((2, 3), nbtorch.int32)
    assert t.is_shared() and t.shape == (2, 3) and t.is_contiguous()
    t.fill_(4)
    back = _roundtrip(t.t())
    assert back._storage is t._storage and back.tolist() == [[4, 4], [4, 4], [4, 4]]
