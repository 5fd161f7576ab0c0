"""``torch.utils.hooks``: `RemovableHandle`, the handle every hook registration returns."""
from ..autograd.graph import RemovableHandle

__all__ = ["RemovableHandle"]
