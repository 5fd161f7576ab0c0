"""Collectives and a DDP step on CUDA tensors, on 2 ranks running Numba's CUDA simulator
(workers/cuda_staging.py): through host copies (this MPI is not CUDA-aware), and, under
-m slow, with the device arrays handed to MPI as a CUDA-aware library would take them."""
import pytest

from _launch import results, run_ranks


@pytest.mark.parametrize("aware", ["0", pytest.param("1", marks=pytest.mark.slow)])
def test_cuda_tensors(tmp_path, aware):
    report = tmp_path / "report"
    code, out, err = run_ranks("cuda_staging.py", n=2, timeout=120, report=report,
                               env={"NUMBA_ENABLE_CUDASIM": "1",
                                    "NBTORCH_MPI_CUDA_AWARE": aware})
    got = results(report)
    for rank in (0, 1):
        for name in ("cuda_collectives", "cuda_ddp_step"):
            assert got.get((rank, name)) == "PASS", f"{got.get((rank, name))}\n{out}\n{err}"
    assert code == 0, out + err
