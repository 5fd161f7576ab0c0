"""The engine: order the tape from the roots and run backward formulas in reverse.

Ordering is iterative (Kahn's algorithm over dependency counts), so a chain
of 100,000 ops needs no recursion. Every gradient a node returns is checked
against the input it belongs to, with an error that names the node.

Ownership: a leaf's `.grad` takes a gradient without copying it only when the
engine owns it, that is when nothing but the engine's buffer holds its memory.
The engine owns what it made (the implicit root gradient, the sum of two
gradients meeting at a leaf) and what a built-in node returned as a new tensor
(`Node._new_grads`): not sharing memory with a gradient the node was given (a
pass-through such as add's, or a view of one) nor with another gradient it
returned, and seen by no hook. Everything else (the user's grad_tensors, a hook's
or a custom Function's tensors) is copied into `.grad`.
"""
import collections.abc
import itertools
import warnings

from .. import _tensor
from .._kernel_args import fill_values
from .._tensor import Tensor, empty
from . import anomaly_mode, grad_mode
from .graph import gradient_edge

__all__ = ["run_backward", "backward", "grad"]

_ANOMALY = anomaly_mode.STATE

# The backward passes running now, innermost last (a hook may start another): what
# `graph.register_multi_grad_hook` asks about the pass that calls it. Recorded only while
# such hooks exist (MULTI_HOOKS[0] of them): a pass without them pays nothing.
TASKS = []
MULTI_HOOKS = [0]


class _Task:
    """One backward pass: which nodes it runs, and callbacks for its end."""

    def __init__(self, deps, roots, must_run, capture):
        self.deps, self.roots, self.must_run = deps, set(roots), must_run
        self.targets = {n for n, _ in capture} if capture else ()
        self.on_done = []
        self.multi = {}           # per multi-grad hook: its state in this pass

    def will_execute(self, node):
        """True when this pass reaches `node` and runs it (PyTorch's
        `_will_engine_execute_node`)."""
        if node not in self.deps and node not in self.roots:
            return False
        return self.must_run is None or node in self.must_run or node in self.targets


def _dependencies(roots):
    """Count, for every node reachable from `roots`, how many edges point at it."""
    deps = {}
    stack = list(dict.fromkeys(n for n in roots if n is not None))   # two outputs of
    expanded = set(stack)                                            # one node: once
    while stack:
        for nxt, _ in stack.pop().next_functions:
            if nxt is None:
                continue
            if nxt in deps:
                deps[nxt] += 1
            else:
                deps[nxt] = 1
                if nxt not in expanded:
                    expanded.add(nxt)
                    stack.append(nxt)
    return deps


def _must_run(roots, capture):
    """The nodes whose backward `autograd.grad` must run: those with a captured edge
    further up (PyTorch runs only what the requested gradients need; running a node past
    the inputs did needless work, and failed where that node cannot run, e.g. a compiled
    graph's backward under create_graph=True)."""
    targets = {node for node, _ in capture if node is not None}
    reaches = {}                        # node -> a captured node is it or further up
    must = set()
    stack = [(n, False) for n in dict.fromkeys(n for n in roots if n is not None)]
    while stack:
        node, done = stack.pop()
        if node in reaches:
            continue
        nexts = [nxt for nxt, _ in node.next_functions if nxt is not None]
        if not done:
            stack.append((node, True))
            stack.extend((nxt, False) for nxt in nexts if nxt not in reaches)
            continue
        up = any(reaches.get(nxt, False) for nxt in nexts)
        if up:
            must.add(node)
        reaches[node] = up or node in targets
    return must


def _check_grad(node, i, g, meta):
    shape, dtype, device = meta
    if not isinstance(g, Tensor):
        raise TypeError(f"Function {node.name()} returned an invalid gradient at index {i} - "
                        f"expected a Tensor or None, got {type(g).__name__}")
    if g._shape != shape:
        try:
            g = _sum_to()(g, shape)
        except RuntimeError:
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {i} - got "
                f"{list(g._shape)} but expected shape compatible with {list(shape)}") from None
    if g.device != device:
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {i} - expected "
            f"device {device} but got {g.device}")
    if g.dtype is not dtype:
        if g.dtype.is_complex and not dtype.is_complex:
            g = g.real                  # a real input's gradient: the real part (PyTorch)
        if not (g.dtype.is_floating_point or g.dtype.is_complex):
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {i} - expected "
                f"dtype {dtype} but got {g.dtype}")
        g = g.to(dtype)
    return g


def _sum_to():
    from ..ops._common import sum_to      # ops import autograd: imported on first use
    return sum_to


def _zeros(shape, dtype, device):
    from ..ops.creation import zeros
    return zeros(shape, dtype=dtype, device=device)


def _call_tensor_hooks(node, grads):
    hooks = node._tensor_hooks
    if not hooks:
        return grads
    grads = list(grads)
    for slot, d in hooks.items():
        for fn in list(d.values()):
            if grads[slot] is None:
                continue
            r = fn(grads[slot])
            if r is not None:
                if isinstance(r, Tensor) and r._shape != grads[slot]._shape:
                    name = getattr(fn, "__name__", type(fn).__name__)
                    raise RuntimeError(f"hook '{name}' has changed the size of value")
                grads[slot] = r
    return grads


def run_backward(roots, root_grads, retain_graph, create_graph, capture=None,
                 accumulate=True, owned_roots=()):
    """Propagate `root_grads` from the (node, slot) edges `roots` through the tape.

    capture: {(node, slot): index} edges whose total gradient is returned
    (for `autograd.grad`) instead of accumulated. owned_roots: the indices of
    root gradients the engine made (see Ownership above).
    """
    nodes = [r[0] for r in roots]
    deps = _dependencies(nodes)
    buffers = {}
    owned = set()         # AccumulateGrad nodes whose buffered gradient the engine owns
    for i, ((node, slot), g) in enumerate(zip(roots, root_grads)):
        if node._is_accumulate and (node in buffers or i in owned_roots):
            owned.add(node)                 # made by the engine (or summed below)
        _add_to_buffer(buffers, node, slot, g)
    captured = {}
    must_run = _must_run(nodes, capture) if capture else None
    ready = [n for n in dict.fromkeys(nodes) if deps.get(n, 0) == 0]
    state = grad_mode.STATE
    prev, prev_acc = state.enabled, state.accumulate
    state.enabled, state.accumulate = create_graph, accumulate
    short = not capture and not _ANOMALY.enabled
    task = _Task(deps, nodes, must_run, capture) if MULTI_HOOKS[0] else None
    if task is not None:
        TASKS.append(task)
    try:
        while ready:
            node = ready.pop()
            grads = buffers.pop(node, None)
            if (short and node._plain and grads is not None and len(grads) == 1
                    and grads[0] is not None):
                # the common node (one gradient in, nothing but apply to run): run it and
                # check each gradient while routing it (_apply does the same for the rest)
                result = node.apply(grads[0])
                if result.__class__ is not tuple:
                    result = (result,) if not isinstance(result, tuple) else tuple(result)
                pos = node._arg_pos
                if pos is None:
                    if len(result) != len(node.next_functions):
                        result = _count_checked(node, result, len(node.next_functions))
                else:                   # one gradient per argument: keep the tensors'
                    if len(result) != len(node.needs_input_grad):
                        result = _count_checked(node, result, len(node.needs_input_grad))
                    result = ((result[pos[0]],) if len(pos) == 1
                              else [result[i] for i in pos])
                if not retain_graph:
                    node._release()
                metas = node._input_meta
            else:
                if grads is None:
                    grads = []
                if node._tensor_hooks:
                    grads = _call_tensor_hooks(node, grads)
                if capture:
                    _capture(capture, captured, node, grads)
                if node._retain:
                    _retain(node, grads)
                if node._is_accumulate:
                    if node._pre_hooks:         # hooks on the AccumulateGrad node itself
                        for fn in list(node._pre_hooks.values()):
                            r = fn(tuple(grads))
                            if r is not None:
                                grads = list(r)
                    if accumulate and grads and grads[0] is not None:
                        # a tensor hook may have kept the gradient or returned its own
                        node.accumulate(grads[0], create_graph,
                                        node in owned and not node._tensor_hooks
                                        and not node._pre_hooks)
                        if node._post_acc_hooks:
                            for fn in list(node._post_acc_hooks.values()):
                                fn(node.variable)
                    if node._post_hooks:
                        for fn in list(node._post_hooks.values()):
                            fn((), tuple(grads))
                    continue
                if must_run is not None and node not in must_run:
                    continue            # nothing requested lies further up
                result = (_apply(node, grads, retain_graph) if not _ANOMALY.enabled else
                          anomaly_mode.run_checked(_apply, node, grads, retain_graph))
                metas = _CHECKED
            for (nxt, slot), g, meta in zip(node.next_functions, result, metas):
                if nxt is None:
                    continue
                if g is not None:
                    if meta is not None and not (
                            g.__class__ is Tensor and g._shape == meta[0]
                            and g.dtype is meta[1] and g.device is meta[2]):
                        g = _check_grad(node, _position(result, g), g, meta)
                    buf = buffers.get(nxt)
                    if buf is not None and slot < len(buf):
                        old = buf[slot]
                        if old is None:
                            buf[slot] = g
                        else:
                            buf[slot] = old + g
                            if nxt._is_accumulate:
                                owned.add(nxt)      # the sum is the engine's own
                    elif buf is None and slot == 0 and (nxt._output_meta is None
                                                        or len(nxt._output_meta) == 1):
                        buffers[nxt] = [g]      # the common case: a single-output node
                        if nxt._is_accumulate and _new(g, node, grads, result):
                            owned.add(nxt)
                    else:
                        _add_to_buffer(buffers, nxt, slot, g)
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    ready.append(nxt)
    finally:
        state.enabled, state.accumulate = prev, prev_acc
        if task is not None:
            TASKS.pop()
    if task is not None:
        for fn in task.on_done:
            fn()
    return captured


_CHECKED = itertools.repeat(None)   # the metas of gradients `_apply` already checked


def _position(result, g):
    """The index of gradient `g` in `result` (for an error message)."""
    return next(i for i, r in enumerate(result) if r is g)


def _count_checked(node, result, n_in):
    """`result` with `n_in` gradients (one per input): trailing Nones dropped, else the
    error `_apply` raises."""
    if len(result) > n_in and all(r is None for r in result[n_in:]):
        return result[:n_in]
    raise RuntimeError(f"function {node.name()} returned an incorrect number of "
                       f"gradients (expected {n_in}, got {len(result)})")


def _new(g, node, given, result):
    """True when `node` returned `g` (among `result`) as memory no one else holds.

    Only a built-in node's word counts (its backward keeps nothing it returns);
    a hook could have kept what it saw. Memory shared with a gradient the node
    was `given` (a pass-through or a view of it), or with another gradient it
    returned, is shared.
    """
    if not node._new_grads or node._pre_hooks or node._post_hooks:
        return False
    s = g._storage
    for x in given:
        if x is not None and x._storage is s:
            return False
    if len(result) > 1:
        n = 0
        for r in result:
            if r is not None and r._storage is s:
                n += 1
        return n == 1
    return True


def _capture(capture, captured, node, grads):
    for slot, g in enumerate(grads):
        idx = capture.get((node, slot))
        if idx is not None:
            captured[idx] = g


def _retain(node, grads):
    """Give the non-leaf tensors that called retain_grad() their gradient."""
    for slot, ref in node._retain.items():
        t = ref()
        if t is not None and slot < len(grads) and grads[slot] is not None:
            # under create_graph the retained gradient keeps its graph, as PyTorch's
            g = grads[slot] if grad_mode.STATE.enabled else grads[slot].detach()
            t._grad = g.clone() if t._grad is None else t._grad + g


def _add_to_buffer(buffers, node, slot, g):
    buf = buffers.get(node)
    if buf is None:
        n = max(len(node._output_meta or ()), slot + 1)
        buf = buffers[node] = [None] * n
    elif slot >= len(buf):
        buf.extend([None] * (slot + 1 - len(buf)))
    buf[slot] = g if buf[slot] is None else buf[slot] + g


def _apply(node, grads, retain_graph):
    """Run one node's backward on its output gradients; return its checked input grads."""
    if node._pre_hooks:
        for fn in list(node._pre_hooks.values()):
            r = fn(tuple(grads))
            if r is not None:
                grads = list(r)
    outs = node._output_meta
    if outs is not None and node._materialize and (
            len(grads) != 1 or len(outs) != 1 or grads[0] is None):
        if len(grads) < len(outs):
            grads = list(grads) + [None] * (len(outs) - len(grads))
        for i, g in enumerate(grads):
            if g is None and outs[i] is not None:
                grads[i] = _zeros(*outs[i])
    result = node.apply(*grads)
    if result.__class__ is not tuple:
        result = (result,) if not isinstance(result, tuple) else tuple(result)
    pos = node._arg_pos
    n_in = len(node.next_functions) if pos is None else len(node.needs_input_grad)
    if len(result) != n_in:
        result = _count_checked(node, result, n_in)
    if pos is not None:                 # one gradient per argument: keep the tensors'
        result = (result[pos[0]],) if len(pos) == 1 else [result[i] for i in pos]
    checked = []
    i = 0
    for g, meta in zip(result, node._input_meta):
        if g is None or meta is None:
            checked.append(None)
        elif (g.__class__ is Tensor and g._shape == meta[0] and g.dtype is meta[1]
              and g.device is meta[2]):
            checked.append(g)           # the common case, checked inline
        else:
            checked.append(_check_grad(node, i, g, meta))
        i += 1
    if node._post_hooks:
        for fn in list(node._post_hooks.values()):
            r = fn(tuple(checked), tuple(grads))
            if r is not None:           # a hook may return the gradients to use instead
                if len(r) != len(checked):
                    raise RuntimeError(f"hook returned {len(r)} gradients for "
                                       f"{node.name()}, expected {len(checked)}")
                checked = list(r)
    if not retain_graph:
        node._release()
    return checked


def _ones(t):
    """ones_like(t) without argument parsing: the implicit gradient of every backward()."""
    g = empty(t._shape, t.dtype, t.device)
    if g.device.type == "cpu":
        g._array.fill(1)                # NumPy's fill: no kernel dispatch for one value
    else:
        fill_values(g, 1)
    return g


def _make_grads(outputs, grad_outputs):
    """The root gradients, and the indices of those the engine made (it owns them)."""
    grads, made = [], set()
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not out.dtype.is_floating_point:
                raise RuntimeError("grad can be implicitly created only for real scalar "
                                   f"outputs but got {out.dtype}")
            g = _ones(out)
            made.add(i)
        elif not isinstance(g, Tensor):
            from ..ops.creation import tensor
            g = tensor(g, dtype=out.dtype, device=out.device)
            made.add(i)
        elif g._shape != out._shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of "
                               f"{g.shape} and output[0] has a shape of {out.shape}.")
        grads.append(g)
    return grads, made


def _as_tuple(x):
    """A tensor, a list/tuple, or any other iterator or dict view of tensors (PyTorch takes
    ``model.parameters()``, a generator, for ``inputs``) as a tuple."""
    if x is None:
        return ()
    if isinstance(x, Tensor):
        return (x,)
    if isinstance(x, (tuple, list, collections.abc.Iterator, collections.abc.ValuesView)):
        return tuple(x)
    return (x,)


def _roots(outputs):
    roots = []
    for i, out in enumerate(outputs):
        edge = gradient_edge(out)
        if edge is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does "
                               "not have a grad_fn")
        roots.append(edge)
    return roots


_CYCLE = ("Using backward() with create_graph=True will create a reference cycle between the "
          "parameter and its gradient which can cause a memory leak. We recommend using "
          "autograd.grad when creating the graph to avoid this. If you have to use this "
          "function, make sure to reset the .grad fields of your parameters to None after "
          "use to break the cycle and avoid the leak.")
