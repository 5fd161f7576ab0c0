"""kernels/cpu/spin_threads.py: flat loops split between the calling thread and helpers
that spin between calls; chunks a helper has not started are taken back."""
import os
import threading
import time

import numpy as np
import pytest

from nbtorch.kernels.cpu import loop_threads, spin_threads, ufuncs, workers

pytestmark = pytest.mark.skipif(not spin_threads.SUPPORTED,
                                reason="spinning helpers run on x86-64 with the JIT on")

N = (1 << 17) + 37         # not a multiple of a chunk


def _add_loop(dtype=np.float32):
    types = np.dtype(dtype).char * 2 + "->" + np.dtype(dtype).char
    ufuncs.loop("add", types)
    address = ufuncs._loop_address("add", types)
    assert address
    return address


def _pointers(*arrays):
    return loop_threads.operand_pointers(tuple(arrays))


def test_operand_pointers_read_addresses_and_steps():
    a = np.arange(5, dtype=np.float64)
    s = np.asarray(2.0, np.float32)
    bases, steps = _pointers(a, s, a[1:])
    assert list(bases) == [a.ctypes.data, s.ctypes.data, a.ctypes.data + 8]
    assert list(steps) == [8, 0, 8]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chunks", [2, 3, 5])
def test_run_matches_numpy(dtype, chunks):
    rng = np.random.default_rng(chunks)
    a = rng.standard_normal(N).astype(dtype)
    b = rng.standard_normal(N).astype(dtype)
    address = _add_loop(dtype)
    for _ in range(3):                           # asleep, then spinning helpers
        out = np.full_like(a, np.nan)
        assert spin_threads.run(address, *_pointers(a, b, out), N, chunks, 16)
        assert np.array_equal(out, a + b)
    s = np.asarray(1.5, dtype)                    # a 0-d operand: stride 0
    assert spin_threads.run(address, *_pointers(a, s, out), N, chunks, 16)
    assert np.array_equal(out, a + s)


def test_one_chunk_or_too_many_operands_are_left_to_the_caller():
    a = np.ones(N, np.float32)
    address = _add_loop()
    assert not spin_threads.run(address, *_pointers(a, a, a), N, 1, 16)
    bases = np.zeros(spin_threads.MAX_OPERANDS + 1, np.int64)
    assert not spin_threads.run(address, bases, bases, N, 2, 16)


def test_chunks_no_helper_takes_run_on_the_calling_thread():
    """A control array with no threads behind it: every posted chunk is taken back."""
    ctl = np.zeros(spin_threads.SLOT * 4, np.int64)
    a = np.arange(N, dtype=np.float32)
    out = np.zeros_like(a)
    ran = spin_threads._dispatch(ctl, 3, _add_loop(), *_pointers(a, a, out), N, 16, 0, 0)
    assert ran == 0 and np.array_equal(out, a + a)
    assert not ctl[spin_threads.STATE::spin_threads.SLOT].any()     # every slot free
    assert ctl[spin_threads.LOCK] == 0


def test_a_held_pool_runs_the_loop_on_the_calling_thread():
    ctl = np.zeros(spin_threads.SLOT * 2, np.int64)
    ctl[spin_threads.LOCK] = 1                      # another thread's call in progress
    a = np.arange(N, dtype=np.float32)
    out = np.zeros_like(a)
    assert spin_threads._dispatch(ctl, 1, _add_loop(), *_pointers(a, a, out), N, 16, 0,
                                 0) == -1
    assert np.array_equal(out, a + a)


def test_helpers_sleep_after_their_spin_and_wake_for_the_next_call():
    a = np.arange(N, dtype=np.float32)
    out = np.empty_like(a)
    address = _add_loop()
    assert spin_threads.run(address, *_pointers(a, a, out), N, 2, 16)
    pool = spin_threads._POOL
    assert _asleep(pool)
    out[:] = 0
    assert spin_threads.run(address, *_pointers(a, a, out), N, 2, 16)
    assert np.array_equal(out, a + a)


def _asleep(pool, slot=1, seconds=5):
    deadline = time.monotonic() + seconds
    while pool.ctl[slot * spin_threads.SLOT + spin_threads.AWAKE] and \
            time.monotonic() < deadline:
        time.sleep(0.001)                            # the spin lasts SPIN_SECONDS
    return not pool.ctl[slot * spin_threads.SLOT + spin_threads.AWAKE]


