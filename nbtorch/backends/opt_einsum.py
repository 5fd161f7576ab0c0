"""`torch.backends.opt_einsum`: nbtorch's einsum contracts operands left to right and
does not use the opt_einsum package; the settings are kept for programs that set them."""
import importlib.util

enabled = True
strategy = "auto"

__all__ = ["is_available", "get_opt_einsum", "enabled", "strategy"]


def is_available():
    return importlib.util.find_spec("opt_einsum") is not None


def get_opt_einsum():
    if not is_available():
        return None
    import opt_einsum
    return opt_einsum
