"""The family kernels (reductions, matmul, indexing, ...) compile to PTX for sm_90.

Runs in its own process without the simulator (as tests/cuda/test_typecheck.py);
skipped without NVVM (``numba-cuda[cu13]``).
"""
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import importlib, sys
from numba import cuda
from nbtorch.cuda import typecheck as tc
from nbtorch.cuda._register_families import FAMILIES
if not cuda.is_available():
    tc._fake_current_device(tc.CC)
try:
    cuda.compile_ptx(tc._probe, (), cc=tc.CC)
except Exception as e:
    print(e); sys.exit(3)
fails, n = [], 0
for fam in FAMILIES:
    module = importlib.import_module("nbtorch.kernels.cuda." + fam)
    for label, fn, types in module.typecheck_signatures():
        n += 1
        try:
            cuda.compile_ptx(fn, types, cc=tc.CC)
        except Exception as e:
            fails.append(f"{fam}.{label}: {type(e).__name__}: {' '.join(str(e).split())[:600]}")
print("\n".join(fails)); print(f"compiled {n - len(fails)}/{n}")
sys.exit(1 if fails else 0)
"""


@pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") == "1",
                    reason="runs in the non-simulator pytest process")
def test_family_kernels_compile_for_sm90():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                       text=True, timeout=1200)
    if r.returncode == 3:
        pytest.skip("NVVM not installed: pip install 'numba-cuda[cu13]'")
    assert r.returncode == 0, r.stdout[-6000:] + r.stderr[-3000:]
