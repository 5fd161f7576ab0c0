"""Matrix products on float32: the cases (see _driver.py).

n x n @ n x n for n = 128, 512, 1024, 2048 and a batched 64 x (128x128 @ 128x128)
through each framework's matmul (fresh outputs, as a user's `a @ b`), printed as
a fraction of the GEMM peak measured in the same run (NumPy's BLAS, `out=`); a small
batch through a Linear layer's weight (x @ w.T, no grad: 8 or 32 rows, 1024 -> 1024).
nbtorch's own Numba GEMM kernel (`use_cpu_matmul("numba")`'s kernel, called
directly into a reused output) has rows of its own.

    python benchmarks/bench_matmul.py [--only 1024] [--rounds 5]
"""
from _case import Case

_GROUP = "matmul, float32"


def _operands(lib, shape_a, shape_b):
    import numpy as np
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape_a, dtype=np.float32)
    b = rng.standard_normal(shape_b, dtype=np.float32)
    return (a, b) if lib is np else (lib.from_numpy(a), lib.from_numpy(b))


def _matmul(shape_a, shape_b):
    def setup(lib):
        a, b = _operands(lib, shape_a, shape_b)
        return lambda: lib.matmul(a, b)
    return setup


def _linear(rows, n_in, n_out):
    """x (rows, n_in) @ w.T for w (n_out, n_in): a Linear layer's product on a small batch."""
    def setup(lib):
        x, w = _operands(lib, (rows, n_in), (n_out, n_in))
        return (lambda: x @ w.T) if lib.__name__ == "numpy" else (lambda: x @ w.t())
    return setup


def _numba_gemm(n):
    def setup(nb):
        import numpy as np
        from nbtorch.kernels.cpu import matmul as kernels
        a, b = _operands(np, (n, n), (n, n))
        out = np.empty((n, n), np.float32)
        return lambda: kernels.matmul_numba(a, b, out)
    return setup


def _square(n):
    s = _matmul((n, n), (n, n))
    return Case(f"matmul {n}", _GROUP, nbtorch=s, numpy=s, torch=s, flops=2 * n ** 3)


CASES = [_square(n) for n in (128, 512, 1024, 2048)] + [
    Case("bmm 64x128x128", _GROUP, nbtorch=_matmul((64, 128, 128), (64, 128, 128)),
         numpy=_matmul((64, 128, 128), (64, 128, 128)),
         torch=_matmul((64, 128, 128), (64, 128, 128)), flops=2 * 64 * 128 ** 3),
    *[Case(f"x @ w.t(), {rows} x 1024 -> 1024", _GROUP, nbtorch=_linear(rows, 1024, 1024),
           numpy=_linear(rows, 1024, 1024), torch=_linear(rows, 1024, 1024),
           flops=2 * rows * 1024 * 1024) for rows in (8, 32)],
    Case("matmul 512, nbtorch's Numba GEMM kernel", _GROUP, nbtorch=_numba_gemm(512),
         flops=2 * 512 ** 3),
    Case("matmul 1024, nbtorch's Numba GEMM kernel", _GROUP, nbtorch=_numba_gemm(1024),
         flops=2 * 1024 ** 3),
]

if __name__ == "__main__":
    import _driver
    raise SystemExit(_driver.main(["bench_matmul"]))
