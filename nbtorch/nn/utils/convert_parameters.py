"""Flatten parameters into one vector and back (for second-order methods, EMAs)."""
from ..._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_param_device(param, old_device):
    if old_device is not None and param.device != old_device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return param.device


def parameters_to_vector(parameters):
    """Concatenate the flattened parameters into one 1-D tensor.

    Example:
        >>> vec = nn.utils.parameters_to_vector(model.parameters())
    """
    from ... import cat
    device, flat = None, []
    for p in parameters:
        device = _check_param_device(p, device)
        flat.append(p.reshape(-1))
    return cat(flat)


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the 1-D `vec` into the parameters' data."""
    if not isinstance(vec, Tensor):
        from ..modules.module import typename
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    device, pointer = None, 0
    for p in parameters:
        device = _check_param_device(p, device)
        n = p.numel()
        p.data = vec[pointer:pointer + n].view_as(p).data
        pointer += n
