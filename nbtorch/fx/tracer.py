"""Symbolic tracing: run a module's forward on Proxies and record what it does.

`Tracer.trace(root)` makes a placeholder per forward argument, patches the
public op namespaces (see `_patch.py`), ``Module.__call__`` (submodule calls
become ``call_module`` nodes for leaf modules, i.e. nbtorch.nn's own layers,
and are traced through otherwise) and ``Module.__getattr__`` (parameters read
in forward become ``get_attr`` nodes), then calls forward once. No kernel
runs. `symbolic_trace` wraps the result in a `GraphModule`.

Example:
    >>> gm = symbolic_trace(lambda x: nbtorch.relu(x) + 1)
    >>> [n.op for n in gm.graph.nodes]
    ['placeholder', 'call_function', 'call_function', 'output']
"""
import functools
import inspect
import math
import sys
import threading

from .graph import Graph
from .proxy import TracerBase
from ._patch import (Patcher, patch_globals, patch_isinstance, patch_namespaces,
                     _wrapped_fns_to_patch)

__all__ = ["Tracer", "symbolic_trace", "wrap", "is_fx_tracing"]

_TRACING = [0]          # depth of active Tracer.trace calls


def is_fx_tracing():
    """True while a Tracer is tracing (symbolic or concrete)."""
    return _TRACING[0] > 0


def wrap(fn_or_name):
    """Record calls to a module-level function as one ``call_function`` node.

    Call at module scope: ``fx.wrap("my_helper")`` or ``@fx.wrap`` on the
    function. While tracing, the name is patched in that module's globals so
    the function is not traced into (it may use Python control flow).
    """
    name = fn_or_name if isinstance(fn_or_name, str) else getattr(fn_or_name, "__name__", None)
    if not isinstance(name, str) or not callable(fn_or_name) and not isinstance(fn_or_name,
                                                                                 str):
        raise TypeError("Unsupported type for global function! Must be either a callable or "
                        "string name")
    if name == "<lambda>":
        raise NotImplementedError("wrap: a lambda has no global name; def a function")
    caller = sys._getframe(1)
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _wrapped_fns_to_patch[(id(caller.f_globals), name)] = caller.f_globals
    return fn_or_name


