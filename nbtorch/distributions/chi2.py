"""`torch.distributions.chi2`'s import path: Chi2 lives beside Gamma (`gamma.py`)."""
from .gamma import Chi2

__all__ = ["Chi2"]
