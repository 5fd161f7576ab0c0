"""``torch._dynamo``'s small public corner: `reset()` and `config` (see nbtorch.compile)."""
from ..jit._compile import config, reset

__all__ = ["reset", "config"]
