"""Matrix products of a lowered graph called straight, without their Function layers.

A compiled backward records the eager backward formulas at the Function level, so a
Linear's weight gradient ``g.T @ x`` (eager: one `linalg.mm_tn` call on raw arrays)
becomes a `Permute` node and a `Matmul` node, and every 2-D product runs through
``Matmul.apply``. This pass gives each 2-D product one `Product` target that calls the
registered matmul kernel on the arrays those layers would have handed it (a transposed
operand as its NumPy ``.T`` view: the same strides), so the same kernel call and the same
bits, ~4 us less per ``permute + matmul`` pair and ~2 us per plain product (warm; 2-3x
that in a training step, whose products leave the caches cold). A permute read only by
such products is then dead and removed.

The fast path takes CPU operands of one float dtype with no profiler or capture watching
the ops; anything else (CUDA, complex, a mixed-dtype call) runs the original targets,
which each `Product` keeps.
"""
from ...autograd.function import APPLY_WRAPPERS
from ...ops.linalg import Matmul, _raw_product
from ...ops.views import Permute
from .lowered_ops import FunctionCall, function_call

__all__ = ["call_products_directly", "Product", "product"]

_FLOATS = ("float32", "float64")


class Product:
    """call_function target: ``a' @ b'`` of 2-D `a`, `b`, where ``a'`` is a.T when
    `transpose_a` (likewise b); `matmul` and `permute` are the targets it replaced.
    Interned (`product`), so a graph's code names one global per kind."""

    _cache = {}

    def __init__(self, transpose_a, transpose_b, matmul, permute):
        self.transpose_a, self.transpose_b = transpose_a, transpose_b
        self.matmul, self.permute = matmul, permute
        self.__name__ = "mm_" + ("t" if transpose_a else "n") + ("t" if transpose_b else "n")
        self.__qualname__ = "products." + self.__name__
        self.__module__ = __name__

    def __call__(self, a, b):
        if (a.device.type == "cpu" and b.device.type == "cpu" and a.dtype is b.dtype
                and a.dtype.name in _FLOATS and len(a._shape) == 2 and len(b._shape) == 2
                and not APPLY_WRAPPERS[0]):
            x, y = a._array, b._array
            if self.transpose_a:
                x = x.T
            if self.transpose_b:
                y = y.T
            if x.shape[1] == y.shape[0]:
                return _raw_product(x, y, x.shape[0], y.shape[1], a)
        if self.transpose_a:
            a = self.permute(a, (1, 0))
        if self.transpose_b:
            b = self.permute(b, (1, 0))
        return self.matmul(a, b)

    def __repr__(self):
        return f"products.{self.__name__}[{self.matmul!r}]"

    def __reduce__(self):
        return (product, (self.transpose_a, self.transpose_b, self.matmul, self.permute))


def product(transpose_a, transpose_b, matmul, permute):
    """The (interned) `Product` target."""
    key = (transpose_a, transpose_b, matmul, permute)
    p = Product._cache.get(key)
    if p is None:
        p = Product._cache[key] = Product(*key)
    return p


def _function(node, base):
    t = node.target if getattr(node, "op", None) == "call_function" else None
    return t if isinstance(t, FunctionCall) and issubclass(t.cls, base) else None


def _rank(node):
    m = node.meta.get("tensor_meta") if hasattr(node, "meta") else None
    return None if m is None else len(m.shape)


def _transposed(node, permute_cls):
    """The permute target when `node` is ``permute(x, (1, 0))`` of a 2-D x, else None."""
    t = _function(node, permute_cls)
    if (t is None or len(node.args) != 2 or node.kwargs or tuple(node.args[1]) != (1, 0)
            or _rank(node.args[0]) != 2):
        return None
    return t


def call_products_directly(gm):
    """Give every 2-D product of GraphModule `gm` a `Product` target (module docstring);
    returns how many. The caller removes dead permutes and recompiles."""
    count = 0
    for node in list(gm.graph.nodes):
        matmul = _function(node, Matmul)
        if (matmul is None or len(node.args) != 2 or node.kwargs or _rank(node) != 2
                or _rank(node.args[0]) != 2 or _rank(node.args[1]) != 2):
            continue
        a, b = node.args
        permute = None
        ta, tb = _transposed(a, Permute), _transposed(b, Permute)
        if ta is not None:
            a, permute = a.args[0], ta
        if tb is not None:
            b, permute = b.args[0], tb
        node.target = product(ta is not None, tb is not None, matmul,
                              permute or function_call(Permute))
        node.args = (a, b)
        count += 1
    return count

