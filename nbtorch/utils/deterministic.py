"""torch.utils.deterministic: ``fill_uninitialized_memory``, a module attribute (True by
default) that PyTorch reads while deterministic algorithms are on, to fill the memory of
``empty()`` and friends (NaN for floats, the largest value for integers).

nbtorch records the switch (read it back, set it) but its ``empty()`` does not fill yet:
its memory is NumPy's uninitialised memory in either case.
"""
import sys
import types

__all__ = ["fill_uninitialized_memory"]

_STATE = {"fill": True}


class _Deterministic(types.ModuleType):
    @property
    def fill_uninitialized_memory(self):
        """Whether to fill uninitialized memory with a known value when
        ``torch.use_deterministic_algorithms()`` is set to True."""
        return _STATE["fill"]

    @fill_uninitialized_memory.setter
    def fill_uninitialized_memory(self, mode):
        if not isinstance(mode, bool):
            raise RuntimeError(f"expected a bool, but got {type(mode).__name__}")
        _STATE["fill"] = mode


sys.modules[__name__].__class__ = _Deterministic