def _semaphore_value(pool, slot=1):
    import ctypes
    value = ctypes.c_int(-1)
    libc = ctypes.CDLL(None)
    libc.sem_getvalue.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    assert libc.sem_getvalue(int(pool.ctl[slot * spin_threads.SLOT + spin_threads.SEMAPHORE]),
                             ctypes.byref(value)) == 0
    return value.value


def test_a_sleeping_helper_wakes_without_the_gil():
    """The helper sleeps on a semaphore inside nogil code: woken while the caller holds
    the GIL (a Python loop, with a switch interval far beyond the deadline), it runs a
    chunk posted to it. A helper that slept in Python (threading.Event) needed the GIL
    first, which a caller running Python gives up only every switch interval (5 ms)."""
    import sys
    st = spin_threads
    a = np.arange(N, dtype=np.float32)
    out = np.empty_like(a)
    address = _add_loop()
    assert st.run(address, *_pointers(a, a, out), N, 2, 16)
    pool = st._POOL
    ctl, base = pool.ctl, st.SLOT
    bases, steps = _pointers(a, a, out)
    for _ in range(3):                           # sleep and wake, several times
        assert _asleep(pool)
        out[:] = 0
        assert ctl[st.LOCK] == 0                 # no other call in flight: the pool is
        ctl[st.LOCK] = 1                         # this test's
        old = sys.getswitchinterval()
        try:
            ctl[base + st.ADDRESS], ctl[base + st.COUNT], ctl[base + st.NOPS] = address, N, 3
            ctl[base + st.WRAP] = ctl[base + st.BLOCK] = 0
            ctl[base + st.POINTERS:base + st.POINTERS + 3] = bases
            ctl[base + st.STEPS:base + st.STEPS + 3] = steps
            sys.setswitchinterval(100.0)
            ctl[base + st.STATE] = st.POSTED
            st._wake(ctl, base)
            deadline = time.monotonic() + 20
            while ctl[base + st.STATE] != st.FINISHED and time.monotonic() < deadline:
                pass                             # Python, holding the GIL
            ran = ctl[base + st.STATE] == st.FINISHED
        finally:
            sys.setswitchinterval(old)
            deadline = time.monotonic() + 20     # (a helper never woken: the test fails)
            while ctl[base + st.STATE] != st.FINISHED and time.monotonic() < deadline:
                time.sleep(0.001)
            ctl[base + st.STATE] = st.FREE
            ctl[st.LOCK] = 0
        assert ran and np.array_equal(out, a + a)
    assert _asleep(pool)
    assert _semaphore_value(pool) == 0           # every post met its wait