def _guardable(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    return isinstance(value, tuple) and all(_guardable(v) for v in value)


def assert_specialized(value, expected, name):
    """The guard of a concrete_args value: the traced code took its branch."""
    same = value is expected if expected is None or isinstance(expected, bool) else \
        (type(value) is type(expected) and value == expected)
    if not same:
        raise AssertionError(f"{name} has been specialized to have value {expected!r} but "
                             "got another value")


assert_specialized._fx_impure = True        # a check: dead-code elimination keeps it


class Tracer(TracerBase):
    """Records a module's or function's forward into a `Graph` (fx's Tracer)."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(),
                 param_shapes_constant=False):
        self._autowrap_modules = tuple(autowrap_modules)
        self._autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.root = None
        self.graph = None
        self.tensor_attrs = {}
        self._module_paths = None
        self._keepalive = []
        self._executing = 0         # >0 while a concrete tracer runs real code (jit)

    # ---- what becomes a node ------------------------------------------------------
    def is_leaf_module(self, m, module_qualified_name):
        """nbtorch.nn's and nbtorch.ao.nn's own modules (not Sequential) are recorded, not
        traced through (PyTorch's rule: torch.nn and torch.ao.nn; a dynamic quantized LSTM
        traced through raised ValueError in its NumPy code)."""
        from ..nn import Sequential
        return (type(m).__module__.startswith(("nbtorch.nn", "nbtorch.ao.nn"))
                and not isinstance(m, Sequential))

    def path_of_module(self, mod):
        """The qualified name of `mod` under the root ('layer1.conv')."""
        paths = self._module_paths
        if paths is None:
            paths = self._module_paths = {id(m): n for n, m in self.root.named_modules()}
        name = paths.get(id(mod))
        if name is None:
            raise NameError(f"module is not installed as a submodule ({type(mod).__name__} "
                            "is called by the traced code but is not an attribute of the "
                            "traced module: call_module nodes name submodules by path)")
        return name

    def call_module(self, m, forward, args, kwargs):
        """A submodule call: a ``call_module`` node for leaves, its forward traced otherwise."""
        qualname = self.path_of_module(m)
        if not self.is_leaf_module(m, qualname):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", qualname, args, kwargs)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """``self.weight`` in forward: a (cached) get_attr Proxy for parameters/buffers."""
        from ..nn import Parameter
        from .._tensor import Tensor
        if isinstance(attr_val, Parameter):
            search = self.root.named_parameters
        elif self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            search = self.root.named_buffers
        else:
            return attr_val
        for n, p in search():
            if attr_val is p:
                if n not in parameter_proxy_cache:
                    parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {})
                return parameter_proxy_cache[n]
        return attr_val

    def create_arg(self, a):
        """Tensors become get_attr nodes: parameters/buffers by name, others as constants."""
        from ..nn import Module, Parameter
        from .._tensor import Tensor
        if isinstance(a, Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            for n, b in self.root.named_buffers():
                if a is b:
                    return self.create_node("get_attr", n, (), {})
            qualname = self.tensor_attrs.get(id(a))
            if qualname is None:
                qualname = self._fresh_qualname("_tensor_constant")
                self.tensor_attrs[id(a)] = qualname
                self._store_constant(qualname, a)
                self._keepalive.append(a)
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, Module):
            for n, m in self.root.named_modules():
                if a is m:
                    return self.create_node("get_attr", n, (), {})
        return super().create_arg(a)

    def _store_constant(self, qualname, tensor):
        """Keep a constant tensor where get_attr finds it: on the root, as fx does."""
        setattr(self.root, qualname, tensor)

    def _fresh_qualname(self, prefix):
        i = 0
        while hasattr(self.root, f"{prefix}{i}"):
            i += 1
        return f"{prefix}{i}"

    # ---- the trace ----------------------------------------------------------------
    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        """Placeholders for the root function's arguments (and `self` for modules)."""
        fn = inspect.unwrap(root_fn)
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        args = []
        if is_module:
            if not params:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            params = params[1:]
            args.append(self.root)
        if isinstance(concrete_args, tuple):
            names = [p.name for p in params]
            concrete_args = dict(zip(names, concrete_args))
        concrete_args = concrete_args or {}
        kw = {}
        for p in params:
            if p.kind is p.VAR_KEYWORD:
                # forward(self, x, **kwargs): the code accepts (and the trace ignores) extra
                # keywords, as PyTorch's; the traced body sees an empty dict
                self.create_proxy("placeholder", f"**{p.name}", (), {})
                continue
            if p.kind is p.VAR_POSITIONAL:
                raise RuntimeError(f"symbolic tracing: *{p.name} in the traced function's "
                                   "signature is not supported; name the inputs")
            if p.name in concrete_args:          # a constant: the placeholder keeps the
                value = concrete_args[p.name]    # signature, the code sees the value
                ph = self.create_proxy("placeholder", p.name, (value,), {})
                if _guardable(value):            # and a call with another value raises,
                    self.create_proxy("call_function", assert_specialized,  # as PyTorch's
                                      (ph, value, p.name), {})
            else:
                default = () if p.default is p.empty else (p.default,)
                ann = None if p.annotation is p.empty else p.annotation
                value = self.create_proxy("placeholder", p.name, default, {}, type_expr=ann)
            if p.kind is p.KEYWORD_ONLY:
                kw[p.name] = value
            else:
                args.append(value)
        if is_module:
            return functools.partial(root_fn, *args[:1]), args[1:], kw
        return root_fn, args, kw

    def _module_patches(self, patcher):
        from ..nn import Module
        orig_getattr, orig_call = Module.__getattr__, Module.__call__
        tracer, cache, thread = self, {}, threading.get_ident()

        # Other threads (and real code a concrete tracer runs) see the plain behaviour.
        def module_getattr(mod, attr):
            value = orig_getattr(mod, attr)
            if tracer._executing or threading.get_ident() != thread:
                return value
            return tracer.getattr(attr, value, cache)

        def module_call(mod, *args, **kwargs):
            if tracer._executing or threading.get_ident() != thread:
                return orig_call(mod, *args, **kwargs)
            forward_globals = getattr(getattr(type(mod), "forward", None), "__globals__", None)
            patch_globals(patcher, forward_globals)
            patch_isinstance(patcher, forward_globals)
            patch_globals(patcher, vars(mod))     # self.act = F.relu: an op held by the module
            return tracer.call_module(mod, lambda *a, **k: orig_call(mod, *a, **k), args,
                                      kwargs)
        patcher.patch_method(Module, "__getattr__", module_getattr)
        patcher.patch_method(Module, "__call__", module_call)
        self._orig_module_call = orig_call

    def trace(self, root, concrete_args=None):
        """Trace `root` (a Module or a function) into a new `Graph` and return it."""
        from ..nn import Module
        is_module = isinstance(root, Module)
        if is_module:
            self.root = root
            fn = type(root).forward
            if getattr(fn, "__name__", "") == "_forward_unimplemented":
                raise NotImplementedError(f"Module [{type(root).__name__}] is missing the "
                                          "required \"forward\" function")
        elif callable(root):
            self.root = Module()
            fn = root
        else:
            raise TypeError(f"symbolic_trace expects an nn.Module or a function, got "
                            f"{type(root).__name__}")
        self.graph = Graph(tracer_cls=type(self))
        self.tensor_attrs = {id(v): q for q, v in _plain_tensor_attrs(self.root)}
        self._module_paths = None
        self._keepalive = []
        self._executing = 0
        _TRACING[0] += 1
        try:
            with Patcher() as patcher:
                self._patcher = patcher
                patch_namespaces(patcher, self._autowrap_functions)
                for mod in self._autowrap_modules:
                    patch_globals(patcher, vars(mod))
                patch_globals(patcher, getattr(inspect.unwrap(fn), "__globals__", None))
                patch_isinstance(patcher, getattr(inspect.unwrap(fn), "__globals__", None))
                if is_module:
                    patch_globals(patcher, vars(root))
                fn_call, args, kwargs = self.create_args_for_root(fn, is_module, concrete_args)
                self._module_patches(patcher)
                result = fn_call(*args, **kwargs)
                ret = getattr(inspect.unwrap(fn), "__annotations__", {}).get("return")
                self.create_node("output", "output", (self.create_arg(result),), {},
                                 type_expr=ret)
        finally:
            _TRACING[0] -= 1
            self._module_paths = None
        return self.graph


def _plain_tensor_attrs(module, prefix=""):
    """(qualified name, tensor) for tensors stored as plain attributes (not buffers)."""
    from .._tensor import Tensor
    for k, v in module.__dict__.items():
        if isinstance(v, Tensor):
            yield prefix + k, v
    for name, child in module.named_children():
        yield from _plain_tensor_attrs(child, prefix + name + ".")


def symbolic_trace(root, concrete_args=None):
    """Trace a Module or function into a `GraphModule` (no kernel runs).

    Example:
        >>> gm = symbolic_trace(model)
        >>> print(gm.code)
    """
    from .graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    from ..nn import Module
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
