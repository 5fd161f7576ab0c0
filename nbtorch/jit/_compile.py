"""nbtorch.compile: capture a model or function behind guards and run compiled graphs.

The first call for each *guard set* traces the code (`jit.trace` into the fx
IR), compiles it (`_compiled.build`: ops recorded, backward from the eager
formulas, elementwise groups fused into generated Numba kernels) and caches
it. A guard set is what the graph was specialised to: grad mode, the
``training`` flag of every module, and for each tensor argument its shape,
strides, dtype, device and ``requires_grad`` (Python numbers by value); the
weights' dtype, device, shape and ``requires_grad`` are checked per entry. A
call whose guards match no entry compiles a new one, so a stale graph never
runs; past `config.cache_size_limit` entries a warning says so and new guard
sets run eagerly. Code the trace cannot capture faithfully (a tensor turned
into a Python value, data-dependent control flow, an in-place write the graph
cannot replay, an op with no recorded form) runs eagerly, with the reason in
``compiled.fallback_reasons`` and a warning; with ``fullgraph=True`` it is a
`CompileError` instead. Python values the trace read (module attributes such
as LeakyReLU's slope, and the numbers, flags, strings and tensors the user's
functions the trace ran name as globals, or the function as closure variables)
are constants of the graph and guarded (`_guards.Baked`): changing one recompiles.

``dynamic=True`` leaves the batch dim (dim 0 of each tensor argument) out of
the guards: a new batch size re-specialises the graph (a trace, no kernel
compile: the generated kernels do not depend on sizes) without counting as a
recompile.
"""
import types
import warnings
import weakref

from .._dtype import _default as _DEFAULT_DTYPE     # factories in the code read it
from .._generator import get_rng_state, set_rng_state
from .._tensor import Tensor
from ..amp._hooks import state_key as autocast_key
from ..autograd import grad_mode
from ._compiled import build, flatten, unflatten
from ._effects import SideEffect, SideEffects
from ._guards import (Baked, Unhashable, aliasing, describe, object_reads, user_calls,
                      user_hook, value_key)
from ..nn.modules._hooks import ATTR_WRITES as _ATTR_WRITES
from ..fx._patch import RECORDING as _RECORDING

__all__ = ["compile", "CompileError", "OptimizedModule", "CompiledFunctionWrapper", "config",
           "reset"]


class CompileError(RuntimeError):
    """nbtorch.compile(fullgraph=True) met code it cannot capture as one graph."""


class _Config:
    """nbtorch._dynamo.config: `cache_size_limit` compiled entries per function (8, as in
    PyTorch; `recompile_limit` is its newer name); `verbose` warns at every eager fallback
    (default True); `suppress_errors` is accepted (nbtorch always falls back to eager unless
    fullgraph=True)."""
    cache_size_limit = 8
    verbose = True
    suppress_errors = False

    @property
    def recompile_limit(self):
        return self.cache_size_limit

    @recompile_limit.setter
    def recompile_limit(self, n):
        self.cache_size_limit = n


config = _Config()
STANCE = ["default"]    # torch.compiler.set_stance: default, force_eager, eager_on_recompile,
                        # fail_on_recompile
MARKED = [0]            # torch._dynamo.mark_dynamic calls so far (0: no input can be marked)
_ALL = weakref.WeakSet()        # every compiled wrapper, for reset()


def reset():
    """Forget every compiled graph (the next calls trace and compile again)."""
    for c in list(_ALL):
        c._reset()


def _generators(value, modules):
    """The torch.Generator objects among the arguments (nested) and the modules' attributes."""
    from .._generator import Generator
    found, stack = {}, [value] + [vars(m) for m in modules]
    while stack:
        v = stack.pop()
        if isinstance(v, Generator):
            found[id(v)] = v
        elif isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return list(found.values())


# ---- entries -------------------------------------------------------------------------------

