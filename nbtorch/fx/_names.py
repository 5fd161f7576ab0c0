"""How a call target is spelled: in printed graphs (`torch.relu`) and in generated code.

nbtorch's ops live in `nbtorch.ops.*` but users call them as `torch.add`,
`F.relu`, `torch.linalg.norm`; graphs and generated code use those public
spellings, with ``torch`` bound to ``nbtorch`` (``import nbtorch as torch``),
so printed graphs read like PyTorch's.
"""
import builtins
import operator
import types

__all__ = ["public_namespaces", "qualified_name", "pretty_target", "type_repr"]

_PUBLIC = None          # id(function) -> "torch.relu", built on first use


def public_namespaces():
    """[(printed prefix, module)] whose public functions are nbtorch ops, most specific last."""
    import nbtorch
    from nbtorch import fft, linalg, special
    from nbtorch.nn import functional
    return [("torch", nbtorch), ("torch.linalg", linalg), ("torch.fft", fft),
            ("torch.special", special), ("torch.nn.functional", functional)]


def _public_names():
    global _PUBLIC
    if _PUBLIC is None:
        table = {}
        for prefix, mod in public_namespaces():
            for name, obj in vars(mod).items():
                if name.startswith("_") or not callable(obj) or isinstance(obj, type):
                    continue
                if isinstance(obj, types.ModuleType):
                    continue
                obj = getattr(obj, "__autocast_original__", obj)   # autocast's hook
                key = id(obj)
                # F.relu is nbtorch.relu: the first (shortest) spelling wins, except
                # that a function defined in nn.functional prints as F's.
                own = getattr(obj, "__module__", "").startswith("nbtorch.nn.functional")
                if key not in table or (own and prefix == "torch.nn.functional"):
                    table[key] = (f"{prefix}.{name}", obj)
        _PUBLIC = table
    return _PUBLIC


def qualified_name(fn):
    """'torch.add' for nbtorch.add, 'operator.add', 'math.sqrt', 'mymod.myfn' otherwise."""
    if getattr(builtins, getattr(fn, "__name__", ""), None) is fn:
        return fn.__name__
    hit = _public_names().get(id(fn))
    if hit is not None and hit[1] is fn:
        return hit[0]
    if isinstance(fn, type):
        return f"{fn.__module__}.{fn.__qualname__}"
    name = getattr(fn, "__name__", None) or type(fn).__name__
    module = getattr(fn, "__module__", None) or "__main__"
    if module == "_operator":
        module = "operator"
    return f"{module}.{name}"


def pretty_target(target):
    """The target as graph printing shows it: builtins.getattr, operator.add, torch.relu."""
    if isinstance(target, str):
        return target
    name = getattr(target, "__name__", None)
    module = getattr(target, "__module__", None)
    if name is not None and module == "builtins":
        return f"builtins.{name}"
    if name is not None and module == "_operator":
        return f"operator.{name}"
    if name is not None and getattr(operator, name, None) is target:
        return f"operator.{name}"
    return qualified_name(target)


def type_repr(t):
    """A type annotation as code: 'torch.Tensor', 'int', 'typing.List[int]'."""
    if isinstance(t, type):
        if t.__module__ == "builtins":
            return t.__qualname__
        import nbtorch
        if getattr(nbtorch, t.__name__, None) is t:
            return f"torch.{t.__name__}"
        return f"{t.__module__}.{t.__qualname__}"
    if isinstance(t, str):
        return t
    return repr(t)
