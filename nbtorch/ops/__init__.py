"""Op definitions: argument checks, output shape and dtype, dispatch, backward formula."""


def __getattr__(name):
    """``torch.ops.<namespace>`` (PyTorch's op namespaces: mylib, aten; see
    nbtorch/_library_ns.py) for a name that is neither an attribute nor a submodule here:
    ``from nbtorch.ops import <submodule>`` still imports the submodule."""
    import importlib.util
    if name.startswith("__") or importlib.util.find_spec(f"{__name__}.{name}") is not None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .._library_ns import namespace
    ns = globals()[name] = namespace(name)      # found directly from now on
    return ns
