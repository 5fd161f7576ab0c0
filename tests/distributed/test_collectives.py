"""Every collective on 2 MPI ranks against NumPy (workers/collectives.py runs them all in
one job, started by python -m nbtorch.distributed.run; each check is a test here), and
DistributedSampler on those ranks."""
import pytest

from _launch import shared_job

CHECKS = ["all_reduce_ops_and_dtypes", "all_reduce_noncontiguous_and_async",
          "all_reduce_errors", "broadcast_and_reduce", "gathers_and_scatters",
          "data_movement_over_dtypes_layouts_and_async", "all_to_all_both_forms",
          "point_to_point", "objects_and_groups", "mismatch_detected_in_debug_mode",
          "launcher_environment",
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


@pytest.mark.slow
def test_every_collective_on_3_ranks(tmp_path):
    """Oversubscribed (3 ranks on 2 cores): the same checks with an odd world size."""
    from _launch import results, run_ranks
    report = tmp_path / "report"
    code, out, err = run_ranks("collectives.py", n=3, timeout=240, report=report)
    got = results(report, n=3)
    bad = {k: v for k, v in got.items() if v != "PASS" and k[1] != "launcher_environment"}
    assert len(got) == 3 * len(CHECKS) and not bad, f"{bad}\n{out}\n{err}"
