"""Dropout, as `nn.functional` exports them.

The op definitions (argument checks, shapes, kernel dispatch, backward) live in
`nbtorch/ops/dropout.py`; this module is the PyTorch-shaped name for them.
"""
from ...ops.dropout import *  # noqa: F401,F403
from ...ops.dropout import __all__  # noqa: F401
