"""A second process loads the elementwise kernels from Numba's on-disk cache."""
import os
import subprocess
import sys

_SCRIPT = """
import numba.core.compiler as compiler
compiled = []
_compile = compiler.compile_extra
def counting(*args, **kwargs):
    compiled.append(1)
    return _compile(*args, **kwargs)
compiler.compile_extra = counting

import nbtorch as torch
from nbtorch.ops import pointwise_activation as act
x = torch.linspace(-2, 2, 9)
y = (torch.exp(x) + torch.tanh(x) * 2 - act.gelu(x) / 3).clamp(-1, 1)
z = torch.where(y > 0, y, 0.0) ** 2
w = act.gelu(torch.linspace(-3, 3, 5000))       # a contiguous loop of kernels/scalar.py
print(len(compiled), float(z.sum()) + float(w.sum()))
"""


def _run(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    res = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    n, value = res.stdout.split()
    return int(n), float(value)


def test_second_process_compiles_nothing(tmp_path):
    first, v1 = _run(tmp_path)
    second, v2 = _run(tmp_path)
    assert first > 0
    assert second == 0, f"{second} kernels recompiled despite the cache"
    assert v1 == v2