class _Eager:
    """A guard set that runs the original code (with the reason it is not compiled)."""

    def __init__(self, reason):
        self.reason = reason
        # run eagerly for a user's module hook: tried again once no hook is left
        self.hooked = _ATTR_WRITES[0] if "registered by user code" in reason else None

    def run(self, owner, args, kwargs):
        return owner._fn(*args, **kwargs)

    def stale(self, modules):
        """True when the hook this entry ran eagerly for was removed (compile again)."""
        if self.hooked is None or self.hooked == _ATTR_WRITES[0]:
            return False
        self.hooked = _ATTR_WRITES[0]
        return all(user_hook(m) is None for m in modules)


def _apply_updates(result, updates):
    """Split a graph's result into the code's own and the values it assigned to module
    attributes (`updates`: their (module, name) targets), and assign those as the code
    did (buffers stay buffers: Module.__setattr__)."""
    if not updates:
        return result
    result, values = result
    for (module, name), value in zip(updates, values):
        setattr(module, name, value)
    return result


class _Graph:
    """A guard set with a compiled graph."""

    def __init__(self, cg, resolve_root, attr_meta, updates, baked):
        self.cg = cg
        self.root = resolve_root
        self.paths = [tuple(n.split(".")) for n in cg.attr_names]
        self.attr_meta = attr_meta
        self.updates = updates
        self.baked = baked

    def attrs(self):
        out = []
        for path in self.paths:
            obj = self.root
            for atom in path:
                obj = getattr(obj, atom)
            out.append(obj)
        return out

    def valid(self, attrs):
        for t, meta in zip(attrs, self.attr_meta):
            if not isinstance(t, Tensor) or (t._shape, t.dtype, t.device,
                                             t._requires_grad) != meta:
                return False
        return True

    def run(self, owner, args, kwargs, tensors, attrs):
        outs = self.cg(*tensors, *attrs)
        return _apply_updates(unflatten(outs, self.cg.output_spec), self.updates)


def _attr_meta(attrs):
    return [(t._shape, t.dtype, t.device, t._requires_grad) for t in attrs]


