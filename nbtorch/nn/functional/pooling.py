"""Pooling, as `nn.functional` exports them.

The op definitions (argument checks, shapes, kernel dispatch, backward) live in
`nbtorch/ops/pooling.py`; this module is the PyTorch-shaped name for them.
"""
from ...ops.pooling import *  # noqa: F401,F403
from ...ops.pooling import __all__  # noqa: F401
