"""`torch.func.vmap`: map a function over a batch dimension.

nbtorch has no batching rules, so vmap runs the function once per batch element (on
``x.select(in_dim, b)``) and stacks the results along `out_dims`: the same values as
PyTorch's vmap, at a Python loop's cost. Everything stays on the tape, so gradients
flow through it, and it nests (``vmap(vmap(f))``, ``vmap(grad(f))`` for per-sample
gradients). ``randomness``: 'different' lets each element draw its own numbers,
'same' replays the generator's state for every element, 'error' (the default) raises
if the function drew from the default generator.
"""
from .._tensor import Tensor
from ..utils._pytree import tree_flatten, tree_unflatten

__all__ = ["vmap"]


def _name(func):
    return getattr(func, "__name__", repr(func))


def _leaf_dims(in_dims, args, fname):
    """One in_dim per flat leaf of `args` (in_dims: an int/None for all, or a pytree
    prefix of args)."""
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(tree_flatten(args)[0])
    if not isinstance(in_dims, tuple):
        raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...): expected `in_dims` to be "
                         f"int or a (potentially nested) tuple matching the structure of "
                         f"inputs, got: {type(in_dims)}.")
    if len(in_dims) != len(args):
        raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): Expected "
                         f"len(in_dims) == len(inputs), got {len(in_dims)} and {len(args)}")
    dims = []
    for d, a in zip(in_dims, args):
        dims.extend(_prefix_dims(d, a, fname, in_dims))
    return dims


def _prefix_dims(d, arg, fname, in_dims):
    leaves = tree_flatten(arg)[0]
    if isinstance(d, int) or d is None:
        return [d] * len(leaves)
    d_leaves, d_spec = tree_flatten(d)
    a_spec = tree_flatten(arg)[1]
    if d_spec.type is not a_spec.type or len(d_spec.children) != len(a_spec.children):
        raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                         "compatible with the structure of `inputs`.")
    if isinstance(d, dict):
        return [x for k in arg for x in _prefix_dims(d[k], arg[k], fname, in_dims)]
    return [x for sd, sa in zip(d, arg) for x in _prefix_dims(sd, sa, fname, in_dims)]


def _rng_state():
    from .._generator import get_rng_state
    return get_rng_state()


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``vmap(f)(x)`` = ``stack([f(x[0]), f(x[1]), ...])``, for any batch dims.

    Example:
        >>> vmap(lambda row: row.sum())(nbtorch.ones(3, 4))
        tensor([4., 4., 4.])
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    def wrapped(*args, **kwargs):
        fname = _name(func)
        leaves, spec = tree_flatten(args)
        dims = _leaf_dims(in_dims, args, fname)
        size = None
        for x, d in zip(leaves, dims):
            if d is None:
                continue
            if not isinstance(x, Tensor):
                raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): Got "
                                 f"in_dim={d} for an input but the input is of type "
                                 f"{type(x)}. We cannot vmap over non-Tensor arguments, "
                                 "please use None as the respective in_dim")
            if not -x.dim() <= d < x.dim():
                raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): Got "
                                 f"in_dim={d} for some input, but that input is a Tensor of "
                                 f"dimensionality {x.dim()} so expected in_dim to satisfy "
                                 f"-{x.dim()} <= in_dim < {x.dim()}.")
            n = x.shape[d]
            if size is not None and n != size:
                sizes = [x.shape[d] for x, d in zip(leaves, dims) if d is not None]
                raise ValueError(f"vmap: Expected all tensors to have the same size in the "
                                 f"mapped dimension, got sizes {sizes} for the mapped "
                                 "dimension")
            size = n
        if size is None:
            raise ValueError(f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>): Got all "
                             "in_dims=None, which means there is nothing to vmap over. "
                             "Please pass a Tensor with a dimension to map over.")
        rule = _function_rule(func, args, leaves, kwargs)
        if rule is not None:
            return _run_rule(rule, args, dims, size, randomness, out_dims, fname)
        state = _rng_state() if randomness != "different" else None
        results = []
        for b in range(max(size, 1)):
            if randomness == "same" and b:
                from .._generator import set_rng_state
                set_rng_state(state)
            one = []
            for x, d in zip(leaves, dims):
                if d is None:
                    one.append(x)
                elif size:
                    one.append(x.select(d, b))
                else:                           # an empty batch: run once on zeros
                    shape = tuple(s for i, s in enumerate(x.shape) if i != d % x.dim())
                    one.append(x.new_zeros(shape))
            results.append(func(*tree_unflatten(one, spec), **kwargs))
        if randomness == "error" and not _same_state(state, _rng_state()):
            raise RuntimeError("vmap: called random operation while in randomness error "
                               "mode. Please either use the 'same' or 'different' "
                               "randomness flags on vmap or perform the randomness "
                               "operation out of vmap")
        return _stack_outputs(results, out_dims, size, fname)
    return wrapped


