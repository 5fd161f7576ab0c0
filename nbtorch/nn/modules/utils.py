"""Helpers of ``torch.nn.modules.utils`` that programs call directly."""

__all__ = ["consume_prefix_in_state_dict_if_present"]


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
