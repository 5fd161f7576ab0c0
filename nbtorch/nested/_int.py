"""The ragged size of a jagged nested tensor: a symbolic int printed ``j1``, ``j2``...

PyTorch gives each new offsets tensor a "nested int" (a SymInt printed ``j<n>``) and uses it
as the size of the ragged dim, so ``nt.shape`` is ``torch.Size([2, j1, 3])``. Two nested
tensors have the same ragged structure exactly when their nested ints are the same one
(ops such as ``nt + 1`` keep it, a new constructor call makes a new one), which is what
binary ops check. A nested int is stored on the offsets (or lengths) tensor it stands for,
so it lives as long as they do. It compares equal only to itself (times the same factor,
for strides such as ``3*j1``) and has no integer value.
"""
import itertools

__all__ = ["NestedInt", "nested_int_for"]

_COUNTER = itertools.count(1)


class NestedInt:
    """``j<n>`` (times `coeff`): the size of a ragged dim, not a number."""

    __slots__ = ("id", "coeff")

    def __init__(self, id, coeff=1):
        self.id, self.coeff = id, coeff

    def __repr__(self):
        return f"j{self.id}" if self.coeff == 1 else f"{self.coeff}*j{self.id}"

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, NestedInt) and other.id == self.id and \
            other.coeff == self.coeff

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(("j", self.id, self.coeff))

    def __mul__(self, k):
        if isinstance(k, bool) or not isinstance(k, int):
            return NotImplemented
        return NestedInt(self.id, self.coeff * k)

    __rmul__ = __mul__

    def _no_value(self, *args):
        raise RuntimeError(f"the ragged size {self!r} of a nested tensor has no single value "
                           "(each component has its own length: see offsets() / lengths())")

    __int__ = __index__ = __float__ = __bool__ = _no_value
    __add__ = __radd__ = __sub__ = __rsub__ = __lt__ = __le__ = __gt__ = __ge__ = _no_value


def nested_int_for(key):
    """The nested int of offsets (or lengths) tensor `key`, made on first use."""
    j = key.__dict__.get("_nested_int")
    if j is None:
        j = key.__dict__["_nested_int"] = NestedInt(next(_COUNTER))
    return j
