"""GPU cases: elementwise bandwidth against a device-to-device copy, and launch overhead.

Need a real NVIDIA GPU (the driver leaves them out when nbtorch sees none; run by
scripts/gpu_check.sh). Every step ends with a synchronize, so the wall time the
worker measures is the device time plus one launch and one sync.

1. Bandwidth on 10^8 float32: add, mul by a scalar, relu, gelu, exp, copy_, a
   strided add (transposed operand) and a broadcast add. Bytes moved =
   (inputs + output) * 4 * n, printed as a fraction of a device-to-device copy
   of the same size (`cuMemcpyDtoD`, measured in the same run; issue 4's target
   is >= 0.7). PyTorch runs the same cases when it sees a GPU.
2. Launch overhead: 100 `a + b` on 1-element CUDA tensors, then one synchronize,
   reported per op.

    python benchmarks/bench_cuda.py [--rounds 5] [--quick]
"""
import sys

from _case import Case, Skip, both

_N = 10 ** 8
_SIDE = 10 ** 4                      # _SIDE**2 == _N: the 2-D cases
_GROUP = "CUDA, float32"


def _cuda_setup(build):
    """A setup on the GPU: build(lib, sync) -> step; Skip when there is none."""
    def setup(lib):
        if not lib.cuda.is_available():
            raise Skip("no CUDA GPU")
        return build(lib, lib.cuda.synchronize)
    return setup


def _rand(lib, *shape):
    return lib.rand(*shape, device="cuda")


def _op(fn, square=False):
    def build(lib, sync):
        if square:
            x, y = _rand(lib, _SIDE, _SIDE), _rand(lib, _SIDE)
        else:
            x, y = _rand(lib, _N), _rand(lib, _N)
        dst = lib.empty(_N, device="cuda")

        def step():
            fn(lib, x, y, dst)
            sync()
        return step
    return _cuda_setup(build)


def _launches(lib, sync):
    a, b = lib.ones(1, device="cuda"), lib.ones(1, device="cuda")

    def step():
        for _ in range(100):
            a + b
        sync()
    return step


def _case(name, fn, arrays, square=False):
    return Case(f"{name} 1e8", _GROUP, device="cuda", limit="cuda copy", bytes=arrays * 4 * _N,
                **both(_op(fn, square)))


CASES = [
    _case("add", lambda lib, x, y, d: x + y, 3),
    _case("mul scalar", lambda lib, x, y, d: x * 2.0, 2),
    _case("relu", lambda lib, x, y, d: lib.relu(x), 2),
    _case("gelu", lambda lib, x, y, d: lib.nn.functional.gelu(x), 2),
    _case("exp", lambda lib, x, y, d: lib.exp(x), 2),
    _case("copy_", lambda lib, x, y, d: d.copy_(x), 2),
    _case("add transposed", lambda lib, x, y, d: x + x.t(), 3, square=True),
    _case("add broadcast row", lambda lib, x, y, d: x + y, 2, square=True),
    Case("a + b, 1 element, CUDA launch", _GROUP, device="cuda", per_call=100,
         **both(_cuda_setup(_launches))),
]

if __name__ == "__main__":
    import _driver
    argv = sys.argv[1:]
    if "--quick" in argv:                 # scripts/gpu_check.sh --quick
        argv = [a for a in argv if a != "--quick"] + ["--rounds", "2", "--samples", "2"]
    raise SystemExit(_driver.main(["bench_cuda"], argv + ["--cuda", "yes", "--no-memory"]))
