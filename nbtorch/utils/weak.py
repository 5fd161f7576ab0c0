"""torch.utils.weak: weak references and dictionaries keyed by object identity.

Tensors define ``__eq__`` elementwise and are unhashable by value, so a plain
``weakref.WeakKeyDictionary`` cannot hold them; these key by ``id`` instead and drop an
entry when its key dies. Example::

    cache = WeakTensorKeyDictionary()
    cache[t] = "meta"            # gone once t is garbage collected
"""
import weakref
from collections.abc import MutableMapping

__all__ = ["WeakIdRef", "WeakIdKeyDictionary", "WeakTensorKeyDictionary", "TensorWeakRef"]


class WeakIdRef(weakref.ref):
    """A weak reference hashed and compared by the referent's identity (a dead reference
    equals only itself)."""

    __slots__ = ["_id"]

    def __init__(self, key, callback=None):
        self._id = id(key)
        super().__init__(key, callback)

    def __call__(self):
        return super().__call__()

    def __hash__(self):
        return self._id

    def __eq__(self, other):
        a, b = self(), other()
        if a is not None and b is not None:
            return a is b
        return self is other

    def __ne__(self, other):            # weakref.ref's would compare the referents
        return not self.__eq__(other)


class WeakIdKeyDictionary(MutableMapping):
    """A mapping whose keys are held weakly and compared by identity (``is``)."""

    def __init__(self, dict=None, ref_type=WeakIdRef):
        self.data = {}
        self.ref_type = ref_type
        self_ref = weakref.ref(self)

        def remove(k):
            owner = self_ref()
            if owner is not None:
                owner.data.pop(k, None)
        self._remove = remove
        if dict is not None:
            self.update(dict)

    def __getitem__(self, key):
        return self.data[self.ref_type(key)]

    def __setitem__(self, key, value):
        self.data[self.ref_type(key, self._remove)] = value

    def __delitem__(self, key):
        del self.data[self.ref_type(key)]

    def __contains__(self, key):
        try:
            ref = self.ref_type(key)
        except TypeError:
            return False
        return ref in self.data

    def __iter__(self):
        for ref in list(self.data):
            obj = ref()
            if obj is not None:
                yield obj

    def __len__(self):
        return sum(1 for ref in list(self.data) if ref() is not None)

    def __repr__(self):
        return f"<{type(self).__name__} at {id(self):#x}>"

    def copy(self):
        new = type(self)(ref_type=self.ref_type)
        for k, v in self.items():
            new[k] = v
        return new

    __copy__ = copy

    def keyrefs(self):
        return list(self.data)


WeakTensorKeyDictionary = WeakIdKeyDictionary


class TensorWeakRef:
    """A weak reference to a tensor (PyTorch's wrapper): call it for the tensor or None."""

    __slots__ = ["ref"]

    def __init__(self, tensor):
        from .._tensor import Tensor
        if not isinstance(tensor, Tensor):
            raise AssertionError(f"expected torch.Tensor, got {type(tensor)}.")
        self.ref = weakref.ref(tensor)

    def __call__(self):
        return self.ref()
