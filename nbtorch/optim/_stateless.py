"""``swap_in_optimizer_params_and_state``: run an optimizer on other tensors for a while.

Inside the context the optimizer's param groups hold the supplied parameters and
hyper-parameters and its state is the supplied ``state_dict()``-shaped state (its
tensors updated in place); on exit the live groups and state come back. Errors
are PyTorch's RuntimeErrors.
"""
import contextlib
from collections import defaultdict

from .._tensor import Tensor

__all__ = ["swap_in_optimizer_params_and_state"]

_NAME = "swap_in_optimizer_params_and_state"


def _checked_state(state):
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping "
                           "packed parameter ids to per-param state dicts, got "
                           f"{type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by "
                           "packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be "
                           "dictionaries.")
    return state


def _checked_ids(index, group, swapin_group):
    """The packed ids of one swap-in group, after PyTorch's checks against the live one."""
    if not isinstance(swapin_group, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = swapin_group.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style "
                           "param_groups[*]['params'] entries keyed by packed parameter ids.")
    if len(group["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {index} has a different number of "
                           "params than the live optimizer param group.")
    only_swapin = [k for k in swapin_group if k not in group]
    only_live = [k for k in group if k not in swapin_group]
    if only_swapin or only_live:
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to "
                           "exactly match the live optimizer group keys for group "
                           f"{index}. Keys only in swap-in: {only_swapin}. Keys only in live: "
                           f"{only_live}.")
    return ids


def _plan(optimizer, parameters, optim_state):
    """(swap-in state by id, [(live group, swap-in group, its parameters)])."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _checked_state(optim_state.get("state"))
    groups = optim_state.get("param_groups")
    if not isinstance(groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list "
                           f"of param-group dicts, got {type(groups).__name__}.")
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups "
                           "than the live optimizer.")
    flat = list(parameters.values())
    plan, seen, offset = [], set(), 0
    for index, (group, swapin_group) in enumerate(zip(optimizer.param_groups, groups)):
        ids = _checked_ids(index, group, swapin_group)
        seen.update(ids)
        if offset + len(ids) > len(flat):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                               "optimizer.param_groups ordering.")
        plan.append((group, swapin_group, flat[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by "
                           f"packed parameter ids from param_groups[*]['params']; got extra "
                           f"keys {extra!r}.")
    return state, plan


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters, swapin_optim_state):
    """Temporarily give `optimizer` the parameters `swapin_parameters` (a name -> tensor
    dict in param-group order) and the state and hyper-parameters of
    `swapin_optim_state` (an ``optimizer.state_dict()``-shaped dict).

    Example:
        >>> with swap_in_optimizer_params_and_state(opt, dict(model.named_parameters()),
        ...                                         saved_state):
        ...     opt.step()
    """
    state, plan = _plan(optimizer, swapin_parameters, swapin_optim_state)
    live_state = optimizer.state
    snapshots = [dict(group) for group in optimizer.param_groups]
    try:
        swapped = defaultdict(dict)
        for group, swapin_group, params in plan:
            group.update({k: v for k, v in swapin_group.items() if k != "params"})
            group["params"] = params
            for param, pid in zip(params, swapin_group["params"]):
                swapped[param] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = live_state