def _free_values(fn):
    """The values a function's code names as globals, and its closure's (empty cells left
    out); none for a callable without code."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return []
    g = getattr(fn, "__globals__", {})
    values = [g[n] for n in code.co_names if n in g]
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:          # an empty cell
            pass
    return values


def _reachable_modules(fn, known, arguments=()):
    """`known` and the modules a compiled function can reach before it runs: its module
    arguments, those its code names as globals, its closure's, its bound object's, and
    one attribute level into those objects (``trainer.model``), with their submodules -
    so a first capture puts back the BatchNorm statistics of a model the function calls
    (it counted one update more than eager)."""
    from ..nn import Module
    seeds = []
    stack = [arguments]
    while stack:                        # modules passed in (nested tuples, lists, dicts)
        a = stack.pop()
        if isinstance(a, Module):
            seeds.append(a)
        elif isinstance(a, (tuple, list)):
            stack.extend(a)
        elif isinstance(a, dict):
            stack.extend(a.values())
    seeds += _free_values(fn)
    if getattr(fn, "__self__", None) is not None:
        seeds.append(fn.__self__)
    tops = []
    for obj in seeds:
        if isinstance(obj, Module):
            tops.append(obj)
        elif not isinstance(obj, type) and not callable(obj):   # trainer.model
            tops += [v for v in getattr(obj, "__dict__", {}).values() if isinstance(v, Module)]
    found = {id(m): m for m in known}
    for top in tops:
        for m in top.modules():
            found.setdefault(id(m), m)
    return list(found.values())


# ---- the compiled callable ---------------------------------------------------------------

class _Compiled:
    """What `compile` returns for a function (see `OptimizedModule` for modules)."""

    _side_effects = True        # Python side effects in the code make it run eagerly

    def __init__(self, fn, module, dynamic, fullgraph, backend, mode, options):
        self._fn = fn
        self._module = module
        self._dynamic = bool(dynamic)
        self._dynamic_arg = dynamic
        self._fullgraph = fullgraph
        self._backend = backend
        self._mode = mode
        self._options = dict(options or {})
        self._reset()
        _ALL.add(self)

    def _reset(self):
        self._cache = {}
        self._order = []            # keys in compile order (recompile messages)
        self._modules = list(self._module.modules()) if self._module is not None else []
        self.fallback_reasons = []
        self.recompiles = 0
        self._warned_limit = False

    # ---- the call path ------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if STANCE[0] == "force_eager" or getattr(_RECORDING, "tracer", None) is not None:
            # force_eager; or called while an outer trace records (a @jit.script helper
            # inside a scripted, traced or compiled caller): its ops join the outer graph
            return self._fn(*args, **kwargs)
        if not kwargs and all([a.__class__ is Tensor for a in args]):
            tensors = args
        else:
            tensors, _ = flatten((args, kwargs))
        if MARKED[0] and not self._dynamic and self._dynamic_arg is None:
            self._mark_dynamic(tensors)
        try:
            grad = grad_mode.STATE
            key = (grad.enabled if not grad.inference else "inference_mode", autocast_key(),
                   _DEFAULT_DTYPE[0],
                   tuple([m.training for m in self._modules]),
                   tuple([value_key(a, self._dynamic) for a in args]),
                   tuple([(k, value_key(v, self._dynamic)) for k, v in kwargs.items()]),
                   aliasing(tensors))
        except Unhashable as e:
            return self._eager_call(f"an argument of type {e.args[0]} cannot be guarded",
                                    args, kwargs)
        entry = self._cache.get(key)
        if entry is not None and entry.__class__ is _Eager:
            if not entry.stale(self._modules):
                return entry.run(self, args, kwargs)
            del self._cache[key]
            entry = None
        if entry is not None:
            if entry.__class__ is dict:                     # dynamic: per exact layouts
                sub = tuple([(t._shape, t._strides) for t in tensors])
                e = entry.get(sub)
                if e is None:
                    e = entry[sub] = self._capture(args, kwargs, tensors, key, counted=False)
                    if e.__class__ is _Eager:
                        return e.run(self, args, kwargs)
                entry = e
            baked = entry.baked
            changed = (baked.watch or baked.version != baked.writes[0]) and baked.changed()
            if changed:
                self._cache.pop(key, None)          # a value the graph baked in changed
                if self._module is not None:
                    # the guards' module list (training flags) is the hierarchy's as it is
                    self._modules = list(self._module.modules())
                    return self(*args, **kwargs)
            else:
                attrs = entry.attrs()
                if entry.valid(attrs):
                    return entry.run(self, args, kwargs, tensors, attrs)
                self._cache.pop(key, None)                  # weights changed kind: again
        entry = self._new_entry(key, args, kwargs, tensors)
        if entry.__class__ is _Eager:
            return entry.run(self, args, kwargs)
        return entry.run(self, args, kwargs, tensors, entry.attrs())

    def _mark_dynamic(self, tensors):
        """dynamic=None and an input whose batch dim (0) was marked with
        torch._dynamo.mark_dynamic: from now on as dynamic=True (one graph per batch size
        without recompiling kernels). Marks of other dims change nothing: every shape gets
        its own graph, which is correct, only not shared."""
        for t in tensors:
            if 0 in getattr(t, "_dynamo_dynamic_indices", ()):
                self._dynamic = True
                self._reset()
                return

    def _new_entry(self, key, args, kwargs, tensors):
        if self._order and STANCE[0] != "default":
            if STANCE[0] == "fail_on_recompile":
                raise RuntimeError(
                    f"Detected recompile when torch.compile stance is 'fail_on_recompile' "
                    f"({self._name()}: {describe(key, self._order[-1])})")
            if STANCE[0] == "eager_on_recompile":
                return _Eager("torch.compiler.set_stance('eager_on_recompile')")
        limit = config.cache_size_limit
        if len(self._order) >= limit:
            reason = (f"cache_size_limit ({limit}) reached: "
                      f"{describe(key, self._order[-1]) if self._order else ''}")
            if not self._warned_limit:
                self._warned_limit = True
                warnings.warn(f"nbtorch.compile: {self._name()} was recompiled {limit} times "
                              f"(nbtorch._dynamo.config.cache_size_limit); new guard sets now "
                              f"run eagerly. Last reason: {reason}", stacklevel=4)
            entry = self._cache[key] = _Eager(reason)
            return entry
        if self._lazy(args, kwargs):
            # a lazy module makes its weights on its first call (shapes from the input):
            # that call runs eagerly, the next one compiles (the capture's put-back of the
            # placeholders crashed: "could not broadcast ... shape (0,)")
            return _Eager("a lazy module is not initialised yet")
        if self._order:
            self.recompiles += 1
        self._order.append(key)
        entry = self._capture(args, kwargs, tensors, key, counted=True)
        if len(key[3]) != len(self._modules):
            # the capture found modules the code calls (their training flags are guarded
            # from now on): the entry's key has them, or the next call recompiled
            key = key[:3] + (tuple([m.training for m in self._modules]),) + key[4:]
            self._order[-1] = key
        if self._dynamic and entry.__class__ is not _Eager:
            self._cache[key] = {tuple([(t._shape, t._strides) for t in tensors]): entry}
        else:
            self._cache[key] = entry
        return entry

    def _lazy(self, args, kwargs):
        from ..nn.parameter_lazy import is_lazy
        modules = self._modules if self._module is not None else _reachable_modules(
            self._fn, self._modules, (args, kwargs))
        return any(is_lazy(t) for m in modules
                   for t in (*m._parameters.values(), *m._buffers.values()))

    def _eager_call(self, reason, args, kwargs):
        self._fallback(reason)
        return self._fn(*args, **kwargs)

    def _name(self):
        return getattr(self._fn, "__qualname__", None) or type(self._fn).__name__

    def _fallback(self, reason):
        if self._fullgraph:
            raise CompileError(f"nbtorch.compile(fullgraph=True): {self._name()} cannot be "
                               f"compiled as one graph: {reason}")
        if reason not in self.fallback_reasons:
            self.fallback_reasons.append(reason)
            if config.verbose:
                warnings.warn(f"nbtorch.compile: running {self._name()} eagerly: {reason}",
                              stacklevel=5)
        return _Eager(reason)

    # ---- capturing ------------------------------------------------------------------------
    def _capture(self, args, kwargs, tensors, key, counted):
        # tracing and capturing each run the code once: what they update in place - buffers
        # (BatchNorm's running statistics, num_batches_tracked), the arguments themselves
        # (x.add_(1) in the code), parameters - is put back, so that the first call updates
        # it once, as an eager call would
        modules = self._modules if self._module is not None else _reachable_modules(
            self._fn, self._modules, (args, kwargs))
        saved = [(b, b.detach().clone()) for m in modules
                 for b in (*m._buffers.values(), *m._parameters.values()) if b is not None]
        saved += [(t, t.detach().clone()) for t in tensors]
        # and the weights' gradients (code scaling or clipping them ran twice: capture, then
        # the eager run it fell back to)
        grads = [(p, p.grad, None if p.grad is None else p.grad.detach().clone())
                 for m in modules for p in m._parameters.values() if p is not None]
        rng = get_rng_state()       # and the random draws the capture made (dropout's) are
        # made again by the first compiled run, as eager would - the user's generators' too
        generators = [(g, g.get_state()) for g in _generators((args, kwargs), modules)]
        try:
            return self._capture_once(args, kwargs, tensors)
        finally:
            for b, v in saved:
                b._array[...] = v._array
            for p, g, v in grads:
                if p.grad is not g:
                    p.grad = g
                if g is not None:
                    g._array[...] = v._array
            set_rng_state(rng)
            for g, state in generators:
                g.set_state(state)

    def _capture_once(self, args, kwargs, tensors):
        from ._concrete import TracerWarning
        from ..fx.passes.lower import CaptureError
        try:
            (gm, live, updates, reads, calls, constants,
             object_attrs) = self._trace(args, kwargs, tensors)
        except _Break as e:
            return self._fallback(str(e))
        self._new_modules(live)
        baked = Baked(self._fn, reads, self._modules, calls, constants, (args, kwargs),
                      object_attrs)
        backend = self._backend
        if callable(backend):
            return _Custom(backend(gm, list(tensors)), updates, baked)
        try:
            wrt = [t.requires_grad for t in tensors]
            with warnings.catch_warnings():
                warnings.simplefilter("error", TracerWarning)
                cg = build(gm, tensors, wrt, fuse=backend != "eager")
        except CaptureError as e:
            return self._fallback(str(e).split("\n\nWhile executing")[0])
        except TracerWarning as e:
            return self._fallback(str(e))
        except Exception as e:          # a backward formula failed while captured (a saved
            # input modified in place): eager raises it where eager would, at backward()
            reason = str(e).split("\n\nWhile executing")[0]
            return self._fallback(f"capturing the graph failed: {type(e).__name__}: {reason}")
        entry = _Graph(cg, live, [], updates, baked)
        try:
            entry.attr_meta = _attr_meta(entry.attrs())
        except AttributeError as e:
            return self._fallback(f"a weight of the graph cannot be found again: {e}")
        return entry

    def _new_modules(self, live):
        """Modules the trace found (a function calling a model): their training flags are
        part of the guards from now on."""
        seen = {id(m) for m in self._modules}
        from ..nn import Module
        for top in vars(live).values():
            for m in top.modules() if isinstance(top, Module) else ():
                if id(m) not in seen:
                    self._modules.append(m)
                    seen.add(id(m))

    def _trace(self, args, kwargs, tensors):
        """(traced GraphModule over the flat tensors, live root, updates, reads, calls,
        constants, object attributes read):
        other arguments are constants; the live root holds the real modules the code called
        (weights are read from them at every call, so a replaced submodule is seen). Values
        the code assigns to module attributes (``self.avg = ...``, ``self.n += 1``) are extra
        outputs of the graph, `updates` their (module, name) targets; `reads` (the module
        attributes the trace read), `calls` (the user's functions it ran) and `constants`
        (the tensors it met outside the arguments and modules) are for `Baked`."""
        import types
        from ..fx._patch import RECORDING
        from ._concrete import TracerWarning, static_shapes
        from ._trace import _build, _trace_graph
        _, spec = flatten((args, kwargs))
        fn = self._fn
        updates = []

        def flat(*ts):
            a, k = unflatten(list(ts), spec)
            if effects is not None:
                effects.arguments((a, k))
            out = _sizes_traced(RECORDING.tracer, fn(*a, **k))
            assigned = RECORDING.tracer.attr_updates
            if not assigned:
                return out
            updates[:] = [(m, name) for m, name, _ in assigned.values()]
            return out, [proxy for _, _, proxy in assigned.values()]
        flat.__name__ = self._name().replace(".", "_").replace("<", "").replace(">", "")
        with warnings.catch_warnings(record=True) as caught, static_shapes():
            warnings.simplefilter("always", TracerWarning)
            calls = {}
            effects = None
            if self._side_effects:
                effects = SideEffects()
                effects.modules(self._modules if self._module is not None else
                                _reachable_modules(fn, self._modules, (args, kwargs)))
                effects.arguments(getattr(fn, "__self__", None), "the bound object")
            object_attrs = {}
            try:
                with user_calls(calls, effects), object_reads(
                        _plain_objects(fn, args, kwargs), object_attrs):
                    tracer, graph = _trace_graph(flat, tuple(tensors), {}, attr_updates=True)
                changed = effects is not None and effects.changed()
                if changed:
                    raise SideEffect(f"the code changes {changed} that outlives the call, "
                                     "which a graph would not do again (Python side effects "
                                     "run eagerly every call)")
                traced = _build(None, flat, flat.__name__, tracer, graph)
            except SideEffect as e:
                effects.changed()               # put back what the trace changed
                raise _Break(str(e)) from None
            except Exception as e:          # the code itself failed, or cannot be traced
                if effects is not None:
                    effects.changed()           # put back what it changed before
                hint = (" (a traced value reached a method of a tensor the trace does not "
                        "know: a global's or closure's tensor updated in place? Pass it as "
                        "an argument or register it as a buffer)"
                        if "ConcreteProxy" in str(e) else "")
                if "ConcreteProxy" in str(e) and "vmap" in str(e):
                    hint = (" (torch.func.vmap inside compiled code is not traced: compile "
                            "the function it maps, or call vmap outside)")
                raise _Break(f"tracing failed: {type(e).__name__}: {e}{hint}") from None
        for w in caught:
            if issubclass(w.category, TracerWarning):
                raise _Break(_reason(str(w.message), w.filename, w.lineno))
        live = types.SimpleNamespace(**tracer.extra_modules, **{
            k: v for k, v in tracer.constants.items() if isinstance(v, Tensor) and v.requires_grad})
        constants = [v for v in tracer.constants.values() if isinstance(v, Tensor)]
        # class constants the code read (SCALE = 2.0 in a module's class body): guarded as
        # plain objects' attributes are, through the class's namespace
        object_attrs.update({(id(k), n): (k, n, v) for k, n, v in     # (k.__dict__: live)
                             getattr(tracer, "class_reads", {}).values()})
        return (traced.graph_module, live, tuple(updates), list(tracer.attr_reads.values()),
                calls, constants, list(object_attrs.values()))


class _Break(Exception):
    pass


def _plain_objects(fn, args, kwargs):
    """The plain objects (no modules, tensors, functions) whose attributes compiled code
    may read: arguments (a method's ``self``), the bound object, globals and closure
    variables the function names."""
    from ._effects import plain_object
    found = [*args, *kwargs.values(), getattr(fn, "__self__", None)]
    if not getattr(fn, "__globals__", {}).get("__name__", "").startswith("nbtorch."):
        found += _free_values(fn)
    return [o for o in found if o is not None and plain_object(o)]


def _sizes_traced(tracer, out):
    """A returned torch.Size (``return x.shape``) as a node making it: a graph's output
    arguments hold plain tuples (the caller got a tuple)."""
    from .._tensor import Size
    if out.__class__ is Size:
        return tracer.create_proxy("call_function", Size, (tuple(out),), {})
    if out.__class__ in (tuple, list):
        return out.__class__(_sizes_traced(tracer, v) for v in out)
    if out.__class__ is dict:
        return {k: _sizes_traced(tracer, v) for k, v in out.items()}
    return out


def _reason(message, filename, lineno):
    """A TracerWarning as a short reason: what happened, and where."""
    where = f"{filename}:{lineno}"
    if message.startswith("Converting a tensor to a "):
        what = message[len("Converting a tensor to a "):].split(" might")[0]
        return (f"a tensor is converted to a {what} at {where} (control flow or a value that "
                "depends on tensor data)")
    return f"{message.split('. ')[0]} at {where}"


class _Custom:
    """A guard set run by a user's backend callable (given the fx GraphModule)."""

    def __init__(self, fn, updates, baked):
        self.fn = fn
        self.updates = updates
        self.baked = baked

    def attrs(self):
        return []

    def valid(self, attrs):
        return True

    def run(self, owner, args, kwargs, tensors, attrs):
        return _apply_updates(self.fn(*tensors), self.updates)


class CompiledFunctionWrapper(_Compiled):
    """``nbtorch.compile(fn)``: call it like `fn` (``__wrapped__`` is `fn`). A descriptor
    as a function is: ``@torch.compile`` on a method binds ``self`` (the instance is then
    an argument, guarded by identity)."""

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return types.MethodType(self, obj)


class CompiledCalls:
    """A Module wrapping `_orig_mod` whose calls run `_compiled` (nbtorch.compile's
    OptimizedModule, jit.script's module): attributes it lacks are the original's."""

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if (d.get("_forward_hooks") or d.get("_forward_pre_hooks") or d.get("_backward_hooks")
                or d.get("_backward_pre_hooks")):
            # hooks registered on the wrapper itself run around the compiled call, as
            # PyTorch's (they were skipped)
            from ..nn import Module
            return Module.__call__(self, *args, **kwargs)
        return self._compiled(*args, **kwargs)

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._orig_mod, name)


def _optimized_module_class():
    from ..nn import Module

    class OptimizedModule(CompiledCalls, Module):
        """``nbtorch.compile(model)``: a Module whose calls run compiled graphs of
        ``_orig_mod`` (parameters, state_dict and attributes are the original's)."""

        def __init__(self, mod, compiled):
            super().__init__()
            self._orig_mod = mod
            object.__setattr__(self, "_compiled", compiled)

        @property
        def fallback_reasons(self):
            return self._compiled.fallback_reasons

        @property
        def recompiles(self):
            return self._compiled.recompiles

        def __reduce__(self):
            # pickle / torch.save: the original module and how it was compiled (the class
            # is made at run time; PyTorch's OptimizedModule pickles the same way)
            c = self._compiled
            return (_recompile, (self._orig_mod, c._fullgraph, c._dynamic_arg, c._backend,
                                 c._mode, c._options))

    return OptimizedModule


def _recompile(mod, fullgraph, dynamic, backend, mode, options):
    """A pickled OptimizedModule, compiled again (no graph is kept)."""
    return compile(mod, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                   options=options)


_OM = []


def OptimizedModule(mod, compiled):      # noqa: N802 - the class, made on first use
    if not _OM:
        _OM.append(_optimized_module_class())
    return _OM[0](mod, compiled)


_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="numba", mode=None,
            options=None, disable=False):
    """Compile `model` (an nn.Module or a function): see the module docstring.

    backend: "numba" (fused generated kernels), "eager" (the recorded graph without
    fusion), or a callable ``backend(graph_module, example_inputs) -> callable`` given
    the traced fx GraphModule (PyTorch's custom backend API). `mode` is accepted for
    compatibility and does not change what is generated. Usable as a decorator, with
    or without arguments.

    Example:
        >>> fast = nbtorch.compile(model)
        >>> loss = F.cross_entropy(fast(x), y); loss.backward()
    """
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    from ..nn import Module
    if mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(m for m in _MODES if m)}")
    if not (callable(backend) or backend in ("numba", "eager", "inductor")):
        raise ValueError(f"nbtorch.compile: unknown backend {backend!r} (have: 'numba', "
                         "'eager', or a callable(graph_module, example_inputs))")
    if backend == "inductor":
        backend = "numba"
    if isinstance(model, Module):
        if disable:
            return model
        compiled = CompiledFunctionWrapper(model, model, dynamic, fullgraph, backend, mode,
                                           options)
        return OptimizedModule(model, compiled)
    if not callable(model):
        raise RuntimeError(f"nbtorch.compile: expected a function or an nn.Module, got "
                           f"{type(model).__name__}")
    if disable or getattr(model, "_nbtorch_compile_disabled", False):
        return model
    import functools
    wrapper = CompiledFunctionWrapper(model, None, dynamic, fullgraph, backend, mode, options)
    functools.update_wrapper(wrapper, model, updated=())
    return wrapper
