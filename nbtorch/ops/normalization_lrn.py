"""Local response normalisation across channels: `local_response_norm` and the legacy
`cross_map_lrn2d` of `nn.CrossMapLRN2d`, both written with other ops (autograd gives
the gradients).

    local_response_norm: y = x / (k + alpha/size * sum of x^2 over the `size` channels
                         around c (size//2 before, (size-1)//2 after, zero padded))^beta,
    PyTorch's composition: the squares average-pooled over channels (avg_pool2d/3d).
"""
from .pooling import avg_pool2d, avg_pool3d
from .resampling import pad

__all__ = ["local_response_norm"]


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Normalise each channel by the energy of its neighbouring channels (AlexNet's LRN).

    Args:
        input: (N, C, *) with at least 3 dims.
        size: number of neighbouring channels summed over.
        alpha, beta, k: y = x / (k + alpha * mean of the squares) ** beta.

    Example:
        >>> F.local_response_norm(nbtorch.ones(1, 4, 2, 2), 2).shape
        torch.Size([1, 4, 2, 2])
    """
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).reshape(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


def cross_map_lrn2d(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Lua Torch's SpatialCrossMapLRN as PyTorch's `nn.CrossMapLRN2d` computes it.

    y = x * (k + alpha/size * s)^-beta with s[c] = sum of x^2 over channels
    [0, min(c + p - 1, C - 1)] minus channels [1, c - p] (p = (size - 1)//2 + 1): the
    running window of PyTorch's loop, which never removes channel 0 once c > p (kept
    as PyTorch has it). Gradients are this function's own (PyTorch's hand-written
    backward is that of a symmetric window, so it differs where that quirk shows).
    """
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    from .._dtype import int64
    channels = input.shape[1]
    pre = (size - 1) // 2 + 1
    sums = input.mul(input).cumsum(1)
    # the window ends as ops on the input, not lists of Python ints, and no branch on the
    # channel count (for C <= p + 1 `drop` is 0): a trace records them for any C
    c = sums.new_ones(channels, dtype=int64).cumsum(0) - 1
    hi = c.add(pre - 1).clamp(max=channels - 1)
    lo = c.sub(pre).clamp(min=0)
    drop = sums.index_select(1, lo) - sums.narrow(1, 0, 1)        # channels [1, c - p]
    scale = sums.index_select(1, hi) - drop
    return input * scale.mul(alpha / size).add(k).pow(-beta)
