"""Optimizers and learning-rate schedulers, as torch.optim.

Every update is one fused Numba kernel per parameter, looked up per device in
the registry (``sgd_step``, ``adam_step``, ``rmsprop_step``, ``adagrad_step``).
"""
from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "lr_scheduler"]
