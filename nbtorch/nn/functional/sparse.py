"""Embeddings, bags of embeddings and one_hot, as `nn.functional` exports them.

The op definitions (argument checks, shapes, kernel dispatch, backward) live in
`nbtorch/ops/embedding.py` and `embedding_bag.py`; this module is the PyTorch-shaped
name for them.
"""
from ...ops.embedding import *  # noqa: F401,F403
from ...ops.embedding import __all__ as _embedding_all
from ...ops.embedding_bag import embedding_bag  # noqa: F401

__all__ = list(_embedding_all) + ["embedding_bag"]
