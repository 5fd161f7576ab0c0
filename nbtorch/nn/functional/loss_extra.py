"""Losses beyond `loss.py`, as `nn.functional` exports them: ctc_loss (an op definition with
Numba kernels, `nbtorch/ops/ctc_loss.py`), multilabel_margin_loss and
triplet_margin_with_distance_loss (written with other ops)."""
from ...ops.ctc_loss import ctc_loss  # noqa: F401

__all__ = ["ctc_loss"]
