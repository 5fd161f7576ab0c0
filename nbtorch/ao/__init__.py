"""``nbtorch.ao``: architecture optimisation -- quantization (``ao.quantization``) and the
quantized modules (``ao.nn``)."""
from . import nn, quantization  # noqa: F401
