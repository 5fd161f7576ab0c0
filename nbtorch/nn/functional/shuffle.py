"""Rearrangements: pixel_shuffle / pixel_unshuffle (sub-pixel convolution), channel_shuffle."""

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]


def pixel_shuffle(input, upscale_factor):
    """(*, C*r^2, H, W) -> (*, C, H*r, W*r).

    Example:
        >>> F.pixel_shuffle(torch.zeros(1, 9, 4, 4), 3).shape
        torch.Size([1, 1, 12, 12])
    """
    r = upscale_factor
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.dim()} dimension(s)")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)="
                           f"{c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    perm = list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2]
    return x.permute(*perm).reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r^2, H, W) (the inverse of pixel_shuffle)."""
    r = downscale_factor
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, "
                           f"but got input with {input.dim()} dimension(s)")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by "
                           f"downscale_factor, but got {h}x{w} and {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    perm = list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3]
    return x.permute(*perm).reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    """(N, g*k, *) -> channels reordered as k groups of g (ShuffleNet)."""
    n, c = input.shape[:2]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} "
                           f"channels and {groups} groups.")
    rest = list(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(
        n, c, *rest)


native_channel_shuffle = channel_shuffle
