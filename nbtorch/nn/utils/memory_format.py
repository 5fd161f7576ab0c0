"""`nn.utils.memory_format`: store the weights of 2-D/3-D convolutions in another memory
format (channels_last for NHWC pipelines); values and shapes are unchanged."""

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, kinds):
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Recursively give every Conv2d/ConvTranspose2d weight `memory_format`; returns module."""
    from ..modules.conv import Conv2d, ConvTranspose2d
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """Recursively give every Conv3d/ConvTranspose3d weight `memory_format`; returns module."""
    from ..modules.conv import Conv3d, ConvTranspose3d
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
