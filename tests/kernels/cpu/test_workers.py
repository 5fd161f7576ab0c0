"""kernels/cpu/workers.py: chunks claimed by the calling thread and the helpers."""
import os
import threading

import numpy as np
import pytest

from nbtorch.kernels.cpu import ufuncs, workers


def test_every_chunk_runs_once():
    seen = []
    workers.parallel_chunks(seen.append, 37)
    assert sorted(seen) == list(range(37))


def test_chunk_error_reaches_the_caller():
    def chunk(k):
        if k == 3:
            raise ValueError("chunk 3")
    with pytest.raises(ValueError, match="chunk 3"):
        workers.parallel_chunks(chunk, 8)
    seen = []
    workers.parallel_chunks(seen.append, 4)       # the helpers still serve
    assert sorted(seen) == [0, 1, 2, 3]


def test_large_elementwise_calls_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((700, 1001)).astype(np.float32)
    b = rng.standard_normal(1001).astype(np.float32)
    out = np.empty_like(a)
    ufuncs.kernel("add")(out, a, b)               # broadcast: the axis-split path
    assert np.array_equal(out, a + b)
    ufuncs.kernel("exp")(out, a)                  # the contiguous loops' flat chunks
    small = np.empty(1000, np.float32)
    ufuncs.kernel("exp")(small, a.reshape(-1)[:1000])
    assert np.array_equal(out.reshape(-1)[:1000], small)


def test_calls_from_several_threads():
    a = np.arange(1 << 20, dtype=np.float32)
    results = [None] * 4

    def run(i):
        out = np.empty_like(a)
        for _ in range(5):
            ufuncs.kernel("mul")(out, a, np.float32(i))
        results[i] = out
    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for i, out in enumerate(results):
        assert np.array_equal(out, a * np.float32(i))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_gets_its_own_helpers():
    workers.parallel_chunks(lambda k: None, 4)    # the parent's helpers exist
    pid = os.fork()
    if pid == 0:                                  # pragma: no cover - the child
        ok = False
        try:
            seen = []
            workers.parallel_chunks(seen.append, 16)
            ok = sorted(seen) == list(range(16))
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_starved_helpers_back_off(monkeypatch):
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    monkeypatch.setattr(workers, "_BACKOFF", {})
    workers._record(None, True)                   # one parallel call that did not pay:
    assert workers.helpers_usable()               # noise, no back-off yet
    workers._record(None, True)                   # a second one in a row backs off
    assert [workers.helpers_usable() for _ in range(9)] == [False] * 8 + [True]
    workers._record(None, True)                   # again: twice as long
    assert sum(not workers.helpers_usable() for _ in range(20)) == 16
    workers._record(None, False)                  # one that paid halves the next back-off
    assert workers._BACKOFF[None][:2] == [0, 8]
    workers._record(None, True)                   # and clears the strikes: one more
    assert workers.helpers_usable()               # starved call alone backs nothing off
    monkeypatch.setattr(workers, "_PACE", {"other kind": 1e-6})
    assert workers.helpers_usable("other kind")   # back-offs are per kind of call


def test_a_call_no_helper_took_part_in_is_not_judged(monkeypatch):
    """A split call whose chunks all ran on the caller (spin_threads: taken back from a
    helper asleep or not scheduled) ran as a serial one: slow as it is, it is no sign of
    a helper stalling in its chunk, so it starts no back-off."""
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    for name in ("_PACE", "_BACKOFF", "_CALLS"):
        monkeypatch.setattr(workers, name, {})
    monkeypatch.setattr(workers, "_COLD", set())
    workers.record_serial("k", 1e-3, 1000)
    workers.record_parallel("k", 1e-3, 1000)      # the first after a serial call: unjudged
    for _ in range(4):
        workers.unhelped()
        workers.record_parallel("k", 2e-3, 1000)  # twice the serial time, no helper
    assert workers._BACKOFF.get("k", [0, 0, 0]) == [0, 0, 0]
    for _ in range(2):
        workers.record_parallel("k", 2e-3, 1000)  # a helper took part and stalled
    assert workers._BACKOFF["k"][0] == 8


