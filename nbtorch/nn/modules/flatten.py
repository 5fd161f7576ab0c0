"""Flatten and Unflatten: reshape a range of dimensions."""
from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flatten dims start_dim..end_dim into one (default: all but the batch dim).

    Example:
        >>> nn.Flatten()(torch.zeros(32, 1, 5, 5)).shape
        torch.Size([32, 25])
    """

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expand dimension `dim` into the shape `unflattened_size`.

    Example:
        >>> nn.Unflatten(1, (2, 5, 5))(torch.zeros(2, 50)).shape
        torch.Size([2, 2, 5, 5])
    """

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, int):
            if not isinstance(unflattened_size, (tuple, list)) or \
                    not all(isinstance(s, int) for s in unflattened_size):
                raise TypeError("unflattened_size must be a tuple of ints, but found type "
                                f"{type(unflattened_size).__name__}")
        elif isinstance(dim, str):
            if not isinstance(unflattened_size, (tuple, list)):
                raise TypeError("unflattened_size must be a tuple of tuples, but found type "
                                f"{type(unflattened_size).__name__}")
        else:
            raise TypeError(f"invalid argument type for dim parameter: {type(dim).__name__}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        # one op (a trace records it whole, so other batch sizes work)
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
