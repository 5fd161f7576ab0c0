"""Alias of ``nbtorch.vision.transforms.functional`` (kept for code that imports it here)."""
from nbtorch.vision.transforms.functional import *  # noqa: F401,F403
from nbtorch.vision.transforms.functional import __all__  # noqa: F401
