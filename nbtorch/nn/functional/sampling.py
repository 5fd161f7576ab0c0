"""Padding, resizing and spatial transformers (pad, interpolate, grid_sample, affine_grid),
as `nn.functional` exports them.

The op definitions (argument checks, shapes, kernel dispatch, backward) live in
`nbtorch/ops/resampling.py` and `grid_sample.py`; this module is the PyTorch-shaped name
for them.
"""
from ...ops.grid_sample import *  # noqa: F401,F403
from ...ops.grid_sample import __all__ as _grid_sample_all
from ...ops.resampling import *  # noqa: F401,F403
from ...ops.resampling import __all__ as _resampling_all

__all__ = list(_resampling_all) + list(_grid_sample_all)
