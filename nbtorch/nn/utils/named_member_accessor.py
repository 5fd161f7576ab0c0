"""`NamedMemberAccessor` (`nn.utils.stateless`): get, set, delete and swap a module's
tensors and submodules by dotted name ("layer1.0.weight"), memoising submodule lookups;
what functional_call-style code uses to put tensors in and take them out again."""
from ..._tensor import Tensor

__all__ = ["NamedMemberAccessor"]

_MISSING = object()


def _swap_tensor(module, name, tensor, allow_missing=False):
    if not isinstance(tensor, Tensor) and tensor is not None and tensor is not _MISSING:
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    if "." in name:
        raise KeyError('tensor name can\'t contain "."')
    if name == "":
        raise KeyError('tensor name can\'t be empty string ""')
    for store in (module._parameters, module._buffers):
        if name in store:
            orig = store[name]
            if tensor is _MISSING:
                del store[name]
            else:
                store[name] = tensor
            return orig
    if hasattr(module, name):
        orig = getattr(module, name)
        if not isinstance(orig, Tensor):
            raise TypeError(f"attribute `{name}`: {orig} is not an instance of torch.Tensor")
    elif not allow_missing:
        raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
    else:
        orig = _MISSING
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif hasattr(module, name):
        delattr(module, name)
    return orig


class NamedMemberAccessor:
    """Access `module`'s tensors by dotted name.

    Example:
        >>> acc = NamedMemberAccessor(model)
        >>> old = acc.swap_tensor("0.weight", torch.zeros(3, 4))
    """

    def __init__(self, module):
        self.module = module
        self.memo = {}

    def get_submodule(self, name):
        from ..modules.module import Module
        if not name:
            return self.module
        if name in self.memo:
            return self.memo[name]
        prefix, dot, attr = name.rpartition(".")
        module = self.get_submodule(prefix) if dot else self.module
        try:
            sub = getattr(module, attr)
        except AttributeError as ex:
            raise AttributeError(f"{module._get_name()} has no attribute `{attr}`") from ex
        if not isinstance(sub, Module):
            raise TypeError(f"submodule `{name}`: {sub} is not an instance of torch.nn.Module")
        self.memo[name] = sub
        return sub

    def swap_submodule(self, path, value):
        prefix, _, attr = path.rpartition(".")
        module = self.get_submodule(prefix)
        if attr not in module._modules:
            raise KeyError(f"submodule {attr} does not exist")
        orig = module._modules[attr]
        module._modules[attr] = value
        self.memo.pop(path, None)
        return orig

    def get_tensor(self, name):
        prefix, _, attr = name.rpartition(".")
        sub = self.get_submodule(prefix)
        try:
            t = getattr(sub, attr)
        except AttributeError as ex:
            raise AttributeError(f"{sub._get_name()} has no attribute `{name}`") from ex
        if not isinstance(t, Tensor) and t is not None:
            raise TypeError(f"{t} is not an instance of torch.Tensor")
        return t

    def set_tensor(self, name, value):
        prefix, _, attr = name.rpartition(".")
        _swap_tensor(self.get_submodule(prefix), attr, value, allow_missing=True)

    def del_tensor(self, name):
        prefix, _, attr = name.rpartition(".")
        sub = self.get_submodule(prefix)
        try:
            delattr(sub, attr)
        except AttributeError as ex:
            raise AttributeError(f"{sub._get_name()} has no attribute `{name}`") from ex

    def swap_tensor(self, name, value, allow_missing=False):
        prefix, _, attr = name.rpartition(".")
        return _swap_tensor(self.get_submodule(prefix), attr, value, allow_missing)

    def get_tensors(self, names):
        return [self.get_tensor(n) for n in names]

    def set_tensors(self, names, values):
        names, values = list(names), list(values)
        if len(names) != len(values):
            raise AssertionError(f"names and values must have the same length, got "
                                 f"{len(names)} names and {len(values)} values")
        for n, v in zip(names, values):
            self.set_tensor(n, v)

    def set_tensors_dict(self, named_tensors):
        for n, v in named_tensors.items():
            self.set_tensor(n, v)

    def del_tensors(self, names):
        for n in names:
            self.del_tensor(n)

    def swap_tensors(self, names, values, allow_missing=False):
        names, values = list(names), list(values)
        if len(names) != len(values):
            raise AssertionError(f"names and values must have the same length, got "
                                 f"{len(names)} names and {len(values)} values")
        return [self.swap_tensor(n, v, allow_missing) for n, v in zip(names, values)]

    def swap_tensors_dict(self, named_tensors, allow_missing=False):
        """(original tensors by name, names that were missing)."""
        orig, missing = {}, []
        for n, v in named_tensors.items():
            old = self.swap_tensor(n, v, allow_missing=True)
            if old is _MISSING:
                missing.append(n)
            else:
                orig[n] = old
        if missing and not allow_missing:
            for n in missing:
                self.del_tensor(n)
            self.swap_tensors_dict(orig, allow_missing=True)
            raise RuntimeError(f"Missing key(s): {', '.join(map(repr, missing))}.")
        return orig, missing

    def check_keys(self, keys):
        """(missing names, unexpected names) of `keys` against the module's tensors."""
        keys = set(keys)
        valid = {n for n, _ in self.named_tensors(remove_duplicate=False)}
        return sorted(valid - keys), sorted(keys - valid)

    def named_parameters(self, remove_duplicate=True):
        yield from self.module.named_parameters(remove_duplicate=remove_duplicate)

    def named_buffers(self, remove_duplicate=True):
        yield from self.module.named_buffers(remove_duplicate=remove_duplicate)

    def named_tensors(self, remove_duplicate=True):
        yield from self.named_parameters(remove_duplicate)
        yield from self.named_buffers(remove_duplicate)

    def named_modules(self, remove_duplicate=True):
        yield from self.module.named_modules(remove_duplicate=remove_duplicate)
