"""PyTorch's deprecated spellings of the memory counters: they warn (FutureWarning, with
PyTorch's messages) and call the current names."""
import warnings

from . import memory

__all__ = ["memory_cached", "max_memory_cached", "reset_max_memory_cached",
           "reset_max_memory_allocated"]


def memory_cached(device=None):
    """Deprecated; see `memory_reserved`."""
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
                  FutureWarning, stacklevel=2)
    return memory.memory_reserved(device)


def max_memory_cached(device=None):
    """Deprecated; see `max_memory_reserved`."""
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to "
                  "`torch.cuda.max_memory_reserved`", FutureWarning, stacklevel=2)
    return memory.max_memory_reserved(device)


def reset_max_memory_allocated(device=None):
    """Deprecated; calls `reset_peak_memory_stats` (which resets every peak)."""
    warnings.warn("torch.cuda.reset_max_memory_allocated now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    return memory.reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None):
    """Deprecated; calls `reset_peak_memory_stats` (which resets every peak)."""
    warnings.warn("torch.cuda.reset_max_memory_cached now calls "
                  "torch.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                  FutureWarning, stacklevel=2)
    return memory.reset_peak_memory_stats(device)
