"""`torch.func`'s differentiation transforms (grad, vjp, jvp, jacrev, jacfwd, hessian) on
nbtorch's tape.

Each transform runs the function on inputs made tape leaves (or, when an input is
already being differentiated by an enclosing transform, a view attached to it), then
asks the engine. Inside another transform gradients are computed with
``create_graph=True``, so ``grad(grad(f))`` and ``jacfwd(jacrev(f))`` are exact; at the
top level the results are detached, as functorch returns them. `jvp` and `jacfwd`
compute forward-mode quantities by reverse passes (the double-backward trick; one pass
per output element for Jacobians): the values are forward mode's, the cost is reverse
mode's.
"""
import threading

from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.engine import grad as _autograd_grad
from ..utils._pytree import tree_flatten, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian"]


class _Depth(threading.local):
    value = 0


_DEPTH = _Depth()


class _level:
    """Marks the body of a transform; `outer` tells whether another transform encloses it."""

    def __enter__(self):
        self.outer = _DEPTH.value > 0
        _DEPTH.value += 1
        self._grad = grad_mode.enable_grad()
        self._grad.__enter__()
        return self

    def __exit__(self, *exc):
        self._grad.__exit__(*exc)
        _DEPTH.value -= 1
        return False


def _prepare(x, api):
    if not isinstance(x, Tensor):
        raise ValueError(f"{api}: Expected the arguments being differentiated to be Tensors "
                         f"(or pytrees of Tensors), got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{api}: only Tensors of floating point dtype can require "
                           f"gradients, got {x.dtype}")
    return x.view_as(x) if x.requires_grad else x.detach().requires_grad_(True)


def _argnums(argnums, nargs, api):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums:
        raise RuntimeError(f"{api}: 'argnums' must be non-empty")
    for a in nums:
        if not isinstance(a, int) or isinstance(a, bool):
            raise RuntimeError(f"{api}: argnums must be int or Tuple[int, ...], got: "
                               f"{type(a)}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"{api}: Got argnums={a}, but only {nargs} positional inputs")
    return tuple(a % nargs for a in nums)


def _diff_args(args, argnums, api):
    """(args with the differentiated ones prepared, their flat leaves, their structure)."""
    args = list(args)
    trees = []
    for a in argnums:
        leaves, spec = tree_flatten(args[a])
        prepared = [_prepare(x, api) for x in leaves]
        args[a] = tree_unflatten(prepared, spec)
        trees.append((prepared, spec))
    flat = [x for leaves, _ in trees for x in leaves]
    return args, flat, trees


def _regroup(flat, trees, argnums_was_tuple):
    """Per-argument pytrees from a flat list (a tuple of them if argnums was a tuple)."""
    out, i = [], 0
    for leaves, spec in trees:
        out.append(tree_unflatten(flat[i:i + len(leaves)], spec))
        i += len(leaves)
    return tuple(out) if argnums_was_tuple else out[0]


def _grads(outputs, inputs, grad_outputs, create_graph):
    """autograd.grad with zeros for unused inputs and outputs that need no grad."""
    from ..ops.creation import zeros_like
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    got = [None] * len(inputs)
    if pairs:
        got = list(_autograd_grad([o for o, _ in pairs], list(inputs), [g for _, g in pairs],
                                  retain_graph=True, create_graph=create_graph,
                                  allow_unused=True))
    return [zeros_like(x) if g is None else g for g, x in zip(got, inputs)]


def _reaches_outer(outputs, inner):
    """True when the outputs' graph reaches a leaf that requires grad other than the
    transform's own inputs `inner` (a model's parameter the function closes over): the
    results then stay differentiable with respect to it, as functorch's do."""
    from ..autograd import grad_mode
    if not grad_mode.is_grad_enabled():
        return False
    own = {id(x) for x in inner}
    seen, stack = set(), [o.grad_fn for o in outputs
                          if isinstance(o, Tensor) and o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None) if node._is_accumulate else None
        if variable is not None and id(variable) not in own:
            return True
        stack.extend(nxt for nxt, _ in node.next_functions)
    return False


def _finish(tree, keep_graph):
    """Detach every tensor of `tree` at the top level (functorch returns plain tensors)."""
    if keep_graph:
        return tree
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves], spec)


def _split_aux(out, has_aux, api):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}(f)(*args): output of function f should be a tuple: "
                           "(output, aux) if has_aux is True")
    return out


