"""Normalization layers' functions, as `nn.functional` exports them.

The op definitions (argument checks, shapes, kernel dispatch, backward) live in
`nbtorch/ops/normalization.py`; this module is the PyTorch-shaped name for them.
"""
from ...ops.normalization import *  # noqa: F401,F403
from ...ops.normalization import __all__  # noqa: F401
