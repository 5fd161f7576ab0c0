"""`torch.distributions.beta`'s import path: Beta lives beside Dirichlet (`dirichlet.py`)."""
from .dirichlet import Beta

__all__ = ["Beta"]
