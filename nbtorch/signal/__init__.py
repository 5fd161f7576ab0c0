"""``torch.signal``: signal-processing helpers; `windows` holds the window functions."""
from . import windows  # noqa: F401

__all__ = ["windows"]
