"""Utilities above the tensor core: ``nbtorch.utils.data`` (datasets, samplers, DataLoader)."""
from nbtorch.utils import data

__all__ = ["data"]
