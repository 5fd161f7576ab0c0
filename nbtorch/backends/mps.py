"""`torch.backends.mps`: Apple's Metal backend, which nbtorch does not have."""

__all__ = ["is_available", "is_built", "is_macos13_or_newer", "is_macos_or_newer"]


def is_available():
    """False: nbtorch has no MPS device (its devices are 'cpu' and 'cuda')."""
    return False


def is_built():
    return False


def is_macos13_or_newer(minor=0):
    return False


def is_macos_or_newer(major, minor):
    return False
