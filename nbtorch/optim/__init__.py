"""Optimizers and learning-rate schedulers, as torch.optim.

The classes here hold param_groups, per-parameter state and PyTorch's
hyper-parameter checks; each update is an op of `nbtorch/ops/optim_updates.py`
(``adam_update``, ...) that runs one fused kernel per parameter, looked up per
device in the registry (``sgd_step``, ``adam_step``, ...).
"""
from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
