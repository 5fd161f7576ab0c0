"""Pooling, as `nn.functional` exports them.

The op definitions (argument checks, shapes, kernel dispatch, backward) live in
`nbtorch/ops/pooling.py` and `nbtorch/ops/pooling_extra.py` (unpooling, power
and fractional pooling); this module is the PyTorch-shaped name for them.
"""
from ...ops.pooling import *  # noqa: F401,F403
from ...ops.pooling import __all__ as _pooling_all
from ...ops.pooling_extra import *  # noqa: F401,F403
from ...ops.pooling_extra import __all__ as _extra_all

__all__ = list(_pooling_all) + list(_extra_all)
