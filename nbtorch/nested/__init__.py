"""Nested (jagged) tensors, ``torch.nested``: work in progress."""
__all__ = []
