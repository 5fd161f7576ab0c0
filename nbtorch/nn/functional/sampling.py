"""Padding and resizing (pad, interpolate), as `nn.functional` exports them.

The op definitions (argument checks, shapes, kernel dispatch, backward) live in
`nbtorch/ops/resampling.py`; this module is the PyTorch-shaped name for them.
"""
from ...ops.resampling import *  # noqa: F401,F403
from ...ops.resampling import __all__  # noqa: F401
