"""Normalization layers' functions, as `nn.functional` exports them.

The op definitions (argument checks, shapes, kernel dispatch, backward) live in
`nbtorch/ops/normalization.py` (and `normalization_lrn.py`: local response
normalisation); this module is the PyTorch-shaped name for them.
"""
from ...ops.normalization import *  # noqa: F401,F403
from ...ops.normalization import __all__ as _normalization_all
from ...ops.normalization_lrn import *  # noqa: F401,F403
from ...ops.normalization_lrn import __all__ as _lrn_all

__all__ = list(_normalization_all) + list(_lrn_all)
