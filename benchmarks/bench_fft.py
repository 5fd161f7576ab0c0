"""Discrete Fourier transforms on float32/complex64: the cases (see _driver.py).

fft.rfft of 2^20 float32 values (the issue's target: within 1.5x of PyTorch), a
non-power-of-two length, and a batch of short transforms, through each framework's
rfft/fft (nbtorch's CPU engine is NumPy's pocketfft, so the NumPy row shows the
engine alone and the nbtorch row adds the op's overhead).

    python benchmarks/bench_fft.py [--only rfft] [--rounds 5]
"""
from _case import Case

_GROUP = "fft, float32"


def _on(shape, fn, complex_=False):
    def setup(lib):
        import numpy as np
        rng = np.random.default_rng(0)
        a = rng.standard_normal(shape, dtype=np.float32)
        if complex_:
            a = (a + 1j * rng.standard_normal(shape, dtype=np.float32)).astype(np.complex64)
        x = a if lib is np else lib.from_numpy(a)
        return lambda: fn(lib, x)
    return setup


def _case(name, shape, fn, complex_=False):
    s = _on(shape, fn, complex_)
    return Case(name, _GROUP, nbtorch=s, numpy=s, torch=s)


CASES = [
    _case("rfft 2^20", (1 << 20,), lambda lib, x: lib.fft.rfft(x)),
    _case("rfft 1e6 (2^6 5^6)", (10 ** 6,), lambda lib, x: lib.fft.rfft(x)),
    _case("fft 1024 x 256 complex, dim 1", (1024, 256), lambda lib, x: lib.fft.fft(x),
          complex_=True),
]

if __name__ == "__main__":
    import _driver
    raise SystemExit(_driver.main(["bench_fft"]))
