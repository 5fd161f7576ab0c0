"""`torch.autograd.forward_ad`: dual tensors (primal + tangent), computed on the tape.

PyTorch carries a tangent beside every result and propagates it op by op. nbtorch has
reverse-mode formulas only, so a dual tensor is a tape leaf remembered with its tangent,
and `unpack_dual(y)` computes y's tangent when asked, by the double-backward trick: with
``g(u) = sum_i J_i^T u`` over the level's duals (one backward pass, linear in u),
``tangent(y) = d/du sum_i <g_i(u), t_i>`` (a second pass). The values are those of
forward mode. What differs: a dual tensor and what is computed from it report
``requires_grad=True`` (they are on the tape), ops must run with gradients enabled
(under ``no_grad`` nothing is recorded and the tangent is None), and each `unpack_dual`
costs two backward passes over the graph.

Example:
    >>> with dual_level():
    ...     x = make_dual(nbtorch.tensor([1.0, 2.0]), nbtorch.ones(2))
    ...     unpack_dual((x * x).sum()).tangent      # 2 * (1 + 2)
    tensor(6.)
"""
from collections import namedtuple

from .._tensor import Tensor
from . import grad_mode
from .engine import grad as _grad

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])

_LEVELS = []            # one list of (dual tensor, tangent) per open level, innermost last


def enter_dual_level():
    """Open a new forward-AD level; returns its index."""
    if _LEVELS:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _LEVELS.append([])
    return len(_LEVELS) - 1


def exit_dual_level(*, level=None):
    """Close the innermost level: its dual tensors lose their tangents."""
    if level is None:
        level = len(_LEVELS) - 1
    if level != len(_LEVELS) - 1:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    _LEVELS.pop()


class dual_level:
    """``with dual_level():`` scopes the dual tensors made inside it."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def _level(level):
    if level is None:
        level = len(_LEVELS) - 1
    if level < 0 or level >= len(_LEVELS):
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level "
                           "exists, make sure to enter_dual_level() first.")
    return _LEVELS[level]


def make_dual(tensor, tangent, *, level=None):
    """A tensor with `tensor`'s values carrying `tangent` (same shape, floating point)."""
    duals = _level(level)
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual expects Tensors for both the primal and the tangent")
    if not tensor.dtype.is_floating_point:
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{tensor.dtype}")
    if not tangent.dtype.is_floating_point:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{tangent.dtype}")
    if tangent.shape != tensor.shape:
        raise RuntimeError("Trying to set a forward gradient that has a different size than "
                           "that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    with grad_mode.enable_grad():
        dual = tensor.view_as(tensor) if tensor.requires_grad else \
            tensor.detach().requires_grad_(True)
    duals.append((dual, tangent.detach()))
    return dual


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of `tensor`; the tangent is None when it does not depend on a dual
    tensor of the level (or outside any level)."""
    if level is None:
        level = len(_LEVELS) - 1
    if not isinstance(tensor, Tensor) or level < 0 or level >= len(_LEVELS):
        return UnpackedDualTensor(tensor, None)
    duals = _LEVELS[level]
    primal = tensor.detach()
    for d, t in duals:
        if d is tensor:
            return UnpackedDualTensor(primal, t)
    if not tensor.requires_grad or not duals:
        return UnpackedDualTensor(primal, None)
    return UnpackedDualTensor(primal, _tangent(tensor, duals))


def _tangent(y, duals):
    from ..ops.creation import ones_like, zeros_like
    with grad_mode.enable_grad():
        # the dummy cotangent: any value gives the same tangent (the backward is linear in
        # it), but formulas that take its logarithm (logcumsumexp's) are NaN at 0
        u = ones_like(y).requires_grad_(True)
        got = _grad([y], [d for d, _ in duals], [u], create_graph=True, retain_graph=True,
                    allow_unused=True)
        total = None
        for g, (_, t) in zip(got, duals):
            if g is not None:
                term = (g * t).sum()
                total = term if total is None else total + term
        if total is None or not total.requires_grad:
            return None if total is None else zeros_like(y)
        tangent, = _grad([total], [u], allow_unused=True)
    return zeros_like(y) if tangent is None else tangent.detach()
