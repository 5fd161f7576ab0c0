"""torch.utils.deterministic: ``fill_uninitialized_memory``, a module attribute (True by
default) that PyTorch reads while deterministic algorithms are on, to fill the memory of
``empty()`` and friends (NaN for floats, the largest value for integers).

nbtorch's ``empty``, ``empty_like``, ``empty_strided`` and ``new_empty`` fill as PyTorch's
(`nbtorch._settings.fill_uninitialized`).
"""
import sys
import types

__all__ = ["fill_uninitialized_memory"]

from .._settings import _STATE as _SETTINGS


class _Deterministic(types.ModuleType):
    @property
    def fill_uninitialized_memory(self):
        """Whether to fill uninitialized memory with a known value when
        ``torch.use_deterministic_algorithms()`` is set to True."""
        return _SETTINGS["fill_uninitialized_memory"]

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode):
        if not isinstance(mode, bool):
            raise RuntimeError(f"expected a bool, but got {type(mode).__name__}")
        _SETTINGS["fill_uninitialized_memory"] = mode


sys.modules[__name__].__class__ = _Deterministic
