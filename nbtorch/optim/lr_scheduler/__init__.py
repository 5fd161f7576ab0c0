"""Learning-rate schedulers, as torch.optim.lr_scheduler.

`base` holds `LRScheduler` and the helpers every scheduler shares; each other
module holds one family of schedules and imports only `base` (and, for the
composite ones, their siblings), never this package.
"""
from .base import EPOCH_DEPRECATION_WARNING, LRScheduler, _LRScheduler  # noqa: F401
from .composite import ChainedScheduler, SequentialLR
from .cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts
from .cyclic import CyclicLR
from .factor import (ConstantLR, ExponentialLR, LambdaLR, LinearLR, MultiplicativeLR,
                     MultiStepLR, PolynomialLR, StepLR)
from .one_cycle import OneCycleLR
from .plateau import ReduceLROnPlateau

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR",
           "CosineAnnealingLR", "LinearLR", "ConstantLR", "OneCycleLR",
           "ReduceLROnPlateau", "SequentialLR", "MultiplicativeLR", "PolynomialLR",
           "CosineAnnealingWarmRestarts", "ChainedScheduler", "CyclicLR"]
