"""Nested containers as flat lists (``torch.utils._pytree``'s core): tuples, lists, dicts
(ordered by insertion) and namedtuples are nodes; everything else is a leaf.

Example:
    >>> leaves, spec = tree_flatten({"a": (1, 2), "b": [3]})
    >>> leaves
    [1, 2, 3]
    >>> tree_unflatten([x * 10 for x in leaves], spec)
    {'a': (10, 20), 'b': [30]}
"""
__all__ = ["tree_flatten", "tree_unflatten", "tree_map", "tree_leaves", "TreeSpec", "LeafSpec"]


class TreeSpec:
    """The shape of a container: its type, its keys (dicts) and its children's specs."""

    __slots__ = ("type", "context", "children", "num_leaves")

    def __init__(self, type_, context, children):
        self.type, self.context, self.children = type_, context, children
        self.num_leaves = sum(c.num_leaves for c in children)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.context == other.context and self.children == other.children)

    def __repr__(self):
        return f"TreeSpec({self.type.__name__}, {self.context}, {self.children})"


class LeafSpec(TreeSpec):
    def __init__(self):
        self.type, self.context, self.children, self.num_leaves = None, None, [], 1

    def __repr__(self):
        return "*"


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def tree_flatten(tree):
    """(leaves in order, spec) of `tree`."""
    leaves = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves):
    if isinstance(tree, dict):
        keys = list(tree)
        return TreeSpec(type(tree), keys, [_flatten(tree[k], leaves) for k in keys])
    if isinstance(tree, (list, tuple)):
        context = type(tree) if _is_namedtuple(tree) else None
        return TreeSpec(type(tree), context, [_flatten(x, leaves) for x in tree])
    leaves.append(tree)
    return LeafSpec()


def tree_unflatten(leaves, spec):
    """The container `spec` describes, filled with `leaves` in order."""
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten(leaves, spec): `leaves` has length {len(leaves)} "
                         f"but the spec refers to a pytree that holds {spec.num_leaves} items")
    it = iter(leaves)
    return _build(it, spec)


def _build(it, spec):
    if isinstance(spec, LeafSpec):
        return next(it)
    children = [_build(it, c) for c in spec.children]
    if issubclass(spec.type, dict):
        return spec.type(zip(spec.context, children))
    if spec.context is not None:            # a namedtuple
        return spec.type(*children)
    return spec.type(children)


def tree_leaves(tree):
    return tree_flatten(tree)[0]


def tree_map(fn, tree):
    """`tree` with every leaf x replaced by fn(x)."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)
