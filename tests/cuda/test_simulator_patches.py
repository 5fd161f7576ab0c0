"""The two simulator fixes of kernels/cuda/_simulator.py (runs on the simulator only)."""
import sys
import threading
import time

import numpy as np
import pytest

pytestmark = pytest.mark.cuda

sim = pytest.importorskip("nbtorch.kernels.cuda._simulator")


class _SlowDict(dict):
    """A lookup slow enough that two threads are always inside it together."""

    def get(self, key, default=None):
        time.sleep(0.05)
        return super().get(key, default)


def test_threads_of_a_block_get_one_shared_array():
    from numba.cuda.simulator.kernelapi import FakeCUDAShared
    shared = FakeCUDAShared(0)
    shared._allocations = _SlowDict()
    got = []

    def thread_body():
        got.append(shared.array(4, np.float32))      # one line: one shared array

    threads = [threading.Thread(target=thread_body) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(got) == 4 and all(a is got[0] for a in got)


def test_blocks_run_with_a_short_switch_interval_then_restore_it():
    import nbtorch
    seen = []
    before = sys.getswitchinterval()
    sim._switch_often(lambda self: seen.append(sys.getswitchinterval()))(None)
    assert seen == [pytest.approx(sim.SWITCH_INTERVAL_S)]
    assert sys.getswitchinterval() == before
    x = nbtorch.arange(6.0, device="cuda")
    assert (x * 2).cpu().tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    from numba.cuda.simulator.kernel import BlockManager
    assert BlockManager.run._nbtorch_patched                 # installed with the kernels
