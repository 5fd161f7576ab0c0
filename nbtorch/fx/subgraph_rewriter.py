"""replace_pattern: find every copy of a pattern graph in a GraphModule and swap in a replacement.

The pattern and the replacement are functions (or GraphModules) with the
same inputs; both are traced symbolically. A match maps each pattern node to
a graph node with the same op and target and matching literal arguments;
pattern placeholders match any value, a literal argument included (the same
placeholder, the same value); a match reading an earlier match's output reads what
replaced it.
Matched nodes other than the pattern's outputs may have no users outside the
match, and matches do not overlap (earlier ones win, as in PyTorch).
"""
from collections import namedtuple

from .graph_module import GraphModule
from .node import Node
from .tracer import symbolic_trace

__all__ = ["Match", "replace_pattern", "replace_pattern_with_filters", "InternalMatch",
           "ReplacedPatterns"]

Match = namedtuple("Match", ["anchor", "nodes_map"])
Match.__doc__ = "One replaced occurrence: `anchor` (the matched output node) and the node map."


def _as_graph(fn_or_gm):
    gm = fn_or_gm if isinstance(fn_or_gm, GraphModule) else symbolic_trace(fn_or_gm)
    return gm, gm.graph


def _match_arg(pa, ga, m):
    if isinstance(pa, Node):
        if isinstance(ga, Node):
            return _match_node(pa, ga, m)
        if pa.op != "placeholder":
            return False
        # a pattern input bound to a literal argument (torch.add(x, 1) matches add(x, y)),
        # as PyTorch's matcher does
        if pa in m:
            bound = m[pa]
            try:
                return not isinstance(bound, Node) and type(bound) is type(ga) and \
                    bool(bound == ga)
            except Exception:   # noqa: BLE001 - values that cannot be compared do not match
                return False
        m[pa] = ga
        return True
    if isinstance(pa, (tuple, list)):
        return (isinstance(ga, (tuple, list)) and len(pa) == len(ga)
                and all(_match_arg(a, b, m) for a, b in zip(pa, ga)))
    if isinstance(pa, dict):
        return (isinstance(ga, dict) and pa.keys() == ga.keys()
                and all(_match_arg(pa[k], ga[k], m) for k in pa))
    if isinstance(ga, Node):
        return False
    try:
        return type(pa) is type(ga) and bool(pa == ga)
    except Exception:       # noqa: BLE001 - values that cannot be compared do not match
        return False


def _match_node(pn, gn, m):
    """Extend map `m` (pattern node -> graph node) so that pn matches gn; False if not."""
    if pn in m:
        return m[pn] is gn
    if pn.op == "placeholder":
        if any(v is gn for v in m.values()):
            return False                # one graph value per pattern input
        m[pn] = gn
        return True
    if pn.op != gn.op or pn.target != gn.target or any(v is gn for v in m.values()):
        return False
    if len(pn.args) != len(gn.args) or pn.kwargs.keys() != gn.kwargs.keys():
        return False
    m[pn] = gn
    return _match_arg(tuple(pn.args), tuple(gn.args), m) and \
        _match_arg(dict(pn.kwargs), dict(gn.kwargs), m)


def _find_matches(graph, pattern):
    outputs = [n for n in pattern.nodes if n.op == "output"]
    returned = outputs[0].args[0]
    anchors = list(returned) if isinstance(returned, (tuple, list)) else [returned]
    if not all(isinstance(a, Node) for a in anchors):
        raise ValueError("replace_pattern: the pattern must return nodes (values it computes)")
    candidates = [n for n in graph.nodes if n.op not in ("placeholder", "output")]
    matches, used = [], set()

    def search(i, m):
        if i == len(anchors):
            return m
        for gn in candidates:
            trial = dict(m)
            if _match_node(anchors[i], gn, trial):
                found = search(i + 1, trial)
                if found is not None:
                    return found
        return None

    for gn in candidates:
        m = {}
        if not _match_node(anchors[0], gn, m):
            continue
        m = search(1, m)
        if m is None:
            continue
        inner = {pn: g for pn, g in m.items() if pn.op != "placeholder"}
        if used & set(inner.values()):
            continue
        anchor_nodes = {m[a] for a in anchors}
        internal = set(inner.values()) - anchor_nodes
        if any(u not in internal and u not in anchor_nodes for g in internal for u in g.users):
            continue                    # an inner value is used outside: cannot replace
        used |= set(inner.values())
        matches.append((m, [m[a] for a in anchors]))
    return matches


