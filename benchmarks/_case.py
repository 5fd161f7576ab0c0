"""A benchmark case: one name, one setup function per framework (see _driver.py).

Case modules (bench_*.py) hold a list `CASES` of these. They must not import
nbtorch or torch at module level: every worker process imports every case module,
and the NumPy worker must stay free of both. Each setup function receives the
framework's module (`nbtorch`, `numpy` or `torch`), builds its data, and returns a
zero-argument step that the worker times; nothing it does before returning is timed.
"""
from dataclasses import dataclass, field

FRAMEWORKS = ("nbtorch", "numpy", "torch")


class Skip(Exception):
    """Raised by a setup function when the case cannot run here (e.g. no CUDA GPU)."""


@dataclass
class Case:
    """name, group and per-framework setups; optional work per call for the limit columns.

    bytes: bytes one call reads and writes (reported as a fraction of the machine
        limit named by `limit`, a copy bandwidth measured in the same run).
    flops: floating-point operations of one call (a fraction of the GEMM peak).
    number: calls per timed sample (None: calibrated to --min-sample-ms).
    per_call: operations one call performs (a step that launches 100 CUDA ops and
        synchronises once reports time / 100).
    memory: also measure the step's peak resident memory in a fresh worker.
    """
    name: str
    group: str
    nbtorch: object = None
    numpy: object = None
    torch: object = None
    bytes: float = None
    flops: float = None
    limit: str = None
    number: int = None
    per_call: int = 1
    memory: bool = False
    device: str = "cpu"
    module: str = field(default=None, repr=False)   # set by the driver

    def setup(self, framework):
        return getattr(self, framework)

    def frameworks(self):
        return [f for f in FRAMEWORKS if getattr(self, f) is not None]


def both(fn):
    """nbtorch= and torch= from one setup function written against the shared API."""
    return {"nbtorch": fn, "torch": fn}
