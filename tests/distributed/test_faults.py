"""Faults end a job in bounded time with a clear error, never a hang (workers/faults.py),
and the API's errors before any process group exists (mismatched collectives under
NBTORCH_DISTRIBUTED_DEBUG=DETAIL are checked in the collectives job)."""
import os
import time

import pytest

from _launch import run_ranks

import nbtorch
import nbtorch.distributed as dist


def _run(mode, **kw):
    t0 = time.monotonic()
    code, out, err = run_ranks("faults.py", n=2, timeout=40, args=(mode,), **kw)
    return code, out + err, time.monotonic() - t0


def _alive(log):
    """The rank processes of a finished job that still exist (orphans)."""
    pids = [int(line.split()[-1]) for line in log.splitlines() if " pid " in line]
    assert pids, log
    return [p for p in pids if os.path.exists(f"/proc/{p}")
            and "Z" not in open(f"/proc/{p}/stat").read().split()[2]]


def test_a_rank_raising_aborts_the_job():
    """Through the launcher: it exits non-zero and says so."""
    code, log, took = _run("raise", launcher=True)
    assert code != 0, log
    assert "rank 1 breaks on purpose" in log and "rank 1 failed with ValueError" in log, log
    assert "nbtorch.distributed.run: the job failed" in log
    assert took < 30 and not _alive(log)


def test_a_peer_that_never_joins_times_out():
    code, log, took = _run("timeout")
    assert "rank 0 got: [Rank 0] all_reduce timed out after 1 s" in log, log
    assert code != 0 and took < 30


@pytest.mark.slow
def test_a_killed_rank_ends_the_job():
    code, log, took = _run("kill")
    assert code != 0 and took < 30, log
    assert not _alive(log)


def test_errors_before_init_process_group():
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(nbtorch.ones(2))
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        nbtorch.nn.parallel.DistributedDataParallel(nbtorch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="Invalid backend"):
        dist.Backend("tcp")
    assert dist.Backend("GLOO") == "gloo" and dist.Backend("cpu:gloo,cuda:nccl") == "gloo"


_WITHOUT_MPI4PY = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "mpi4py":
            raise ImportError("No module named 'mpi4py'")
sys.meta_path.insert(0, Block())
import nbtorch
assert nbtorch.distributed.is_available() is False
try:
    nbtorch.distributed.init_process_group("gloo")
except ImportError as e:
    print(e)
"""


def test_without_mpi4py_nbtorch_imports_and_says_what_to_install():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _WITHOUT_MPI4PY], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "pip install 'nbtorch[distributed]'" in out.stdout, out.stdout


_ONE_PROCESS = """
import os
import nbtorch.distributed as dist
os.environ["WORLD_SIZE"] = "2"             # as torchrun would set it, but MPI started one
try:
    dist.init_process_group("gloo")
except RuntimeError as e:
    print("A", e)
del os.environ["WORLD_SIZE"]
dist.init_process_group("gloo", world_size=1, rank=0)
print("B", dist.get_backend(), dist.get_rank(), dist.get_world_size())
try:
    dist.init_process_group("gloo")
except ValueError as e:
    print("C", e)
try:
    dist.new_group([0, 5])
except ValueError as e:
    print("D", e)
dist.destroy_process_group()
print("E", dist.is_initialized())
"""


def test_one_process_group_errors():
    """A singleton MPI world (no mpiexec): torchrun's WORLD_SIZE checked against MPI,
    double init, bad ranks, destroy."""
    import subprocess
    import sys
    pytest.importorskip("mpi4py")
    out = subprocess.run([sys.executable, "-c", _ONE_PROCESS], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert "world_size is 2 but MPI started 1 process(es)" in lines["A"]
    assert "mpiexec -n 2" in lines["A"]
    assert lines["B"] == "gloo 0 1"
    assert lines["C"] == "trying to initialize the default process group twice!"
    assert "Invalid rank 5" in lines["D"]
    assert lines["E"] == "False"
