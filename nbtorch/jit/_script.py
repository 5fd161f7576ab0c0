"""jit.script, ignore, unused, is_scripting, freeze, optimize_for_inference.

nbtorch has no TorchScript compiler: `script` compiles by tracing, once per
*guard set* (shapes, dtypes, devices, requires_grad, training, grad mode: as
`nbtorch.compile`), so Python control flow that depends only on shapes and
Python values is re-specialised for each new input kind and stays correct.
Control flow that depends on tensor *values* cannot be scripted this way:
it is an error naming the line, suggesting `jit.trace` (frozen control flow)
or eager mode. While the code is being scripted, `is_scripting()` is True.

`ignore` keeps a function out of the graph (it is recorded as one call and
runs as Python); `unused` marks a method that must not be called from
scripted code (calling it there raises); `freeze` copies the weights of a
traced or scripted module in eval mode into constants and folds what can be
computed ahead; `optimize_for_inference` freezes and compiles for inference.
"""
import copy
import functools
import warnings

from ._compile import CompiledCalls, CompiledFunctionWrapper
from ._compiled import flatten, unflatten
from ._traced import ScriptFunction, ScriptModule

__all__ = ["script", "ignore", "unused", "is_scripting", "freeze", "optimize_for_inference",
           "ScriptModule", "ScriptFunction", "ScriptError"]

from ._scripting import STATE as _STATE, is_scripting


class ScriptError(RuntimeError):
    """The code cannot be scripted: its control flow depends on tensor values."""


class _Scripted(CompiledFunctionWrapper):
    """Compile-per-guard with script's rules: no eager fallback, script's error text."""

    _side_effects = False       # Python side effects run at each trace, as before

    def _fallback(self, reason):
        raise ScriptError(
            f"nbtorch.jit.script: {self._name()} cannot be scripted: {reason}. nbtorch scripts "
            "code by tracing it for each new input shape/dtype, so control flow may depend on "
            "shapes and Python values but not on the values inside tensors. Use "
            "nbtorch.jit.trace (control flow frozen at the example inputs) or run it eagerly.")

    def _capture(self, *args, **kwargs):
        _STATE.depth = getattr(_STATE, "depth", 0) + 1
        try:
            return super()._capture(*args, **kwargs)
        finally:
            _STATE.depth -= 1

    def _trace(self, args, kwargs, tensors):
        traced = super()._trace(args, kwargs, tensors)
        self.last_graph_module = traced[0]
        self.last_signature = _signature(args, kwargs)
        self.last_updates = traced[2]
        return traced

    def saved_trace(self):
        """What `jit.save` writes for this scripted code: `jit.trace` of it on inputs like
        its last call's (zeros of those shapes, dtypes and devices; Python values as
        given). Script refuses control flow on tensor values, so the trace follows the
        path that call took; a UserWarning says that shape-dependent branches stay fixed
        there (PyTorch's TorchScript keeps them: it compiles the Python source)."""
        from ._trace import trace
        signature = getattr(self, "last_signature", None)
        if signature is None:
            raise RuntimeError(
                f"nbtorch.jit.save: {self._name()} has not been called yet. nbtorch scripts "
                "code by tracing it on its first call, so there is no graph to save: call it "
                "once on an example input, or pass example_inputs=[(x,)] to jit.script, then "
                "save")
        if self.last_updates:
            names = ", ".join(dict.fromkeys(name for _, name in self.last_updates))
            raise TypeError(
                f"nbtorch.jit.save: {self._name()} assigns module attributes in forward "
                f"({names}), which a saved graph cannot replay; save the state_dict (and the "
                "model's code), or move that state out of forward")
        from ..random import fork_rng
        args, kwargs = _example(signature)
        # a copy of the module, and the random streams put back: saving never changes the
        # model (BatchNorm statistics in training mode) or what the user draws next
        target = copy.deepcopy(self._module) if self._module is not None else self._fn
        warnings.warn(
            f"nbtorch.jit.save: saving {self._name()} as the trace of its last call "
            f"({_describe(signature)}); shape-dependent control flow is fixed to that call's "
            "path in the saved graph", UserWarning, stacklevel=5)
        from ._concrete import record_conversions
        with fork_rng(), record_conversions() as events:
            traced = trace(target, args, check_trace=False,
                           example_kwarg_inputs=kwargs or None)
        getattr(traced, "graph_module", traced).meta["input_guard"] = _input_guard(
            [shape for shape, _, _ in signature[1]], [d for _, d, _ in signature[1]], events)
        return traced


def _input_guard(shapes, dtypes, conversions):
    """What a saved graph traced for one input kind checks its inputs against (a 2-D input
    through a graph traced on 3-D took the 3-D branch, silently): each tensor's rank and
    dtype, and its whole shape when the code read a size as a Python value."""
    return [(len(shape), str(dtype), list(shape) if conversions else None)
            for shape, dtype in zip(shapes, dtypes)]


def _signature(args, kwargs):
    """The last call's arguments as (structure, [(shape, dtype, device) per tensor]): what
    `saved_trace` rebuilds with zeros, without keeping the tensors alive."""
    tensors, spec = flatten((args, kwargs))
    return spec, [(tuple(t._shape), t.dtype, t.device) for t in tensors]


def _example(signature):
    """(args, kwargs) like the last call's, zeros in place of its tensors."""
    from ..ops.creation import zeros
    spec, metas = signature
    args, kwargs = unflatten([zeros(s, dtype=d, device=dev) for s, d, dev in metas], spec)
    return tuple(args), dict(kwargs)


def _describe(signature):
    metas = signature[1]
    if not metas:
        return "no tensor inputs"
    return "inputs " + ", ".join(f"{list(s)} {str(d).replace('torch.', '')}"
                                 for s, d, _ in metas)


class _LastTrace:
    """`graph`, `code` and `graph_module` of a scripted callable's last trace."""

    def _last(self):
        gm = getattr(self._compiled, "last_graph_module", None)
        if gm is None:
            raise RuntimeError(f"nbtorch.jit.script: {self._compiled._name()} has not run yet: "
                               "its graph is made on the first call (per input shapes)")
        return gm

    @property
    def graph(self):
        return self._last().graph

    @property
    def code(self):
        return self._last().code

    @property
    def graph_module(self):
        return self._last()


class ScriptedFunction(_LastTrace, ScriptFunction):
    """A scripted function: call it like the original; `graph`/`code` of the last trace;
    ``save(f)`` saves the trace of the last call's signature (`_Scripted.saved_trace`)."""

    def __init__(self, fn):
        self._compiled = _Scripted(fn, None, False, False, "numba", None, None)
        functools.update_wrapper(self, fn, updated=())
        self.name = getattr(fn, "__name__", "function")

    def __call__(self, *args, **kwargs):
        tracer = _outer_trace(args, kwargs)
        if tracer is not None:
            return tracer.create_proxy("call_function", self, args, kwargs)
        return self._compiled(*args, **kwargs)

    def __repr__(self):
        return f"<nbtorch.jit.ScriptFunction {self.name}>"


def _outer_trace(args, kwargs):
    """The jit.trace (or export) recording these traced values, whose graph calls scripted
    code as one node that keeps its control flow, as PyTorch's trace does (traced
    through, a helper's `if x.dim() == 3` was fixed to the example's branch, silently);
    None otherwise (compile and script captures specialise per input kind themselves)."""
    from ..fx._patch import RECORDING, find_proxy
    tracer = getattr(RECORDING, "tracer", None)
    if (tracer is None or tracer._executing or getattr(tracer, "attr_updates", {}) is not None
            or find_proxy(args, kwargs) is None):
        return None
    return tracer


class ScriptedModule(_LastTrace, CompiledCalls, ScriptModule):
    """A scripted module: shares the original's parameters; calls run compiled graphs (one
    per guard set); `graph`/`code` show the last trace; ``save(f)`` saves the trace of the
    last call's signature."""

    def __init__(self, mod):
        super().__init__()
        self._orig_mod = mod
        compiled = _Scripted(mod, mod, False, False, "numba", None, None)
        object.__setattr__(self, "_compiled", compiled)
        self.training = mod.training

    def __call__(self, *args, **kwargs):
        tracer = _outer_trace(args, kwargs)
        if tracer is not None:          # one call_module node, as a scripted function's
            try:
                return tracer.create_proxy("call_module", tracer.path_of_module(self),
                                           args, kwargs)
            except NameError:           # not under the traced root: traced through
                pass
        return self._compiled(*args, **kwargs)

    def train(self, mode=True):
        self._orig_mod.train(mode)
        return super().train(mode)

    def state_dict(self, *args, **kwargs):
        return self._orig_mod.state_dict(*args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        return self._orig_mod.load_state_dict(*args, **kwargs)

    @property
    def original_name(self):
        return type(self._orig_mod).__name__


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Script a function or nn.Module (see the module docstring).

    With `example_inputs` (a list of argument tuples) the graphs for them are made
    right away. Example:
        >>> scripted = nbtorch.jit.script(model)
        >>> scripted(x)          # traced and compiled for x's shape, then reused
    """
    from ..nn import Module
    if isinstance(obj, ScriptModule):
        return obj                      # traced, scripted or loaded already (as PyTorch)
    if isinstance(obj, Module):
        s = ScriptedModule(obj)
    elif isinstance(obj, ScriptFunction):
        return obj
    elif callable(obj) and not isinstance(obj, type):
        if getattr(obj, "_nbtorch_ignored", False):
            return obj
        s = ScriptedFunction(obj)
    else:
        raise RuntimeError(f"nbtorch.jit.script: expected a function or an nn.Module, got "
                           f"{type(obj).__name__}")
    for ex in example_inputs or ():
        s(*(ex if isinstance(ex, (tuple, list)) else (ex,)))
    return s


def ignore(drop=False, **kwargs):
    """Keep a function out of scripted/traced graphs: it is recorded as one call to the
    Python function (which then runs as Python). Use as ``@ignore`` or ``@ignore(drop=..)``.
    """
    if callable(drop):
        return _ignored(drop)
    return _ignored


def _ignored(fn):
    from ..fx._patch import find_proxy

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        proxy = find_proxy(args, kwargs)
        if proxy is not None:
            return proxy.tracer.create_proxy("call_function", fn, args, kwargs)
        return fn(*args, **kwargs)
    wrapper._nbtorch_ignored = True
    try:
        fn._nbtorch_ignored = True      # the graph's target: lowering keeps it one call
    except (AttributeError, TypeError):
        pass
    return wrapper


def unused(fn):
    """Mark a method unused by scripted code: it runs eagerly, but calling it while
    scripting raises (PyTorch replaces it with a raising stub)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if is_scripting():
            raise ScriptError(f"nbtorch.jit.script: {fn.__qualname__} was marked "
                              "@nbtorch.jit.unused and cannot be called from scripted code")
        return fn(*args, **kwargs)
    wrapper._nbtorch_unused = True
    return wrapper


def _frozen_module(mod):
    """A deep copy of traced/scripted `mod`'s graph module with its weights as constants."""
    from ..fx.graph_module import GraphModule
    from ..fx.passes.constant_fold import constant_fold
    from ..fx.passes.cse import eliminate_common_subexpressions
    from ..fx.passes.normalize import normalize
    gm = getattr(mod, "graph_module", mod)
    if not isinstance(gm, GraphModule):
        raise RuntimeError("nbtorch.jit.freeze expects a traced or scripted module "
                           f"(nbtorch.jit.trace / jit.script), got {type(mod).__name__}")
    if getattr(mod, "training", False):
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    frozen = copy.deepcopy(gm)
    for name, p in list(frozen.named_parameters()):
        *prefix, field = name.split(".")
        owner = frozen.get_submodule(".".join(prefix)) if prefix else frozen
        del owner._parameters[field]
        owner.register_buffer(field, p.detach().clone(), persistent=False)
    for name, b in list(frozen.named_buffers()):
        *prefix, field = name.split(".")
        owner = frozen.get_submodule(".".join(prefix)) if prefix else frozen
        owner._buffers[field] = b.detach().clone()
    normalize(frozen)
    constant_fold(frozen, fold_parameters=True, fold_buffers=True)
    eliminate_common_subexpressions(frozen)
    frozen.graph.eliminate_dead_code()
    frozen.recompile()
    frozen.eval()
    frozen.meta["frozen"] = True
    return frozen


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """Freeze a traced or scripted module in eval mode: its weights become constants of a
    copy (later changes to the original do not reach it) and the computations on them
    alone are folded ahead of time. Returns a GraphModule - or, for a scripted module not
    called yet (``freeze(jit.script(model))``, no graph to freeze), a `FrozenModule` that
    freezes the graph of each input signature on its first call."""
    if isinstance(mod, ScriptedModule):
        # per input kind, as script: the graph of its last call alone, frozen, ran other
        # kinds through that call's shape-dependent branches
        frozen = FrozenModule(mod._orig_mod)
        signature = getattr(mod._compiled, "last_signature", None)
        if signature is not None:           # that kind frozen now: saveable at once
            args, kwargs = _example(signature)
            if not kwargs:
                frozen._graphs[frozen._key(args)] = frozen._freeze_for(args)
                object.__setattr__(frozen, "_last_key", frozen._key(args))
        return frozen
    return _frozen_module(mod)


def optimize_for_inference(mod, other_methods=None):
    """`freeze` (when needed) and compile for inference: calls run fused kernels without
    recording gradients."""
    frozen = mod if getattr(mod, "meta", {}).get("frozen") else freeze(mod)
    if isinstance(frozen, FrozenModule):
        return frozen.optimized()
    return _InferenceModule(frozen)


class FrozenModule(_LastTrace, ScriptModule):
    """`freeze` of a scripted module before its first call: a frozen copy of the model (eval
    mode, weights detached: later changes to the original do not reach it) whose graph is
    traced and frozen per input signature (shapes, dtypes, devices), as script compiles."""

    def __init__(self, mod, optimize=False, model=None):
        super().__init__()
        if model is None:
            if mod.training:
                raise RuntimeError("Freezing is currently only implemented for modules in "
                                   "eval mode. Please call .eval() on your module before "
                                   "freezing.")
            model = copy.deepcopy(mod)
            for p in model.parameters():
                p.requires_grad_(False)
        object.__setattr__(self, "_model", model)      # not a submodule: no state of its own
        object.__setattr__(self, "_optimize", optimize)
        object.__setattr__(self, "_graphs", {})        # signature -> (frozen graph, runner)
        object.__setattr__(self, "_last_key", None)
        self.meta = {"frozen": True}
        self.eval()

    def optimized(self):
        """`optimize_for_inference`: each frozen graph also compiled, run without grad."""
        return FrozenModule(None, optimize=True, model=self._model)

    @staticmethod
    def _key(args):
        from ._guards import value_key
        return tuple(value_key(a, False) for a in args)

    def forward(self, *args):
        key = self._key(args)
        entry = self._graphs.get(key)
        if entry is None:
            entry = self._graphs[key] = self._freeze_for(args)
        object.__setattr__(self, "_last_key", key)
        if not self._optimize:
            return entry[1](*args)
        from .. import no_grad
        with no_grad():
            return entry[1](*args)

    def _freeze_for(self, args):
        from ._compile import compile as compile_
        from ._compiled import flatten
        from ._concrete import record_conversions
        from ._trace import trace
        with warnings.catch_warnings(), record_conversions() as events:
            warnings.simplefilter("ignore")
            gm = _frozen_module(trace(self._model, args, check_trace=False))
        tensors, _ = flatten(args)
        gm.meta["input_guard"] = _input_guard([t.shape for t in tensors],
                                              [t.dtype for t in tensors], events)
        return gm, (compile_(gm) if self._optimize else gm)

    def saved_graph(self):
        """What `jit.save` writes: the frozen graph of the last call's input kind."""
        return self._last()

    def _last(self):
        gm = self._graphs[self._last_key][0] if self._last_key is not None else None
        if gm is None:
            raise RuntimeError("nbtorch.jit.freeze: the frozen module has not run yet: its "
                               "graph is made on the first call (per input shapes)")
        return gm


def _inference_class():
    from .. import no_grad
    from ..nn import Module
    from ._compile import compile as compile_

    class InferenceModule(Module):
        """A frozen module whose calls run compiled graphs under no_grad."""

        def __init__(self, frozen):
            super().__init__()
            self.frozen = frozen
            object.__setattr__(self, "_compiled", compile_(frozen)._compiled)
            self.eval()

        def forward(self, *args, **kwargs):
            with no_grad():
                return self._compiled(*args, **kwargs)

        def saved_graph(self):
            """What `jit.save` writes: the frozen graph (compiled, it computes the same)."""
            return getattr(self.frozen, "saved_graph", lambda: self.frozen)()

        @property
        def graph(self):
            return self.frozen.graph

        @property
        def code(self):
            return self.frozen.code

    return InferenceModule


_IM = []


def _InferenceModule(frozen):            # noqa: N802
    if not _IM:
        _IM.append(_inference_class())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _IM[0](frozen)

