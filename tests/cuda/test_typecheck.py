"""Every CUDA kernel compiles to PTX for sm_90 (real typing; the simulator checks none).

Runs `python -m nbtorch.cuda.typecheck` in processes of its own without the
simulator: `--quick` in shards that pytest-xdist spreads over its workers (every
kernel, int64 standing in for the narrower integer types, float32 for the float16
signatures of most elementwise bodies, and the strided signatures of a sample of bodies),
and those left out in a `slow` test (make test-all). Needs NVVM from the
``numba-cuda[cu13]`` extra; skipped (with that reason) without it.
"""
import os
import subprocess
import sys

import pytest

SHARDS = 3


NOT_SIMULATED = pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
                                   reason="runs in the non-simulator pytest process")


@NOT_SIMULATED
@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_cuda_kernel_compiles_for_sm90(shard):
    _typecheck("--quick", "--shard", f"{shard}/{SHARDS}")


@NOT_SIMULATED
@pytest.mark.slow
def test_narrow_integer_half_and_strided_signatures_compile_for_sm90():
    _typecheck("--narrow")


def _typecheck(*args):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    r = subprocess.run([sys.executable, "-m", "nbtorch.cuda.typecheck", *args], env=env,
                       capture_output=True, text=True, timeout=1800)
    if r.returncode == 3:
        pytest.skip("NVVM not installed: pip install 'numba-cuda[cu13]' ("
                    + r.stderr.strip()[:200] + ")")
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
    assert " 0/" not in r.stdout, r.stdout[-2000:]       # the shard compiled something
