"""Embeddings and one_hot, as `nn.functional` exports them.

The op definitions (argument checks, shapes, kernel dispatch, backward) live in
`nbtorch/ops/embedding.py`; this module is the PyTorch-shaped name for them.
"""
from ...ops.embedding import *  # noqa: F401,F403
from ...ops.embedding import __all__  # noqa: F401
