"""Every collective on 2 MPI ranks against NumPy (workers/collectives.py runs them all in
one job, started by python -m nbtorch.distributed.run; each check is a test here), and
DistributedSampler on those ranks."""
import pytest

from _launch import shared_job

CHECKS = ["all_reduce_ops_and_dtypes", "all_reduce_noncontiguous_and_async",
          "all_reduce_errors", "broadcast_and_reduce", "gathers_and_scatters",
          "all_to_all_both_forms", "point_to_point", "objects_and_groups", "launcher_environment",
          "sampler_partitions_the_dataset"]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    return shared_job(tmp_path_factory, "collectives.py", n=2, timeout=120, launcher=True)


@pytest.mark.parametrize("name", CHECKS)
def test_collective(job, name):
    code, got, log = job
    for rank in (0, 1):
        assert (rank, name) in got, f"rank {rank} never reported {name}:\n{log}"
        assert got[(rank, name)] == "PASS", f"rank {rank}:\n{got[(rank, name)]}"
    assert code == 0, log
