"""``torch.utils.benchmark``: `Timer` runs a statement many times and returns a
`Measurement` (per-run times, mean, median, IQR), as PyTorch's does; `Compare` prints
measurements side by side. The statement runs with nbtorch's threads as set by
`num_threads` (restored afterwards)."""
from .timer import Compare, Measurement, Timer

__all__ = ["Timer", "Measurement", "Compare"]