def test_calls_from_several_threads_at_once():
    address = _add_loop()
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(N).astype(np.float32) for _ in range(4)]
    errors = []

    def work(x):
        out = np.empty_like(x)
        for _ in range(20):
            out[:] = np.nan
            spin_threads.run(address, *_pointers(x, x, out), N, 2, 16)
            if not np.array_equal(out, x + x):
                errors.append("wrong result")

    threads = [threading.Thread(target=work, args=(x,)) for x in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and not any(t.is_alive() for t in threads)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_helpers():
    address = _add_loop()
    a = np.arange(N, dtype=np.float32)
    out = np.empty_like(a)
    assert spin_threads.run(address, *_pointers(a, a, out), N, 2, 16)    # parent's helper
    pid = os.fork()
    if pid == 0:                                  # pragma: no cover - the child
        ok = False
        try:
            for _ in range(5):
                out[:] = 0
                spin_threads.run(address, *_pointers(a, a, out), N, 2, 16)
                ok = np.array_equal(out, a + a)
            ok = ok and len(spin_threads._POOL.threads) == 1
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_the_helpers_can_be_turned_off_and_the_tick_rate_is_measured_after_loading():
    import subprocess
    import sys
    code = ("import numpy as np, nbtorch\n"
            "from nbtorch.kernels.cpu import spin_threads\n"
            "x = nbtorch.arange(300000, dtype=nbtorch.float32)\n"
            "for _ in range(5): y = x * 0.5 + x\n"
            "assert np.array_equal(y.numpy(), x.numpy() * np.float32(0.5) + x.numpy())\n"
            "print(spin_threads.SUPPORTED, spin_threads._POOL is None)\n")
    env = dict(os.environ, NBTORCH_SPIN_THREADS="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]
    code = ("from nbtorch.kernels.cpu import spin_threads as s\n"   # a fresh process: the
            "print(s._tick_rate() / s._tick_rate())\n")             # first call loads code
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert 0.5 < float(out.stdout) < 2      # loading inside the window made it 3-10x off


# ---- run_dense_judged: workers.py's rules, compiled ------------------------------------

def _judged_calls(judge, a, out):
    out[:] = np.nan
    assert spin_threads.run_dense_judged(_add_loop(), (a, a, out), N, judge)
    assert np.array_equal(out, a + a)


def test_a_judged_call_runs_serially_first_and_every_resample():
    J = spin_threads
    a, out = np.arange(N, dtype=np.float32), np.zeros(N, np.float32)
    judge = J.new_judge()
    _judged_calls(judge, a, out)                    # no pace yet: serial, which gives it
    assert judge[J.J_CALLS] == 1 and judge[J.J_PACE] > 0 and judge[J.J_COLD] == 1
    judge[J.J_PACE] = 1e12                          # no split call can look starved
    _judged_calls(judge, a, out)                    # split, and not judged (after serial)
    assert judge[J.J_COLD] == 0 and judge[J.J_STRIKES] == 0
    judge[J.J_CALLS] = workers.RESAMPLE - 1
    _judged_calls(judge, a, out)                    # the RESAMPLE-th call: serial again
    assert judge[J.J_COLD] == 1 and judge[J.J_PACE] < 1e12


def test_the_judges_rules():
    """workers.py's rules on synthetic timings: a split call slower than the serial pace
    is starved, STRIKES in a row start a back-off of 8 (then 16, ...) serial calls; one
    that pays halves the next back-off; the first split call after a serial one, and one
    no helper joined, are not judged."""
    J = spin_threads
    judge = J.new_judge()
    assert not J.judge_wants_split(judge, 1)                # no pace yet
    J.judge_serial(judge, 1000, 1000)                       # 1 tick an element
    assert judge[J.J_PACE] == 1 and judge[J.J_COLD] == 1
    J.judge_serial(judge, 2000, 1000)                       # the pace rises 5% at most
    assert judge[J.J_PACE] == 1.05
    J.judge_split(judge, 1, 10 ** 6, 1000)                  # after serial: not judged
    assert judge[J.J_COLD] == 0 and judge[J.J_STRIKES] == 0
    J.judge_split(judge, 0, 10 ** 6, 1000)                  # no helper joined
    assert judge[J.J_STRIKES] == 0
    for strikes in range(1, workers.STRIKES + 1):
        J.judge_split(judge, 1, 10 ** 6, 1000)              # starved
        assert judge[J.J_STRIKES] == strikes
    assert judge[J.J_OWED] == judge[J.J_NEXT] == 8
    judge[J.J_CALLS] = 1
    wants = [J.judge_wants_split(judge, 1) for _ in range(10)]
    assert wants == [False] * 8 + [True] * 2 and judge[J.J_OWED] == 0
    J.judge_split(judge, 1, 10 ** 6, 1000)                  # starved again: 16
    assert judge[J.J_OWED] == judge[J.J_NEXT] == 16
    judge[J.J_OWED] = 0
    J.judge_split(judge, 1, 500, 1000)                      # pays: halves the next one
    assert judge[J.J_NEXT] == 8 and judge[J.J_STRIKES] == 0 and judge[J.J_OWED] == 0
    judge[J.J_CALLS] = workers.RESAMPLE - 1
    assert not J.judge_wants_split(judge, 1)                # a resample
    assert J.judge_wants_split(judge, 1) and not J.judge_wants_split(judge, 0)


def test_one_thread_makes_judged_calls_serial(monkeypatch):
    J = spin_threads
    monkeypatch.setattr(workers, "NUM_THREADS", 1)
    a, out = np.arange(N, dtype=np.float32), np.zeros(N, np.float32)
    judge = J.new_judge()
    judge[J.J_PACE] = 1e12
    for _ in range(3):
        _judged_calls(judge, a, out)
        assert judge[J.J_COLD] == 1                 # each ran serially
