"""Convolutions, as `nn.functional` exports them.

The op definitions (argument checks, shapes, kernel dispatch, backward) live in
`nbtorch/ops/conv.py`; this module is the PyTorch-shaped name for them.
"""
from ...ops.conv import *  # noqa: F401,F403
from ...ops.conv import __all__  # noqa: F401
