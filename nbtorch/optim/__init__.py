"""Optimizers and learning-rate schedulers, as torch.optim.

The classes here hold param_groups, per-parameter state and PyTorch's
hyper-parameter checks; each update is an op of `nbtorch/ops/optim_updates.py`
(``adam_update``, ...) that runs one fused kernel per parameter, looked up per
device in the registry (``sgd_step``, ``adam_step``, ...).
"""
from . import lr_scheduler, swa_utils
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .asgd import ASGD
from .lbfgs import LBFGS
from .muon import Muon
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD
from .sparse_adam import SparseAdam
from ._stateless import swap_in_optimizer_params_and_state

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
           "NAdam", "RAdam", "ASGD", "Rprop", "LBFGS", "SparseAdam", "Adafactor", "Muon",
           "lr_scheduler", "swa_utils", "swap_in_optimizer_params_and_state"]
