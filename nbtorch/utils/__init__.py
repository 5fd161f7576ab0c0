"""Utilities above the tensor core: ``nbtorch.utils.data`` (datasets, samplers, DataLoader),
``checkpoint`` (activation recomputation), ``dlpack`` (zero-copy exchange); ``benchmark``
(Timer) and ``hooks`` (RemovableHandle) are imported on their own."""
from nbtorch.utils import data
from nbtorch.utils import checkpoint, dlpack  # noqa: F401

__all__ = ["data", "checkpoint", "dlpack"]
