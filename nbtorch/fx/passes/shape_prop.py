"""ShapeProp: run a GraphModule once and record every value's shape, dtype, stride, device.

After ``ShapeProp(gm).propagate(*example_inputs)`` each node producing a
tensor has ``node.meta['tensor_meta']``, a `TensorMetadata` (a nested
structure of them for tuple results), and ``node.meta['type']``. jit.trace
fills the same entries while it traces, so passes (fusion, memory planning,
export) can rely on them either way.
"""
from collections import namedtuple

from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["TensorMetadata", "ShapeProp", "extract_tensor_metadata"]

TensorMetadata = namedtuple("TensorMetadata", [
    "shape", "dtype", "requires_grad", "stride", "memory_format", "is_quantized", "qparams",
    "device"])
TensorMetadata.__doc__ = ("PyTorch's TensorMetadata fields, plus `device` (nbtorch's graphs "
                          "carry it so compilers and exporters can pick kernels).")


def extract_tensor_metadata(t):
    """A `TensorMetadata` describing tensor `t` (no reference to its data is kept)."""
    # nbtorch has no memory formats (everything is strided): memory_format is None.
    return TensorMetadata(t.shape, t.dtype, t.requires_grad, t.stride(), None, False, {},
                          t.device)


def metadata_of(value):
    """`TensorMetadata` for a tensor, the same structure of them for containers, or None."""
    from ..._tensor import Tensor
    found = []

    def extract(obj):
        if isinstance(obj, Tensor):
            found.append(True)
            return extract_tensor_metadata(obj)
        return obj
    meta = map_aggregate(value, extract)
    return meta if found else None


class ShapeProp(Interpreter):
    """An Interpreter that stores each node's result metadata in ``node.meta``.

    Example:
        >>> ShapeProp(gm).propagate(nbtorch.randn(2, 3))
        >>> [n.meta["tensor_meta"].shape for n in gm.graph.nodes if "tensor_meta" in n.meta]
    """

    def __init__(self, gm, fake_mode=None):
        super().__init__(gm)

    def run_node(self, n):
        result = super().run_node(n)
        meta = metadata_of(result)
        if meta is not None:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Run the graph on `args`, filling the metadata; returns the output."""
        return super().run(*args)
