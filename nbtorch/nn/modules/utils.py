"""Helpers of ``torch.nn.modules.utils`` that programs call directly (custom conv and
pooling layers import `_pair` and friends from here)."""
import collections.abc
from itertools import repeat

__all__ = ["consume_prefix_in_state_dict_if_present"]


def _ntuple(n, name="parse"):
    """A function turning a scalar into an n-tuple of it (an iterable into a tuple)."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t, n):
    """`t` reversed, each element repeated `n` times (conv padding -> `F.pad` order)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    """`out_size` with its None entries taken from the trailing `defaults`."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Remove `prefix` from the keys of `state_dict` that start with it, in place: a state
    dict saved from a DistributedDataParallel or DataParallel wrapper ("module.fc.weight")
    then loads into the bare model ("fc.weight"). The `_metadata` keys follow."""
    for key in [k for k in state_dict if k.startswith(prefix)]:
        state_dict[key[len(prefix):]] = state_dict.pop(key)
    meta = getattr(state_dict, "_metadata", None)
    if meta is not None:
        bare = prefix.rstrip(".")
        for key in [k for k in meta if k and (k == bare or k.startswith(prefix))]:
            meta[key[len(prefix):] if key != bare else ""] = meta.pop(key)
