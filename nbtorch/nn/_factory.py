"""`nn.factory_kwargs`: PyTorch's helper that checks and merges a module's factory
keyword arguments (device, dtype, memory_format, or a `factory_kwargs` dict)."""

__all__ = ["factory_kwargs"]


def factory_kwargs(kwargs):
    """A dict of the factory arguments in `kwargs`, ready for `empty(..., **result)`.

    Example:
        >>> nn.factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": torch.float64}})
        {'dtype': torch.float64, 'device': 'cpu'}
    """
    if kwargs is None:
        return {}
    simple = ("device", "dtype", "memory_format")
    expected = set(simple) | {"factory_kwargs"}
    if not kwargs.keys() <= expected:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected}")
    out = dict(kwargs.get("factory_kwargs", {}))
    for k in simple:
        if k in kwargs:
            if k in out:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            out[k] = kwargs[k]
    return out
