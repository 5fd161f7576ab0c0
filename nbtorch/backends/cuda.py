"""`torch.backends.cuda`: matmul precision flags and the attention-kernel switches.

``matmul.allow_tf32`` reads and writes ``nbtorch.get/set_float32_matmul_precision``
(True is 'high', False 'highest'), as in PyTorch; nbtorch's CUDA matmuls compute in
float32 either way. The scaled-dot-product-attention switches are recorded and
answered; nbtorch has one attention implementation (the math one).
"""
import contextlib

from .. import _settings

__all__ = ["matmul", "is_built", "preferred_linalg_library", "preferred_blas_library",
           "flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled",
           "enable_mem_efficient_sdp", "math_sdp_enabled", "enable_math_sdp",
           "cudnn_sdp_enabled", "enable_cudnn_sdp", "sdp_kernel"]


class cuBLASModule:
    """``torch.backends.cuda.matmul``: unknown attributes raise, as PyTorch's."""

    _FLAGS = ("allow_fp16_reduced_precision_reduction",
              "allow_bf16_reduced_precision_reduction", "allow_fp16_accumulation")

    def __init__(self):
        object.__setattr__(self, "_values", {
            "allow_fp16_reduced_precision_reduction": True,
            "allow_bf16_reduced_precision_reduction": True,
            "allow_fp16_accumulation": False})

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _settings.get_float32_matmul_precision() != "highest"
        if name in self._FLAGS:
            return self._values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            _settings.set_float32_matmul_precision("high" if value else "highest")
        elif name in self._FLAGS:
            self._values[name] = value
        else:
            raise AttributeError(f"Unknown attribute {name}")


matmul = cuBLASModule()

_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built():
    """True: nbtorch ships CUDA kernels (whether a GPU is present is cuda.is_available())."""
    return True


def preferred_linalg_library(backend=None):
    return "default"


def preferred_blas_library(backend=None):
    return "default"


def flash_sdp_enabled():
    return _SDP["flash"]


def enable_flash_sdp(enabled):
    _SDP["flash"] = bool(enabled)


def mem_efficient_sdp_enabled():
    return _SDP["mem_efficient"]


def enable_mem_efficient_sdp(enabled):
    _SDP["mem_efficient"] = bool(enabled)


def math_sdp_enabled():
    return _SDP["math"]


def enable_math_sdp(enabled):
    _SDP["math"] = bool(enabled)


def cudnn_sdp_enabled():
    return _SDP["cudnn"]


def enable_cudnn_sdp(enabled):
    _SDP["cudnn"] = bool(enabled)


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True,
               enable_cudnn=True):
    """Set the attention switches for a ``with`` block (PyTorch's deprecated form)."""
    old = dict(_SDP)
    _SDP.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient,
                cudnn=enable_cudnn)
    try:
        yield
    finally:
        _SDP.update(old)
