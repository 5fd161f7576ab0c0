"""Tensor.__getitem__ / __setitem__ (basic indexing here; advanced indexing to come)."""
from .._tensor import Tensor
from .indexing_basic import basic_getitem, is_basic

__all__ = []


def __getitem__(self, index):
    if is_basic(index):
        return basic_getitem(self, index)
    raise NotImplementedError("advanced indexing is not implemented yet")


def __setitem__(self, index, value):
    if is_basic(index):
        target = basic_getitem(self, index)
        if isinstance(value, Tensor):
            target.copy_(value)
        else:
            target.fill_(value)
        return
    raise NotImplementedError("advanced indexing is not implemented yet")


Tensor.__getitem__ = __getitem__
Tensor.__setitem__ = __setitem__
