"""Proxy: a stand-in for a value during tracing; every use of it adds a node to the graph.

Operators on a Proxy record ``call_function`` nodes with `operator` targets
(``x + 1`` -> ``operator.add``), attribute reads record ``getattr`` and
method calls ``call_method`` nodes (``x.relu()``). nbtorch functions
(``torch.relu(x)``, ``F.relu(x)``) see Proxies only while their public
namespaces are patched (during `Tracer.trace`, `Transformer.transform`, or
inside `nbtorch.fx.proxy_functions()`): the eager op path stays untouched.
Control flow on a Proxy (``if``, ``for``, ``len``) raises `TraceError`
naming the line, as PyTorch's symbolic tracer does.
"""
import dis
import operator
import sys

from .node import Node
from ._codegen import MAGIC_METHODS, REFLECTABLE_MAGIC_METHODS
from ._frames import describe_line, stack_summary, user_frame

__all__ = ["Proxy", "Attribute", "TraceError", "TracerBase", "GraphAppendingTracer"]


class TraceError(ValueError):
    """Raised when traced code uses a symbolic value where a concrete one is needed."""


def _with_line(msg):
    where = describe_line(user_frame())
    return f"{msg}\n  (traced code at {where})" if where else msg


class TracerBase:
    """What Proxies call back into: creates nodes in `self.graph` from their uses."""

    graph = None
    record_stack_traces = False
    proxy_buffer_attributes = False
    traced_func_name = "forward"

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None):
        """Record ``kind(target)(*args, **kwargs)`` as a node; return a Proxy for its value."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        if self.record_stack_traces:
            node.stack_trace = stack_summary()
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """Turn a value into a node argument: Proxies become their nodes."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, tuple) and hasattr(a, "_fields"):     # a NamedTuple literal
            args = tuple(self.create_arg(e) for e in a)
            return self.create_node("call_function", type(a), args, {})
        if isinstance(a, tuple):
            return tuple(self.create_arg(e) for e in a)
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            out = {}
            for k, v in a.items():
                k = self.create_arg(k)
                if isinstance(k, Node):
                    raise RuntimeError("Keys for dictionaries used as an argument cannot "
                                       f"contain a Node. Got key: {k}")
                out[k] = self.create_arg(v)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, Node) or a is None or a is Ellipsis or \
                isinstance(a, (str, int, float, bool, complex)) or callable(a):
            return a
        from .._dtype import dtype
        from .._device import device
        from .._tensor import Tensor
        if isinstance(a, (dtype, device, Tensor)):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj):
        raise TraceError(_with_line(
            "symbolically traced variables cannot be used as inputs to control flow"))

    def iter(self, obj):
        raise TraceError(_with_line(
            "Proxy object cannot be iterated. This can be attempted when the Proxy is used "
            "in a loop or as a *args or **kwargs function argument. See the torch.fx docs "
            "on pytorch.org for a more detailed explanation of what types of control flow "
            "can be traced, and check out the Proxy docstring for help troubleshooting "
            "Proxy iteration errors"))

    def keys(self, obj):
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """A tracer that only appends to `graph`: for building graphs by hand with Proxies."""

    def __init__(self, graph):
        self.graph = graph


def _current_instruction(frame):
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            return inst
    return None


class Proxy:
    """A Node wrapper that records every operation applied to it (see module docstring)."""

    def __init__(self, node, tracer=None):
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)          # protocols (copy, pickle, numpy) probe these
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, d):
        self.__dict__ = d

    def __deepcopy__(self, memo):
        import copy
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            try:
                new.__dict__[k] = copy.deepcopy(v, memo)
            except Exception:   # noqa: BLE001 - what cannot be copied is shared, as in fx
                new.__dict__[k] = v
        return new

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        inst = _current_instruction(sys._getframe(1))
        if inst is not None and inst.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(inst.argval))      # a, b = proxy
        return self.tracer.iter(self)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def __len__(self):
        raise RuntimeError(_with_line(
            "'len' is not supported in symbolic tracing by default. If you want this call "
            "to be recorded, please call torch.fx.wrap('len') at module scope"))

    def __setitem__(self, key, value):
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})

    def __abs__(self):
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def keys(self):
        return self.tracer.keys(self)


def _install_magic_methods():
    for method in MAGIC_METHODS:
        if not hasattr(operator, method):        # "div": a Python 2 spelling
            continue

        def scope(method):
            target = getattr(operator, method)

            def impl(*args, **kwargs):
                return args[0].tracer.create_proxy("call_function", target, args, kwargs)
            impl.__name__ = method
            setattr(Proxy, f"__{method.strip('_')}__", impl)
        scope(method)
    for method in REFLECTABLE_MAGIC_METHODS:
        if not hasattr(operator, method):
            continue

        def scope(method):
            target = getattr(operator, method)

            def impl(self, rhs):
                return self.tracer.create_proxy("call_function", target, (rhs, self), {})
            impl.__name__ = f"__r{method.strip('_')}__"
            setattr(Proxy, impl.__name__, impl)
        scope(method)


_install_magic_methods()


class Attribute(Proxy):
    """``proxy.attr``: a getattr node, made only if the value is used (not just called)."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)