InternalMatch = namedtuple("InternalMatch", ["anchors", "nodes_map", "placeholder_nodes",
                                             "returning_nodes"])
InternalMatch.__doc__ = "What a match filter sees (PyTorch's matcher_utils.InternalMatch)."
ReplacedPatterns = namedtuple("ReplacedPatterns", ["anchor", "nodes_map", "replacements"])


def replace_pattern(gm, pattern, replacement):
    """Replace every match of `pattern` in `gm` by `replacement`; returns the `Match`es.

    Example:
        >>> def pattern(x, y): return torch.add(x, y)
        >>> def replacement(x, y): return torch.mul(x, y)
        >>> replace_pattern(gm, pattern, replacement)
    """
    return [Match(anchor=r.anchor, nodes_map=r.nodes_map)
            for r in _replace(gm, pattern, replacement, ())]


def replace_pattern_with_filters(gm, pattern, replacement=None, match_filters=None,
                                 ignore_literals=False, replacement_callback=None,
                                 node_name_match=""):
    """`replace_pattern` for the matches every `match_filters` callable accepts
    (``f(internal_match, original_graph, pattern_graph) -> bool``); returns
    `ReplacedPatterns` (anchor, nodes_map, the replacement's nodes)."""
    if ignore_literals or replacement_callback is not None or node_name_match:
        raise NotImplementedError("replace_pattern_with_filters: ignore_literals, "
                                  "replacement_callback and node_name_match are not supported")
    return _replace(gm, pattern, replacement, tuple(match_filters or ()))


def _replace(gm, pattern, replacement, match_filters):
    _, pattern_graph = _as_graph(pattern)
    replacement_gm, replacement_graph = _as_graph(replacement)
    graph = gm.graph
    p_inputs = [n for n in pattern_graph.nodes if n.op == "placeholder"]
    r_inputs = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(p_inputs) != len(r_inputs):
        raise ValueError(f"replace_pattern: the pattern takes {len(p_inputs)} inputs but the "
                         f"replacement takes {len(r_inputs)}")
    results = []
    replaced = {}           # an earlier match's output -> what replaced it (chained matches)

    def current(v):
        while isinstance(v, Node) and v in replaced:
            v = replaced[v]
        return v
    for m, anchors in _find_matches(graph, pattern_graph):
        m = {p: current(g) for p, g in m.items()}
        anchors = [current(a) for a in anchors]
        if match_filters:
            internal = InternalMatch(anchors, dict(m),
                                     [m[p] for p in p_inputs if p in m], list(anchors))
            if not all(f(internal, graph, pattern_graph) for f in match_filters):
                continue
        order = {n: i for i, n in enumerate(graph.nodes)}
        users = {u for a in anchors for u in a.users}
        # As PyTorch: the replacement goes right before the first user of the match's
        # outputs (after the last output when nothing uses them).
        insert_point = (min(users, key=order.__getitem__) if users
                        else max(anchors, key=order.__getitem__).next)
        val_map = {r: m[p] for p, r in zip(p_inputs, r_inputs) if p in m}
        with graph.inserting_before(insert_point):
            out = graph.graph_copy(replacement_graph, val_map, return_output_values=True)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        if len(outs) != len(anchors):
            raise ValueError(f"replace_pattern: the pattern returns {len(anchors)} values but "
                             f"the replacement returns {len(outs)}")
        for old, new in zip(anchors, outs):
            old.replace_all_uses_with(new)
            replaced[old] = new
        for node in sorted((g for p, g in m.items() if p.op != "placeholder"
                            and isinstance(g, Node) and g in order),
                           key=order.__getitem__, reverse=True):
            if not node.users:
                graph.erase_node(node)
        results.append(ReplacedPatterns(anchors[0], dict(m),
                                        [n for n in outs if isinstance(n, Node)]))
    if results:
        _copy_replacement_attrs(gm, replacement_gm, replacement_graph)
    graph.lint()
    gm.recompile()
    return results


def _copy_replacement_attrs(gm, replacement_gm, replacement_graph):
    """Parameters/submodules the replacement reads, installed on gm when it lacks them."""
    from .graph_module import _copy_attr
    for node in replacement_graph.nodes:
        if node.op in ("get_attr", "call_module"):
            try:
                _fetch(gm, node.target)
            except AttributeError:
                _copy_attr(replacement_gm, gm, node.target)


def _fetch(obj, target):
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj
