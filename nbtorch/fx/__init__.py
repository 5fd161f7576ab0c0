"""nbtorch.fx: the graph IR of nbtorch, with PyTorch's ``torch.fx`` API.

One IR for every graph tool: symbolic tracing (`symbolic_trace`), concrete
tracing (`nbtorch.jit.trace`), and the passes, compilers and exporters built
on them all read and write a `Graph` of `Node`s (placeholder, get_attr,
call_function, call_method, call_module, output), which `GraphModule` turns
back into readable Python. ``node.meta['tensor_meta']`` carries shape, dtype,
stride and device once `passes.shape_prop.ShapeProp` (or jit.trace) ran.

Example:
    >>> import nbtorch as torch
    >>> gm = torch.fx.symbolic_trace(model)
    >>> print(gm.graph)
    >>> print(gm.code)
"""
from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg, map_aggregate
from .proxy import Attribute, GraphAppendingTracer, Proxy, TraceError, TracerBase
from .subgraph_rewriter import replace_pattern
from .tracer import Tracer, is_fx_tracing, symbolic_trace, wrap
from ._patch import proxy_functions
from . import passes, subgraph_rewriter  # noqa: F401
from . import proxy  # noqa: F401

__all__ = ["Graph", "GraphModule", "Interpreter", "Transformer", "Node", "map_arg",
           "map_aggregate", "Proxy", "Attribute", "GraphAppendingTracer", "TraceError",
           "TracerBase", "Tracer", "symbolic_trace", "wrap", "replace_pattern",
           "proxy_functions", "is_fx_tracing", "passes", "subgraph_rewriter"]
