"""Softmax and the sum/max/min reductions have one kernel per walk (rows, chunks of long
rows, walking rows; serial and parallel): the launcher picks the one that fits, so a
program compiles only the walks it runs (a softmax over the last dim used to compile the
column walk's helpers too: a third of the demo's first-run compile time)."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from nbtorch.kernels.cpu import reduce as R, softmax as S


@pytest.mark.parametrize("shape, kernel", [
    ((3, 5, 1), R.sum_rows), ((1 << 15, 32, 1), R.sum_rows_parallel),
    ((1, 1 << 20, 1), R.sum_row_chunks_parallel), ((3, 4, 5), R.sum_reduce),
    ((4, 1 << 12, 64), R.sum_reduce_parallel)])
def test_pick_walk(shape, kernel):
    kernels = (R.sum_rows, R.sum_rows_parallel, R.sum_row_chunks_parallel, R.sum_reduce,
               R.sum_reduce_parallel)
    picked, a = R.pick_walk(np.empty(shape, np.float32), *kernels)
    assert picked is kernel
    assert a.shape == (shape if shape[2] > 1 else shape[:2])


def test_walks_agree_with_numpy():
    rng = np.random.default_rng(0)
    for shape in ((3, 5, 1), (1, 1 << 17, 1), (3, 4, 5)):
        a = rng.standard_normal(shape).astype(np.float32)
        out = np.empty((shape[0], shape[2]), np.float32)
        R.sum_(a, out)
        np.testing.assert_allclose(out, a.sum(1), rtol=1e-5, atol=1e-3)
        R.amax(a, out)
        np.testing.assert_array_equal(out, a.max(1))
        y = np.empty_like(a)
        S.softmax(a, y)
        e = np.exp(a - a.max(1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_a_row_softmax_compiles_only_the_row_walk():
    program = textwrap.dedent("""
        import nbtorch as torch
        import nbtorch.nn.functional as F
        from nbtorch.kernels.cpu import reduce as R, softmax as S
        x = torch.randn(4, 10)
        F.log_softmax(x, 1).sum(1)
        used = [k.__name__ for k in (S.softmax_rows, S.softmax_rows_parallel, S.softmax_cols,
                                     S.softmax_cols_parallel, R.sum_rows, R.sum_reduce)
                if k.signatures]
        print(used)
    """)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "['softmax_rows', 'sum_rows']"
