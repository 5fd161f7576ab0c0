"""set_num_threads drives both Numba's pool and NumPy's OpenBLAS; Numba's OpenMP workers
wait passively without nbtorch changing the environment other libraries see."""
import os
import subprocess
import sys

import pytest

import nbtorch as torch
from nbtorch.kernels.cpu import blas


def test_set_num_threads_sets_numba_and_blas():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert torch.get_num_threads() == 1
        assert blas.threads() == 1          # (1 as well where NumPy has no OpenBLAS)
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="positive integer"):
        torch.set_num_threads(0)


# A fresh process: import nbtorch, run a parallel kernel (which starts Numba's threading
# layer), then report the environment and, where Numba runs on GNU OpenMP, the spin count
# its runtime took from OMP_WAIT_POLICY / GOMP_SPINCOUNT when it loaded (libgomp's
# omp_display_env(verbose) prints it).
_PROBE = r"""
import ctypes, json, os, sys
import nbtorch
env_after_import = os.environ.get("OMP_WAIT_POLICY")
nbtorch.ones(1 << 21).sum()                     # above the parallel threshold
import numba
spin = None
paths = [ln.split()[-1] for ln in open("/proc/self/maps") if "libgomp" in ln]
if numba.threading_layer() == "omp" and paths:
    lib = ctypes.CDLL(paths[0])
    if hasattr(lib, "omp_display_env"):
        r, w = os.pipe()
        saved = os.dup(2)
        os.dup2(w, 2)
        lib.omp_display_env(1)
        os.dup2(saved, 2)
        os.close(w)
        text = os.read(r, 1 << 16).decode()
        spin = [ln.split("=")[1].strip(" '") for ln in text.splitlines() if "GOMP_SPINCOUNT" in ln]
        spin = int(spin[0]) if spin else None
print(json.dumps({"after_import": env_after_import, "spin": spin,
                  "after_kernel": os.environ.get("OMP_WAIT_POLICY"),
                  "spin_env": os.environ.get("GOMP_SPINCOUNT")}))
"""


def _probe(**env):
    base = {k: v for k, v in os.environ.items()
            if k not in ("OMP_WAIT_POLICY", "NBTORCH_OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
                         "NBTORCH_OMP_SPINCOUNT", "NUMBA_THREADING_LAYER")}
    base.update(env)
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                         env=base, timeout=300)
    assert out.returncode == 0, out.stderr
    import json
    return json.loads(out.stdout.splitlines()[-1])


def test_import_and_parallel_kernels_leave_the_environment_alone_and_numba_passive():
    r = _probe()
    assert r["after_import"] is None and r["after_kernel"] is None and r["spin_env"] is None
    if r["spin"] is not None:                   # GNU OpenMP: passive means no spinning
        assert r["spin"] == 0


def test_user_choices_win():
    r = _probe(OMP_WAIT_POLICY="ACTIVE")          # the user's own setting is kept
    assert r["after_import"] == r["after_kernel"] == "ACTIVE"
    if r["spin"] is not None:
        assert r["spin"] > 300000
    r = _probe(GOMP_SPINCOUNT="1234")
    assert r["spin_env"] == "1234"
    r = _probe(NBTORCH_OMP_SPINCOUNT="10000")      # opt in: a short spin, then sleep
    assert r["after_kernel"] is None and r["spin_env"] is None
    if r["spin"] is not None:
        assert r["spin"] == 10000
    r = _probe(NBTORCH_OMP_WAIT_POLICY="")         # opt out: the runtime's default
    assert r["after_kernel"] is None
    if r["spin"] is not None:
        assert r["spin"] > 10000
