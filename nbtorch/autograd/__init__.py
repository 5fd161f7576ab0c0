"""Tape-based reverse-mode automatic differentiation (see DESIGN.md, Autograd)."""
from .engine import backward, grad
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, no_grad,
                        set_grad_enabled)
from .gradcheck import gradcheck, gradgradcheck
from . import graph
from . import forward_ad, functional  # noqa: F401  (torch.autograd.functional, forward_ad)
from .variable import Variable
from .anomaly_mode import detect_anomaly, set_detect_anomaly

__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable",
           "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "gradcheck", "gradgradcheck", "graph", "Variable",
           "functional", "forward_ad", "detect_anomaly", "set_detect_anomaly"]
