"""kernels/cpu/blas_hold.py: OpenBLAS held on one thread from compiled code, sharing one
count with `blas.one_thread`."""
import os
import subprocess
import sys
import textwrap
import threading
import time

import numba
import numpy as np
import pytest

from nbtorch.kernels.cpu import blas, blas_hold, gemm_rows, spin_threads

pytestmark = pytest.mark.skipif(blas.hold() is None, reason="NumPy has no OpenBLAS here")


@numba.njit
def _nested(state, fns, get):
    """Threads seen inside two nested holds, after the inner one ends, and after both."""
    blas_hold.enter(state, fns)
    blas_hold.enter(state, fns)
    inner = get()
    blas_hold.leave(state, fns)
    middle = get()
    blas_hold.leave(state, fns)
    return inner, middle, get()


def test_compiled_hold_nests_and_restores():
    before = blas.threads()
    blas.set_threads(2)
    try:
        state, fns = blas.hold()
        get = blas._get
        assert _nested(state, fns, get) == (1, 1, 2)
        assert state[blas_hold.HELD] == 0 and blas.threads() == 2
    finally:
        blas.set_threads(before)


def test_python_and_compiled_holds_share_one_count():
    """A compiled hold taken inside one_thread must not restore the count when it ends,
    and a count set while held is the one restored by the last holder."""
    before = blas.threads()
    blas.set_threads(2)
    state, fns = blas.hold()
    seen = []

    def inside():
        blas_hold.enter(state, fns)
        blas_hold.leave(state, fns)
        seen.append(blas.threads())
        blas.set_threads(3)
        seen.append(blas.threads())
    try:
        blas.one_thread(inside)
        assert seen == [1, 1]
        assert blas.threads() == 3
    finally:
        blas.set_threads(before)


@pytest.mark.skipif(not gemm_rows.SUPPORTED or not spin_threads.SUPPORTED,
                    reason="needs the spinning helpers")
def test_gemm_rows_holds_inside_its_dispatch_and_restores():
    """The split product runs its ranges on one thread (so its bits equal the serial
    ranges') and leaves the count as it found it, also beside a Python thread's hold."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 128), dtype=np.float32)
    b = rng.standard_normal((128, 128), dtype=np.float32)
    before = blas.threads()
    blas.set_threads(2)
    inside, release, errors = threading.Event(), threading.Event(), []

    def other():
        try:
            inside.set()
            release.wait(5)
        except BaseException as exc:     # noqa: BLE001
            errors.append(exc)
    try:
        ref, out = np.empty_like(a), np.empty_like(a)
        assert gemm_rows.matmul(a, b, out, 2)
        assert blas.threads() == 2
        t = threading.Thread(target=blas.one_thread, args=(other,))
        t.start()
        assert inside.wait(5)                   # the other thread holds it from here
        for _ in range(20):
            assert gemm_rows.matmul(a, b, ref, 2)
            assert blas.threads() == 1          # the other thread still holds it
        release.set()
        t.join()
        assert not errors and blas.threads() == 2
        np.testing.assert_array_equal(out, ref)
    finally:
        release.set()
        blas.set_threads(before)


def test_hold_without_jit_uses_ctypes():
    """Under NUMBA_DISABLE_JIT the hold runs as Python (ctypes calls by address)."""
    code = textwrap.dedent("""
        from nbtorch.kernels.cpu import blas
        blas.set_threads(2)
        inside = blas.one_thread(blas.threads)
        blas.one_thread(lambda: blas.set_threads(3))
        print(inside, blas.threads())
    """)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "3"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_is_not_left_with_the_lock_taken():
    """A fork while another thread is inside enter/leave (the lock word set): the child
    clears the lock, so its own holds do not spin for ever."""
    state, fns = blas.hold()
    state[blas_hold.LOCK] = 1                 # as if another thread held it at the fork
    try:
        pid = os.fork()
        if pid == 0:                          # the child: a hold must complete
            try:
                ok = blas.one_thread(blas.threads) == 1
            finally:
                os._exit(0 if ok else 1)
        for _ in range(600):                  # up to 60 s, then the child hangs: fail
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's hold spun on a lock nobody will release")
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        state[blas_hold.LOCK] = 0
