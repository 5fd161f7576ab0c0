"""`nn.attention`: PyTorch's scaled-dot-product-attention backend selection.

nbtorch has one SDPA implementation (`F.scaled_dot_product_attention`, the math
path), so `sdpa_kernel` only records the backends asked for (and `current_backends`
reports them); code written for PyTorch's fused kernels runs unchanged.
"""
import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS", "can_use_flash_attention",
           "can_use_efficient_attention"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """PyTorch's SDPA backends (values as PyTorch's)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_current = [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
            SDPBackend.CUDNN_ATTENTION]


def current_backends():
    """The backends the innermost `sdpa_kernel` allows."""
    return list(_current)


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Context manager allowing only `backends` (an SDPBackend or a list of them).

    Example:
        >>> with sdpa_kernel(SDPBackend.MATH):
        ...     out = F.scaled_dot_product_attention(q, k, v)
    """
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of "
                             f"SDPBackend instances, got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    previous = list(_current)
    _current[:] = list(dict.fromkeys(backends))
    try:
        yield {}
    finally:
        _current[:] = previous


def can_use_flash_attention(params=None, debug=False):
    """False: nbtorch has no fused flash-attention kernel."""
    return False


def can_use_efficient_attention(params=None, debug=False):
    """False: nbtorch has no memory-efficient attention kernel."""
    return False
