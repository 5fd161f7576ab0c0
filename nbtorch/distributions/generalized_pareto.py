"""`torch.distributions.generalized_pareto`'s import path: GeneralizedPareto lives beside
Pareto (`pareto.py`)."""
from .pareto import GeneralizedPareto

__all__ = ["GeneralizedPareto"]
