"""`torch.distributions.half_cauchy`'s import path: HalfCauchy lives beside HalfNormal
(`half_normal.py`)."""
from .half_normal import HalfCauchy

__all__ = ["HalfCauchy"]
