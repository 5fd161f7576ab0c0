"""Every CUDA kernel compiles to PTX for sm_90 (real typing; the simulator checks none).

Runs `python -m nbtorch.cuda.typecheck --shard i/n` in processes of its own
without the simulator: the shards together cover every signature, and
pytest-xdist spreads them over its workers. Needs NVVM from the
``numba-cuda[cu13]`` extra; skipped (with that reason) without it.
"""
import os
import subprocess
import sys

import pytest

SHARDS = 3


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
                    reason="runs in the non-simulator pytest process")
@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_cuda_kernel_compiles_for_sm90(shard):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    r = subprocess.run([sys.executable, "-m", "nbtorch.cuda.typecheck",
                        "--shard", f"{shard}/{SHARDS}"], env=env,
                       capture_output=True, text=True, timeout=1800)
    if r.returncode == 3:
        pytest.skip("NVVM not installed: pip install 'numba-cuda[cu13]' ("
                    + r.stderr.strip()[:200] + ")")
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert " 0/" not in r.stdout, r.stdout[-2000:]       # the shard compiled something