class VmapInfo(tuple):
    """What a Function's vmap staticmethod is told: batch_size and randomness."""

    __slots__ = ()

    def __new__(cls, batch_size, randomness):
        return tuple.__new__(cls, (batch_size, randomness))

    batch_size = property(lambda self: self[0])
    randomness = property(lambda self: self[1])

    def __repr__(self):
        return f"VmapInfo(batch_size={self[0]}, randomness={self[1]!r})"


def _function_rule(func, args, leaves, kwargs):
    """The user's `vmap` staticmethod when `func` is `Fn.apply` of an autograd.Function
    that overrides it and the arguments are flat (else None: run the loop)."""
    from ..autograd.function import Function
    cls = getattr(func, "__self__", None)
    if not (isinstance(cls, type) and issubclass(cls, Function)
            and getattr(func, "__name__", None) == "apply"):
        return None
    own = cls.vmap is not Function.vmap
    if own and cls.generate_vmap_rule:
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it has both "
                           "generate_vmap_rule=True and an overridden vmap staticmethod. "
                           "Please set generate_vmap_rule=False or delete the overridden "
                           "vmap staticmethod to avoid ambiguity. For more details, please "
                           "see https://pytorch.org/docs/main/notes/extending.func.html")
    if not own or kwargs or len(leaves) != len(args):
        return None
    return cls.vmap


def _run_rule(rule, args, dims, size, randomness, out_dims, fname):
    """Call a Function's vmap rule once on the whole batch; move each output's batch dim
    (the rule's out_dims) to the requested `out_dims`."""
    in_dims = tuple(None if d is None else d % args[i].dim() for i, d in enumerate(dims))
    out, rule_dims = rule(VmapInfo(size, randomness), in_dims, *args)
    single = not isinstance(out, tuple)
    outs = (out,) if single else out
    rdims = (rule_dims,) * len(outs) if not isinstance(rule_dims, tuple) else rule_dims
    wanted = (out_dims,) * len(outs) if not isinstance(out_dims, tuple) else out_dims
    moved = []
    for o, rd, od in zip(outs, rdims, wanted):
        if rd is None:              # unbatched: the same value for every element
            o = o.unsqueeze(0).expand((size,) + tuple(o.shape))
            rd = 0
        moved.append(o if od is None or rd == od else o.movedim(rd, od))
    return moved[0] if single else tuple(moved)


def _same_state(a, b):
    return a.shape == b.shape and bool((a == b).all())


def _stack_outputs(results, out_dims, size, fname):
    from ..ops.joining import stack
    first, spec = tree_flatten(results[0])
    per_elem = [tree_flatten(r)[0] for r in results]
    if isinstance(out_dims, (int, type(None))):
        odims = [out_dims] * len(first)
    else:
        odims = _prefix_dims(out_dims, results[0], fname, out_dims)
    out = []
    for i, d in enumerate(odims):
        vals = [leaves[i] for leaves in per_elem]
        if d is None:
            if isinstance(vals[0], Tensor) and any(
                    not isinstance(v, Tensor) or v.shape != vals[0].shape
                    or not bool((v == vals[0]).all()) for v in vals[1:]):
                # it varies over the batch: one value cannot stand for it (PyTorch refuses)
                raise ValueError(f"vmap({fname}, ...): `{fname}` can not return a "
                                 f"BatchedTensor when out_dim is None")
            out.append(vals[0])
            continue
        if not isinstance(vals[0], Tensor):
            raise ValueError(f"vmap({fname}, ...): `{fname}` must only return Tensors, got "
                             f"type {type(vals[0])}. Did you mean to set out_dims= to None "
                             "for output?")
        nd = vals[0].dim() + 1
        if not -nd <= d < nd:
            raise ValueError(f"vmap({fname}, ...): out_dim={d} is out of range for an output "
                             f"of {nd - 1} dims")
        if size == 0:
            shape = list(vals[0].shape)
            shape.insert(d % nd, 0)
            out.append(vals[0].new_zeros(tuple(shape)))
        else:
            out.append(stack(vals, dim=d % nd))
    return tree_unflatten(out, spec)
