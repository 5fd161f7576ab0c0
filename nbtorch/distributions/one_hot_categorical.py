"""`torch.distributions.one_hot_categorical`'s import path: the one-hot categoricals live
beside Categorical (`categorical.py`)."""
from .categorical import OneHotCategorical, OneHotCategoricalStraightThrough

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]
