"""Utilities above the tensor core: ``nbtorch.utils.data`` (datasets, samplers, DataLoader),
``checkpoint`` (activation recomputation), ``dlpack`` (zero-copy exchange); the others
(``benchmark``, ``hooks``, ``tensorboard`` - which needs the optional tensorboard package -,
``flop_counter``...) on first attribute access, so ``torch.utils.hooks`` works under
``import nbtorch as torch`` without importing them all."""
from nbtorch.utils import data
from nbtorch.utils import checkpoint, dlpack  # noqa: F401

__all__ = ["data", "checkpoint", "dlpack"]


_LAZY = {"benchmark", "hooks", "_pytree", "tensorboard", "flop_counter", "module_tracker", "model_zoo", "collect_env",
         "deterministic", "weak", "show_pickle", "throughput_benchmark", "file_baton",
         "backcompat"}


def __getattr__(name):
    if name in _LAZY:                   # torch.utils.<name> under `import nbtorch as torch`
        import importlib
        return importlib.import_module(f"nbtorch.utils.{name}")
    raise AttributeError(f"module 'nbtorch.utils' has no attribute '{name}'")
