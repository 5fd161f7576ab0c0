"""`nn.utils.stateless.functional_call`: run a module with some parameters and buffers
replaced by given tensors, for one call (what ``torch.func`` transforms differentiate).

The replacements are put into the owning modules' `_parameters` / `_buffers` for the
call and the originals restored afterwards, even if the call raises. Tied weights (one
parameter reachable under two names) follow a replacement given under either name
unless ``tie_weights=False``.
"""
from .named_member_accessor import NamedMemberAccessor  # noqa: F401

__all__ = ["functional_call"]


def _merge(parameter_and_buffer_dicts):
    if isinstance(parameter_and_buffer_dicts, dict):
        return dict(parameter_and_buffer_dicts)
    merged = {}
    for d in parameter_and_buffer_dicts:
        clash = [k for k in d if k in merged]
        if clash:
            raise ValueError(f"{clash} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        merged.update(d)
    return merged


def _tied_names(module):
    """{name: [other names of the same tensor]} over parameters and buffers."""
    by_id = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        by_id.setdefault(id(t), []).append(name)
    return {n: [m for m in names if m != n] for names in by_id.values() if len(names) > 1
            for n in names}


def _is_parameter(v):
    from ..parameter import Parameter
    return isinstance(v, Parameter)


def _owner(module, name):
    prefix, _, attr = name.rpartition(".")
    return (module.get_submodule(prefix) if prefix else module), attr


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with its parameters/buffers named in the dict(s)
    replaced by the given tensors.

    Example:
        >>> params = {k: v.detach() * 0 for k, v in model.named_parameters()}
        >>> functional_call(model, params, (x,))
    """
    values = _merge(parameter_and_buffer_dicts)
    if tie_weights:
        tied = _tied_names(module)
        for name in list(values):
            for other in tied.get(name, ()):
                if other in values and values[other] is not values[name]:
                    raise ValueError(f"functional_call got multiple values for keys "
                                     f"{sorted([name, other])}, which are tied. Consider "
                                     "using tie_weights=False")
                values[other] = values[name]
    if strict:
        names = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
            {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(names - set(values))
        unexpected = sorted(set(values) - names)
        if missing or unexpected:
            msg = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
            if unexpected:
                msg.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
            if missing:
                msg.append("Missing key(s): " + ", ".join(repr(k) for k in missing) + ".")
            raise RuntimeError("\n\t".join(msg))
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    undo = []
    try:
        for name, value in values.items():
            owner, attr = _owner(module, name)
            for store in (owner._parameters, owner._buffers):
                if attr in store:
                    undo.append((store, attr, store[attr]))
                    store[attr] = value
                    break
            else:
                if attr not in owner.__dict__ and _is_parameter(getattr(owner, attr, None)) \
                        and not _is_parameter(value):
                    # a parameter reached another way (a compiled module's original's,
                    # `_orig_mod.weight`): an attribute of that name would be ignored
                    raise TypeError(f"cannot assign '{value.type()}' as parameter '{attr}' "
                                    "(torch.nn.Parameter or None expected)")
                missing = object()
                old = owner.__dict__.get(attr, missing)
                undo.append((owner.__dict__, attr, old))
                owner.__dict__[attr] = value
        return module(*args, **(kwargs or {}))
    finally:
        for store, attr, old in reversed(undo):
            if old is not None and type(old) is object:
                del store[attr]
            else:
                store[attr] = old
