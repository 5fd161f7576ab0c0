"""Inputs to NumPy: nbtorch tensors (any device, detached), arrays and Python numbers.

Every summary builder starts here, so a tensor that requires grad or lives on
a GPU is logged like a plain array (PyTorch's ``make_np``).
"""
import numpy as np

import nbtorch
from nbtorch._tensor import Tensor


def make_np(x):
    """`x` as a NumPy array: a scalar becomes a 1-element array, a tensor is detached
    and copied to the host (bfloat16, which NumPy lacks, becomes float32)."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if isinstance(x, Tensor):
        return tensor_to_np(x)
    raise NotImplementedError(
        f"Got {type(x)}, but numpy array or torch tensor are expected.")


def tensor_to_np(t):
    """A detached host copy (a view on CPU) of tensor `t` as a NumPy array."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.dtype == nbtorch.bfloat16:
        t = t.float()
    return t.numpy()
