"""DistributedDataParallel on 2 MPI ranks (workers/ddp.py): the same parameters as one
process on the whole batch after 20 SGD and 20 Adam steps (to 1e-6, float64), several
buckets, gradient_as_bucket_view, no_sync accumulation, SyncBatchNorm against BatchNorm on
the whole batch, unused parameters, mismatched models."""
import pytest

from _launch import shared_job

CHECKS = ["ddp_equals_one_process_sgd", "ddp_equals_one_process_adam_small_buckets",
          "gradient_as_bucket_view", "no_sync_accumulates_like_one_big_batch",
          "sync_batch_norm_equals_batch_norm_on_the_whole_batch", "unused_parameters",
          "buckets_start_during_backward", "mismatched_models_are_refused"]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    return shared_job(tmp_path_factory, "ddp.py", n=2, timeout=180)


@pytest.mark.parametrize("name", CHECKS)
def test_ddp(job, name):
    code, got, log = job
    for rank in (0, 1):
        assert (rank, name) in got, f"rank {rank} never reported {name}:\n{log}"
        assert got[(rank, name)] == "PASS", f"rank {rank}:\n{got[(rank, name)]}"
    assert code == 0, log