_CYCLE_WARNED = [False]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             inputs=None):
    """Accumulate d(tensors)/d(leaves) into the leaves' `.grad`."""
    outputs = _as_tuple(tensors)
    grads, made = _make_grads(outputs, _as_tuple(grad_tensors) or (None,) * len(outputs))
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph and not _CYCLE_WARNED[0]:
        _CYCLE_WARNED[0] = True         # PyTorch warns once per process
        warnings.warn(_CYCLE, UserWarning, stacklevel=3)
    roots = _roots(outputs)
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        capture = {gradient_edge(t): i for i, t in enumerate(inputs)}
        got = run_backward(roots, grads, retain_graph, create_graph, capture,
                           accumulate=False)
        for i, t in enumerate(inputs):
            g = got.get(i)
            if g is None:
                continue
            node = gradient_edge(t)[0]
            if node is not None and node._is_accumulate:
                # a leaf: accumulated as a plain backward would (in place, post-accumulate
                # hooks called)
                node.accumulate(g, create_graph, False)
                for fn in list((node._post_acc_hooks or {}).values()):
                    fn(node.variable)
            elif not t.retains_grad:    # (a retained non-leaf got it during the run)
                g = g if create_graph else g.detach()
                t._grad = g.clone() if t._grad is None else t._grad + g
        return
    run_backward(roots, grads, retain_graph, create_graph, owned_roots=made)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of `outputs` with respect to `inputs`, returned (not accumulated).
    `is_grads_batched`: each grad_output has a leading batch dim; the result is the batch
    of vector-Jacobian products (one backward per row, stacked)."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    outputs = _as_tuple(outputs)
    single = isinstance(inputs, Tensor)
    inputs = _as_tuple(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    for t in inputs:
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads, _ = _make_grads(outputs, _as_tuple(grad_outputs) or (None,) * len(outputs))
    if retain_graph is None:
        retain_graph = create_graph
    capture = {}
    for i, t in enumerate(inputs):
        capture.setdefault(gradient_edge(t), i)
    got = run_backward(_roots(outputs), grads, retain_graph, create_graph, capture,
                       accumulate=False)
    result = []
    for i, t in enumerate(inputs):
        j = capture[gradient_edge(t)]
        g = got.get(j)
        if g is None:
            if materialize_grads:
                from ..ops.creation import zeros_like
                g = zeros_like(t)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have "
                                   "been used in the graph. Set allow_unused=True if this "
                                   "is the desired behavior.")
        elif not create_graph:
            g = g.detach()
        result.append(g)
    return tuple(result)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    """grad(..., is_grads_batched=True): a backward per row of the grad_outputs, stacked
    (PyTorch vmaps it; the rows are the same vector-Jacobian products)."""
    from ..ops.creation import zeros_like
    from ..ops.joining import stack
    outs = _as_tuple(outputs)
    gos = _as_tuple(grad_outputs)
    if not gos or any(g is None for g in gos):
        raise RuntimeError("grad: is_grads_batched=True needs a grad_output (with a batch "
                           "dim) for every output")
    n = gos[0].shape[0]
    ins = _as_tuple(inputs)
    rows = []
    for i in range(n):
        last = i == n - 1
        rows.append(grad(outs, ins, tuple(g[i] for g in gos),
                         retain_graph=retain_graph if last else True,
                         create_graph=create_graph, allow_unused=True))
    result = []
    for k, t in enumerate(ins):
        col = [r[k] for r in rows]
        if all(c is None for c in col):
            if materialize_grads:
                result.append(stack([zeros_like(t)] * n))
                continue
            if not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have "
                                   "been used in the graph. Set allow_unused=True if this "
                                   "is the desired behavior.")
            result.append(None)
            continue
        result.append(stack([zeros_like(t) if c is None else c for c in col]))
    return tuple(result)


_tensor._engine_backward = backward     # Tensor.backward, without an import per call
