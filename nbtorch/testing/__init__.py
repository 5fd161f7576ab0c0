"""``nbtorch.testing`` (PyTorch: ``torch.testing``): `assert_close` and `make_tensor`.

Example:
    >>> from nbtorch.testing import assert_close, make_tensor
    >>> x = make_tensor(3, dtype=nbtorch.float32, device="cpu")
    >>> assert_close(x * 1.0, x)
"""
from ._comparison import assert_close, assert_allclose
from ._creation import make_tensor

__all__ = ["assert_close", "assert_allclose", "make_tensor"]
