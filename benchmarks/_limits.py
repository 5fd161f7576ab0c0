"""The machine's own limits, measured in the same run as the cases they scale.

Copy bandwidth: `np.copyto` of float32 arrays into a reused buffer (no page faults),
at 10^7 elements (80 MB moved: beyond the caches) and 10^6 (8 MB: in L3); a fresh
`np.copy` (which, like every op, allocates and faults in its output) is listed
for comparison. GEMM peak: float32 `np.matmul(out=)` through NumPy's BLAS at
1024 and 2048, the faster of the two. On CUDA: a device-to-device copy.
"""
from _case import Case, Skip

_N7, _N6, _N8 = 10 ** 7, 10 ** 6, 10 ** 8
GROUP = "machine limits"


def _copy(n, fresh=False):
    def setup(np):
        src = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
        dst = np.empty_like(src)
        return (lambda: src.copy()) if fresh else (lambda: np.copyto(dst, src))
    return setup


def _gemm(n):
    def setup(np):
        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        out = np.empty((n, n), np.float32)
        return lambda: np.matmul(a, b, out=out)
    return setup


def _d2d(nb):
    if not nb.cuda.is_available():
        raise Skip("no CUDA GPU")
    x, dst = nb.ones(_N8, device="cuda"), nb.empty(_N8, device="cuda")

    def step():
        dst._storage.data.copy_to_device(x._storage.data)
        nb.cuda.synchronize()
    return step


CASES = [
    Case("copy 1e7 float32", GROUP, numpy=_copy(_N7), bytes=8 * _N7),
    Case("copy 1e7 float32, fresh output", GROUP, numpy=_copy(_N7, fresh=True), bytes=8 * _N7),
    Case("copy 1e6 float32", GROUP, numpy=_copy(_N6), bytes=8 * _N6),
    Case("GEMM 1024 float32", GROUP, numpy=_gemm(1024), flops=2 * 1024 ** 3),
    Case("GEMM 2048 float32", GROUP, numpy=_gemm(2048), flops=2 * 2048 ** 3),
    Case("device copy 1e8 float32", GROUP, nbtorch=_d2d, bytes=8 * _N8, device="cuda"),
]

# limit name -> the cases whose best rate defines it
LIMITS = {"copy": ["copy 1e7 float32"], "copy 1e6": ["copy 1e6 float32"],
          "gemm": ["GEMM 1024 float32", "GEMM 2048 float32"],
          "cuda copy": ["device copy 1e8 float32"]}


def needed(cases):
    """Names of the limit cases that the selected cases are scaled by."""
    names = set()
    for c in cases:
        if c.bytes:
            names.update(LIMITS[c.limit or "copy"])
        if c.flops:
            names.update(LIMITS["gemm"])
    if "copy 1e7 float32" in names:
        names.add("copy 1e7 float32, fresh output")
    return [c for c in CASES if c.name in names]