def test_a_keyed_kind_is_timed_serially_before_it_splits(monkeypatch):
    """helpers_usable(key) answers as use_helpers: a kind's first call runs serially (its
    pace), as does every RESAMPLE-th, and split calls are judged against that pace."""
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    for name in ("_PACE", "_BACKOFF", "_CALLS"):
        monkeypatch.setattr(workers, name, {})
    assert not workers.helpers_usable("k")
    workers.record_serial("k", 1e-3, 4)
    assert workers.helpers_usable("k")
    workers.parallel_chunks(lambda k: None, 4, "k", 4)        # far faster than serial: paid
    assert workers._BACKOFF["k"][2] == 0


def test_a_kind_runs_serially_until_its_pace_is_known(monkeypatch):
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    monkeypatch.setattr(workers, "_PACE", {})
    monkeypatch.setattr(workers, "_BACKOFF", {})
    monkeypatch.setattr(workers, "_CALLS", {})
    assert not workers.use_helpers("k")
    workers.record_serial("k", 1e-3, 1000)
    asked = [workers.use_helpers("k") for _ in range(2 * workers.RESAMPLE - 1)]
    assert asked.count(False) == 2 and not asked[workers.RESAMPLE - 2]   # resampled
    workers.record_serial("k", 5e-3, 1000)        # a slow sample raises the pace by 5%
    assert workers._PACE["k"] == pytest.approx(1.05e-6)
    workers.parallel_chunks(lambda k: None, 4, "k", 1000)   # 1 ms x 0.8 to beat: pays
    assert workers._BACKOFF["k"][:2] == [0, 0]


def test_set_num_threads_one_makes_elementwise_serial(monkeypatch):
    import nbtorch
    monkeypatch.setattr(workers, "_BACKOFF", {})
    before = nbtorch.get_num_threads()
    try:
        nbtorch.set_num_threads(1)
        assert not workers.helpers_usable()
        nbtorch.set_num_threads(2)
        assert workers.NUM_THREADS == 2 and workers.helpers_usable()
        seen = []
        workers.parallel_chunks(seen.append, 6)
        assert sorted(seen) == list(range(6)) and workers.pool().size >= 1
    finally:
        nbtorch.set_num_threads(before)


def test_more_threads_grow_the_pool_in_place(monkeypatch):
    """set_num_threads(n) beyond the pool adds helpers to it (the old threads keep
    serving; a new pool would leave them blocked forever)."""
    pool = workers.pool()
    monkeypatch.setattr(workers, "NUM_THREADS", pool.size + 2)
    assert workers.pool() is pool and pool.size == workers.NUM_THREADS - 1
    seen = []
    workers.parallel_chunks(seen.append, 12)
    assert sorted(seen) == list(range(12))


def test_parallel_calls_on_numbas_threads_are_kept_when_they_gain_at_all(monkeypatch):
    monkeypatch.setattr(workers, "_PACE", {"k": 1e-9})
    monkeypatch.setattr(workers, "_BACKOFF", {})
    monkeypatch.setattr(workers, "_COLD", set())
    workers.record_parallel("k", 0.95e-3, 10 ** 6)    # 0.95 of the floor: kept (0.8 would not)
    assert workers._BACKOFF["k"][:2] == [0, 0]
    workers.record_parallel("k", 1.1e-3, 10 ** 6)     # slower than the best serial call,
    workers.record_parallel("k", 1.1e-3, 10 ** 6)     # twice in a row: backs off
    assert workers._BACKOFF["k"][:2] == [8, 8]


def test_the_first_parallel_call_after_a_serial_one_is_not_judged(monkeypatch):
    monkeypatch.setattr(workers, "_PACE", {})
    monkeypatch.setattr(workers, "_BACKOFF", {})
    monkeypatch.setattr(workers, "_COLD", set())
    workers.record_serial("k", 1e-3, 10 ** 6)
    workers.record_parallel("k", 5e-3, 10 ** 6)       # cold: its threads were asleep
    assert "k" not in workers._BACKOFF
    workers.record_parallel("k", 5e-3, 10 ** 6)       # two more slow calls back off
    workers.record_parallel("k", 5e-3, 10 ** 6)
    assert workers._BACKOFF["k"][:2] == [8, 8]
