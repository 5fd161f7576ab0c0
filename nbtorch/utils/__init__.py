"""Utilities above the tensor core: ``nbtorch.utils.data`` (datasets, samplers, DataLoader),
``checkpoint`` (activation recomputation), ``dlpack`` (zero-copy exchange); ``benchmark``
(Timer) and ``hooks`` (RemovableHandle) are imported on their own; ``tensorboard``
(SummaryWriter, needs the optional tensorboard package) on first attribute access."""
from nbtorch.utils import data
from nbtorch.utils import checkpoint, dlpack  # noqa: F401

__all__ = ["data", "checkpoint", "dlpack"]


def __getattr__(name):
    if name == "tensorboard":           # torch.utils.tensorboard under `import nbtorch as torch`
        import importlib
        return importlib.import_module("nbtorch.utils.tensorboard")
    raise AttributeError(f"module 'nbtorch.utils' has no attribute '{name}'")