def grad_and_value(func, argnums=0, has_aux=False):
    """Like `grad`, returning (gradient, value) (value = (output, aux) with has_aux)."""
    def wrapper(*args, **kwargs):
        nums = _argnums(argnums, len(args), "grad_and_value")
        with _level() as lv:
            args2, flat, trees = _diff_args(args, nums, "grad_and_value")
            out, aux = _split_aux(func(*args2, **kwargs), has_aux, "grad_and_value")
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {out.dim()} dims. Maybe "
                                   "you wanted to use the vjp or jacrev APIs instead?")
            keep = lv.outer or any(isinstance(x, Tensor) and x.requires_grad
                                   for i in nums for x in tree_flatten(args[i])[0]) \
                or _reaches_outer([out], flat)
            g = _regroup(_grads([out], flat, [None], keep), trees, isinstance(argnums, tuple))
        value = (out, aux) if has_aux else out
        return _finish(g, keep), _finish(value, keep)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of scalar-valued `func` with respect to argument(s) `argnums`.

    Example:
        >>> grad(lambda x: (x ** 2).sum())(nbtorch.tensor([1.0, 2.0]))
        tensor([2., 4.])
    """
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): ``vjp_fn(cotangents)`` returns one gradient per
    primal (pytrees as the primals were); it may be called more than once."""
    with _level() as lv:
        args, flat, trees = _diff_args(primals, tuple(range(len(primals))), "vjp")
        out, aux = _split_aux(func(*args), has_aux, "vjp")
        out_leaves, out_spec = tree_flatten(out)
        for o in out_leaves:
            if not isinstance(o, Tensor):
                raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has "
                                   f"only Tensors as outputs, got {type(o)}")
        keep = lv.outer or any(isinstance(x, Tensor) and x.requires_grad
                               for x in tree_flatten(primals)[0]) \
            or _reaches_outer(out_leaves, flat)

    def vjp_fn(cotangents):
        cot_leaves, cot_spec = tree_flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{cot_spec}, primal output: {out_spec}")
        for c, o in zip(cot_leaves, out_leaves):
            if c.shape != o.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of "
                                   f"{c.shape} and output[0] has a shape of {o.shape}.")
        with _level():
            g = _grads(out_leaves, flat, cot_leaves, keep)
        return _finish(_regroup(g, trees, True), keep)

    result = (_finish(out, keep), vjp_fn)
    return result + (_finish(aux, keep),) if has_aux else result


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J @ tangents[, aux]) by the double-backward trick."""
    from ..ops.creation import ones_like, zeros_like
    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. "
                           "it should be valid to call f(*primals).")
    if not isinstance(tangents, tuple) or len(tangents) != len(primals):
        raise RuntimeError("jvp(f, primals, tangents): Expected tangents to be a tuple of "
                           "the same length as primals")
    p_flat, p_spec = tree_flatten(primals)
    t_flat, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure.")
    for p, t in zip(p_flat, t_flat):
        if isinstance(p, Tensor) and p.shape != t.shape:
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to "
                               f"have the same shape, got {p.shape} and {t.shape}")
    with _level() as lv:
        args, flat, trees = _diff_args(primals, tuple(range(len(primals))), "jvp")
        out, aux = _split_aux(func(*args), has_aux, "jvp")
        out_leaves, out_spec = tree_flatten(out)
        keep = lv.outer or any(x.requires_grad for x in p_flat if isinstance(x, Tensor)) \
            or _reaches_outer(out_leaves, flat)
        # the dummy cotangents: any value gives the same result (the backward is linear in
        # them), but formulas that take their logarithm (logcumsumexp's) are NaN at 0
        u = [ones_like(o).requires_grad_(True) for o in out_leaves]
        g = _grads(out_leaves, flat, u, True)
        total = None
        for gi, ti in zip(g, t_flat):
            term = (gi * ti).sum()
            total = term if total is None else total + term
        res = [zeros_like(o) for o in out_leaves]
        if total is not None and total.requires_grad:
            res = _grads([total], u, [None], keep)
    result = (_finish(out, keep), _finish(tree_unflatten(res, out_spec), keep))
    return result + (_finish(aux, keep),) if has_aux else result


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian of `func` by reverse mode: per output leaf, ``out.shape + in.shape``
    blocks shaped as the argument(s) `argnums` (one backward pass per output element)."""
    def wrapper(*args, **kwargs):
        from ..ops.creation import zeros
        from ..ops.joining import stack
        nums = _argnums(argnums, len(args), "jacrev")
        with _level() as lv:
            args2, flat, trees = _diff_args(args, nums, "jacrev")
            out, aux = _split_aux(func(*args2, **kwargs), has_aux, "jacrev")
            out_leaves, out_spec = tree_flatten(out)
            keep = lv.outer or any(isinstance(x, Tensor) and x.requires_grad
                                   for i in nums for x in tree_flatten(args[i])[0]) \
                or _reaches_outer(out_leaves, flat)
            jacs = []
            for o in out_leaves:
                if not isinstance(o, Tensor):
                    raise RuntimeError(f"jacrev(f, ...)(*args): Expected f to be a function "
                                       f"that has only Tensors as outputs, got {type(o)}")
                rows = [[] for _ in flat]
                o_flat = o.reshape(-1)
                for j in range(o_flat.numel()):
                    for k, g in enumerate(_grads([o_flat[j]], flat, [None], keep)):
                        rows[k].append(g)
                blocks = [stack(r).reshape(tuple(o.shape) + tuple(x.shape)) if r else
                          zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype,
                                device=x.device) for r, x in zip(rows, flat)]
                jacs.append(_regroup(blocks, trees, isinstance(argnums, tuple)))
            jac = _finish(tree_unflatten(jacs, out_spec), keep)
        return (jac, _finish(aux, keep)) if has_aux else jac
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of `func` (forward mode's values and layout; computed by reverse
    passes on nbtorch's tape, see the module docstring)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func, argnums=0):
    """The Hessian of scalar-valued `func`: ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)
