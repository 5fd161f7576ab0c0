"""NUMBA_DISABLE_JIT=1 (README: step through a CPU kernel as plain Python) runs the
kernels whose fast paths use LLVM intrinsics (512-bit loops, float32 bit casts, the
BLAS-by-address convolution) through their Python stand-ins, to float32 rounding of the
compiled results."""
import os
import subprocess
import sys

import numpy as np

_PROGRAM = """
import sys, numpy as np, nbtorch
import nbtorch.nn.functional as F
r = np.random.default_rng(0)
a = nbtorch.tensor(r.standard_normal(1 << 17).astype(np.float32))
x = nbtorch.tensor(r.standard_normal((2, 3, 6, 6)).astype(np.float32), requires_grad=True)
w = nbtorch.tensor(r.standard_normal((4, 3, 3, 3)).astype(np.float32), requires_grad=True)
F.max_pool2d(F.conv2d(x, w, padding=1), 2).sum().backward()
np.savez(sys.argv[1], exp=a.exp().numpy(), tanh=a.tanh().numpy(), gelu=F.gelu(a).numpy(),
         randn=nbtorch.randn(5000, generator=nbtorch.Generator().manual_seed(1)).numpy(),
         gw=w.grad.numpy())
"""


def _run(path, disable):
    env = dict(os.environ, NUMBA_DISABLE_JIT="1" if disable else "0")
    out = subprocess.run([sys.executable, "-c", _PROGRAM, str(path)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return np.load(path)


def test_kernels_run_as_python_with_numba_disabled(tmp_path):
    python = _run(tmp_path / "python.npz", True)
    compiled = _run(tmp_path / "compiled.npz", False)
    for name in compiled.files:
        np.testing.assert_allclose(python[name], compiled[name], rtol=2e-6, atol=1e-6,
                                   err_msg=name)
