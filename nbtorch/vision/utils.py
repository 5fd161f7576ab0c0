"""``make_grid`` and ``save_image``: tile a batch of images into one picture and save it."""
import math

import numpy as np

import nbtorch

__all__ = ["make_grid", "save_image"]


def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False,
              pad_value=0.0):
    """Tile a ``(B, C, H, W)`` batch (or a list of ``(C, H, W)`` images) into one
    ``(3 or C, rows * (H + padding) + padding, cols * (W + padding) + padding)`` image,
    ``nrow`` images per row. One-channel images are repeated to 3 channels;
    ``normalize=True`` shifts each image (``scale_each``) or the batch to [0, 1], over
    ``value_range`` (min, max) or the values' own range.

    Example:
        >>> make_grid(nbtorch.ones(3, 1, 2, 2), nrow=2, padding=1).shape
        torch.Size([3, 7, 7])
    """
    if isinstance(tensor, (list, tuple)):
        tensor = nbtorch.stack(list(tensor), dim=0)
    if not isinstance(tensor, nbtorch.Tensor):
        raise TypeError(f"tensor should be of type torch.Tensor, got {type(tensor)}")
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:
        if tensor.shape[0] == 1:
            tensor = nbtorch.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.shape[1] == 1:
        tensor = nbtorch.cat((tensor, tensor, tensor), 1)
    if normalize:
        tensor = tensor.clone()
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max "
                            "are numbers")

        def norm_range(t):
            low, high = value_range if value_range is not None else (float(t.min()),
                                                                     float(t.max()))
            t.clamp_(min=low, max=high)
            t.sub_(low).div_(max(high - low, 1e-5))

        if scale_each:
            for t in tensor:
                norm_range(t)
        else:
            norm_range(tensor)
    if tensor.shape[0] == 1:
        return tensor.squeeze(0)
    nmaps = tensor.shape[0]
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = int(tensor.shape[2] + padding), int(tensor.shape[3] + padding)
    grid = tensor.new_full((tensor.shape[1], height * ymaps + padding, width * xmaps + padding),
                           pad_value)
    for k in range(nmaps):
        y, x = divmod(k, xmaps)
        grid[:, y * height + padding:(y + 1) * height, x * width + padding:(x + 1) * width] = \
            tensor[k]
    return grid


def save_image(tensor, fp, format=None, **kwargs):
    """Save a tensor (or batch, tiled by ``make_grid(**kwargs)``) in [0, 1] as an image file
    (Pillow needed): values are scaled by 255, rounded and clamped to uint8."""
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("save_image needs Pillow (pip install pillow)") from None
    grid = make_grid(tensor, **kwargs)
    array = (grid.detach().cpu().to(nbtorch.float32).numpy() * 255 + 0.5)
    array = np.clip(array, 0, 255).astype(np.uint8).transpose(1, 2, 0)
    Image.fromarray(np.ascontiguousarray(array)).save(fp, format=format)
